package logs

import (
	"context"
	"fmt"
	"io"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
	"github.com/kubectl-apf/kubectl-apf/pkg/input"
)

// Spec says which workload to open and how.
type Spec struct {
	// Paths are the workload's files (directories and gzipped files
	// included); a lone "-" reads Stdin, when given.
	Paths []string
	// Stdin is what a lone "-" reads (nil: the process's standard input,
	// as input.OpenFiles reads it).
	Stdin io.Reader
	// Instances say which apiserver instance served each file's requests.
	Instances workload.InstanceOptions
	// Strict fails on the first line that cannot be read as a request;
	// otherwise such lines are skipped and counted (Notes).
	Strict bool
	// FindYear completes klog's text headers with the year the files tell
	// (Year), when one does; otherwise the readers' default year stands
	// in.
	FindYear bool
}

// Workload is an opened workload: its files, read through Reader.
type Workload struct {
	*workload.Files
	// YearKnown says whether the files told the year of their times (with
	// Spec.FindYear).
	YearKnown bool
	ctx       context.Context
}

// Open opens the workload of spec; reading it stops with an error once ctx
// is cancelled. The caller closes it.
func Open(ctx context.Context, spec Spec) (*Workload, error) {
	opts := input.Options{Lenient: !spec.Strict, Instances: spec.Instances}
	var known bool
	if spec.FindYear {
		opts.Year, known = Year(spec.Paths)
	}
	if len(spec.Paths) != 1 || spec.Paths[0] != "-" || spec.Stdin == nil {
		files, err := input.OpenFiles(spec.Paths, opts)
		if err != nil {
			return nil, err
		}
		return &Workload{Files: files, YearKnown: known, ctx: ctx}, nil
	}
	st := &workload.Stats{}
	r, f, err := input.NewReader(spec.Stdin, "stdin", opts, st)
	if err != nil {
		return nil, err
	}
	files := &workload.Files{Reader: r, Stats: map[string]*workload.Stats{"stdin": st}, Formats: map[string]workload.Format{"stdin": f}}
	return &Workload{Files: files, ctx: ctx}, nil
}

// Cancellable is the workload's reader, stopping when the context is
// cancelled.
func (w *Workload) Cancellable() workload.Reader {
	return Cancellable(w.ctx, w.Files.Reader)
}

// Wrap makes r stop when the workload's context is cancelled.
func (w *Workload) Wrap(r workload.Reader) workload.Reader {
	return Cancellable(w.ctx, r)
}

// Notes say which lines of the workload could not be read as requests,
// file by file in the order of their names (MalformedNotes; no flag makes
// the reading strict).
func (w *Workload) Notes() []string {
	return MalformedNotes(w.Files, "")
}

// Cancellable stops reading r when ctx is cancelled (SIGINT): a replay or
// a reconstruction takes no context, and a log of millions of requests
// takes seconds to read.
func Cancellable(ctx context.Context, r workload.Reader) workload.Reader {
	return &cancellable{ctx: ctx, r: r}
}

type cancellable struct {
	ctx context.Context
	r   workload.Reader
	n   int
}

func (c *cancellable) Next(r *workload.Request) error {
	// checking the context costs a lock; every 4096 records is often enough
	if c.n++; c.n&4095 == 0 {
		if err := c.ctx.Err(); err != nil {
			return fmt.Errorf("interrupted: %w", err)
		}
	}
	return c.r.Next(r)
}
