package input

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/kubectl-apf/kubectl-apf/internal/grafana"
	"github.com/kubectl-apf/kubectl-apf/internal/textfmt"
	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
)

// inputFile is one input after a path is expanded: a file of a
// directory, decompressed when gzipped.
type inputFile struct {
	name string
	r    io.Reader
}

// expandPath opens p: standard input for "-", every regular file under a
// directory (in name order, hidden files and directories left out), and
// the decompressed contents of a gzipped file, told by its magic bytes.
// The files opened are appended to *open.
func expandPath(p string, open *[]*os.File, stop <-chan struct{}) ([]inputFile, error) {
	if p == "-" {
		r, err := gunzipped(os.Stdin, "stdin", stop)
		if err != nil {
			return nil, err
		}
		return []inputFile{{"stdin", r}}, nil
	}
	fh, err := os.Open(p)
	if err != nil {
		return nil, fmt.Errorf("opening workload: %w", err)
	}
	fi, err := fh.Stat()
	if err != nil {
		fh.Close()
		return nil, fmt.Errorf("opening workload: %w", err)
	}
	var names []string
	if !fi.IsDir() {
		*open = append(*open, fh)
		r, err := gunzipped(fh, p, stop)
		if err != nil {
			return nil, err
		}
		return []inputFile{{p, r}}, nil
	}
	fh.Close()
	{
		err := filepath.WalkDir(p, func(q string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if q != p && strings.HasPrefix(d.Name(), ".") {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
			if d.Type().IsRegular() {
				names = append(names, q)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("reading the workload directory: %w", err)
		}
		if len(names) == 0 {
			return nil, fmt.Errorf("%s: a directory without files", p)
		}
		slices.Sort(names)
	}
	var out []inputFile
	for _, n := range names {
		fh, err := os.Open(n)
		if err != nil {
			return nil, fmt.Errorf("opening workload: %w", err)
		}
		*open = append(*open, fh)
		r, err := gunzipped(fh, n, stop)
		if err != nil {
			return nil, err
		}
		out = append(out, inputFile{n, r})
	}
	return out, nil
}

// gunzipped returns r decompressed when it starts with gzip's magic
// bytes, r (buffered) otherwise. With a stop channel, the stream is
// decompressed in a goroutine of its own, a few chunks ahead of its
// reader (gzipAhead), until stop is closed: each file's decompression then
// runs on a core of its own, beside the parsing.
func gunzipped(r io.Reader, name string, stop <-chan struct{}) (io.Reader, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	magic, _ := br.Peek(2)
	if len(magic) < 2 || magic[0] != 0x1f || magic[1] != 0x8b {
		return br, nil
	}
	zr, err := gzip.NewReader(br)
	if err != nil {
		return nil, fmt.Errorf("%s: not a readable gzip file: %w", name, err)
	}
	g := &gzipReader{zr: zr, name: name}
	if stop == nil {
		return g, nil
	}
	return &gzipAhead{src: g, ch: make(chan gzipChunk, gzipAheadChunks), free: make(chan []byte, gzipAheadChunks+1), stop: stop}, nil
}

// gzipReader says, on a gzip stream cut short or corrupt, which file it
// is.
type gzipReader struct {
	zr   *gzip.Reader
	name string
}

func (g *gzipReader) Read(p []byte) (int, error) {
	n, err := g.zr.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			err = fmt.Errorf("the gzip file is cut short (truncated): %w", err)
		} else {
			err = fmt.Errorf("the gzip file is corrupt: %w", err)
		}
	}
	return n, err
}

// gzipAhead reads src in a goroutine of its own, started by the first
// Read, in chunks of gzipChunkBytes, at most gzipAheadChunks ahead of the
// reader (memory: gzipAheadChunks+2 chunks). It yields the same bytes and
// the same error at the end as src. The goroutine ends at the end of src,
// or when stop is closed.
type gzipAhead struct {
	src     io.Reader
	ch      chan gzipChunk
	free    chan []byte
	stop    <-chan struct{}
	started bool
	cur     []byte
	off     int
	err     error
}

type gzipChunk struct {
	b   []byte
	err error
}

const (
	gzipChunkBytes  = 256 << 10
	gzipAheadChunks = 4
)

func (g *gzipAhead) Read(p []byte) (int, error) {
	for {
		if g.off < len(g.cur) {
			n := copy(p, g.cur[g.off:])
			g.off += n
			return n, nil
		}
		if g.err != nil {
			return 0, g.err
		}
		if !g.started {
			g.started = true
			go g.run()
		}
		if g.cur != nil {
			select {
			case g.free <- g.cur[:0]:
			default:
			}
		}
		c := <-g.ch
		g.cur, g.off, g.err = c.b, 0, c.err
	}
}

func (g *gzipAhead) run() {
	for {
		var b []byte
		select {
		case b = <-g.free:
		default:
			b = make([]byte, 0, gzipChunkBytes)
		}
		var err error
		for len(b) < cap(b) && err == nil {
			var n int
			n, err = g.src.Read(b[len(b):cap(b)])
			b = b[:len(b)+n]
		}
		select {
		case g.ch <- gzipChunk{b, err}:
		case <-g.stop:
			return
		}
		if err != nil {
			return
		}
	}
}

// inputInfo is what detection found at the start of an input.
type inputInfo struct {
	format workload.Format
	layout layout
	// first is the first non-blank line, clipped, for messages
	first []byte
	// keys are the first keys of a JSON document's first record (or of
	// the document), for messages
	keys []string
}

// firstRecordKeys lists the first keys of the first record of the JSON
// document that starts buf, or of the document itself when its first
// record was not peeked.
func firstRecordKeys(buf []byte) []string {
	ds := newDocStream(bytes.NewReader(buf), "", len(buf)+1)
	if rec, err := ds.next(); err == nil && len(rec) > 0 {
		if rec[0] == '[' {
			if row, ok := insightsFields(rec); ok {
				keys := make([]string, 0, len(row))
				for _, f := range row {
					keys = append(keys, f.Field)
				}
				return keys
			}
		}
		if keys := objectKeys(rec, 8); len(keys) > 0 {
			return keys
		}
	}
	return objectKeysLoose(bytes.TrimLeft(buf, " \t\r\n\ufeff["), 8)
}

// detectInput detects the format of r, wrapped formats first, and
// returns a reader that still yields all of r.
func detectInput(r io.Reader) (inputInfo, *bufio.Reader, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	buf, err := br.Peek(1 << 16)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, bufio.ErrBufferFull) {
		return inputInfo{}, nil, fmt.Errorf("detecting the workload format: %w", err)
	}
	// the first line is kept apart from br's buffer, which reading reuses
	info := inputInfo{first: bytes.Clone(firstLine(buf))}
	if grafana.MayBe(buf) {
		// a Grafana dashboard, bare or in a ConfigMap, is named whole,
		// not read as lines of a log
		whole, rerr := io.ReadAll(io.LimitReader(br, maxDashboard))
		if rerr != nil {
			return inputInfo{}, nil, fmt.Errorf("detecting the workload format: %w", rerr)
		}
		if what, ok := grafana.Describe(whole); ok {
			return inputInfo{}, nil, dashboardError(what)
		}
		br = bufio.NewReaderSize(io.MultiReader(bytes.NewReader(whole), br), 1<<16)
		buf, err = br.Peek(1 << 16)
		if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, bufio.ErrBufferFull) {
			return inputInfo{}, nil, fmt.Errorf("detecting the workload format: %w", err)
		}
	}
	if f, lay, ok := detectWrapped(buf, err != nil && errors.Is(err, io.EOF)); ok {
		info.format, info.layout = f, lay
		if lay == layoutDoc {
			info.keys = firstRecordKeys(buf)
		}
		return info, br, nil
	}
	f, dr, err := Detect(br)
	if err != nil {
		return inputInfo{}, nil, err
	}
	info.format = f
	return info, dr.(*bufio.Reader), nil
}

