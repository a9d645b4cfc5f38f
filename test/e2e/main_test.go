// Package e2e holds the end-to-end tests of kubectl-apf. They run against a real
// local control plane (etcd and kube-apiserver v1.37.1 on 127.0.0.1, see
// internal/testharness/testcluster) that TestMain starts once for the package; a test that
// changes cluster-wide state in ways others would notice starts its own with
// testcluster.StartT.
package e2e

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubectl-apf/kubectl-apf/internal/testharness/loadgen"
	"github.com/kubectl-apf/kubectl-apf/internal/testharness/testcluster"
)

var shared *testcluster.Cluster

func TestMain(m *testing.M) {
	// the what-if check's crowded scenario sends its load from client
	// processes: this binary again
	loadgen.RunChildIfAsked()
	flag.Parse()
	if testing.Short() {
		code := m.Run()
		if pluginDir != "" {
			os.RemoveAll(pluginDir)
		}
		os.Exit(code)
	}
	dir, err := os.MkdirTemp("", "apf-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	start := time.Now()
	shared, err = testcluster.Start(ctx, testcluster.Options{Dir: dir})
	cancel()
	if err != nil {
		fmt.Fprintf(os.Stderr, "starting the local control plane: %v\n", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "local control plane up in %s at %s\n", time.Since(start).Round(time.Millisecond), shared.URL())
	code := m.Run()
	if pluginDir != "" {
		os.RemoveAll(pluginDir)
	}
	if code != 0 {
		for _, a := range shared.APIServers {
			fmt.Fprintf(os.Stderr, "--- last lines of %s ---\n%s\n", a.Name, testcluster.Tail(a.LogFile, 40))
		}
	}
	_ = shared.Stop()
	os.RemoveAll(dir)
	os.Exit(code)
}

// cluster returns the package's shared control plane.
func cluster(t *testing.T) *testcluster.Cluster {
	t.Helper()
	if shared == nil {
		t.Skip("the local control plane does not run with -short")
	}
	return shared
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

func clientFor(t *testing.T, cfg *rest.Config) kubernetes.Interface {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

var (
	pluginOnce sync.Once
	pluginPath string
	pluginErr  error
	pluginDir  string
)

// pluginBinary builds the plugin once for the whole package, so that tests run
// the real command line, flags and exit status. TestMain removes it.
func pluginBinary(t *testing.T) string {
	t.Helper()
	pluginOnce.Do(func() {
		pluginDir, pluginErr = os.MkdirTemp("", "apf-e2e-bin-")
		if pluginErr != nil {
			return
		}
		pluginPath = filepath.Join(pluginDir, "kubectl-apf")
		args := []string{"build", "-o", pluginPath}
		if ahead := os.Getenv("KUBECTL_APF_CLOCK_AHEAD"); ahead != "" {
			// make test-clock-ahead: the plugin's "now" moved ahead,
			// to find the tests that depend on today's date
			args = append(args, "-ldflags", "-X main.clockAhead="+ahead)
		}
		out, err := exec.Command("go", append(args, "github.com/kubectl-apf/kubectl-apf/cmd/kubectl-apf")...).CombinedOutput()
		if err != nil {
			pluginErr = fmt.Errorf("%v\n%s", err, out)
		}
	})
	if pluginErr != nil {
		t.Fatalf("building the plugin: %v", pluginErr)
	}
	return pluginPath
}
