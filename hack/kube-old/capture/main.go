// Command capture starts etcd and a kube-apiserver binary of an older release on
// 127.0.0.1, captures the three APF debug dumps idle, then drives a tiny
// priority level into queueing and captures them again under load.
//
// It mirrors internal/testharness/testcluster (certificates, token users, flags) and
// internal/testharness/loadgen (a one-seat "apf-load" level, a FlowSchema routing the
// apf-load group there, LIST bursts of 100 ConfigMaps of 32 KiB), but speaks
// plain HTTP and JSON so that it needs no client-go of any release: the
// flowcontrol API version is a flag (v1beta3 for 1.26 and 1.27).
//
// Usage:
//
//	go run . -apiserver BIN -etcd BIN -flowcontrol v1beta3 -out ../../../testdata/dump -name v1.27.4
package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

const (
	pathLevels   = "/debug/api_priority_and_fairness/dump_priority_levels"
	pathQueues   = "/debug/api_priority_and_fairness/dump_queues"
	pathRequests = "/debug/api_priority_and_fairness/dump_requests?includeRequestDetails=1"
	loadNS       = "apf-load"
	loadLevel    = "apf-load"
	loadGroup    = "apf-load"
	numLoadUsers = 6
)

func main() {
	apiserver := flag.String("apiserver", "", "kube-apiserver binary")
	etcd := flag.String("etcd", "", "etcd binary (hack/bin.sh etcd)")
	fcVersion := flag.String("flowcontrol", "v1beta3", "flowcontrol.apiserver.k8s.io version the server serves")
	out := flag.String("out", "", "directory that receives NAME-idle/ and NAME-load/")
	name := flag.String("name", "", "fixture name prefix, e.g. v1.27.4")
	work := flag.String("work", "", "work directory (default: a new temporary one)")
	metricsDir := flag.String("metrics", "", "directory that also receives NAME-idle.txt and NAME-load.txt, the APF part of /metrics taken with the dumps")
	hold := flag.Duration("hold", 0, "keep the server running this long after the captures, with an admin kubeconfig in the work directory (to try the plugin against it)")
	flag.Parse()
	if *apiserver == "" || *etcd == "" || *out == "" || *name == "" {
		log.Fatal("capture: -apiserver, -etcd, -out and -name are required")
	}
	if err := run(*apiserver, *etcd, *fcVersion, *out, *name, *work, *metricsDir, *hold); err != nil {
		log.Fatalf("capture: %v", err)
	}
}

type user struct{ name, group, token string }

