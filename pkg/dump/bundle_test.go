package dump

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/metrics"
)

// captureFake is what a live capture of the test fixtures returns: the
// bodies as an apiserver serves them, through ParseRaw (package fetch tests
// a capture of the same fixtures over HTTP).
func captureFake(t *testing.T) *Capture {
	t.Helper()
	at := time.Date(2026, 11, 21, 15, 0, 0, 0, time.UTC)
	plcs, err := ConvertList(readFixture(t, "objects", "prioritylevelconfigurations-v1beta2.json"))
	if err != nil {
		t.Fatal(err)
	}
	s := &Snapshot{Instance: "https://127.0.0.1:6443", CapturedAt: at, FlowcontrolVersion: "v1", Raw: map[string][]byte{
		FileVersion:        []byte(`{"major":"1","minor":"37","gitVersion":"v1.37.1"}`),
		FilePriorityLevels: readFixture(t, "v1.27-layout", FilePriorityLevels),
		FileQueues:         readFixture(t, "v1.26-layout", FileQueues),
		FileRequests:       readFixture(t, "synthetic-requests", FileRequests),
		FileFlowSchemas:    readFixture(t, "objects", "flowschemas.json"),
		FilePLCs:           plcs,
		MetricsFile(0):     readFixtureMetrics(t, "modern-a.txt"),
		MetricsTimeKey(0):  []byte(at.Format(time.RFC3339Nano)),
		MetricsFile(1):     readFixtureMetrics(t, "modern-a.txt"),
		MetricsTimeKey(1):  []byte(at.Add(3 * time.Second).Format(time.RFC3339Nano)),
	}}
	if err := s.ParseRaw(); err != nil {
		t.Fatal(err)
	}
	c := &Capture{Snapshots: []*Snapshot{s}}
	c.Failures = []InstanceError{{Instance: "https://10.9.9.9:6443", Message: "GET /version on https://10.9.9.9:6443: connection refused"}}
	return c
}

func TestBundleRoundTrip(t *testing.T) {
	for _, name := range []string{"dir", "apf.tar.gz"} {
		t.Run(name, func(t *testing.T) {
			c := captureFake(t)
			out := filepath.Join(t.TempDir(), name)
			if err := WriteBundle(out, c, Manifest{CreatedAt: c.Snapshots[0].CapturedAt, Source: "test"}); err != nil {
				t.Fatal(err)
			}
			back, err := (&BundleSource{Path: out}).Capture(context.Background(), CaptureOptions{Parts: PartAll})
			if err != nil {
				t.Fatal(err)
			}
			if len(back.Snapshots) != 1 || len(back.Failures) != 1 || back.Failures[0].Error() != c.Failures[0].Message {
				t.Fatalf("read back %d snapshots, failures %+v", len(back.Snapshots), back.Failures)
			}
			a, b := c.Snapshots[0], back.Snapshots[0]
			if a.Instance != b.Instance || !a.CapturedAt.Equal(b.CapturedAt) || a.FlowcontrolVersion != b.FlowcontrolVersion {
				t.Errorf("header differs: %s/%s %v/%v", a.Instance, b.Instance, a.CapturedAt, b.CapturedAt)
			}
			if !reflect.DeepEqual(a.PriorityLevelDump, b.PriorityLevelDump) || !reflect.DeepEqual(a.QueueDump, b.QueueDump) ||
				!reflect.DeepEqual(a.RequestDump, b.RequestDump) || !reflect.DeepEqual(a.FlowSchemas, b.FlowSchemas) {
				t.Error("dumps or objects differ after the round trip")
			}
			if len(b.Metrics) != 2 || !b.Metrics[1].Time.Equal(a.Metrics[1].Time) || len(b.Metrics[0].Families) != len(a.Metrics[0].Families) {
				t.Errorf("metrics differ: %d scrapes", len(b.Metrics))
			}
			// Parts not asked for are dropped, as from a cluster.
			part, err := (&BundleSource{Path: out}).Capture(context.Background(), CaptureOptions{Parts: PartQueues})
			if err != nil {
				t.Fatal(err)
			}
			if s := part.Snapshots[0]; len(s.QueueDump) == 0 || len(s.RequestDump) != 0 || len(s.Metrics) != 0 {
				t.Errorf("partial read: queues %d requests %d metrics %d", len(s.QueueDump), len(s.RequestDump), len(s.Metrics))
			}
		})
	}
}

