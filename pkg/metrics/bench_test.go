package metrics

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"google.golang.org/protobuf/proto"
)

// genBody generates a /metrics body shaped like a large cluster's: a few
// thousand APF series (levels × flow schemas, with their histograms) and
// foreign families (request latencies per resource and verb, etcd,
// workqueues) with as many series as it takes to reach size bytes. As on a
// real server, each family is one block with one HELP and one TYPE line.
func genBody(size int) []byte {
	var b bytes.Buffer
	levels := []string{"exempt", "system", "node-high", "leader-election", "workload-high", "workload-low", "global-default", "catch-all", "apf-load", "batch", "ci", "tenant-a"}
	schemas := []string{"exempt", "probes", "system-leader-election", "endpoint-controller", "workload-leader-election", "system-node-high", "system-nodes",
		"kube-controller-manager", "kube-scheduler", "kube-system-service-accounts", "service-accounts", "global-default", "catch-all", "apf-load", "tenant-a", "ci"}
	header := func(name, typ string) {
		fmt.Fprintf(&b, "# HELP %s [ALPHA] Generated family %s.\n# TYPE %s %s\n", name, name, name, typ)
	}
	series := func(name string, bounds []string, labels string) {
		for i, le := range bounds {
			fmt.Fprintf(&b, "%s_bucket{%s,le=%q} %d\n", name, labels, le, i*7)
		}
		fmt.Fprintf(&b, "%s_bucket{%s,le=\"+Inf\"} %d\n%s_sum{%s} 12.5\n%s_count{%s} %d\n", name, labels, len(bounds)*7, name, labels, name, labels, len(bounds)*7)
	}
	each := func(fn func(l string)) {
		for _, pl := range levels {
			for _, fs := range schemas {
				fn(fmt.Sprintf("flow_schema=%q,priority_level=%q", fs, pl))
			}
		}
	}
	header("apiserver_flowcontrol_nominal_limit_seats", "gauge")
	for _, pl := range levels {
		fmt.Fprintf(&b, "apiserver_flowcontrol_nominal_limit_seats{priority_level=%q} 40\n", pl)
	}
	header("apiserver_flowcontrol_current_limit_seats", "gauge")
	for _, pl := range levels {
		fmt.Fprintf(&b, "apiserver_flowcontrol_current_limit_seats{priority_level=%q} 42\n", pl)
	}
	header("apiserver_flowcontrol_dispatched_requests_total", "counter")
	each(func(l string) { fmt.Fprintf(&b, "apiserver_flowcontrol_dispatched_requests_total{%s} 12345\n", l) })
	header("apiserver_flowcontrol_current_executing_seats", "gauge")
	each(func(l string) { fmt.Fprintf(&b, "apiserver_flowcontrol_current_executing_seats{%s} 3\n", l) })
	header("apiserver_flowcontrol_request_wait_duration_seconds", "histogram")
	each(func(l string) {
		series("apiserver_flowcontrol_request_wait_duration_seconds", strings.Split("0,0.005,0.02,0.05,0.1,0.2,0.5,1,2,5,10,15,30", ","), l+`,execute="true"`)
	})
	header("apiserver_flowcontrol_work_estimated_seats", "histogram")
	each(func(l string) {
		series("apiserver_flowcontrol_work_estimated_seats", strings.Split("1,2,4,8,16,32,64,100", ","), l)
	})

	resources := []string{"pods", "configmaps", "secrets", "nodes", "leases", "events", "deployments", "replicasets", "services", "endpointslices", "customresourcedefinitions", "widgets.example.com"}
	verbs := []string{"GET", "LIST", "WATCH", "POST", "PUT", "PATCH", "DELETE"}
	latBounds := strings.Split("0.005,0.025,0.05,0.1,0.2,0.4,0.6,0.8,1,1.25,1.5,2,3,4,5,6,8,10,15,20,30,45,60", ",")
	// The foreign part: n groups of series per family, sized to fill the body.
	foreign := func(n, from int) {
		header("apiserver_request_duration_seconds", "histogram")
		for g := from; g < from+n; g++ {
			for _, r := range resources {
				for _, v := range verbs {
					series("apiserver_request_duration_seconds", latBounds, fmt.Sprintf("component=\"apiserver\",dry_run=\"\",group=\"g%d\",resource=%q,scope=\"namespace\",subresource=\"\",verb=%q,version=\"v1\"", g, r, v))
				}
			}
		}
		header("apiserver_request_total", "counter")
		fmt.Fprintf(&b, "apiserver_request_total{code=\"429\",component=\"apiserver\",resource=\"configmaps\",verb=\"LIST\"} 17\n")
		for g := from; g < from+n; g++ {
			for _, r := range resources {
				for _, v := range verbs {
					fmt.Fprintf(&b, "apiserver_request_total{code=\"200\",component=\"apiserver\",group=\"g%d\",resource=%q,verb=%q} 99\n", g, r, v)
				}
			}
		}
		header("etcd_request_duration_seconds", "histogram")
		for g := from; g < from+n; g++ {
			for _, r := range resources {
				series("etcd_request_duration_seconds", latBounds, fmt.Sprintf("operation=\"get\",type=%q,shard=\"%d\"", r, g))
			}
		}
		header("workqueue_depth", "gauge")
		for g := from; g < from+n; g++ {
			for _, r := range resources {
				fmt.Fprintf(&b, "workqueue_depth{name=\"%s-%d\"} 0\n", r, g)
			}
		}
	}
	apf := b.Len()
	// Measure one group, then generate as many as fill the body.
	foreign(1, 0)
	per := b.Len() - apf
	b.Truncate(apf)
	n := (size - apf) / per
	if n < 1 {
		n = 1
	}
	foreign(n, 0)
	return b.Bytes()
}

