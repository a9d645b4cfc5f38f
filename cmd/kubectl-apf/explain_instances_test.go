package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/kubectl-apf/kubectl-apf/internal/testharness/fixture"
	"github.com/kubectl-apf/kubectl-apf/internal/testharness/recording"
	"github.com/kubectl-apf/kubectl-apf/pkg/explain"
	"github.com/kubectl-apf/kubectl-apf/pkg/rejections"
)

// twoRecordings writes the httplog and audit log of the starved and quiet
// recordings, each to a directory of its name.
func twoRecordings(t *testing.T) (bundle string, starved, quiet [2]string) {
	t.Helper()
	tmp := t.TempDir()
	for _, r := range []struct {
		name string
		out  *[2]string
	}{{"starved", &starved}, {"quiet", &quiet}} {
		dir := simulateFixture(filepath.Join("recordings", r.name))
		d := filepath.Join(tmp, r.name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		r.out[0] = fixture.Gunzip(t, filepath.Join(dir, recording.HTTPLogFile), d)
		r.out[1] = fixture.Gunzip(t, filepath.Join(dir, recording.AuditLogFile), d)
	}
	return filepath.Join(simulateFixture(filepath.Join("recordings", "starved")), recording.BundleFile), starved, quiet
}

func explain429JSON(t *testing.T, args ...string) *rejections.Report {
	t.Helper()
	code, out, errOut := runPlugin(append([]string{"explain", "429", "-o", "json"}, args...)...)
	if code != 0 {
		t.Fatalf("%v: exit %d: %s", args, code, errOut)
	}
	var rep rejections.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	return &rep
}

// TestExplain429SeveralInstances: the logs of two recordings given to
// explain 429 --workload are two instances, each with the incidents the
// recording gives alone; --instance makes them one. Both are replayed under
// starved's configuration (one --from), which is not quiet's: quiet's fates
// agree less than under its own.
func TestExplain429SeveralInstances(t *testing.T) {
	bundle, starved, quiet := twoRecordings(t)
	aloneS := explain429JSON(t, "--from", bundle, "--workload", starved[0], "--workload", starved[1])
	aloneQ := explain429JSON(t, "--from", bundle, "--workload", quiet[0], "--workload", quiet[1])
	both := explain429JSON(t, "--from", bundle, "--workload", starved[0], "--workload", starved[1], "--workload", quiet[0], "--workload", quiet[1])
	if len(both.Instances) != 2 || both.Instances[0].Name != "quiet/audit.log" || both.Instances[1].Name != "starved/audit.log" {
		t.Fatalf("instances %+v, want quiet/audit.log and starved/audit.log", both.Instances)
	}
	for i, alone := range []*rejections.Report{aloneQ, aloneS} {
		ri := both.Instances[i]
		if len(alone.Incidents) == 0 {
			t.Fatalf("%s: no incident alone", ri.Name)
		}
		for j := range alone.Incidents {
			alone.Incidents[j].Instances = []rejections.InstanceCount{{Instance: ri.Name, Count: alone.Incidents[j].Rejected}}
		}
		if !reflect.DeepEqual(ri.Incidents, alone.Incidents) {
			t.Errorf("%s: the instance's incidents differ from the recording's alone", ri.Name)
		}
		if ri.Fates == nil || ri.Fates.Total == 0 || ri.ServerConcurrencyLimit == 0 {
			t.Errorf("%s: fates %v, limit %d", ri.Name, ri.Fates, ri.ServerConcurrencyLimit)
		}
	}
	if !strings.Contains(strings.Join(both.Notes, "\n"), "note: instance starved/audit.log: audit.log (one file); httplog apiserver.log joined to it by audit ID") {
		t.Errorf("the notes do not say how the input was split: %q", both.Notes)
	}
	one := explain429JSON(t, "--from", bundle, "--workload", starved[1], "--workload", quiet[1], "--instance", "apiserver-0")
	if len(one.Instances) != 1 || one.Instances[0].Name == "" || !strings.Contains(strings.Join(one.Notes, "\n"), "apiserver-0: audit.log, audit.log (named by --instance)") {
		t.Errorf("--instance: instances %+v, notes %q", one.Instances, one.Notes)
	}
	code, out, errOut := runPlugin("explain", "429", "--from", bundle, "--workload", starved[0], "--workload", starved[1], "--workload", quiet[0], "--workload", quiet[1])
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	out = strings.ReplaceAll(out, filepath.Dir(filepath.Dir(starved[0])), "TMP")
	checkGolden(t, "explain/cmd-429-workload-instances.golden", []byte(out))
}

// TestExplainRequestOwnInstance: a request of one instance, explained from
// the logs of two, is reconstructed on its own instance: the moment is the
// one the recording gives alone.
func TestExplainRequestOwnInstance(t *testing.T) {
	bundle, starved, quiet := twoRecordings(t)
	id := recordedLines(t, starved[0], "apf-load", "429")[50]
	run := func(extra ...string) *explain.Explanation {
		args := append([]string{"explain", "request", "--from", bundle, "--from-log", starved[0], "--from-audit", starved[1], "--audit-id", id, "-o", "json"}, extra...)
		code, out, errOut := runPlugin(args...)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		var ex explain.Explanation
		if err := json.Unmarshal([]byte(out), &ex); err != nil {
			t.Fatal(err)
		}
		if ex.Past == nil {
			t.Fatalf("no reconstructed moment: %s", out)
		}
		return &ex
	}
	alone := run()
	both := run("--workload", quiet[0], "--workload", quiet[1])
	if !reflect.DeepEqual(alone.Past, both.Past) {
		t.Errorf("the moment reconstructed from two instances' logs differs from the instance's alone:\n got %+v\nwant %+v", both.Past, alone.Past)
	}
	if !strings.Contains(strings.Join(both.Notes, "\n"), "apiserver instance starved/audit.log served the request") {
		t.Errorf("the notes do not name the request's instance: %q", both.Notes)
	}
}

func TestWorkloadInstanceFlagErrors(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--workload", "a.log", "--instance", "x", "--workload-instance", "a.log=y"}, "give it or --workload-instance, not both"},
		{[]string{"--workload", "a.log", "--workload-instance", "b.log=y"}, "b.log is not one of the workload files given"},
		{[]string{"--workload", "a.log", "--workload-instance", "a.log"}, "want FILE=NAME"},
		{[]string{"--workload", "a.log", "--workload-instance", "a.log="}, "want FILE=NAME"},
	} {
		code, _, errOut := runPlugin(append([]string{"explain", "429"}, tt.args...)...)
		if code == 0 || !strings.Contains(errOut, tt.want) || strings.Count(strings.TrimSpace(errOut), "\n") > 0 {
			t.Errorf("%v: exit %d, stderr %q: want one line with %q", tt.args, code, errOut, tt.want)
		}
	}
}