func TestBundleErrors(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "x.tar.gz"), []byte("not gzip"), 0o644)
	os.MkdirAll(filepath.Join(dir, "empty"), 0o755)
	tests := []struct{ path, wantErr string }{
		{filepath.Join(dir, "missing"), "no such file"},
		{filepath.Join(dir, "x.tar.gz"), "is neither a debug dump"},
		{filepath.Join(dir, "empty"), "not a kubectl-apf bundle"},
	}
	for _, tt := range tests {
		_, err := (&BundleSource{Path: tt.path}).Capture(context.Background(), CaptureOptions{Parts: PartAll})
		if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("%s: err = %v, want %q", tt.path, err, tt.wantErr)
		}
	}
	c := captureFake(t)
	out := filepath.Join(dir, "b")
	if err := WriteBundle(out, c, Manifest{}); err != nil {
		t.Fatal(err)
	}
	if err := WriteBundle(out, c, Manifest{}); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Errorf("overwriting a bundle: err = %v", err)
	}
}

func TestRedact(t *testing.T) {
	c := captureFake(t)
	r := NewRedactor([]byte("k"))
	if err := r.RedactCapture(c); err != nil {
		t.Fatal(err)
	}
	files, err := BundleFiles(c, Manifest{Redacted: true})
	if err != nil {
		t.Fatal(err)
	}
	secrets := []string{"tester", "Doe, Jane", "ns1", "team-a", "load-1", `"bot"`, "/api/v1/namespaces/ns1"}
	for name, b := range files {
		for _, s := range secrets {
			if bytes.Contains(b, []byte(s)) {
				t.Errorf("%s still contains %q", name, s)
			}
		}
	}
	s := c.Snapshots[0]
	// Consistent: the same user has the same pseudonym everywhere.
	if s.RequestDump[0].UserName != s.RequestDump[0].FlowDistinguisher || s.RequestDump[0].UserName != r.User("tester") {
		t.Errorf("user pseudonyms differ: %q %q", s.RequestDump[0].UserName, s.RequestDump[0].FlowDistinguisher)
	}
	if got, want := s.RequestDump[0].APIPath, "/api/v1/namespaces/"+r.Namespace("ns1")+"/pods"; got != want {
		t.Errorf("path = %q, want %q", got, want)
	}
	// The apiserver's own paths and control-plane identities are kept.
	if s.RequestDump[2].APIPath != "/debug/api_priority_and_fairness/dump_requests" || r.User("system:kube-scheduler") != "system:kube-scheduler" {
		t.Error("kept values were redacted")
	}
	if got := r.User("system:serviceaccount:team-a:bot"); got != "system:serviceaccount:"+r.Namespace("team-a")+":"+r.Name("bot") {
		t.Errorf("service account pseudonym = %q", got)
	}
	if r.Path("/apis/apps/v1/namespaces/x/deployments/web/status") != "/apis/apps/v1/namespaces/"+r.Namespace("x")+"/deployments/"+r.Name("web")+"/status" {
		t.Errorf("path = %s", r.Path("/apis/apps/v1/namespaces/x/deployments/web/status"))
	}
	if NewRedactor([]byte("other")).User("tester") == r.User("tester") {
		t.Error("pseudonyms do not depend on the key")
	}
	// The redacted bundle still parses.
	if _, _, err := CaptureFromFiles(files, CaptureOptions{Parts: PartAll}); err != nil {
		t.Fatal(err)
	}
}

// TestBundleElisions: a bundle whose dump_queues was trimmed by hand the
// way the documentation shows it ("..." lines; the docs' own paste) reads as
// the raw route reads it, with a note, where it was refused at the first
// elision (issue 47).
func TestBundleElisions(t *testing.T) {
	c := captureFake(t)
	out := filepath.Join(t.TempDir(), "b")
	if err := WriteBundle(out, c, Manifest{CreatedAt: c.Snapshots[0].CapturedAt, Source: "test"}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(out, "instance-0", FileQueues), fieldFile(t, "docs-dump_queues.txt"), 0o644); err != nil {
		t.Fatal(err)
	}
	back, err := (&BundleSource{Path: out}).Capture(context.Background(), CaptureOptions{Parts: PartAll})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(back.Snapshots[0].QueueDump); n != 6 {
		t.Errorf("%d queues, want the docs' 6", n)
	}
	if !strings.Contains(strings.Join(back.Notes, "\n"), "skipped 2 elision lines in its dumps") {
		t.Errorf("notes %q", back.Notes)
	}
	// Without the queues asked for, their elisions are not counted.
	back, err = (&BundleSource{Path: out}).Capture(context.Background(), CaptureOptions{Parts: PartRequests})
	if err != nil || strings.Contains(strings.Join(back.Notes, "\n"), "elision") {
		t.Errorf("err %v, notes %q", err, back.Notes)
	}
}

