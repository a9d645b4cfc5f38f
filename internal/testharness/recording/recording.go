package recording

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-apf/kubectl-apf/internal/testharness/loadgen"
	"github.com/kubectl-apf/kubectl-apf/internal/testharness/testcluster"
	"github.com/kubectl-apf/kubectl-apf/pkg/dump"
	"github.com/kubectl-apf/kubectl-apf/pkg/fetch"
	"github.com/kubectl-apf/kubectl-apf/pkg/metrics"
)

// Files of a recording directory.
const (
	HTTPLogFile  = "apiserver.log.gz"
	AuditLogFile = "audit.log.gz"
	BundleFile   = "bundle.tar.gz"
	WhatIfFile   = "whatif.yaml"
	ResultFile   = "recording.json"
	// WhatIfHTTPLogFile and WhatIfAuditLogFile are the logs of the re-run
	// on the changed configuration.
	WhatIfHTTPLogFile  = "whatif-apiserver.log.gz"
	WhatIfAuditLogFile = "whatif-audit.log.gz"
	// BundleBeforeFile is a bundle captured before the load, as a user who
	// took one before an incident holds: its one scrape does not cover the
	// recorded run.
	BundleBeforeFile = "bundle-before.tar.gz"
)

// MoreWhatIfFile is the file of the scenario's further what-if i
// (Scenario.MoreWhatIfs[i]), for simulate -f: whatif-2.yaml for the first.
func MoreWhatIfFile(i int) string { return fmt.Sprintf("whatif-%d.yaml", i+2) }

// Run is what one run of a plan got.
type Run struct {
	Started time.Time `json:"started"`
	// LoadBefore and LoadAfter are the machine's load averages
	// (/proc/loadavg) before and after the load.
	LoadBefore string `json:"loadBefore"`
	LoadAfter  string `json:"loadAfter"`
	Sent       int    `json:"sent"`
	Late       int    `json:"late"`
	Errors     int    `json:"errors"`
	// Rejected429 counts the 429s the clients received, per priority level.
	Rejected429 map[string]int `json:"rejected429"`
	// ServerRejected is apiserver_flowcontrol_rejected_requests_total per
	// level over the run.
	ServerRejected map[string]float64 `json:"serverRejected"`
	// Adjustment is the server's borrowing adjustment the first planned
	// request follows by 20 ms (see alignToBorrowing), counted from the
	// adjustments' start as kube-apiserver logged it.
	Adjustment int `json:"adjustment"`
	// Throttled is the share of CFS periods of the run in which
	// kube-apiserver's cgroup used up its CPU quota, and ThrottledTime the
	// time it was held back in all.
	Throttled     float64 `json:"throttled,omitempty"`
	ThrottledTime string  `json:"throttledTime,omitempty"`
	// APIServerCPU is the CPU kube-apiserver used over the run, in cores
	// on average (its utime + stime over the run's wall time), and
	// MachineBusy the share of the machine's CPU time (/proc/stat) not
	// idle over it: a server crowded off its cores uses less than the
	// cores while the machine is busy. Steal is the share of the machine's
	// CPU time its hypervisor took for other work over the run (counted
	// in MachineBusy too): a virtual machine whose host is busy runs
	// slower, whatever the cgroups pin.
	APIServerCPU float64 `json:"apiserverCPU,omitempty"`
	MachineBusy  float64 `json:"machineBusy,omitempty"`
	Steal        float64 `json:"steal,omitempty"`
	// Alone is, per level, the executions of the run that no other
	// overlapped (Executions): how fast the machine ran the server.
	// Rerun sets it; a run made with RunLoad has it from Executions
	// on its server's log.
	Alone map[string]Alone `json:"alone,omitempty"`
	// AtOnce is the executions of the run by kind of request and by how
	// many executed at once (ReadExecutions): the machine's speed where a
	// change leaves few executions alone (SpeedAtOnce).
	AtOnce map[string]Alone `json:"atOnce,omitempty"`
	// Served is, per level, all the executions of the run (Executions):
	// what the server served a second, and how many at once. Rerun sets
	// it, beside Alone.
	Served map[string]Served `json:"served,omitempty"`
	// Collector is what the server's garbage collector did over the run,
	// from the scrapes at its start and end; nil where they do not tell.
	Collector *Collector `json:"collector,omitempty"`
}

