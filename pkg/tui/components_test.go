package tui

import (
	"math"
	"strings"
	"testing"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-apf/kubectl-apf/internal/testharness/golden"
	"github.com/kubectl-apf/kubectl-apf/pkg/dump"
	"github.com/kubectl-apf/kubectl-apf/pkg/levels"
)

// The components on their own, without the shell: what each Update does
// with a key and hands back.

func TestLineInput(t *testing.T) {
	var in lineInput
	in.open(inputJump, "")
	for _, k := range []string{"n", "ö", "d", "backspace"} {
		if _, _, done := in.Update(keyPress(k)); done {
			t.Fatalf("%q ended the line", k)
		}
	}
	if got := in.View(40); got != padRight("jump to level (enter, esc cancels): :nö█", 40) {
		t.Errorf("View = %q", got)
	}
	mode, text, done := in.Update(keyPress("enter"))
	if !done || mode != inputJump || text != "nö" || in.active() {
		t.Errorf("enter: mode %v, text %q, done %v, still open %v; want jump, \"nö\", done, closed", mode, text, done, in.active())
	}
	in.open(inputFilter, "work")
	if _, _, done := in.Update(keyPress("esc")); done || in.active() || in.buf != "" {
		t.Errorf("esc: done %v, open %v, line %q; want a closed, empty line and nothing typed", done, in.active(), in.buf)
	}
}

func TestDrillDownNeedsALevel(t *testing.T) {
	keys := DefaultKeyMap(false)
	var d drillDown
	if !d.Update(keyPress("enter"), &keys, "") || d.open {
		t.Errorf("enter without a level selected: open %v; want the key taken and the drill-down closed", d.open)
	}
	if d.Update(keyPress("enter"), &keys, "workload-low"); !d.open {
		t.Error("enter on a level did not open the drill-down")
	}
	if d.Update(keyPress("down"), &keys, "workload-low") {
		t.Error("the drill-down took down, which is the table's")
	}
	if d.Update(keyPress("esc"), &keys, "workload-low"); d.open {
		t.Error("esc did not close the drill-down")
	}
}

// TestQueueMapSaysWhyNoQueue: a level shows no queue because it has none
// (Reject), because the capture holds no queue dump (a bundle of metrics
// alone said "exempt or Reject level" of a queuing level), or because the
// dump has no row of it.
func TestQueueMapSaysWhyNoQueue(t *testing.T) {
	queuing := flowcontrolv1.PriorityLevelConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "q"}, Spec: flowcontrolv1.PriorityLevelConfigurationSpec{
		Type: flowcontrolv1.PriorityLevelEnablementLimited, Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{
			LimitResponse: flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeQueue, Queuing: &flowcontrolv1.QueuingConfiguration{Queues: 8, HandSize: 2, QueueLengthLimit: 3}}}}}
	reject := flowcontrolv1.PriorityLevelConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "r"}, Spec: flowcontrolv1.PriorityLevelConfigurationSpec{
		Type: flowcontrolv1.PriorityLevelEnablementLimited, Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{
			LimitResponse: flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeReject}}}}
	objects := []flowcontrolv1.PriorityLevelConfiguration{queuing, reject}
	other := []dump.QueueRow{{PriorityLevel: "other", Index: 0}}
	for _, c := range []struct {
		name  string
		s     *dump.Snapshot
		level string
		want  string
	}{
		{"metrics alone, a queuing level", &dump.Snapshot{PriorityLevels: objects}, "q", "(the capture holds no queue dump)"},
		{"a dump without the level's rows", &dump.Snapshot{PriorityLevels: objects, QueueDump: other}, "q", "(dump_queues holds no row of it)"},
		{"a Reject level", &dump.Snapshot{PriorityLevels: objects, QueueDump: other}, "r", "(no queues: exempt or Reject level)"},
	} {
		got := strings.Join(newQueueMap(c.s, c.level).View(frame{w: 80}, levels.Row{Name: c.level}), "\n")
		if !strings.Contains(got, c.want) {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

// TestDrillDownWithoutRequestDump: over a capture without a request dump
// the flows and waiting requests are not known: "-" and a line saying
// why, never "0 flows" and "no waiting request"; an empty dump that was
// read says there is none.
func TestDrillDownWithoutRequestDump(t *testing.T) {
	for _, c := range []struct {
		name      string
		s         *dump.Snapshot
		want, not []string
	}{
		{"no request dump", &dump.Snapshot{}, []string{"· - flows · - waiting requests ·", "the capture holds no request dump"}, []string{"0 flows", "no waiting request"}},
		{"an empty request dump", &dump.Snapshot{RequestDump: []dump.RequestRow{}}, []string{"· 0 flows · 0 waiting requests ·", "no request of this level in the dump", "no waiting request"}, []string{"the capture holds no request dump"}},
	} {
		d := drillDown{level: "tiny", open: true}
		got := strings.Join(d.View(frame{w: 120, body: 20, iv: &InstanceView{Instance: "a", Snapshot: c.s}}), "\n")
		golden.Holds(t, c.name, got, c.want, c.not)
	}
}

// TestSeatBarIsTheIntervalsMean: the SEATS bar draws the seats' mean use
// over the interval where the metrics give it, USE/LIM the moment. make
// demo's apf-load (1 seat, in bursts) rejected 17/s beside an empty bar:
// its scrapes fell between bursts, while its seat was 35% in use.
func TestSeatBarIsTheIntervalsMean(t *testing.T) {
	cols, _ := levelColumns(80)
	f := frame{st: PlainStyles()}
	row := levels.Row{Name: "apf-load", SeatsInUse: 0, CurrentLimit: 1, NominalLimit: 1, MeanUtilisation: 0.5,
		Waiting: 0, WaitingSeats: math.NaN(), DispatchedPerSec: 19.4, HasRates: true, WaitP99: math.NaN()}
	cells := (&levelTable{}).cells(f, row, false, cols)
	if bar, use := cells[2], cells[3]; bar != "████░░░░" || use != "0/1" {
		t.Errorf("bar %q, USE/LIM %q; want half the bar full beside 0/1", bar, use)
	}
	row.MeanUtilisation = math.NaN() // no seat_utilization: the moment's
	if bar := (&levelTable{}).cells(f, row, false, cols)[2]; bar != "░░░░░░░░" {
		t.Errorf("without the mean, bar %q; want the moment's, empty", bar)
	}
}
