package input

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
)

// Detect looks at the first non-blank line of r (without consuming it) and
// returns the format and a reader that still yields all of r.
func Detect(r io.Reader) (workload.Format, io.Reader, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	for n := 1 << 12; ; n *= 2 {
		buf, err := br.Peek(n)
		if len(buf) > 0 {
			if f, ok := detectPrefix(buf, err != nil); ok {
				return f, br, nil
			}
		}
		if err != nil {
			if len(bytes.TrimSpace(buf)) == 0 {
				return workload.FormatJSONL, br, nil // empty input: any format yields nothing
			}
			if errors.Is(err, io.EOF) || errors.Is(err, bufio.ErrBufferFull) {
				return workload.FormatHTTPLog, br, nil
			}
			return "", nil, fmt.Errorf("detecting the workload format: %w", err)
		}
		if n >= 1<<16 {
			return workload.FormatHTTPLog, br, nil
		}
	}
}

// detectPrefix decides from the first non-blank line, if it is complete.
func detectPrefix(buf []byte, final bool) (workload.Format, bool) {
	rest := buf
	for len(rest) > 0 {
		i := bytes.IndexByte(rest, '\n')
		var line []byte
		if i < 0 {
			if !final {
				return "", false
			}
			line, rest = rest, nil
		} else {
			line, rest = rest[:i], rest[i+1:]
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		if line[0] != '{' {
			return workload.FormatHTTPLog, true
		}
		switch {
		case bytes.Contains(line, []byte(`"kind":"Event"`)) || bytes.Contains(line, []byte(`"auditID"`)) && bytes.Contains(line, []byte(`"stage"`)):
			return workload.FormatAudit, true
		case bytes.Contains(line, []byte(`"msg":"HTTP"`)):
			return workload.FormatHTTPLog, true
		default:
			return workload.FormatJSONL, true
		}
	}
	return "", false
}

// NewReader detects the format of r and returns the matching reader. r may
// be gzipped, and audit events may come wrapped (see detectWrapped).
func NewReader(r io.Reader, name string, opts Options, stats *workload.Stats) (workload.Reader, workload.Format, error) {
	zr, err := gunzipped(r, name, nil)
	if err != nil {
		return nil, "", err
	}
	info, br, err := detectInput(zr)
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", name, err)
	}
	if stats == nil {
		stats = &workload.Stats{}
	}
	return newInputReader(info, br, name, opts, stats), info.format, nil
}

// opened is what OpenFiles holds behind a workload.Files (its Opened): the
// files, the goroutines that read them ahead and the join.
type opened struct {
	join  *joined
	files []*os.File
	// prefetchers read groups of inputs in goroutines of their own; the
	// inputs of each name instances in maps of their own (named, and the
	// inputs that named each in namedBy), merged into the Files' Named and
	// NamedIn once read (Settle)
	prefetchers []*workload.Prefetched
	named       []map[string]bool
	namedBy     []map[string][]string
	// stop ends the goroutines that decompress gzipped inputs ahead
	// (gunzipped), at Close
	stop     chan struct{}
	stopOnce sync.Once
}

// Settle merges the instances the inputs named into f.Named, and the
// inputs that named each into f.NamedIn; once the files have been read.
func (o *opened) Settle(f *workload.Files) {
	for _, m := range o.named {
		for n := range m {
			f.Named[n] = true
		}
	}
	for _, m := range o.namedBy {
		for n, ins := range m {
			for _, in := range ins {
				if !slices.Contains(f.NamedIn[n], in) {
					f.NamedIn[n] = append(f.NamedIn[n], in)
				}
			}
		}
	}
}

// Resolve is the instance of the audit events most httplog lines of
// instance name were joined to, if any were.
func (o *opened) Resolve(name string) (string, bool) {
	if o.join == nil {
		return "", false
	}
	best, n := name, int64(0)
	for k, cp := range o.join.pairs {
		if c := *cp; k[0] == name && (c > n || c == n && k[1] < best) {
			best, n = k[1], c
		}
	}
	return best, n > 0
}

// Close stops the goroutines and closes the files.
func (o *opened) Close() error {
	for _, p := range o.prefetchers {
		p.Close()
	}
	if o.stop != nil {
		o.stopOnce.Do(func() { close(o.stop) })
	}
	var errs []error
	for _, fh := range o.files {
		errs = append(errs, fh.Close())
	}
	return errors.Join(errs...)
}

