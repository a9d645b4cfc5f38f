package recording

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"strings"
	"time"
)

// CPU sampling from /proc: a process's CPU time, the machine's busy
// share, and its load average.

// cpuSnapshot is a process's CPU time and the machine's busy, stolen and
// whole CPU time at one instant.
type cpuSnapshot struct {
	proc             time.Duration
	busy, steal, all int64
}

func snapshotCPU(pid int) cpuSnapshot {
	busy, steal, all := machineBusy()
	return cpuSnapshot{proc: processCPU(pid), busy: busy, steal: steal, all: all}
}

// usedUntil is the process's CPU from c to later in cores on average
// over elapsed, the machine's busy share and the share its hypervisor
// stole, each to two decimals (0 when unknown).
func (c cpuSnapshot) usedUntil(later cpuSnapshot, elapsed time.Duration) (cores, busy, steal float64) {
	if later.proc > c.proc && elapsed > 0 {
		cores = math.Round((later.proc-c.proc).Seconds()/elapsed.Seconds()*100) / 100
	}
	if later.all > c.all {
		all := float64(later.all - c.all)
		busy = math.Round(float64(later.busy-c.busy)/all*100) / 100
		steal = math.Round(float64(later.steal-c.steal)/all*100) / 100
	}
	return cores, busy, steal
}

// processCPU is the CPU time a process used so far (utime + stime of
// /proc/PID/stat, in clock ticks of 10 ms), 0 when it cannot be read.
func processCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// the fields after the command, which is in parentheses
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0
	}
	var ut, st int64
	fmt.Sscan(f[11], &ut)
	fmt.Sscan(f[12], &st)
	return time.Duration(ut+st) * 10 * time.Millisecond
}

// machineBusy is the machine's CPU time not idle (nor waiting for I/O),
// the part of it the hypervisor stole (steal: a virtual machine's host
// ran something else on its cores), and its CPU time in all, in clock
// ticks (the "cpu" line of /proc/stat).
func machineBusy() (busy, steal, all int64) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 5 || f[0] != "cpu" {
		return 0, 0, 0
	}
	for i, v := range f[1:] {
		var n int64
		fmt.Sscan(v, &n)
		if i < 8 { // user nice system idle iowait irq softirq steal; guest is in user
			all += n
			if i != 3 && i != 4 {
				busy += n
			}
			if i == 7 {
				steal = n
			}
		}
	}
	return busy, steal, all
}

// LoadAverage is the machine's load average over 1, 5 and 15 minutes
// (/proc/loadavg), "unknown" when it cannot be read.
func LoadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return strings.TrimSpace(string(b))
	}
	return strings.Join(f[:3], " ")
}