// maxDashboard bounds what is read whole of an input that may be a Grafana
// dashboard: the largest dashboards shipped are a few hundred KiB.
const maxDashboard = 16 << 20

// dashboardError refuses a Grafana dashboard given as a workload (what is
// grafana.Describe's): it holds queries, not requests, and the refusal
// says what to give instead.
func dashboardError(what string) error {
	return fmt.Errorf("%s, not a workload: a dashboard holds PromQL queries, not requests: give the apiserver's audit log (audit.k8s.io events) or its httplog (the \"HTTP\" lines of -v=3); for the metrics its panels query, read the Prometheus with kubectl apf explain 429, top levels or capacity --prometheus URL", what)
}

func firstLine(buf []byte) []byte {
	for len(buf) > 0 {
		line, rest, _ := bytes.Cut(buf, []byte("\n"))
		buf = rest
		if line = bytes.TrimSpace(line); len(line) > 0 {
			if len(line) > 4096 {
				line = line[:4096]
			}
			return line
		}
	}
	return nil
}

// mustYield is the reader of one input, which it fails at its end when no
// request came of it: an input with nothing usable in it is an error
// that names what was seen, never an empty answer.
type mustYield struct {
	workload.Reader
	name  string
	info  inputInfo
	stats *workload.Stats
	err   error
}

