package vlogs

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
	"github.com/kubectl-apf/kubectl-apf/pkg/input"
)

// Mapping says where a pipeline stored the audit event's fields.
//
// The default is the event shipped as one JSON line (to /insert/jsonline
// with _time_field=stageTimestamp, or through the Elasticsearch bulk API):
// VictoriaLogs flattens nested objects with dots (user.username,
// objectRef.resource, responseStatus.code,
// annotations.apiserver.latency.k8s.io/total) and stores arrays and numbers
// as strings (user.groups is ["system:authenticated"], the code "429"),
// see docs/victorialogs/keyConcepts.md of VictoriaLogs.
type Mapping struct {
	// Prefix is put before every field name, for pipelines that wrap the
	// event ("log." for an event under a "log" key).
	Prefix string
	// Instance is the field that names the apiserver instance (a stream
	// field such as kubernetes.pod_name or host); "" when the events carry
	// none.
	Instance string
}

// The latency annotations the audit reader uses (package workload).
var annotationKeys = []string{
	"apiserver.latency.k8s.io/apf-queue-wait",
	"apiserver.latency.k8s.io/authentication",
	"apiserver.latency.k8s.io/impersonation",
	"apiserver.latency.k8s.io/total",
}

// eventFields are the audit event's fields the reconstruction reads, as
// VictoriaLogs flattens them.
var eventFields = append(workload.AuditFieldNames[workload.AuditKind:workload.AuditVerb+1:workload.AuditVerb+1],
	"user.username", "user.groups", "impersonatedUser.username", "impersonatedUser.groups",
	"userAgent", "sourceIPs",
	"objectRef.resource", "objectRef.namespace", "objectRef.name", "objectRef.apiGroup", "objectRef.apiVersion", "objectRef.subresource",
	"responseStatus.code", "requestReceivedTimestamp", "stageTimestamp",
)

func (m Mapping) f(name string) string { return m.Prefix + name }

// quote quotes a field name for LogsQL.
func quote(s string) string { return strconv.Quote(s) }

// fieldList is the LogsQL list of the fields to pull.
func (m Mapping) fieldList() string {
	names := []string{"_time"}
	for _, f := range eventFields {
		names = append(names, quote(m.f(f)))
	}
	for _, k := range annotationKeys {
		names = append(names, quote(m.f("annotations."+k)))
	}
	if m.Instance != "" {
		names = append(names, quote(m.Instance))
	}
	return strings.Join(names, ", ")
}

// Event rebuilds the audit event (one JSON line) from a row of the store's
// answer: a flat JSON object of strings. It returns the event and the
// row's instance. stageTimestamp is the row's _time when the pipeline made
// it the time field (then VictoriaLogs keeps no field of that name).
func (m Mapping) Event(row []byte, buf []byte) ([]byte, string, error) {
	ev, inst, _, err := m.event(row, buf, nil)
	return ev, inst, err
}

// event is Event, which also returns the event's auditID: by the row
// decoder (eventRow, reusing the scratch rd when not nil) where it takes
// the row, by encoding/json (eventByJSON) otherwise; the two give the same
// event, or the same refusal.
func (m Mapping) event(row []byte, buf []byte, rd *rowDecoder) ([]byte, string, string, error) {
	if rd == nil {
		rd = &rowDecoder{}
	}
	if ev, ok := rd.event(m, row, buf); ok {
		return ev, string(rd.val(rowInstance)), string(rd.val(workload.AuditID)), nil
	}
	return m.eventByJSON(row, buf)
}

// eventByJSON is Event by encoding/json: the row into a map, the event
// built as maps and marshalled.
func (m Mapping) eventByJSON(row []byte, buf []byte) ([]byte, string, string, error) {
	var flat map[string]string
	if err := json.Unmarshal(row, &flat); err != nil {
		return nil, "", "", fmt.Errorf("a row of the answer is not a JSON object of strings: %w", err)
	}
	get := func(name string) string { return flat[m.f(name)] }
	ev := map[string]any{}
	put := func(obj map[string]any, key, v string) {
		if v != "" {
			obj[key] = v
		}
	}
	for _, k := range []string{"kind", "apiVersion", "auditID", "stage", "requestURI", "verb", "userAgent", "requestReceivedTimestamp", "stageTimestamp"} {
		put(ev, k, get(k))
	}
	if ev["stageTimestamp"] == nil {
		put(ev, "stageTimestamp", flat["_time"])
	}
	// a pipeline may keep only the fields of the event, not its type
	if ev["kind"] == nil && ev["apiVersion"] == nil {
		ev["kind"], ev["apiVersion"] = "Event", "audit.k8s.io/v1"
	}
	user := func(prefix string) map[string]any {
		u := map[string]any{}
		put(u, "username", get(prefix+".username"))
		if g := get(prefix + ".groups"); g != "" {
			u["groups"] = stringList(g)
		}
		return u
	}
	ev["user"] = user("user")
	if iu := user("impersonatedUser"); iu["username"] != nil {
		ev["impersonatedUser"] = iu
	}
	if s := get("sourceIPs"); s != "" {
		ev["sourceIPs"] = stringList(s)
	}
	ref := map[string]any{}
	for _, k := range []string{"resource", "namespace", "name", "apiGroup", "apiVersion", "subresource"} {
		put(ref, k, get("objectRef."+k))
	}
	if len(ref) > 0 {
		ev["objectRef"] = ref
	}
	if c := get("responseStatus.code"); c != "" {
		n, err := strconv.Atoi(c)
		if err != nil {
			return nil, "", "", fmt.Errorf("event %s: responseStatus.code %q is not a number", get("auditID"), c)
		}
		ev["responseStatus"] = map[string]any{"code": n}
	}
	ann := map[string]any{}
	for _, k := range annotationKeys {
		put(ann, k, get("annotations."+k))
	}
	if len(ann) > 0 {
		ev["annotations"] = ann
	}
	b, err := json.Marshal(ev)
	if err != nil {
		return nil, "", "", err
	}
	return append(append(buf, b...), '\n'), flat[m.Instance], get("auditID"), nil
}

