// Package testprom starts a real Prometheus server (built by hack/bin.sh,
// like kube-apiserver) on 127.0.0.1 for tests, benchmarks and the demo: it
// scrapes the local control plane's apiservers every second or two, or
// serves blocks made beforehand with promtool.
package testprom

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kubectl-apf/kubectl-apf/internal/testharness/testcluster"
)

// Target is one apiserver Prometheus scrapes.
type Target struct {
	// Address is HOST:PORT of an https endpoint serving /metrics.
	Address string
	// Token authenticates the scrapes; CAFile verifies the server.
	Token  string
	CAFile string
	// ServerName is the name the server's certificate is checked against
	// when Address is not one of its names (a forwarded address).
	ServerName string
}

// Options configures a Prometheus.
type Options struct {
	// Dir holds the configuration, the TSDB and the log; a test's own
	// temporary directory when empty (StartT).
	Dir string
	// Targets are scraped with job="apiserver" every ScrapeInterval (1 s
	// when zero).
	Targets        []Target
	ScrapeInterval time.Duration
	// ExternalLabels are added to every scraped series (cluster="dev").
	ExternalLabels map[string]string
	// LookbackDelta is how far back an instant vector looks for a sample
	// (Prometheus's default of 5 m when zero); stores of sparse samples,
	// like the scale benchmark's, need more.
	LookbackDelta time.Duration
	// Netns runs Prometheus inside this network namespace (ip netns
	// exec), listening on ListenHost, an address of the namespace
	// (127.0.0.1 when empty).
	Netns, ListenHost string
	// Detach leaves Prometheus running after this process exits (for the
	// demo); Stop ends it.
	Detach bool
}

// Prometheus is a running server.
type Prometheus struct {
	URL            string `json:"url"`
	Dir            string `json:"dir"`
	LogFile        string `json:"logFile"`
	PID            int    `json:"pid"`
	ScrapeInterval time.Duration

	done chan struct{}
	err  error
}

// TargetsOf lists every apiserver of a local control plane, scraped as the
// admin (exempt from APF, so a scrape is never rejected during a test).
func TargetsOf(c *testcluster.Cluster) []Target {
	var out []Target
	for _, a := range c.APIServers {
		out = append(out, Target{Address: strings.TrimPrefix(a.URL, "https://"), Token: c.User(testcluster.Admin).Token, CAFile: c.CAFile})
	}
	return out
}

// config writes prometheus.yml.
func config(o Options) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "global:\n  scrape_interval: %s\n  scrape_timeout: %s\n", dur(o.ScrapeInterval), dur(o.ScrapeInterval))
	if len(o.ExternalLabels) > 0 {
		b.WriteString("  external_labels:\n")
		for k, v := range o.ExternalLabels {
			fmt.Fprintf(&b, "    %s: %q\n", k, v)
		}
	}
	if len(o.Targets) == 0 {
		return b.String(), nil
	}
	b.WriteString("scrape_configs:\n")
	for i, t := range o.Targets {
		tok := filepath.Join(o.Dir, fmt.Sprintf("token-%d", i))
		if err := os.WriteFile(tok, []byte(t.Token), 0o600); err != nil {
			return "", err
		}
		// One job per target keeps each one's credentials; they share the
		// job label.
		fmt.Fprintf(&b, "- job_name: apiserver-%d\n  scheme: https\n  authorization:\n    credentials_file: %s\n  tls_config:\n    ca_file: %s\n", i, tok, t.CAFile)
		if t.ServerName != "" {
			fmt.Fprintf(&b, "    server_name: %q\n", t.ServerName)
		}
		fmt.Fprintf(&b, "  static_configs:\n  - targets: [%q]\n    labels:\n      job: apiserver\n", t.Address)
		b.WriteString("  honor_labels: false\n  relabel_configs:\n  - target_label: job\n    replacement: apiserver\n")
	}
	return b.String(), nil
}

func dur(d time.Duration) string { return fmt.Sprintf("%dms", d.Milliseconds()) }

