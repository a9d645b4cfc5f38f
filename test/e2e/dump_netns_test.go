package e2e

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"

	"github.com/kubectl-apf/kubectl-apf/internal/testharness/testcluster"
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
		ns := newNetns(t, "--all-apiservers discovery is covered by the fake-client unit test")
		addrs := []string{"10.231.0.1", "10.231.0.2"}
		ipIn(t, ns, "addr", "add", addrs[0]+"/32", "dev", "lo")
		ipIn(t, ns, "addr", "add", addrs[1]+"/32", "dev", "lo")
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