// fullAPF is the naive alternative: parse everything with expfmt, then keep
// the APF families (and the 429 samples) from the result.
func fullAPF(body []byte) (fams map[string]*dto.MetricFamily, err error) {
	defer func() {
		if r := recover(); r != nil {
			fams, err = nil, fmt.Errorf("expfmt panicked: %v", r)
		}
	}()
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err = p.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	for name, mf := range fams {
		switch {
		case strings.HasPrefix(name, FlowcontrolPrefix), name == FamilyDroppedRequests:
		case name == FamilyRequestTotal || name == FamilyTerminationsTotal:
			var kept []*dto.Metric
			for _, m := range mf.Metric {
				for _, l := range m.Label {
					if l.GetName() == "code" && l.GetValue() == "429" {
						kept = append(kept, m)
					}
				}
			}
			mf.Metric = kept
		default:
			delete(fams, name)
		}
	}
	return fams, nil
}

// TestFilterMatchesFullParse is the differential test behind the benchmark:
// the fast path keeps exactly what a full parse keeps.
func TestFilterMatchesFullParse(t *testing.T) {
	bodies := map[string][]byte{"generated": genBody(2 << 20)}
	for _, f := range []string{"modern-a.txt", "modern-b.txt", "v1.20-shape.txt"} {
		bodies[f] = readFixture(t, f)
	}
	for name, body := range bodies {
		t.Run(name, func(t *testing.T) {
			want, err := fullAPF(body)
			if err != nil {
				t.Fatal(err)
			}
			got, _, err := ParseAPF(bytes.NewReader(body), t0)
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Families) != len(want) || len(want) == 0 {
				t.Fatalf("kept %d families, full parse has %d", len(got.Families), len(want))
			}
			for n, mf := range want {
				if !proto.Equal(mf, got.Families[n]) {
					t.Errorf("family %s differs", n)
				}
			}
		})
	}
}

// BenchmarkAPFView compares the APF view of a 50 MB /metrics body through
// FilterAPF + expfmt with parsing the whole body with expfmt.
func BenchmarkAPFView(b *testing.B) {
	body := genBody(50 << 20)
	b.Run("filter", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			s, kept, err := ParseAPF(bytes.NewReader(body), time.Time{})
			if err != nil || len(s.Families) == 0 {
				b.Fatal(err)
			}
			b.ReportMetric(float64(len(kept)), "kept-bytes")
		}
	})
	b.Run("expfmt-full", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			fams, err := fullAPF(body)
			if err != nil || len(fams) == 0 {
				b.Fatal(err)
			}
		}
	})
}

func FuzzFilterAPF(f *testing.F) {
	for _, n := range []string{"modern-a.txt", "v1.20-shape.txt"} {
		f.Add(readFixture(f, n))
	}
	f.Add([]byte("# TYPE apiserver_request_total counter\napiserver_request_total{code=\"429\"} 1\n"))
	// Whatever the fast path keeps must be exactly what a full parse keeps,
	// whenever the full parse succeeds.
	f.Fuzz(func(t *testing.T, body []byte) {
		// The fast path rejects the quoted-name syntax of UTF-8 metric
		// names (a line starting with "{"), which kube-apiserver never
		// emits and which expfmt handles inconsistently (it panics on some).
		for _, l := range bytes.Split(body, []byte("\n")) {
			if t := bytes.TrimLeft(l, " \t"); len(t) > 0 && t[0] == '{' {
				return
			}
		}
		want, err := fullAPF(body)
		if err != nil {
			return
		}
		got, _, err := ParseAPF(bytes.NewReader(body), t0)
		if err != nil {
			if len(want) > 0 {
				t.Fatalf("fast path failed (%v) where the full parse kept %d families", err, len(want))
			}
			return
		}
		for n, mf := range want {
			if len(mf.Metric) == 0 {
				continue
			}
			if !proto.Equal(mf, got.Families[n]) {
				t.Fatalf("family %s differs:\nfull %v\nfast %v", n, mf, got.Families[n])
			}
		}
	})
}

// onlyReader hides every method of a reader but Read, so FilterAPF cannot
// see the body's length.
type onlyReader struct{ r io.Reader }

func (o onlyReader) Read(p []byte) (int, error) { return o.r.Read(p) }

// TestFilterSizedBufferKeepsTheSame checks that a body whose length
// FilterAPF sees (a bytes.Reader: its read buffer and output are sized to
// it) keeps the same bytes and the same families as the same body read
// through a plain reader (the 256 KiB buffer), or the same error, for
// every /metrics body in testdata/metrics and testdata/field, and a
// generated body larger than the buffer: the same bytes parse the same.
func TestFilterSizedBufferKeepsTheSame(t *testing.T) {
	bodies := metricsBodies(t)
	if len(bodies) < 10 {
		t.Fatalf("%d bodies: testdata moved?", len(bodies))
	}
	for name, body := range bodies {
		want, wantErr := FilterAPF(onlyReader{bytes.NewReader(body)})
		got, err := FilterAPF(bytes.NewReader(body))
		if (err == nil) != (wantErr == nil) || !bytes.Equal(got, want) {
			t.Errorf("%s: sized: %d bytes, %v; plain reader: %d bytes, %v", name, len(got), err, len(want), wantErr)
		}
	}
}
