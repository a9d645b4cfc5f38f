package render

import (
	"bytes"
	"math"
	"path/filepath"
	"testing"
	"time"

	goldenfile "github.com/kubectl-apf/kubectl-apf/internal/testharness/golden"
	"github.com/kubectl-apf/kubectl-apf/internal/testharness/snapfixture"
	"github.com/kubectl-apf/kubectl-apf/pkg/dump"
	"github.com/kubectl-apf/kubectl-apf/pkg/dump/render"
	"github.com/kubectl-apf/kubectl-apf/pkg/levels"
)

var t0 = time.Date(2026, 11, 21, 14, 15, 19, 0, time.UTC)

// snapshots are the two instances every printer is tested on
// (internal/testharness/snapfixture).
func snapshots(t *testing.T) []*dump.Snapshot {
	t.Helper()
	return snapfixture.Snapshots(t, t0)
}

// golden compares got with testdata/dump/golden/<name> (internal/testharness/golden: go
// test ./pkg/dump/render -update rewrites it).
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	goldenfile.Assert(t, filepath.Join("..", "..", "..", "testdata", "dump", "golden", name), got)
}

func TestTopLevelsGolden(t *testing.T) {
	all := snapshots(t)
	one := all[:1]
	tests := []struct {
		name  string
		print func(*bytes.Buffer) error
	}{
		{"top-levels.txt", func(b *bytes.Buffer) error {
			return PrintTopLevels(b, render.Flags("table"), metricsOnly(one), "", "utilisation")
		}},
		{"top-levels-multi-by-name.txt", func(b *bytes.Buffer) error {
			return PrintTopLevels(b, render.Flags("table"), metricsOnly(all), "", "name")
		}},
		// -o wide adds the seats' utilisation over the interval, which
		// the fixtures' metrics do not hold: "-"
		{"top-levels-wide.txt", func(b *bytes.Buffer) error {
			return PrintTopLevels(b, render.Flags("wide"), metricsOnly(one), "", "utilisation")
		}},
		{"top-levels.json", func(b *bytes.Buffer) error {
			return PrintTopLevels(b, render.Flags("json"), metricsOnly(one), "apf-load", "rejected")
		}},
		// Both instances and their merged rows, and the figures of the
		// dumps beside the metrics' (levels.Compute): every field of the
		// JSON, absent ones null.
		{"top-levels-multi.json", func(b *bytes.Buffer) error {
			return PrintTopLevels(b, render.Flags("json"), all, "", "name")
		}},
		{"top-levels-multi.yaml", func(b *bytes.Buffer) error {
			return PrintTopLevels(b, render.Flags("yaml"), all, "", "waiting")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := tt.print(&b); err != nil {
				t.Fatal(err)
			}
			golden(t, tt.name, b.Bytes())
		})
	}
}

// metricsOnly is snaps without their dumps: the fixtures' dumps come from
// other captures than their metrics, and the top table takes the dumps'
// figures first (pkg/levels), so the tables of the metrics alone are
// checked here and the order in pkg/levels.
func metricsOnly(snaps []*dump.Snapshot) []*dump.Snapshot {
	out := make([]*dump.Snapshot, len(snaps))
	for i, s := range snaps {
		out[i] = &dump.Snapshot{Instance: s.Instance, CapturedAt: s.CapturedAt, Metrics: s.Metrics}
	}
	return out
}

// TestTopLevelsValues checks the numbers behind the top table, computed by
// hand from the fixtures (modern-a then modern-b, 10 s apart).
func TestTopLevelsValues(t *testing.T) {
	rows := Rows(metricsOnly(snapshots(t))[:1], "apf-load", "utilisation")
	if len(rows) != 1 {
		t.Fatalf("rows = %+v", rows)
	}
	r := rows[0]
	if r.DispatchedPerSec != 6 || r.RejectedPerSec["queue-full"] != 3 || r.Utilisation != 1 || r.WaitingSeats != 6 {
		t.Errorf("row = %+v", r)
	}
	// Merged rows sum the instances and recompute utilisation.
	var merged *levels.Row
	for _, r := range Rows(metricsOnly(snapshots(t)), "global-default", "name") {
		if r.Instance == render.AllInstances {
			r := r
			merged = &r
		}
	}
	if merged == nil || merged.NominalLimit != 2+49 || merged.SeatsInUse != 0+2 || math.Abs(merged.Utilisation-2.0/(3+49)) > 1e-9 {
		t.Errorf("merged = %+v", merged)
	}
}

// TestWideUtilisationCells: UTIL-AVG and FULL read the row's mean
// utilisation and full fraction (the demo cluster's apf-load: UTIL 0%
// between bursts, UTIL-AVG 27%), absent as "-".
func TestWideUtilisationCells(t *testing.T) {
	r := levels.Row{Name: "apf-load", MeanUtilisation: 0.27, FullFraction: 0.25}
	if got := Cell(levels.ColMeanUtilisation, r); got != "27%" {
		t.Errorf("UTIL-AVG %q, want 27%%", got)
	}
	if got := Cell(levels.ColFullFraction, r); got != "25%" {
		t.Errorf("FULL %q, want 25%%", got)
	}
	r.MeanUtilisation = math.NaN()
	if got := Cell(levels.ColMeanUtilisation, r); got != "-" {
		t.Errorf("absent UTIL-AVG %q, want -", got)
	}
}

// TestRejectedCellOfTheInterval: a reason whose counter did not move over
// the interval is left out of REJECTED/S (the demo cluster's apf-load read
// "queue-full=22.99,time-out=0"), as the live view leaves it out; a level
// that rejected nothing reads 0, and one without rates "-".
func TestRejectedCellOfTheInterval(t *testing.T) {
	for _, c := range []struct {
		r    levels.Row
		want string
	}{
		{levels.Row{HasRates: true, RejectedPerSec: map[string]float64{"queue-full": 22.99, "time-out": 0}, RejectedTotal: 22.99}, "queue-full=22.99"},
		{levels.Row{HasRates: true, RejectedPerSec: map[string]float64{"queue-full": 1, "time-out": 0.5}, RejectedTotal: 1.5}, "queue-full=1,time-out=0.50"},
		{levels.Row{HasRates: true, RejectedPerSec: map[string]float64{"time-out": 0}}, "0"},
		{levels.Row{HasRates: true}, "0"},
		{levels.Row{}, "-"},
	} {
		if got := Cell(levels.ColRejected, c.r); got != c.want {
			t.Errorf("%v: %q, want %q", c.r.RejectedPerSec, got, c.want)
		}
	}
}
