package tune

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/kubectl-apf/kubectl-apf/internal/testharness/fixture"
	"github.com/kubectl-apf/kubectl-apf/internal/testharness/recording"
	"github.com/kubectl-apf/kubectl-apf/pkg/input"
	"github.com/kubectl-apf/kubectl-apf/pkg/load"
	"github.com/kubectl-apf/kubectl-apf/pkg/simulate"
	"github.com/kubectl-apf/kubectl-apf/pkg/state"
)

// rec is a recording of testdata/simulate/recordings opened as the
// command opens it: its bundle, its httplog and audit log.
type rec struct {
	dir        string
	result     recording.Result
	log, audit string
	bundle     string
	st         *state.State
	cfg        simulate.Config
	prepared   *simulate.Prepared
	source     string
}

// openRec loads the recording's bundle and prepares its workload, with
// extra -f files as the configuration (none: the bundle's).
func openRec(t testing.TB, name string, files ...string) *rec {
	t.Helper()
	return openRecAt(t, fixture.Path("simulate", "recordings", name), files...)
}

// openRecAt opens the recording in dir (its recording.json, logs and
// bundle, as in testdata/simulate/recordings).
func openRecAt(t testing.TB, dir string, files ...string) *rec {
	t.Helper()
	r := &rec{dir: dir}
	b, err := os.ReadFile(filepath.Join(r.dir, recording.ResultFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &r.result); err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	r.log = fixture.Gunzip(t, filepath.Join(r.dir, recording.HTTPLogFile), tmp)
	r.audit = fixture.Gunzip(t, filepath.Join(r.dir, recording.AuditLogFile), tmp)
	r.bundle = filepath.Join(r.dir, recording.BundleFile)
	r.st, r.source = loadState(t, r.bundle, files)
	r.cfg = simulate.Config{Logs: input.Logs{}, Workloads: []string{r.log, r.audit}, RequestTimeout: time.Minute, Calibrate: true, CPUModel: true, CPULimit: r.result.APIServerCPUs, Source: r.source}
	p, err := simulate.Prepare(context.Background(), r.st, r.cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	r.prepared = p
	return r
}

func loadState(t testing.TB, bundle string, files []string) (*state.State, string) {
	t.Helper()
	o := load.NewOptions(nil, load.Config)
	o.From, o.Files = bundle, files
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := o.Complete(); err != nil {
		t.Fatal(err)
	}
	st, err := o.Load(context.Background(), load.Request{InferConcurrency: true, Metrics: true})
	if err != nil {
		t.Fatal(err)
	}
	return st, o.Source.Describe()
}

func (r *rec) input() Input {
	return Input{FlowSchemas: r.st.FlowSchemas, PriorityLevels: r.st.PriorityLevels, Release: r.st.Release, ServerConcurrency: r.st.ServerConcurrency}
}

func (r *rec) search(t testing.TB, opts Options) *Report {
	t.Helper()
	rep, err := Search(context.Background(), r.prepared, r.input(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// candidateFile writes c's objects to a YAML file, as -o yaml prints
// them for kubectl apply, and returns its path: simulate's -f.
func candidateFile(t testing.TB, c *Candidate) string {
	t.Helper()
	var b strings.Builder
	for _, o := range c.RuntimeObjects() {
		y, err := yaml.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString("---\n" + string(y))
	}
	path := filepath.Join(t.TempDir(), "candidate.yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
