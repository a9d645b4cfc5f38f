package main

import (
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kubectl-apf/kubectl-apf/internal/recording"
)

// recordedFit is the part of "simulate -o json" the recordings test reads.
type recordedFit struct {
	Levels []simLevel `json:"levels"`
	After  *struct {
		Levels []simLevel `json:"levels"`
	} `json:"after"`
	Fit []struct {
		Level     string  `json:"level"`
		Requests  int64   `json:"requests"`
		Recorded  int64   `json:"recorded"`
		Predicted int64   `json:"predicted"`
		Agreement float64 `json:"agreement"`
		Quality   string  `json:"quality"`
	} `json:"fit"`
	Calibration *struct {
		ServerOverhead string `json:"serverOverhead"`
		Levels         []struct {
			Level      string `json:"level"`
			Overhead   string `json:"overhead"`
			Source     string `json:"source"`
			Dispatches int64  `json:"dispatches"`
		} `json:"levels"`
	} `json:"calibration"`
	Warnings []string `json:"warnings"`
}

func (r recordedFit) rejected(after bool, level string) int64 {
	ls := r.Levels
	if after {
		ls = r.After.Levels
	}
	for _, l := range ls {
		if l.Name == level {
			var n int64
			for _, v := range l.Rejected {
				n += v
			}
			return n
		}
	}
	return 0
}

func gunzipTo(t *testing.T, src, dst string) string {
	t.Helper()
	f, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	out, err := os.Create(dst)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	if _, err := io.Copy(out, zr); err != nil {
		t.Fatal(err)
	}
	return dst
}

