package input

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
	"github.com/kubectl-apf/kubectl-apf/pkg/logs"
)

// ReadRecorded reads the request of --from-log and/or --from-audit: each
// value is a file name, "-" for stdin, or (for --from-log) the line itself.
// With both, the log line is joined to the audit event of the same audit ID
// (workload.PickJoined), never to another one.
//
// A file or stdin is read as a real log is: a line that cannot be read as a
// request (cut short by rotation or by a server still writing it, or
// another component's) is skipped, and skipped says so (malformedLines)
// for each value that skipped any, keyed by the value. A line given itself
// is read strictly: its error is the answer.
//
// past are the files the request's moment is reconstructed from: the year
// they tell (Year) completes klog's text headers, as the
// reconstruction reads them, so that the request is found among them by
// its arrival (none: fallbackYear, the year of an absolute --since/--until
// (logs.Window.Year), else the readers' default year).
//
// from and to, when not zero, are the window of --since/--until: only the
// requests that arrived inside it are searched (a zero bound is open).
func ReadRecorded(fromLog, fromAudit, auditID string, past []string, stdin io.Reader, from, to time.Time, fallbackYear int) (r *workload.Request, skipped map[string]string, err error) {
	year, known := Year(past)
	if !known {
		year = fallbackYear
	}
	var logRd, auditRd workload.Reader
	var logName, auditName string
	// the readers' counts, by value, with the name each reads
	type read struct {
		name string
		st   *workload.Stats
	}
	reads := map[string]read{}
	if fromLog != "" {
		rd, name, st, closeFn, err := openRecordReader(fromLog, true, year, stdin)
		if err != nil {
			return nil, nil, fmt.Errorf("--from-log: %w", err)
		}
		defer closeFn()
		logRd, logName, reads[fromLog] = rd, name, read{name, st}
	}
	if fromAudit != "" {
		rd, name, st, closeFn, err := openRecordReader(fromAudit, false, year, stdin)
		if err != nil {
			return nil, nil, fmt.Errorf("--from-audit: %w", err)
		}
		defer closeFn()
		auditRd, auditName, reads[fromAudit] = rd, name, read{name, st}
	}
	windowed := !from.IsZero() || !to.IsZero()
	if windowed {
		for _, rd := range []*workload.Reader{&logRd, &auditRd} {
			if *rd != nil {
				*rd = &logs.Cut{Src: *rd, From: from, To: to}
			}
		}
	}
	r, err = pickRecorded(logRd, auditRd, logName, auditName, auditID)
	if err != nil && windowed {
		err = fmt.Errorf("%w in the window %s (--since/--until)", err, logs.FormatBounds(from, to))
	}
	if err != nil && logName == lineGiven && !strings.Contains(fromLog, `"HTTP"`) {
		if why := whyNoHTTPLine(fromLog); why != "" {
			err = fmt.Errorf("%w: %s", err, why)
		}
	}
	// an input that gave no request already says what it skipped
	var nothing *NothingRead
	errors.As(err, &nothing)
	for value, rd := range reads {
		if rd.st.Malformed == 0 || nothing != nil && nothing.Name == rd.name {
			continue
		}
		if skipped == nil {
			skipped = map[string]string{}
		}
		skipped[value] = logs.MalformedNote(rd.name, rd.st, "")
	}
	if err != nil && len(skipped) > 0 {
		// the request looked for may be on a line that could not be read
		notes := make([]string, 0, len(skipped))
		for _, n := range skipped {
			notes = append(notes, n)
		}
		slices.Sort(notes)
		return nil, nil, fmt.Errorf("%w; %s", err, strings.Join(notes, "; "))
	}
	return r, skipped, err
}

// pickRecorded picks the request from the readers given.
func pickRecorded(logRd, auditRd workload.Reader, logName, auditName, auditID string) (*workload.Request, error) {
	if logRd != nil && auditRd != nil {
		r, err := workload.PickJoined(logRd, auditRd, auditID)
		if err != nil {
			return nil, fmt.Errorf("--from-log %s with --from-audit %s: %w", logName, auditName, err)
		}
		return r, nil
	}
	flag, rd, name, kind := "--from-log", logRd, logName, "kube-apiserver httplog (\"HTTP\" lines, -v=3)"
	if rd == nil {
		flag, rd, name, kind = "--from-audit", auditRd, auditName, "audit event (ResponseComplete stage)"
	}
	r, _, err := workload.Pick(rd, auditID)
	if errors.Is(err, workload.ErrNoRecord) {
		if auditID != "" {
			return nil, fmt.Errorf("%s: no request %s", flag, strings.TrimPrefix(err.Error(), workload.ErrNoRecord.Error()+" "))
		}
		return nil, fmt.Errorf("%s: no %s request found in %s", flag, kind, name)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flag, err)
	}
	return r, nil
}

