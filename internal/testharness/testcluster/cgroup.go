package testcluster

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
)

// CPU pins the control plane's share of the machine's CPUs with the cgroup
// v1 cpu controller, so that an overload recorded on it does not depend on
// whatever else runs on the machine: kube-apiserver gets a fixed CFS quota
// (it is starved the same way in every run, and CFS throttling holds
// dispatched requests' seats the way a CPU-starved production server does),
// and its cgroup, etcd's and the load generator's get a large cpu.shares
// weight, so that other work on the machine barely takes CPU from them.
type CPU struct {
	// APIServer is kube-apiserver's CPU quota in CPUs (cpu.cfs_quota_us /
	// cpu.cfs_period_us); zero means no quota.
	APIServer float64
	// Etcd is etcd's CPU quota in CPUs; zero means no quota.
	Etcd float64
	// Shares is the cpu.shares weight of every cgroup made (a process of
	// the root cgroup at nice 0 weighs 1024); zero means 8192.
	Shares int
	// Period is cpu.cfs_period_us; zero means 100000 (100 ms, the
	// kernel's default).
	Period int
	// Shared, instead, leaves kube-apiserver and etcd in the cgroup of
	// the process that starts them, with no quota (APIServer and Etcd
	// must be zero): a control-plane node whose apiserver competes for
	// the cores with whatever else that cgroup runs, such as the load
	// generator and its client processes. Separate cgroups would give the
	// apiserver its weight's share of the CPU however many clients run.
	// The caller gives that cgroup its weight against the rest of the
	// machine.
	Shared bool
}

// CgroupRoot is where the cgroup v1 cpu controller is mounted.
var CgroupRoot = "/sys/fs/cgroup/cpu"

// ErrNoCgroups is returned (wrapped, with the reason) when the cgroup v1 cpu
// controller cannot be written: no mount at CgroupRoot, or not root.
var ErrNoCgroups = errors.New("the cgroup v1 cpu controller is not writable")

var cgroupSeq atomic.Int64

// CPUGroup is one cgroup of the cpu controller made by this program.
type CPUGroup struct {
	Path string `json:"path"`
}

// CheckCgroups reports whether cgroups can be made under CgroupRoot: nil,
// or an error wrapping ErrNoCgroups that says why not.
func CheckCgroups() error {
	g, err := NewCPUGroup("probe", 0, 0, 0)
	if err != nil {
		return err
	}
	return g.Remove()
}

// NewCPUGroup makes a cgroup of the cpu controller named after name and
// this process, with the given weight (0: 8192) and quota in CPUs (0: none)
// per period in µs (0: 100000).
func NewCPUGroup(name string, shares int, quota float64, period int) (*CPUGroup, error) {
	if _, err := os.Stat(filepath.Join(CgroupRoot, "cpu.cfs_quota_us")); err != nil {
		return nil, fmt.Errorf("%w: no cpu controller at %s (%v)", ErrNoCgroups, CgroupRoot, err)
	}
	if shares == 0 {
		shares = 8192
	}
	if period == 0 {
		period = 100000
	}
	p := filepath.Join(CgroupRoot, fmt.Sprintf("kubectl-apf-%d-%d-%s", os.Getpid(), cgroupSeq.Add(1), name))
	if err := os.Mkdir(p, 0o755); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoCgroups, err)
	}
	g := &CPUGroup{Path: p}
	set := func(file, v string) error {
		if err := os.WriteFile(filepath.Join(p, file), []byte(v), 0o644); err != nil {
			_ = g.Remove()
			return fmt.Errorf("%w: %v", ErrNoCgroups, err)
		}
		return nil
	}
	if err := set("cpu.shares", strconv.Itoa(shares)); err != nil {
		return nil, err
	}
	if quota > 0 {
		if err := set("cpu.cfs_period_us", strconv.Itoa(period)); err != nil {
			return nil, err
		}
		if err := set("cpu.cfs_quota_us", strconv.Itoa(int(quota*float64(period)))); err != nil {
			return nil, err
		}
	}
	return g, nil
}

// Add moves a process (all its threads) into the group.
func (g *CPUGroup) Add(pid int) error {
	if err := os.WriteFile(filepath.Join(g.Path, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644); err != nil {
		return fmt.Errorf("moving process %d into %s: %w", pid, g.Path, err)
	}
	return nil
}

// Throttled returns the group's cpu.stat: how many periods it was
// throttled in, of how many, and for how long in all (ns); zeros for a
// nil group (a process in a cgroup it did not get of its own).
func (g *CPUGroup) Throttled() (periods, throttled, ns int64) {
	if g == nil {
		return 0, 0, 0
	}
	b, err := os.ReadFile(filepath.Join(g.Path, "cpu.stat"))
	if err != nil {
		return 0, 0, 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 {
			continue
		}
		v, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "nr_periods":
			periods = v
		case "nr_throttled":
			throttled = v
		case "throttled_time":
			ns = v
		}
	}
	return periods, throttled, ns
}

// Remove moves what is left in the group back to the root cgroup and
// removes the group.
func (g *CPUGroup) Remove() error {
	if g == nil {
		return nil
	}
	if b, err := os.ReadFile(filepath.Join(g.Path, "cgroup.procs")); err == nil {
		for _, pid := range strings.Fields(string(b)) {
			_ = os.WriteFile(filepath.Join(CgroupRoot, "cgroup.procs"), []byte(pid), 0o644)
		}
	}
	if err := os.Remove(g.Path); err != nil && !os.IsNotExist(err) {
		return err
	}
	return nil
}
