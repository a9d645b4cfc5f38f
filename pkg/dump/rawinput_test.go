package dump

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"

	"github.com/kubectl-apf/kubectl-apf/pkg/metrics"
)

// TestDetectRawEveryLayout: every captured dump of testdata/dump (1.20 to
// 1.37, idle and loaded) is told by its content alone, whatever its file is
// called, and reads as its own parser reads it.
func TestDetectRawEveryLayout(t *testing.T) {
	for _, file := range []string{FilePriorityLevels, FileQueues, FileRequests} {
		paths, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "dump", "*", file))
		if len(paths) < 10 {
			t.Fatalf("%d fixtures of %s", len(paths), file)
		}
		for _, p := range paths {
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			var in RawInput
			if err := DetectRaw("pasted.txt", b, &in); err != nil {
				t.Errorf("%s: %v", p, err)
				continue
			}
			if len(in.Files) != 1 || in.Files[file] == nil {
				t.Errorf("%s: found %v, want only %s", p, keys(in.Files), file)
				continue
			}
			s, err := in.Snapshot("x", in.Newest)
			if err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			direct := &Snapshot{Raw: map[string][]byte{file: b}}
			if err := direct.ParseRaw(); err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			if len(s.PriorityLevelDump) != len(direct.PriorityLevelDump) || len(s.QueueDump) != len(direct.QueueDump) || len(s.RequestDump) != len(direct.RequestDump) {
				t.Errorf("%s: rows differ from the parser's", p)
			}
		}
	}
}

func keys(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestDetectRawPasted reads what users paste: the documentation's examples
// with their code fences, commands and "..." elisions, and the metrics a
// vendor guide shows grep by grep.
func TestDetectRawPasted(t *testing.T) {
	tests := []struct {
		file            string
		want            []string
		elided, prompts int
		rows            int
	}{
		{"docs-dump_priority_levels.txt", []string{FilePriorityLevels}, 0, 1, 8},
		{"docs-dump_queues.txt", []string{FileQueues}, 2, 0, 6},
		{"docs-dump_requests-details.txt", []string{FileRequests}, 0, 0, 3},
		{"eks-concurrency-limit.txt", []string{MetricsFile(0)}, 0, 1, -1},
		{"eks-rejected-inqueue.txt", []string{MetricsFile(0)}, 0, 4, -1},
		// Before 1.20, a phantom "<none>" row for the exempt level: no
		// request (kubernetes/kubernetes#93376).
		{"k8s-93376-dump_requests-none.txt", []string{FileRequests}, 0, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			var in RawInput
			if err := DetectRaw(tt.file, fieldFile(t, tt.file), &in); err != nil {
				t.Fatal(err)
			}
			if len(in.Files) != len(tt.want) {
				t.Errorf("found %v, want %v", keys(in.Files), tt.want)
			}
			for _, w := range tt.want {
				if in.Files[w] == nil {
					t.Errorf("no %s in %v", w, keys(in.Files))
				}
			}
			if in.Elided != tt.elided || in.Prompts != tt.prompts {
				t.Errorf("elided %d, prompts %d; want %d, %d", in.Elided, in.Prompts, tt.elided, tt.prompts)
			}
			s, err := in.Snapshot(tt.file, in.Newest)
			if err != nil {
				t.Fatal(err)
			}
			if n := len(s.PriorityLevelDump) + len(s.QueueDump) + len(s.RequestDump); tt.rows >= 0 && n != tt.rows {
				t.Errorf("%d rows, want %d", n, tt.rows)
			}
			note := in.Note(tt.file)
			if strings.Contains(note, "\n") || !strings.Contains(note, "no FlowSchemas or PriorityLevelConfigurations") {
				t.Errorf("note %q: want one line naming the missing objects", note)
			}
			if tt.elided > 0 && !strings.Contains(note, "elision line") {
				t.Errorf("note %q does not count the elisions", note)
			}
		})
	}
	// The four greps of one guide join into one scrape.
	var in RawInput
	if err := DetectRaw("eks", fieldFile(t, "eks-rejected-inqueue.txt"), &in); err != nil {
		t.Fatal(err)
	}
	s, err := in.Snapshot("eks", in.Newest)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Metrics[0].SumBy("apiserver_flowcontrol_current_inqueue_requests", "priority_level")["workload-low"]; got != 10 {
		t.Errorf("inqueue workload-low = %v, want 10", got)
	}
	if len(s.Metrics[0].Families) != 4 {
		t.Errorf("%d families, want 4", len(s.Metrics[0].Families))
	}
}

