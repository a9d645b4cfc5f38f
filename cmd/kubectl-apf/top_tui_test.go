package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/kubectl-apf/kubectl-apf/pkg/dump"
	"github.com/kubectl-apf/kubectl-apf/pkg/tui/record"
)

// writeTestBundle writes a bundle of the repository's v1.37.1 load capture.
func writeTestBundle(t *testing.T) string {
	t.Helper()
	src := &staticSource{t: t, now: time.Date(2026, 11, 21, 15, 0, 0, 0, time.UTC)}
	c, err := src.Capture(context.Background(), dump.CaptureOptions{Parts: dump.PartAll, MetricsInterval: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	// The source parses its scrapes without keeping their bodies: put them
	// in the bundle too, with their times.
	s := c.Snapshots[0]
	for i, name := range []string{"modern-a.txt", "modern-b.txt"} {
		body, err := os.ReadFile(filepath.Join("..", "..", "testdata", "metrics", name))
		if err != nil {
			t.Fatal(err)
		}
		s.Raw[dump.MetricsFile(i)] = body
		s.Raw[fmt.Sprintf("metrics-%d.time", i)] = []byte(src.now.Add(time.Duration(i) * 2 * time.Second).Format(time.RFC3339Nano))
	}
	p := filepath.Join(t.TempDir(), "b.tar.gz")
	if err := dump.WriteBundle(p, c, dump.Manifest{CreatedAt: src.now}); err != nil {
		t.Fatal(err)
	}
	return p
}

// A bare "top" whose stdout is not a terminal prints the levels table, with
// the source flags it was given.
func TestTopPipedPrintsTables(t *testing.T) {
	b := writeTestBundle(t)
	streams, out, errb := testStreams("")
	if code := run([]string{"top", "--from", b}, streams); code != 0 {
		t.Fatalf("exit %d: %s", code, errb)
	}
	got := out.String()
	if !strings.Contains(got, "LEVEL") || !strings.Contains(got, "apf-load") || strings.Contains(got, "\x1b") {
		t.Errorf("piped top printed:\n%q", got)
	}
	// The same as "top levels".
	streams2, out2, _ := testStreams("")
	run([]string{"top", "levels", "--from", b}, streams2)
	if got != out2.String() {
		t.Errorf("piped top differs from top levels:\n%s\n---\n%s", got, out2)
	}
}

func TestTopTUIFlagErrors(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"interval too short", []string{"top", "--record", "x", "--interval", "100ms"}, "--interval 100ms: want between 500ms and 1m0s"},
		{"replay and record", []string{"top", "--replay", "a", "--record", "b"}, "--replay plays a recording back: it cannot be combined with --record"},
		{"replay and from", []string{"top", "--replay", "a", "--from", "b"}, "cannot be combined with --record, --from"},
		{"no terminal", []string{"top", "--replay", "a"}, "the live view needs a terminal"},
		{"unknown subcommand", []string{"top", "queues", "--record", "x"}, `unknown command "queues" for "kubectl apf top"`},
		{"unknown subcommand piped", []string{"top", "queues", "--from", "x"}, `unknown command "queues" for "kubectl apf top"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			streams, _, errb := testStreams("")
			if code := run(tt.args, streams); code != 1 {
				t.Errorf("exit %d, want 1", code)
			}
			if !strings.HasPrefix(errb.String(), "error: ") || !strings.Contains(errb.String(), tt.wantErr) || strings.Count(errb.String(), "\n") != 1 {
				t.Errorf("stderr = %q, want one line with %q", errb, tt.wantErr)
			}
		})
	}
}

// slowKeys is a terminal's input: nothing for a while, then the keys, then
// next's.
type slowKeys struct {
	delay time.Duration
	keys  string
	sent  bool
	next  *slowKeys
}

func (s *slowKeys) Read(p []byte) (int, error) {
	if s.sent && s.next != nil {
		return s.next.Read(p)
	}
	if s.sent {
		// Block like an idle terminal until the program stops reading.
		time.Sleep(time.Hour)
		return 0, io.EOF
	}
	time.Sleep(s.delay)
	s.sent = true
	return copy(p, s.keys), nil
}

// runView runs the live view with injected input and a fixed size.
func runView(t *testing.T, o *TopTUIOptions, keys string, delay time.Duration) string {
	t.Helper()
	return runViewKeys(t, o, &slowKeys{delay: delay, keys: keys})
}

// runViewKeys runs the live view with the keys of in.
func runViewKeys(t *testing.T, o *TopTUIOptions, in *slowKeys) string {
	t.Helper()
	var out bytes.Buffer
	o.Out = &out
	o.Force = true
	o.programOptions = []tea.ProgramOption{tea.WithInput(in), tea.WithWindowSize(120, 30), tea.WithoutSignals()}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := o.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if ctx.Err() != nil {
		t.Fatal("the view did not quit on q")
	}
	return out.String()
}

// The view over a bundle, recorded, then replayed: both quit on q and leave
// the alternate screen.
func TestTopTUIRecordReplay(t *testing.T) {
	b := writeTestBundle(t)
	rec := filepath.Join(t.TempDir(), "top.jsonl.gz")
	streams, _, _ := testStreams("")
	o := NewTopTUIOptions(genericclioptions.NewConfigFlags(false), streams)
	o.From, o.Record, o.Interval = b, rec, 500*time.Millisecond
	if err := o.Options.Complete(); err != nil {
		t.Fatal(err)
	}
	out := runView(t, o, "q", 1500*time.Millisecond)
	if !strings.Contains(out, "\x1b[?1049h") || !strings.Contains(out, "\x1b[?1049l") {
		t.Errorf("the view did not enter and leave the alternate screen")
	}
	r, err := record.ReadFile(rec)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Frames) < 2 {
		t.Fatalf("%d frames recorded in 1.5 s at 500ms, want at least 2", len(r.Frames))
	}
	if _, err := r.Frames[0].Capture(); err != nil {
		t.Fatal(err)
	}

	o2 := NewTopTUIOptions(genericclioptions.NewConfigFlags(false), streams)
	o2.Replay = rec
	out = runView(t, o2, "q", 500*time.Millisecond)
	if !strings.Contains(out, "REPLAY") || !strings.Contains(out, "\x1b[?1049l") {
		t.Errorf("the replay did not show or did not leave the alternate screen")
	}
}

// TestTopTUIPlaysAWatchBack: the live view over a watch's bundle (dump
// bundle --watch: more than two scrapes) plays the watch back, a frame per
// scrape with the rates since the one before, as it plays a recording; a
// bundle of two scrapes is shown as it is.
func TestTopTUIPlaysAWatchBack(t *testing.T) {
	src, c := watchCapture(t, 6)
	watch := filepath.Join(t.TempDir(), "watch.tar.gz")
	if err := dump.WriteBundle(watch, c, dump.Manifest{CreatedAt: src.now}); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		bundle string
		replay bool
	}{{watch, true}, {writeTestBundle(t), false}} {
		streams, _, _ := testStreams("")
		o := NewTopTUIOptions(genericclioptions.NewConfigFlags(false), streams)
		o.From = tt.bundle
		if err := o.Options.Complete(); err != nil {
			t.Fatal(err)
		}
		rec, err := o.watchRecording()
		if err != nil {
			t.Fatal(err)
		}
		if (rec != nil) != tt.replay {
			t.Fatalf("%s: a recording %v, want %v", tt.bundle, rec != nil, tt.replay)
		}
		if !tt.replay {
			continue
		}
		if len(rec.Frames) != 5 {
			t.Fatalf("%d frames, want one per scrape after the first (5)", len(rec.Frames))
		}
		for i, f := range rec.Frames {
			cp, err := f.Capture()
			if err != nil {
				t.Fatal(err)
			}
			ms := cp.Snapshots[0].Metrics
			if len(ms) != 2 || !ms[1].Time.Equal(src.now.Add(time.Duration(i+1)*5*time.Second)) || !f.At.Equal(ms[1].Time) {
				t.Errorf("frame %d: %d scrapes, the last at %v (frame at %v), want the pair ending at %v", i, len(ms), ms[len(ms)-1].Time, f.At, src.now.Add(time.Duration(i+1)*5*time.Second))
			}
		}
		if out := runView(t, o, "q", 500*time.Millisecond); !strings.Contains(out, "REPLAY") || !strings.Contains(out, "the watch of") {
			t.Errorf("the view over a watch does not play it back:\n%q", out[:min(len(out), 600)])
		}
	}
}

// TestDumpBundleCopiesAWatch: dump bundle --from a watch's bundle --redact
// writes it again a scrape at a time: every scrape, in order, and the
// start's request dump redacted as the end's is.
func TestDumpBundleCopiesAWatch(t *testing.T) {
	const n = 12 // metrics-10.txt comes before metrics-2.txt in the tarball
	src, c := watchCapture(t, n)
	s := c.Snapshots[0]
	if !strings.Contains(string(s.Raw[dump.FileRequests]), "load-2") {
		t.Fatal("the fixture's request dump names no load-2: the test would test nothing")
	}
	s.Raw[dump.StartDumpPrefix+dump.FileRequests] = s.Raw[dump.FileRequests]
	dir := t.TempDir()
	watch, out := filepath.Join(dir, "watch.tar.gz"), filepath.Join(dir, "redacted.tar.gz")
	if err := dump.WriteBundle(watch, c, dump.Manifest{CreatedAt: src.now}); err != nil {
		t.Fatal(err)
	}
	streams, _, errb := testStreams("")
	if code := run([]string{"dump", "bundle", "--from", watch, "--redact", "--to", out}, streams); code != 0 {
		t.Fatalf("exit %d: %s", code, errb)
	}
	files, err := dump.ReadBundleFiles(out)
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range files {
		if strings.Contains(string(b), "load-2") {
			t.Errorf("%s names load-2: not redacted", name)
		}
	}
	got, _, err := dump.CaptureFromFiles(files, dump.CaptureOptions{Parts: dump.PartAll, AllScrapes: true})
	if err != nil {
		t.Fatal(err)
	}
	ms := got.Snapshots[0].Metrics
	if len(ms) != n {
		t.Fatalf("the copy holds %d scrapes, want %d", len(ms), n)
	}
	for i, m := range ms {
		if !m.Time.Equal(src.now.Add(time.Duration(i) * 5 * time.Second)) {
			t.Errorf("scrape %d at %v, want %v", i, m.Time, src.now.Add(time.Duration(i)*5*time.Second))
		}
	}
	if _, ok := files["instance-0/"+dump.StartDumpPrefix+dump.FileRequests]; !ok || got.Snapshots[0].RequestDump == nil {
		t.Error("the copy lost the start's or the end's request dump")
	}
}

// watchCapture is a capture of the static source holding n scrapes 5s
// apart, as a watch's bundle holds them.
func watchCapture(t *testing.T, n int) (*staticSource, *dump.Capture) {
	t.Helper()
	src := &staticSource{t: t, now: time.Date(2026, 11, 21, 15, 0, 0, 0, time.UTC)}
	c, err := src.Capture(context.Background(), dump.CaptureOptions{Parts: dump.PartAll})
	if err != nil {
		t.Fatal(err)
	}
	s := c.Snapshots[0]
	for i := range n {
		body, err := os.ReadFile(filepath.Join("..", "..", "testdata", "metrics", []string{"modern-a.txt", "modern-b.txt"}[i%2]))
		if err != nil {
			t.Fatal(err)
		}
		s.Raw[dump.MetricsFile(i)] = body
		s.Raw[dump.MetricsTimeKey(i)] = []byte(src.now.Add(time.Duration(i) * 5 * time.Second).Format(time.RFC3339Nano))
	}
	return src, c
}
