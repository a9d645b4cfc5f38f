package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-apf/kubectl-apf/internal/testharness/agreement"
	"github.com/kubectl-apf/kubectl-apf/pkg/dump"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
)

// TestFiguresAgree: on every bundle in testdata, "top levels", the live
// view ("top"), "explain 429" and "capacity" show the same waiting and
// executing requests and limits for every level and instance
// (internal/testharness/agreement).
func TestFiguresAgree(t *testing.T) {
	bundles, err := filepath.Glob(filepath.Join("..", "..", "testdata", "simulate", "recordings", "*", "bundle.tar.gz"))
	if err != nil || len(bundles) == 0 {
		t.Fatalf("no bundle in testdata (%v)", err)
	}
	for _, b := range bundles {
		t.Run(filepath.Base(filepath.Dir(b)), func(t *testing.T) {
			agreement.Check(t, runBytes, b)
		})
	}
}

// runBytes runs the plugin in-process for agreement.Check.
func runBytes(args ...string) ([]byte, error) {
	code, out, errOut := runPlugin(args...)
	if code != 0 {
		return nil, fmt.Errorf("exit %d: %s", code, errOut)
	}
	return []byte(out), nil
}

// dumpsBundle is a bundle of the real dumps in dir (no metrics) with the
// objects of a real 1.37 cluster with the same load levels (the quiet
// recording's).
func dumpsBundle(t *testing.T, dir string) string {
	t.Helper()
	quiet := filepath.Join("..", "..", "testdata", "simulate", "recordings", "quiet", "bundle.tar.gz")
	c, err := (&dump.BundleSource{Path: quiet}).Capture(context.Background(), dump.CaptureOptions{Parts: dump.PartObjects | dump.PartVersion})
	if err != nil {
		t.Fatal(err)
	}
	s := &dump.Snapshot{Instance: "https://10.0.0.1:6443", Raw: c.Snapshots[0].Raw}
	for _, f := range []string{dump.FilePriorityLevels, dump.FileQueues, dump.FileRequests} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		s.Raw[f] = b
	}
	if err := s.ParseRaw(); err != nil {
		t.Fatal(err)
	}
	b := filepath.Join(t.TempDir(), "dumps.tar.gz")
	if err := dump.WriteBundle(b, &dump.Capture{Snapshots: []*dump.Snapshot{s}}, dump.Manifest{Format: dump.BundleFormat}); err != nil {
		t.Fatal(err)
	}
	return b
}

// TestFiguresAgreeOnDumps: the same on bundles made of the real dumps under
// testdata/dump (1.26 to 1.37, without metrics), where the waiting and
// executing requests come from the dumps.
func TestFiguresAgreeOnDumps(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join("..", "..", "testdata", "dump", "v1.*-load"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no dump in testdata (%v)", err)
	}
	for _, d := range dirs {
		t.Run(filepath.Base(d), func(t *testing.T) {
			agreement.Check(t, runBytes, dumpsBundle(t, d))
		})
	}
}

// TestTopLevelsFromDumpsAlone (issue 26 D4): with dump_priority_levels and
// no metrics, top levels prints the dump's waiting and executing requests,
// "-" for what the metrics would give, and a note saying they are missing;
// before, it printed a header alone and said nothing.
func TestTopLevelsFromDumpsAlone(t *testing.T) {
	b := dumpsBundle(t, filepath.Join("..", "..", "testdata", "dump", "v1.37.1-load"))
	code, out, errOut := runPlugin("top", "levels", "--from", b, "--level", "apf-load")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	// dump_requests: apf-load, 10 waiting of 10 seats (dump_priority_levels,
	// read moments apart, says 11); dump_priority_levels: 1 executing.
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || !regexp.MustCompile(`^apf-load +- +- +\S+ +- +10 +10 +1 +- +- +- *$`).MatchString(lines[1]) {
		t.Errorf("top levels from the dumps alone:\n%s", out)
	}
	if !strings.Contains(errOut, "note: https://10.0.0.1:6443: no metrics were read") || strings.Count(errOut, "\n") != 1 {
		t.Errorf("stderr %q; want one note that the metrics are missing", errOut)
	}
}

// TestFiguresAgreeOnRawInputs: the same on the raw dumps and metrics under
// testdata read with --from as they are (a directory of dump files, or one
// pasted file), where the command line reads them. On a build whose --from
// reads bundles only, it says so and skips.
func TestFiguresAgreeOnRawInputs(t *testing.T) {
	inputs, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "dump", "v1.*-load"))
	for _, pattern := range []string{"*dump_priority_levels*.txt", "eks-*.txt"} {
		more, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "field", pattern))
		inputs = append(inputs, more...)
	}
	if code, _, errOut := runPlugin("top", "levels", "--from", inputs[0]); code != 0 {
		t.Skipf("--from does not read raw dumps here (%s)", strings.TrimSpace(errOut))
	}
	// Raw dumps hold no objects: capacity takes the defaults with -f.
	objects := filepath.Join(t.TempDir(), "defaults.yaml")
	var docs []string
	for _, fs := range engine.DefaultFlowSchemas() {
		fs.TypeMeta = metav1.TypeMeta{APIVersion: "flowcontrol.apiserver.k8s.io/v1", Kind: "FlowSchema"}
		b, err := yaml.Marshal(fs)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, string(b))
	}
	for _, pl := range engine.DefaultPriorityLevels() {
		pl.TypeMeta = metav1.TypeMeta{APIVersion: "flowcontrol.apiserver.k8s.io/v1", Kind: "PriorityLevelConfiguration"}
		b, err := yaml.Marshal(pl)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, string(b))
	}
	if err := os.WriteFile(objects, []byte(strings.Join(docs, "---\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, in := range inputs {
		t.Run(filepath.Base(in), func(t *testing.T) {
			agreement.Check(t, runBytes, in, "-f", objects)
		})
	}
}