// TestSimulateRecordings replays each overload recorded on the local control
// plane (testdata/simulate/recordings, written by "make record-simulate":
// the apiserver's httplog and audit log of a seeded load, and a bundle of its
// configuration and metrics) against the bundle, from the httplog joined to
// the audit log and from the audit log alone, calibrated and not. Per level
// with recorded 429s it compares the predicted rejections with the recorded
// ones; and it predicts the scenario's what-if change from the recording
// and compares it with the 429s the same seeded load got when it was re-run
// on the changed configuration (recording.json).
//
// The figures are logged whatever they are (-v, or
// KUBECTL_APF_RECORDINGS_REPORT=FILE). The test fails when a calibrated
// prediction of the recorded run leaves 0.75–1.25 of the recorded 429s (the
// issue's band; levels with fewer than 20 recorded 429s are judged by their
// request-by-request agreement instead), and when a what-if prediction
// leaves 0.5–2 of what the re-run got: a what-if moves the server to a load
// that was never recorded, and the figures say how far it held.
func TestSimulateRecordings(t *testing.T) {
	dirs, err := filepath.Glob(simulateFixture(filepath.Join("recordings", "*")))
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) == 0 {
		t.Fatal("no recordings under testdata/simulate/recordings")
	}
	var report []string
	for _, dir := range dirs {
		name := filepath.Base(dir)
		t.Run(name, func(t *testing.T) {
			var rec recording.Result
			b, err := os.ReadFile(filepath.Join(dir, recording.ResultFile))
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(b, &rec); err != nil {
				t.Fatal(err)
			}
			tmp := t.TempDir()
			logFile := gunzipTo(t, filepath.Join(dir, recording.HTTPLogFile), filepath.Join(tmp, "apiserver.log"))
			auditFile := gunzipTo(t, filepath.Join(dir, recording.AuditLogFile), filepath.Join(tmp, "audit.log"))
			bundle := filepath.Join(dir, recording.BundleFile)
			report = append(report, fmt.Sprintf("== %s (load average %s before, %s after; %d busy-looping processes; %d requests sent, %d late): %s",
				name, rec.Recorded.LoadBefore, rec.Recorded.LoadAfter, rec.Burners, rec.Recorded.Sent, rec.Recorded.Late, rec.About))
			sim := func(args ...string) recordedFit {
				t.Helper()
				args = append([]string{"simulate", "--from", bundle, "-o", "json"}, args...)
				code, out, errOut := runPlugin(args...)
				if code != 0 {
					t.Fatalf("kubectl apf %s: exit %d: %s", strings.Join(args, " "), code, errOut)
				}
				var r recordedFit
				if err := json.Unmarshal([]byte(out), &r); err != nil {
					t.Fatal(err)
				}
				return r
			}
			for _, mode := range []struct {
				name  string
				files []string
			}{
				{"httplog+audit", []string{"-w", logFile, "-w", auditFile}},
				{"audit only", []string{"-w", auditFile}},
			} {
				cal := sim(mode.files...)
				raw := sim(append(mode.files, "--calibrate=false")...)
				for _, f := range cal.Fit {
					if f.Recorded == 0 && f.Predicted == 0 {
						continue
					}
					var rawPred int64
					for _, g := range raw.Fit {
						if g.Level == f.Level {
							rawPred = g.Predicted
						}
					}
					ratio := float64(f.Predicted) / float64(max(f.Recorded, 1))
					over := ""
					for _, l := range cal.Calibration.Levels {
						if l.Level == f.Level {
							over = fmt.Sprintf("overhead %s (%s, %d queued dispatches)", l.Overhead, l.Source, l.Dispatches)
						}
					}
					report = append(report, fmt.Sprintf("  %-13s %-16s recorded %5d  predicted %5d (ratio %.2f, agreement %.1f%%, %s)  uncalibrated %5d  %s",
						mode.name, f.Level, f.Recorded, f.Predicted, ratio, 100*f.Agreement, f.Quality, rawPred, over))
					switch {
					case f.Recorded >= 20 && (ratio < 0.75 || ratio > 1.25):
						t.Errorf("%s, %s: predicted %d rejections, the server answered %d 429s", mode.name, f.Level, f.Predicted, f.Recorded)
					case f.Recorded < 20 && f.Agreement < 0.9:
						t.Errorf("%s, %s: %d recorded 429s, %d predicted, agreement only %.1f%%", mode.name, f.Level, f.Recorded, f.Predicted, 100*f.Agreement)
					}
				}
			}
			if rec.WhatIf == nil {
				return
			}
			wi := sim("-w", logFile, "-w", auditFile, "-f", filepath.Join(dir, recording.WhatIfFile))
			if wi.After == nil {
				t.Fatal("-f gave no after run")
			}
			report = append(report, fmt.Sprintf("  what-if: %s", rec.WhatIfAbout))
			for _, w := range wi.Warnings {
				report = append(report, "    "+w)
			}
			var levels []string
			for l := range rec.WhatIf.Rejected429 {
				levels = append(levels, l)
			}
			for l := range rec.Recorded.Rejected429 {
				if !slices.Contains(levels, l) {
					levels = append(levels, l)
				}
			}
			slices.Sort(levels)
			for _, l := range levels {
				real, pred := int64(rec.WhatIf.Rejected429[l]), wi.rejected(true, l)
				ratio := float64(pred) / float64(max(real, 1))
				report = append(report, fmt.Sprintf("    %-16s re-run got %5d 429s (recorded run %5d)  predicted %5d (ratio %.2f)", l, real, rec.Recorded.Rejected429[l], pred, ratio))
				if max(real, pred) >= 20 && (ratio < 0.5 || ratio > 2) {
					t.Errorf("what-if %s, %s: predicted %d rejections, the re-run got %d", rec.WhatIfAbout, l, pred, real)
				}
			}
		})
	}
	t.Logf("recordings:\n%s", strings.Join(report, "\n"))
	if p := os.Getenv("KUBECTL_APF_RECORDINGS_REPORT"); p != "" {
		_ = os.WriteFile(p, []byte(strings.Join(report, "\n")+"\n"), 0o644)
	}
}