func run(apiserverBin, etcdBin, fcVersion, out, name, work, metricsDir string, hold time.Duration) (err error) {
	if work == "" {
		d, err := os.MkdirTemp("", "kube-old-")
		if err != nil {
			return err
		}
		work = d
		// Registered first, so it runs after the processes are stopped; the
		// logs stay for a failed run.
		defer func() {
			if err == nil {
				_ = os.RemoveAll(work)
			}
		}()
	}
	log.Printf("work directory %s", work)
	caPEM, err := writePKI(work)
	if err != nil {
		return fmt.Errorf("generating certificates: %w", err)
	}
	users := []user{{"admin", "system:masters", ""}}
	for i := 1; i <= numLoadUsers; i++ {
		users = append(users, user{fmt.Sprintf("load-%d", i), loadGroup, ""})
	}
	// A load user whose name holds a comma, as X.509 subjects do: the dumps
	// print it unquoted in their comma-separated rows.
	users = append(users, user{"CN=Doe, Jane", loadGroup, ""})
	var tokens strings.Builder
	for i := range users {
		b := make([]byte, 16)
		if _, err := rand.Read(b); err != nil {
			return err
		}
		users[i].token = hex.EncodeToString(b)
		fmt.Fprintf(&tokens, "%s,\"%s\",\"%s\",\"%s\"\n", users[i].token, users[i].name, users[i].name, users[i].group)
	}
	if err := os.WriteFile(filepath.Join(work, "tokens.csv"), []byte(tokens.String()), 0o600); err != nil {
		return err
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	etcdPort, peerPort, apiPort := freePort(), freePort(), freePort()
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", etcdPort)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", peerPort)
	etcdCmd, err := start(etcdBin, filepath.Join(work, "etcd.log"),
		"--name=apf-local", "--data-dir="+filepath.Join(work, "etcd"),
		"--listen-client-urls="+etcdURL, "--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=apf-local="+peerURL, "--log-level=warn", "--unsafe-no-fsync")
	if err != nil {
		return err
	}
	defer stop(etcdCmd)
	if err := waitFor(ctx, func() error { return httpOK(http.DefaultClient, etcdURL+"/health", "") }); err != nil {
		return fmt.Errorf("etcd not healthy: %w", err)
	}

	// The flags of internal/testharness/testcluster.apiserverArgs, all of which 1.26 and
	// 1.27 know; loopback only.
	base := fmt.Sprintf("https://127.0.0.1:%d", apiPort)
	apiCmd, err := start(apiserverBin, filepath.Join(work, "kube-apiserver.log"),
		"--etcd-servers="+etcdURL, "--bind-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", apiPort),
		"--advertise-address=127.0.0.1", "--endpoint-reconciler-type=none",
		"--tls-cert-file="+filepath.Join(work, "apiserver.crt"), "--tls-private-key-file="+filepath.Join(work, "apiserver.key"),
		"--token-auth-file="+filepath.Join(work, "tokens.csv"), "--authorization-mode=RBAC",
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-signing-key-file="+filepath.Join(work, "sa.key"),
		"--service-account-key-file="+filepath.Join(work, "sa.pub"),
		"--max-requests-inflight=10", "--max-mutating-requests-inflight=5",
		"--enable-priority-and-fairness=true", "--profiling=false",
		"--cert-dir="+filepath.Join(work, "certs"), "--v=2")
	if err != nil {
		return err
	}
	defer stop(apiCmd)

	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	hc := &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool}, MaxIdleConnsPerHost: 100,
	}}
	admin := users[0].token
	fcBase := "/apis/flowcontrol.apiserver.k8s.io/" + fcVersion
	if err := waitFor(ctx, func() error {
		if err := httpOK(hc, base+"/readyz", admin); err != nil {
			return err
		}
		return httpOK(hc, base+fcBase+"/flowschemas/global-default", admin)
	}); err != nil {
		return fmt.Errorf("kube-apiserver not ready (see %s): %w", filepath.Join(work, "kube-apiserver.log"), err)
	}
	v, _ := get(hc, base+"/version", admin)
	log.Printf("kube-apiserver ready: %s", bytes.TrimSpace(v))

	// Idle: nothing but the server's own loops and this program.
	time.Sleep(3 * time.Second)
	if err := capture(hc, base, admin, filepath.Join(out, name+"-idle")); err != nil {
		return err
	}
	if err := captureMetrics(hc, base, admin, metricsDir, name+"-idle"); err != nil {
		return err
	}

	if err := setup(hc, base, fcBase, admin); err != nil {
		return err
	}
	// Let the controller digest the new level before loading it.
	if err := waitFor(ctx, func() error {
		b, err := get(hc, base+pathLevels, admin)
		if err != nil {
			return err
		}
		if !bytes.Contains(b, []byte(loadLevel+",")) {
			return errors.New("apf-load not in dump_priority_levels yet")
		}
		return nil
	}); err != nil {
		return err
	}

	loadCtx, stopLoad := context.WithCancel(ctx)
	defer stopLoad()
	var wg sync.WaitGroup
	var sent, throttled atomic.Int64
	for _, u := range users[1:] {
		for j := 0; j < 10; j++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for loadCtx.Err() == nil {
					req, _ := http.NewRequestWithContext(loadCtx, http.MethodGet, base+"/api/v1/namespaces/"+loadNS+"/configmaps", nil)
					req.Header.Set("Authorization", "Bearer "+u.token)
					resp, err := hc.Do(req)
					if err != nil {
						continue
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					sent.Add(1)
					if resp.StatusCode == http.StatusTooManyRequests {
						throttled.Add(1)
						time.Sleep(50 * time.Millisecond)
					}
				}
			}()
		}
	}
	// The dumps are snapshots: take the three in a row until the requests dump
	// shows waiting apf-load requests and the levels dump a waiting count.
	var captured bool
	for i := 0; i < 60 && !captured; i++ {
		time.Sleep(500 * time.Millisecond)
		dumps, err := fetch(hc, base, admin)
		if err != nil {
			stopLoad()
			wg.Wait()
			return err
		}
		if bytes.Count(dumps[2], []byte("\n"+loadLevel+",")) >= 3 && bytes.Contains(dumps[1], []byte("\n"+loadLevel+",")) {
			captured = true
			err := write(filepath.Join(out, name+"-load"), dumps)
			if err == nil {
				err = captureMetrics(hc, base, admin, metricsDir, name+"-load")
			}
			if err != nil {
				stopLoad()
				wg.Wait()
				return err
			}
		}
	}
	stopLoad()
	wg.Wait()
	log.Printf("load: %d responses, %d of them 429", sent.Load(), throttled.Load())
	if !captured {
		return errors.New("no dump showed waiting apf-load requests")
	}
	if hold > 0 {
		kc := filepath.Join(work, "kubeconfig")
		cfg := fmt.Sprintf("apiVersion: v1\nkind: Config\nclusters:\n- name: old\n  cluster:\n    server: %s\n    certificate-authority: %s\n"+
			"users:\n- name: admin\n  user:\n    token: %s\ncontexts:\n- name: old\n  context:\n    cluster: old\n    user: admin\ncurrent-context: old\n",
			base, filepath.Join(work, "ca.crt"), admin)
		if err := os.WriteFile(kc, []byte(cfg), 0o600); err != nil {
			return err
		}
		log.Printf("holding the server for %s; kubeconfig %s", hold, kc)
		time.Sleep(hold)
	}
	return nil
}

