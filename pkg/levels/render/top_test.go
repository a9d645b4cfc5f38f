package render

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	goldenfile "github.com/kubectl-apf/kubectl-apf/internal/testharness/golden"
	"github.com/kubectl-apf/kubectl-apf/pkg/dump"
	"github.com/kubectl-apf/kubectl-apf/pkg/dump/render"
	"github.com/kubectl-apf/kubectl-apf/pkg/metrics"
)

var t0 = time.Date(2026, 11, 21, 14, 15, 19, 0, time.UTC)

func fixture(t *testing.T, parts ...string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(append([]string{"..", "..", "..", "testdata"}, parts...)...))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func scrape(t *testing.T, name string, at time.Time) *metrics.Scrape {
	t.Helper()
	s, err := metrics.ParseText(fixture(t, "metrics", name), at)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// snapshots builds two instances from the fixtures: a current one and a
// 1.20-era one, so every printer shows its multi-instance and merged view
// and the columns old layouts lack.
func snapshots(t *testing.T) []*dump.Snapshot {
	t.Helper()
	a := &dump.Snapshot{Instance: "https://127.0.0.1:6443", CapturedAt: t0,
		PriorityLevels: []flowcontrolv1.PriorityLevelConfiguration{
			{ObjectMeta: metav1.ObjectMeta{Name: "catch-all", UID: "c0c0c0c0-0000-0000-0000-000000000001"}, Spec: flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementLimited}},
			{ObjectMeta: metav1.ObjectMeta{Name: "exempt", UID: "e0e0e0e0-0000-0000-0000-000000000002"}, Spec: flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementExempt}},
		},
		Metrics: []*metrics.Scrape{scrape(t, "modern-a.txt", t0.Add(-10*time.Second)), scrape(t, "modern-b.txt", t0)},
	}
	b := &dump.Snapshot{Instance: "https://127.0.0.1:6444", CapturedAt: t0.Add(time.Second),
		Metrics: []*metrics.Scrape{scrape(t, "v1.20-shape.txt", t0)}}
	var err error
	if a.PriorityLevelDump, err = dump.ParsePriorityLevels(fixture(t, "dump", "v1.27-layout", dump.FilePriorityLevels)); err != nil {
		t.Fatal(err)
	}
	if a.QueueDump, err = dump.ParseQueues(fixture(t, "dump", "v1.26-layout", dump.FileQueues)); err != nil {
		t.Fatal(err)
	}
	if a.RequestDump, err = dump.ParseRequests(fixture(t, "dump", "synthetic-requests", dump.FileRequests)); err != nil {
		t.Fatal(err)
	}
	if b.PriorityLevelDump, err = dump.ParsePriorityLevels(fixture(t, "dump", "v1.20-layout", dump.FilePriorityLevels)); err != nil {
		t.Fatal(err)
	}
	if b.QueueDump, err = dump.ParseQueues(fixture(t, "dump", "v1.20-layout", dump.FileQueues)); err != nil {
		t.Fatal(err)
	}
	if b.RequestDump, err = dump.ParseRequests(fixture(t, "dump", "v1.20-layout", dump.FileRequests)); err != nil {
		t.Fatal(err)
	}
	return []*dump.Snapshot{a, b}
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
			return PrintTopLevels(b, render.Options{Format: render.FormatTable}, metricsOnly(one), "", "utilisation")
		}},
		{"top-levels-multi-by-name.txt", func(b *bytes.Buffer) error {
			return PrintTopLevels(b, render.Options{Format: render.FormatTable}, metricsOnly(all), "", "name")
		}},
		{"top-levels.json", func(b *bytes.Buffer) error {
			return PrintTopLevels(b, render.Options{Format: render.FormatJSON}, metricsOnly(one), "apf-load", "rejected")
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
	rows := TopLevelRows(metricsOnly(snapshots(t))[:1], "apf-load", "utilisation")
	if len(rows) != 1 {
		t.Fatalf("rows = %+v", rows)
	}
	r := rows[0]
	if r.DispatchedPerS != 6 || r.RejectedPerS["queue-full"] != 3 || r.Utilisation != 1 || r.WaitingSeats != 6 {
		t.Errorf("row = %+v", r)
	}
	// Merged rows sum the instances and recompute utilisation.
	var merged *TopLevelRow
	for _, r := range TopLevelRows(metricsOnly(snapshots(t)), "global-default", "name") {
		if r.Instance == render.AllInstances {
			r := r
			merged = &r
		}
	}
	if merged == nil || merged.NominalLimit != 2+49 || merged.SeatsInUse != 0+2 || math.Abs(float64(merged.Utilisation)-2.0/(3+49)) > 1e-9 {
		t.Errorf("merged = %+v", merged)
	}
}
