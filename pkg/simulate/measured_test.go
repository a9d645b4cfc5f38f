package simulate

import (
	"bufio"
	"compress/gzip"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-apf/kubectl-apf/pkg/engine/calibrate"
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

// TestMeasuredExecutionsGiveTheCPUEvidence (noisy-pages-heavy-seed8, the
// users isolated in a level of their own, from the audit log alone): the
// audit log's executions are estimates (latency less the replay's own
// wait, averaged per kind), too many for the CPU evidence's model to rest
// on, so without APF's measure of them the change's figures are not
// known. With it (RuleMeasured) the model reads the executions at the
// time APF measured, which is httplog's, and says so: the change's level
// is replayed on the CPU evidence, its work is APF's time, not the
// estimates'.
func TestMeasuredExecutionsGiveTheCPUEvidence(t *testing.T) {
	dir := filepath.Join(recordingsDir(t), "noisy-pages-heavy-seed8")
	kr := openRecording(t, dir)
	isolate := filepath.Join(dir, "whatif-2.yaml")
	res := kr.simulate(t, []string{kr.auditFile}, true, isolate)
	if slices.Contains(res.NotKnown, "apf-noisy") {
		t.Fatalf("with APF's measure: apf-noisy not known: %v", res.Warnings)
	}
	h := res.Calibration.Headroom
	if h == nil || h.Shared == nil || h.Shared.CPUEvidence == nil {
		t.Fatalf("with APF's measure: no CPU evidence's model: %+v", h)
	}
	ev := h.Shared.CPUEvidence
	var m *calibrate.Measured
	for _, l := range res.Calibration.Levels {
		if l.Level == "apf-team" {
			m = l.Measured
		}
	}
	if m == nil || m.Ratio <= 1 || !slices.Equal(ev.Measured, []string{"apf-team"}) {
		t.Fatalf("the model's measured levels %v, apf-team's measure %+v: want apf-team's, its estimates longer than APF's time", ev.Measured, m)
	}
	// the recording's executions are the window's, give or take the
	// exempt level's few: the model's work is APF's time, the estimates'
	// is theirs
	httplog := httplogExecutions(t, kr.logFile)["apf-team"].sum
	if d := math.Abs(float64(ev.Work)/float64(httplog) - 1); d > 0.01 {
		t.Errorf("the model's work %v, httplog's apf-team %v: want it within 1%%", time.Duration(ev.Work), httplog)
	}
	if d := math.Abs(float64(ev.EstimatedWork)/float64(m.Estimated+m.Recorded) - 1); d > 0.01 {
		t.Errorf("the estimates' work %v, the measured check's %v", time.Duration(ev.EstimatedWork), time.Duration(m.Estimated+m.Recorded))
	}
	if !strings.Contains(ExecutionsWork(ev), "at the time APF measured") {
		t.Errorf("the model's work is not said to be APF's: %q", ExecutionsWork(ev))
	}

	p := calibrate.DefaultParams()
	p.Without = calibrate.RuleMeasured
	kr.calibration = &p
	without := kr.simulate(t, []string{kr.auditFile}, true, isolate)
	if !slices.Contains(without.NotKnown, "apf-noisy") {
		t.Errorf("without APF's measure: apf-noisy's figures known (%v), from the audit log's estimates", without.NotKnown)
	}
}
