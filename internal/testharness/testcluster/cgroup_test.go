package testcluster

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCPUGroupFiles checks what NewCPUGroup writes, on a directory that
// stands in for the cpu controller's mount.
func TestCPUGroupFiles(t *testing.T) {
	root := t.TempDir()
	old := CgroupRoot
	CgroupRoot = root
	t.Cleanup(func() { CgroupRoot = old })
	if _, err := NewCPUGroup("x", 0, 0.3, 0); !errors.Is(err, ErrNoCgroups) {
		t.Fatalf("without cpu.cfs_quota_us at the root: %v, want ErrNoCgroups", err)
	}
	if err := os.WriteFile(filepath.Join(root, "cpu.cfs_quota_us"), []byte("-1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	g, err := NewCPUGroup("kube-apiserver", 0, 0.3, 0)
	if err != nil {
		t.Fatal(err)
	}
	read := func(f string) string {
		b, err := os.ReadFile(filepath.Join(g.Path, f))
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(b))
	}
	for f, want := range map[string]string{"cpu.shares": "8192", "cpu.cfs_period_us": "100000", "cpu.cfs_quota_us": "30000"} {
		if got := read(f); got != want {
			t.Errorf("%s = %s, want %s", f, got, want)
		}
	}
	h, err := NewCPUGroup("etcd", 2048, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(h.Path, "cpu.cfs_quota_us")); !os.IsNotExist(err) {
		t.Errorf("a group without quota got cpu.cfs_quota_us written (%v)", err)
	}
	if b, _ := os.ReadFile(filepath.Join(h.Path, "cpu.shares")); string(b) != "2048" {
		t.Errorf("cpu.shares = %q, want 2048", b)
	}
}
