package dump

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
)

// largeRequests is a request dump large enough for ParseRaw to parse it in
// a goroutine of its own: the real load capture's rows repeated, with bad
// (when not "") replacing the last row.
func largeRequests(t *testing.T, bad string) []byte {
	t.Helper()
	body := readFixture(t, "v1.37.1-load", FileRequests)
	header, rows, _ := bytes.Cut(body, []byte("\n"))
	big := append(append([]byte{}, header...), '\n')
	for len(big) < parallelRequests {
		big = append(big, rows...)
	}
	if bad != "" {
		big = append(big, bad+"\n"...)
	}
	return big
}

// TestParseRawLargeRequests checks that a request dump parsed beside the
// rest gives the rows ParseRequests gives, and that the error is the one of
// the first input that fails in ParseRaw's order, as when the inputs were
// parsed one after the other.
func TestParseRawLargeRequests(t *testing.T) {
	good := largeRequests(t, "")
	if len(good) < parallelRequests {
		t.Fatalf("the dump is %d bytes, below %d: ParseRaw would not parse it apart", len(good), parallelRequests)
	}
	badRequests := largeRequests(t, "level, fs, 1, 0")
	badQueues := []byte("PriorityLevelName, Index, PendingRequests, ExecutingRequests\na, zero, 0, 0\n")
	badMetrics := []byte("{garbage\n")
	queues := readFixture(t, "v1.26-layout", FileQueues)
	metricsBody := readFixtureMetrics(t, "modern-a.txt")
	want, err := ParseRequests(good)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name                      string
		queues, requests, metrics []byte
		wantErr                   string
	}{
		{"all good", queues, good, metricsBody, ""},
		{"queues and requests bad", badQueues, badRequests, metricsBody, "dump_queues line 2"},
		{"requests and metrics bad", queues, badRequests, badMetrics, "dump_requests line"},
		{"metrics bad", queues, good, badMetrics, MetricsFile(0)},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := &Snapshot{Raw: map[string][]byte{FileQueues: c.queues, FileRequests: c.requests, MetricsFile(0): c.metrics}}
			err := s.ParseRaw()
			if c.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(s.RequestDump, want) {
					t.Fatalf("ParseRaw's %d requests differ from ParseRequests' %d", len(s.RequestDump), len(want))
				}
				if len(s.Metrics) != 1 || len(s.QueueDump) == 0 {
					t.Fatalf("%d scrapes, %d queues; want 1 scrape and the queues", len(s.Metrics), len(s.QueueDump))
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Fatalf("error %v; want one naming %q", err, c.wantErr)
			}
		})
	}
}
