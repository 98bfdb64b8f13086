package nodes

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Options describe one node.
type Options struct {
	// Name is the Node's name.
	Name string
	// Index (1 to 250, unique on the host) picks the node's addresses: its
	// link 10.198.<Index>.0/30 and its pods' 10.200.<Index>.0/24.
	Index int
	// Dir is the node's directory (configurations, containerd's content,
	// pod logs, the processes' logs); it must exist.
	Dir string
	// Kubeconfig is the kubelet's (user system:node:<Name>, group
	// system:nodes); ProxyKubeconfig kube-proxy's.
	Kubeconfig, ProxyKubeconfig string
	// ClientCAFile is the CA whose client certificates the kubelet accepts
	// (the API server's, for logs and exec).
	ClientCAFile string
	// Registry is the image registry's host:port (on HostAddress); Mirrors
	// the upstream registries it serves (quay.io, ghcr.io, ...), whose
	// pulls go to it.
	Registry string
	Mirrors  []string
	// PauseImage is the pod sandbox image's reference.
	PauseImage string
	// Bin is the directory of kubelet and kube-proxy.
	Bin string
	// Labels are the Node's labels at registration.
	Labels map[string]string
	// ProviderID is the Node's spec.providerID (none when empty).
	ProviderID string
}

// Node is a running node.
type Node struct {
	Options
	paths  paths
	holder *exec.Cmd
	procs  []*exec.Cmd
	// nsInodes are the node's namespaces (net, mnt) as /proc shows them.
	nsInodes map[string]string
}

// IP is the node's address (its eth0), the one the API server reaches its
// kubelet at.
func (n *Node) IP() string { return nodeIP(n.Index) }

// PodCIDR is the range of the node's pods.
func (n *Node) PodCIDR() string { return podCIDR(n.Index) }

// Start starts a node: its network and mount namespaces, containerd,
// kubelet and kube-proxy. It does not wait for the Node to be Ready. On
// error, what was started is stopped.
func Start(ctx context.Context, o Options) (*Node, error) {
	if o.Index < 1 || o.Index > 250 {
		return nil, fmt.Errorf("node %s: index %d out of 1..250", o.Name, o.Index)
	}
	n := &Node{Options: o, paths: paths(o.Dir), nsInodes: map[string]string{}}
	if err := n.start(ctx); err != nil {
		return nil, errors.Join(fmt.Errorf("node %s: %w", o.Name, err), n.Stop())
	}
	return n, nil
}

func (n *Node) start(ctx context.Context) error {
	if err := n.writeConfigs(); err != nil {
		return err
	}
	if err := n.makeCgroupRoot(); err != nil {
		return err
	}
	if err := n.network(); err != nil {
		return err
	}
	if err := n.startHolder(); err != nil {
		return err
	}
	if err := n.startInside("containerd", "containerd", "--config", n.paths.containerdConfig()); err != nil {
		return err
	}
	if err := n.waitSocket(ctx); err != nil {
		return err
	}
	args := []string{"--config=" + n.paths.kubeletConfig(), "--kubeconfig=" + n.Kubeconfig, "--hostname-override=" + n.Name,
		"--node-ip=" + n.IP(), "--v=1"}
	if len(n.Labels) > 0 {
		args = append(args, "--node-labels="+labels(n.Labels))
	}
	if err := n.startInside("kubelet", filepath.Join(n.Bin, "kubelet"), args...); err != nil {
		return err
	}
	return n.startInside("kube-proxy", filepath.Join(n.Bin, "kube-proxy"), "--config="+n.paths.proxyConfig(), "--v=1")
}

// makeCgroupRoot makes the node's cgroup root in every hierarchy (kubelet
// wants it there); a cpuset one gets its parent's CPUs and memory nodes, a
// cpu one the weight of this process (cpuShares).
func (n *Node) makeCgroupRoot() error {
	for _, h := range cgroupHierarchies() {
		dir := filepath.Join(h, n.cgroupRoot())
		if err := os.Mkdir(dir, 0o755); err != nil && !os.IsExist(err) {
			return fmt.Errorf("cgroup %s: %w", dir, err)
		}
		for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
			if v, err := os.ReadFile(filepath.Join(h, f)); err == nil {
				if err := os.WriteFile(filepath.Join(dir, f), v, 0o644); err != nil {
					return fmt.Errorf("cgroup %s: %s: %w", dir, f, err)
				}
			}
		}
		if _, err := os.Stat(filepath.Join(dir, "cpu.shares")); err == nil {
			if err := os.WriteFile(filepath.Join(dir, "cpu.shares"), []byte(strconv.Itoa(cpuShares())), 0o644); err != nil {
				return fmt.Errorf("cgroup %s: cpu.shares: %w", dir, err)
			}
		}
	}
	return nil
}

