package input

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/kubectl-apf/kubectl-apf/internal/testharness/auditwrap"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
)

const wrappedTestdata = "testdata/wrapped"

// readFiles reads every request of the paths through OpenFiles (lenient,
// as the commands read them).
func readFiles(t *testing.T, paths ...string) ([]workload.Request, *workload.Files, error) {
	t.Helper()
	return readFilesWith(t, Options{Lenient: true}, paths...)
}

// readFilesWith is readFiles with opts.
func readFilesWith(t *testing.T, opts Options, paths ...string) ([]workload.Request, *workload.Files, error) {
	t.Helper()
	fs, err := OpenFiles(paths, opts)
	if err != nil {
		return nil, nil, err
	}
	defer fs.Close()
	var out []workload.Request
	for {
		var r workload.Request
		err := fs.Next(&r)
		if errors.Is(err, io.EOF) {
			return out, fs, nil
		}
		if err != nil {
			return out, fs, err
		}
		out = append(out, r)
	}
}

// TestWrappedSamples reads the samples under testdata/wrapped (see its
// README for where each comes from): the formats built around the same
// eight events of a recorded audit log give the requests the raw file
// gives, each with the instance its wrapper names; the public samples
// give what their records carry.
func TestWrappedSamples(t *testing.T) {
	raw, _, err := readFiles(t, filepath.Join(wrappedTestdata, "raw-audit.log"))
	if err != nil {
		t.Fatal(err)
	}
	if len(raw) < 4 {
		t.Fatalf("%d requests in the raw sample", len(raw))
	}
	for _, tt := range []struct {
		dir, format, instance string
	}{
		{"cloudwatch-filter-log-events", "cloudwatch", "kube-apiserver-audit-0a1b2c3d4e5f60718293a4b5c6d7e8f9"},
		{"cloudwatch-get-log-events", "cloudwatch", ""},
		{"cloudwatch-insights-json", "cloudwatch", "kube-apiserver-audit-0a1b2c3d4e5f60718293a4b5c6d7e8f9"},
		{"cloudwatch-insights-csv", "csv", "kube-apiserver-audit-0a1b2c3d4e5f60718293a4b5c6d7e8f9"},
		{"cloudwatch-s3-export", "cloudwatch-s3", "kube-apiserver-audit-0a1b2c3d4e5f60718293a4b5c6d7e8f9"},
		{"aks-storage-blob", "azure", "kube-apiserver-7b9c5d4f8-x2lkq"},
		{"aks-event-hub", "azure", "kube-apiserver-7b9c5d4f8-x2lkq"},
		{"azurediagnostics-json", "azure", "kube-apiserver-7b9c5d4f8-x2lkq"},
		{"aksaudit-json", "azure", "kube-apiserver-7b9c5d4f8-x2lkq"},
		{"aksaudit-csv", "csv", "kube-apiserver-7b9c5d4f8-x2lkq"},
		{"cri", "cri", ""},
		{"docker-json-file", "docker", ""},
		{"fluent-bit-fields", "pipeline", "kube-apiserver-7b9c5d4f8-x2lkq"},
		{"fluent-bit-log", "pipeline", "kube-apiserver-7b9c5d4f8-x2lkq"},
		{"vector", "pipeline", "kube-apiserver-7b9c5d4f8-x2lkq"},
		{"otel-collector", "pipeline", "kube-apiserver-7b9c5d4f8-x2lkq"},
		{"otlp-json", "pipeline", "kube-apiserver-7b9c5d4f8-x2lkq"},
		{"elasticsearch", "pipeline", "kube-apiserver-7b9c5d4f8-x2lkq"},
	} {
		t.Run(tt.dir, func(t *testing.T) {
			// the directory: a file of it (the S3 export's is nested and
			// gzipped)
			got, fs, err := readFiles(t, filepath.Join(wrappedTestdata, tt.dir))
			if err != nil {
				t.Fatal(err)
			}
			for name, f := range fs.Formats {
				if string(f) != tt.format {
					t.Errorf("%s read as %q, want %q", name, f, tt.format)
				}
			}
			if len(got) != len(raw) {
				t.Fatalf("%d requests, the raw file %d", len(got), len(raw))
			}
			// a wrapper that names no instance leaves the file's
			want := tt.instance
			if want == "" {
				for name := range fs.Formats {
					want = workload.RotationBase(filepath.Base(name))
				}
			}
			for i := range got {
				if got[i].Instance != want {
					t.Errorf("request %d: instance %q, want %q", i, got[i].Instance, want)
				}
				g, w := got[i], raw[i]
				g.Instance, g.Source, w.Instance, w.Source = "", workload.Where{}, "", workload.Where{}
				if !equalRequests(g, w) {
					t.Errorf("request %d: %+v\nthe raw file's: %+v", i, g, w)
				}
			}
		})
	}
	t.Run("AKS diagnostic record (Elastic's sample)", func(t *testing.T) {
		got, _, err := readFiles(t, filepath.Join(wrappedTestdata, "aks-diagnostics-elastic.json"))
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0].Instance != "kube-apiserver-869d7bb754-kkg69" || got[0].User != "aksService" || got[0].Verb != "update" || got[0].Status != 200 || got[0].Latency.Microseconds() != 4153 {
			t.Errorf("got %+v", got)
		}
	})
	t.Run("AKS record with the event as an object (Elastic's sample)", func(t *testing.T) {
		got, _, err := readFiles(t, filepath.Join(wrappedTestdata, "aks-diagnostics-log-object.json"))
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0].Instance != "kube-apiserver-1234567890" || got[0].User != "aksService" {
			t.Errorf("got %+v", got)
		}
	})
	t.Run("GKE entries are refused with what they lack and what they tell", func(t *testing.T) {
		_, _, err := readFiles(t, filepath.Join(wrappedTestdata, "gke-gcloud-logging-read.json"))
		if err == nil {
			t.Fatal("a GKE export read as if it could be reconstructed")
		}
		for _, want := range []string{"a GKE Cloud Logging export", "no latency", "no user groups", "Data Access logging", "1 entry from 2025-07-13T08:38:39Z", "system:gke-master-healthcheck 1"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%v\nlacks %q", err, want)
			}
		}
	})
	t.Run("a file of mixed records (Elastic's test file) is read as its first record's format and says what it skipped", func(t *testing.T) {
		got, fs, err := readFiles(t, filepath.Join(wrappedTestdata, "elastic-kubernetes-audit-mixed.log"))
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range fs.Stats {
			if len(got) != 3 || st.Malformed != 2 || st.Lines != 5 {
				t.Errorf("%d requests, %d of %d lines malformed (%v), want 3 and 2 of 5", len(got), st.Malformed, st.Lines, st.MalformedReasons())
			}
		}
	})
}

