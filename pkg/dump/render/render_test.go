package render

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	goldenfile "github.com/kubectl-apf/kubectl-apf/internal/testharness/golden"
	"github.com/kubectl-apf/kubectl-apf/internal/testharness/snapfixture"
	"github.com/kubectl-apf/kubectl-apf/pkg/dump"
	"github.com/kubectl-apf/kubectl-apf/pkg/output"
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

func TestPrintersGolden(t *testing.T) {
	all := snapshots(t)
	one := all[:1]
	tests := []struct {
		name  string
		print func(*bytes.Buffer) error
	}{
		{"levels.txt", func(b *bytes.Buffer) error { return PrintLevels(b, Flags("table"), one, "") }},
		{"levels-wide.txt", func(b *bytes.Buffer) error { return PrintLevels(b, Flags("wide"), one, "") }},
		{"levels-multi.txt", func(b *bytes.Buffer) error { return PrintLevels(b, Flags("table"), all, "") }},
		{"levels-level.json", func(b *bytes.Buffer) error { return PrintLevels(b, Flags("json"), one, "catch-all") }},
		{"levels.yaml", func(b *bytes.Buffer) error { return PrintLevels(b, Flags("yaml"), one, "") }},
		{"queues.txt", func(b *bytes.Buffer) error { return PrintQueues(b, Flags("table"), all, "", false) }},
		{"queues-all-wide.txt", func(b *bytes.Buffer) error { return PrintQueues(b, Flags("wide"), all, "", true) }},
		{"queues-noheaders.txt", func(b *bytes.Buffer) error {
			return PrintQueues(b, headless(Flags("table")), one, "global-default", false)
		}},
		{"requests.txt", func(b *bytes.Buffer) error { return PrintRequests(b, Flags("table"), one, "") }},
		{"requests-wide-multi.txt", func(b *bytes.Buffer) error { return PrintRequests(b, Flags("wide"), all, "") }},
		{"requests.json", func(b *bytes.Buffer) error { return PrintRequests(b, Flags("json"), one, "tiny") }},
		{"top-flows.txt", func(b *bytes.Buffer) error { return PrintTopFlows(b, Flags("table"), all, "", 0) }},
		{"top-flows-wide-limit.txt", func(b *bytes.Buffer) error { return PrintTopFlows(b, Flags("wide"), all, "", 2) }},
		{"top-flows.yaml", func(b *bytes.Buffer) error { return PrintTopFlows(b, Flags("yaml"), one, "", 0) }},
		{"whois.txt", func(b *bytes.Buffer) error {
			return PrintWhois(b, Flags("table"), dump.Resolve(one[0], []dump.UIDRef{
				{Kind: dump.KindPriorityLevel, UID: "c0c0c0c0-0000-0000-0000-000000000001"}, {UID: "e0e0e0e0-0000-0000-0000-000000000002"},
				{Kind: dump.KindFlowSchema, UID: "deadbeef-0000-0000-0000-000000000000"}, {Kind: dump.KindFlowSchema}}))
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

func TestSanitize(t *testing.T) {
	var b bytes.Buffer
	s := &dump.Snapshot{Instance: "x", RequestDump: []dump.RequestRow{{PriorityLevel: "pl", FlowSchema: "fs", UserName: "evil\x1b[31mred\x07", HasDetails: true}}}
	if err := PrintRequests(&b, Flags("table"), []*dump.Snapshot{s}, ""); err != nil {
		t.Fatal(err)
	}
	if strings.ContainsAny(b.String(), "\x1b\x07") || !strings.Contains(b.String(), "evil?[31mred?") {
		t.Errorf("escape sequences reached the output: %q", b.String())
	}
}

// TestQueuesJSONAbsentSeats: the 1.20 dump_queues (a real capture) has no
// SeatsInUse, InitialSeatsSum, MaxSeatsSum or TotalWorkSum; -o json prints
// them as null, as the table prints "-", while the 1.26 layout's are
// numbers (issue 47, R8).
func TestQueuesJSONAbsentSeats(t *testing.T) {
	old, err := dump.ParseQueues(fixture(t, "dump", "v1.20.0-inprocess", dump.FileQueues))
	if err != nil {
		t.Fatal(err)
	}
	cur, err := dump.ParseQueues(fixture(t, "dump", "v1.26-layout", dump.FileQueues))
	if err != nil {
		t.Fatal(err)
	}
	snaps := []*dump.Snapshot{{Instance: "old", QueueDump: old}, {Instance: "new", QueueDump: cur}}
	var b bytes.Buffer
	if err := PrintQueues(&b, Flags("json"), snaps, "", true); err != nil {
		t.Fatal(err)
	}
	var rows []map[string]any
	if err := json.Unmarshal(b.Bytes(), &rows); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, r := range rows {
		inst := r["instance"].(string)
		seen[inst] = true
		for _, k := range []string{"seatsInUse", "initialSeatsSum", "maxSeatsSum", "totalWorkSum"} {
			v, ok := r[k]
			if !ok {
				t.Fatalf("%s: no %s in %v", inst, k, r)
			}
			if (v == nil) != (inst == "old") {
				t.Errorf("%s queue %v: %s = %v", inst, r["index"], k, v)
			}
		}
	}
	if !seen["old"] || !seen["new"] {
		t.Errorf("rows of %v", seen)
	}
}

// TestTopFlowsExecutingBefore128: a request dump before 1.28 (a real 1.27
// capture under load) lists the waiting requests only, so a flow's
// executing figures are unknown: "-" in the table and null in JSON, where
// the 1.28 layout (a real capture under load) gives numbers (issue 47, R2).
func TestTopFlowsExecutingBefore128(t *testing.T) {
	for _, tt := range []struct {
		dir   string
		known bool
	}{{"v1.27.4-load", false}, {"v1.28.15-load", true}} {
		reqs, err := dump.ParseRequests(fixture(t, "dump", tt.dir, dump.FileRequests))
		if err != nil {
			t.Fatal(err)
		}
		snaps := []*dump.Snapshot{{Instance: tt.dir, RequestDump: reqs}}
		if got := len(UnlistedExecuting(snaps)) == 0; got != tt.known {
			t.Errorf("%s: UnlistedExecuting = %v", tt.dir, UnlistedExecuting(snaps))
		}
		var tb, js bytes.Buffer
		if err := PrintTopFlows(&tb, headless(Flags("table")), snaps, "", 0); err != nil {
			t.Fatal(err)
		}
		if err := PrintTopFlows(&js, Flags("json"), snaps, "", 0); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(tb.String()), "\n")
		var rows []map[string]any
		if err := json.Unmarshal(js.Bytes(), &rows); err != nil {
			t.Fatal(err)
		}
		if len(lines) == 0 || len(lines) != len(rows) {
			t.Fatalf("%s: %d lines, %d rows", tt.dir, len(lines), len(rows))
		}
		for i, l := range lines {
			f := strings.Fields(l)
			exec, seats := f[len(f)-2], f[len(f)-1]
			if (exec == "-") == tt.known || (seats == "-") == tt.known {
				t.Errorf("%s: %q", tt.dir, l)
			}
			if (rows[i]["executingRequests"] == nil) == tt.known || (rows[i]["executingSeats"] == nil) == tt.known {
				t.Errorf("%s: %v", tt.dir, rows[i])
			}
		}
	}
}

// TestRowJSONKeepsEveryField: the rows whose MarshalJSON prints absent
// figures as null print, when nothing is absent, exactly what their fields
// would (so a field added to a row is not dropped from -o json).
func TestRowJSONKeepsEveryField(t *testing.T) {
	type plainLevel LevelRow
	type plainQueue QueueRow
	type plainFlow FlowRow
	extra := map[string]string{"NewColumn": "1"}
	level := LevelRow{Instance: "i", PriorityLevelRow: dump.PriorityLevelRow{Name: "n", ActiveQueues: 1, IsIdle: true, IsQuiescing: true, WaitingRequests: 2, ExecutingRequests: 3,
		HasCounters: true, DispatchedRequests: 4, RejectedRequests: 5, TimedoutRequests: 6, CancelledRequests: 7, Extra: extra}, Type: "Limited", UID: "u"}
	queue := QueueRow{Instance: "i", QueueRow: dump.QueueRow{PriorityLevel: "n", Index: 1, PendingRequests: 2, ExecutingRequests: 3, SeatsInUse: 4, NextDispatchR: 5.5,
		InitialSeatsSum: 6, MaxSeatsSum: 7, TotalWorkSum: 8.5, HasSeats: true, Extra: extra}}
	flow := FlowRow{Instance: "i", Level: "n", FlowSchema: "f", Distinguisher: "d", WaitingRequests: 1, WaitingSeats: 2, ExecutingRequest: 3, ExecutingSeats: 4, Queues: []int{5}}
	type plainRequest RequestRow
	request := RequestRow{Instance: "i", RequestRow: dump.RequestRow{PriorityLevel: "n", FlowSchema: "f", QueueIndex: 1, IndexInQueue: 2, FlowDistinguisher: "d",
		ArriveTime: time.Unix(3, 0).UTC(), InitialSeats: 4, FinalSeats: 5, AdditionalLatency: 6, StartTime: time.Unix(7, 0).UTC(), HasSeats: true, HasDetails: true,
		UserName: "u", Verb: "v", APIPath: "/p", Namespace: "ns", Name: "nm", APIVersion: "av", Resource: "r", SubResource: "s", Extra: extra}, State: "executing", Age: 8}
	for _, tt := range []struct {
		name        string
		custom, std any
	}{{"level", level, plainLevel(level)}, {"queue", queue, plainQueue(queue)}, {"flow", flow, plainFlow(flow)}, {"request", request, plainRequest(request)}} {
		a, err := json.Marshal(tt.custom)
		if err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(tt.std)
		if err != nil {
			t.Fatal(err)
		}
		if string(a) != string(b) {
			t.Errorf("%s:\n%s\n%s", tt.name, a, b)
		}
	}
}

// TestLevelsJSONAbsentCounters: the 1.20 dump_priority_levels (a real
// capture) has no counters and a "<none>" row for exempt; -o json prints
// null where the table prints "-", not 0.
func TestLevelsJSONAbsentCounters(t *testing.T) {
	rows, err := dump.ParsePriorityLevels(fixture(t, "dump", "v1.20.0-inprocess", dump.FilePriorityLevels))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := PrintLevels(&b, Flags("json"), []*dump.Snapshot{{Instance: "old", PriorityLevelDump: rows}}, ""); err != nil {
		t.Fatal(err)
	}
	var got []map[string]any
	if err := json.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	sawExempt := false
	for _, r := range got {
		for _, k := range []string{"dispatchedRequests", "rejectedRequests", "timedoutRequests", "cancelledRequests"} {
			if v, ok := r[k]; !ok || v != nil {
				t.Errorf("%v: %s = %v", r["name"], k, v)
			}
		}
		placeholder := r["name"] == "exempt"
		sawExempt = sawExempt || placeholder
		for _, k := range []string{"activeQueues", "waitingRequests", "executingRequests"} {
			if (r[k] == nil) != placeholder {
				t.Errorf("%v: %s = %v", r["name"], k, r[k])
			}
		}
	}
	if !sawExempt {
		t.Error("no exempt row")
	}
}

// TestQueuesHiddenAndEmptyJSON: without --all, idle queues are left out and
// counted by HiddenQueues (a 1.20 dump whose five queues are all idle), and
// no rows print as [] in JSON and YAML, never null (issue 47's field test,
// N1).
func TestQueuesHiddenAndEmptyJSON(t *testing.T) {
	body := "PriorityLevelName, Index, PendingRequests, ExecutingRequests, VirtualStart,\n" +
		"workload-high, 2, 0, 0, 0.0000,\n" +
		"workload-low, 7, 1, 0, 0.0000,\n" +
		"workload-low, 9, 0, 2, 0.0000,\n" +
		"global-default, 1, 0, 0, 0.0000,\n"
	rows, err := dump.ParseQueues([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	snaps := []*dump.Snapshot{{Instance: "a", QueueDump: rows}}
	if n := HiddenQueues(snaps, ""); n != 2 {
		t.Errorf("HiddenQueues = %d, want 2 (workload-high 2, global-default 1)", n)
	}
	if n := HiddenQueues(snaps, "workload-low"); n != 0 {
		t.Errorf("HiddenQueues of workload-low = %d, want 0", n)
	}
	for _, f := range []string{"json", "yaml"} {
		var b bytes.Buffer
		if err := PrintQueues(&b, Flags(f), snaps, "workload-high", false); err != nil {
			t.Fatal(err)
		}
		if got := strings.TrimSpace(b.String()); got != "[]" {
			t.Errorf("%s of no rows = %q, want []", f, got)
		}
	}
	var b bytes.Buffer
	if err := PrintRequests(&b, Flags("json"), snaps, ""); err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(b.String()); got != "[]" {
		t.Errorf("requests JSON of no rows = %q, want []", got)
	}
}

// TestRequestsJSONAbsentSeats: the 1.20 dump_requests layout has no seat
// columns: -o json prints initialSeats, finalSeats and additionalLatency as
// null, not 0, and SeatsAssumed counts the requests whose table SEATS (1)
// is assumed; a layout with the columns prints its figures (issue 47's
// field test, N8).
func TestRequestsJSONAbsentSeats(t *testing.T) {
	old, err := dump.ParseRequests([]byte("PriorityLevelName, FlowSchemaName, QueueIndex, RequestIndexInQueue, FlowDistingsher, ArriveTime,\n" +
		"system, system-nodes, 12, 0, system:node:127.0.0.1, 2020-07-23T15:26:57.179170694Z,\n"))
	if err != nil {
		t.Fatal(err)
	}
	cur, err := dump.ParseRequests([]byte("PriorityLevelName, FlowSchemaName, QueueIndex, RequestIndexInQueue, FlowDistingsher, ArriveTime, InitialSeats, FinalSeats, AdditionalLatency\n" +
		"workload-low, service-accounts, 14, 0, u, 2023-07-18T00:13:09.086476021Z, 10, 0, 0s\n"))
	if err != nil {
		t.Fatal(err)
	}
	snaps := []*dump.Snapshot{{Instance: "old", RequestDump: old}, {Instance: "new", RequestDump: cur}}
	rows := RequestRows(snaps, "")
	if n := SeatsAssumed(rows); n != 1 {
		t.Errorf("SeatsAssumed = %d, want 1", n)
	}
	var b bytes.Buffer
	if err := PrintRequests(&b, Flags("json"), snaps, ""); err != nil {
		t.Fatal(err)
	}
	var got []map[string]any
	if err := json.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	for _, r := range got {
		for _, k := range []string{"initialSeats", "finalSeats", "additionalLatency"} {
			v, ok := r[k]
			if !ok {
				t.Fatalf("no %s in %v", k, r)
			}
			if (v == nil) != (r["instance"] == "old") {
				t.Errorf("%v: %s = %v", r["instance"], k, v)
			}
		}
		if r["instance"] == "new" && r["initialSeats"] != 10.0 {
			t.Errorf("new: initialSeats = %v, want 10", r["initialSeats"])
		}
	}
}

// headless drops the table header (--no-headers).
func headless(f *output.Flags) *output.Flags {
	f.NoHeaders = true
	return f
}

// TestPrintTemplates: the printers dispatch every -o through
// output.Flags, the template formats included (they once needed the
// command to hand its printer in, and printed JSON without it), and an
// empty table prints an empty list to a template too.
func TestPrintTemplates(t *testing.T) {
	one := snapshots(t)[:1]
	var b bytes.Buffer
	if err := PrintLevels(&b, Flags("custom-columns=NAME:.name,TYPE:.type"), one, "catch-all"); err != nil {
		t.Fatal(err)
	}
	if got, want := b.String(), "NAME        TYPE\ncatch-all   Limited\n"; got != want {
		t.Errorf("custom-columns:\n%q\nwant\n%q", got, want)
	}
	b.Reset()
	if err := PrintQueues(&b, Flags("jsonpath={.kind} {.items}"), one, "no-such-level", false); err != nil {
		t.Fatal(err)
	}
	if got, want := b.String(), "List []"; got != want {
		t.Errorf("jsonpath of no rows = %q, want %q", got, want)
	}
}
