package record

import (
	"bytes"
	"compress/gzip"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/dump"
)

var at = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

// capture builds a small capture through the dump formatters.
func capture(t testing.TB, waiting int) *dump.Capture {
	t.Helper()
	var reqs []dump.RequestRow
	for i := 0; i < waiting; i++ {
		reqs = append(reqs, dump.RequestRow{PriorityLevel: "workload-low", FlowSchema: "service-accounts", QueueIndex: i % 3, IndexInQueue: i / 3,
			FlowDistinguisher: "ns1", ArriveTime: at.Add(-time.Second), InitialSeats: 1, HasDetails: true, UserName: "alice", Verb: "list", APIPath: "/api/v1/pods"})
	}
	s := &dump.Snapshot{Instance: "https://127.0.0.1:6443", CapturedAt: at, Raw: map[string][]byte{
		dump.FilePriorityLevels: dump.FormatPriorityLevels([]dump.PriorityLevelRow{{Name: "workload-low", WaitingRequests: waiting, HasCounters: true}}),
		dump.FileRequests:       dump.FormatRequests(reqs),
	}}
	files, err := dump.BundleFiles(&dump.Capture{Snapshots: []*dump.Snapshot{s}}, dump.Manifest{CreatedAt: at})
	if err != nil {
		t.Fatal(err)
	}
	c, _, err := dump.CaptureFromFiles(files, dump.CaptureOptions{Parts: dump.PartAll})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestRoundTrip(t *testing.T) {
	for _, name := range []string{"rec.jsonl", "rec.jsonl.gz"} {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), name)
			w, err := Create(p, Header{Source: "https://127.0.0.1:6443", Started: at, Interval: 2 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 3; i++ {
				f, err := NewFrame(at.Add(time.Duration(i)*2*time.Second), int64(4+i), capture(t, i*5), nil)
				if err != nil {
					t.Fatal(err)
				}
				if err := w.Write(f); err != nil {
					t.Fatal(err)
				}
			}
			f, _ := NewFrame(at.Add(6*time.Second), 1, nil, errors.New("dial tcp: connection refused"))
			if err := w.Write(f); err != nil {
				t.Fatal(err)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			rec, err := ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if rec.Header.Source != "https://127.0.0.1:6443" || rec.Header.Interval != 2*time.Second || len(rec.Frames) != 4 || rec.Truncated {
				t.Fatalf("header %+v, %d frames, truncated %v", rec.Header, len(rec.Frames), rec.Truncated)
			}
			for i := 0; i < 3; i++ {
				c, err := rec.Frames[i].Capture()
				if err != nil {
					t.Fatal(err)
				}
				if got := len(c.Snapshots[0].RequestDump); got != i*5 || rec.Frames[i].Requests != int64(4+i) {
					t.Errorf("frame %d: %d requests in the dump, load %d; want %d, %d", i, got, rec.Frames[i].Requests, i*5, 4+i)
				}
			}
			if _, err := rec.Frames[3].Capture(); err == nil || !strings.Contains(err.Error(), "connection refused") {
				t.Errorf("a failed refresh reads back as %v", err)
			}
		})
	}
}

// A recorder killed mid-frame leaves a truncated last line (and, gzipped,
// no trailer): the complete frames still play.
func TestTruncated(t *testing.T) {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, Header{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		f, _ := NewFrame(at, 1, capture(t, 2), nil)
		if err := w.Write(f); err != nil {
			t.Fatal(err)
		}
	}
	full := buf.Bytes()
	cut := full[:len(full)-40]
	rec, err := Read(bytes.NewReader(cut))
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Frames) != 1 || !rec.Truncated {
		t.Errorf("%d frames, truncated %v; want 1, true", len(rec.Frames), rec.Truncated)
	}

	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(full)
	zw.Flush() // no Close: no trailer, as after a crash
	rec, err = Read(bytes.NewReader(gz.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Frames) != 2 {
		t.Errorf("gzip without trailer: %d frames, want 2", len(rec.Frames))
	}
}

func TestReadErrors(t *testing.T) {
	header := `{"format":"kubectl-apf-recording","version":1}` + "\n"
	tests := []struct {
		name, in, wantErr string
	}{
		{"empty", "", "empty file: not a kubectl-apf recording"},
		{"a bundle manifest", `{"format":1}` + "\n", "not a kubectl-apf recording"},
		{"text", "hello\n", "not a kubectl-apf recording"},
		{"newer version", `{"format":"kubectl-apf-recording","version":2}` + "\n", "recording version 2; this kubectl-apf reads version 1"},
		{"bad frame in the middle", header + "{bad\n" + `{"at":"2026-11-21T12:00:00Z","error":"x"}` + "\n", "line 2: decoding the frame"},
		{"empty frame", header + `{"at":"2026-11-21T12:00:00Z"}` + "\n", "line 2: a frame with neither files nor an error"},
		{"bad gzip", "\x1f\x8bxx", "not a kubectl-apf recording"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Read(strings.NewReader(tt.in))
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
	if _, err := ReadFile(filepath.Join(t.TempDir(), "missing")); err == nil || !strings.Contains(err.Error(), "reading the recording") {
		t.Errorf("missing file: %v", err)
	}
}

// A frame whose files are not a bundle fails on Capture with the frame's
// time, not with a panic.
func TestBadFrameFiles(t *testing.T) {
	f := &Frame{At: at, Files: map[string][]byte{"bundle.json": []byte(`{"format":1,"instances":[{"dir":"i","files":["dump_queues.txt"]}]}`), "i/dump_queues.txt": []byte("garbage")}}
	if _, err := f.Capture(); err == nil || !strings.Contains(err.Error(), "frame at 2026-11-21T12:00:00Z") {
		t.Errorf("error %v", err)
	}
}

// FuzzRead feeds arbitrary bytes to the reader, and plays every frame it
// returns: an error is fine, a panic is not.
func FuzzRead(f *testing.F) {
	var buf bytes.Buffer
	w, _ := NewWriter(&buf, Header{Source: "seed"})
	fr, _ := NewFrame(at, 3, capture(f, 3), nil)
	_ = w.Write(fr)
	f.Add(buf.Bytes())
	f.Add([]byte(`{"format":"kubectl-apf-recording","version":1}` + "\n" + `{"at":"2026-11-21T12:00:00Z","files":{"bundle.json":"e30="}}`))
	f.Add([]byte("\x1f\x8b\x08\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		rec, err := Read(bytes.NewReader(b))
		if err != nil {
			return
		}
		for _, fr := range rec.Frames {
			_, _ = fr.Capture()
		}
	})
}