// Collector is a run's garbage collections and the time the collector's
// mark workers held a P per collection over GOMAXPROCS (the runtime's
// count, throttled or not: simulate's CPU model adds the recorded stalls
// to it for a mark's wall time). Set beside the recorded run's, a re-run's
// tells whether its server marked as long as the recorded one did.
type Collector struct {
	Collections float64       `json:"collections"`
	MarkWorkers time.Duration `json:"markWorkers"`
}

// collectorBetween reads a run's Collector from the /metrics bodies at its
// start and end.
func collectorBetween(start string, startAt time.Time, end string, endAt time.Time) *Collector {
	a, _, err1 := metrics.ParseAPF(strings.NewReader(start), startAt)
	b, _, err2 := metrics.ParseAPF(strings.NewReader(end), endAt)
	if err1 != nil || err2 != nil {
		return nil
	}
	gc, ok := metrics.GCActivityBetween(a, b)
	if !ok || gc.Cycles < 1 {
		return nil
	}
	return &Collector{Collections: gc.Cycles, MarkWorkers: time.Duration(float64(gc.MarkCPU) / gc.Cycles / float64(gc.GOMAXPROCS))}
}

// Result is a recording's recording.json.
type Result struct {
	Scenario string `json:"scenario"`
	About    string `json:"about"`
	Seed     uint64 `json:"seed"`
	// APIServerCPUs is kube-apiserver's CPU quota (0: none).
	APIServerCPUs float64 `json:"apiserverCPUs"`
	// Processes is how many client processes sent the load (0: this
	// process's goroutines).
	Processes int `json:"processes,omitempty"`
	// PhaseOffset is how much later than 20 ms after a borrowing adjustment
	// every run started (apf-record -phase-offset); empty for the fixtures.
	PhaseOffset string `json:"phaseOffset,omitempty"`
	Recorded    Run    `json:"recorded"`
	// Repeat is the same plan sent again on the same configuration: how
	// far two runs of one seeded load differ on this machine, the floor of
	// any prediction's error.
	Repeat *Run `json:"repeat,omitempty"`
	// WhatIf is the re-run of the same plan on the changed configuration;
	// WhatIfMore the further re-runs of a scenario whose what-if is
	// checked against the mean of several (Scenario.WhatIfReruns).
	WhatIf      *Run   `json:"whatIf,omitempty"`
	WhatIfMore  []Run  `json:"whatIfMore,omitempty"`
	WhatIfAbout string `json:"whatIfAbout"`
	// MoreWhatIfs are the re-runs of the scenario's further what-ifs
	// (apf-record -all-whatifs), in the order of Scenario.MoreWhatIfs.
	MoreWhatIfs []WhatIfRuns `json:"moreWhatIfs,omitempty"`
}

// WhatIfRuns are the re-runs of one further what-if: its change is File
// (MoreWhatIfFile) in the recording's directory.
type WhatIfRuns struct {
	About string `json:"about"`
	File  string `json:"file"`
	Runs  []Run  `json:"runs"`
}

// Real is the mean of a level's 429s over the re-runs, rounded.
func (w WhatIfRuns) Real(level string) int64 { return MeanRejected(w.Runs, level) }

// WhatIfReal is what a prediction of the what-if is checked against: a
// level's 429s in the re-run, or their mean over the re-runs, rounded.
func (r *Result) WhatIfReal(level string) int64 {
	if r.WhatIf == nil {
		return 0
	}
	return MeanRejected(append([]Run{*r.WhatIf}, r.WhatIfMore...), level)
}

// MeanRejected is the mean of a level's 429s over runs, rounded.
func MeanRejected(runs []Run, level string) int64 {
	if len(runs) == 0 {
		return 0
	}
	var sum float64
	for _, run := range runs {
		sum += float64(run.Rejected429[level])
	}
	return int64(math.Round(sum / float64(len(runs))))
}