// openRecordReader opens one value of --from-log or --from-audit.
// Arrival order does not matter here (one record is kept), so the smallest
// re-ordering window keeps the reader's memory at one record however long
// the file is. Files and stdin are read leniently, the line given strictly.
func openRecordReader(value string, httplog bool, year int, stdin io.Reader) (workload.Reader, string, *workload.Stats, func(), error) {
	var in io.Reader
	name, closeFn := value, func() {}
	opts := Options{ReorderWindow: time.Nanosecond, Lenient: true, Year: year}
	switch {
	case value == "-":
		in, name = stdin, "stdin"
	default:
		if f, err := os.Open(value); err == nil {
			in, closeFn = f, func() { f.Close() }
		} else if httplog && (strings.Contains(value, "\"HTTP\"") || looksLikeLogLine(value, err)) {
			// a line without its klog header is read too, its time unknown
			in, name, opts.Lenient, opts.Headerless = strings.NewReader(value), lineGiven, false, true
		} else {
			return nil, "", nil, nil, fmt.Errorf("reading %s: %w", value, err)
		}
	}
	st := &workload.Stats{}
	if httplog {
		return NewHTTPLogReader(in, name, opts, st), name, st, closeFn, nil
	}
	// audit events as the apiserver writes them, or wrapped by a cloud or
	// a log pipeline, gzipped or not
	br := bufio.NewReaderSize(in, 1<<16)
	head, _ := br.Peek(1 << 16)
	rd, f, err := NewReader(br, name, opts, st)
	if err != nil {
		closeFn()
		return nil, "", nil, nil, err
	}
	if !workload.AuditFormat(f) {
		defer closeFn()
		if f == workload.FormatHTTPLog && !bytes.Contains(head, []byte(`"HTTP"`)) {
			// not the apiserver's log either: text around pasted events
			return nil, "", nil, nil, notAuditEvents(name, head)
		}
		if f == workload.FormatJSONL {
			return nil, "", nil, nil, jsonLinesNotEvents(name, head)
		}
		return nil, "", nil, nil, fmt.Errorf("%s holds %s, not audit events: give httplog lines with --from-log", name, f)
	}
	return rd, name, st, closeFn, nil
}

// notAuditEvents is the error for an --from-audit input that holds neither
// audit events nor the apiserver's httplog lines (a paste of cut events,
// say), counting the non-blank lines of its head.
func notAuditEvents(name string, head []byte) error {
	n, more := 0, ""
	if len(head) == 1<<16 {
		more = "at least "
	}
	for _, l := range bytes.Split(head, []byte("\n")) {
		if len(bytes.TrimSpace(l)) > 0 {
			n++
		}
	}
	return fmt.Errorf("no audit event (ResponseComplete stage) request found in %s: %s%d lines could not be read as requests: none is an audit event (one JSON object a line, or events as a cloud or log pipeline exports them)", name, more, n)
}

// jsonLinesNotEvents is the error for an --from-audit input of JSON lines
// that are not audit events: what its first line holds.
func jsonLinesNotEvents(name string, head []byte) error {
	var first map[string]json.RawMessage
	for _, l := range bytes.Split(head, []byte("\n")) {
		if l = bytes.TrimSpace(l); len(l) > 0 && l[0] != '#' {
			_ = json.Unmarshal(l, &first)
			break
		}
	}
	keys := slices.Sorted(maps.Keys(first))
	what := "JSON lines that are not audit events"
	if first["arrival"] != nil || first["offset"] != nil {
		what = "workload records (simulate's JSONL format), not audit events"
	}
	if len(keys) > 8 {
		keys = append(keys[:8], "…")
	}
	return fmt.Errorf("%s holds %s (the first line's keys: %s): --from-audit takes audit.k8s.io events, one a line or laid out as JSON otherwise, or as a cloud or a log pipeline exports them", name, what, strings.Join(keys, ", "))
}

// lineGiven names a --from-log value read as the log line itself.
const lineGiven = "the line given"

// looksLikeLogLine reports whether a --from-log value that is no file
// (openErr) is a log line given in place of one: a line of key=value
// fields, as kube-apiserver writes, not a mistyped file name.
func looksLikeLogLine(value string, openErr error) bool {
	return errors.Is(openErr, fs.ErrNotExist) && strings.ContainsAny(value, " \t") && strings.Contains(value, "=")
}

// preHTTPLine is an httplog line of the form before 1.22 ('verb="GET"
// URI=... resp=200' without the "HTTP" message).
var preHTTPLine = regexp.MustCompile(`(^|\s)verb="?[A-Z]+"? URI=`)

// whyNoHTTPLine says why a line given holds no request: an httplog line of
// the form before 1.22, which records no APF classification.
func whyNoHTTPLine(line string) string {
	if !preHTTPLine.MatchString(line) {
		return ""
	}
	return `it is an httplog line of the form before 1.22 (verb=, URI=, resp=, without the "HTTP" message and the apf_* fields), which records no APF classification or seats: explain the request with its verb, path and identity instead`
}
