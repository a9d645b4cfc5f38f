package input

import (
	"errors"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
)

// TestMalformedReasons: lenient readers count every skipped line under
// its reason, whatever the format, most frequent first.
func TestMalformedReasons(t *testing.T) {
	for _, tt := range []struct {
		name, input string
		want        []string
	}{
		{"httplog", strings.Join([]string{
			`httplog.go:134] "HTTP" verb="GET" URI="/api/v1/pods" latency="1ms" resp=200`,
			`I1121 14:15:17.980328       1 httplog.go:134] "HTTP" verb="GET" URI="/api/v1/pods" latency="1ms"`,
			`httplog.go:134] "HTTP" verb="GET" URI="/api/v1/pods" latency="1ms" resp=200`,
			`I1121 14:15:17.980328       1 httplog.go:134] "HTTP" verb="FLY" URI="/api/v1/pods" latency="1ms" resp=200`,
		}, "\n"), []string{"2 httplog lines without a timestamp", "1 httplog line with an unknown verb", "1 httplog line without resp= (cut short?)"}},
		{"audit", strings.Join([]string{
			`{"kind":"Event","apiVersion":"audit.k8s.io/v1","auditID":"a","stage":"ResponseComplete","requestURI":"/api/v1/pods","verb":"list","user":{"username":"u"}}`,
			`{"kind":"Event","apiVersion":"audit.k8s.io/v1","auditID":"b","stage":"ResponseComplete","requestURI":"/api/v1/pods","verb":"list","user":{"username":"u"},"requestReceivedTimestamp":"2026-11-21T14:15:17Z"}`,
			`{"kind":"Pod","apiVersion":"v1"}`,
		}, "\n"), []string{"1 JSON line of another kind than audit.k8s.io Event", "1 audit event without a timestamp"}},
		{"jsonl", strings.Join([]string{
			`{"user":"a","verb":"get","path":"/api/v1/pods"}`,
			`{"offset":"1s","user":"a","verb":"get","path":"/api/v1/pods"}`,
			`{"offset":"2s","user":"a","verb":"get","path":"api/v1/pods"}`,
		}, "\n"), []string{"1 JSONL record with a path not starting with /", "1 JSONL record without a timestamp"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			st := &workload.Stats{}
			r, _, err := NewReader(strings.NewReader(tt.input+"\n"), tt.name, Options{Lenient: true}, st)
			if err != nil {
				t.Fatal(err)
			}
			var q workload.Request
			var end error
			for end == nil {
				end = r.Next(&q)
			}
			// an input of which no request came is an error naming why
			if st.Records == 0 {
				if errors.Is(end, io.EOF) || !strings.Contains(end.Error(), tt.want[0]) {
					t.Errorf("no request read: got %v, want an error naming %q", end, tt.want[0])
				}
			} else if !errors.Is(end, io.EOF) {
				t.Fatal(end)
			}
			if got := st.MalformedReasons(); !slices.Equal(got, tt.want) {
				t.Errorf("reasons %q, want %q (skipped: %q)", got, tt.want, st.FirstMalformed)
			}
		})
	}
}
