package vlogs_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/kubectl-apf/kubectl-apf/internal/testharness/recording"
	"github.com/kubectl-apf/kubectl-apf/internal/testharness/testvlogs"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
	"github.com/kubectl-apf/kubectl-apf/pkg/input"
	"github.com/kubectl-apf/kubectl-apf/pkg/reconstruct"
	"github.com/kubectl-apf/kubectl-apf/pkg/vlogs"
)

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// BenchmarkFleetDay (make bench-vlogs) ingests a generated fleet day into a
// real VictoriaLogs: KUBECTL_APF_BENCH_VLOGS_CLUSTERS clusters (3) of three
// apiserver instances, KUBECTL_APF_BENCH_VLOGS_EVENTS events in all
// (20,000,000), spread over 24 hours, with the quiet recording's overload
// placed three times in the first cluster (on instances 0, 1 and 2, at 6,
// 12 and 18 hours). For the first cluster it times explain 429 --since 24h
// from the store (its counts, totals and the events around the bursts)
// against a raw pull of every event and against the file reader on the
// same events (a file per instance), each instance reconstructed on its own, checks that the store's incidents are the file's, and
// reports the bytes moved and the ratios.
func BenchmarkFleetDay(b *testing.B) {
	if os.Getenv("KUBECTL_APF_BENCH_VLOGS") != "1" {
		b.Skip("set KUBECTL_APF_BENCH_VLOGS=1 (make bench-vlogs)")
	}
	clusters := envInt("KUBECTL_APF_BENCH_VLOGS_CLUSTERS", 3)
	total := envInt("KUBECTL_APF_BENCH_VLOGS_EVENTS", 20_000_000)
	// a day of a fleet's events takes the store longer than its default
	// 30 s limit per query on a 2-core machine; an operator of such a
	// store raises it as well
	store := testvlogs.StartT(b, false, "-search.maxQueryDuration=30m")
	ctx := context.Background()
	dir := filepath.Join(recordings, "quiet")
	audit := gunzip(b, filepath.Join(dir, recording.AuditLogFile))
	o := options(b, dir)
	rec := fromFile(b, audit, o)
	day := rec.Start.Truncate(24 * time.Hour)
	// the recording's lines, shifted to start at off, on an instance
	var recLines [][]byte
	sc := bufio.NewScanner(bytes.NewReader(audit))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		recLines = append(recLines, append([]byte(nil), sc.Bytes()...))
	}
	shifted := func(buf []byte, off time.Duration, cluster, inst int) []byte {
		d := day.Add(off).Sub(rec.Start)
		for _, l := range recLines {
			l = shiftTimes(l, d)
			buf = fmt.Appendf(buf, `{"cluster":"c%d","host":"c%d-apiserver-%d",%s`+"\n", cluster, cluster, inst, l[1:])
		}
		return buf
	}
	// the first cluster's events, one file per instance (named for the
	// file reader as the store names it)
	tmp := b.TempDir()
	var paths []string
	var fws []*bufio.Writer
	byPath := map[string]string{}
	for inst := range 3 {
		p := filepath.Join(tmp, fmt.Sprintf("c0-apiserver-%d.log", inst))
		f, err := os.Create(p)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		paths, fws, byPath[p] = append(paths, p), append(fws, bufio.NewWriterSize(f, 1<<20)), fmt.Sprintf("c0-apiserver-%d", inst)
	}
	streams := clusters * 3
	perStream := total / streams
	step := 24 * time.Hour / time.Duration(perStream)
	start := time.Now()
	ingested := 0
	var chunk []byte
	flush := func(force bool) {
		if len(chunk) < 64<<20 && !force {
			return
		}
		if err := store.IngestOnly(ctx, chunk, "stageTimestamp", []string{"cluster", "host"}); err != nil {
			b.Fatal(err)
		}
		chunk = chunk[:0]
	}
	incidents := map[int]time.Duration{0: 6 * time.Hour, 1: 12 * time.Hour, 2: 18 * time.Hour}
	c0 := make([][]byte, 3)
	for i := 0; i < perStream; i++ {
		at := day.Add(time.Duration(i) * step)
		for cl := 0; cl < clusters; cl++ {
			for inst := 0; inst < 3; inst++ {
				if off, ok := incidents[inst]; ok && cl == 0 && i == int(off/step) {
					n := len(chunk)
					chunk = shifted(chunk, off, cl, inst)
					c0[inst] = append(c0[inst], chunk[n:]...)
					ingested += len(recLines)
				}
				n := len(chunk)
				chunk = backgroundEvent(chunk, cl, inst, i, at.Add(time.Duration(inst*cl)*time.Millisecond))
				ingested++
				if cl == 0 {
					c0[inst] = append(c0[inst], chunk[n:]...)
				}
			}
		}
		for inst := range c0 {
			if len(c0[inst]) > 8<<20 {
				if _, err := fws[inst].Write(c0[inst]); err != nil {
					b.Fatal(err)
				}
				c0[inst] = c0[inst][:0]
			}
		}
		flush(false)
	}
	flush(true)
	for inst := range c0 {
		if _, err := fws[inst].Write(c0[inst]); err != nil {
			b.Fatal(err)
		}
		if err := fws[inst].Flush(); err != nil {
			b.Fatal(err)
		}
	}
	if err := store.WaitFor(ctx, ingested); err != nil {
		b.Fatal(err)
	}
	b.Logf("ingested %d events (%d clusters x 3 instances) in %s", ingested, clusters, time.Since(start).Round(time.Second))

	src := func(c *vlogs.Client) *vlogs.Source {
		return &vlogs.Source{Client: c, Filter: "cluster:=c0", Mapping: vlogs.Mapping{Instance: "host"}, Start: day, End: day.Add(24 * time.Hour)}
	}
	b.ResetTimer()
	var storeTime, rawTime, fileTime time.Duration
	var pull *vlogs.Pull
	var got, want *reconstruct.Result
	var rawBytes int64
	for range b.N {
		t0 := time.Now()
		client, err := vlogs.New(vlogs.Options{URL: store.Select.URL, Timeout: 10 * time.Minute})
		if err != nil {
			b.Fatal(err)
		}
		if got, pull, err = reconstructPull(ctx, src(client), 10*time.Second, 2*time.Minute, o); err != nil {
			b.Fatal(err)
		}
		storeTime += time.Since(t0)

		t0 = time.Now()
		raw, _ := vlogs.New(vlogs.Options{URL: store.Select.URL, Timeout: 10 * time.Minute})
		if err := raw.Query(ctx, src(raw).RawQuery(), func([]byte) error { return nil }); err != nil {
			b.Fatal(err)
		}
		rawTime += time.Since(t0)
		rawBytes = raw.Bytes.Load()

		t0 = time.Now()
		files, err := input.OpenFiles(paths, input.Options{Lenient: true, Instances: workload.InstanceOptions{ByPath: byPath}})
		if err != nil {
			b.Fatal(err)
		}
		if want, err = reconstruct.RunInstances(files, o, reconstruct.InstanceOptions{Resolve: files.Resolve}, nil); err != nil {
			b.Fatal(err)
		}
		files.Close()
		fileTime += time.Since(t0)
	}
	b.StopTimer()
	// the incidents must be the file's
	if w, g := incidentsJSON(b, want), incidentsJSON(b, got); w != g {
		b.Errorf("the store's incidents differ from the file's:\n%s\n---\n%s", g, w)
	}
	n := float64(b.N)
	b.ReportMetric(float64(pull.Bytes), "store-bytes")
	b.ReportMetric(float64(rawBytes), "raw-bytes")
	b.ReportMetric(float64(rawBytes)/float64(pull.Bytes), "raw/store-bytes")
	b.ReportMetric(storeTime.Seconds()/n, "store-s")
	b.ReportMetric(rawTime.Seconds()/n, "raw-pull-s")
	b.ReportMetric(fileTime.Seconds()/n, "file-s")
	b.ReportMetric(fileTime.Seconds()/storeTime.Seconds(), "file/store-time")
	b.Logf("cluster c0: %d events, %d 429s; pulled %d events in %d windows; %d incidents; %v", pull.Totals.Events, pull.Totals.Rejected, pull.Pulled.Events, len(pull.Windows), len(got.Incidents), pull.Notes())
}

