package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-apf/kubectl-apf/internal/testharness/loadgen"
	"github.com/kubectl-apf/kubectl-apf/internal/testharness/testcluster"
)

// requireTmux returns the path of tmux. When it is missing, it installs it
// with apt-get only when running as root under CI=true; otherwise the test
// fails saying how to install it (never a silent skip).
func requireTmux(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("tmux"); err == nil {
		return p
	}
	if os.Getenv("CI") == "true" && os.Geteuid() == 0 {
		install := exec.Command("apt-get", "install", "-y", "tmux")
		install.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		out, err := install.CombinedOutput()
		if err != nil {
			// A fresh image may have no package lists yet.
			if upd, uerr := exec.Command("apt-get", "update").CombinedOutput(); uerr != nil {
				t.Fatalf("tmux is missing and apt-get update failed: %v\n%s", uerr, upd)
			}
			install = exec.Command("apt-get", "install", "-y", "tmux")
			install.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
			out, err = install.CombinedOutput()
		}
		if err != nil {
			t.Fatalf("tmux is missing and apt-get install -y tmux failed: %v\n%s", err, out)
		}
		if p, err := exec.LookPath("tmux"); err == nil {
			return p
		}
	}
	t.Fatalf("the live view's e2e tests drive the real binary in tmux, which is not installed: " +
		"install it (apt-get install -y tmux, brew install tmux), or run the tests as root with CI=true to let them install it")
	return ""
}

// tmuxTerm is one tmux server (a private socket) running a shell in a
// 160x48 terminal.
type tmuxTerm struct {
	t      *testing.T
	tmux   string
	socket string
}

// tmuxPrompt is the shell's prompt; capture-pane drops its trailing space.
const tmuxPrompt = "apf-e2e$"

func newTmux(t *testing.T) *tmuxTerm {
	t.Helper()
	tm := &tmuxTerm{t: t, tmux: requireTmux(t), socket: fmt.Sprintf("apf-e2e-%d-%d", os.Getpid(), time.Now().UnixNano())}
	// A clean shell with a known prompt, and no user configuration. No
	// history file: bash writes one into HOME when kill-server hangs it up,
	// after kill-server has returned, and the write raced the removal of
	// HOME, the test's temporary directory ("directory not empty").
	tm.run("-f", "/dev/null", "new-session", "-d", "-s", "top", "-x", "160", "-y", "48",
		"env", "PS1="+tmuxPrompt+" ", "HOME="+t.TempDir(), "HISTFILE=", "NO_COLOR=1", "bash", "--norc", "--noprofile")
	t.Cleanup(func() { _ = exec.Command(tm.tmux, "-L", tm.socket, "kill-server").Run() })
	// The window size of a detached session follows the largest client;
	// pin it.
	tm.run("set-option", "-g", "window-size", "manual")
	tm.run("resize-window", "-t", "top", "-x", "160", "-y", "48")
	tm.waitFor("the shell prompt", 10*time.Second, func(s string) bool { return strings.Contains(s, tmuxPrompt) })
	return tm
}

