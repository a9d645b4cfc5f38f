// Package agreement checks that the commands that show a priority level's
// figures agree on one input: "top levels", the live view ("top"),
// "explain 429" and "capacity" (issue 26 item 4, issue 28 item 3). The unit
// tests of cmd/kubectl-apf run it on every bundle in testdata, the e2e
// tests on a bundle captured from a live cluster under load.
package agreement

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/kubectl-apf/kubectl-apf/pkg/dump"
	"github.com/kubectl-apf/kubectl-apf/pkg/rejections"
	"github.com/kubectl-apf/kubectl-apf/pkg/tui"
)

// Run runs kubectl-apf with args and returns its stdout, an error with
// its stderr when it fails.
type Run func(args ...string) ([]byte, error)

// figures are the figures the commands must agree on; nil is absent.
type figures struct {
	Waiting, Executing, Nominal, Current *float64
}

func runJSON(t testing.TB, run Run, v any, args ...string) {
	t.Helper()
	out, err := run(args...)
	if err != nil {
		t.Fatalf("%s: %v", strings.Join(args, " "), err)
	}
	if err := json.Unmarshal(out, v); err != nil {
		t.Fatalf("%s: %v", strings.Join(args, " "), err)
	}
}

func nanToNil(v float64) *float64 {
	if math.IsNaN(v) {
		return nil
	}
	return &v
}

func same(a, b *float64) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

func show(v *float64) string {
	if v == nil {
		return "-"
	}
	b, _ := json.Marshal(*v)
	return string(b)
}

// Check compares, for every level and instance of the input b (a bundle,
// or raw dumps), the waiting and executing requests and the limits that
// each command shows with "--from b"; capacity also gets capacityArgs (-f
// with the objects an input without them lacks). The limits are compared
// where "top levels" has them (from the metrics, which come before the
// configuration that explain 429 and capacity also read). It returns how
// many rows it compared.
func Check(t testing.TB, run Run, b string, capacityArgs ...string) int {
	t.Helper()
	// The JSON of top levels and of capacity's levels now is decoded by
	// the names it documents, as a program reading it would: the types
	// that write it (levels.View) are not read back.
	var top []struct {
		Instance  string   `json:"instance"`
		Level     string   `json:"level"`
		Waiting   *float64 `json:"waitingRequests"`
		Executing *float64 `json:"executingRequests"`
		Nominal   *float64 `json:"nominalLimit"`
		Current   *float64 `json:"currentLimit"`
	}
	runJSON(t, run, &top, "top", "levels", "--from", b, "-o", "json")
	var ex rejections.Report
	runJSON(t, run, &ex, "explain", "429", "--from", b, "-o", "json")
	if ex.Schema != rejections.Schema || ex.Source.Kind != rejections.SourceBundle || ex.Source.Name != b || ex.Counts == "" {
		t.Errorf("explain 429 --from %s: schema %q, source %+v, counts %q; want %s from the bundle", b, ex.Schema, ex.Source, ex.Counts, rejections.Schema)
	}
	var capa struct {
		Now []struct {
			Instance     string   `json:"instance"`
			Level        string   `json:"level"`
			Waiting      *float64 `json:"waiting"`
			Executing    *float64 `json:"executing"`
			NominalLimit *float64 `json:"nominalLimit"`
			CurrentLimit *float64 `json:"currentLimit"`
		} `json:"now"`
	}
	runJSON(t, run, &capa, append([]string{"capacity", "--from", b, "-o", "json"}, capacityArgs...)...)
	c, err := (&dump.BundleSource{Path: b}).Capture(context.Background(), dump.CaptureOptions{Parts: dump.PartAll})
	if err != nil {
		t.Fatal(err)
	}

	others := map[string]map[string]figures{"top (live view)": {}, "explain 429": {}, "capacity": {}}
	key := func(inst, level string) string { return inst + " " + level }
	for _, s := range c.Snapshots {
		for _, l := range tui.ComputeInstance(nil, s).Levels {
			others["top (live view)"][key(s.Instance, l.Name)] = figures{nanToNil(l.Waiting), nanToNil(l.Executing), nanToNil(l.NominalLimit), nanToNil(l.CurrentLimit)}
		}
	}
	for _, inc := range ex.Incidents {
		st := inc.State
		others["explain 429"][key(inc.Instances[0].Instance, inc.Level)] = figures{st.Waiting, st.Executing, st.NominalLimit, st.CurrentLimit}
	}
	for _, r := range capa.Now {
		others["capacity"][key(r.Instance, r.Level)] = figures{r.Waiting, r.Executing, r.NominalLimit, r.CurrentLimit}
	}
	if len(capa.Now) == 0 || len(top) == 0 {
		t.Fatalf("nothing to compare: %d incidents, %d capacity rows, %d top rows", len(ex.Incidents), len(capa.Now), len(top))
	}
	compared := 0
	for _, r := range top {
		want := figures{r.Waiting, r.Executing, r.Nominal, r.Current}
		for cmd, rows := range others {
			got, ok := rows[key(r.Instance, r.Level)]
			if !ok {
				if cmd != "explain 429" {
					t.Errorf("%s: %s has no row of %s", r.Instance, cmd, r.Level)
				}
				continue
			}
			compared++
			if !same(got.Waiting, want.Waiting) || !same(got.Executing, want.Executing) {
				t.Errorf("%s %s: %s shows waiting %s, executing %s; top levels %s, %s", r.Instance, r.Level, cmd,
					show(got.Waiting), show(got.Executing), show(want.Waiting), show(want.Executing))
			}
			if (want.Nominal != nil && !same(got.Nominal, want.Nominal)) || (want.Current != nil && !same(got.Current, want.Current)) {
				t.Errorf("%s %s: %s shows limits %s/%s; top levels %s/%s", r.Instance, r.Level, cmd,
					show(got.Nominal), show(got.Current), show(want.Nominal), show(want.Current))
			}
		}
	}
	t.Logf("%s: %d levels, %d incidents, %d comparisons", b, len(top), len(ex.Incidents), compared)
	return compared
}