// TestDetectRawSession: one paste of a whole session, two dumps and a
// metrics grep with their commands, gives all three.
func TestDetectRawSession(t *testing.T) {
	session := "$ kubectl get --raw /debug/api_priority_and_fairness/dump_priority_levels\n" +
		string(fieldFile(t, "docs-dump_priority_levels.txt")) +
		"$ kubectl get --raw /debug/api_priority_and_fairness/dump_queues\n" + string(fieldFile(t, "docs-dump_queues.txt")) +
		"\n# the limits\n" + string(fieldFile(t, "eks-concurrency-limit.txt"))
	var in RawInput
	if err := DetectRaw("session", []byte(session), &in); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{FilePriorityLevels, FileQueues, MetricsFile(0)} {
		if in.Files[k] == nil {
			t.Errorf("no %s in the session", k)
		}
	}
	note := in.Note("session")
	if in.Files[FileRequests] != nil || !strings.Contains(note, "dump_priority_levels (8 levels), dump_queues (6 queues), metrics (1 APF family); not in it: dump_requests") ||
		!strings.Contains(note, "skipped 2 elision lines and 4 command lines") {
		t.Errorf("note %q", note)
	}
}

// TestDetectRawGarbage: anything that is no dump or metrics is one line
// naming the input and quoting the offending line.
func TestDetectRawGarbage(t *testing.T) {
	tests := []struct{ name, data, want string }{
		{"empty", "\n  \n", "is empty"},
		{"html", "<html><body>502 Bad Gateway</body></html>\n", `line 1: "<html><body>502 Bad Gateway</body></html>" is neither a debug dump`},
		{"status", `{"kind":"Status","apiVersion":"v1","status":"Failure","code":403}`, "is neither a debug dump"},
		{"binary", "\x00\x01\x02PriorityLevelName", "binary data"},
		{"prose then a cut header", "The output is similar to this:\nPriorityLevelName, ActiveQueues\n", "(the dump_priority_levels from line 2): dump_priority_levels: header lacks columns IsIdle"},
		{"an error message alone", "Error from server (Forbidden): forbidden: User \"u\" cannot get path \"/debug/api_priority_and_fairness/dump_queues\"\n",
			`line 1: "Error from server (Forbidden): forbidden: User \"u\" cannot get path`},
		{"prose then garbage", "The output is similar to this:\n<html>\n", `line 2: "<html>" is neither`},
		{"only elisions", "...\n…\n", "holds no debug dump and no /metrics text (only 2 elision lines)"},
		{"unknown dump", "PriorityLevelName, Frobs\nx, 1\n", "a dump header of no known layout"},
		{"two level dumps", "PriorityLevelName, ActiveQueues, IsIdle, IsQuiescing, WaitingRequests, ExecutingRequests\na, 0, true, false, 0, 0\n" +
			"PriorityLevelName, ActiveQueues, IsIdle, IsQuiescing, WaitingRequests, ExecutingRequests\nb, 0, true, false, 0, 0\n", "a second dump_priority_levels"},
		{"broken row", "PriorityLevelName, Index, PendingRequests, ExecutingRequests, VirtualStart\nq, x, 0, 0, 0.0\n", `(the dump_queues from line 1): dump_queues line 2: column Index`},
		{"foreign metrics", "# TYPE etcd_server_has_leader gauge\netcd_server_has_leader 1\n", "without any API Priority and Fairness series"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var in RawInput
			err := DetectRaw("in.txt", []byte(tt.data), &in)
			if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("err = %v, want one line containing %q", err, tt.want)
			}
		})
	}
}

func TestIsElision(t *testing.T) {
	for _, s := range []string{"...", "…", "[...]", "(…)", ". . .", "<snip>", "[snip]", "......"} {
		if !isElision(s) {
			t.Errorf("%q is an elision", s)
		}
	}
	for _, s := range []string{"..", "a...", "0.000", "exempt, <none>", "snip snap"} {
		if isElision(s) {
			t.Errorf("%q is no elision", s)
		}
	}
}