// Session is a running scenario on its own control plane.
type Session struct {
	Scenario Scenario
	Seed     uint64
	Cluster  *testcluster.Cluster
	names    map[string]string
	progress io.Writer
	// clients is the cgroup of this process (the load generator).
	clients *testcluster.CPUGroup
	// PhaseOffset delays every run by this much after the borrowing
	// adjustment it is aligned to (zero: 20 ms after it, the replay's
	// phase); for checking how much the phase matters.
	PhaseOffset time.Duration
	stopped     bool
	// loadStart is the /metrics body read when the last run began, and
	// when: a bundle's first scrape, so that the scrapes bracket the run
	loadStart   string
	loadStartAt time.Time
}

// Start starts a control plane in dir and sets the scenario up on it. It
// needs the cgroup v1 cpu controller (see testcluster.CPU): without it, it
// fails with an error wrapping testcluster.ErrNoCgroups, for callers to
// skip on.
func Start(ctx context.Context, sc Scenario, seed uint64, dir string, progress io.Writer) (*Session, error) {
	return start(ctx, sc, seed, dir, progress, false)
}

func start(ctx context.Context, sc Scenario, seed uint64, dir string, progress io.Writer, changed bool) (*Session, error) {
	cpu := sc.CPU
	clients, err := testcluster.NewCPUGroup("load", cpu.Shares, 0, 0)
	if err != nil {
		return nil, fmt.Errorf("recordings pin the control plane's CPU with cgroups: %w", err)
	}
	if err := clients.Add(os.Getpid()); err != nil {
		_ = clients.Remove()
		return nil, err
	}
	c, err := testcluster.Start(ctx, testcluster.Options{Dir: dir, MaxRequestsInflight: sc.Inflight, MaxMutatingRequestsInflight: sc.Mutating, Progress: progress, ExtraAPIServerArgs: sc.ExtraArgs, CPU: &cpu})
	if err != nil {
		_ = clients.Remove()
		return nil, err
	}
	s := &Session{Scenario: sc, Seed: seed, Cluster: c, progress: progress, clients: clients}
	admin := c.Client(testcluster.Admin)
	if err := loadgen.Setup(ctx, admin, sc.setupOptions()); err != nil {
		_ = s.Stop()
		return nil, err
	}
	if err := loadgen.Apply(ctx, admin, sc.Levels, sc.Schemas); err != nil {
		_ = s.Stop()
		return nil, err
	}
	var ch *Change
	if changed {
		ch = &sc.WhatIf
		if err := loadgen.Apply(ctx, admin, ch.Levels, ch.Schemas); err != nil {
			_ = s.Stop()
			return nil, err
		}
	}
	if err := s.waitForLevels(ctx, ch); err != nil {
		_ = s.Stop()
		return nil, err
	}
	if err := s.checkSeats(ctx, ch); err != nil {
		_ = s.Stop()
		return nil, err
	}
	if sc.WaitForCounts {
		if err := s.waitForCounts(ctx); err != nil {
			_ = s.Stop()
			return nil, err
		}
	}
	return s, nil
}

// waitForCounts waits until /metrics counts the load's ConfigMaps with
// their size.
func (s *Session) waitForCounts(ctx context.Context) error {
	deadline := time.Now().Add(3 * time.Minute)
	for {
		body, err := s.metrics(ctx)
		if err != nil {
			return err
		}
		var count, size float64
		for _, line := range strings.Split(body, "\n") {
			if v, ok := strings.CutPrefix(line, `apiserver_resource_objects{group="",resource="configmaps"} `); ok {
				fmt.Sscan(v, &count)
			}
			if v, ok := strings.CutPrefix(line, `apiserver_resource_size_estimate_bytes{group="",resource="configmaps"} `); ok {
				fmt.Sscan(v, &size)
			}
		}
		if count >= 100 && size > 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the apiserver counted %v configmaps of %v bytes after 3 minutes", count, size)
		}
		time.Sleep(2 * time.Second)
	}
}

