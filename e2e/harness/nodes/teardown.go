package nodes

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Stop stops the node and removes what it made on the host: kubelet and
// kube-proxy, then every process in its cgroups (its pods' containers),
// containerd and its shims (every process left in the node's namespaces),
// the holder; then its cgroups and its network namespace (with the veth
// pair and the host's route).
func (n *Node) Stop() error {
	var errs []error
	for i := len(n.procs) - 1; i >= 0; i-- {
		if i == 0 {
			n.killCgroups() // the pods, before containerd goes
		}
		errs = append(errs, stop(n.procs[i], 10*time.Second))
	}
	n.procs = nil
	n.killCgroups()
	n.killNamespaces()
	if n.holder != nil {
		errs = append(errs, stop(n.holder, 5*time.Second))
		n.holder = nil
	}
	errs = append(errs, n.removeCgroups())
	if _, err := os.Stat("/run/netns/" + n.netns()); err == nil {
		errs = append(errs, run("ip", "netns", "del", n.netns()))
	}
	return errors.Join(errs...)
}

// stop sends SIGTERM, then SIGKILL after grace, and reaps the process.
func stop(cmd *exec.Cmd, grace time.Duration) error {
	if cmd.Process == nil {
		return nil
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(grace):
		_ = cmd.Process.Kill()
		<-done
	}
	return nil
}

// cgroupHierarchies are the cgroup v1 hierarchies mounted on the host.
func cgroupHierarchies() []string {
	entries, _ := os.ReadDir("/sys/fs/cgroup")
	var out []string
	for _, e := range entries {
		if e.IsDir() && e.Name() != "unified" {
			out = append(out, filepath.Join("/sys/fs/cgroup", e.Name()))
		}
	}
	return out
}

// cgroupDirs are the node's cgroups, deepest first.
func (n *Node) cgroupDirs() []string {
	var dirs []string
	for _, h := range cgroupHierarchies() {
		_ = filepath.WalkDir(filepath.Join(h, n.cgroupRoot()), func(path string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, path)
			}
			return nil
		})
	}
	slices.SortFunc(dirs, func(a, b string) int { return strings.Count(b, "/") - strings.Count(a, "/") })
	return dirs
}

// killCgroups kills every process in the node's cgroups, until none is left
// (or 10 s pass).
func (n *Node) killCgroups() {
	n.killUntilNone(func() []int {
		var pids []int
		for _, d := range n.cgroupDirs() {
			pids = append(pids, readPids(filepath.Join(d, "cgroup.procs"))...)
		}
		return pids
	})
}

// killNamespaces kills every process in the node's network or mount
// namespace but the holder.
func (n *Node) killNamespaces() {
	n.killUntilNone(func() []int {
		holder := n.sleeper()
		var out []int
		for _, pid := range n.pidsInNamespaces() {
			if pid != holder {
				out = append(out, pid)
			}
		}
		return out
	})
}

func (n *Node) killUntilNone(pids func() []int) {
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		left := pids()
		if len(left) == 0 {
			return
		}
		for _, pid := range left {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(50 * time.Millisecond) // the kernel reaps them
	}
}

// pidsInNamespaces are the processes in the node's network or mount
// namespace.
func (n *Node) pidsInNamespaces() []int {
	if len(n.nsInodes) == 0 {
		return nil
	}
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		for ns, ino := range n.nsInodes {
			if got, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/%s", pid, ns)); err == nil && got == ino {
				out = append(out, pid)
				break
			}
		}
	}
	return out
}

func readPids(file string) []int {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil {
			out = append(out, pid)
		}
	}
	return out
}

// removeCgroups removes the node's cgroups, deepest first.
func (n *Node) removeCgroups() error {
	var errs []error
	for _, d := range n.cgroupDirs() {
		if err := syscall.Rmdir(d); err != nil && !os.IsNotExist(err) {
			errs = append(errs, fmt.Errorf("remove cgroup %s: %w", d, err))
		}
	}
	return errors.Join(errs...)
}

// Leftovers says what of a stopped node remains: processes in its
// namespaces or cgroups, its cgroups, its network namespace and host link,
// mounts of its directory.
func (n *Node) Leftovers() []string {
	var out []string
	for _, pid := range n.pidsInNamespaces() {
		out = append(out, fmt.Sprintf("process %d (%s) in the node's namespaces", pid, comm(pid)))
	}
	for _, d := range n.cgroupDirs() {
		for _, pid := range readPids(filepath.Join(d, "cgroup.procs")) {
			out = append(out, fmt.Sprintf("process %d (%s) in cgroup %s", pid, comm(pid), d))
		}
		out = append(out, "cgroup "+d)
	}
	if _, err := os.Stat("/run/netns/" + n.netns()); err == nil {
		out = append(out, "network namespace "+n.netns())
	}
	if _, err := os.Stat("/sys/class/net/" + n.hostLink()); err == nil {
		out = append(out, "host link "+n.hostLink())
	}
	if b, err := os.ReadFile("/proc/self/mountinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.Contains(l, n.Dir) || strings.Contains(l, "/run/netns/"+n.netns()+" ") {
				out = append(out, "mount "+l)
			}
		}
	}
	return out
}

func comm(pid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	return strings.TrimSpace(string(b))
}