// TestBundleSourceRaw: --from reads raw files, directories of them and
// standard input, by content, and says what it read in one note.
func TestBundleSourceRaw(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	// Names that say nothing: the content decides.
	os.WriteFile(filepath.Join(dir, "a"), fieldFile(t, "docs-dump_priority_levels.txt"), 0o644)
	os.WriteFile(filepath.Join(dir, "b.log"), fieldFile(t, "docs-dump_requests-details.txt"), 0o644)
	os.WriteFile(filepath.Join(dir, "c"), fieldFile(t, "eks-concurrency-limit.txt"), 0o644)
	os.WriteFile(filepath.Join(dir, "README.md"), []byte("# captured on prod\nsee the ticket\n"), 0o644)

	src := &BundleSource{Path: dir}
	c, err := src.Capture(ctx, CaptureOptions{Parts: PartAll})
	if err != nil {
		t.Fatal(err)
	}
	s := c.Snapshots[0]
	if len(s.PriorityLevelDump) != 8 || len(s.RequestDump) != 3 || len(s.Metrics) != 1 || s.HasObjects() {
		t.Errorf("levels %d, requests %d, scrapes %d, objects %v", len(s.PriorityLevelDump), len(s.RequestDump), len(s.Metrics), s.HasObjects())
	}
	if len(c.Notes) != 1 || !strings.Contains(c.Notes[0], "ignored README.md") || !strings.Contains(c.Notes[0], "not in it: dump_queues") {
		t.Errorf("notes %q", c.Notes)
	}
	if !strings.HasPrefix(src.Describe(), "raw input ") {
		t.Errorf("describe %q", src.Describe())
	}
	// The capture time is the newest request time, not the file's.
	if got := s.CapturedAt.Format("2006-01-02T15:04:05"); got != "2023-07-18T00:13:09" {
		t.Errorf("captured at %s", got)
	}
	// Parts not asked are dropped, as from a bundle.
	c, err = src.Capture(ctx, CaptureOptions{Parts: PartQueues})
	if err != nil || len(c.Snapshots[0].PriorityLevelDump) != 0 {
		t.Errorf("parts: %v, %d levels", err, len(c.Snapshots[0].PriorityLevelDump))
	}

	// Standard input, read once however often the command captures.
	stdin := &BundleSource{Path: "-", Stdin: bytes.NewReader(fieldFile(t, "docs-dump_queues.txt"))}
	for i := 0; i < 2; i++ {
		c, err := stdin.Capture(ctx, CaptureOptions{Parts: PartAll})
		if err != nil {
			t.Fatal(err)
		}
		if len(c.Snapshots[0].QueueDump) != 6 || !strings.Contains(c.Notes[0], "standard input") || !strings.Contains(c.Notes[0], "2 elision lines") {
			t.Errorf("capture %d: %d queues, notes %q", i, len(c.Snapshots[0].QueueDump), c.Notes)
		}
	}

	// A bundle tarball on standard input.
	var tgz bytes.Buffer
	gz := gzip.NewWriter(&tgz)
	tw := tar.NewWriter(gz)
	files, err := BundleFiles(captureFake(t), Manifest{})
	if err != nil {
		t.Fatal(err)
	}
	for n, b := range files {
		tw.WriteHeader(&tar.Header{Name: n, Mode: 0o644, Size: int64(len(b)), Typeflag: tar.TypeReg})
		tw.Write(b)
	}
	tw.Close()
	gz.Close()
	c, err = (&BundleSource{Path: "-", Stdin: &tgz}).Capture(ctx, CaptureOptions{Parts: PartAll})
	if err != nil || len(c.Snapshots) != len(captureFake(t).Snapshots) || len(c.Notes) != 0 {
		t.Errorf("tarball on stdin: %v, notes %q", err, c.Notes)
	}

	// A directory with nothing to read.
	empty := filepath.Join(dir, "empty")
	os.Mkdir(empty, 0o755)
	os.WriteFile(filepath.Join(empty, "notes.txt"), []byte("nothing here\n"), 0o644)
	if _, err := (&BundleSource{Path: empty}).Capture(ctx, CaptureOptions{Parts: PartAll}); err == nil || !strings.Contains(err.Error(), "not a kubectl-apf bundle") {
		t.Errorf("empty dir: %v", err)
	}
	// A broken dump in a directory is an error, not ignored.
	os.WriteFile(filepath.Join(empty, "q"), []byte("PriorityLevelName, Index, PendingRequests, ExecutingRequests\nq, x, 0, 0\n"), 0o644)
	if _, err := (&BundleSource{Path: empty}).Capture(ctx, CaptureOptions{Parts: PartAll}); err == nil || !strings.Contains(err.Error(), "column Index") {
		t.Errorf("broken dump: %v", err)
	}
}

// TestBundleWithoutObjects: a bundle without the objects says so.
func TestBundleWithoutObjects(t *testing.T) {
	c := captureFake(t)
	for _, s := range c.Snapshots {
		delete(s.Raw, FileFlowSchemas)
		delete(s.Raw, FilePLCs)
	}
	out := filepath.Join(t.TempDir(), "b")
	if err := WriteBundle(out, c, Manifest{}); err != nil {
		t.Fatal(err)
	}
	back, err := (&BundleSource{Path: out}).Capture(context.Background(), CaptureOptions{Parts: PartAll})
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Notes) != 1 || !strings.Contains(back.Notes[0], "no FlowSchemas or PriorityLevelConfigurations") {
		t.Errorf("notes %q", back.Notes)
	}
	if back.Snapshots[0].HasObjects() {
		t.Error("HasObjects on a bundle without objects")
	}
}

