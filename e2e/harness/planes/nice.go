package planes

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// Renice sets the nice value of the plane's kube-apiserver and etcd, every
// thread of them: at a higher value they take only the CPU that processes
// at a lower one leave. Lowering it again needs CAP_SYS_NICE.
func (p *Plane) Renice(nice int) error {
	pids, err := p.PIDs()
	if err != nil {
		return err
	}
	for _, pid := range pids {
		if err := ReniceProcess(pid, nice); err != nil {
			return fmt.Errorf("%s: %w", p.Name, err)
		}
	}
	return nil
}

// ReniceProcess sets the nice value of every thread of a process: Linux
// keeps it per thread, and a thread started later inherits its creator's.
func ReniceProcess(pid, nice int) error {
	tasks, err := os.ReadDir(filepath.Join("/proc", strconv.Itoa(pid), "task"))
	if err != nil {
		return err
	}
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		if err := unix.Setpriority(unix.PRIO_PROCESS, tid, nice); err != nil && err != unix.ESRCH {
			return fmt.Errorf("renice thread %d of process %d to %d: %w", tid, pid, nice, err)
		}
	}
	return nil
}