// stringList reads an array VictoriaLogs stored as its JSON text; any other
// value is a list of one.
func stringList(s string) []string {
	var out []string
	if strings.HasPrefix(s, "[") && json.Unmarshal([]byte(s), &out) == nil {
		return out
	}
	return []string{s}
}

// Source is the audit events of a window in the store.
type Source struct {
	Client  *Client
	Mapping Mapping
	// Filter is a LogsQL filter that selects the cluster or the stream
	// (--victorialogs-query); "" for every event.
	Filter string
	// Start and End are the window.
	Start, End time.Time
}

// timeFilter is the LogsQL filter of [start, end).
func timeFilter(start, end time.Time) string {
	return "_time:[" + start.UTC().Format(time.RFC3339Nano) + ", " + end.UTC().Format(time.RFC3339Nano) + ")"
}

// base is the filter of the window's completed requests.
func (s *Source) base(start, end time.Time) string {
	q := timeFilter(start, end) + " " + quote(s.Mapping.f("stage")) + ":in(ResponseComplete, Panic)"
	if s.Filter != "" {
		q += " (" + s.Filter + ")"
	}
	return q
}

// Totals are what the window holds.
type Totals struct {
	// Events are the completed requests; Rejected those answered 429.
	Events, Rejected int64
}

// Totals counts the window's requests and 429s in the store. It reads
// two columns only: it sized a pull of every event too once (pack_json
// over every row), which made it the heaviest query of a day's window,
// too slow for the store's default 30 s limit on a fleet's day.
func (s *Source) Totals(ctx context.Context) (Totals, error) {
	q := s.base(s.Start, s.End) + " | stats count() events, count() if (" + quote(s.Mapping.f("responseStatus.code")) + ":=429) rejected"
	var t Totals
	qerr := s.Client.Query(ctx, q, func(line []byte) error {
		var row map[string]string
		if e := json.Unmarshal(line, &row); e != nil {
			return fmt.Errorf("%s: the counts are not a JSON object: %w", s.Client.Describe(), e)
		}
		for _, f := range []struct {
			name string
			n    *int64
		}{{"events", &t.Events}, {"rejected", &t.Rejected}} {
			n, err := strconv.ParseFloat(row[f.name], 64)
			if err != nil {
				return fmt.Errorf("%s: the count %s %q is not a number", s.Client.Describe(), f.name, row[f.name])
			}
			*f.n = int64(n)
		}
		return nil
	})
	return t, qerr
}

// Window is a time range of pulled events and the instances they come
// from (nil: every instance).
type Window struct {
	Start, End time.Time
	Instances  []string
	// Rejected are the 429s counted in the store inside it.
	Rejected int64
}

