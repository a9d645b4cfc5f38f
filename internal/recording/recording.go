package recording

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-apf/kubectl-apf/internal/loadgen"
	"github.com/kubectl-apf/kubectl-apf/internal/testcluster"
	"github.com/kubectl-apf/kubectl-apf/pkg/dump"
	"github.com/kubectl-apf/kubectl-apf/pkg/fetch"
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
)

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
}

// Result is a recording's recording.json.
type Result struct {
	Scenario string `json:"scenario"`
	About    string `json:"about"`
	Seed     uint64 `json:"seed"`
	Burners  int    `json:"burners"`
	Recorded Run    `json:"recorded"`
	// Repeat is the same plan sent again on the same configuration: how
	// far two runs of one seeded load differ on this machine, the floor of
	// any prediction's error.
	Repeat *Run `json:"repeat,omitempty"`
	// WhatIf is the re-run of the same plan on the changed configuration.
	WhatIf      *Run   `json:"whatIf,omitempty"`
	WhatIfAbout string `json:"whatIfAbout"`
}

// Session is a running scenario on its own control plane.
type Session struct {
	Scenario Scenario
	Seed     uint64
	Cluster  *testcluster.Cluster
	names    map[string]string
	progress io.Writer
}

// Start starts a control plane in dir and sets the scenario up on it.
func Start(ctx context.Context, sc Scenario, seed uint64, dir string, progress io.Writer) (*Session, error) {
	c, err := testcluster.Start(ctx, testcluster.Options{Dir: dir, MaxRequestsInflight: sc.Inflight, MaxMutatingRequestsInflight: sc.Mutating, Progress: progress, ExtraAPIServerArgs: sc.ExtraArgs})
	if err != nil {
		return nil, err
	}
	s := &Session{Scenario: sc, Seed: seed, Cluster: c, progress: progress}
	admin := c.Client(testcluster.Admin)
	so := loadgen.SetupOptions{}
	if sc.RejectUser != 0 {
		so.RejectUser = testcluster.LoadUserName(sc.RejectUser)
	}
	if err := loadgen.Setup(ctx, admin, so); err != nil {
		_ = c.Stop()
		return nil, err
	}
	if err := loadgen.Apply(ctx, admin, sc.Levels, sc.Schemas); err != nil {
		_ = c.Stop()
		return nil, err
	}
	if err := s.waitForLevels(ctx, nil); err != nil {
		_ = c.Stop()
		return nil, err
	}
	if sc.WaitForCounts {
		if err := s.waitForCounts(ctx); err != nil {
			_ = c.Stop()
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

// Stop stops the control plane.
func (s *Session) Stop() error { return s.Cluster.Stop() }

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
	p := loadgen.PlanOptions{Seed: s.Seed, Duration: s.Scenario.Duration, Names: s.names}
	for _, f := range s.Scenario.Flows {
		p.Flows = append(p.Flows, loadgen.PlanFlow{Config: s.Cluster.RESTConfig(testcluster.LoadUserName(f.User)), Path: f.Path, Rate: f.Rate, Burst: f.Burst})
	}
	return p
}

// RunLoad runs the plan once, with the scenario's CPU burners.
func (s *Session) RunLoad(ctx context.Context) (*Run, error) {
	before, err := s.serverRejected(ctx)
	if err != nil {
		return nil, err
	}
	run := &Run{Started: time.Now().UTC(), LoadBefore: loadavg()}
	stop, err := startBurners(s.Scenario.Burners)
	if err != nil {
		return nil, err
	}
	rep, err := loadgen.RunPlan(ctx, s.Plan())
	stop()
	run.LoadAfter = loadavg()
	if err != nil {
		return nil, err
	}
	run.Sent, run.Late, run.Errors, run.Rejected429 = rep.Sent, rep.Late, rep.Errors, rep.RejectedByPriority
	time.Sleep(1500 * time.Millisecond) // let the audit backend flush its last batch
	after, err := s.serverRejected(ctx)
	if err != nil {
		return nil, err
	}
	run.ServerRejected = map[string]float64{}
	for k, v := range after {
		if d := v - before[k]; d > 0 {
			run.ServerRejected[k] = d
		}
	}
	return run, nil
}

// ApplyChange applies the scenario's what-if change and waits until the
// server uses it.
func (s *Session) ApplyChange(ctx context.Context) error {
	ch := s.Scenario.WhatIf
	if err := loadgen.Apply(ctx, s.Cluster.Client(testcluster.Admin), ch.Levels, ch.Schemas); err != nil {
		return err
	}
	return s.waitForLevels(ctx, &ch)
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

// serverRejected reads apiserver_flowcontrol_rejected_requests_total per
// priority level.
func (s *Session) serverRejected(ctx context.Context) (map[string]float64, error) {
	body, err := s.metrics(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, line := range strings.Split(body, "\n") {
		if !strings.HasPrefix(line, "apiserver_flowcontrol_rejected_requests_total{") {
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
	return out, nil
}

// Record runs the scenario once on a fresh control plane and writes the
// recording to out: the apiserver's httplog and audit log of the load
// (gzipped, from the first line written after the set-up), a bundle of its
// objects, version and metrics, the change as YAML and recording.json. With
// whatIf, the change is then applied and the same plan sent again; its
// figures go to recording.json.
func Record(ctx context.Context, sc Scenario, seed uint64, out string, whatIf bool, progress io.Writer) (*Result, error) {
	tmp, err := os.MkdirTemp("", "apf-record-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	s, err := Start(ctx, sc, seed, tmp, progress)
	if err != nil {
		return nil, err
	}
	defer s.Stop()
	a := s.Cluster.APIServers[0]
	logFrom, auditFrom := size(a.LogFile), size(a.AuditLog)
	res := &Result{Scenario: sc.Name, About: sc.About, Seed: seed, Burners: sc.Burners, WhatIfAbout: sc.WhatIf.About}
	run, err := s.RunLoad(ctx)
	if err != nil {
		return nil, err
	}
	res.Recorded = *run
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, err
	}
	if err := gzipTail(a.LogFile, logFrom, filepath.Join(out, HTTPLogFile)); err != nil {
		return nil, err
	}
	if err := gzipTail(a.AuditLog, auditFrom, filepath.Join(out, AuditLogFile)); err != nil {
		return nil, err
	}
	capture, err := (&fetch.ClusterSource{Config: s.Cluster.RESTConfig(testcluster.Admin)}).Capture(ctx,
		dump.CaptureOptions{Parts: dump.PartObjects | dump.PartVersion | dump.PartMetrics})
	if err != nil {
		return nil, err
	}
	bundle := filepath.Join(out, BundleFile)
	_ = os.Remove(bundle)
	if err := dump.WriteBundle(bundle, capture, dump.Manifest{Source: "local control plane, scenario " + sc.Name, CreatedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}); err != nil {
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
		if err := s.ApplyChange(ctx); err != nil {
			return nil, err
		}
		logFrom, auditFrom := size(a.LogFile), size(a.AuditLog)
		if res.WhatIf, err = s.RunLoad(ctx); err != nil {
			return nil, err
		}
		if err := gzipTail(a.LogFile, logFrom, filepath.Join(out, WhatIfHTTPLogFile)); err != nil {
			return nil, err
		}
		if err := gzipTail(a.AuditLog, auditFrom, filepath.Join(out, WhatIfAuditLogFile)); err != nil {
			return nil, err
		}
	}
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return nil, err
	}
	return res, os.WriteFile(filepath.Join(out, ResultFile), append(b, '\n'), 0o644)
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

// Size is a file's size (0 when it cannot be read): where the lines
// written after now start.
func Size(p string) int64 { return size(p) }

// CopyTail copies src from byte offset from to dst, uncompressed.
func CopyTail(src string, from int64, dst string) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	from = min(from, int64(len(data)))
	return os.WriteFile(dst, data[from:], 0o644)
}

func size(p string) int64 {
	st, err := os.Stat(p)
	if err != nil {
		return 0
	}
	return st.Size()
}

// gzipTail writes src from byte offset from (the start of the next line) to
// dst, gzipped.
func gzipTail(src string, from int64, dst string) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	if from > int64(len(data)) {
		from = int64(len(data))
	}
	// from is the file's size when the load began: a line boundary
	data = data[from:]
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if _, err := zw.Write(data); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return os.WriteFile(dst, buf.Bytes(), 0o644)
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return strings.TrimSpace(string(b))
	}
	return strings.Join(f[:3], " ")
}

// startBurners starts n busy-looping shell processes and returns what stops
// them (each by its own process group).
func startBurners(n int) (func(), error) {
	var cmds []*exec.Cmd
	stop := func() {
		for _, c := range cmds {
			_ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
			_ = c.Wait()
		}
	}
	for range n {
		c := exec.Command("sh", "-c", "while :; do :; done")
		c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := c.Start(); err != nil {
			stop()
			return nil, fmt.Errorf("starting a CPU burner: %w", err)
		}
		cmds = append(cmds, c)
	}
	return stop, nil
}