// setup creates the objects of internal/testharness/loadgen.Setup in the given flowcontrol
// version: one seat, eight queues of three.
func setup(hc *http.Client, base, fcBase, admin string) error {
	objs := []struct{ path, body string }{
		{fcBase + "/prioritylevelconfigurations", `{"metadata":{"name":"apf-load"},"spec":{"type":"Limited","limited":{"nominalConcurrencyShares":1,"lendablePercent":0,"borrowingLimitPercent":0,"limitResponse":{"type":"Queue","queuing":{"queues":8,"handSize":2,"queueLengthLimit":3}}}}}`},
		{fcBase + "/flowschemas", `{"metadata":{"name":"apf-load"},"spec":{"priorityLevelConfiguration":{"name":"apf-load"},"matchingPrecedence":500,"distinguisherMethod":{"type":"ByUser"},"rules":[{"subjects":[{"kind":"Group","group":{"name":"apf-load"}}],"resourceRules":[{"verbs":["*"],"apiGroups":["*"],"resources":["*"],"namespaces":["*"],"clusterScope":true}],"nonResourceRules":[{"verbs":["*"],"nonResourceURLs":["*"]}]}]}}`},
		{"/api/v1/namespaces", `{"metadata":{"name":"apf-load"}}`},
		{"/apis/rbac.authorization.k8s.io/v1/namespaces/apf-load/roles", `{"metadata":{"name":"apf-load-reader"},"rules":[{"verbs":["get","list","watch"],"apiGroups":[""],"resources":["configmaps"]}]}`},
		{"/apis/rbac.authorization.k8s.io/v1/namespaces/apf-load/rolebindings", `{"metadata":{"name":"apf-load-reader"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"apf-load-reader"},"subjects":[{"kind":"Group","apiGroup":"rbac.authorization.k8s.io","name":"apf-load"}]}`},
	}
	payload := strings.Repeat("x", 32<<10)
	for i := 0; i < 100; i++ {
		cm, _ := json.Marshal(map[string]any{"metadata": map[string]string{"name": fmt.Sprintf("load-%03d", i)}, "data": map[string]string{"payload": payload}})
		objs = append(objs, struct{ path, body string }{"/api/v1/namespaces/apf-load/configmaps", string(cm)})
	}
	for _, o := range objs {
		req, _ := http.NewRequest(http.MethodPost, base+o.path, strings.NewReader(o.body))
		req.Header.Set("Authorization", "Bearer "+admin)
		req.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(req)
		if err != nil {
			return fmt.Errorf("creating %s: %w", o.path, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusConflict {
			return fmt.Errorf("creating %s: %s: %s", o.path, resp.Status, b)
		}
	}
	return nil
}

func fetch(hc *http.Client, base, admin string) ([3][]byte, error) {
	var d [3][]byte
	for i, p := range []string{pathLevels, pathQueues, pathRequests} {
		b, err := get(hc, base+p, admin)
		if err != nil {
			return d, err
		}
		d[i] = b
	}
	return d, nil
}

func capture(hc *http.Client, base, admin, dir string) error {
	d, err := fetch(hc, base, admin)
	if err != nil {
		return err
	}
	return write(dir, d)
}

func write(dir string, d [3][]byte) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for i, f := range []string{"dump_priority_levels.txt", "dump_queues.txt", "dump_requests.txt"} {
		if err := os.WriteFile(filepath.Join(dir, f), d[i], 0o644); err != nil {
			return err
		}
	}
	log.Printf("wrote %s", dir)
	return nil
}

// captureMetrics writes the APF part of /metrics to dir/name.txt (nothing
// when dir is empty).
func captureMetrics(hc *http.Client, base, admin, dir, name string) error {
	if dir == "" {
		return nil
	}
	b, err := get(hc, base+"/metrics", admin)
	if err != nil {
		return err
	}
	p := filepath.Join(dir, name+".txt")
	if err := os.WriteFile(p, filterAPF(b), 0o644); err != nil {
		return err
	}
	log.Printf("wrote %s", p)
	return nil
}

// filterAPF keeps the lines pkg/metrics.FilterAPF keeps (this program uses
// the standard library only): the apiserver_flowcontrol_ families, the
// object counts and sizes the LIST estimator reads, and the 429 samples of
// apiserver_request_total and apiserver_request_terminations_total, each
// family with its HELP and TYPE lines.
func filterAPF(body []byte) []byte {
	kept := func(name string) bool {
		switch name {
		case "apiserver_request_total", "apiserver_request_terminations_total", "apiserver_dropped_requests_total",
			"apiserver_resource_objects", "apiserver_storage_objects", "apiserver_resource_size_estimate_bytes":
			return true
		}
		return strings.HasPrefix(name, "apiserver_flowcontrol_")
	}
	var out bytes.Buffer
	for _, line := range strings.SplitAfter(string(body), "\n") {
		var name string
		if rest, ok := strings.CutPrefix(line, "# HELP "); ok {
			name, _, _ = strings.Cut(rest, " ")
		} else if rest, ok := strings.CutPrefix(line, "# TYPE "); ok {
			name, _, _ = strings.Cut(rest, " ")
		} else if line != "" && line[0] != '#' {
			name = line[:strings.IndexAny(line+" ", "{ ")]
			if (name == "apiserver_request_total" || name == "apiserver_request_terminations_total") && !strings.Contains(line, `code="429"`) {
				continue
			}
		}
		if name != "" && kept(name) {
			out.WriteString(line)
		}
	}
	return out.Bytes()
}

func get(hc *http.Client, url, token string) ([]byte, error) {
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s: %s", url, resp.Status, bytes.TrimSpace(b))
	}
	return b, nil
}

