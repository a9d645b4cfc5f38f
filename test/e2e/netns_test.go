package e2e

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"
)

// Network namespaces are the e2e tests' private hosts: addresses that exist
// nowhere but on this machine, for what the local control plane on
// 127.0.0.1 cannot show (EndpointSlices may not list loopback addresses).

var netnsSeq, vethSeq atomic.Int32

// newNetns creates a network namespace with its loopback device up, deleted
// when the test ends. It skips the test, saying why and what covers the
// rest (covered), when namespaces cannot be created (not root, no "ip").
func newNetns(t *testing.T, covered string) string {
	t.Helper()
	ns := fmt.Sprintf("apf-e2e-%d-%d", os.Getpid(), netnsSeq.Add(1))
	if out, err := exec.Command("ip", "netns", "add", ns).CombinedOutput(); err != nil {
		t.Skipf("cannot create a network namespace (%v: %s); %s", err, strings.TrimSpace(string(out)), covered)
	}
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", ns).Run() })
	ipIn(t, ns, "link", "set", "lo", "up")
	return ns
}

// ipIn runs "ip -n ns args...".
func ipIn(t *testing.T, ns string, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", append([]string{"-n", ns}, args...)...).CombinedOutput(); err != nil {
		t.Fatalf("ip -n %s %v: %v: %s", ns, args, err, out)
	}
}

// vethHost links namespace ns to this one by a veth pair on a /30 of
// 10.234.0.0/16 picked from the process id (tests of other processes may
// run at the same time), and returns the address of this side and the
// namespace's: a host the apiserver reaches by routing, not loopback.
func vethHost(t *testing.T, ns string) (here, there string) {
	t.Helper()
	n := (os.Getpid()*8 + int(vethSeq.Add(1))) % 16384
	base := net.IPv4(10, 234, byte(n>>6), byte(n&63)*4).To4()
	here = net.IPv4(base[0], base[1], base[2], base[3]+1).String()
	there = net.IPv4(base[0], base[1], base[2], base[3]+2).String()
	host, peer := fmt.Sprintf("apfh%d", n), fmt.Sprintf("apfn%d", n)
	if out, err := exec.Command("ip", "link", "add", host, "type", "veth", "peer", "name", peer, "netns", ns).CombinedOutput(); err != nil {
		t.Fatalf("ip link add %s: %v: %s", host, err, out)
	}
	t.Cleanup(func() { _ = exec.Command("ip", "link", "del", host).Run() })
	for _, args := range [][]string{{"addr", "add", here + "/30", "dev", host}, {"link", "set", host, "up"}} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %v: %v: %s", args, err, out)
		}
	}
	ipIn(t, ns, "addr", "add", there+"/30", "dev", peer)
	ipIn(t, ns, "link", "set", peer, "up")
	return here, there
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
