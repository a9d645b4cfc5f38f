package same

import (
	"strings"
	"testing"
	"time"
)

type event struct {
	At    time.Time
	Name  string
	Tags  []string
	since time.Time
}

func TestDiff(t *testing.T) {
	utc := time.Date(2026, 11, 21, 14, 0, 0, 5, time.UTC)
	plus1 := time.FixedZone("+01", 3600)
	base := []event{{At: utc, Name: "a", Tags: []string{"x"}}, {At: utc.In(plus1), Name: "b"}}
	for _, c := range []struct {
		name string
		got  []event
		want string // a part of the message; "" when the same
	}{
		{"the same", []event{{At: utc, Name: "a", Tags: []string{"x"}}, {At: utc.In(time.FixedZone("+01", 3600)), Name: "b"}}, ""},
		{"one fewer", base[:1], "1 events, want 2"},
		{"a later instant", []event{{At: utc.Add(1), Name: "a", Tags: []string{"x"}}, base[1]}, "event 0: At"},
		{"the same instant in another location", []event{base[0], {At: utc, Name: "b"}}, "event 1: At"},
		{"another field", []event{base[0], {At: utc.In(plus1), Name: "c"}}, "event 1:\n got"},
		{"another list", []event{{At: utc, Name: "a", Tags: []string{}}, base[1]}, "event 0:\n got"},
		{"an unexported time", []event{base[0], {At: utc.In(plus1), Name: "b", since: utc}}, "event 1:\n got"},
	} {
		d := Diff("event", base, c.got)
		if c.want == "" && d != "" || c.want != "" && !strings.Contains(d, c.want) {
			t.Errorf("%s: %q, want %q", c.name, d, c.want)
		}
	}
	if d := Diff("n", []int{1, 2}, []int{1, 3}); !strings.Contains(d, "n 1:") {
		t.Errorf("ints: %q", d)
	}
}
