package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// TestTuneExplainYAML: --explain N -o yaml prints candidate N's objects, as
// --candidate N does; it printed the first-ranked candidate's, under a
// warning about the verdict, on make demo's recording.
func TestTuneExplainYAML(t *testing.T) {
	dir := simulateFixture("demo-watch")
	args := []string{"tune", "--from", filepath.Join(dir, "bundle.tar.gz"), "--workload", filepath.Join(dir, "audit.log.gz"), "--max-candidates", "30", "--progress", "never"}
	code, out, errOut := runPlugin(append(args, "-o", "json")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var rep struct{ Candidates []struct{ ID int } }
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Candidates) < 2 {
		t.Fatalf("%d candidates, want 2 or more", len(rep.Candidates))
	}
	second := rep.Candidates[1].ID
	header := fmt.Sprintf("# kubectl apf tune: candidate %d ", second)
	for _, flag := range []string{"--explain", "--candidate"} {
		code, out, errOut := runPlugin(append(args, flag, fmt.Sprint(second), "-o", "yaml")...)
		if code != 0 || !strings.HasPrefix(out, header) {
			t.Errorf("%s %d -o yaml: exit %d, stderr %q, output starts %q; want %q", flag, second, code, errOut, out[:min(len(out), 80)], header)
		}
		// objects to apply, without the API types' empty status (it wrote
		// "status: {}" on each)
		if !strings.Contains(out, "\nspec:\n") || strings.Contains(out, "status:") || strings.Contains(out, "creationTimestamp") {
			t.Errorf("%s %d -o yaml:\n%s\nwant objects without status or creationTimestamp", flag, second, out)
		}
	}
	code, _, errOut = runPlugin(append(args, "--explain", "1", "--candidate", "2", "-o", "yaml")...)
	if code != 1 || !strings.Contains(errOut, "--explain 1 and --candidate 2 name two candidates") {
		t.Errorf("two candidates: exit %d, stderr %q", code, errOut)
	}
}