// checkSeats checks the nominal limits the scenario (and the change)
// expect against the server's apiserver_flowcontrol_nominal_limit_seats.
func (s *Session) checkSeats(ctx context.Context, ch *Change) error {
	want := map[string]int{}
	for l, n := range s.Scenario.Seats {
		want[l] = n
	}
	if ch != nil {
		for l, n := range ch.Seats {
			want[l] = n
		}
	}
	if len(want) == 0 {
		return nil
	}
	body, err := s.metrics(ctx)
	if err != nil {
		return err
	}
	got := perLevel(body, "apiserver_flowcontrol_nominal_limit_seats{")
	for l, n := range want {
		if g, ok := got[l]; !ok || int(g) != n {
			return fmt.Errorf("the server's nominal limit of %s is %v seats, the scenario expects %d (apiserver_flowcontrol_nominal_limit_seats; see Scenario.Seats)", l, got[l], n)
		}
	}
	return nil
}

// Stop stops the control plane and moves this process out of its cgroup.
// Stopping a stopped session does nothing.
func (s *Session) Stop() error {
	if s.stopped {
		return nil
	}
	s.stopped = true
	err := s.Cluster.Stop()
	_ = s.clients.Remove()
	return err
}

// startForLoad starts a session (Start, or with changed the scenario's
// what-if change applied on top of its configuration before any load)
// whose runs start phaseOffset late, and returns where the lines its
// apiserver logs after the set-up start in its httplog and its audit log.
func startForLoad(ctx context.Context, sc Scenario, seed uint64, dir string, changed bool, phaseOffset time.Duration, progress io.Writer) (*Session, int64, int64, error) {
	s, err := start(ctx, sc, seed, dir, progress, changed)
	if err != nil {
		return nil, 0, 0, err
	}
	s.PhaseOffset = phaseOffset
	a := s.Cluster.APIServers[0]
	return s, size(a.LogFile), size(a.AuditLog), nil
}

// Rerun is the what-if check's re-run: the scenario's plan with the same
// seed sent once to a fresh control plane (in dir) that has the changed
// configuration from the start. The recorded run also met
// a fresh, idle server; a re-run on the recorded run's own server would
// start with what that run left behind, such as the levels' smoothed seat
// demand, which sets the seats they borrow for minutes after a load. With
// keep, the run's httplog and audit log are handed to it (the files and
// the offsets where the run's lines start) before the server stops.
func Rerun(ctx context.Context, sc Scenario, seed uint64, dir string, phaseOffset time.Duration, progress io.Writer, keep func(logFile string, logFrom int64, auditLog string, auditFrom int64) error) (*Run, error) {
	return RerunBeside(ctx, sc, seed, dir, phaseOffset, progress, keep, nil)
}

// Beside starts what runs beside a load on a session's server once it is
// set up (the recorders the recorded run had: a Prometheus scraping it, a
// dump bundle --watch) and returns what stops it.
type Beside func(*Session) (stop func() error, err error)

// RerunBeside is Rerun with beside (when not nil) running beside the
// re-run's load, started after the set-up and stopped after the load, as
// it ran beside the recorded run's: a server that served a recorder's
// scrapes while recorded serves them after the change too.
func RerunBeside(ctx context.Context, sc Scenario, seed uint64, dir string, phaseOffset time.Duration, progress io.Writer, keep func(logFile string, logFrom int64, auditLog string, auditFrom int64) error, beside Beside) (*Run, error) {
	s, logFrom, auditFrom, err := startForLoad(ctx, sc, seed, dir, true, phaseOffset, progress)
	if err != nil {
		return nil, err
	}
	defer s.Stop()
	stop := func() error { return nil }
	if beside != nil {
		if stop, err = beside(s); err != nil {
			return nil, err
		}
	}
	run, err := s.rerun(ctx, logFrom, auditFrom, keep)
	if serr := stop(); err == nil && serr != nil {
		return nil, serr
	}
	return run, err
}

