package explain

import (
	"errors"
	"strings"
	"testing"

	"github.com/kubectl-apf/kubectl-apf/pkg/dump"
)

// TestNoPFHeaderCauses orders the causes of a trace without PF headers by
// the server's release the trace tells: exempt requests first before 1.24
// (kubernetes/kubernetes#106827), not at all from 1.24, and as a condition
// when the release is unknown.
func TestNoPFHeaderCauses(t *testing.T) {
	const headers = "I1203 10:51:21.057506   76091 round_trippers.go:460] Response Headers:\n"
	version := func(v string) string {
		return headers + `I1203 10:51:21.089022   76091 request.go:1123] Response Body: {"major":"1","minor":"` + v + `","gitVersion":"v1.` + v + `.3"}` + "\n"
	}
	for _, tt := range []struct {
		name, trace string
		first       string
		absent      string
	}{
		{"a 1.22 server's /version", version("22"), "(1) the server is 1.22, older than 1.24, and the requests were exempt", ""},
		{"a 1.30 server's /version", version("30"), "(1) the requests were long-running", "exempt"},
		{"a 1.19 server's /version", version("19"), "(1) the server is 1.19, older than 1.20", ""},
		{"no release in the trace", headers, "(1) the requests were long-running", ""},
		{"a release past reading", headers + `"gitVersion": "v1.99999999999999999999.0"`, "(1) the requests were long-running", ""},
		{"no response headers", "I1203 10:51:21.057483   76091 round_trippers.go:454] GET https://h/api 200 OK in 3 milliseconds\n", "(1) the trace was taken below -v=8", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := NoPFHeaderError(tt.trace)
			msg := err.Error()
			if !errors.Is(err, dump.ErrNoPFHeader) || strings.Contains(msg, "\n") {
				t.Fatalf("error %q: want one line wrapping ErrNoPFHeader", msg)
			}
			if !strings.Contains(msg, "likeliest causes first: "+tt.first) {
				t.Errorf("%q: want the first cause %q", msg, tt.first)
			}
			if tt.absent != "" && strings.Contains(msg, tt.absent) {
				t.Errorf("%q: want no %q", msg, tt.absent)
			}
			if unknown := !strings.Contains(tt.trace, "gitVersion") || tt.name == "a release past reading"; unknown != strings.Contains(msg, "and the server is older than 1.24") {
				t.Errorf("%q: the exempt cause is conditional on the release exactly when the trace does not tell it", msg)
			}
			if noHeaders := tt.name == "no response headers"; noHeaders != strings.Contains(msg, "below -v=8") {
				t.Errorf("%q: -v below 8 is a cause exactly when the trace shows no response headers", msg)
			}
		})
	}
}

// FuzzNoPFHeaderError: any trace gives one line that wraps ErrNoPFHeader
// and names at least one cause, never a panic.
func FuzzNoPFHeaderError(f *testing.F) {
	for _, s := range []string{
		"I1203 10:51:21.057506   76091 round_trippers.go:460] Response Headers:\n",
		`"gitVersion": "v1.99999999999999999999.0"`,
		`User-Agent: kubectl/v1.0.0`,
		`User-Agent: kubectl/v1.99999999999999999999.0`,
		"",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		err := NoPFHeaderError(s)
		if !errors.Is(err, dump.ErrNoPFHeader) || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "(1) ") {
			t.Fatalf("error %q", err)
		}
	})
}