func (m *mustYield) Next(r *workload.Request) error {
	if m.err != nil {
		return m.err
	}
	err := m.Reader.Next(r)
	if errors.Is(err, io.EOF) && m.stats.Records == 0 {
		m.err = &NothingRead{Name: m.name, why: m.emptyReason()}
		return m.err
	}
	return err
}

// NothingRead is the error of an input that gave no request: its text
// says what the input holds and what was skipped, so that a caller adds
// no note of the same skipped lines to it.
type NothingRead struct {
	// Name is the input's
	Name string
	why  string
}

func (e *NothingRead) Error() string { return e.why }

// emptyReason says what an input that yielded no request holds.
func (m *mustYield) emptyReason() string {
	st := m.stats
	if w, ok := m.Reader.(*wrapReader); ok && w.gke != nil {
		return fmt.Sprintf("%s: %s: %s; what the entries tell: %s", m.name, formatNoun(workload.FormatGKE), gkeLacks, w.gke.describe())
	}
	if st.Lines == 0 && len(m.info.first) > 0 && (workload.Wrapped(m.info.format) || m.info.layout == layoutDoc) {
		return fmt.Sprintf("%s: %s that holds no record", m.name, formatNoun(m.info.format))
	}
	if st.Lines == 0 || len(m.info.first) == 0 {
		return fmt.Sprintf("%s: the file is empty: no audit event, httplog line or workload record in it", m.name)
	}
	reasons := append(st.MalformedReasons(), st.SkippedReasons()...)
	why := ""
	if len(reasons) > 0 {
		why = ": " + strings.Join(reasons, ", ")
	}
	first := ""
	if len(st.FirstMalformed) > 0 {
		first = " (first: " + st.FirstMalformed[0] + ")"
	}
	keys := ""
	if len(m.info.keys) > 0 {
		keys = " (first record's keys: " + strings.Join(m.info.keys, ", ") + ")"
	}
	switch f := m.info.format; {
	case f == workload.FormatJSON:
		return fmt.Sprintf("%s: JSON whose records are not audit events, nor the records of a cloud's export or a log pipeline that hold them%s", m.name, keys)
	case f == workload.FormatAudit:
		if st.Malformed == 0 && st.Skipped > 0 {
			return fmt.Sprintf("%s: its %d audit %s %s of stages other than ResponseComplete and Panic, which a replay needs (does the audit policy omit them?)", m.name, st.Skipped, textfmt.Plural(st.Skipped, "event", "events"), textfmt.Plural(st.Skipped, "is", "are all"))
		}
		return fmt.Sprintf("%s: no audit event in it could be read%s%s", m.name, why, first)
	case f == workload.FormatJSONL:
		if keys := objectKeys(m.info.first, 8); len(keys) > 0 {
			return fmt.Sprintf("%s: JSON lines that are not audit events, httplog lines or workload records (first line's keys: %s)", m.name, strings.Join(keys, ", "))
		}
		return fmt.Sprintf("%s: no line is an audit event, an httplog line or a workload record%s%s", m.name, why, first)
	case workload.Wrapped(f):
		return fmt.Sprintf("%s: %s whose records hold no audit event that can be replayed%s%s", m.name, formatNoun(f), why, first)
	}
	if st.Malformed > 0 {
		return fmt.Sprintf("%s: none of its %d %s could be read as a request%s%s", m.name, st.Lines, textfmt.Plural(st.Lines, "line", "lines"), why, first)
	}
	return fmt.Sprintf("%s: no line is an httplog \"HTTP\" line, an audit event or a record of a log wrapper this reads (first line: %q)", m.name, clip(m.info.first, 100))
}