// ApplyChange gives a session started with Start the change ch, as Rerun's
// fresh server has it from the start: it applies ch's objects through the
// apiserver and waits until the server routes every flow as ch says and
// has the seats ch expects. A server can so be started before the change
// is known (tune's e2e starts it while tune searches); RerunLoad then runs
// the re-run on it.
func (s *Session) ApplyChange(ctx context.Context, ch Change) error {
	if err := loadgen.Apply(ctx, s.Cluster.Client(testcluster.Admin), ch.Levels, ch.Schemas); err != nil {
		return err
	}
	s.Scenario.WhatIf, s.Scenario.WhatIfReruns = ch, 0
	if err := s.waitForLevels(ctx, &ch); err != nil {
		return err
	}
	return s.checkSeats(ctx, &ch)
}

// RerunLoad is Rerun's re-run on a session given its change by
// ApplyChange: the plan run once, its executions alone read from the
// server's log, and the run's logs handed to keep (when not nil) from
// the first line written after the change. It leaves the session
// running.
func (s *Session) RerunLoad(ctx context.Context, keep func(logFile string, logFrom int64, auditLog string, auditFrom int64) error) (*Run, error) {
	a := s.Cluster.APIServers[0]
	return s.rerun(ctx, size(a.LogFile), size(a.AuditLog), keep)
}

func (s *Session) rerun(ctx context.Context, logFrom, auditFrom int64, keep func(logFile string, logFrom int64, auditLog string, auditFrom int64) error) (*Run, error) {
	a := s.Cluster.APIServers[0]
	run, err := s.RunLoad(ctx)
	if err != nil {
		return nil, err
	}
	if err := run.ReadExecutions(a.LogFile, logFrom); err != nil {
		return nil, err
	}
	if keep != nil {
		if err := keep(a.LogFile, logFrom, a.AuditLog, auditFrom); err != nil {
			return nil, err
		}
	}
	return run, nil
}

