package input

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine/workload"
)

// yearPeek is how much of a file Year reads.
const yearPeek = 1 << 20

// Year is the year of the logs at paths, when one of them tells it:
// an audit log or audit events wrapped by a cloud or a pipeline
// (InputYear: their times are whole; it wins, as
// OpenFiles takes its year), else an httplog line in klog's JSON
// format (ts, in milliseconds since the epoch) or one whose klog header
// follows a dated prefix (a container runtime's
// "2025-03-05T22:40:41.977203895Z stderr F", kubectl logs --timestamps').
// klog's text header alone ("I0305 22:40:41.976983") has no year: known is
// false, and the readers' default year stands in, which only the
// differences between times may rest on. A pipe is not read (the readers
// read it once): its year is not known here.
func Year(paths []string) (year int, known bool) {
	for _, p := range paths {
		if p == "" || p == "-" {
			continue
		}
		// a pipe (<(zcat audit.log.gz)) is read once, by the readers:
		// peeking at it here would take its first lines from them
		if fi, err := os.Stat(p); err != nil || !fi.Mode().IsRegular() && !fi.IsDir() {
			continue
		}
		// an audit log, or audit events in a cloud's or a pipeline's
		// records (gzipped, or a directory's files)
		if y, ok := InputYear(p); ok {
			return y, true
		}
		f, err := os.Open(p)
		if err != nil {
			continue
		}
		if format, r, err := Detect(f); err == nil && format == workload.FormatHTTPLog && !known {
			year, known = httplogYear(r)
		}
		f.Close()
	}
	return year, known
}

// httplogYear is the year of the first httplog line of r that tells it.
func httplogYear(r io.Reader) (int, bool) {
	sc := bufio.NewScanner(io.LimitReader(r, yearPeek))
	sc.Buffer(nil, yearPeek)
	for sc.Scan() {
		if y, ok := httplogLineYear(sc.Bytes()); ok {
			return y, true
		}
	}
	return 0, false
}

// httplogLineYear is the year an httplog line tells, if it tells one.
func httplogLineYear(line []byte) (int, bool) {
	line = bytes.TrimSpace(line)
	if len(line) > 0 && line[0] == '{' && bytes.Contains(line, []byte(`"msg":"HTTP"`)) {
		var l struct {
			TS float64 `json:"ts"`
		}
		if json.Unmarshal(line, &l) != nil || l.TS <= 0 {
			return 0, false
		}
		return time.UnixMilli(int64(l.TS)).UTC().Year(), true
	}
	i := bytes.Index(line, httpMarker)
	if i < 0 {
		return 0, false
	}
	// the prefix's first field, then klog's "Lmmdd hh:mm:ss.uuuuuu
	// threadid file:line"
	fields := bytes.Fields(line[:i])
	if len(fields) < 5 {
		return 0, false
	}
	t, err := time.Parse(time.RFC3339Nano, string(fields[0]))
	if err != nil {
		return 0, false
	}
	header := fields[len(fields)-4]
	if len(header) != 5 {
		return 0, false
	}
	month, err := strconv.Atoi(string(header[1:3]))
	if err != nil {
		return 0, false
	}
	// the prefix and klog may be in different time zones on either side
	// of New Year
	y := t.Year()
	switch {
	case t.Month() == time.January && month == 12:
		y--
	case t.Month() == time.December && month == 1:
		y++
	}
	return y, true
}