func FuzzDetectRaw(f *testing.F) {
	for _, kind := range []string{FilePriorityLevels, FileQueues, FileRequests} {
		paths, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "dump", "v1.2*", kind))
		for _, p := range paths {
			if b, err := os.ReadFile(p); err == nil {
				f.Add(b)
			}
		}
	}
	paths, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "field", "*.txt"))
	for _, p := range paths {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("$ kubectl get --raw /metrics\n# HELP x y\napiserver_flowcontrol_nominal_limit_seats{priority_level=\"a\"} 3\n...\nPriorityLevelName, Index\n"))
	f.Add([]byte("```\n…\n```\n"))
	f.Add([]byte("Here are the limits:\napiserver_flowcontrol_nominal_limit_seats{priority_level=\"a\"} 3\nAnd the levels:\nPriorityLevelName, ActiveQueues, IsIdle, IsQuiescing, WaitingRequests, ExecutingRequests\na, 0, true, false, 0, 0\nThat is all.\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		var in RawInput
		err := DetectRaw("fuzz", b, &in)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error of several lines: %q", err)
			}
			return
		}
		// Whatever is detected is read by the snapshot's parsers.
		if len(in.Files) == 0 {
			t.Fatal("no error and nothing found")
		}
		if _, err := in.Snapshot("fuzz", in.Newest); err != nil {
			t.Fatalf("detected but not parsed: %v", err)
		}
		if n := in.Note("fuzz"); strings.Contains(n, "\n") {
			t.Fatalf("note of several lines: %q", n)
		}
	})
}

// TestDetectRawProse: the sentences around a paste ("Here is the
// dump:") are skipped and counted, before a dump, between bodies and after
// metrics, where they once stopped the input at line 1 (issue 47, R10).
func TestDetectRawProse(t *testing.T) {
	levels := string(fieldFile(t, "docs-dump_priority_levels.txt"))
	metrics := string(fieldFile(t, "eks-concurrency-limit.txt"))
	data := "Here is what the apiserver showed:\n" + levels + "\nAnd the limits, from the metrics:\n" + metrics + "That is all I have.\n"
	var in RawInput
	if err := DetectRaw("standard input", []byte(data), &in); err != nil {
		t.Fatal(err)
	}
	if in.Prose != 3 || in.Files[FilePriorityLevels] == nil || in.Files[MetricsFile(0)] == nil {
		t.Errorf("prose %d, files %v", in.Prose, len(in.Files))
	}
	if note := in.Note("standard input"); !strings.Contains(note, "3 lines of text") {
		t.Errorf("note = %q", note)
	}
	// Read through the source twice, as commands that ask for the metrics
	// first do: the second capture gives the same answer, never "standard
	// input is empty".
	src := &BundleSource{Path: StdinPath, Stdin: strings.NewReader("Some text first:\n<html>\n")}
	_, err1 := src.Capture(context.Background(), CaptureOptions{Parts: PartAll})
	_, err2 := src.Capture(context.Background(), CaptureOptions{Parts: PartObjects})
	if err1 == nil || err2 == nil || err1.Error() != err2.Error() || strings.Contains(err2.Error(), "empty") {
		t.Errorf("errors %v, then %v", err1, err2)
	}
}

// TestDetectRawSeriesOnce: the same grep pasted twice, and two scrapes of
// one server in a directory, count each series once, from the last read,
// with a note; they were summed (workload-low's limit 245 read as 490) or,
// for full scrapes, refused for their second HELP lines (issue 47, R7).
func TestDetectRawSeriesOnce(t *testing.T) {
	eks := fieldFile(t, "eks-rejected-inqueue.txt")
	var in RawInput
	if err := DetectRaw("standard input", append(append([]byte{}, eks...), eks...), &in); err != nil {
		t.Fatal(err)
	}
	s, err := in.Snapshot("x", time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	_, sc := s.LatestMetrics()
	if got := sc.SumBy("apiserver_flowcontrol_request_concurrency_limit", "priority_level")["workload-low"]; got != 245 {
		t.Errorf("workload-low limit %v, want 245", got)
	}
	if got := sc.SumBy("apiserver_flowcontrol_rejected_requests_total", "priority_level")["workload-low"]; got != 100 {
		t.Errorf("workload-low rejected %v, want 100", got)
	}
	if note := in.Note("standard input"); !strings.Contains(note, "4 metrics series read again (two scrapes of one server, or a paste repeated) counted once") || strings.Contains(note, "changed") {
		t.Errorf("note = %q", note)
	}

	// Two scrapes of one server, as a directory holds them: the later
	// file's values are kept.
	dir := t.TempDir()
	for _, n := range []string{"modern-a.txt", "modern-b.txt"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "metrics", n))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, n), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	src := &BundleSource{Path: dir}
	c, err := src.Capture(context.Background(), CaptureOptions{Parts: PartAll})
	if err != nil {
		t.Fatal(err)
	}
	_, sc = c.Snapshots[0].LatestMetrics()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "metrics", "modern-b.txt"))
	if err != nil {
		t.Fatal(err)
	}
	want, _, err := metrics.ParseAPF(bytes.NewReader(b), time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	for _, fam := range []string{"apiserver_flowcontrol_dispatched_requests_total", "apiserver_flowcontrol_current_limit_seats", "apiserver_flowcontrol_current_inqueue_requests"} {
		got, w := sc.SumBy(fam, "priority_level"), want.SumBy(fam, "priority_level")
		if len(w) == 0 || !reflect.DeepEqual(got, w) {
			t.Errorf("%s: %v, want modern-b's %v", fam, got, w)
		}
	}
	if !strings.Contains(c.Notes[0], "metrics series read again") || !strings.Contains(c.Notes[0], "from the last read ("+filepath.Join(dir, "modern-b.txt")+" from line 1)") || !strings.Contains(c.Notes[0], "changed between reads") {
		t.Errorf("note = %q", c.Notes[0])
	}
}

