package planes

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// cpusetRoot is where cgroup v1 mounts its cpuset hierarchy.
const cpusetRoot = "/sys/fs/cgroup/cpuset"

// Cpuset is a cgroup v1 cpuset: the processes moved into it, every thread
// and every child they start, run only on its CPUs, as if on a machine of
// their own. taskset pins threads, not the children a process starts.
type Cpuset struct{ dir string }

// NewCpuset makes (or reuses) the cpuset name on cpus ("0", "1-3") with
// the root's memory nodes. It needs root and a cgroup v1 cpuset hierarchy.
func NewCpuset(name, cpus string) (*Cpuset, error) {
	mems, err := os.ReadFile(filepath.Join(cpusetRoot, "cpuset.mems"))
	if err != nil {
		return nil, fmt.Errorf("no cgroup v1 cpuset hierarchy at %s: %w", cpusetRoot, err)
	}
	c := &Cpuset{dir: filepath.Join(cpusetRoot, name)}
	if err := os.Mkdir(c.dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("cpuset %s: %w", name, err)
	}
	// The memory nodes first: a cpuset without them takes no process.
	for file, v := range map[string]string{"cpuset.mems": strings.TrimSpace(string(mems)), "cpuset.cpus": cpus} {
		if err := os.WriteFile(filepath.Join(c.dir, file), []byte(v), 0o644); err != nil {
			return nil, fmt.Errorf("cpuset %s: %s %s: %w", name, file, v, err)
		}
	}
	return c, nil
}

// Add moves a process, all its threads, into the cpuset.
func (c *Cpuset) Add(pids ...int) error {
	for _, pid := range pids {
		if err := os.WriteFile(filepath.Join(c.dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644); err != nil {
			return fmt.Errorf("move process %d into %s: %w", pid, c.dir, err)
		}
	}
	return nil
}

// Remove moves the cpuset's processes back to the root cpuset (every CPU)
// and removes it.
func (c *Cpuset) Remove() error {
	procs, err := os.ReadFile(filepath.Join(c.dir, "cgroup.procs"))
	if err != nil {
		return err
	}
	root := &Cpuset{dir: cpusetRoot}
	for _, f := range strings.Fields(string(procs)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			continue
		}
		if err := root.Add(pid); err != nil && !errors.Is(err, os.ErrNotExist) && !strings.Contains(err.Error(), "no such process") {
			return err
		}
	}
	return os.Remove(c.dir)
}

// PIDs are the plane's kube-apiserver and etcd.
func (p *Plane) PIDs() ([]int, error) {
	api, err := p.apiServerPID()
	if err != nil {
		return nil, err
	}
	etcd, err := p.etcdPID()
	if err != nil {
		return nil, err
	}
	return []int{api, etcd}, nil
}
