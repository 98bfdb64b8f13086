package planes

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Usage is what a process has used so far.
type Usage struct {
	// CPU is user plus system time.
	CPU time.Duration
	// RSS is the resident memory now; PeakRSS the most it has been.
	RSS, PeakRSS int64
}

// APIServerUsage is the CPU and memory the plane's kube-apiserver has used.
func (p *Plane) APIServerUsage() (Usage, error) {
	pid, err := p.apiServerPID()
	if err != nil {
		return Usage{}, err
	}
	return ProcessUsage(pid)
}

// EtcdUsage is the CPU and memory the plane's etcd has used.
func (p *Plane) EtcdUsage() (Usage, error) {
	pid, err := p.etcdPID()
	if err != nil {
		return Usage{}, err
	}
	return ProcessUsage(pid)
}

// clockTicks is the kernel's USER_HZ, 100 on every Linux architecture Go
// supports.
const clockTicks = 100

// ProcessUsage reads a process's CPU time and memory from /proc.
func ProcessUsage(pid int) (Usage, error) {
	dir := filepath.Join("/proc", strconv.Itoa(pid))
	stat, err := os.ReadFile(filepath.Join(dir, "stat"))
	if err != nil {
		return Usage{}, err
	}
	// The command, in parentheses, may hold spaces: fields follow the last ")".
	i := strings.LastIndexByte(string(stat), ')')
	fields := strings.Fields(string(stat)[i+1:])
	if len(fields) < 13 {
		return Usage{}, fmt.Errorf("process %d: short stat", pid)
	}
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err1 != nil || err2 != nil {
		return Usage{}, fmt.Errorf("process %d: stat times: %v %v", pid, err1, err2)
	}
	u := Usage{CPU: time.Duration(utime+stime) * time.Second / clockTicks}
	status, err := os.ReadFile(filepath.Join(dir, "status"))
	if err != nil {
		return Usage{}, err
	}
	for _, line := range strings.Split(string(status), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || (k != "VmRSS" && k != "VmHWM") {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if err != nil {
			return Usage{}, fmt.Errorf("process %d: %s: %w", pid, k, err)
		}
		if k == "VmRSS" {
			u.RSS = kb << 10
		} else {
			u.PeakRSS = kb << 10
		}
	}
	return u, nil
}

// Sub is the CPU used between two readings, with the later memory.
func (u Usage) Sub(before Usage) Usage {
	u.CPU -= before.CPU
	return u
}

// MachineCPU is the CPU time every core of the machine has spent busy
// (neither idle nor waiting for I/O) since boot, from /proc/stat.
func MachineCPU() (time.Duration, error) {
	stat, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, err
	}
	line, _, _ := strings.Cut(string(stat), "\n")
	fields := strings.Fields(line)
	if len(fields) < 6 || fields[0] != "cpu" {
		return 0, fmt.Errorf("/proc/stat: unexpected first line %q", line)
	}
	var busy int64
	for i, f := range fields[1:] {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/stat: %w", err)
		}
		// user nice system idle iowait irq softirq steal (guest time is
		// already in user).
		if i != 3 && i != 4 && i < 8 {
			busy += n
		}
	}
	return time.Duration(busy) * time.Second / clockTicks, nil
}
