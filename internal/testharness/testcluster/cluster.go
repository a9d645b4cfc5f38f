// Package testcluster starts a real local Kubernetes control plane for tests and
// the demo: an etcd and one or more kube-apiservers (v1.37.1, built from the Go
// module k8s.io/kubernetes by hack/bin.sh) listening on 127.0.0.1 only, with
// static-token users, RBAC, a Metadata-level audit log and -v=3 logs (so the
// httplog lines carry the apf_* fields), and deliberately small
// --max-requests-inflight / --max-mutating-requests-inflight so that APF limits
// are easy to reach.
//
// Tests use StartT, which gives each test its own data directory and free ports
// and guarantees teardown; the apf-devcluster program uses Start with Detach to
// leave the control plane running for "make cluster-up" and "make demo".
package testcluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Options configures a local control plane.
type Options struct {
	// Dir holds all data, keys, logs and the kubeconfig. It must exist.
	Dir string
	// MaxRequestsInflight and MaxMutatingRequestsInflight are passed to
	// kube-apiserver; their sum is APF's server concurrency limit.
	// Zero means 10 and 5.
	MaxRequestsInflight         int
	MaxMutatingRequestsInflight int
	// ExtraAPIServerArgs are appended to every kube-apiserver's command line.
	ExtraAPIServerArgs []string
	// Detach leaves the processes running after this process exits (for
	// "make cluster-up"); Stop or StopDir ends them.
	Detach bool
	// Progress, when set, receives one line per step.
	Progress io.Writer
	// CPU, when set, puts kube-apiserver and etcd into cgroups of their own
	// with fixed CPU quotas and a large weight (see CPU), or with
	// CPU.Shared leaves them in this process's; Start fails with an error
	// wrapping ErrNoCgroups when that cannot be done.
	CPU *CPU
}

// Cluster is a running local control plane.
type Cluster struct {
	Dir        string       `json:"dir"`
	Users      []User       `json:"users"`
	CAFile     string       `json:"caFile"`
	EtcdURL    string       `json:"etcdURL"`
	Etcd       *Process     `json:"etcd"`
	APIServers []*APIServer `json:"apiServers"`
	Kubeconfig string       `json:"kubeconfig"`

	opts   Options
	pki    *pki
	caData []byte
}

// APIServer is one kube-apiserver instance of the control plane.
type APIServer struct {
	Name     string   `json:"name"`
	Port     int      `json:"port"`
	URL      string   `json:"url"`
	LogFile  string   `json:"logFile"`
	AuditLog string   `json:"auditLog"`
	Args     []string `json:"args"`
	Proc     *Process `json:"process"`
}

// Process is a child process of the control plane.
type Process struct {
	Name    string `json:"name"`
	PID     int    `json:"pid"`
	LogFile string `json:"logFile"`

	cmd   *exec.Cmd
	done  chan struct{}
	err   error
	group *CPUGroup
}

const stateFile = "state.json"

// Start starts etcd and one kube-apiserver and waits until the apiserver is ready
// and has created its default APF configuration. On error everything started is
// stopped again.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	// Ports are picked free but only taken when etcd and kube-apiserver bind
	// them, so a process started by a parallel test can take one first: then
	// the new process exits at once, and a second try with fresh ports works.
	var err error
	for attempt := 1; attempt <= 3; attempt++ {
		var c *Cluster
		if c, err = start(ctx, opts); err == nil {
			return c, nil
		}
		if !errors.Is(err, errExitedEarly) || attempt == 3 {
			return nil, err
		}
		if opts.Progress != nil {
			fmt.Fprintf(opts.Progress, "start-up attempt %d failed, trying again with other ports: %v\n", attempt, err)
		}
		_ = os.RemoveAll(filepath.Join(opts.Dir, "etcd"))
	}
	return nil, err
}

