package simulate

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/capacity"
	"github.com/kubectl-apf/kubectl-apf/pkg/input"
	"github.com/kubectl-apf/kubectl-apf/pkg/load"
	"github.com/kubectl-apf/kubectl-apf/pkg/state"
)

// stateInput is where the state comes from, as the command's flags give it.
type stateInput struct {
	from     string   // --from
	defaults bool     // --defaults
	files    []string // -f
	scl      int      // --server-concurrency
}

// commandDefaults is the Config of "kubectl apf simulate" without flags.
func commandDefaults() Config {
	return Config{RequestTimeout: time.Minute, Calibrate: true, CPUModel: true, Logs: input.Logs{}}
}

// loadState loads the state as the command does.
func loadState(t testing.TB, in stateInput, cfg Config) *state.State {
	t.Helper()
	st, _, err := loadE(context.Background(), in, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func loadE(ctx context.Context, in stateInput, cfg Config) (*state.State, string, error) {
	o := load.NewOptions(nil, load.Config)
	o.From, o.Defaults, o.Files = in.from, in.defaults, in.files
	if err := o.Validate(); err != nil {
		return nil, "", err
	}
	if err := o.Complete(); err != nil {
		return nil, "", err
	}
	st, err := o.Load(ctx, load.Request{ServerConcurrency: in.scl, InferConcurrency: true, Stdin: cfg.Stdin, Metrics: cfg.Calibrate})
	if err != nil || o.Source == nil {
		return st, "", err
	}
	return st, o.Source.Describe(), nil
}

// simulateE loads the state and runs the replay, as the command does.
func simulateE(ctx context.Context, in stateInput, cfg Config) (*Result, error) {
	st, source, err := loadE(ctx, in, cfg)
	if err != nil {
		return nil, err
	}
	cfg.Source = source
	return Run(ctx, st, cfg)
}

func simulateT(t testing.TB, in stateInput, cfg Config) *Result {
	t.Helper()
	res, err := simulateE(context.Background(), in, cfg)
	if err != nil {
		t.Fatalf("simulate %+v: %v", in, err)
	}
	return res
}

// sets parses --set values.
func sets(t testing.TB, ss ...string) []capacity.Setting {
	t.Helper()
	var out []capacity.Setting
	for _, s := range ss {
		set, err := capacity.ParseSetting(s)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, set)
	}
	return out
}

// asJSON is the result as "simulate -o json" encodes it.
func asJSON(t testing.TB, res *Result) string {
	t.Helper()
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// jsonl builds a workload in the project's JSONL format.
type jsonl struct{ lines []string }

// burst adds n requests of user arriving together at offset, each running
// for svc once dispatched.
func (w *jsonl) burst(offset, user, verb, path, svc string, n int) *jsonl {
	for range n {
		w.lines = append(w.lines, fmt.Sprintf(`{"offset":%q,"user":%q,"groups":["system:authenticated"],"verb":%q,"path":%q,"serviceTime":%q}`, offset, user, verb, path, svc))
	}
	return w
}

func (w *jsonl) write(t *testing.T) string {
	t.Helper()
	return writeFile(t, "workload.jsonl", strings.Join(w.lines, "\n")+"\n")
}

// writeFile writes a file of the test's temporary directory.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