// FuzzMetricsMerge: joining a body with itself changes nothing but the
// count of series read again, whatever the lines hold.
func FuzzMetricsMerge(f *testing.F) {
	f.Add("# HELP a x\n# TYPE a histogram\na_bucket{le=\"1\"} 2\na_sum 3\na_count 2\nb{x=\"1\", y=\"}\"} 4\nb{y=\"}\",x=\"1\"} 5\n")
	f.Add("c{a=\"\\\"\"} 1 1700000000\nc{\n{} 1\n# TYPE\n")
	for _, n := range []string{"eks-rejected-inqueue.txt", "eks-concurrency-limit.txt"} {
		if b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "field", n)); err == nil {
			f.Add(string(b))
		}
	}
	f.Fuzz(func(t *testing.T, s string) {
		lines := strings.Split(s, "\n")
		once := newMetricsMerge()
		once.add("a", lines)
		twice := newMetricsMerge()
		twice.add("a", lines)
		twice.add("b", lines)
		if string(once.body()) != string(twice.body()) {
			t.Fatalf("body changed when read twice:\n%s\n%s", once.body(), twice.body())
		}
		if twice.changed < once.changed || twice.repeated < len(once.series) {
			t.Fatalf("repeated %d of %d series, changed %d", twice.repeated, len(once.series), twice.changed)
		}
		// One body speaks for every level it names, and so does it twice.
		if u := once.unknown(); u != nil {
			t.Fatalf("one body does not speak for %v", u)
		}
		if u := twice.unknown(); u != nil {
			t.Fatalf("a body twice does not speak for %v", u)
		}
	})
}

// TestDetectRawPrometheusTable: a Prometheus UI table pasted into a GitHub
// comment (kubernetes/kubernetes#106085, a Markdown table) is read as the
// samples it shows, and so is the same table copied one cell a line (built
// here from that paste: the UI's cells, series then value). A row that is
// not one is refused with what follows its labels quoted, where the whole
// line was once refused at "line 2", cut before that part (issue 47, R9).
func TestDetectRawPrometheusTable(t *testing.T) {
	paste := string(fieldFile(t, "k8s-106085-prometheus-table.txt"))
	var cells strings.Builder
	for _, l := range strings.Split(paste, "\n") {
		if series, value, ok := strings.Cut(l, "} | "); ok {
			cells.WriteString(series + "}\n" + value + "\n")
		}
	}
	want := map[string]float64{"catch-all": 14, "global-default": 53, "leader-election": 27, "node-high": 105, "system": 79, "workload-high": 105}
	for name, data := range map[string]string{"markdown": paste, "one cell a line": cells.String()} {
		var in RawInput
		if err := DetectRaw(name, []byte(data), &in); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		s, err := in.Snapshot("x", time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		_, sc := s.LatestMetrics()
		if got := sc.SumBy("apiserver_flowcontrol_request_concurrency_limit", "priority_level"); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: limits %v, want %v", name, got, want)
		}
		if name == "markdown" && in.Tables != 2 {
			t.Errorf("%d table header lines skipped, want 2", in.Tables)
		}
	}
	row := `apiserver_flowcontrol_request_concurrency_limit{endpoint="apiserver", instance="10.40.3.217:443", job="master", namespace="monitoring", priority_level="catch-all", service="master"}`
	for _, tt := range []struct{ data, want string }{
		{"```\n" + row + " | 14 seats\n", `line 2: a metrics series whose value is no number: after its labels comes "| 14 seats"`},
		{"```\n" + row + "\nfourteen\n", `line 2: the metrics series "apiserver_flowcontrol_request_concurrency_limit{endpoint=`},
		{row + "\n", "line 1: the metrics series"},
	} {
		var in RawInput
		err := DetectRaw("in.txt", []byte(tt.data), &in)
		if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("err = %v, want one line with %q", err, tt.want)
		}
	}
}

