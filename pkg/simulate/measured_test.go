package simulate

import (
	"bufio"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"regexp"
	"testing"
	"time"
)

// httplogExecution reads, per priority level, the executions an httplog
// file records (apf_execution_time), with a reader of the test's own,
// not the project's.
var httplogExecution = regexp.MustCompile(`apf_pl="([^"]*)".* apf_execution_time="([^"]*)"`)

type levelExecutions struct {
	n   int64
	sum time.Duration
}

func httplogExecutions(t *testing.T, path string) map[string]levelExecutions {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// the recording's file, or the test's copy of it unpacked
	br := bufio.NewReader(f)
	var r io.Reader = br
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			t.Fatal(err)
		}
		r = zr
	}
	out := map[string]levelExecutions{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		m := httplogExecution.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		d, err := time.ParseDuration(m[2])
		if err != nil {
			t.Fatalf("%s: apf_execution_time %q: %v", path, m[2], err)
		}
		e := out[m[1]]
		e.n++
		e.sum += d
		out[m[1]] = e
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// checkMeasured holds the measured-executions check of an audit log
// alone (calibrate.Measured) to the recording: APF's execution histogram
// between the bundle's scrapes counts the very executions of the workload
// that ended between them, and where those are every execution httplog
// records of the level, its time is httplog's to the millisecond. It
// returns a line for the report.
func checkMeasured(t *testing.T, res *Result, logFile string) []string {
	t.Helper()
	var lines []string
	var httplog map[string]levelExecutions
	for _, l := range res.Calibration.Levels {
		m := l.Measured
		if m == nil {
			continue
		}
		if m.Ratio == 0 {
			t.Errorf("%s: the audit log's executions are not APF's: %s", l.Level, m.Why)
			continue
		}
		if httplog == nil {
			httplog = httplogExecutions(t, logFile)
		}
		h := httplog[l.Level]
		same := ""
		if h.n == m.Executions && h.n == m.Logged {
			if d := (time.Duration(m.Time) - h.sum).Abs(); d > time.Millisecond {
				t.Errorf("%s: APF measured %v for its %d executions, httplog records %v", l.Level, time.Duration(m.Time), m.Executions, h.sum)
			}
			same = fmt.Sprintf(", httplog's %v", h.sum.Round(time.Millisecond))
		}
		lines = append(lines, fmt.Sprintf("  audit only    %-16s APF measured %d executions, %v%s; the estimates give them %v (%.3f)",
			l.Level, m.Executions, time.Duration(m.Time).Round(time.Millisecond), same, time.Duration(m.Estimated+m.Recorded).Round(time.Millisecond), m.Ratio))
	}
	return lines
}