// OpenFiles opens the workload files, detects their formats and returns one
// Reader over all of them. "-" reads standard input.
func OpenFiles(paths []string, opts Options) (*workload.Files, error) {
	if len(paths) == 0 {
		return nil, errors.New("no workload file given: pass --workload FILE (httplog lines, audit events or the JSONL format)")
	}
	fs := &workload.Files{Stats: map[string]*workload.Stats{}, Formats: map[string]workload.Format{}, Named: map[string]bool{}, NamedIn: map[string][]string{}}
	op := &opened{stop: make(chan struct{})}
	fs.Opened = op
	type input struct {
		name string
		info inputInfo
		r    io.Reader
		// given is the path as given, of which this is a file (a
		// directory's, or the path itself)
		given string
	}
	var inputs []input
	for _, p := range paths {
		// a directory is its files; a gzipped file is read decompressed
		ins, err := expandPath(p, &op.files, op.stop)
		if err != nil {
			fs.Close()
			return nil, err
		}
		for _, in := range ins {
			info, br, err := detectInput(in.r)
			if err != nil {
				fs.Close()
				return nil, fmt.Errorf("%s: %w", in.name, err)
			}
			inputs = append(inputs, input{in.name, info, br, p})
		}
	}
	// each file defaults to an instance of its own (a directory's files
	// too); a flag naming a directory names each of its files
	keys := make([]string, len(inputs))
	for i, in := range inputs {
		keys[i] = in.name
		if in.given == "-" {
			keys[i] = "-"
		}
	}
	fs.Instances = fileInstances(keys, opts.Instances)
	for i, in := range inputs {
		if n := opts.Instances.ByPath[in.given]; n != "" && opts.Instances.All == "" {
			fs.Instances[i].Instance, fs.Instances[i].Why = n, workload.WhyPathFlag
		}
	}
	// klog text headers have no year: take it from the audit log when one is
	// given, so that the two line up for the join
	if opts.Year == 0 {
		for _, in := range inputs {
			if in.info.format == workload.FormatAudit || workload.Wrapped(in.info.format) {
				if y, ok := firstYear(in.info, in.r.(*bufio.Reader), in.name); ok {
					opts.Year = y
				}
				break
			}
		}
	}
	// httplog and audit inputs are read in two goroutines when they are
	// joined (and joined in a third), and all inputs in one otherwise, each
	// apart from the caller's (prefetched)
	join := false
	for _, in := range inputs {
		if in.info.format == workload.FormatHTTPLog {
			join = true
		}
	}
	if join {
		join = false
		for _, in := range inputs {
			if f := in.info.format; f == workload.FormatAudit || workload.Wrapped(f) {
				join = true
			}
		}
	}
	groupOf := func(f workload.Format) int {
		switch {
		case !join:
			return 0
		case f == workload.FormatHTTPLog:
			return 0
		case f == workload.FormatAudit || workload.Wrapped(f):
			return 1
		}
		return 2
	}
	op.named = []map[string]bool{{}, {}, {}}
	op.namedBy = []map[string][]string{{}, {}, {}}
	ahead := func(r workload.Reader) workload.Reader {
		p := workload.Prefetch(r)
		op.prefetchers = append(op.prefetchers, p)
		return p
	}
	// the inputs merged together are each parsed in a goroutine of their
	// own (unless tuning.mergedInline), the instances they name counted as before, in
	// the goroutine that merges them
	merged := map[int]int{}
	for _, in := range inputs {
		merged[groupOf(in.info.format)]++
	}
	var logs, audits, others []workload.Reader
	for i, in := range inputs {
		st := &workload.Stats{}
		fs.Stats[in.name], fs.Formats[in.name] = st, in.info.format
		fi := fs.Instances[i]
		g := groupOf(in.info.format)
		ir := newInputReader(in.info, in.r, in.name, opts, st)
		if join && g == 1 {
			// the join takes only the audit events' identity
			if d, ok := ir.(*mustYield).Reader.(interface{ dropSource() }); ok {
				d.dropSource()
			}
		}
		if !opts.tuning.mergedInline && merged[g] > 1 {
			ir = ahead(ir)
		}
		rd := &instanced{Reader: ir, name: fi.Instance, force: fi.Why == workload.WhyFlag || fi.Why == workload.WhyPathFlag, named: op.named[g],
			base: filepath.Base(in.name), namedIn: op.namedBy[g]}
		switch f := in.info.format; {
		case f == workload.FormatHTTPLog:
			logs = append(logs, rd)
		case f == workload.FormatAudit || workload.Wrapped(f):
			audits = append(audits, rd)
		default:
			others = append(others, rd)
		}
	}
	var all []workload.Reader
	if join {
		fs.Join = &workload.JoinStats{}
		op.join = Join(ahead(workload.Merge(logs...)), ahead(workload.Merge(audits...)), 0, fs.Join).(*joined)
		all = append(all, op.join)
		all = append(all, others...)
		// the join too runs apart from the caller, which reconstructs
		fs.Reader = ahead(workload.Merge(all...))
		return fs, nil
	}
	all = append(all, logs...)
	all = append(all, audits...)
	all = append(all, others...)
	fs.Reader = ahead(workload.Merge(all...))
	return fs, nil
}