// TestDetectRawSeveralInstances: rows of two apiservers in one paste (the
// instance label of a store) are summed per level, and the note says so.
func TestDetectRawSeveralInstances(t *testing.T) {
	paste := string(fieldFile(t, "k8s-106085-prometheus-table.txt"))
	two := paste + strings.ReplaceAll(paste, "10.40.3.217:443", "10.40.3.218:443")
	var one, both RawInput
	if err := DetectRaw("a", []byte(paste), &one); err != nil {
		t.Fatal(err)
	}
	if err := DetectRaw("b", []byte(two), &both); err != nil {
		t.Fatal(err)
	}
	if n := one.Note("a"); strings.Contains(n, "apiservers (instance label)") {
		t.Errorf("one instance: %q", n)
	}
	if n := both.Note("b"); !strings.Contains(n, "metrics of 2 apiservers (instance label) are summed per level") || strings.Contains(n, "read again") {
		t.Errorf("two instances: %q", n)
	}
}

// TestRawDirProse: a file of a directory that starts with a sentence and
// holds a dump is read (it was ignored, its first line being no dump); a
// file of sentences alone is still ignored.
func TestRawDirProse(t *testing.T) {
	dir := t.TempDir()
	paste := "Here is the output of the command:\n" + string(fieldFile(t, "docs-dump_queues.txt"))
	if err := os.WriteFile(filepath.Join(dir, "paste.txt"), []byte(paste), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte("Notes on the incident of Monday.\nThe queues filled at 03:10.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := (&BundleSource{Path: dir}).Capture(context.Background(), CaptureOptions{Parts: PartAll})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(c.Snapshots[0].QueueDump); n != 6 {
		t.Errorf("%d queues, want the docs' 6", n)
	}
	if !strings.Contains(c.Notes[0], "ignored README.md") || !strings.Contains(c.Notes[0], "1 line of text") {
		t.Errorf("note %q", c.Notes[0])
	}
}

func TestIsProse(t *testing.T) {
	for _, s := range []string{"Here is the dump:", "Output of the command below", "Error from server (Forbidden): forbidden: User \"u\" cannot get path"} {
		if !isProse(s, false) {
			t.Errorf("%q is prose", s)
		}
	}
	for _, s := range []string{"apiserver_flowcontrol_x 1 2 3", "<html>", "Forbidden", "1 2 3", `{"kind":"Status"}`, "level=info msg=x", "name{a=\"b\"} x"} {
		if isProse(s, false) {
			t.Errorf("%q is no prose", s)
		}
	}
	if isProse("workload-low, 14, 27", true) {
		t.Error("a dump row is no prose")
	}
}

// TestRawDirIgnoredSaysWhy: every file of a raw directory that is not read
// is named in the note with why (a bundle's version.json and
// metrics-0.time were listed bare, as were object files whose objects the
// reader did not find).
func TestRawDirIgnoredSaysWhy(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("metrics.txt", string(fieldFile(t, "eks-concurrency-limit.txt")))
	write("metrics-0.time", "2026-11-23T21:18:39.587614024Z")
	write("version.json", `{"major":"1","minor":"37"}`)
	write("broken.yaml", "a: [")
	none := func(name string, data []byte) ([]flowcontrolv1.FlowSchema, []flowcontrolv1.PriorityLevelConfiguration, error) {
		if strings.HasSuffix(name, "broken.yaml") {
			return nil, nil, errors.New("document 1: not YAML")
		}
		return nil, nil, nil
	}
	for _, tt := range []struct {
		name string
		read ObjectReader
		want string
	}{
		{"with a reader", none, "ignored broken.yaml (document 1: not YAML), metrics-0.time (neither a debug dump, /metrics text, nor a .yaml, .yml or .json file of objects), version.json (no FlowSchema or PriorityLevelConfiguration in it)"},
		{"without", nil, "ignored broken.yaml (this command reads no objects), metrics-0.time (neither a debug dump, /metrics text, nor a .yaml, .yml or .json file of objects), version.json (this command reads no objects)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := (&BundleSource{Path: dir, ReadObjects: tt.read}).Capture(context.Background(), CaptureOptions{Parts: PartAll})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasSuffix(c.Notes[0], "; "+tt.want) {
				t.Errorf("note %q\nwant it to end with %q", c.Notes[0], tt.want)
			}
		})
	}
}