// waitForLevels waits until every flow's request is answered by the level
// the scenario (or the change, for the users it moves) routes it to.
func (s *Session) waitForLevels(ctx context.Context, ch *Change) error {
	names, err := loadgen.Names(ctx, s.Cluster.Client(testcluster.Admin))
	if err != nil {
		return err
	}
	s.names = names
	want := map[int]string{}
	for _, f := range s.Scenario.Flows {
		want[f.User] = f.Level
	}
	if ch != nil {
		for _, fs := range ch.Schemas {
			for _, r := range fs.Spec.Rules {
				for _, sub := range r.Subjects {
					if sub.User != nil {
						for u := range want {
							if testcluster.LoadUserName(u) == sub.User.Name {
								want[u] = fs.Spec.PriorityLevelConfiguration.Name
							}
						}
					}
				}
			}
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for u, level := range want {
		for {
			rep, err := loadgen.Run(ctx, loadgen.Options{Flows: []*rest.Config{s.Cluster.RESTConfig(testcluster.LoadUserName(u))}, Burst: 1, Rounds: 1, Duration: time.Minute, Names: names})
			if err != nil {
				return err
			}
			if rep.ByPriority[level] > 0 {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("the server did not classify %s into %s within 30s (got %v)", testcluster.LoadUserName(u), level, rep.ByPriority)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	// the queue sets of changed levels are rebuilt by the same digest
	time.Sleep(time.Second)
	return nil
}

// Plan returns the scenario's load plan on this session's cluster.
func (s *Session) Plan() loadgen.PlanOptions {
	p := loadgen.PlanOptions{Seed: s.Seed, Duration: s.Scenario.Duration, Names: s.names, Processes: s.Scenario.Processes}
	for _, f := range s.Scenario.Flows {
		p.Flows = append(p.Flows, loadgen.PlanFlow{Config: s.Cluster.RESTConfig(testcluster.LoadUserName(f.User)), Path: f.Path, Rate: f.Rate, Burst: f.Burst})
	}
	return p
}

// RunLoad runs the plan once, its first request just after one of the
// server's borrowing adjustments (see alignToBorrowing).
func (s *Session) RunLoad(ctx context.Context) (*Run, error) {
	s.loadStartAt = time.Now()
	body, err := s.metrics(ctx)
	if err != nil {
		return nil, err
	}
	s.loadStart = body
	before := rejectedPerLevel(body)
	plan := s.Plan()
	run := &Run{LoadBefore: LoadAverage()}
	proc := s.Cluster.APIServers[0].Proc
	// CPU figures from the plan's start: the start-up of the client
	// processes before it is not the run's
	atStart := make(chan cpuSnapshot, 1)
	// aligned once the load is ready to leave (its client processes
	// started, which takes a while)
	plan.Schedule = func() (time.Time, error) {
		start, adj, err := s.alignToBorrowing(plan)
		run.Started, run.Adjustment = start.UTC(), adj
		go func() {
			time.Sleep(time.Until(start))
			atStart <- snapshotCPU(proc.PID)
		}()
		return start, err
	}
	g := proc.CPUGroup()
	p0, t0, ns0 := g.Throttled()
	rep, err := loadgen.RunPlan(ctx, plan)
	run.LoadAfter = LoadAverage()
	if err != nil {
		return nil, err
	}
	if p1, t1, ns1 := g.Throttled(); p1 > p0 {
		run.Throttled = float64(t1-t0) / float64(p1-p0)
		run.ThrottledTime = time.Duration(ns1 - ns0).Round(time.Millisecond).String()
	}
	run.APIServerCPU, run.MachineBusy, run.Steal = (<-atStart).usedUntil(snapshotCPU(proc.PID), rep.Elapsed)
	run.Sent, run.Late, run.Errors, run.Rejected429 = rep.Sent, rep.Late, rep.Errors, rep.RejectedByPriority
	time.Sleep(1500 * time.Millisecond) // let the audit backend flush its last batch
	body, err = s.metrics(ctx)
	if err != nil {
		return nil, err
	}
	after := rejectedPerLevel(body)
	run.Collector = collectorBetween(s.loadStart, s.loadStartAt, body, time.Now())
	run.ServerRejected = map[string]float64{}
	for k, v := range after {
		if d := v - before[k]; d > 0 {
			run.ServerRejected[k] = d
		}
	}
	return run, nil
}

// metrics returns the apiserver's /metrics body.
func (s *Session) metrics(ctx context.Context) (string, error) {
	cfg := s.Cluster.RESTConfig(testcluster.Admin)
	rt, err := rest.TransportFor(cfg)
	if err != nil {
		return "", err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, cfg.Host+"/metrics", nil)
	if err != nil {
		return "", err
	}
	resp, err := (&http.Client{Transport: rt, Timeout: time.Minute}).Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return string(body), err
}

// WriteBundle writes a bundle of the server's objects, version and metrics
// to path, right after a run: its metrics are the scrape of the run's
// start and one now, so that they bracket the run.
func (s *Session) WriteBundle(ctx context.Context, path string, m dump.Manifest) error {
	return s.writeBundle(ctx, path, m, true)
}

// writeBundle writes a bundle of the server's objects, version and one
// scrape of its metrics, now; with bracket, the scrape of the last run's
// start goes before it.
func (s *Session) writeBundle(ctx context.Context, path string, m dump.Manifest, bracket bool) error {
	capture, err := (&fetch.ClusterSource{Config: s.Cluster.RESTConfig(testcluster.Admin)}).Capture(ctx,
		dump.CaptureOptions{Parts: dump.PartObjects | dump.PartVersion | dump.PartMetrics})
	if err != nil {
		return err
	}
	if bracket {
		if err := s.prependLoadStart(capture); err != nil {
			return err
		}
	}
	return dump.WriteBundle(path, capture, m)
}

// prependLoadStart makes the /metrics body read when the recorded run
// began the capture's first scrape: the two then bracket the run, and
// simulate reads the garbage collector's pace between them (its CPU model).
func (s *Session) prependLoadStart(c *dump.Capture) error {
	if len(c.Snapshots) != 1 || s.loadStart == "" {
		return fmt.Errorf("cannot add the scrape of the run's start to a capture of %d snapshots", len(c.Snapshots))
	}
	snap := c.Snapshots[0]
	sc, kept, err := metrics.ParseAPF(strings.NewReader(s.loadStart), s.loadStartAt)
	if err != nil {
		return fmt.Errorf("the /metrics body of the run's start: %w", err)
	}
	for i := len(snap.Metrics) - 1; i >= 0; i-- {
		snap.Raw[dump.MetricsFile(i+1)] = snap.Raw[dump.MetricsFile(i)]
		snap.Raw[dump.MetricsTimeKey(i+1)] = snap.Raw[dump.MetricsTimeKey(i)]
	}
	snap.Raw[dump.MetricsFile(0)] = kept
	snap.Raw[dump.MetricsTimeKey(0)] = []byte(s.loadStartAt.UTC().Format(time.RFC3339Nano))
	snap.Metrics = append([]*metrics.Scrape{sc}, snap.Metrics...)
	return nil
}

// rejectedPerLevel reads apiserver_flowcontrol_rejected_requests_total per
// priority level from a /metrics body.
func rejectedPerLevel(body string) map[string]float64 {
	return perLevel(body, "apiserver_flowcontrol_rejected_requests_total{")
}

// perLevel sums the samples of the series that start with prefix (a
// family's name and "{") per priority_level label.
func perLevel(body, prefix string) map[string]float64 {
	out := map[string]float64{}
	for _, line := range strings.Split(body, "\n") {
		if !strings.HasPrefix(line, prefix) {
			continue
		}
		i := strings.Index(line, `priority_level="`)
		j := strings.LastIndexByte(line, ' ')
		if i < 0 || j < 0 {
			continue
		}
		pl := line[i+len(`priority_level="`):]
		pl = pl[:strings.IndexByte(pl, '"')]
		var v float64
		if _, err := fmt.Sscan(line[j+1:], &v); err == nil {
			out[pl] += v
		}
	}
	return out
}

// Record runs the scenario once on a fresh control plane and writes the
// recording to out: the apiserver's httplog and audit log of the load
// (gzipped, from the first line written after the set-up), a bundle of its
// objects, version and metrics, the change as YAML and recording.json. With
// whatIf, the same plan is then sent again on the same server (the repeat),
// and once more by Rerun on a fresh control plane with the change applied;
// the figures of both go to recording.json.
//
// With allWhatIfs, every further what-if of the scenario (MoreWhatIfs) is
// re-run too, each its Reruns times on fresh control planes; their changes
// go to MoreWhatIfFile and their figures to recording.json. A bundle
// captured before the load (BundleBeforeFile) is written beside the one
// taken after it.
func Record(ctx context.Context, sc Scenario, seed uint64, out string, whatIf, allWhatIfs bool, phaseOffset time.Duration, progress io.Writer) (*Result, error) {
	tmp, err := os.MkdirTemp("", "apf-record-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	s, logFrom, auditFrom, err := startForLoad(ctx, sc, seed, tmp, false, phaseOffset, progress)
	if err != nil {
		return nil, err
	}
	defer s.Stop()
	a := s.Cluster.APIServers[0]
	res := &Result{Scenario: sc.Name, About: sc.About, Seed: seed, APIServerCPUs: sc.CPU.APIServer, Processes: sc.Processes, WhatIfAbout: sc.WhatIf.About}
	if phaseOffset != 0 {
		res.PhaseOffset = phaseOffset.String()
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, err
	}
	manifest := dump.Manifest{Source: "local control plane, scenario " + sc.Name, CreatedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	before := filepath.Join(out, BundleBeforeFile)
	_ = os.Remove(before)
	if err := s.writeBundle(ctx, before, manifest, false); err != nil {
		return nil, err
	}
	run, err := s.RunLoad(ctx)
	if err != nil {
		return nil, err
	}
	// its executions, which the re-runs' speed is measured against
	// (RerunSpeed), as Rerun reads theirs
	if err := run.ReadExecutions(a.LogFile, logFrom); err != nil {
		return nil, err
	}
	res.Recorded = *run
	if err := gzipTail(a.LogFile, logFrom, filepath.Join(out, HTTPLogFile)); err != nil {
		return nil, err
	}
	if err := gzipTail(a.AuditLog, auditFrom, filepath.Join(out, AuditLogFile)); err != nil {
		return nil, err
	}
	bundle := filepath.Join(out, BundleFile)
	_ = os.Remove(bundle)
	if err := s.WriteBundle(ctx, bundle, manifest); err != nil {
		return nil, err
	}
	y, err := ChangeYAML(sc.WhatIf)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(out, WhatIfFile), y, 0o644); err != nil {
		return nil, err
	}
	if whatIf {
		if res.Repeat, err = s.RunLoad(ctx); err != nil {
			return nil, err
		}
		if err := s.Stop(); err != nil {
			return nil, err
		}
		rerunDir, err := os.MkdirTemp("", "apf-record-whatif-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(rerunDir)
		res.WhatIf, err = Rerun(ctx, sc, seed, rerunDir, phaseOffset, progress, func(logFile string, logFrom int64, auditLog string, auditFrom int64) error {
			if err := gzipTail(logFile, logFrom, filepath.Join(out, WhatIfHTTPLogFile)); err != nil {
				return err
			}
			return gzipTail(auditLog, auditFrom, filepath.Join(out, WhatIfAuditLogFile))
		})
		if err != nil {
			return nil, err
		}
		for range sc.WhatIfReruns - 1 {
			run, err := rerunInTemp(ctx, sc, seed, phaseOffset, progress)
			if err != nil {
				return nil, err
			}
			res.WhatIfMore = append(res.WhatIfMore, *run)
		}
	}
	if whatIf && allWhatIfs {
		for i, w := range sc.MoreWhatIfs {
			y, err := ChangeYAML(w.Change)
			if err != nil {
				return nil, err
			}
			wr := WhatIfRuns{About: w.Change.About, File: MoreWhatIfFile(i)}
			if err := os.WriteFile(filepath.Join(out, wr.File), y, 0o644); err != nil {
				return nil, err
			}
			for range max(w.Reruns, 1) {
				run, err := rerunInTemp(ctx, sc.With(w), seed, phaseOffset, progress)
				if err != nil {
					return nil, err
				}
				wr.Runs = append(wr.Runs, *run)
			}
			res.MoreWhatIfs = append(res.MoreWhatIfs, wr)
		}
	}
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return nil, err
	}
	return res, os.WriteFile(filepath.Join(out, ResultFile), append(b, '\n'), 0o644)
}

// rerunInTemp is Rerun in a directory of its own, removed after, keeping
// none of the run's logs.
func rerunInTemp(ctx context.Context, sc Scenario, seed uint64, phaseOffset time.Duration, progress io.Writer) (*Run, error) {
	dir, err := os.MkdirTemp("", "apf-record-whatif-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	return Rerun(ctx, sc, seed, dir, phaseOffset, progress, nil)
}

// ChangeYAML renders a change as a multi-document YAML file for -f.
func ChangeYAML(ch Change) ([]byte, error) {
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "# %s\n", ch.About)
	write := func(o any) error {
		b, err := yaml.Marshal(o)
		if err != nil {
			return err
		}
		buf.WriteString("---\n")
		buf.Write(b)
		return nil
	}
	for _, pl := range ch.Levels {
		c := pl.DeepCopy()
		c.TypeMeta.APIVersion, c.TypeMeta.Kind = flowcontrolv1.SchemeGroupVersion.String(), "PriorityLevelConfiguration"
		if err := write(c); err != nil {
			return nil, err
		}
	}
	for _, fs := range ch.Schemas {
		c := fs.DeepCopy()
		c.TypeMeta.APIVersion, c.TypeMeta.Kind = flowcontrolv1.SchemeGroupVersion.String(), "FlowSchema"
		if err := write(c); err != nil {
			return nil, err
		}
	}
	return buf.Bytes(), nil
}