// equalRequests compares two requests field by field.
func equalRequests(a, b workload.Request) bool {
	return reflect.DeepEqual(a, b)
}

// TestUnwrapErrors: inputs a wrapper cannot give a request of fail with
// one line naming what they hold.
func TestUnwrapErrors(t *testing.T) {
	for _, tt := range []struct{ name, input, want string }{
		{"empty", "", "the file is empty"},
		{"AKS records of other categories only", `{"category":"kube-apiserver","properties":{"log":"I1127 started","pod":"kube-apiserver-1"}}` + "\n",
			"an Azure (AKS diagnostic settings or Log Analytics) export whose records hold no audit event that can be replayed: 1 AKS record of another category than kube-audit and kube-audit-admin"},
		{"CRI lines of klog text", "2026-11-27T10:00:00.000000001Z stderr F I1127 10:00:00.000000       1 controller.go:615] started\n",
			// read as the apiserver's own log (whose reader takes the CRI
			// prefix), in which no line is an "HTTP" one
			`no line is an httplog "HTTP" line, an audit event or a record of a log wrapper this reads (first line: "2026-11-27T10:00:00.000000001Z stderr F I1127`},
		{"audit events of other stages only", `{"kind":"Event","apiVersion":"audit.k8s.io/v1","auditID":"a","stage":"RequestReceived","requestURI":"/api","verb":"get","user":{"username":"u"},"requestReceivedTimestamp":"2026-11-27T10:00:00Z"}` + "\n",
			"its 1 audit event is of stages other than ResponseComplete and Panic"},
		{"GKE entries of a BigQuery sink", `{"logName":"projects/p/logs/cloudaudit.googleapis.com%2Factivity","timestamp":"2026-11-27T10:00:00.123Z","resource":{"type":"k8s_cluster","labels":{"cluster_name":"c"}},"protopayload_auditlog":{"serviceName":"k8s.io","methodName":"io.k8s.core.v1.pods.list","authenticationInfo":{"principalEmail":"alice@example.com"},"status":{"code":8}}}` + "\n",
			"1 entry from 2026-11-27T10:00:00Z to 2026-11-27T10:00:00Z, 1 with status RESOURCE_EXHAUSTED (the code of HTTP 429); requests by principal: alice@example.com 1"},
		{"Elasticsearch answer without hits", `{"took":3,"timed_out":false,"hits":{"total":{"value":0},"hits":[]}}`, "a log pipeline's JSON that holds no record"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "in")
			if err := os.WriteFile(p, []byte(tt.input), 0o644); err != nil {
				t.Fatal(err)
			}
			_, _, err := readFiles(t, p)
			if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("got %v, want one line containing %q", err, tt.want)
			}
		})
	}
}