// TestMetricsMergeUnknown: metrics files of different inputs in one
// directory (the EKS guide's limits of seven levels, and its four greps of
// workload-low: testdata/field/built/metrics-two-sources) keep what neither
// tells as unknown: the families of the greps do not speak for the six
// other levels, whose seats in use and waiting requests were 0 (S6 of
// issue 58). The snapshot's scrape carries it, a note says it, and a
// bundle written from the input keeps it.
func TestMetricsMergeUnknown(t *testing.T) {
	dir := filepath.Join("..", "..", "testdata", "field", "built", "metrics-two-sources")
	c, err := (&BundleSource{Path: dir}).Capture(context.Background(), CaptureOptions{Parts: PartAll})
	if err != nil {
		t.Fatal(err)
	}
	others := []string{"catch-all", "global-default", "leader-election", "node-high", "system", "workload-high"}
	check := func(t *testing.T, s *Snapshot) {
		t.Helper()
		sc := s.Metrics[0]
		for _, f := range []string{"apiserver_flowcontrol_request_concurrency_in_use", "apiserver_flowcontrol_current_inqueue_requests", "apiserver_flowcontrol_rejected_requests_total"} {
			for _, l := range others {
				if sc.Speaks(f, l) {
					t.Errorf("%s speaks for %s", f, l)
				}
			}
			if !sc.Speaks(f, "workload-low") {
				t.Errorf("%s does not speak for workload-low", f)
			}
		}
		for _, l := range append(others, "workload-low") {
			if !sc.Speaks("apiserver_flowcontrol_request_concurrency_limit", l) {
				t.Errorf("the limits do not speak for %s", l)
			}
		}
	}
	check(t, c.Snapshots[0])
	if want := "3 metrics families (apiserver_flowcontrol_current_inqueue_requests, apiserver_flowcontrol_rejected_requests_total, apiserver_flowcontrol_request_concurrency_in_use) are not in every input that names a level: their figures of the levels only the other inputs name are unknown (-), not 0"; !strings.Contains(c.Notes[0], want) {
		t.Errorf("note %q lacks %q", c.Notes[0], want)
	}
	out := filepath.Join(t.TempDir(), "b.tar.gz")
	if err := WriteBundle(out, c, Manifest{Source: "test"}); err != nil {
		t.Fatal(err)
	}
	back, err := (&BundleSource{Path: out}).Capture(context.Background(), CaptureOptions{Parts: PartAll})
	if err != nil {
		t.Fatal(err)
	}
	check(t, back.Snapshots[0])
	// Each file alone speaks for every level it names.
	for _, f := range []string{"eks-concurrency-limit.txt", "eks-rejected-inqueue.txt"} {
		var in RawInput
		if err := DetectRaw(f, fieldFile(t, f), &in); err != nil {
			t.Fatal(err)
		}
		if _, ok := in.Files[MetricsUnknownKey(0)]; ok {
			t.Errorf("%s alone: %s", f, in.Files[MetricsUnknownKey(0)])
		}
	}
}

