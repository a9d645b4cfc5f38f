package loadgen

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"k8s.io/client-go/rest"
)

// childEnv, set in a process's environment, makes RunChildIfAsked run the
// load of a plan's share that its parent writes on its standard input.
const childEnv = "KUBECTL_APF_LOADGEN_CHILD"

// RunChildIfAsked turns this process into one client process of a plan
// run with PlanOptions.Processes, and exits, when its parent started it so
// (RunPlan re-executes os.Executable() with an environment variable);
// otherwise it returns at once. Every program that runs a plan with
// processes calls it first thing in main (a test binary, in TestMain).
func RunChildIfAsked() {
	if os.Getenv(childEnv) == "" {
		return
	}
	if err := runChild(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "loadgen client process: %v\n", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// childFlow is what a client process needs of a flow: where to send its
// GETs and how to authenticate (rest.Config's connection fields; the
// child sets no client-side rate limit, as the load users' configs).
type childFlow struct {
	URL         string `json:"url"`
	Host        string `json:"host"`
	BearerToken string `json:"bearerToken,omitempty"`
	CAData      []byte `json:"caData,omitempty"`
	CAFile      string `json:"caFile,omitempty"`
	CertData    []byte `json:"certData,omitempty"`
	CertFile    string `json:"certFile,omitempty"`
	KeyData     []byte `json:"keyData,omitempty"`
	KeyFile     string `json:"keyFile,omitempty"`
	ServerName  string `json:"serverName,omitempty"`
	Insecure    bool   `json:"insecure,omitempty"`
}

func (f childFlow) config() *rest.Config {
	return &rest.Config{
		Host:        f.Host,
		BearerToken: f.BearerToken,
		QPS:         -1,
		TLSClientConfig: rest.TLSClientConfig{
			CAData: f.CAData, CAFile: f.CAFile, CertData: f.CertData, CertFile: f.CertFile,
			KeyData: f.KeyData, KeyFile: f.KeyFile, ServerName: f.ServerName, Insecure: f.Insecure,
		},
	}
}

// childShot is one request of a child's share: its index in the plan's
// shots, its flow and its offset from the plan's start.
type childShot struct {
	Index int           `json:"i"`
	Flow  int           `json:"flow"`
	At    time.Duration `json:"at"`
}

// childSpec is the first line a parent writes to a child: its flows and
// its shots. The second is the plan's start (childStart), written once
// every child said it is ready.
type childSpec struct {
	Flows []childFlow   `json:"flows"`
	Shots []childShot   `json:"shots"`
	Limit time.Duration `json:"limit"`
}

type childStart struct {
	Start time.Time `json:"start"`
}

// childResult is one line a child writes per request; the first line it
// writes is {"ready":true}.
type childResult struct {
	Ready      bool          `json:"ready,omitempty"`
	Index      int           `json:"i"`
	Status     int           `json:"status,omitempty"`
	RetryAfter string        `json:"retryAfter,omitempty"`
	FlowSchema string        `json:"flowSchema,omitempty"`
	Priority   string        `json:"priority,omitempty"`
	Err        string        `json:"err,omitempty"`
	Late       bool          `json:"late,omitempty"`
	Took       time.Duration `json:"took,omitempty"`
}

// splitShots deals the plan's shots to n processes in turn: process k
// sends shots k, k+n, k+2n, …
func splitShots(shots []Shot, n int) [][]childShot {
	out := make([][]childShot, n)
	for i, s := range shots {
		out[i%n] = append(out[i%n], childShot{Index: i, Flow: s.Flow, At: s.At})
	}
	return out
}

// runChild is a client process: it reads its spec, builds one transport
// per flow, says it is ready, reads the start, sends each shot at its time
// and writes one result per request.
func runChild(in io.Reader, out io.Writer) error {
	r := bufio.NewReader(in)
	var spec childSpec
	if err := readJSONLine(r, &spec); err != nil {
		return fmt.Errorf("reading the plan's share: %w", err)
	}
	clients := make([]*http.Client, len(spec.Flows))
	for i, f := range spec.Flows {
		rt, err := rest.TransportFor(f.config())
		if err != nil {
			return err
		}
		clients[i] = &http.Client{Transport: rt, Timeout: 2 * time.Minute}
	}
	var mu sync.Mutex
	enc := json.NewEncoder(out)
	write := func(v childResult) error {
		mu.Lock()
		defer mu.Unlock()
		return enc.Encode(v)
	}
	if err := write(childResult{Ready: true, Index: -1}); err != nil {
		return err
	}
	var st childStart
	if err := readJSONLine(r, &st); err != nil {
		return fmt.Errorf("reading the plan's start: %w", err)
	}
	ctx, cancel := context.WithDeadline(context.Background(), st.Start.Add(spec.Limit))
	defer cancel()
	var (
		wg   sync.WaitGroup
		werr error
		once sync.Once
	)
	for _, s := range spec.Shots {
		if d := time.Until(st.Start.Add(s.At)); d > 0 {
			time.Sleep(d)
		}
		late := time.Since(st.Start.Add(s.At)) > lateAfter
		wg.Add(1)
		go func() {
			defer wg.Done()
			res := send(ctx, clients[s.Flow], spec.Flows[s.Flow].URL, s.Flow, nil)
			cr := childResult{Index: s.Index, Status: res.Status, RetryAfter: res.RetryAfter, FlowSchema: res.FlowSchema, Priority: res.Priority, Late: late, Took: res.ResponseTime}
			if res.Err != nil {
				cr = childResult{Index: s.Index, Err: res.Err.Error(), Late: late}
			}
			if err := write(cr); err != nil {
				once.Do(func() { werr = err })
			}
		}()
	}
	wg.Wait()
	return werr
}

func readJSONLine(r *bufio.Reader, v any) error {
	line, err := r.ReadBytes('\n')
	if err != nil && !(errors.Is(err, io.EOF) && len(line) > 0) {
		return err
	}
	return json.Unmarshal(line, v)
}

// lateAfter is how long after its planned time a request may leave before
// it counts as late.
const lateAfter = 50 * time.Millisecond

// childCommand returns the command of one client process: this program
// again, with childEnv set. Tests replace it.
var childCommand = func() (*exec.Cmd, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), childEnv+"=1")
	return cmd, nil
}