// TestDirectoryOfMixedInputs: a directory holding a raw audit log, a
// gzipped docker log and a CloudWatch answer is read as three inputs, each
// in its format, merged in arrival order.
func TestDirectoryOfMixedInputs(t *testing.T) {
	dir := t.TempDir()
	raw, err := os.ReadFile(filepath.Join(wrappedTestdata, "raw-audit.log"))
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(raw, []byte("\n"))
	copyFile := func(src, dst string) {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, dst), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "a-audit.log"), bytes.Join(lines[:3], nil), 0o644); err != nil {
		t.Fatal(err)
	}
	copyFile(filepath.Join(wrappedTestdata, "cloudwatch-s3-export", "exportedlogs", "4c1e2a3b-9f7d-4e1a-8b6c-1d2e3f4a5b6c", "kube-apiserver-audit-0a1b2c3d4e5f60718293a4b5c6d7e8f9", "000000.gz"), "b.gz")
	copyFile(filepath.Join(wrappedTestdata, "cloudwatch-filter-log-events", "filter-log-events.json"), "c.json")
	got, fs, err := readFiles(t, dir)
	if err != nil {
		t.Fatal(err)
	}
	formats := map[workload.Format]int{}
	for _, f := range fs.Formats {
		formats[f]++
	}
	if len(fs.Formats) != 3 || formats[workload.FormatAudit] != 1 || formats[workload.FormatCloudWatchS3] != 1 || formats[workload.FormatCloudWatch] != 1 {
		t.Errorf("formats %v", fs.Formats)
	}
	all, _, err := readFiles(t, filepath.Join(wrappedTestdata, "raw-audit.log"))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2*len(all)+3-countStage(lines[:3]) {
		t.Errorf("%d requests from the directory, want %d", len(got), 2*len(all)+3-countStage(lines[:3]))
	}
	for i := 1; i < len(got); i++ {
		if got[i].Arrival.Before(got[i-1].Arrival) {
			t.Fatalf("request %d arrives before request %d", i, i-1)
		}
	}
}

// countStage counts the lines that are not ResponseComplete events.
func countStage(lines [][]byte) int {
	n := 0
	for _, l := range lines {
		if !bytes.Contains(l, []byte(`"stage":"ResponseComplete"`)) {
			n++
		}
	}
	return n
}

// TestCloudWatchStreams reads one filter-log-events answer over a log
// group of two streams (an apiserver instance each, their events
// interleaved in time): every request takes its stream's instance and is
// the request its event gives raw, and the split names the export as the
// input that named both instances.
func TestCloudWatchStreams(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(wrappedTestdata, "raw-audit.log"))
	if err != nil {
		t.Fatal(err)
	}
	streams := []auditwrap.Stream{{Name: "kube-apiserver-audit-a"}, {Name: "kube-apiserver-audit-b"}}
	for i, l := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		streams[i%2].Events = append(streams[i%2].Events, l)
	}
	dir := t.TempDir()
	export := filepath.Join(dir, "filter-log-events.json")
	if err := os.WriteFile(export, auditwrap.CloudWatchFilterStreams(streams), 0o644); err != nil {
		t.Fatal(err)
	}
	got, fs, err := readFiles(t, export)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range streams {
		raw := filepath.Join(dir, s.Name+".log")
		if err := os.WriteFile(raw, append(bytes.Join(s.Events, []byte("\n")), '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		want, _, err := readFiles(t, raw)
		if err != nil {
			t.Fatal(err)
		}
		var mine []workload.Request
		for _, r := range got {
			if r.Instance == s.Name {
				mine = append(mine, r)
			}
		}
		if len(mine) != len(want) || len(want) == 0 {
			t.Fatalf("%s: %d requests, its events raw %d", s.Name, len(mine), len(want))
		}
		for i := range mine {
			g, w := mine[i], want[i]
			g.Instance, g.Source, w.Instance, w.Source = "", workload.Where{}, "", workload.Where{}
			if !equalRequests(g, w) {
				t.Errorf("%s: request %d: %+v\nits event raw: %+v", s.Name, i, g, w)
			}
		}
	}
	for i, line := range fs.Split([]string{"kube-apiserver-audit-a", "kube-apiserver-audit-b"}) {
		if want := streams[i].Name + ": filter-log-events.json (" + workload.WhyInputName + ")"; line != want {
			t.Errorf("split %q, want %q", line, want)
		}
	}
}
