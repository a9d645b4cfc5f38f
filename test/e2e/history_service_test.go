package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-apf/kubectl-apf/internal/testharness/loadgen"
	"github.com/kubectl-apf/kubectl-apf/internal/testharness/testcluster"
	"github.com/kubectl-apf/kubectl-apf/internal/testharness/testprom"
	"github.com/kubectl-apf/kubectl-apf/pkg/history"
	"github.com/kubectl-apf/kubectl-apf/pkg/rejections"
)

// TestHistoryThroughServiceProxy reads the store through the apiserver's
// service proxy (--prometheus-service), as on a cluster whose Prometheus
// runs in a pod, and checks it answers exactly what --prometheus URL
// answers.
//
// The apiserver's service proxy only goes to an EndpointSlice endpoint
// whose targetRef is a pod of the service's namespace with that address
// among its status.podIPs (ResourceLocation's isValidAddress in
// pkg/registry/core/service/storage), and EndpointSlice validation refuses
// loopback addresses. So the real Prometheus runs in a network namespace
// linked to this one by a veth pair, on the namespace's address; it
// scrapes the apiserver at this side's address of the pair, forwarded to
// 127.0.0.1. The test writes what a kubelet and the EndpointSlice
// controller would: a pod object holding that address in its status, a
// selector-less Service, and its EndpointSlice.
func TestHistoryThroughServiceProxy(t *testing.T) {
	if testing.Short() {
		t.Skip("needs the local control plane, Prometheus and a network namespace")
	}
	c := testcluster.StartT(t, testcluster.Options{})
	netns := newNetns(t, "the service proxy's error answers are covered by TestHistoryFromPrometheus")
	here, there := vethHost(t, netns)

	// The apiserver, reachable from the namespace at this side's address.
	api := c.APIServers[0]
	l, err := net.Listen("tcp", net.JoinHostPort(here, strconv.Itoa(api.Port)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go forward(l, net.JoinHostPort("127.0.0.1", strconv.Itoa(api.Port)))
	const scrape = time.Second
	prom := testprom.StartT(t, testprom.Options{
		Targets:        []testprom.Target{{Address: l.Addr().String(), Token: c.User(testcluster.Admin).Token, CAFile: c.CAFile, ServerName: "127.0.0.1"}},
		ScrapeInterval: scrape, Netns: netns, ListenHost: there,
	})
	pu, err := url.Parse(prom.URL)
	if err != nil {
		t.Fatal(err)
	}
	promPort, _ := strconv.Atoi(pu.Port())

	// The pod, Service and EndpointSlice of an in-cluster Prometheus.
	ctx := context.Background()
	admin := c.Client(testcluster.Admin)
	const ns, name = "monitoring", "prometheus"
	netnsService(t, admin, ns, name, "prom/prometheus", "web", 9090, promPort, here, there)

	// Real APF series: the load levels driven into 429s while the store
	// scrapes the apiserver.
	names, flows := loadgen.SetUpT(t, c, loadgen.FlowSetup{Flows: 6, Reject: true})
	if err := loadgen.WaitForLevel(ctx, flows[0], names, time.Minute); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * scrape)
	start := time.Now()
	rep, err := loadgen.Run(ctx, loadgen.Options{Flows: flows, Burst: 10, Rounds: 100000, Duration: 20 * time.Second, Pause: 50 * time.Millisecond, Names: names})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Rejected() == 0 {
		t.Fatal("the load generator got no 429; nothing to find")
	}
	time.Sleep(6 * scrape)
	// A fixed end a few scrapes back, so that both ways read the same
	// samples while the store keeps scraping.
	until := time.Now().Add(-3 * scrape)
	since := until.Sub(start).Round(time.Second) + 5*time.Second
	window := []string{"--since", since.String(), "--until", until.UTC().Format(time.RFC3339Nano), "--scrape-interval", scrape.String(), "--prometheus-selector", `job="apiserver"`}
	direct := []string{"--prometheus", prom.URL}
	proxied := []string{"--prometheus-service", ns + "/" + name + ":9090"}

	for _, cmd := range [][]string{{"explain", "429", "-o", "json"}, {"top", "levels", "-o", "json"}} {
		t.Run(strings.Join(cmd[:2], " "), func(t *testing.T) {
			var outs [2][]byte
			for i, how := range [][]string{direct, proxied} {
				code, out, errOut := runLintPlugin(t, c, append(append(append([]string{}, cmd...), window...), how...)...)
				if code != 0 {
					t.Fatalf("%v: exit %d: %s", how, code, errOut)
				}
				outs[i] = out
			}
			if !bytes.Equal(outs[0], outs[1]) {
				t.Fatalf("--prometheus-service answers differently from --prometheus:\n%s\n---\n%s", outs[1], outs[0])
			}
			// The answer holds the burst: the store scraped real series.
			if cmd[0] == "explain" {
				var r rejections.Report
				if err := json.Unmarshal(outs[1], &r); err != nil {
					t.Fatalf("%v: %s", err, outs[1])
				}
				levels := map[string]bool{}
				for _, inc := range r.Incidents {
					levels[inc.Level] = true
				}
				if !levels[loadgen.Level] || !levels[loadgen.RejectLevel] {
					t.Errorf("incidents %v, want %s and %s", levels, loadgen.Level, loadgen.RejectLevel)
				}
				t.Logf("%d incidents through the service proxy; %v APF rejections by level", len(r.Incidents), r.Rejected)
			} else {
				var rows []struct {
					Name     string             `json:"name"`
					Rejected map[string]float64 `json:"rejected"`
				}
				if err := json.Unmarshal(outs[1], &rows); err != nil {
					t.Fatalf("%v: %s", err, outs[1])
				}
				rejected := map[string]map[string]float64{}
				for _, r := range rows {
					rejected[r.Name] = r.Rejected
				}
				if rejected[loadgen.Level][history.ReasonQueueFull] == 0 || rejected[loadgen.RejectLevel][history.ReasonConcurrencyLimit] == 0 {
					t.Errorf("top levels through the service proxy shows no rejections of the load levels: %s", outs[1])
				}
				t.Logf("top levels through the service proxy: %d levels, %s %v, %s %v", len(rows), loadgen.Level, rejected[loadgen.Level], loadgen.RejectLevel, rejected[loadgen.RejectLevel])
			}
		})
	}

	// The text output names the way it went.
	code, text, errOut := runLintPlugin(t, c, append(append([]string{"explain", "429"}, window...), proxied...)...)
	if code != 0 {
		t.Fatalf("explain 429 --prometheus-service: exit %d: %s", code, errOut)
	}
	if !bytes.Contains(text, []byte(loadgen.Level)) {
		t.Errorf("the text output lacks %s:\n%s", loadgen.Level, text)
	}
	t.Logf("explain 429 --prometheus-service %s/%s:9090:\n%s", ns, name, text)

	// A user bound to what "kubectl apf rbac" prints: without
	// --store-service the proxy refuses, and the error names the command
	// that prints the Role; with it, the user gets the admin's answer.
	kc := kubeconfig(t, c)
	service := ns + "/" + name + ":9090"
	asCarol := append(append([]string{"explain", "429", "-o", "json", "--kubeconfig", kc, "--context", "apf-local-carol"}, window...), proxied...)
	applyPrinted(t, c, mustApf(t, "rbac", "--user", "carol", "--name", "e2e-carol-store"))
	code, _, errs := retryApf(t, asCarol, func(code int, errs string) bool { return strings.Contains(errs, "services/proxy") })
	if want := `"kubectl apf rbac --store-service ` + service + `" prints a Role that grants it`; code != 1 || !strings.Contains(errs, "forbidden (403)") || !strings.Contains(errs, want) {
		t.Fatalf("without --store-service: exit %d, want 1 and %q: %s", code, want, errs)
	}
	applyPrinted(t, c, mustApf(t, "rbac", "--user", "carol", "--name", "e2e-carol-store", "--store-service", service))
	code, out, errs := retryApf(t, asCarol, func(code int, _ string) bool { return code == 0 })
	if code != 0 {
		t.Fatalf("with the Role of --store-service: exit %d: %s", code, errs)
	}
	adminCode, want, adminErrs := runLintPlugin(t, c, append(append([]string{"explain", "429", "-o", "json"}, window...), proxied...)...)
	if adminCode != 0 || out != string(want) {
		t.Errorf("carol's answer through the proxy differs from the admin's (exit %d, %s):\n%s\n---\n%s", adminCode, adminErrs, out, want)
	}
}

// retryApf runs the plugin with args until done holds of its exit code and
// stderr, or for 5 s: RBAC changes reach the authorizer through an
// informer.
func retryApf(t *testing.T, args []string, done func(code int, errs string) bool) (int, string, string) {
	t.Helper()
	for i := 0; ; i++ {
		code, out, errs := apf(t, "", args...)
		if done(code, errs) || i == 20 {
			return code, out, errs
		}
		time.Sleep(250 * time.Millisecond)
	}
}