// TestBundleMetricsAsPasted: a bundle's metrics file that holds a
// Prometheus UI table (kubernetes/kubernetes#106085's, without and with its
// code fence) or a grep pasted with its command is read by the raw reader,
// to the same scrape as --from of that file gives, where the bundle was
// refused at the table's rule ("-- | --": not the Prometheus text format);
// a debug dump in it is refused, and text of no form keeps the error of the
// Prometheus text (S8 of issue 58).
func TestBundleMetricsAsPasted(t *testing.T) {
	table := fieldFile(t, "k8s-106085-prometheus-table.txt")
	fenceless := bytes.Join(bytes.Split(table, []byte("\n"))[1:9], []byte("\n"))
	for _, tt := range []struct {
		name, file string
		body       []byte
		wantErr    string
	}{
		{name: "a Prometheus UI table", file: "k8s-106085-prometheus-table.txt", body: fenceless},
		{name: "the same in its code fence", file: "k8s-106085-prometheus-table.txt", body: table},
		{name: "a grep with its command", file: "eks-concurrency-limit.txt", body: fieldFile(t, "eks-concurrency-limit.txt")},
		{name: "a debug dump", body: fieldFile(t, "docs-dump_priority_levels.txt"), wantErr: "instance-0: metrics-0.txt holds dump_priority_levels, where metrics are expected"},
		{name: "no form at all", body: []byte("<html>\n</html>\n"), wantErr: `instance-0: metrics-0.txt: metrics line 1: "<html>": not the Prometheus text format`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			manifest := `{"format":1,"instances":[{"dir":"instance-0","instance":"a","capturedAt":"2021-12-13T00:00:00Z","files":["metrics-0.txt"]}]}`
			if err := os.WriteFile(filepath.Join(dir, manifestFile), []byte(manifest), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(filepath.Join(dir, "instance-0"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "instance-0", "metrics-0.txt"), tt.body, 0o644); err != nil {
				t.Fatal(err)
			}
			c, err := (&BundleSource{Path: dir}).Capture(context.Background(), CaptureOptions{Parts: PartAll})
			if tt.wantErr != "" {
				if err == nil || !strings.HasSuffix(err.Error(), tt.wantErr) {
					t.Fatalf("got %v, want an error ending %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			raw, err := (&BundleSource{Path: filepath.Join("..", "..", "testdata", "field", tt.file)}).Capture(context.Background(), CaptureOptions{Parts: PartAll})
			if err != nil {
				t.Fatal(err)
			}
			const limit = "apiserver_flowcontrol_request_concurrency_limit"
			got, want := c.Snapshots[0].Metrics[0].SumBy(limit, "priority_level"), raw.Snapshots[0].Metrics[0].SumBy(limit, "priority_level")
			if len(want) == 0 || !reflect.DeepEqual(got, want) {
				t.Errorf("bundle's limits %v, --from's %v", got, want)
			}
		})
	}
}

// FuzzParseMetricsBody: a metrics body of any content is a scrape or one
// line of error, never a panic; a body the Prometheus parser reads is read
// as it reads it.
func FuzzParseMetricsBody(f *testing.F) {
	paths, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "field", "*.txt"))
	for _, p := range paths {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("series | value\n-- | --\napiserver_flowcontrol_nominal_limit_seats{priority_level=\"a\"} | 3\n"))
	f.Add([]byte("apiserver_flowcontrol_nominal_limit_seats{priority_level=\"a\"} 3\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		sc, err := parseMetricsBody("metrics-0.txt", b, time.Time{})
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error of several lines: %q", err)
			}
			return
		}
		if plain, _, perr := metrics.ParseAPF(bytes.NewReader(b), time.Time{}); perr == nil && len(plain.Families) != len(sc.Families) {
			t.Fatalf("%d families, the Prometheus parser's %d", len(sc.Families), len(plain.Families))
		}
	})
}
