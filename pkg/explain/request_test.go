package explain

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestInUseOf: the seats in use of a limit, the noun agreeing with the
// limit (the demo's 1-seat level read "0 of its 1 seats are in use").
func TestInUseOf(t *testing.T) {
	for _, tt := range []struct {
		inUse, limit float64
		its, want    string
	}{
		{0, 1, "its ", "0 of its 1 seat in use"},
		{1, 1, "", "1 of 1 seat in use"},
		{2, 3, "its ", "2 of its 3 seats in use"},
		{0, 2.5, "", "0 of 2.5 seats in use"},
		// a LIST of 10 seats in a Reject level of 1 seat (make demo's
		// apf-load-reject) read "10 of its 1 seat in use"
		{10, 1, "its ", "10 seats in use, more than its 1 seat (upstream starts a request wider than the level when nothing else executes there)"},
	} {
		if got := inUseOf(tt.inUse, tt.limit, tt.its); got != tt.want {
			t.Errorf("inUseOf(%v, %v) = %q, want %q", tt.inUse, tt.limit, got, tt.want)
		}
	}
}

// TestWiderThan: a request wider than its level names
// kubernetes/kubernetes#134196 (a level of 0 seats) only for a level of
// less than one seat: make demo's 10-seat LIST in a 1-seat level read "so
// a level of 0 seats admits one request at a time".
func TestWiderThan(t *testing.T) {
	if got := widerThan(10, 1); strings.Contains(got, "#134196") || got != "its 10 seats are more than the level's limit of 1, and "+widerRule {
		t.Errorf("widerThan(10, 1) = %q", got)
	}
	if got := widerThan(1, 0); !strings.Contains(got, "so a level of 0 seats admits one request at a time: kubernetes/kubernetes#134196") {
		t.Errorf("widerThan(1, 0) = %q", got)
	}
}

// TestServersWorkEstimate: the server's estimate from an httplog line says
// its final seats and how long they were held, or that there were none
// (apf_fseats=0 apf_additionalLatency=0s read "then 0 final seats for 0s").
func TestServersWorkEstimate(t *testing.T) {
	u := func(n uint64) *uint64 { return &n }
	d := func(v time.Duration) *Duration { x := Duration(v); return &x }
	for _, tt := range []struct {
		r    Recorded
		want string
	}{
		{Recorded{Source: "httplog", InitialSeats: u(1), FinalSeats: u(0), AdditionalLatency: d(0)}, "  the server estimated 1 seat, and no final seats\n"},
		{Recorded{Source: "httplog", InitialSeats: u(1), FinalSeats: u(3), AdditionalLatency: d(15 * time.Millisecond)}, "  the server estimated 1 seat, then 3 final seats for 15ms\n"},
		{Recorded{Source: "httplog", InitialSeats: u(10)}, "  the server estimated 10 seats\n"},
	} {
		var b bytes.Buffer
		p := &printer{w: &b}
		writeRecorded(p, &tt.r)
		if !strings.Contains(b.String(), tt.want) {
			t.Errorf("got:\n%s\nwant %q in it", b.String(), tt.want)
		}
	}
}
