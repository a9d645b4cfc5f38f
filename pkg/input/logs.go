package input

import (
	"context"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
	"github.com/kubectl-apf/kubectl-apf/pkg/logs"
)

// Logs opens the recorded logs a logs.Spec names (logs.Opener): the
// commands hand it to the compute packages (simulate.Config.Logs,
// fromlog.Config.Logs), which open nothing themselves.
type Logs struct{}

// Open opens the workload of spec; reading it stops with an error once ctx
// is cancelled. The caller closes it.
func (Logs) Open(ctx context.Context, spec logs.Spec) (*logs.Workload, error) {
	return Open(ctx, spec)
}

// Open opens the workload of spec (Logs.Open).
func Open(ctx context.Context, spec logs.Spec) (*logs.Workload, error) {
	opts := Options{Lenient: !spec.Strict, Instances: spec.Instances}
	var known bool
	if spec.FindYear {
		// where the files tell none, an audit log read through a pipe
		// still gives its year (OpenFiles), and spec.Year stands in only
		// after it
		if opts.Year, known = Year(spec.Paths); !known {
			opts.FallbackYear = spec.Year
		}
	}
	if len(spec.Paths) != 1 || spec.Paths[0] != "-" || spec.Stdin == nil {
		files, err := OpenFiles(spec.Paths, opts)
		if err != nil {
			return nil, err
		}
		return logs.NewWorkload(ctx, files, known), nil
	}
	st := &workload.Stats{}
	r, f, err := NewReader(spec.Stdin, "stdin", opts, st)
	if err != nil {
		return nil, err
	}
	files := &workload.Files{Reader: r, Stats: map[string]*workload.Stats{"stdin": st}, Formats: map[string]workload.Format{"stdin": f}}
	return logs.NewWorkload(ctx, files, false), nil
}
