package vlogs_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-apf/kubectl-apf/internal/testharness/recording"
	"github.com/kubectl-apf/kubectl-apf/internal/testharness/testvlogs"
	"github.com/kubectl-apf/kubectl-apf/pkg/dump"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
	"github.com/kubectl-apf/kubectl-apf/pkg/input"
	"github.com/kubectl-apf/kubectl-apf/pkg/logs"
	"github.com/kubectl-apf/kubectl-apf/pkg/reconstruct"
	"github.com/kubectl-apf/kubectl-apf/pkg/vlogs"
)

const recordings = "../../testdata/simulate/recordings"

// options are the reconstruction options of a recording: its bundle's
// configuration and object counts, its scenario's server limit.
func options(t testing.TB, dir string) reconstruct.Options {
	t.Helper()
	capture, err := (&dump.BundleSource{Path: filepath.Join(dir, recording.BundleFile)}).Capture(context.Background(), dump.CaptureOptions{Parts: dump.PartObjects | dump.PartMetrics})
	if err != nil {
		t.Fatal(err)
	}
	snap := capture.Snapshots[0]
	fss, pls := snap.Objects()
	o := reconstruct.Options{Config: engine.NewConfig(fss, pls)}
	sc, err := recording.ScenarioOf(dir)
	if err != nil {
		t.Fatal(err)
	}
	o.ServerConcurrencyLimit = sc.Inflight + sc.Mutating
	o.Counts = logs.SeriesOf(snap.Metrics)
	return o
}

func gunzip(t testing.TB, path string) []byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// tagged adds the field "recording":name to every JSON line, as a pipeline
// adds its cluster's name.
func tagged(lines []byte, name string) []byte {
	var out bytes.Buffer
	sc := bufio.NewScanner(bytes.NewReader(lines))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		l := sc.Bytes()
		if len(l) < 2 || l[0] != '{' {
			continue
		}
		fmt.Fprintf(&out, `{"recording":%q,`, name)
		out.Write(l[1:])
		out.WriteByte('\n')
	}
	return out.Bytes()
}

