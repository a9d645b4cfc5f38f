package simulate

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubectl-apf/kubectl-apf/internal/testharness/fixture"
	"github.com/kubectl-apf/kubectl-apf/internal/testharness/recording"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/calibrate"
	"github.com/kubectl-apf/kubectl-apf/pkg/input"
)

// TestSimulateInstancesEachAsAlone gives the logs of two recordings
// (starved and quiet, each httplog + audit log in a directory of its name)
// as two apiserver instances, with a change: each instance must be
// replayed, before and after the change, calibrated and fitted exactly as
// its logs alone (with the same evidence: the CPU models, which read one
// server's metrics, are off for several instances), with its own server
// concurrency limit, and the summed levels must add the instances'.
func TestSimulateInstancesEachAsAlone(t *testing.T) {
	tmp := t.TempDir()
	files := map[string][]string{}
	for _, name := range []string{"starved", "quiet"} {
		dir := fixture.Path("simulate", "recordings", name)
		d := filepath.Join(tmp, name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		files[name+"/audit.log"] = []string{fixture.Gunzip(t, filepath.Join(dir, recording.HTTPLogFile), d), fixture.Gunzip(t, filepath.Join(dir, recording.AuditLogFile), d)}
	}
	in := stateInput{from: filepath.Join(fixture.Path("simulate", "recordings", "starved"), recording.BundleFile)}
	cfg := commandDefaults()
	cfg.Sets = sets(t, "apf-load.queueLengthLimit=1")
	cfg.Workloads = append(append([]string{}, files["starved/audit.log"]...), files["quiet/audit.log"]...)
	ctx := context.Background()
	st := loadState(t, in, cfg)
	got, err := Run(ctx, st, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Instances) != 2 || got.Instances[0].Name != "quiet/audit.log" || got.Instances[1].Name != "starved/audit.log" {
		t.Fatalf("instances %+v, want quiet/audit.log and starved/audit.log", got.Instances)
	}
	var sumBefore, sumAfter, sumRecorded int64
	for _, gi := range got.Instances {
		before, after, _, err := configurations(st, cfg.Sets)
		if err != nil {
			t.Fatal(err)
		}
		m, _ := readServerMetrics(context.Background(), st, cfg, calibrate.TimeRange{})
		m.evidence.Runtime, m.evidence.CPUUse = nil, nil
		fs, err := input.OpenFiles(files[gi.Name], input.Options{Lenient: true})
		if err != nil {
			t.Fatal(err)
		}
		want, err := runOne(ctx, st, cfg, before, after, m, fs.Reader)
		fs.Close()
		if err != nil {
			t.Fatal(err)
		}
		if gi.After == nil || want.Workload.RecordedRejections == 0 {
			t.Fatalf("%s: no change replayed, or no recorded 429", gi.Name)
		}
		for _, c := range []struct {
			what      string
			got, want any
		}{
			{"levels", gi.Report.Result, want.Report.Result},
			{"levels after the change", gi.After, want.After},
			{"workload", gi.Workload, want.Workload},
			{"agreement", gi.Agreement, want.Agreement},
			{"fit", gi.Fit, want.Fit},
			{"calibration", gi.Calibration, want.Calibration},
			{"warnings", gi.Warnings, want.Warnings},
		} {
			if g, w := jsonOf(t, c.got), jsonOf(t, c.want); g != w {
				t.Errorf("%s: %s differ from its logs alone:\n got %s\nwant %s", gi.Name, c.what, g, w)
			}
		}
		if gi.ServerConcurrencyLimit != st.ServerConcurrency {
			t.Errorf("%s: limit %d, want %d", gi.Name, gi.ServerConcurrencyLimit, st.ServerConcurrency)
		}
		sumBefore += rejected(want, false, "apf-load")
		sumAfter += rejected(want, true, "apf-load")
		sumRecorded += want.Workload.RecordedRejections
	}
	if g := rejected(got, false, "apf-load"); g != sumBefore {
		t.Errorf("apf-load: %d rejections summed, the instances alone %d", g, sumBefore)
	}
	if g := rejected(got, true, "apf-load"); g != sumAfter {
		t.Errorf("apf-load after the change: %d rejections summed, the instances alone %d", g, sumAfter)
	}
	if got.Workload.RecordedRejections != sumRecorded {
		t.Errorf("recorded 429s: %d summed, the instances alone %d", got.Workload.RecordedRejections, sumRecorded)
	}
	if notes := strings.Join(got.Notes, "\n"); !strings.Contains(notes, "the workload is 2 apiserver instances") || !strings.Contains(notes, "note: instance quiet/audit.log: audit.log (one file); httplog apiserver.log joined to it by audit ID") {
		t.Errorf("the notes do not say how the workload was split:\n%s", notes)
	}
}

func jsonOf(t *testing.T, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
