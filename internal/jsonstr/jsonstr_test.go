package jsonstr

import (
	"bytes"
	"encoding/json"
	"testing"
)

// seeds are strings where unquoters differ: invalid UTF-8, surrogates
// (pairs, lone, reversed, a pair's half escaped and the other raw),
// control characters, every escape and a bad one, truncation.
var seeds = []string{
	`"a"`, `""`, `"`, `"\"{\\\"kind\\\":\\\"Event\\\"}\""`,
	`"\u00e9\ud83d\ude00\ud800x"`, `"\ud800"`, `"\ude00\ud83d"`, `"\ud800\u0041"`, `"\ud800\ud800\udc00"`, `"\uD83D\uDE00"`,
	"\"\xff\"", "\"a\xc3\"", "\"\xed\xa0\x80\"", "\"\xf0\x9f\x98\x80\"", "\"é\"",
	"\"a\tb\"", "\"\x00\"", "\"\x1f\"", "\"\x7f\"",
	`"a\/b\n\t\r\b\f"`, `"\u003c\u0026"`, `"\x41"`, `"\u12"`, `"\u12g4"`, `"a\"`, `"a\\"`,
}

// check holds Append and AppendContents to encoding/json on b: the same
// string, or both failing.
func check(t *testing.T, b []byte) {
	var want string
	jsonErr := json.Unmarshal(b, &want)
	if len(b) < 1 || b[0] != '"' {
		return
	}
	end, got, ok := Append([]byte("prefix"), b, 1)
	// a string that ends before b does is not encoding/json's to judge
	whole := ok && end == len(b)
	if ok && end < len(b) {
		return
	}
	if (jsonErr == nil) != whole {
		t.Fatalf("Append(%q) = %q, %d, %v; encoding/json: %q, %v", b, got, end, ok, want, jsonErr)
	}
	if jsonErr != nil {
		return
	}
	if string(got) != "prefix"+want {
		t.Fatalf("Append(%q) = %q; encoding/json: %q", b, got[len("prefix"):], want)
	}
	got2, ok2 := AppendContents(nil, b[1:len(b)-1])
	if !ok2 || string(got2) != want {
		t.Fatalf("AppendContents(%q) = %q, %v; encoding/json: %q", b, got2, ok2, want)
	}
}

// FuzzDecode: on any input that starts with a quote, Append and
// AppendContents decode a string as encoding/json decodes it into a Go
// string, or fail where it fails.
func FuzzDecode(f *testing.F) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(check)
}

// TestDecodeSeeds names the seeds' outcomes, so that the differences the
// three unquoters had are checked without the fuzzer: invalid UTF-8 and a
// lone surrogate become U+FFFD, a control character fails.
func TestDecodeSeeds(t *testing.T) {
	for _, c := range []struct {
		in, want string
		ok       bool
	}{
		{"\"\xff\"", "\uFFFD", true},
		{"\"\xed\xa0\x80\"", "\uFFFD\uFFFD\uFFFD", true},
		{`"\ud800\u0041"`, "\uFFFDA", true},
		{`"\ud83d\ude00"`, "\U0001F600", true},
		{"\"a\tb\"", "", false},
		{`"\x41"`, "", false},
		{`"abc`, "", false},
	} {
		_, got, ok := Append(nil, []byte(c.in), 1)
		if ok != c.ok || ok && string(got) != c.want {
			t.Errorf("Append(%q) = %q, %v; want %q, %v", c.in, got, ok, c.want, c.ok)
		}
	}
	for _, s := range seeds {
		check(t, []byte(s))
	}
}

// TestAppendGrowsForInvalidUTF8: a string of invalid bytes decodes to
// three times its length, past the room made for it.
func TestAppendGrowsForInvalidUTF8(t *testing.T) {
	in := append(append([]byte{'"'}, bytes.Repeat([]byte{0xff}, 100)...), '"')
	end, got, ok := Append(make([]byte, 0, 4), in, 1)
	if !ok || end != len(in) || string(got) != string(bytes.Repeat([]byte("\uFFFD"), 100)) {
		t.Fatalf("Append of 100 invalid bytes = %d bytes, %d, %v", len(got), end, ok)
	}
}
