package reconstruct_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/kubectl-apf/kubectl-apf/internal/testharness/auditwrap"
	testfixture "github.com/kubectl-apf/kubectl-apf/internal/testharness/fixture"
	"github.com/kubectl-apf/kubectl-apf/internal/testharness/recording"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
	"github.com/kubectl-apf/kubectl-apf/pkg/input"
	"github.com/kubectl-apf/kubectl-apf/pkg/reconstruct"
)

// wrappedFate is what the wrapped tests compare of one request's
// reconstruction.
type wrappedFate struct {
	AuditID, Level, FlowSchema, Distinguisher, Reason, Class string
	Rejected, Agrees                                         bool
	Status, Seats, Queue                                     int
	Wait, Execution                                          int64
}

// reconstructed is what a reconstruction of one input gave: its report
// (rejected clients with counts, seat holders, incidents), every
// request's fate, and the instances the requests were read with.
type reconstructed struct {
	report    []byte
	fates     []wrappedFate
	instances map[string]int
}

func reconstructPaths(t *testing.T, f fixture, paths ...string) reconstructed {
	t.Helper()
	files, err := input.OpenFiles(paths, input.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer files.Close()
	out := reconstructed{instances: map[string]int{}}
	opts := reconstruct.Options{Config: f.config, ServerConcurrencyLimit: f.scl, Counts: f.counts, OnFate: func(fa *reconstruct.Fate) {
		out.fates = append(out.fates, wrappedFate{fa.Record.AuditID, fa.Level, fa.FlowSchema, fa.Distinguisher, fa.Reason, fa.Class,
			fa.Rejected, fa.Agrees, fa.Status, fa.Seats, fa.Queue, int64(fa.Wait), int64(fa.Execution)})
	}}
	res, err := reconstruct.RunReader(files, opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	out.report, err = json.Marshal(res.Report("the log"))
	if err != nil {
		t.Fatal(err)
	}
	// the instance each request was read with (the reconstruction's tape
	// does not carry it)
	again, err := input.OpenFiles(paths, input.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	for {
		var r workload.Request
		if err := again.Next(&r); err != nil {
			break
		}
		out.instances[r.Instance]++
	}
	return out
}

// auditLines are the lines of a gunzipped audit log.
func auditLines(t *testing.T, path string) [][]byte {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for _, l := range bytes.Split(b, []byte("\n")) {
		if len(bytes.TrimSpace(l)) > 0 {
			out = append(out, l)
		}
	}
	return out
}

// TestWrappedRecordingsMatchRaw reads the audit log of every recording
// under testdata/simulate/recordings (the recorded run's and the what-if
// re-run's) wrapped in every format users receive it in
// (internal/testharness/auditwrap: CloudWatch, its S3 export, AKS and Log
// Analytics, container runtimes' logs, log pipelines, Elasticsearch), and
// requires the reconstruction of each to be the raw file's: the same
// report (rejected clients and counts, seat holders, incidents) and the
// same fate for every request, each request with the instance the
// wrapper names. The httplog joined to a wrapped audit log gives the
// join's answer too. Logs of more than maxWrappedEvents events are
// passed over, and each log is read in a third of the formats
// (formatStride).
func TestWrappedRecordingsMatchRaw(t *testing.T) {
	entries, err := os.ReadDir(recordings)
	if err != nil {
		t.Fatal(err)
	}
	// maxWrappedEvents bounds the logs wrapped: the crowded-95 floods
	// (about 28,000 events each, run and re-run, in every format) took
	// eight minutes of the test on 2 cores, for formats the other logs
	// already exercise
	const maxWrappedEvents = 10000
	formats := auditwrap.Formats()
	// Each log is read in every formatStride-th format, in turn: every
	// format reads a third of the logs whole (several, of every scenario
	// kind in turn), and every log is read in a third of the formats. All
	// of them on every log took a minute of CPU of make test's cold run,
	// for the same wrapper code read again.
	formatStride := 3
	if testing.Short() {
		formatStride = 1 // -short: one log, every format
	}
	perFormat := map[string]int{}
	var logs, runs, requests, rejected int
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		if testing.Short() && logs > 0 {
			break // -short: the first recording alone
		}
		f := loadFixture(t, filepath.Join(recordings, e.Name()))
		for _, name := range []string{recording.AuditLogFile, recording.WhatIfAuditLogFile} {
			src := filepath.Join(f.dir, name)
			if _, err := os.Stat(src); err != nil {
				continue
			}
			logs++
			tmp := t.TempDir()
			raw := testfixture.Gunzip(t, src, tmp)
			want := reconstructPaths(t, f, raw)
			if len(want.fates) == 0 {
				t.Fatalf("%s: no request reconstructed from the raw log", src)
			}
			requests += len(want.fates)
			for _, fa := range want.fates {
				if fa.Status == 429 {
					rejected++
				}
			}
			events := auditLines(t, raw)
			if len(events) > maxWrappedEvents {
				// the floods: what a wrapper changes is the format,
				// which the smaller recordings exercise as well
				t.Logf("%s/%s: %d events, more than %d: not wrapped (the formats are the same code on every log)", e.Name(), name, len(events), maxWrappedEvents)
				continue
			}
			for fi, format := range formats {
				if (logs+fi)%formatStride != 0 {
					continue // this format is read on other logs
				}
				perFormat[format.Name]++
				t.Run(fmt.Sprintf("%s/%s/%s", e.Name(), name, format.Name), func(t *testing.T) {
					path := filepath.Join(tmp, format.Name, format.File)
					if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(path, format.Wrap(events), 0o644); err != nil {
						t.Fatal(err)
					}
					got := reconstructPaths(t, f, path)
					runs++
					compareReconstructions(t, got, want)
					// a wrapper that names no instance leaves the file's
					inst := format.Instance
					if inst == "" {
						inst = workload.RotationBase(filepath.Base(format.File))
					}
					if len(got.instances) != 1 || got.instances[inst] == 0 {
						t.Errorf("instances %v, want every request of %q", got.instances, inst)
					}
				})
			}
			if name == recording.AuditLogFile {
				// the httplog joined to the audit log as CloudWatch hands it
				httplog := testfixture.Gunzip(t, filepath.Join(f.dir, recording.HTTPLogFile), tmp)
				cw := formats[0]
				path := filepath.Join(tmp, "joined-"+cw.File)
				if err := os.WriteFile(path, cw.Wrap(events), 0o644); err != nil {
					t.Fatal(err)
				}
				t.Run(e.Name()+"/httplog+"+cw.Name, func(t *testing.T) {
					compareReconstructions(t, reconstructPaths(t, f, httplog, path), reconstructPaths(t, f, httplog, raw))
					runs++
				})
			}
		}
	}
	if logs == 0 {
		t.Fatal("no recording with an audit log")
	}
	for _, format := range formats {
		if want := min(2, logs); perFormat[format.Name] < want {
			t.Errorf("format %s read on %d logs, want at least %d", format.Name, perFormat[format.Name], want)
		}
	}
	t.Logf("%d audit logs (%d requests, %d recorded 429s) × %d formats: %d wrapped reconstructions equal to the raw file's", logs, requests, rejected, len(formats), runs)
}

func compareReconstructions(t *testing.T, got, want reconstructed) {
	t.Helper()
	if !sameJSON(got.report, want.report) {
		t.Errorf("report differs from the raw file's:\n got %s\nwant %s", got.report, want.report)
	}
	if len(got.fates) != len(want.fates) {
		t.Errorf("%d fates, the raw file %d", len(got.fates), len(want.fates))
		return
	}
	if i := slices.IndexFunc(got.fates, func(g wrappedFate) bool { return g != want.fates[slices.Index(got.fates, g)] }); i >= 0 {
		t.Errorf("fate %d differs: got %+v, want %+v", i, got.fates[i], want.fates[i])
	}
}

// sameJSON compares two JSON documents, numbers to within a relative
// 1e-12: the shares of seat-seconds are sums over maps, whose order of
// addition moves their last digit from run to run.
func sameJSON(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return sameValue(x, y)
}

func sameValue(x, y any) bool {
	switch x := x.(type) {
	case float64:
		y, ok := y.(float64)
		return ok && (x == y || math.Abs(x-y) <= 1e-12*math.Max(math.Abs(x), math.Abs(y)))
	case []any:
		y, ok := y.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !sameValue(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := y.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			if !sameValue(v, y[k]) {
				return false
			}
		}
		return true
	}
	return x == y
}
