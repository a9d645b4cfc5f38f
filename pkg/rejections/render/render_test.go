package render

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/rejections"
)

// TestCountsPrintWhole: counts print as integers (issue 47: "1.53e+03"),
// in the reasons and the figures.
func TestCountsPrintWhole(t *testing.T) {
	v, other := 1533.0, 2500000.0
	rep := &rejections.Report{Instances: []rejections.Instance{{Name: "a", Other429: &other}},
		Incidents: []rejections.Incident{{Level: "global-default", Rejected: v, Reasons: map[string]float64{"queue-full": v, "time-out": 1533.4},
			Instances: []rejections.InstanceCount{{Instance: "a", Count: v}}, State: rejections.LevelState{CurrentLimit: &other, SeatsInUse: &v}}}}
	var b strings.Builder
	if err := WriteText(&b, rep, Options{}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"queue-full 1533", "time-out 1533", "limit 2500000 seats", "1533 in use"} {
		if !strings.Contains(out, want) {
			t.Errorf("%q missing from\n%s", want, out)
		}
	}
	if strings.Contains(out, "e+") {
		t.Errorf("a count in exponent form:\n%s", out)
	}
	for in, want := range map[float64]string{1533: "1533", 0.25: "0.25", 1533.3: "1533", 2.5e6: "2500000", 12.345: "12.3"} {
		if got := count(in); got != want {
			t.Errorf("count(%v) = %q, want %q", in, got, want)
		}
	}
}

// TestReasonsLargestFirst: every source lists an incident's reasons the
// largest first, as the store's text did (the live and log texts sorted
// them by name), and a server-supplied reason is sanitised.
func TestReasonsLargestFirst(t *testing.T) {
	at := time.Date(2026, 11, 23, 21, 0, 0, 0, time.UTC)
	inc := rejections.Incident{Level: "l", Start: &at, End: &at, Rejected: 41,
		Reasons:   map[string]float64{"concurrency-limit": 1, "queue-full": 10, "time-out": 30, "x\x1b[2J": 0.5},
		Instances: []rejections.InstanceCount{{Instance: "a", Count: 41}}}
	const want = "time-out 30, queue-full 10, concurrency-limit 1, x?[2J 0.5"
	for _, kind := range []string{rejections.SourceCluster, rejections.SourceLog, rejections.SourcePrometheus} {
		rep := rejections.New(rejections.Source{Kind: kind})
		rep.Instances = []rejections.Instance{{Name: "a"}}
		rep.Incidents = []rejections.Incident{inc}
		var b strings.Builder
		if err := WriteText(&b, rep, Options{}); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), want) {
			t.Errorf("%s: %q missing from\n%s", kind, want, b.String())
		}
	}
}

// TestLiveNotes: the notes of a whole report read now print under the
// heading the other sources give them.
func TestLiveNotes(t *testing.T) {
	rep := rejections.New(rejections.Source{Kind: rejections.SourceBundle})
	rep.Instances = []rejections.Instance{{Name: "a"}}
	rep.Notes = []string{"one", "two"}
	var b strings.Builder
	if err := WriteText(&b, rep, Options{}); err != nil {
		t.Fatal(err)
	}
	const want = "Apiserver a (rejections total since the apiserver started)\n  no priority level is rejecting requests\n\nNotes\n  - one\n  - two\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

// TestLiveIntervalToTheMillisecond: a bundle's two scrapes are as far
// apart as they happened to be; the heading gives it to the millisecond,
// not to the nanosecond.
func TestLiveIntervalToTheMillisecond(t *testing.T) {
	rep := rejections.New(rejections.Source{Kind: rejections.SourceBundle})
	rep.Instances = []rejections.Instance{{Name: "a", HasRates: true, IntervalSeconds: 28.617268419}}
	var b strings.Builder
	if err := WriteText(&b, rep, Options{}); err != nil {
		t.Fatal(err)
	}
	if want := "Apiserver a (rejections per second over 28.617s)\n"; !strings.HasPrefix(b.String(), want) {
		t.Errorf("got\n%s\nwant it to start %q", b.String(), want)
	}
}

// TestStoreNotes: a store's notes print whether or not a log was joined
// (they printed only after a joined log's clients).
func TestStoreNotes(t *testing.T) {
	start, end := time.Date(2026, 11, 23, 21, 0, 0, 0, time.UTC), time.Date(2026, 11, 23, 21, 30, 0, 0, time.UTC)
	rep := rejections.New(rejections.Source{Kind: rejections.SourcePrometheus})
	rep.Window = rejections.Window{Start: &start, End: &end, StepSeconds: 30}
	rep.All429, rep.Other429 = rejections.Of(0), rejections.Of(0)
	rep.Notes = []string{"the store \x1b[31mwarned"}
	var b strings.Builder
	if err := WriteText(&b, rep, Options{}); err != nil {
		t.Fatal(err)
	}
	const want = "429s from 2026-11-23 21:00:00Z to 2026-11-23 21:30:00Z (step 30s)\n" +
		"APF rejected 0 requests in 0 incidents; 0 HTTP 429s in all, 0 not from APF\n" +
		"No priority level rejected a request in the window.\n\nNotes\n  - the store ?[31mwarned\n"
	if b.String() != want {
		t.Errorf("got\n%q\nwant\n%q", b.String(), want)
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

// TestWriteError: a writer's error is WriteText's.
func TestWriteError(t *testing.T) {
	for _, kind := range []string{rejections.SourceCluster, rejections.SourceLog, rejections.SourcePrometheus} {
		if err := WriteText(failingWriter{}, rejections.New(rejections.Source{Kind: kind}), Options{}); err == nil || err.Error() != "disk full" {
			t.Errorf("%s: WriteText = %v, want the writer's error", kind, err)
		}
	}
}

// TestOneSeat: a level of 1 seat reads "limit 1 seat" (the demo cluster's
// apf-load read "limit 1 seats"), an absent limit "- seats".
func TestOneSeat(t *testing.T) {
	one, zero := 1.0, 0.0
	for _, c := range []struct {
		limit *float64
		want  string
	}{{&one, "limit 1 seat (nominal 1)"}, {&zero, "limit 0 seats (nominal 1)"}, {nil, "limit - seats (nominal 1)"}} {
		rep := &rejections.Report{Instances: []rejections.Instance{{Name: "a"}},
			Incidents: []rejections.Incident{{Level: "l", Rejected: 1, Reasons: map[string]float64{"queue-full": 1},
				Instances: []rejections.InstanceCount{{Instance: "a", Count: 1}}, State: rejections.LevelState{CurrentLimit: c.limit, NominalLimit: &one}}}}
		var b strings.Builder
		if err := WriteText(&b, rep, Options{}); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), c.want) {
			t.Errorf("%q missing from\n%s", c.want, b.String())
		}
	}
}