// fromFile reconstructs an audit log read from a file.
func fromFile(t testing.TB, audit []byte, o reconstruct.Options) *reconstruct.Result {
	t.Helper()
	rd := input.NewAuditReader(bytes.NewReader(audit), "audit.log", input.Options{Lenient: true}, nil)
	res, err := reconstruct.RunReader(rd, o, nil)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// reportJSON is a result's explain 429 report, its source's name aside,
// its numbers to 12 significant digits: the shares are sums in the order
// of the requests, and requests of the same microsecond come from the
// store in another order than the file's, which changes their last bits.
func reportJSON(t testing.TB, res *reconstruct.Result) string {
	t.Helper()
	b, err := json.Marshal(res.Report("same"))
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	b, err = json.Marshal(testvlogs.Rounded(v))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// incidentsJSON is the report's incidents alone, rounded as reportJSON
// rounds them (a pull of a day's windows has fewer requests than the day's
// files, counted in the report's per-instance fates).
func incidentsJSON(t testing.TB, res *reconstruct.Result) string {
	t.Helper()
	b, err := json.Marshal(res.Report("same").Incidents)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	b, err = json.Marshal(testvlogs.Rounded(v))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestRecordingsFromStore loads every recording's audit log into a real
// VictoriaLogs (one JSON line per event, _time from stageTimestamp, as a
// pipeline ships them; each tagged with its recording) and checks that
// reading it back through the store, the 429s counted there and only the
// events around them pulled, gives the report of the file: the same
// incidents, clients, counts, seat-seconds and fates.
func TestRecordingsFromStore(t *testing.T) {
	store := testvlogs.StartT(t, false)
	dirs, _ := filepath.Glob(filepath.Join(recordings, "*", recording.AuditLogFile))
	if len(dirs) < 7 {
		t.Fatalf("%d recordings", len(dirs))
	}
	ctx := context.Background()
	var all []byte
	audits := map[string][]byte{}
	lines := 0
	for _, p := range dirs {
		name := filepath.Base(filepath.Dir(p))
		audits[name] = gunzip(t, p)
		all = append(all, tagged(audits[name], name)...)
		lines += bytes.Count(audits[name], []byte{'\n'})
	}
	if err := store.Ingest(ctx, all, "stageTimestamp", []string{"recording"}, lines); err != nil {
		t.Fatal(err)
	}
	for _, p := range dirs {
		dir := filepath.Dir(p)
		name := filepath.Base(dir)
		t.Run(name, func(t *testing.T) {
			o := options(t, dir)
			want := fromFile(t, audits[name], o)
			client, err := vlogs.New(vlogs.Options{URL: store.Select.URL, Timeout: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			// the window: the recording's day
			first := want.Start.Truncate(24 * time.Hour)
			src := &vlogs.Source{Client: client, Filter: "recording:=" + name, Start: first, End: first.Add(24 * time.Hour)}
			got, pull, err := reconstructPull(ctx, src, 10*time.Second, 2*time.Minute, o)
			if err != nil {
				t.Fatal(err)
			}
			if len(want.Incidents) == 0 {
				t.Fatalf("the file has no incident")
			}
			if w, g := reportJSON(t, want), reportJSON(t, got); w != g {
				t.Errorf("the store's report differs from the file's:\n%s\n---\n%s", g, w)
			}
			if !reflect.DeepEqual(got.Sum(), want.Sum()) {
				t.Errorf("fates: store %+v, file %+v", got.Sum(), want.Sum())
			}
			// the window's totals, counted in the store by key and
			// classified here, are the file's by level
			totals := map[string]vlogs.LevelTotal{}
			for _, l := range pull.Levels.Levels {
				totals[l.Level] = l
			}
			if len(totals) != len(want.Levels) {
				t.Errorf("%d levels counted in the store, the file has %d", len(totals), len(want.Levels))
			}
			for _, l := range want.Levels {
				g := totals[l.Level]
				if w := l.Agreement.BothRejected + l.Agreement.OnlyRecorded; g.Rejected != w || g.Requests != l.Agreement.Total() {
					t.Errorf("%s: the store's keys give %d 429s of %d requests, the file %d of %d", l.Level, g.Rejected, g.Requests, w, l.Agreement.Total())
				}
			}
			t.Logf("%d incidents; %v", len(got.Incidents), pull.Notes())
		})
	}
}

// TestSparseDayFromStore places one recording in a long quiet stretch of
// other requests (an exempt health check every few seconds for two hours
// on either side) and checks that the store pulls only the recording's
// events and still gives the file's incidents, and says how many bytes
// it moved against a pull of every event.
func TestSparseDayFromStore(t *testing.T) {
	store := testvlogs.StartT(t, false)
	ctx := context.Background()
	dir := filepath.Join(recordings, "quiet")
	audit := gunzip(t, filepath.Join(dir, recording.AuditLogFile))
	o := options(t, dir)
	rec := fromFile(t, audit, o)
	var quiet []byte
	n := 0
	add := func(at time.Time) {
		n++
		quiet = fmt.Appendf(quiet, `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"bg-%d","stage":"ResponseComplete","requestURI":"/livez","verb":"get","user":{"username":"admin","groups":["system:masters","system:authenticated"]},"sourceIPs":["127.0.0.1"],"userAgent":"probe/1.0","responseStatus":{"metadata":{},"code":200},"requestReceivedTimestamp":%q,"stageTimestamp":%q}`+"\n",
			n, at.Format(time.RFC3339Nano), at.Add(time.Millisecond).Format(time.RFC3339Nano))
	}
	const span, every = 2 * time.Hour, 500 * time.Millisecond
	for at := rec.Start.Add(-span); at.Before(rec.Start.Add(-5 * time.Minute)); at = at.Add(every) {
		add(at)
	}
	for at := rec.End.Add(5 * time.Minute); at.Before(rec.End.Add(span)); at = at.Add(every) {
		add(at)
	}
	events := bytes.Count(audit, []byte{'\n'})
	if err := store.Ingest(ctx, append(append([]byte(nil), audit...), quiet...), "stageTimestamp", nil, events+n); err != nil {
		t.Fatal(err)
	}
	want := fromFile(t, append(append([]byte(nil), audit...), quiet...), o)
	client, err := vlogs.New(vlogs.Options{URL: store.Select.URL})
	if err != nil {
		t.Fatal(err)
	}
	src := &vlogs.Source{Client: client, Start: rec.Start.Add(-3 * time.Hour), End: rec.End.Add(3 * time.Hour)}
	got, pull, err := reconstructPull(ctx, src, 10*time.Second, 2*time.Minute, o)
	if err != nil {
		t.Fatal(err)
	}
	// the file's report covers its whole span; the store's the pulled
	// window: the incidents must be the same
	want.Start, want.End = got.Start, got.End
	if w, g := reportJSON(t, want), reportJSON(t, got); w != g {
		t.Errorf("the store's incidents differ from the file's:\n%s\n---\n%s", g, w)
	}
	if pull.Totals.Events != int64(events+n) || pull.Pulled.Events != int64(events) {
		t.Errorf("the store counted %d events and pulled %d; want %d and the recording's %d", pull.Totals.Events, pull.Pulled.Events, events+n, events)
	}
	// every event of the window, pulled as the reconstruction pulls them
	raw, err := vlogs.New(vlogs.Options{URL: store.Select.URL})
	if err != nil {
		t.Fatal(err)
	}
	all := 0
	if err := raw.Query(ctx, src.RawQuery(), func([]byte) error { all++; return nil }); err != nil {
		t.Fatal(err)
	}
	if all != events+n {
		t.Fatalf("the raw pull read %d events, want %d", all, events+n)
	}
	t.Logf("moved %d bytes in %d queries; a raw pull of all %d events moved %d bytes: %.1fx fewer; %s",
		pull.Bytes, pull.Queries, all, raw.Bytes.Load(), float64(raw.Bytes.Load())/float64(pull.Bytes), strings.Join(pull.Notes(), "; "))
	if pull.Bytes*5 > raw.Bytes.Load() {
		t.Errorf("the store moved %d bytes, not 5 times fewer than a raw pull's %d", pull.Bytes, raw.Bytes.Load())
	}
}

// TestInstancesFromStore stores the quiet recording as served by apiserver
// a, and the same requests all answered 200 as served by apiserver b (the
// instance a stream field, host): only a answered 429, so only a's events
// are pulled, each request carries its instance, and the incidents are the
// file's.
func TestInstancesFromStore(t *testing.T) {
	store := testvlogs.StartT(t, false)
	ctx := context.Background()
	dir := filepath.Join(recordings, "quiet")
	audit := gunzip(t, filepath.Join(dir, recording.AuditLogFile))
	o := options(t, dir)
	want := fromFile(t, audit, o)
	var lines []byte
	n := 0
	sc := bufio.NewScanner(bytes.NewReader(audit))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		l := sc.Bytes()
		lines = fmt.Appendf(lines, `{"host":"a",%s`+"\n", l[1:])
		b := bytes.ReplaceAll(bytes.Replace(l, []byte(`"auditID":"`), []byte(`"auditID":"b-`), 1), []byte(`"code":429`), []byte(`"code":200`))
		lines = fmt.Appendf(lines, `{"host":"b",%s`+"\n", b[1:])
		n += 2
	}
	if err := store.Ingest(ctx, lines, "stageTimestamp", []string{"host"}, n); err != nil {
		t.Fatal(err)
	}
	client, err := vlogs.New(vlogs.Options{URL: store.Select.URL})
	if err != nil {
		t.Fatal(err)
	}
	day := want.Start.Truncate(24 * time.Hour)
	src := &vlogs.Source{Client: client, Mapping: vlogs.Mapping{Instance: "host"}, Start: day, End: day.Add(24 * time.Hour)}
	ws, err := src.Windows(ctx, 10*time.Second, 2*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if len(ws) != 1 || !reflect.DeepEqual(ws[0].Instances, []string{"a"}) || ws[0].Rejected != 105 {
		t.Fatalf("windows %+v, want one of instance a with the recording's 105 429s", ws)
	}
	var pulled vlogs.Pulled
	rd := src.Reader(ctx, ws, "store", input.Options{}, nil, &pulled)
	for {
		var r workload.Request
		err := rd.Next(&r)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if r.Instance != "a" {
			t.Fatalf("request %s has instance %q, want a", r.AuditID, r.Instance)
		}
	}
	if pulled.Events != int64(n/2) {
		t.Errorf("pulled %d events, want the %d of instance a", pulled.Events, n/2)
	}
	got, _, err := reconstructPull(ctx, src, 10*time.Second, 2*time.Minute, o)
	if err != nil {
		t.Fatal(err)
	}
	if w, g := reportJSON(t, want), reportJSON(t, got); w != g {
		t.Errorf("the store's report differs from the file's:\n%s\n---\n%s", g, w)
	}
}