// child is one running client process.
type child struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	out    *bufio.Reader
	stderr *limitedWriter
	shots  map[int]bool // the indices of the shots it was given
}

// runPlanProcesses is RunPlan with the shots sent by o.Processes client
// processes (see PlanOptions.Processes).
func runPlanProcesses(ctx context.Context, o PlanOptions, urls []string, shots []Shot, rep *PlanReport) error {
	flows := make([]childFlow, len(o.Flows))
	for i, fl := range o.Flows {
		c := fl.Config
		flows[i] = childFlow{URL: urls[i], Host: c.Host, BearerToken: c.BearerToken,
			CAData: c.CAData, CAFile: c.CAFile, CertData: c.CertData, CertFile: c.CertFile,
			KeyData: c.KeyData, KeyFile: c.KeyFile, ServerName: c.ServerName, Insecure: c.Insecure}
	}
	// every answer comes within the client timeout of its planned time
	limit := o.Duration + 2*time.Minute + 10*time.Second
	var (
		children []*child
		mu       sync.Mutex
	)
	// ctx done ends every child (their reads then end too)
	stop := context.AfterFunc(ctx, func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range children {
			_ = c.cmd.Process.Kill()
		}
	})
	defer stop()
	defer func() {
		for _, c := range children {
			_ = c.stdin.Close()
			if c.cmd.ProcessState == nil {
				_ = c.cmd.Process.Kill()
				_ = c.cmd.Wait()
			}
		}
	}()
	for k, share := range splitShots(shots, o.Processes) {
		cmd, err := childCommand()
		if err != nil {
			return err
		}
		// a child dies with this process
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		c := &child{cmd: cmd, stderr: &limitedWriter{n: 4096}, shots: map[int]bool{}}
		for _, s := range share {
			c.shots[s.Index] = true
		}
		cmd.Stderr = c.stderr
		if c.stdin, err = cmd.StdinPipe(); err != nil {
			return err
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			return err
		}
		c.out = bufio.NewReaderSize(stdout, 64<<10)
		if err := cmd.Start(); err != nil {
			return fmt.Errorf("starting client process %d: %w", k, err)
		}
		mu.Lock()
		children = append(children, c)
		mu.Unlock()
		b, err := json.Marshal(childSpec{Flows: flows, Shots: share, Limit: limit})
		if err != nil {
			return err
		}
		if _, err := c.stdin.Write(append(b, '\n')); err != nil {
			return c.failed(k, fmt.Errorf("writing its share: %w", err))
		}
	}
	// every child ready (its transports built) before the start is set
	deadline := time.Now().Add(2 * time.Minute)
	for k, c := range children {
		var first childResult
		if err := c.next(&first, deadline); err != nil || !first.Ready {
			if err == nil {
				err = errors.New("its first line is not {\"ready\":true}")
			}
			return c.failed(k, err)
		}
	}
	start := time.Now()
	if o.Schedule != nil {
		var err error
		if start, err = o.Schedule(); err != nil {
			return err
		}
	} else if !o.Start.IsZero() {
		start = o.Start
	}
	rep.Started = start
	b, err := json.Marshal(childStart{Start: start})
	if err != nil {
		return err
	}
	for k, c := range children {
		if _, err := c.stdin.Write(append(b, '\n')); err != nil {
			return c.failed(k, fmt.Errorf("writing the start: %w", err))
		}
	}
	// read every child's results at once: one that blocks on a full pipe
	// would otherwise hold its requests back
	results := make([][]childResult, len(children))
	errs := make([]error, len(children))
	var wg sync.WaitGroup
	end := start.Add(limit + 10*time.Second)
	for k, c := range children {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[k], errs[k] = c.collect(k, end)
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	merge(rep, shots, results, o.Names)
	return nil
}