func (tm *tmuxTerm) run(args ...string) string {
	tm.t.Helper()
	out, err := exec.Command(tm.tmux, append([]string{"-L", tm.socket}, args...)...).CombinedOutput()
	if err != nil {
		tm.t.Fatalf("tmux %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// send types a line into the shell.
func (tm *tmuxTerm) send(line string) {
	tm.t.Helper()
	tm.run("send-keys", "-t", "top", "-l", line)
	tm.run("send-keys", "-t", "top", "Enter")
}

// key sends one key (tmux key name).
func (tm *tmuxTerm) key(k string) { tm.t.Helper(); tm.run("send-keys", "-t", "top", k) }

// screen is what the terminal shows now.
func (tm *tmuxTerm) screen() string { tm.t.Helper(); return tm.run("capture-pane", "-p", "-t", "top") }

// alternate reports whether the alternate screen is on.
func (tm *tmuxTerm) alternate() bool {
	tm.t.Helper()
	return strings.TrimSpace(tm.run("display-message", "-p", "-t", "top", "#{alternate_on}")) == "1"
}

// waitFor polls the screen until ok, failing with the last screen.
func (tm *tmuxTerm) waitFor(what string, timeout time.Duration, ok func(screen string) bool) string {
	tm.t.Helper()
	deadline := time.Now().Add(timeout)
	var s string
	for {
		s = tm.screen()
		if ok(s) {
			return s
		}
		if time.Now().After(deadline) {
			tm.t.Fatalf("waiting %s for %s; the terminal shows:\n%s", timeout, what, s)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// quitAndCheckRestored presses q and checks that the view exits with status
// 0, the alternate screen is left and the terminal is back in the mode the
// shell had before (stty settings identical, echo on).
func (tm *tmuxTerm) quitAndCheckRestored() {
	tm.t.Helper()
	tm.key("q")
	tm.waitFor("the shell prompt after q", 15*time.Second, func(s string) bool {
		return !tm.alternate() && strings.HasSuffix(strings.TrimRight(s, "\n "), tmuxPrompt)
	})
	tm.send(`echo "exit=$?"; [ "$(stty -g)" = "$APF_STTY" ] && echo tty-restored-$((40+2)); echo check-done`)
	done := regexp.MustCompile(`(?m)^check-done$`)
	s := tm.waitFor("the exit status and the terminal check", 10*time.Second, func(s string) bool { return done.MatchString(s) })
	if !regexp.MustCompile(`(?m)^exit=0$`).MatchString(s) {
		tm.t.Errorf("kubectl apf top did not exit with status 0:\n%s", s)
	}
	if !regexp.MustCompile(`(?m)^tty-restored-42$`).MatchString(s) {
		tm.t.Errorf("the terminal settings after q differ from before the view:\n%s", s)
	}
	if strings.Contains(s, "kubectl apf top ·") {
		tm.t.Errorf("the view's frame is still on the main screen after q:\n%s", s)
	}
}

// startTop starts the live view in the tmux shell, after saving the
// terminal settings for the restore check.
func (tm *tmuxTerm) startTop(bin, kubeconfig string, extra ...string) {
	tm.t.Helper()
	tm.send(`export APF_STTY="$(stty -g)"; clear`)
	tm.send(strings.Join(append([]string{bin, "top", "--kubeconfig", kubeconfig, "--interval", "1s"}, extra...), " "))
	tm.waitFor("the live view", 30*time.Second, func(s string) bool {
		return tm.alternate() && strings.Contains(s, "kubectl apf top ·") && strings.Contains(s, "● live")
	})
}

var (
	totalsRe = regexp.MustCompile(`levels (\d+) · seats \S+ · waiting (\d+) · rejected ([0-9.]+)/s`)
)

// levelRow returns the fields of level's row on screen after its name:
// bar, use/limit, nominal, lent, waiting, dispatched/s, rejected/s...
func levelRow(screen, level string) (fields []string, rejecting bool) {
	for _, line := range strings.Split(screen, "\n") {
		f := strings.Fields(line)
		for i, w := range f {
			if w == level && i+6 < len(f) {
				return f[i+1:], strings.Contains(strings.Join(f[:i], ""), "!")
			}
		}
	}
	return nil, false
}

// TestTopLiveUnderLoad runs the real binary in tmux against the local
// control plane while the load generator keeps apf-load queueing and
// rejecting: the view must show non-zero waiting and rejected counts for
// apf-load, and q must exit and restore the terminal.
func TestTopLiveUnderLoad(t *testing.T) {
	c := cluster(t)
	tm := newTmux(t)
	bin := pluginBinary(t)
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := c.WriteKubeconfig(kc); err != nil {
		t.Fatal(err)
	}
	stop := topLoad(t, c)
	defer stop()

	tm.startTop(bin, kc, "--record", filepath.Join(t.TempDir(), "top.jsonl.gz"))
	// Select apf-load so its queues are on screen, and sort rejecting first.
	tm.key(":")
	tm.run("send-keys", "-t", "top", "-l", loadgen.Level)
	tm.key("Enter")

	// Each is looked for until seen, not in the one frame the others
	// were: the heat map of apf-load's queues follows its selection,
	// which the view may take a refresh to show (CI once saw waiting and
	// rejected requests before it).
	var sawWaiting, sawRejected, sawHeatMap, sawOwnLoad bool
	ownLoad := regexp.MustCompile(`load [1-9]\d* req/refresh`)
	var last string
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) && !(sawWaiting && sawRejected && sawHeatMap && sawOwnLoad) {
		last = tm.screen()
		sawHeatMap = sawHeatMap || strings.Contains(last, "── queues of "+loadgen.Level+" (8 ")
		sawOwnLoad = sawOwnLoad || ownLoad.MatchString(last)
		row, rejecting := levelRow(last, loadgen.Level)
		m := totalsRe.FindStringSubmatch(last)
		if row != nil && m != nil {
			waiting, _ := strconv.Atoi(strings.SplitN(row[4], "/", 2)[0])
			totalWaiting, _ := strconv.Atoi(m[2])
			totalRejected, _ := strconv.ParseFloat(m[3], 64)
			if waiting > 0 && totalWaiting >= waiting {
				sawWaiting = true
			}
			if rejecting && totalRejected > 0 {
				sawRejected = true
			}
		}
		time.Sleep(300 * time.Millisecond)
	}
	// The failures first, then the frame: a CI log cut after some lines
	// keeps what failed.
	if !sawWaiting {
		t.Error("the view never showed a waiting apf-load request")
	}
	if !sawRejected {
		t.Error("the view never showed apf-load rejecting requests")
	}
	if !sawHeatMap {
		t.Errorf("the heat map of apf-load's 8 queues is never shown")
	}
	if !sawOwnLoad {
		t.Errorf("the header never shows the view's own load on the apiserver")
	}
	if t.Failed() {
		t.Logf("last frame:\n%s", last)
	}
	// The drill-down lists the load identities' waiting requests.
	tm.key("Enter")
	tm.waitFor("the drill-down", 20*time.Second, func(s string) bool {
		return strings.Contains(s, loadgen.Level+" on https://") && strings.Contains(s, "load-")
	})
	tm.key("Escape")
	// A key sent right after Escape would arrive as alt+key: wait for the
	// level list first.
	tm.waitFor("the level list after esc", 10*time.Second, func(s string) bool { return !strings.Contains(s, "esc back") })
	tm.quitAndCheckRestored()
}

// TestTopSurvivesAPIServerRestart stops and restarts the apiserver under
// the running view: it must say it is disconnected, keep the last data,
// reconnect by itself and quit cleanly. It restarts an apiserver, so it has
// a control plane of its own.
func TestTopSurvivesAPIServerRestart(t *testing.T) {
	tm := newTmux(t)
	bin := pluginBinary(t)
	c := testcluster.StartT(t, testcluster.Options{})
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := c.WriteKubeconfig(kc); err != nil {
		t.Fatal(err)
	}
	tm.startTop(bin, kc)
	tm.waitFor("the default levels", 20*time.Second, func(s string) bool {
		return strings.Contains(s, "workload-low") && strings.Contains(s, "exempt")
	})

	if err := c.StopAPIServer(0); err != nil {
		t.Fatal(err)
	}
	s := tm.waitFor("the disconnected state", 30*time.Second, func(s string) bool {
		return strings.Contains(s, "DISCONNECTED") && strings.Contains(s, "showing data from")
	})
	if !strings.Contains(s, "workload-low") {
		t.Errorf("the last data is gone while disconnected:\n%s", s)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := c.StartAPIServer(ctx, 0); err != nil {
		t.Fatal(err)
	}
	// Backoff is at most 30 s; a restarted server answers within seconds.
	tm.waitFor("the reconnection", 90*time.Second, func(s string) bool {
		return strings.Contains(s, "● live") && !strings.Contains(s, "DISCONNECTED") && strings.Contains(s, "workload-low")
	})
	tm.quitAndCheckRestored()
}

// topLoad drives apf-load into queueing and queue-full rejections in the
// background until stop is called.
func topLoad(t *testing.T, c *testcluster.Cluster) (stop func()) {
	t.Helper()
	names, flows := loadgen.SetUpT(t, c, loadgen.FlowSetup{Flows: 6})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			_, _ = loadgen.Run(ctx, loadgen.Options{Flows: flows, Burst: 10, Rounds: 3, Duration: 20 * time.Second, Pause: 50 * time.Millisecond, Names: names})
		}
	}()
	return func() { cancel(); <-done }
}
