package input

import (
	"encoding/binary"
	"reflect"
	"testing"
	"time"
)

// FuzzParseUTC checks the scanner's fast path for timestamps against
// time.Time's UnmarshalJSON, which decodes them otherwise: where it
// accepts a text, UnmarshalJSON accepts it too and gives the same time
// (its location included).
func FuzzParseUTC(f *testing.F) {
	for _, s := range []string{"2026-11-23T03:00:01.234567Z", "2026-11-23T03:00:01Z", "2024-02-29T23:59:59.999999999Z",
		"2023-02-29T00:00:00Z", "2026-13-01T00:00:00Z", "2026-11-23T24:00:00Z", "2026-11-23T03:00:60Z", "2026-11-23T03:00:01.Z",
		"2026-11-23T03:00:01.1234567890Z", "2026-11-23T03:00:01+01:00", "2026-11-23t03:00:01Z", "+026-11-23T03:00:01Z", "2026-11-23T03:00:01.-1Z"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := parseUTC([]byte(s))
		if !ok {
			return
		}
		var want time.Time
		if err := want.UnmarshalJSON([]byte(`"` + s + `"`)); err != nil {
			t.Fatalf("parseUTC(%q) = %v; UnmarshalJSON refuses it: %v", s, got, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("parseUTC(%q) = %#v; UnmarshalJSON gives %#v", s, got, want)
		}
		// from the start of the hour cached, by the same text or
		// another time of the same hour
		for _, prime := range []string{s, s[:13] + ":00:00Z", s[:13] + ":59:59.999999999Z"} {
			var c utcHour
			c.parse([]byte(prime))
			if got, ok := c.parse([]byte(s)); !ok || !reflect.DeepEqual(got, want) {
				t.Fatalf("parseUTC(%q) after %q = %#v, %v; UnmarshalJSON gives %#v", s, prime, got, ok, want)
			}
		}
	})
}

// TestParseUTCAccepts checks that the fast path takes the apiserver's own
// timestamps (otherwise it would be no fast path), and refuses what
// UnmarshalJSON refuses or reads differently.
func TestParseUTCAccepts(t *testing.T) {
	for _, s := range []string{"2026-11-23T03:00:01.234567Z", "2026-11-23T03:00:01Z", "2024-02-29T23:59:59.999999999Z", "2026-11-23T03:00:01.5Z"} {
		if _, ok := parseUTC([]byte(s)); !ok {
			t.Errorf("parseUTC(%q) gave up", s)
		}
	}
	for _, s := range []string{"2023-02-29T00:00:00Z", "2026-11-23T24:00:00Z", "2026-11-23T03:00:01.Z", "2026-11-23T03:00:01+01:00", "2026-11-23T03:00:01.1234567890Z"} {
		if _, ok := parseUTC([]byte(s)); ok {
			t.Errorf("parseUTC(%q) accepted it", s)
		}
	}
}

// FuzzSpecialIn checks the eight-bytes-at-once tests of rawString and of
// parseKV's quoted values against the bytes one by one.
func FuzzSpecialIn(f *testing.F) {
	for _, s := range []string{"abcdefgh", "abc\"efgh", "abcdefg\\", "\x1fbcdefgh", "abcd\x80fgh", "        ", "!!!!!!!!", "\x00\x00\x00\x00\x00\x00\x00\x00", "~~~~~~~\x7f", "abc\ndefg"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) < 8 {
			return
		}
		want := false
		for _, c := range b[:8] {
			if c < 0x20 || c >= 0x80 || c == '"' || c == '\\' {
				want = true
			}
		}
		if got := specialIn(binary.LittleEndian.Uint64(b)); got != want {
			t.Fatalf("specialIn(%q) = %v, want %v", b[:8], got, want)
		}
		want = false
		for _, c := range b[:8] {
			if c >= 0x80 || c == '"' || c == '\\' || c == '\n' {
				want = true
			}
		}
		if got := kvSpecialIn(binary.LittleEndian.Uint64(b)); got != want {
			t.Fatalf("kvSpecialIn(%q) = %v, want %v", b[:8], got, want)
		}
	})
}