// shiftTimes moves an audit event's two timestamps by d.
func shiftTimes(l []byte, d time.Duration) []byte {
	for _, k := range []string{`"requestReceivedTimestamp":"`, `"stageTimestamp":"`} {
		i := bytes.Index(l, []byte(k))
		if i < 0 {
			continue
		}
		i += len(k)
		j := bytes.IndexByte(l[i:], '"')
		t, err := time.Parse(time.RFC3339Nano, string(l[i:i+j]))
		if err != nil {
			continue
		}
		l = append(append(append([]byte(nil), l[:i]...), t.Add(d).Format(time.RFC3339Nano)...), l[i+j:]...)
	}
	return l
}

// backgroundEvent is one ordinary request of a fleet's day: a service
// account reading a ConfigMap, answered 200 in 3 ms.
func backgroundEvent(buf []byte, cluster, inst, i int, at time.Time) []byte {
	return fmt.Appendf(buf, `{"cluster":"c%d","host":"c%d-apiserver-%d","kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"c%d-%d-%d","stage":"ResponseComplete","requestURI":"/api/v1/namespaces/app-%d/configmaps/settings","verb":"get","user":{"username":"system:serviceaccount:app-%d:default","groups":["system:serviceaccounts","system:serviceaccounts:app-%d","system:authenticated"]},"sourceIPs":["10.0.%d.%d"],"userAgent":"app/1.0","objectRef":{"resource":"configmaps","namespace":"app-%d","name":"settings","apiVersion":"v1"},"responseStatus":{"metadata":{},"code":200},"requestReceivedTimestamp":%q,"stageTimestamp":%q,"annotations":{"authorization.k8s.io/decision":"allow","authorization.k8s.io/reason":""}}`+"\n",
		cluster, cluster, inst, cluster, inst, i, i%50, i%50, i%50, inst, i%250, i%50, at.Format(time.RFC3339Nano), at.Add(3*time.Millisecond).Format(time.RFC3339Nano))
}