// next reads one result line before deadline.
func (c *child) next(v *childResult, deadline time.Time) error {
	type line struct {
		b   []byte
		err error
	}
	ch := make(chan line, 1)
	go func() {
		b, err := c.out.ReadBytes('\n')
		ch <- line{b, err}
	}()
	select {
	case l := <-ch:
		if l.err != nil {
			return l.err
		}
		if err := json.Unmarshal(l.b, v); err != nil {
			return fmt.Errorf("it wrote %q: %w", truncate(string(l.b), 200), err)
		}
		return nil
	case <-time.After(time.Until(deadline)):
		_ = c.cmd.Process.Kill()
		return fmt.Errorf("no answer by %s", deadline.Format(time.RFC3339))
	}
}

// collect reads a child's results until it exits, and checks that it
// answered for every shot it was given and exited cleanly.
func (c *child) collect(k int, deadline time.Time) ([]childResult, error) {
	var out []childResult
	timer := time.AfterFunc(time.Until(deadline), func() { _ = c.cmd.Process.Kill() })
	defer timer.Stop()
	for {
		b, err := c.out.ReadBytes('\n')
		if len(b) > 0 {
			var r childResult
			if jerr := json.Unmarshal(b, &r); jerr != nil || r.Ready || !c.shots[r.Index] {
				_ = c.cmd.Process.Kill()
				_ = c.cmd.Wait()
				return nil, c.failed(k, fmt.Errorf("it wrote %q, not the result of one of its requests", truncate(string(b), 200)))
			}
			delete(c.shots, r.Index) // one result per request
			out = append(out, r)
		}
		if err != nil {
			break
		}
	}
	if err := c.cmd.Wait(); err != nil {
		return nil, c.failed(k, err)
	}
	if len(c.shots) > 0 {
		return nil, c.failed(k, fmt.Errorf("it answered for %d of its %d requests", len(out), len(out)+len(c.shots)))
	}
	return out, nil
}

// failed is err of client process k, with how it exited and the start of
// its stderr (it is ended first if it still runs).
func (c *child) failed(k int, err error) error {
	if c.cmd.ProcessState == nil {
		_ = c.cmd.Process.Kill()
		_ = c.cmd.Wait()
	}
	msg := fmt.Sprintf("client process %d: %%w (%s", k, c.cmd.ProcessState)
	if e := strings.TrimSpace(c.stderr.String()); e != "" {
		msg += "; its stderr: " + truncate(e, 500)
	}
	return fmt.Errorf(msg+")", err)
}

// merge counts the children's results into rep as the in-process path
// counts its responses.
func merge(rep *PlanReport, shots []Shot, results [][]childResult, names map[string]string) {
	name := func(uid string) string {
		if n, ok := names[uid]; ok {
			return n
		}
		return uid
	}
	for _, rs := range results {
		for _, r := range rs {
			res := Result{Flow: shots[r.Index].Flow, Status: r.Status, RetryAfter: r.RetryAfter,
				FlowSchema: name(r.FlowSchema), Priority: name(r.Priority), ResponseTime: r.Took}
			if r.Err != "" {
				res = Result{Flow: shots[r.Index].Flow, Err: errors.New(r.Err)}
			}
			rep.count(res, r.Late)
		}
	}
}

// limitedWriter keeps the first n bytes written to it.
type limitedWriter struct {
	mu sync.Mutex
	b  strings.Builder
	n  int
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if room := l.n - l.b.Len(); room > 0 {
		l.b.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (l *limitedWriter) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
