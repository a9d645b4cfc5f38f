package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"

	"golang.org/x/sys/unix"

	"github.com/kubectl-apf/kubectl-apf/internal/testcluster"
	"github.com/kubectl-apf/kubectl-apf/pkg/dump/render"
)

// testAllAPIServersInNetns tests --all-apiservers end to end: discovery
// from real default/kubernetes EndpointSlices, then a direct query of each
// instance listed there.
//
// An EndpointSlice may not list loopback addresses, and the local control
// plane listens on 127.0.0.1 only. So the test creates a network namespace
// holding two private addresses (10.231.0.1 and 10.231.0.2, on the
// namespace's own loopback device: they exist nowhere else), forwards
// ADDRESS:PORT inside it to 127.0.0.1:PORT outside (listening sockets are
// opened inside the namespace, connections dialled outside, all from this
// process), writes the EndpointSlices the endpoint reconciler would write
// for those addresses, and runs the plugin inside the namespace. It skips
// when network namespaces cannot be created (not root, no "ip").
func testAllAPIServersInNetns(t *testing.T, c *testcluster.Cluster, second *testcluster.APIServer) {
	t.Helper()
	t.Run("all-apiservers-from-endpointslices", func(t *testing.T) {
		ns := fmt.Sprintf("apf-e2e-%d", os.Getpid())
		if out, err := exec.Command("ip", "netns", "add", ns).CombinedOutput(); err != nil {
			t.Skipf("cannot create a network namespace (%v: %s); --all-apiservers discovery is covered by the fake-client unit test", err, strings.TrimSpace(string(out)))
		}
		t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", ns).Run() })
		addrs := []string{"10.231.0.1", "10.231.0.2"}
		for _, args := range [][]string{{"link", "set", "lo", "up"}, {"addr", "add", addrs[0] + "/32", "dev", "lo"}, {"addr", "add", addrs[1] + "/32", "dev", "lo"}} {
			if out, err := exec.Command("ip", append([]string{"-n", ns}, args...)...).CombinedOutput(); err != nil {
				t.Fatalf("ip -n %s %v: %v: %s", ns, args, err, out)
			}
		}
		instances := []*testcluster.APIServer{c.APIServers[0], second}
		var urls []string
		for i, a := range instances {
			l, err := listenInNetns(ns, net.JoinHostPort(addrs[i], strconv.Itoa(a.Port)))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { l.Close() })
			go forward(l, net.JoinHostPort("127.0.0.1", strconv.Itoa(a.Port)))
			urls = append(urls, "https://"+l.Addr().String())
		}

		ctx := context.Background()
		admin := c.Client(testcluster.Admin)
		for i, a := range instances {
			es := &discoveryv1.EndpointSlice{
				ObjectMeta:  metav1.ObjectMeta{Name: fmt.Sprintf("kubernetes-e2e-%d", i), Namespace: "default", Labels: map[string]string{discoveryv1.LabelServiceName: "kubernetes"}},
				AddressType: discoveryv1.AddressTypeIPv4,
				Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("https"), Port: ptr.To(int32(a.Port))}},
				Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{addrs[i]}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
			}
			if _, err := admin.DiscoveryV1().EndpointSlices("default").Create(ctx, es, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}

		// The kubeconfig points at the first private address; the serving
		// certificate is for 127.0.0.1, which tls-server-name says, and which
		// the plugin keeps for every instance it discovers.
		cfg := c.RESTConfig(testcluster.Admin)
		kc := clientcmdapi.NewConfig()
		kc.Clusters["netns"] = &clientcmdapi.Cluster{Server: urls[0], CertificateAuthorityData: cfg.TLSClientConfig.CAData, TLSServerName: "127.0.0.1"}
		kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Token: cfg.BearerToken}
		kc.Contexts["netns"] = &clientcmdapi.Context{Cluster: "netns", AuthInfo: "admin"}
		kc.CurrentContext = "netns"
		kcPath := filepath.Join(t.TempDir(), "kubeconfig")
		if err := clientcmd.WriteToFile(*kc, kcPath); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command("ip", "netns", "exec", ns, pluginBinary(t), "dump", "levels", "--kubeconfig", kcPath, "--all-apiservers", "--level", "exempt").CombinedOutput()
		if err != nil {
			t.Fatalf("dump levels --all-apiservers: %v\n%s", err, out)
		}
		t.Logf("--all-apiservers:\n%s", out)
		for _, want := range append(urls, render.AllInstances) {
			if !strings.Contains(string(out), want+" ") {
				t.Errorf("output lacks %q", want)
			}
		}
	})
}

// listenInNetns opens a TCP listener inside the named network namespace.
// Only the calling OS thread enters the namespace, and only while the socket
// is created; the socket stays in the namespace afterwards.
func listenInNetns(ns, addr string) (net.Listener, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	orig, err := os.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()))
	if err != nil {
		return nil, err
	}
	defer orig.Close()
	target, err := os.Open(filepath.Join("/var/run/netns", ns))
	if err != nil {
		return nil, err
	}
	defer target.Close()
	if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
		return nil, fmt.Errorf("entering netns %s: %w", ns, err)
	}
	l, lerr := net.Listen("tcp", addr)
	if err := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); err != nil {
		// The thread cannot go back: leave it locked so that it dies with
		// this goroutine instead of serving others in the wrong namespace.
		runtime.LockOSThread()
		return nil, fmt.Errorf("leaving netns %s: %w", ns, err)
	}
	return l, lerr
}

// forward copies every connection accepted on l to and from target.
func forward(l net.Listener, target string) {
	for {
		in, err := l.Accept()
		if err != nil {
			return
		}
		go func() {
			defer in.Close()
			out, err := net.Dial("tcp", target)
			if err != nil {
				return
			}
			defer out.Close()
			var wg sync.WaitGroup
			wg.Add(2)
			go func() { defer wg.Done(); _, _ = io.Copy(out, in); out.(*net.TCPConn).CloseWrite() }()
			go func() { defer wg.Done(); _, _ = io.Copy(in, out); in.(*net.TCPConn).CloseWrite() }()
			wg.Wait()
		}()
	}
}
