// Command apf-devcluster runs the local control plane outside of tests, for
// "make cluster-up", "make cluster-down" and "make demo":
//
//	apf-devcluster up   [-dir DIR]          start etcd and kube-apiserver on 127.0.0.1, write DIR/kubeconfig,
//	                                        and Prometheus scraping the apiserver every second (-prometheus=false: not),
//	                                        and VictoriaLogs (-victorialogs=false: not)
//	apf-devcluster down [-dir DIR]          stop them and remove DIR
//	apf-devcluster load [-dir DIR] [flags]  send bounded bursts that make APF queue and reject
//	apf-devcluster ship [-dir DIR]          ship the apiserver's audit log into the VictoriaLogs of "up"
//	                                        every second, as a log pipeline does
//
// The processes of "up" keep running after it exits; their state is in DIR.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubectl-apf/kubectl-apf/internal/testharness/loadgen"
	"github.com/kubectl-apf/kubectl-apf/internal/testharness/testcluster"
	"github.com/kubectl-apf/kubectl-apf/internal/testharness/testprom"
	"github.com/kubectl-apf/kubectl-apf/internal/testharness/testvlogs"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: apf-devcluster up|down|load|ship [-dir DIR] [flags]")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch os.Args[1] {
	case "up":
		err = up(ctx, os.Args[2:])
	case "down":
		err = down(os.Args[2:])
	case "load":
		err = load(ctx, os.Args[2:])
	case "ship":
		err = ship(ctx, os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q (want up, down, load or ship)", os.Args[1])
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "apf-devcluster: %v\n", err)
		os.Exit(1)
	}
}

func up(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("up", flag.ExitOnError)
	dir := fs.String("dir", ".cluster", "directory for the control plane's data, logs and kubeconfig")
	inflight := fs.Int("max-requests-inflight", 10, "kube-apiserver --max-requests-inflight")
	mutating := fs.Int("max-mutating-requests-inflight", 5, "kube-apiserver --max-mutating-requests-inflight")
	withProm := fs.Bool("prometheus", true, "also start Prometheus on 127.0.0.1, scraping the apiserver every second; its URL goes to DIR/prometheus-url")
	withVLogs := fs.Bool("victorialogs", true, "also start VictoriaLogs on 127.0.0.1 for the audit log (apf-devcluster ship sends it); its URL goes to DIR/victorialogs-url")
	_ = fs.Parse(args)
	if c, err := testcluster.Load(*dir); err == nil {
		if done := c.APIServers[0].Proc.PID; done != 0 && syscall.Kill(done, 0) == nil {
			fmt.Printf("the local control plane is already running at %s\nexport KUBECONFIG=%s\n", c.URL(), c.Kubeconfig)
			return nil
		}
		_ = stopPrometheus(*dir)
		_ = stopVictoriaLogs(*dir)
		_ = testcluster.StopDir(*dir)
	}
	if err := os.MkdirAll(*dir, 0o700); err != nil {
		return err
	}
	start := time.Now()
	c, err := testcluster.Start(ctx, testcluster.Options{
		Dir: *dir, Detach: true, Progress: os.Stderr,
		MaxRequestsInflight: *inflight, MaxMutatingRequestsInflight: *mutating,
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "local control plane up in %s; logs in %s\n", time.Since(start).Round(time.Millisecond), c.Dir)
	fmt.Printf("export KUBECONFIG=%s\n", c.Kubeconfig)
	if *withProm {
		pdir := filepath.Join(*dir, "prometheus")
		if err := os.MkdirAll(pdir, 0o700); err != nil {
			return err
		}
		p, err := testprom.Start(ctx, testprom.Options{Dir: pdir, Targets: testprom.TargetsOf(c), ScrapeInterval: time.Second, Detach: true})
		if err != nil {
			return err
		}
		state, _ := json.Marshal(p)
		if err := os.WriteFile(filepath.Join(*dir, promState), state, 0o600); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(*dir, "prometheus-url"), []byte(p.URL+"\n"), 0o600); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "Prometheus up at %s, scraping the apiserver every second\n", p.URL)
	}
	if *withVLogs {
		vdir := filepath.Join(*dir, "victorialogs")
		if err := os.MkdirAll(vdir, 0o700); err != nil {
			return err
		}
		n, err := testvlogs.StartDetached(ctx, vdir)
		if err != nil {
			return err
		}
		state, _ := json.Marshal(n)
		if err := os.WriteFile(filepath.Join(*dir, vlogsState), state, 0o600); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(*dir, "victorialogs-url"), []byte(n.URL+"\n"), 0o600); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "VictoriaLogs up at %s (apf-devcluster ship sends it the audit log)\n", n.URL)
	}
	return nil
}

// vlogsState holds the detached VictoriaLogs's state in the control
// plane's directory.
const vlogsState = "victorialogs.json"

func stopVictoriaLogs(dir string) error {
	b, err := os.ReadFile(filepath.Join(dir, vlogsState))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var n testvlogs.Node
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("reading %s: %w", vlogsState, err)
	}
	return n.Stop()
}