// Windows finds the bursts of 429s in the store, counted by second (and
// by instance), joins those less than gap apart, and widens each by
// margin on both sides: the requests in flight and queued when the burst
// began, and those that held seats until it ended. Overlapping windows
// merge.
func (s *Source) Windows(ctx context.Context, gap, margin time.Duration) ([]Window, error) {
	by := "_time:1s"
	if s.Mapping.Instance != "" {
		by += ", " + quote(s.Mapping.Instance)
	}
	q := s.base(s.Start, s.End) + " " + quote(s.Mapping.f("responseStatus.code")) + ":=429 | stats by (" + by + ") count() n"
	type bucket struct {
		t    time.Time
		inst string
		n    int64
	}
	var bs []bucket
	err := s.Client.Query(ctx, q, func(line []byte) error {
		var row map[string]string
		if err := json.Unmarshal(line, &row); err != nil {
			return fmt.Errorf("%s: a count is not a JSON object: %w", s.Client.Describe(), err)
		}
		t, err := time.Parse(time.RFC3339Nano, row["_time"])
		if err != nil {
			return fmt.Errorf("%s: a count's _time %q is not a time", s.Client.Describe(), row["_time"])
		}
		n, err := strconv.ParseInt(row["n"], 10, 64)
		if err != nil {
			return fmt.Errorf("%s: a count %q is not a number", s.Client.Describe(), row["n"])
		}
		bs = append(bs, bucket{t: t, inst: row[s.Mapping.Instance], n: n})
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(bs, func(i, j int) bool {
		if bs[i].inst != bs[j].inst {
			return bs[i].inst < bs[j].inst
		}
		return bs[i].t.Before(bs[j].t)
	})
	// the bursts of each instance
	var ws []Window
	for i := 0; i < len(bs); {
		w := Window{Start: bs[i].t, End: bs[i].t.Add(time.Second), Rejected: bs[i].n}
		j := i + 1
		for ; j < len(bs) && bs[j].inst == bs[i].inst && bs[j].t.Sub(w.End) < gap; j++ {
			w.End, w.Rejected = bs[j].t.Add(time.Second), w.Rejected+bs[j].n
		}
		if s.Mapping.Instance != "" {
			w.Instances = []string{bs[i].inst}
		}
		w.Start, w.End = maxTime(w.Start.Add(-margin), s.Start), minTime(w.End.Add(margin), s.End)
		ws = append(ws, w)
		i = j
	}
	return mergeWindows(ws), nil
}

// mergeWindows joins overlapping windows, with their instances.
func mergeWindows(ws []Window) []Window {
	sort.Slice(ws, func(i, j int) bool { return ws[i].Start.Before(ws[j].Start) })
	var out []Window
	for _, w := range ws {
		if n := len(out); n > 0 && !w.Start.After(out[n-1].End) {
			last := &out[n-1]
			last.End = maxTime(last.End, w.End)
			last.Rejected += w.Rejected
			for _, in := range w.Instances {
				if !slices.Contains(last.Instances, in) {
					last.Instances = append(last.Instances, in)
				}
			}
			slices.Sort(last.Instances)
			continue
		}
		out = append(out, w)
	}
	return out
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// eventsQuery is the query of the events of w, in time order.
func (s *Source) eventsQuery(w Window) string {
	q := s.base(w.Start, w.End)
	if len(w.Instances) > 0 {
		vals := make([]string, len(w.Instances))
		for i, in := range w.Instances {
			vals[i] = quote(in)
		}
		q += " " + quote(s.Mapping.Instance) + ":in(" + strings.Join(vals, ", ") + ")"
	}
	return q + " | fields " + s.Mapping.fieldList() + " | sort by (_time)"
}

// Pulled counts what Reader pulled.
type Pulled struct {
	Events int64
	// Bad counts rows that could not be made an event (the first in
	// FirstBad).
	Bad      int64
	FirstBad string
}

// Reader pulls the events of ws, in time order, and reads them with the
// audit event reader of package workload (as a file would be read), the
// instance of each request set from Mapping.Instance. name names the
// input in the reader's messages; stats receives the reader's counts.
func (s *Source) Reader(ctx context.Context, ws []Window, name string, opts input.Options, stats *workload.Stats, pulled *Pulled) workload.Reader {
	pr, pw := io.Pipe()
	inst := map[string]string{}
	var mu sync.Mutex
	go func() {
		var buf []byte
		var err error
		var rd rowDecoder
		for _, w := range ws {
			err = s.Client.Query(ctx, s.eventsQuery(w), func(row []byte) error {
				ev, in, auditID, e := s.Mapping.event(row, buf[:0], &rd)
				if e != nil {
					pulled.Bad++
					if pulled.FirstBad == "" {
						pulled.FirstBad = e.Error()
					}
					return nil
				}
				buf = ev
				pulled.Events++
				if s.Mapping.Instance != "" {
					mu.Lock()
					inst[auditID] = in
					mu.Unlock()
				}
				_, e = pw.Write(ev)
				return e
			})
			if err != nil {
				break
			}
		}
		pw.CloseWithError(err)
	}()
	r := input.NewAuditReader(pr, name, opts, stats)
	if s.Mapping.Instance == "" {
		return r
	}
	return &instanceReader{r: r, mu: &mu, inst: inst}
}

// instanceReader sets each request's instance, which the pulling goroutine
// records (by audit ID) before it writes the event itself.
type instanceReader struct {
	r    workload.Reader
	mu   *sync.Mutex
	inst map[string]string
}

func (ir *instanceReader) Next(r *workload.Request) error {
	if err := ir.r.Next(r); err != nil {
		return err
	}
	ir.mu.Lock()
	if in, ok := ir.inst[r.AuditID]; ok {
		r.Instance = in
		delete(ir.inst, r.AuditID)
	}
	ir.mu.Unlock()
	return nil
}

// RawQuery is the query of every event of the window with the fields the
// reconstruction reads: what a tool that pulls everything would pull.
func (s *Source) RawQuery() string {
	return s.base(s.Start, s.End) + " | fields " + s.Mapping.fieldList()
}