// network makes the node's network namespace, its veth pair to the host,
// the routes both ways and, in the namespace, forwarding and bridge
// netfilter (Services between pods of one node).
func (n *Node) network() error {
	ns, i := n.netns(), n.Index
	steps := [][]string{
		{"ip", "netns", "add", ns},
		{"ip", "link", "add", n.hostLink(), "type", "veth", "peer", "name", "eth0", "netns", ns},
		{"ip", "addr", "add", hostLinkIP(i) + "/30", "dev", n.hostLink()},
		{"ip", "link", "set", n.hostLink(), "up"},
		{"ip", "-n", ns, "addr", "add", nodeIP(i) + "/30", "dev", "eth0"},
		{"ip", "-n", ns, "link", "set", "eth0", "up"},
		{"ip", "-n", ns, "link", "set", "lo", "up"},
		{"ip", "-n", ns, "route", "add", "default", "via", hostLinkIP(i)},
		{"ip", "route", "add", podCIDR(i), "via", nodeIP(i)},
		{"nsenter", "--net=/run/netns/" + ns, "sysctl", "-qw", "net.ipv4.ip_forward=1"},
	}
	for _, s := range steps {
		if err := run(s[0], s[1:]...); err != nil {
			return err
		}
	}
	// Per namespace where the kernel has br_netfilter: kube-proxy's rules
	// then see the traffic between two pods of the node.
	_ = run("nsenter", "--net=/run/netns/"+ns, "sysctl", "-qw", "net.bridge.bridge-nf-call-iptables=1")
	return nil
}

// startHolder starts the process that keeps the node's mount namespace: a
// private copy of the host's mounts joined to the node's network
// namespace, with tmpfs over /run, /var/lib and /var/log.
func (n *Node) startHolder() error {
	script := "mount -t tmpfs -o mode=0755 tmpfs /run && mount -t tmpfs -o mode=0755 tmpfs /var/lib && " +
		"mount -t tmpfs -o mode=0755 tmpfs /var/log && exec sleep infinity"
	cmd := exec.Command("unshare", "--mount", "--propagation", "private", "--",
		"nsenter", "--net=/run/netns/"+n.netns(), "--", "sh", "-c", script)
	logFile, err := os.Create(n.paths.log("holder"))
	if err != nil {
		return err
	}
	defer logFile.Close()
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start the namespace holder: %w", err)
	}
	n.holder = cmd
	// The holder is ready once it sleeps, its mounts made.
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if pid := n.sleeper(); pid > 0 {
			for _, ns := range []string{"net", "mnt"} {
				ino, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/%s", pid, ns))
				if err != nil {
					return err
				}
				n.nsInodes[ns] = ino
			}
			return nil
		}
		time.Sleep(20 * time.Millisecond) // polling a process's start
	}
	b, _ := os.ReadFile(n.paths.log("holder"))
	return fmt.Errorf("the namespace holder did not start: %s", b)
}

// sleeper is the holder's pid once it sleeps (unshare execs nsenter, which
// execs sh, which mounts and execs sleep), or 0.
func (n *Node) sleeper() int {
	if n.holder == nil || n.holder.Process == nil {
		return 0
	}
	pid := n.holder.Process.Pid
	if comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); err != nil || strings.TrimSpace(string(comm)) != "sleep" {
		return 0
	}
	return pid
}

// startInside starts a program in the node's namespaces, its output to
// <name>.log in the node's directory.
func (n *Node) startInside(name, bin string, args ...string) error {
	pid := n.sleeper()
	if pid == 0 {
		return fmt.Errorf("start %s: the namespace holder is gone", name)
	}
	logFile, err := os.Create(n.paths.log(name))
	if err != nil {
		return err
	}
	defer logFile.Close()
	cmd := exec.Command("nsenter", append([]string{"--target", strconv.Itoa(pid), "--mount", "--net", "--", bin}, args...)...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", name, err)
	}
	n.procs = append(n.procs, cmd)
	return nil
}

// waitSocket waits until containerd answers on its socket.
func (n *Node) waitSocket(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		c, err := net.Dial("unix", n.paths.containerdSocket())
		if err == nil {
			return c.Close()
		}
		select {
		case <-ctx.Done():
			b, _ := os.ReadFile(n.paths.log("containerd"))
			return fmt.Errorf("containerd did not open %s: %w; its log: %s", n.paths.containerdSocket(), err, tail(b, 20))
		case <-time.After(50 * time.Millisecond): // polling a socket
		}
	}
}

// tail is the last n lines of b.
func tail(b []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Versions are the kubelet's and containerd's.
func (n *Node) Versions() (kubelet, containerd string) {
	k, _ := exec.Command(filepath.Join(n.Bin, "kubelet"), "--version").Output()
	c, _ := exec.Command("containerd", "--version").Output()
	return strings.TrimSpace(string(k)), strings.TrimSpace(string(c))
}

// Logs are the node's logs: its processes' and every container's.
func (n *Node) Logs() []string {
	out, _ := filepath.Glob(filepath.Join(n.Dir, "*.log"))
	_ = filepath.Walk(n.paths.podLogs(), func(path string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() && strings.HasSuffix(path, ".log") {
			out = append(out, path)
		}
		return nil
	})
	return out
}
