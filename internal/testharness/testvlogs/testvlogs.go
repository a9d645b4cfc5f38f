// Package testvlogs starts a real VictoriaLogs (built by hack/bin.sh, like
// kube-apiserver) on 127.0.0.1 for tests: a single node, or a cluster of
// two storage nodes behind an insert node and a select node (the same
// binary; -storageNode makes a node spread its inserts and queries over the
// storage nodes). It ingests audit events as JSON lines, as a log pipeline
// ships them.
package testvlogs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
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

// Node is one running VictoriaLogs process.
type Node struct {
	URL     string `json:"url"`
	Addr    string `json:"addr"`
	LogFile string `json:"logFile"`
	PID     int    `json:"pid"`

	done chan struct{}
	err  error
}

// Store is a single node (Insert == Select) or a cluster.
type Store struct {
	// Insert takes the events; Select answers the queries.
	Insert, Select *Node
	// Storage are a cluster's storage nodes (nil for a single node).
	Storage []*Node
}

// where runs a node: in a network namespace (ip netns exec), listening
// on host (127.0.0.1 when empty); detach leaves it running after this
// process exits (for the demo).
type where struct {
	netns, host string
	detach      bool
}

// start starts one node with args in dir.
func start(ctx context.Context, bin, dir, name string, args ...string) (*Node, error) {
	return startIn(ctx, where{}, bin, dir, name, args...)
}

func startIn(ctx context.Context, at where, bin, dir, name string, args ...string) (*Node, error) {
	host := "127.0.0.1"
	if at.host != "" {
		host = at.host
	}
	var last error
	for attempt := 0; attempt < 3; attempt++ {
		port, err := testcluster.FreePort()
		if err != nil {
			return nil, err
		}
		addr := net.JoinHostPort(host, strconv.Itoa(port))
		n := &Node{URL: "http://" + addr, Addr: addr, LogFile: filepath.Join(dir, name+".log"), done: make(chan struct{})}
		log, err := os.OpenFile(n.LogFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return nil, err
		}
		cmd := exec.Command(bin, append([]string{"-httpListenAddr=" + addr, "-loggerLevel=WARN", "-retentionPeriod=100y"}, args...)...)
		if at.netns != "" {
			// ip execs VictoriaLogs after entering the namespace: same process
			cmd = exec.Command("ip", append([]string{"netns", "exec", at.netns}, cmd.Args...)...)
		}
		cmd.Stdout, cmd.Stderr, cmd.Dir = log, log, dir
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
		if at.detach {
			cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		}
		err = cmd.Start()
		log.Close()
		if err != nil {
			return nil, fmt.Errorf("starting victoria-logs: %w", err)
		}
		n.PID = cmd.Process.Pid
		go func() {
			n.err = cmd.Wait()
			close(n.done)
		}()
		if last = n.wait(ctx); last == nil {
			return n, nil
		}
		_ = n.Stop()
	}
	return nil, last
}

func (n *Node) wait(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		select {
		case <-n.done:
			return fmt.Errorf("victoria-logs exited during start-up (%v); its log %s:\n%s", n.err, n.LogFile, testcluster.Tail(n.LogFile, 20))
		case <-ctx.Done():
			return fmt.Errorf("victoria-logs not ready: %w; its log %s:\n%s", ctx.Err(), n.LogFile, testcluster.Tail(n.LogFile, 20))
		case <-time.After(50 * time.Millisecond):
		}
		resp, err := http.Get(n.URL + "/health")
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
	}
}

// Stop ends the node: SIGTERM, then SIGKILL after 10 seconds. A node read
// back from its JSON (a detached one) is watched by its PID.
func (n *Node) Stop() error {
	if n == nil || n.PID == 0 {
		return nil
	}
	testcluster.StopPID(n.PID, n.done, 10*time.Second)
	return nil
}

// StartDetached starts a single node storing in dir that keeps running
// after this process exits (the demo's); Stop ends it.
func StartDetached(ctx context.Context, dir string) (*Node, error) {
	bin, err := testcluster.Binary("victoria-logs")
	if err != nil {
		return nil, err
	}
	return startIn(ctx, where{detach: true}, bin, dir, "victoria-logs", "-storageDataPath="+filepath.Join(dir, "data"))
}