func httpOK(hc *http.Client, url, token string) error {
	_, err := get(hc, url, token)
	return err
}

func waitFor(ctx context.Context, f func() error) error {
	var err error
	for ctx.Err() == nil {
		if err = f(); err == nil {
			return nil
		}
		time.Sleep(500 * time.Millisecond)
	}
	return fmt.Errorf("%w (last: %v)", ctx.Err(), err)
}

func start(bin, logFile string, args ...string) (*exec.Cmd, error) {
	f, err := os.Create(logFile)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	return cmd, nil
}

func stop(cmd *exec.Cmd) {
	_ = cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}

func freePort() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatalf("capture: no free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// writePKI writes a CA, a loopback serving certificate and a service account
// key pair into dir (as internal/testharness/testcluster/certs.go does) and returns the CA.
func writePKI(dir string) ([]byte, error) {
	now := time.Now()
	key := func() *ecdsa.PrivateKey { k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader); return k }
	caKey, srvKey, saKey := key(), key(), key()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kube-old capture CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature, BasicConstraintsValid: true, IsCA: true}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	caCert, _ := x509.ParseCertificate(caDER)
	srvTmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "kube-apiserver"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, DNSNames: []string{"localhost"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
	srvDER, err := x509.CreateCertificate(rand.Reader, srvTmpl, caCert, &srvKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	pub, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return nil, err
	}
	ecPEM := func(k *ecdsa.PrivateKey) []byte {
		der, _ := x509.MarshalECPrivateKey(k)
		return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})
	}
	files := map[string][]byte{
		"ca.crt":        caPEM,
		"apiserver.crt": pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srvDER}),
		"apiserver.key": ecPEM(srvKey),
		"sa.key":        ecPEM(saKey),
		"sa.pub":        pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}),
	}
	for f, b := range files {
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o600); err != nil {
			return nil, err
		}
	}
	return caPEM, nil
}