type joined struct {
	logs, audits workload.Reader
	// ref is audits where it gives its requests by reference
	ref   workload.RefReader
	slack time.Duration
	// pending holds, by audit ID, the identity of the audit event read
	// last with that ID; it is pending (present) until an httplog line
	// takes it or it is evicted. An entry stays in the map while order
	// refers to it, present or not, so that the eviction reads it through
	// order's pointer, not by a lookup of its ID (most of which, of IDs
	// already taken, would miss); npresent counts the present ones.
	pending  map[string]*pendingID
	npresent int
	// order[first:] has an entry per audit event held, in arrival order,
	// for eviction (the evicted ones are cleared, their room reused)
	order []*pendingID
	first int
	free  []*pendingID // entries out of the map, to reuse
	// head is the audit event read last, not yet held (haveHead): the
	// audit reader's own (workload.RefReader), or headBuf
	head      *workload.Request
	headBuf   workload.Request
	haveHead  bool
	auditDone bool
	stats     *workload.JoinStats
	// pairs counts the httplog lines of an instance (their file's) joined
	// to audit events of an instance, by the two (instances.go)
	pairs map[[2]string]*int64
	// lastPair is the pair counted last, and lastCount its count
	lastPair  [2]string
	lastCount *int64
	// ordered puts the joined requests back in arrival order: a request
	// joined to its audit event takes the event's arrival, earlier than
	// its httplog line's by up to slack
	ordered      *reorder
	orderedStats workload.Stats
}

// pendingID is an audit ID's entry in a join's pending map.
type pendingID struct {
	id string
	identity
	present bool
	refs    int // the entries of order that point to it
}

// identity is what a join takes from an audit event.
type identity struct {
	arrival                    time.Time
	latency                    time.Duration
	user, instance             string
	groups                     []string
	queueWait, preAPF, total   time.Duration
	hasQueueWait, hasLatencies bool
}

// Join adds the identity of audit events to httplog requests with the same
// audit ID. Both inputs must be in arrival order; audit events are held for
// slack (default 10 s) around the httplog arrival, so memory follows the
// requests in that window: the two arrivals of one request differ by the
// time between the audit filter and the logging filter, microseconds to
// milliseconds. Audit events without an httplog line are dropped and
// counted.
//
// A joined request arrives when its audit event says
// (requestReceivedTimestamp), where that is earlier than its httplog line
// says. Both read the same received timestamp (httplog's latency is
// measured from it), but the line's time is taken when the line is
// written, after the latency was measured: on a server short of CPU, a
// goroutine can stall between the two, for tens of milliseconds, and the
// line's time less its latency is then that much late. The audit event's
// time is truncated to the microsecond, the line's too, so where the two
// differ by less, they are the same. The joined requests are put back in
// arrival order over slack, the most a matched event can precede its line.
func Join(httplog, audit workload.Reader, slack time.Duration, stats *workload.JoinStats) workload.Reader {
	if slack <= 0 {
		slack = 10 * time.Second
	}
	if stats == nil {
		stats = &workload.JoinStats{}
	}
	ref, _ := audit.(workload.RefReader)
	j := &joined{logs: httplog, audits: audit, ref: ref, slack: slack, pending: map[string]*pendingID{}, stats: stats}
	j.ordered = &reorder{src: j.match, window: slack, q: arrivalQueue{maxHeld: DefaultMaxHeld}, stats: &j.orderedStats}
	return j
}

func (j *joined) Next(r *workload.Request) error {
	err := j.ordered.Next(r)
	j.stats.Clamped = j.orderedStats.Clamped
	return err
}