// newInputReader returns the reader of one detected input.
func newInputReader(info inputInfo, r io.Reader, name string, opts Options, st *workload.Stats) workload.Reader {
	var rd workload.Reader
	switch f := info.format; {
	case workload.Wrapped(f) || info.layout == layoutDoc:
		// a cloud's or a pipeline's records, or JSON laid out otherwise
		// than one object a line (audit events pretty-printed, in an
		// array, one after the other)
		rd = newWrapReader(r, name, f, info.layout, opts, st)
	case f == workload.FormatAudit:
		rd = NewAuditReader(r, name, opts, st)
	case f == workload.FormatJSONL:
		rd = NewJSONLReader(r, name, opts, st)
	default:
		rd = NewHTTPLogReader(r, name, opts, st)
	}
	return &mustYield{Reader: rd, name: name, info: info, stats: st}
}

// firstYear is the year of the first audit event of an input (raw or
// wrapped), peeked at without consuming it.
func firstYear(info inputInfo, br *bufio.Reader, name string) (int, bool) {
	if info.format == workload.FormatAudit && info.layout != layoutDoc {
		return firstAuditYear(br)
	}
	buf, _ := br.Peek(br.Size())
	rd := newWrapReader(bytes.NewReader(buf), name, info.format, info.layout, Options{Lenient: true}, nil).(*wrapReader)
	for range 64 {
		var r workload.Request
		if _, err := rd.read(&r); err != nil {
			return 0, false
		}
		if !r.Arrival.IsZero() {
			return r.Arrival.Year(), true
		}
	}
	return 0, false
}

// InputYear is the year of the input at path (a file, gzipped or not, or a
// directory's files) when its times carry it: the first audit event's, or
// the first request of a wrapped input (a cloud's or a pipeline's record,
// a container runtime's line), as OpenFiles takes it. ok is false for
// other inputs (an httplog's klog header has no year), an unreadable one,
// and standard input.
func InputYear(path string) (year int, ok bool) {
	if path == "" || path == "-" {
		return 0, false
	}
	var open []*os.File
	defer func() {
		for _, f := range open {
			f.Close()
		}
	}()
	ins, err := expandPath(path, &open, nil)
	if err != nil {
		return 0, false
	}
	for _, in := range ins {
		info, br, err := detectInput(in.r)
		if err != nil || info.format != workload.FormatAudit && !workload.Wrapped(info.format) {
			continue
		}
		if y, ok := firstYear(info, br, in.name); ok {
			return y, true
		}
	}
	return 0, false
}