// TestLabelOf: the level a merged series names is read as the metrics
// parser reads it, escapes and all, so that what the merge calls unknown
// is the level the scrape is asked about.
func TestLabelOf(t *testing.T) {
	for key, want := range map[string]string{
		`a{priority_level="x",z="1"}`:    "x",
		`a{b="1",priority_level="x\"y"}`: `x"y`,
		`a{priority_level="x\\y"}`:       `x\y`,
	} {
		if got, ok := labelOf(key, "priority_level"); !ok || got != want {
			t.Errorf("%s: %q, %v; want %q", key, got, ok, want)
		}
	}
	if _, ok := labelOf(`a{b="1"}`, "priority_level"); ok {
		t.Error("a label that is not there")
	}
	s, err := metrics.ParseText([]byte(`a{priority_level="x\"y"} 1`+"\n"), time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if got := s.SumBy("a", "priority_level"); got[`x"y`] != 1 {
		t.Errorf("the parser reads %v", got)
	}
}

// TestGzippedRawInput: a raw dump or /metrics text gzipped to keep or
// share (a file, or standard input) is read as the raw text it holds, not
// refused as a tarball that is not one; one cut short gives what came
// before the cut's line, and says so; a stream that is no gzip is one
// line.
func TestGzippedRawInput(t *testing.T) {
	ctx := context.Background()
	dump := fieldFile(t, "docs-dump_requests-details.txt")
	dir := t.TempDir()
	file := filepath.Join(dir, "requests.txt.gz")
	os.WriteFile(file, gzipBytes(dump), 0o644)
	plain, err := (&BundleSource{Path: "-", Stdin: bytes.NewReader(dump)}).Capture(ctx, CaptureOptions{Parts: PartAll})
	if err != nil {
		t.Fatal(err)
	}
	for _, src := range []*BundleSource{{Path: file}, {Path: "-", Stdin: bytes.NewReader(gzipBytes(dump))}} {
		c, err := src.Capture(ctx, CaptureOptions{Parts: PartAll})
		if err != nil {
			t.Fatalf("%s: %v", src.Path, err)
		}
		if got, want := len(c.Snapshots[0].RequestDump), len(plain.Snapshots[0].RequestDump); got != want || want == 0 {
			t.Errorf("%s: %d requests, %d from the text itself", src.Path, got, want)
		}
		if len(c.Notes) != 1 || !strings.Contains(c.Notes[0], "as raw input: dump_requests") {
			t.Errorf("%s: notes %q", src.Path, c.Notes)
		}
	}

	// cut short: a queue dump of kube-apiserver v1.29.15 under load,
	// gzipped, its last third lost
	queues, err := os.ReadFile(filepath.Join("..", "..", "testdata", "dump", "v1.29.15-load", "dump_queues.txt"))
	if err != nil {
		t.Fatal(err)
	}
	z := gzipBytes(queues)
	cut := filepath.Join(dir, "queues.txt.gz")
	os.WriteFile(cut, z[:len(z)*2/3], 0o644)
	c, err := (&BundleSource{Path: cut}).Capture(ctx, CaptureOptions{Parts: PartAll})
	if err != nil {
		t.Fatalf("cut short: %v", err)
	}
	if len(c.Notes) != 1 || !strings.Contains(c.Notes[0], "cut short: the ") || !strings.Contains(c.Notes[0], "bytes before the cut's line read") {
		t.Errorf("cut short: notes %q", c.Notes)
	}
	whole, err := (&BundleSource{Path: "-", Stdin: bytes.NewReader(queues)}).Capture(ctx, CaptureOptions{Parts: PartAll})
	if err != nil {
		t.Fatal(err)
	}
	if got, all := len(c.Snapshots[0].QueueDump), len(whole.Snapshots[0].QueueDump); got == 0 || got >= all {
		t.Errorf("cut short: %d queues read, of %d in the whole", got, all)
	}

	// a directory of such files: the gzipped dump read, the one cut short
	// read to its cut and named, and a .yaml file gzipped read as objects
	os.WriteFile(filepath.Join(dir, "flowschema.yaml.gz"), gzipBytes(fieldFile(t, "eks-list-events-flowschema.yaml")), 0o644)
	objects := func(name string, data []byte) ([]flowcontrolv1.FlowSchema, []flowcontrolv1.PriorityLevelConfiguration, error) {
		if !bytes.Contains(data, []byte("kind: FlowSchema")) {
			return nil, nil, errors.New(name + ": no FlowSchema in it")
		}
		return []flowcontrolv1.FlowSchema{{}}, nil, nil
	}
	c, err = (&BundleSource{Path: dir, ReadObjects: objects}).Capture(ctx, CaptureOptions{Parts: PartAll})
	if err != nil {
		t.Fatalf("directory: %v", err)
	}
	if !strings.Contains(c.Notes[0], "objects from flowschema.yaml.gz: 1 FlowSchema") {
		t.Errorf("directory: the gzipped objects not read: %q", c.Notes)
	}
	if s := c.Snapshots[0]; len(s.RequestDump) != len(plain.Snapshots[0].RequestDump) || len(s.QueueDump) == 0 || len(s.QueueDump) >= len(whole.Snapshots[0].QueueDump) {
		t.Errorf("directory: %d requests, %d queues", len(s.RequestDump), len(s.QueueDump))
	}
	if len(c.Notes) != 1 || !strings.Contains(c.Notes[0], "ignored the end of queues.txt.gz (its gzip stream is cut short)") {
		t.Errorf("directory: notes %q", c.Notes)
	}

	// the gzip magic, then no gzip
	bad := filepath.Join(dir, "bad.gz")
	os.WriteFile(bad, []byte{0x1f, 0x8b, 'x', 'x', 'x'}, 0o644)
	if _, err := (&BundleSource{Path: bad}).Capture(ctx, CaptureOptions{Parts: PartAll}); err == nil || !strings.Contains(err.Error(), "reading --from "+bad+": gzip:") || strings.Contains(err.Error(), "\n") {
		t.Errorf("not gzip: %v", err)
	}
}

// FuzzInputFromBytes: whatever --from - is given, gzipped or not, it is
// read or refused in one line, never a panic.
func FuzzInputFromBytes(f *testing.F) {
	z := gzipBytes(fieldFile(f, "docs-dump_queues.txt"))
	f.Add(z)
	f.Add(z[:len(z)/2])
	f.Add(fieldFile(f, "eks-concurrency-limit.txt"))
	f.Add([]byte{0x1f, 0x8b})
	f.Add([]byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff})
	f.Fuzz(func(t *testing.T, data []byte) {
		in, err := inputFromBytes("standard input", data, time.Time{})
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("a refusal of more than one line: %q", err)
			}
			return
		}
		if in.raw == nil && in.bundle == nil {
			t.Error("neither a raw input nor a bundle, and no error")
		}
	})
}

// gzipBytes is b gzipped, as a user gzips a dump to keep or share it.
func gzipBytes(b []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(b)
	zw.Close()
	return buf.Bytes()
}