// StartSingle starts a single node storing in dir, with extra flags.
func StartSingle(ctx context.Context, dir string, extra ...string) (*Store, error) {
	bin, err := testcluster.Binary("victoria-logs")
	if err != nil {
		return nil, err
	}
	n, err := start(ctx, bin, dir, "victoria-logs", append([]string{"-storageDataPath=" + filepath.Join(dir, "data")}, extra...)...)
	if err != nil {
		return nil, err
	}
	return &Store{Insert: n, Select: n}, nil
}

// StartSingleIn starts a single node inside a network namespace,
// listening on host, an address of the namespace (for the apiserver's
// service proxy, which refuses loopback endpoints). It is stopped when
// the test ends.
func StartSingleIn(t testing.TB, netns, host string) *Store {
	t.Helper()
	bin, err := testcluster.Binary("victoria-logs")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	n, err := startIn(ctx, where{netns: netns, host: host}, bin, dir, "victoria-logs", "-storageDataPath="+filepath.Join(dir, "data"))
	if err != nil {
		t.Fatalf("starting VictoriaLogs in %s: %v", netns, err)
	}
	t.Cleanup(func() { _ = n.Stop() })
	return &Store{Insert: n, Select: n}
}

// StartCluster starts two storage nodes, an insert node and a select node,
// each with the extra flags.
func StartCluster(ctx context.Context, dir string, extra ...string) (*Store, error) {
	bin, err := testcluster.Binary("victoria-logs")
	if err != nil {
		return nil, err
	}
	s := &Store{}
	for i := range 2 {
		n, err := start(ctx, bin, dir, fmt.Sprintf("storage-%d", i), append([]string{"-storageDataPath=" + filepath.Join(dir, fmt.Sprintf("storage-%d", i))}, extra...)...)
		if err != nil {
			s.Stop()
			return nil, err
		}
		s.Storage = append(s.Storage, n)
	}
	nodes := "-storageNode=" + s.Storage[0].Addr + "," + s.Storage[1].Addr
	if s.Insert, err = start(ctx, bin, dir, "insert", append([]string{nodes, "-select.disable"}, extra...)...); err != nil {
		s.Stop()
		return nil, err
	}
	if s.Select, err = start(ctx, bin, dir, "select", append([]string{nodes, "-insert.disable"}, extra...)...); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

// Stop stops every node.
func (s *Store) Stop() {
	for _, n := range []*Node{s.Select, s.Insert} {
		_ = n.Stop()
	}
	for _, n := range s.Storage {
		_ = n.Stop()
	}
}

// StartT starts a single node (cluster false) or a cluster for one test,
// each node with the extra flags, and stops it when the test ends.
func StartT(t testing.TB, cluster bool, extra ...string) *Store {
	t.Helper()
	if testing.Short() {
		t.Skip("VictoriaLogs does not run with -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	dir := t.TempDir()
	var s *Store
	var err error
	if cluster {
		s, err = StartCluster(ctx, dir, extra...)
	} else {
		s, err = StartSingle(ctx, dir, extra...)
	}
	if err != nil {
		t.Fatalf("starting VictoriaLogs: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("--- last lines of %s ---\n%s", s.Select.LogFile, testcluster.Tail(s.Select.LogFile, 30))
		}
		s.Stop()
	})
	return s
}

// Ingest sends JSON lines (audit events) to the insert node's
// /insert/jsonline, their time from timeField, with streamFields as
// stream fields, and waits until the select node sees want events in all
// (VictoriaLogs makes ingested rows visible within a second or so).
func (s *Store) Ingest(ctx context.Context, lines []byte, timeField string, streamFields []string, want int) error {
	return s.ingest(ctx, "/insert/jsonline", lines, timeField, streamFields, want)
}

// IngestBulk sends the same lines through the Elasticsearch bulk API
// (/insert/elasticsearch/_bulk), as Filebeat, Fluent Bit or Vector ship
// them: a create action before each event.
func (s *Store) IngestBulk(ctx context.Context, lines []byte, timeField string, streamFields []string, want int) error {
	var body bytes.Buffer
	for _, l := range bytes.Split(lines, []byte{'\n'}) {
		if len(bytes.TrimSpace(l)) == 0 {
			continue
		}
		body.WriteString(`{"create":{"_index":"audit"}}` + "\n")
		body.Write(l)
		body.WriteByte('\n')
	}
	return s.ingest(ctx, "/insert/elasticsearch/_bulk", body.Bytes(), timeField, streamFields, want)
}

// IngestOnly sends JSON lines as Ingest does, without waiting for them to
// be searchable (WaitFor does).
func (s *Store) IngestOnly(ctx context.Context, lines []byte, timeField string, streamFields []string) error {
	return s.ingest(ctx, "/insert/jsonline", lines, timeField, streamFields, -1)
}

func (s *Store) ingest(ctx context.Context, path string, lines []byte, timeField string, streamFields []string, want int) error {
	q := url.Values{"_time_field": {timeField}}
	if len(streamFields) > 0 {
		q.Set("_stream_fields", strings.Join(streamFields, ","))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.Insert.URL+path+"?"+q.Encode(), bytes.NewReader(lines))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/stream+json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("ingesting: HTTP %d: %s", resp.StatusCode, body)
	}
	if want < 0 {
		return nil
	}
	return s.WaitFor(ctx, want)
}

// WaitFor flushes the nodes' buffers and waits until want events in all
// are searchable.
func (s *Store) WaitFor(ctx context.Context, want int) error {
	for _, n := range append([]*Node{s.Insert}, s.Storage...) {
		if r, err := http.Get(n.URL + "/internal/force_flush"); err == nil {
			_, _ = io.Copy(io.Discard, r.Body)
			r.Body.Close()
		}
	}
	// 30 s, and 30 s more for each million events
	wait := 30*time.Second + time.Duration(want/1_000_000)*30*time.Second
	for deadline := time.Now().Add(wait); ; time.Sleep(200 * time.Millisecond) {
		n, err := s.Count(ctx, "*")
		if err == nil && n >= want {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("ingested %d events, %d searchable after %s (%v)", want, n, wait, err)
		}
	}
}

// Count counts the events matching a LogsQL filter over all time.
func (s *Store) Count(ctx context.Context, filter string) (int, error) {
	q := url.Values{"query": {filter + " | stats count() n"}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.Select.URL+"/select/logsql/query?"+q.Encode(), nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("HTTP %d: %s", resp.StatusCode, b)
	}
	var row struct {
		N string `json:"n"`
	}
	if err := json.Unmarshal(bytes.TrimSpace(b), &row); err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(row.N)
	if err != nil {
		return 0, errors.New("count is not a number: " + string(b))
	}
	return n, nil
}

// Ship follows an audit log as a log pipeline does: every interval it
// sends the complete lines written since the last time to url's
// /insert/jsonline (_time from stageTimestamp), until ctx ends. It starts
// from the file's beginning.
func Ship(ctx context.Context, path, url string, every time.Duration) error {
	var off int64
	var pending []byte
	for {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		if _, err := f.Seek(off, io.SeekStart); err != nil {
			f.Close()
			return err
		}
		b, err := io.ReadAll(f)
		f.Close()
		if err != nil {
			return err
		}
		off += int64(len(b))
		pending = append(pending, b...)
		if i := bytes.LastIndexByte(pending, '\n'); i >= 0 {
			s := &Store{Insert: &Node{URL: url}}
			if err := s.ingest(ctx, "/insert/jsonline", pending[:i+1], "stageTimestamp", nil, -1); err != nil && ctx.Err() == nil {
				return err
			}
			pending = append(pending[:0], pending[i+1:]...)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(every):
		}
	}
}

// Rounded rounds every number of a decoded JSON value (v, from
// json.Unmarshal into an any) to 12 significant digits, in place: reports
// read from the store and from the files sum the same shares in another
// order when requests of the same microsecond come back in another order,
// which changes only their last bits.
func Rounded(v any) any {
	switch v := v.(type) {
	case float64:
		f, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 12, 64), 64)
		return f
	case []any:
		for i := range v {
			v[i] = Rounded(v[i])
		}
	case map[string]any:
		for k := range v {
			v[k] = Rounded(v[k])
		}
	}
	return v
}
