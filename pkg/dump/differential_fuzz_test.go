package dump

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

// The differential targets check that the parsers give what the reference
// (parse_reference_test.go, the parser before it streamed the rows) gives:
// the same rows, or the same error.

func sameResult[R any](t *testing.T, got []R, gotErr error, want []R, wantErr error) {
	t.Helper()
	if (gotErr == nil) != (wantErr == nil) || gotErr != nil && gotErr.Error() != wantErr.Error() {
		t.Fatalf("error %v, the reference's %v", gotErr, wantErr)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("rows differ from the reference's:\n%+v\n---\n%+v", got, want)
	}
}

func FuzzParsePriorityLevelsMatchesReference(f *testing.F) {
	addSeeds(f, "dump_priority_levels.txt")
	addErrorSeeds(f, "PriorityLevelName, ActiveQueues, IsIdle, IsQuiescing, WaitingRequests, ExecutingRequests", "a, 1, maybe, false, 0, 0")
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := ParsePriorityLevels(b)
		want, wantErr := refParsePriorityLevels(b)
		sameResult(t, got, err, want, wantErr)
	})
}

func FuzzParseQueuesMatchesReference(f *testing.F) {
	addSeeds(f, "dump_queues.txt")
	addErrorSeeds(f, "PriorityLevelName, Index, PendingRequests, ExecutingRequests, VirtualStart", "a, 0, 1, 1, 12.5xs")
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := ParseQueues(b)
		want, wantErr := refParseQueues(b)
		sameResult(t, got, err, want, wantErr)
	})
}

func FuzzParseRequestsMatchesReference(f *testing.F) {
	addSeeds(f, "dump_requests.txt")
	addErrorSeeds(f, "PriorityLevelName, FlowSchemaName, QueueIndex, RequestIndexInQueue, FlowDistingsher, ArriveTime, UserName, Verb", "a, fs, 1, 0, d, 2020-02-30T00:00:00Z, u, get")
	f.Add([]byte("PriorityLevelName, FlowSchemaName, QueueIndex, RequestIndexInQueue, FlowDistingsher, ArriveTime, UserName, Verb, APIPath, Namespace,\n" +
		"system, system-nodes, 12, 0, u, 2020-07-23T15:31:03.583823404Z, u, create, /api/v1/namespaces/s/configmaps,\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := ParseRequests(b)
		want, wantErr := refParseRequests(b)
		sameResult(t, got, err, want, wantErr)
	})
}

// addErrorSeeds adds bodies with two faults, whose order decides the
// error: a bad cell (badRow, the header's width) before a line of the
// wrong width, a header that lacks
// a column above such a line, elisions and a row cut short.
func addErrorSeeds(f *testing.F, header, badRow string) {
	f.Add([]byte(header + "\n" + badRow + "\na, 1\n"))
	f.Add([]byte(header + "\n" + badRow + "\n"))
	f.Add([]byte("PriorityLevelName, Other\na, b\na\n"))
	f.Add([]byte("PriorityLevelName, Other\na, b\n"))
	f.Add([]byte(header + "\n...\n[…]\n<SNIP>\n\n"))
	f.Add([]byte(header + ",\na, 1,\n"))
	f.Add([]byte("PriorityLevelName,Other\na,b\n"))
	// white space splitCells' fast path must leave to strings.TrimSpace:
	// Unicode spaces, control bytes, long padding
	f.Add([]byte(header + "\n\u00a0a\u00a0,  \u2003b\v,\t\t c\u0085,                    d\r\n"))
}

func FuzzIsElisionMatchesReference(f *testing.F) {
	for _, s := range []string{"...", "…", "[...]", "(…)", "<snip>", "...snip...", "SNIPPED", "KKKKKKsnip", "ȺȺȺȺȺȺsnip", "a...", ". . ."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := isElision(s), refIsElision(s); got != want {
			t.Fatalf("isElision(%q) = %v, the reference's %v", s, got, want)
		}
	})
}