// match reads the next httplog request and joins it to its audit event;
// it returns the request's httplog arrival, which orders the requests
// read (ordered's horizon).
func (j *joined) match(r *workload.Request) (time.Time, error) {
	if err := j.logs.Next(r); err != nil {
		if errors.Is(err, io.EOF) {
			j.stats.AuditOnly += int64(j.npresent)
			// the map keeps its buckets when cleared: drop it
			j.pending, j.order, j.first, j.free, j.npresent = nil, nil, 0, nil, 0
			// the audit events after the last httplog line have none either:
			// count them too, so that none is dropped unreported
			if j.haveHead {
				j.stats.AuditOnly++
				j.haveHead = false
			}
			for !j.auditDone {
				switch _, err := j.nextAudit(); {
				case errors.Is(err, io.EOF):
					j.auditDone = true
				case err != nil:
					return time.Time{}, err
				default:
					j.stats.AuditOnly++
				}
			}
		}
		return time.Time{}, err
	}
	// read audit events up to r.Arrival+slack
	for !j.auditDone {
		if !j.haveHead {
			a, err := j.nextAudit()
			if errors.Is(err, io.EOF) {
				j.auditDone = true
				break
			}
			if err != nil {
				return time.Time{}, err
			}
			j.head, j.haveHead = a, true
		}
		if j.head.Arrival.After(r.Arrival.Add(j.slack)) {
			break
		}
		if a := j.head; a.AuditID != "" {
			p := j.pending[a.AuditID]
			if p == nil {
				if n := len(j.free); n > 0 {
					p, j.free = j.free[n-1], j.free[:n-1]
				} else {
					p = new(pendingID)
				}
				p.id = a.AuditID
				j.pending[a.AuditID] = p
			}
			if !p.present {
				p.present = true
				j.npresent++
			}
			p.identity = identity{arrival: a.Arrival, latency: a.Latency, user: a.User, instance: a.Instance, groups: a.Groups,
				queueWait: a.QueueWait, preAPF: a.PreAPF, total: a.TotalLatency, hasQueueWait: a.HasQueueWait, hasLatencies: a.HasLatencyAnnotations}
			p.refs++
			if len(j.order) == cap(j.order) && j.first >= len(j.order)/2 {
				// the room of the evicted half, rather than a larger array
				n := copy(j.order, j.order[j.first:])
				clear(j.order[n:])
				j.order, j.first = j.order[:n], 0
			}
			j.order = append(j.order, p)
		}
		j.haveHead = false
	}
	// evict events that arrived long before this request
	for j.first < len(j.order) {
		p := j.order[j.first]
		if p.present && !p.arrival.Before(r.Arrival.Add(-j.slack)) {
			break
		}
		if p.present {
			j.take(p)
			j.stats.AuditOnly++
		}
		j.order[j.first] = nil
		j.first++
		if p.refs--; p.refs == 0 && !p.present {
			delete(j.pending, p.id)
			*p = pendingID{}
			j.free = append(j.free, p)
		}
	}
	logged := r.Arrival
	r.AuditLatency, r.HasAuditLatency = 0, false
	if p := j.pending[r.AuditID]; p != nil && p.present && r.AuditID != "" {
		a := p.identity
		// held events can be older than slack where an audit ID repeats
		// (an entry of order is evicted by its ID's latest event)
		if a.arrival.Before(r.Arrival) && !a.arrival.Before(r.Arrival.Add(-j.slack)) {
			r.Arrival = a.arrival
			if logged.Sub(a.arrival) > time.Microsecond {
				j.stats.Earlier++
			}
		}
		j.take(p)
		if end := a.arrival.Add(a.latency); !end.Before(r.Arrival) {
			r.AuditLatency, r.HasAuditLatency = end.Sub(r.Arrival), true
		}
		r.User, r.Groups, r.UserKnown = a.user, a.groups, true
		r.QueueWait, r.HasQueueWait = a.queueWait, a.hasQueueWait
		r.PreAPF, r.TotalLatency, r.HasLatencyAnnotations = a.preAPF, a.total, a.hasLatencies
		j.countPair(r.Instance, a.instance)
		r.Instance = a.instance
		j.stats.Matched++
	} else {
		j.stats.Unmatched++
	}
	return logged, nil
}

// nextAudit reads the next audit event, by reference where the reader
// gives one: the join takes only its identity.
func (j *joined) nextAudit() (*workload.Request, error) {
	if j.ref != nil {
		return j.ref.NextRef()
	}
	err := j.audits.Next(&j.headBuf)
	return &j.headBuf, err
}

// take marks p's identity taken, no longer pending (its entry leaves the
// map when order no longer refers to it).
func (j *joined) take(p *pendingID) {
	p.present = false
	p.identity = identity{}
	j.npresent--
}

// firstAuditYear peeks at the first audit event of br and returns the year of
// its requestReceivedTimestamp.
func firstAuditYear(br *bufio.Reader) (int, bool) {
	buf, _ := br.Peek(br.Size())
	for _, line := range bytes.Split(buf, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		var ev struct {
			RequestReceivedTimestamp time.Time `json:"requestReceivedTimestamp"`
		}
		if json.Unmarshal(line, &ev) != nil || ev.RequestReceivedTimestamp.IsZero() {
			return 0, false
		}
		return ev.RequestReceivedTimestamp.Year(), true
	}
	return 0, false
}
