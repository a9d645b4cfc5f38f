package textfmt

import (
	"math"
	"testing"
)

// TestNum: absent and infinite figures print "-", integers print plainly
// whatever the precision, and other figures with the decimals asked for.
func TestNum(t *testing.T) {
	for _, tt := range []struct {
		f        float64
		decimals int
		want     string
	}{
		{math.NaN(), 2, "-"},
		{math.Inf(1), 1, "-"},
		{math.Inf(-1), 2, "-"},
		{0, 2, "0"},
		{-7, 1, "-7"},
		{600, 2, "600"},
		{1.5, 2, "1.50"},
		{1.5, 1, "1.5"},
		{0.25, 1, "0.2"}, // 0.25 is exact: half to even
		{1e15, 0, "1000000000000000"},
	} {
		if got := Num(tt.f, tt.decimals); got != tt.want {
			t.Errorf("Num(%v, %d) = %q, want %q", tt.f, tt.decimals, got, tt.want)
		}
	}
}

// TestCount: a count and its noun, singular for 1 alone.
func TestCount(t *testing.T) {
	for _, c := range []struct {
		n    int
		want string
	}{{0, "0 requests"}, {1, "1 request"}, {2, "2 requests"}} {
		if got := Count(c.n, "request", "requests"); got != c.want {
			t.Errorf("Count(%d) = %q, want %q", c.n, got, c.want)
		}
	}
}

// TestEveryOne: one of a noun is named alone, more each of them (explain's
// and reconstruct's "every one of its 3 seats taken").
func TestEveryOne(t *testing.T) {
	for _, c := range []struct {
		n    int
		want string
	}{{1, "apf-load's 1 seat"}, {3, "every one of apf-load's 3 seats"}} {
		if got := EveryOne("apf-load's", c.n, "seat", "seats"); got != c.want {
			t.Errorf("EveryOne(%d) = %q, want %q", c.n, got, c.want)
		}
	}
}