// FuzzParseUTCMatchesTimeParse checks that the fast path of a dump's times
// reads what time.Parse reads, to the location, wherever it reads at all.
func FuzzParseUTCMatchesTimeParse(f *testing.F) {
	for _, s := range []string{"2026-11-21T11:59:59.9Z", "0001-01-01T00:00:00Z", "2024-02-29T23:59:59.123456789Z", "2023-02-29T00:00:00Z",
		"2020-07-23T15:31:03.583823404Z", "2020-07-23T15:31:03.Z", "2020-07-23T15:31:03.1234567891Z", "2020-07-23T24:00:00Z",
		"2020-07-23T15:31:60Z", "2020-13-01T00:00:00Z", "2020-07-23T15:31:03+02:00", "2020-07-23 15:31:03Z", "+020-07-23T15:31:03Z"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := parseUTC(s)
		if !ok {
			return
		}
		want, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatalf("parseUTC(%q) = %v, time.Parse refuses it: %v", s, got, err)
		}
		if got != want || got.Location() != want.Location() {
			t.Fatalf("parseUTC(%q) = %#v, time.Parse %#v", s, got, want)
		}
	})
}

// FuzzDayCacheMatchesParseUTC checks that reading a time after another
// (whose date parseUTC remembers) reads what reading it alone reads, and
// what time.Parse reads.
func FuzzDayCacheMatchesParseUTC(f *testing.F) {
	f.Add("2026-11-21T11:59:59.9Z", "2026-11-21T12:00:00Z")
	f.Add("2024-02-29T23:59:59Z", "2024-02-29T25:00:00Z")
	f.Add("2024-02-29T25:00:00Z", "2024-02-29T01:00:00.5Z")
	f.Add("2023-02-28T00:00:00Z", "2023-02-29T00:00:00Z")
	f.Add("0001-01-01T00:00:00Z", "0001-01-01T00:00:00.000Z")
	f.Fuzz(func(t *testing.T, first, s string) {
		var d dayCache
		d.parseUTC(first)
		got, ok := d.parseUTC(s)
		alone, aloneOK := parseUTC(s)
		if ok != aloneOK || got != alone || got.Location() != alone.Location() {
			t.Fatalf("after %q, parseUTC(%q) = %#v, %v; alone %#v, %v", first, s, got, ok, alone, aloneOK)
		}
		if !ok {
			return
		}
		want, err := time.Parse(time.RFC3339Nano, s)
		if err != nil || got != want || got.Location() != want.Location() {
			t.Fatalf("parseUTC(%q) = %#v, time.Parse %#v, %v", s, got, want, err)
		}
	})
}

// FuzzParseRequestsInPartsMatchesReference checks the request parser on
// bodies large enough to be read in two parts at once: the real load
// capture's rows repeated, with line inserted before the at-th row (of
// either part, or at the line break where they meet) and again before the
// second-th. The rows or the error must be the reference's: which fault
// wins when both parts have one, line numbers after the break, and rows
// of the second part behind skipped lines of the first.
func FuzzParseRequestsInPartsMatchesReference(f *testing.F) {
	body := readFixture(f, "v1.37.1-load", FileRequests)
	header, rowText, _ := strings.Cut(string(body), "\n")
	rows := strings.Split(strings.TrimSuffix(rowText, "\n"), "\n")
	var big []string
	for n := 0; n < parallelRows*5/4; {
		for _, r := range rows {
			big = append(big, r)
			n += len(r) + 1
		}
	}
	mid := len(big) / 2
	for _, line := range []string{"", "...", "<none>, <none>, <none>, <none>, <none>, <none>", "apf-load, apf-load, x, 0, d, 2026-11-21T15:16:42Z",
		rows[1] + ", extra", strings.Replace(rows[1], "2026-11-21", "2026-02-30", 1), strings.Replace(rows[1], "apf-load", "", 1), "\xff\xfe", rows[0]} {
		for _, at := range [][2]uint32{{1, 2}, {uint32(mid - 1), uint32(mid + 1)}, {uint32(mid), uint32(mid)}, {2, uint32(mid + 2)}, {uint32(mid + 3), 5}} {
			f.Add(line, at[0], at[1])
		}
	}
	f.Fuzz(func(t *testing.T, line string, at, second uint32) {
		if strings.ContainsAny(line, "\n") {
			return
		}
		lines := append([]string{header}, big...)
		for _, i := range []uint32{at, second} {
			i = 1 + i%uint32(len(lines))
			lines = append(lines[:i], append([]string{line}, lines[i:]...)...)
		}
		b := []byte(strings.Join(lines, "\n") + "\n")
		got, err := ParseRequests(b)
		want, wantErr := refParseRequests(b)
		sameResult(t, got, err, want, wantErr)
	})
}
