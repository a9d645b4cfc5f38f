package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/kubectl-apf/kubectl-apf/internal/testharness/testcluster"
)

// TestTwoAPIServersAndRestart checks the control-plane features other e2e tests
// rely on: a second kube-apiserver sharing the same etcd on its own port, and
// stopping and restarting an instance on the same port.
func TestTwoAPIServersAndRestart(t *testing.T) {
	c := testcluster.StartT(t, testcluster.Options{})
	ctx := context.Background()
	second, err := c.AddAPIServer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if second.URL == c.URL() {
		t.Fatalf("the second apiserver has the primary's URL %s", second.URL)
	}
	for _, a := range c.APIServers {
		v, err := clientFor(t, c.RESTConfigFor(a, testcluster.Admin)).Discovery().RESTClient().Get().AbsPath("/version").DoRaw(ctx)
		if err != nil {
			t.Fatalf("%s: GET /version: %v", a.Name, err)
		}
		if want := `"gitVersion": "v1.37.1"`; !contains(string(v), want) {
			t.Errorf("%s: /version = %s, want it to contain %s", a.Name, v, want)
		}
	}
	// An object written through one instance is read through the other.
	if _, err := c.ServiceAccountToken(ctx, "e2e-two", "sa"); err != nil {
		t.Fatal(err)
	}
	cfg := c.RESTConfigFor(second, testcluster.Admin)
	body, err := clientFor(t, cfg).CoreV1().RESTClient().Get().AbsPath("/api/v1/namespaces/e2e-two/serviceaccounts/sa").DoRaw(ctx)
	if err != nil {
		t.Fatalf("reading through %s: %v (%s)", second.Name, err, body)
	}

	if err := c.StopAPIServer(0); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Client(testcluster.Admin).Discovery().ServerVersion(); err == nil {
		t.Fatalf("the stopped apiserver still answers")
	}
	start := time.Now()
	if err := c.StartAPIServer(ctx, 0); err != nil {
		t.Fatal(err)
	}
	t.Logf("restarted %s in %s", c.APIServers[0].Name, time.Since(start).Round(time.Millisecond))
	if _, err := c.Client(testcluster.Admin).Discovery().ServerVersion(); err != nil {
		t.Fatalf("after restart: %v", err)
	}
}
