// Package snapfixture builds, from the fixtures under testdata/, the
// snapshots that the printers' tests render: two apiserver instances, a
// current one and a 1.20-era one, so that every printer shows its
// multi-instance and merged view and the columns old layouts lack.
package snapfixture

import (
	"testing"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-apf/kubectl-apf/internal/testharness/fixture"
	"github.com/kubectl-apf/kubectl-apf/pkg/dump"
	"github.com/kubectl-apf/kubectl-apf/pkg/metrics"
)

// Scrape parses testdata/metrics/<name> as scraped at at.
func Scrape(t testing.TB, name string, at time.Time) *metrics.Scrape {
	t.Helper()
	s, err := metrics.ParseText(fixture.Read(t, "metrics", name), at)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Snapshots returns the two instances, the first captured at t0 (with
// two scrapes 10 s apart, its objects and dumps of the current layouts),
// the second a second later (one scrape and dumps of the 1.20 layout).
func Snapshots(t testing.TB, t0 time.Time) []*dump.Snapshot {
	t.Helper()
	a := &dump.Snapshot{Instance: "https://127.0.0.1:6443", CapturedAt: t0,
		PriorityLevels: []flowcontrolv1.PriorityLevelConfiguration{
			{ObjectMeta: metav1.ObjectMeta{Name: "catch-all", UID: "c0c0c0c0-0000-0000-0000-000000000001"}, Spec: flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementLimited}},
			{ObjectMeta: metav1.ObjectMeta{Name: "exempt", UID: "e0e0e0e0-0000-0000-0000-000000000002"}, Spec: flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementExempt}},
		},
		Metrics: []*metrics.Scrape{Scrape(t, "modern-a.txt", t0.Add(-10*time.Second)), Scrape(t, "modern-b.txt", t0)},
	}
	b := &dump.Snapshot{Instance: "https://127.0.0.1:6444", CapturedAt: t0.Add(time.Second),
		Metrics: []*metrics.Scrape{Scrape(t, "v1.20-shape.txt", t0)}}
	var err error
	if a.PriorityLevelDump, err = dump.ParsePriorityLevels(fixture.Read(t, "dump", "v1.27-layout", dump.FilePriorityLevels)); err != nil {
		t.Fatal(err)
	}
	if a.QueueDump, err = dump.ParseQueues(fixture.Read(t, "dump", "v1.26-layout", dump.FileQueues)); err != nil {
		t.Fatal(err)
	}
	if a.RequestDump, err = dump.ParseRequests(fixture.Read(t, "dump", "synthetic-requests", dump.FileRequests)); err != nil {
		t.Fatal(err)
	}
	if b.PriorityLevelDump, err = dump.ParsePriorityLevels(fixture.Read(t, "dump", "v1.20-layout", dump.FilePriorityLevels)); err != nil {
		t.Fatal(err)
	}
	if b.QueueDump, err = dump.ParseQueues(fixture.Read(t, "dump", "v1.20-layout", dump.FileQueues)); err != nil {
		t.Fatal(err)
	}
	if b.RequestDump, err = dump.ParseRequests(fixture.Read(t, "dump", "v1.20-layout", dump.FileRequests)); err != nil {
		t.Fatal(err)
	}
	return []*dump.Snapshot{a, b}
}