func start(ctx context.Context, opts Options) (_ *Cluster, err error) {
	if opts.Dir == "" {
		return nil, errors.New("testcluster: Options.Dir is required")
	}
	if opts.MaxRequestsInflight == 0 {
		opts.MaxRequestsInflight = 10
	}
	if opts.MaxMutatingRequestsInflight == 0 {
		opts.MaxMutatingRequestsInflight = 5
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, err
	}
	opts.Dir = dir
	c := &Cluster{Dir: dir, opts: opts, Users: defaultUsers()}
	defer func() {
		if err != nil {
			_ = c.Stop()
		}
	}()

	if c.pki, err = writePKI(dir); err != nil {
		return nil, fmt.Errorf("generating certificates: %w", err)
	}
	c.CAFile, c.caData = c.pki.CAFile, c.pki.CAData
	if err := writeTokenFile(filepath.Join(dir, "tokens.csv"), c.Users); err != nil {
		return nil, fmt.Errorf("writing token file: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "audit-policy.yaml"), []byte(auditPolicy), 0o600); err != nil {
		return nil, err
	}
	if err := c.startEtcd(ctx); err != nil {
		return nil, err
	}
	if _, err := c.AddAPIServer(ctx); err != nil {
		return nil, err
	}
	c.Kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := c.WriteKubeconfig(c.Kubeconfig); err != nil {
		return nil, err
	}
	if err := c.saveState(); err != nil {
		return nil, err
	}
	return c, nil
}

const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
`

func (c *Cluster) progress(format string, args ...any) {
	if c.opts.Progress != nil {
		fmt.Fprintf(c.opts.Progress, format+"\n", args...)
	}
}

func (c *Cluster) startEtcd(ctx context.Context) error {
	bin, err := Binary("etcd")
	if err != nil {
		return err
	}
	clientPort, err := FreePort()
	if err != nil {
		return err
	}
	peerPort, err := FreePort()
	if err != nil {
		return err
	}
	c.EtcdURL = fmt.Sprintf("http://127.0.0.1:%d", clientPort)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", peerPort)
	args := []string{
		"--name=apf-local",
		"--data-dir=" + filepath.Join(c.Dir, "etcd"),
		"--listen-client-urls=" + c.EtcdURL,
		"--advertise-client-urls=" + c.EtcdURL,
		"--listen-peer-urls=" + peerURL,
		"--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=apf-local=" + peerURL,
		"--log-level=warn",
		// Test data need not survive a crash, and fsync dominates on slow disks.
		"--unsafe-no-fsync",
	}
	c.progress("starting etcd on %s", c.EtcdURL)
	c.Etcd, err = c.startProcess("etcd", bin, args, filepath.Join(c.Dir, "etcd.log"))
	if err != nil {
		return err
	}
	if cpu := c.opts.CPU; cpu != nil && !cpu.Shared {
		if c.Etcd.group, err = NewCPUGroup("etcd", cpu.Shares, cpu.Etcd, cpu.Period); err != nil {
			return err
		}
		if err := c.Etcd.group.Add(c.Etcd.PID); err != nil {
			return err
		}
	}
	return waitFor(ctx, 60*time.Second, c.Etcd, func() error {
		resp, err := http.Get(c.EtcdURL + "/health")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("etcd /health: %s", resp.Status)
		}
		return nil
	})
}

// AddAPIServer starts another kube-apiserver on a free port, sharing the
// cluster's etcd, and waits until it is ready. The first one is the primary.
func (c *Cluster) AddAPIServer(ctx context.Context) (*APIServer, error) {
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	name := "kube-apiserver"
	if n := len(c.APIServers); n > 0 {
		name = fmt.Sprintf("kube-apiserver-%d", n+1)
	}
	a := &APIServer{
		Name:     name,
		Port:     port,
		URL:      fmt.Sprintf("https://127.0.0.1:%d", port),
		LogFile:  filepath.Join(c.Dir, name+".log"),
		AuditLog: filepath.Join(c.Dir, name+"-audit.log"),
	}
	a.Args = c.apiserverArgs(a)
	c.APIServers = append(c.APIServers, a)
	if err := c.startAPIServer(ctx, a); err != nil {
		return nil, err
	}
	return a, c.saveState()
}

func (c *Cluster) apiserverArgs(a *APIServer) []string {
	args := []string{
		"--etcd-servers=" + c.EtcdURL,
		"--bind-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", a.Port),
		// Loopback only. kube-apiserver refuses a loopback advertise address for
		// its endpoint reconciler, so the reconciler is off: nothing is ever
		// advertised to, or reached at, any other address.
		"--advertise-address=127.0.0.1",
		"--endpoint-reconciler-type=none",
		"--tls-cert-file=" + c.pki.CertFile,
		"--tls-private-key-file=" + c.pki.KeyFile,
		"--token-auth-file=" + filepath.Join(c.Dir, "tokens.csv"),
		"--authorization-mode=RBAC",
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-signing-key-file=" + c.pki.SAKeyFile,
		"--service-account-key-file=" + c.pki.SAPubKeyFile,
		"--audit-policy-file=" + filepath.Join(c.Dir, "audit-policy.yaml"),
		"--audit-log-path=" + a.AuditLog,
		"--audit-log-maxsize=0",
		fmt.Sprintf("--max-requests-inflight=%d", c.opts.MaxRequestsInflight),
		fmt.Sprintf("--max-mutating-requests-inflight=%d", c.opts.MaxMutatingRequestsInflight),
		"--enable-priority-and-fairness=true",
		"--profiling=false",
		"--cert-dir=" + filepath.Join(c.Dir, a.Name+"-certs"),
		// -v=3 makes httplog print one "HTTP" line per request, with the apf_* fields.
		"--v=3",
	}
	return append(args, c.opts.ExtraAPIServerArgs...)
}

func (c *Cluster) startAPIServer(ctx context.Context, a *APIServer) error {
	bin, err := Binary("kube-apiserver")
	if err != nil {
		return err
	}
	c.progress("starting %s on %s", a.Name, a.URL)
	a.Proc, err = c.startProcess(a.Name, bin, a.Args, a.LogFile)
	if err != nil {
		return err
	}
	if cpu := c.opts.CPU; cpu != nil && !cpu.Shared {
		if a.Proc.group, err = NewCPUGroup(a.Name, cpu.Shares, cpu.APIServer, cpu.Period); err != nil {
			return err
		}
		if err := a.Proc.group.Add(a.Proc.PID); err != nil {
			return err
		}
	}
	admin := c.RESTConfigFor(a, Admin)
	rt, err := rest.TransportFor(admin)
	if err != nil {
		return err
	}
	hc := &http.Client{Transport: rt, Timeout: 5 * time.Second}
	get := func(path string) error {
		resp, err := hc.Get(a.URL + path)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
			return fmt.Errorf("GET %s: %s: %s", path, resp.Status, strings.TrimSpace(string(body)))
		}
		return nil
	}
	// Ready, and the APF configuration ensurer has created the suggested objects.
	return waitFor(ctx, 120*time.Second, a.Proc, func() error {
		if err := get("/readyz"); err != nil {
			return err
		}
		return get("/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas/global-default")
	})
}

// StopAPIServer stops the i-th kube-apiserver (for restart tests); StartAPIServer
// starts it again on the same port.
func (c *Cluster) StopAPIServer(i int) error {
	return c.APIServers[i].Proc.Stop()
}

// StartAPIServer restarts the i-th kube-apiserver with its original arguments.
func (c *Cluster) StartAPIServer(ctx context.Context, i int) error {
	if err := c.startAPIServer(ctx, c.APIServers[i]); err != nil {
		return err
	}
	return c.saveState()
}

// Stop stops every process of the control plane, apiservers first.
func (c *Cluster) Stop() error {
	var errs []error
	for i := len(c.APIServers) - 1; i >= 0; i-- {
		if p := c.APIServers[i].Proc; p != nil {
			errs = append(errs, p.Stop())
		}
	}
	if c.Etcd != nil {
		errs = append(errs, c.Etcd.Stop())
	}
	return errors.Join(errs...)
}

// User returns the named static-token user.
func (c *Cluster) User(name string) User {
	for _, u := range c.Users {
		if u.Name == name {
			return u
		}
	}
	panic(fmt.Sprintf("testcluster: no user %q", name))
}

// URL is the primary kube-apiserver's URL.
func (c *Cluster) URL() string { return c.APIServers[0].URL }

// RESTConfig returns a client configuration for the named user on the primary
// kube-apiserver. Client-side rate limiting is off, so that every request
// reaches the server and APF alone decides.
func (c *Cluster) RESTConfig(user string) *rest.Config {
	return c.RESTConfigFor(c.APIServers[0], user)
}

// RESTConfigFor is RESTConfig for a given apiserver instance.
func (c *Cluster) RESTConfigFor(a *APIServer, user string) *rest.Config {
	return c.TokenConfigFor(a, c.User(user).Token)
}

// TokenConfigFor returns a client configuration that authenticates with token
// (a service account token, for example) on the given instance.
func (c *Cluster) TokenConfigFor(a *APIServer, token string) *rest.Config {
	return &rest.Config{
		Host:            a.URL,
		BearerToken:     token,
		TLSClientConfig: rest.TLSClientConfig{CAData: c.caData},
		QPS:             -1,
		Timeout:         30 * time.Second,
	}
}

// WriteKubeconfig writes a kubeconfig whose current context is the admin on the
// primary apiserver, with one more context per user (named "apf-local-USER").
func (c *Cluster) WriteKubeconfig(path string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["apf-local"] = &clientcmdapi.Cluster{Server: c.URL(), CertificateAuthorityData: c.caData}
	for _, u := range c.Users {
		cfg.AuthInfos[u.Name] = &clientcmdapi.AuthInfo{Token: u.Token}
		ctxName := "apf-local-" + strings.ReplaceAll(u.Name, ":", "-")
		if u.Name == Admin {
			ctxName = "apf-local"
		}
		cfg.Contexts[ctxName] = &clientcmdapi.Context{Cluster: "apf-local", AuthInfo: u.Name, Namespace: "default"}
	}
	cfg.CurrentContext = "apf-local"
	return clientcmd.WriteToFile(*cfg, path)
}

func (c *Cluster) saveState() error {
	data, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(c.Dir, stateFile), data, 0o600)
}

// Load reads the state of a control plane started with Detach in dir.
func Load(dir string) (*Cluster, error) {
	data, err := os.ReadFile(filepath.Join(dir, stateFile))
	if err != nil {
		return nil, err
	}
	c := &Cluster{}
	if err := json.Unmarshal(data, c); err != nil {
		return nil, fmt.Errorf("reading %s: %w", stateFile, err)
	}
	if c.caData, err = os.ReadFile(c.CAFile); err != nil {
		return nil, err
	}
	return c, nil
}

// StopDir stops a detached control plane whose state is in dir and removes dir.
func StopDir(dir string) error {
	c, err := Load(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if c != nil {
		if err := c.Stop(); err != nil {
			return err
		}
	}
	return os.RemoveAll(dir)
}

func (c *Cluster) startProcess(name, bin string, args []string, logFile string) (*Process, error) {
	log, err := os.OpenFile(logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	defer log.Close()
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.Dir = c.Dir
	if c.opts.Detach {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	} else {
		// If the test binary dies, take the control plane with it.
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &Process{Name: name, PID: cmd.Process.Pid, LogFile: logFile, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// exited reports whether a process this program started has exited, and why.
func (p *Process) exited() (bool, error) {
	if p.done == nil {
		return syscall.Kill(p.PID, 0) != nil, nil
	}
	select {
	case <-p.done:
		return true, p.err
	default:
		return false, nil
	}
}

// CPUGroup is the cgroup the process runs in when Options.CPU was set,
// else nil.
func (p *Process) CPUGroup() *CPUGroup { return p.group }

// Stop ends the process: SIGTERM, then SIGKILL after 15 seconds. Its cgroup,
// if any, is removed.
func (p *Process) Stop() error {
	if p == nil || p.PID == 0 {
		return nil
	}
	defer func() {
		if p.group != nil {
			_ = p.group.Remove()
			p.group = nil
		}
	}()
	StopPID(p.PID, p.done, 15*time.Second)
	return nil
}

// StopPID ends process pid: SIGTERM, then SIGKILL after grace. done, when
// not nil, is closed once this program has reaped it (cmd.Wait); without
// it (a process started by another run and read back by its PID) the PID
// is watched.
func StopPID(pid int, done <-chan struct{}, grace time.Duration) {
	exited := func() bool {
		if done == nil {
			return syscall.Kill(pid, 0) != nil
		}
		select {
		case <-done:
			return true
		default:
			return false
		}
	}
	if exited() {
		return
	}
	_ = syscall.Kill(pid, syscall.SIGTERM)
	for deadline := time.Now().Add(grace); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if exited() {
			return
		}
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
	if done != nil {
		<-done
	}
}

// errExitedEarly is a process's exit before it became ready.
var errExitedEarly = errors.New("exited during start-up")

// waitFor polls check until it succeeds, the process exits, or timeout.
func waitFor(ctx context.Context, timeout time.Duration, p *Process, check func() error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		if done, err := p.exited(); done {
			return fmt.Errorf("%s %w (%v); its log is %s:\n%s", p.Name, errExitedEarly, err, p.LogFile, Tail(p.LogFile, 30))
		}
		if last = check(); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not ready after %s: %v; its log is %s:\n%s", p.Name, timeout, last, p.LogFile, Tail(p.LogFile, 30))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Tail returns the last n lines of a file, for failure messages.
func Tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// FreePort returns a port on 127.0.0.1 that nothing listens on. It is drawn
// below the kernel's ephemeral range (32768 and up by default), from which the
// port of every outgoing connection is taken: a port from that range can be
// taken by a client connection (many are open under load) before the server
// binds it.
func FreePort() (int, error) {
	for i := 0; i < 100; i++ {
		port := 20000 + rand.IntN(12000)
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue
		}
		l.Close()
		return port, nil
	}
	return 0, errors.New("no free port on 127.0.0.1 between 20000 and 32000")
}

// Binary returns the path of a control-plane binary: $KUBE_APISERVER_BIN or
// $ETCD_BIN when set, else the cached build that hack/bin.sh makes (building it
// the first time).
func Binary(name string) (string, error) {
	env := strings.ToUpper(strings.ReplaceAll(name, "-", "_")) + "_BIN"
	if p := os.Getenv(env); p != "" {
		return p, nil
	}
	root, err := repoRoot()
	if err != nil {
		return "", err
	}
	cmd := exec.Command("bash", filepath.Join(root, "hack", "bin.sh"), name)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("building %s with hack/bin.sh: %w", name, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// repoRoot finds the repository root from the working directory (tests run in
// their package's directory).
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "hack", "bin.sh")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("cannot find hack/bin.sh above the working directory; set KUBE_APISERVER_BIN and ETCD_BIN")
		}
		dir = parent
	}
}