// ship sends the apiserver's audit log to the VictoriaLogs of "up" every
// second until interrupted or -duration ends.
func ship(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("ship", flag.ExitOnError)
	dir := fs.String("dir", ".cluster", "directory of the control plane")
	duration := fs.Duration("duration", 30*time.Minute, "stop after this long")
	_ = fs.Parse(args)
	c, err := testcluster.Load(*dir)
	if err != nil {
		return fmt.Errorf("no local control plane in %s (run make cluster-up): %w", *dir, err)
	}
	u, err := os.ReadFile(filepath.Join(*dir, "victorialogs-url"))
	if err != nil {
		return fmt.Errorf("no VictoriaLogs in %s (apf-devcluster up starts one): %w", *dir, err)
	}
	ctx, cancel := context.WithTimeout(ctx, *duration)
	defer cancel()
	return testvlogs.Ship(ctx, c.APIServers[0].AuditLog, strings.TrimSpace(string(u)), time.Second)
}

// promState holds the detached Prometheus's state in the control plane's
// directory.
const promState = "prometheus.json"

func stopPrometheus(dir string) error {
	b, err := os.ReadFile(filepath.Join(dir, promState))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var p testprom.Prometheus
	if err := json.Unmarshal(b, &p); err != nil {
		return fmt.Errorf("reading %s: %w", promState, err)
	}
	return p.Stop()
}

func down(args []string) error {
	fs := flag.NewFlagSet("down", flag.ExitOnError)
	dir := fs.String("dir", ".cluster", "directory of the control plane")
	_ = fs.Parse(args)
	if err := stopPrometheus(*dir); err != nil {
		return err
	}
	if err := stopVictoriaLogs(*dir); err != nil {
		return err
	}
	return testcluster.StopDir(*dir)
}

func load(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("load", flag.ExitOnError)
	dir := fs.String("dir", ".cluster", "directory of the control plane")
	duration := fs.Duration("duration", 2*time.Minute, "stop after this long")
	rounds := fs.Int("rounds", 1000, "stop after this many rounds (0: -duration alone stops it)")
	burst := fs.Int("burst", 6, "requests per flow per round, sent at once")
	flows := fs.Int("flows", 6, fmt.Sprintf("number of flows (identities load-1..load-N, at most %d)", testcluster.NumLoadUsers))
	pause := fs.Duration("pause", 500*time.Millisecond, "pause between rounds")
	quiet := fs.Bool("quiet", false, "print only the final report")
	_ = fs.Parse(args)
	if *flows < 1 || *flows > testcluster.NumLoadUsers-1 {
		return fmt.Errorf("-flows must be between 1 and %d", testcluster.NumLoadUsers-1)
	}
	c, err := testcluster.Load(*dir)
	if err != nil {
		return fmt.Errorf("no local control plane in %s (run make cluster-up): %w", *dir, err)
	}
	admin := kubernetes.NewForConfigOrDie(c.RESTConfig(testcluster.Admin))
	// The last load identity goes to a Reject level, so that concurrency-limit
	// rejections show too.
	rejectUser := testcluster.LoadUserName(testcluster.NumLoadUsers)
	// a change the user made to the demo's levels or FlowSchemas is kept:
	// running the load again is how one sees it at work
	if err := loadgen.Setup(ctx, admin, loadgen.SetupOptions{RejectUser: rejectUser, KeepEdits: true}); err != nil {
		return err
	}
	names, err := loadgen.Names(ctx, admin)
	if err != nil {
		return err
	}
	var cfgs []*rest.Config
	for i := 1; i <= *flows; i++ {
		cfgs = append(cfgs, c.RESTConfig(testcluster.LoadUserName(i)))
	}
	cfgs = append(cfgs, c.RESTConfig(rejectUser))
	deadline := time.Now().Add(*duration)
	total := &loadgen.Report{ByStatus: map[int]int{}, RetryAfter: map[string]int{}, ByPriority: map[string]int{}, ByFlowSched: map[string]int{}}
	for done := 0; (*rounds == 0 || done < *rounds) && time.Now().Before(deadline) && ctx.Err() == nil; done += 10 {
		n := 10
		if *rounds > 0 {
			n = min(n, *rounds-done)
		}
		rep, err := loadgen.Run(ctx, loadgen.Options{
			Flows: cfgs, Burst: *burst, Rounds: n, Duration: time.Until(deadline),
			Pause: *pause, Names: names,
		})
		if err != nil && !errors.Is(err, context.Canceled) {
			return err
		}
		if !*quiet {
			rep.Print(os.Stdout)
		}
		merge(total, rep)
	}
	fmt.Println("total:")
	total.Print(os.Stdout)
	return nil
}

func merge(into, r *loadgen.Report) {
	into.Sent += r.Sent
	into.Errors += r.Errors
	into.Rounds += r.Rounds
	into.Elapsed += r.Elapsed
	if into.FirstError == nil {
		into.FirstError = r.FirstError
	}
	for k, v := range r.ByStatus {
		into.ByStatus[k] += v
	}
	for k, v := range r.RetryAfter {
		into.RetryAfter[k] += v
	}
	for k, v := range r.ByPriority {
		into.ByPriority[k] += v
	}
	for k, v := range r.ByFlowSched {
		into.ByFlowSched[k] += v
	}
}