// Start starts Prometheus and waits until it is ready. On error it is
// stopped again.
func Start(ctx context.Context, o Options) (*Prometheus, error) {
	if o.ScrapeInterval == 0 {
		o.ScrapeInterval = time.Second
	}
	if o.Dir == "" {
		return nil, errors.New("testprom: Options.Dir is empty")
	}
	// Prometheus runs in o.Dir, so a relative directory (apf-devcluster's
	// default .cluster) would be looked up again below itself.
	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return nil, err
	}
	o.Dir = dir
	bin, err := testcluster.Binary("prometheus")
	if err != nil {
		return nil, err
	}
	cfg, err := config(o)
	if err != nil {
		return nil, err
	}
	cfgFile := filepath.Join(o.Dir, "prometheus.yml")
	if err := os.WriteFile(cfgFile, []byte(cfg), 0o600); err != nil {
		return nil, err
	}
	var last error
	for attempt := 0; attempt < 3; attempt++ {
		p, err := start(ctx, o, bin, cfgFile)
		if err == nil {
			return p, nil
		}
		last = err
		if !errors.Is(err, errExited) {
			break
		}
	}
	return nil, last
}

var errExited = errors.New("exited during start-up")

func start(ctx context.Context, o Options, bin, cfgFile string) (*Prometheus, error) {
	port, err := testcluster.FreePort()
	if err != nil {
		return nil, err
	}
	host := "127.0.0.1"
	if o.ListenHost != "" {
		host = o.ListenHost
	}
	p := &Prometheus{URL: "http://" + net.JoinHostPort(host, strconv.Itoa(port)), Dir: o.Dir, LogFile: filepath.Join(o.Dir, "prometheus.log"),
		ScrapeInterval: o.ScrapeInterval, done: make(chan struct{})}
	args := []string{
		"--config.file=" + cfgFile,
		"--storage.tsdb.path=" + filepath.Join(o.Dir, "data"),
		"--web.listen-address=" + net.JoinHostPort(host, strconv.Itoa(port)),
		"--storage.tsdb.retention.time=3650d",
		"--log.level=warn",
	}
	if o.LookbackDelta > 0 {
		args = append(args, "--query.lookback-delta="+dur(o.LookbackDelta))
	}
	log, err := os.OpenFile(p.LogFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	defer log.Close()
	cmd := exec.Command(bin, args...)
	if o.Netns != "" {
		// ip execs Prometheus after entering the namespace: same process.
		cmd = exec.Command("ip", append([]string{"netns", "exec", o.Netns, bin}, args...)...)
	}
	cmd.Stdout, cmd.Stderr, cmd.Dir = log, log, o.Dir
	if o.Detach {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	} else {
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting prometheus: %w", err)
	}
	p.PID = cmd.Process.Pid
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for {
		select {
		case <-p.done:
			return nil, fmt.Errorf("prometheus %w (%v); its log %s:\n%s", errExited, p.err, p.LogFile, testcluster.Tail(p.LogFile, 20))
		case <-ctx.Done():
			_ = p.Stop()
			return nil, fmt.Errorf("prometheus not ready: %w; its log %s:\n%s", ctx.Err(), p.LogFile, testcluster.Tail(p.LogFile, 20))
		case <-time.After(100 * time.Millisecond):
		}
		resp, err := http.Get(p.URL + "/-/ready")
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p, nil
			}
		}
	}
}

// StartT starts Prometheus for one test in a directory of its own and stops
// it when the test ends, printing the end of its log if the test failed.
func StartT(t testing.TB, o Options) *Prometheus {
	t.Helper()
	if testing.Short() {
		t.Skip("Prometheus does not run with -short")
	}
	if o.Dir == "" {
		o.Dir = t.TempDir()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	p, err := Start(ctx, o)
	if err != nil {
		t.Fatalf("starting Prometheus: %v", err)
	}
	t.Logf("Prometheus up at %s, scraping %d target(s) every %s", p.URL, len(o.Targets), o.ScrapeInterval)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("--- last lines of %s ---\n%s", p.LogFile, testcluster.Tail(p.LogFile, 30))
		}
		if err := p.Stop(); err != nil {
			t.Errorf("stopping Prometheus: %v", err)
		}
	})
	return p
}

// Stop ends Prometheus: SIGTERM, then SIGKILL after 15 seconds.
func (p *Prometheus) Stop() error {
	if p == nil || p.PID == 0 {
		return nil
	}
	testcluster.StopPID(p.PID, p.done, 15*time.Second)
	return nil
}
