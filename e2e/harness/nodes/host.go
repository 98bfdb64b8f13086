package nodes

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// HostAddress is the host's address every node reaches (on the host's
// loopback): the planes' API servers, the image registry and the BMC
// emulators listen on it.
const HostAddress = "10.199.0.1"

// kernelSettings are the host-wide settings kubelet sets at start (its
// setupKernelTunables): Host restores them.
var kernelSettings = []string{
	"vm/overcommit_memory", "vm/panic_on_oom", "kernel/panic", "kernel/panic_on_oops",
	"kernel/keys/root_maxkeys", "kernel/keys/root_maxbytes",
}

// hostDir keeps, while processes of this machine run nodes (test packages
// run at once), what the first of them found on the host and which of them
// still run: the last one out restores the host.
const hostDir = "/run/hostfleet-nodes"

// hostState is what the first process that prepared the host found there.
type hostState struct {
	AddedAddress bool
	// MadeNetnsDir: /run/netns, where `ip netns add` keeps namespaces, was
	// not there.
	MadeNetnsDir bool
	Settings     map[string]string
	IPTables     []byte
}

// Host is this process's use of the host, to be given back (Restore).
type Host struct {
	state hostState
	// shared: when this process gave the host back, others still used it.
	shared bool
}

// PrepareHost readies the host for nodes, or joins the processes of this
// machine that did: the first puts HostAddress on the loopback and records
// the kernel settings kubelet changes and the host's iptables rules.
func PrepareHost() (*Host, error) {
	unlock, err := lockHost()
	if err != nil {
		return nil, err
	}
	defer unlock()
	h := &Host{}
	if len(users()) > 0 {
		b, err := os.ReadFile(filepath.Join(hostDir, "state.json"))
		if err == nil && json.Unmarshal(b, &h.state) == nil {
			return h, os.WriteFile(filepath.Join(hostDir, "users", strconv.Itoa(os.Getpid())), nil, 0o644)
		}
	}
	if h.state, err = prepare(); err != nil {
		return nil, err
	}
	b, err := json.Marshal(h.state)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(hostDir, "state.json"), b, 0o644); err != nil {
		return nil, err
	}
	return h, os.WriteFile(filepath.Join(hostDir, "users", strconv.Itoa(os.Getpid())), nil, 0o644)
}

// prepare records the host as it is and puts HostAddress on the loopback.
func prepare() (hostState, error) {
	st := hostState{Settings: map[string]string{}}
	if _, err := os.Stat("/run/netns"); os.IsNotExist(err) {
		st.MadeNetnsDir = true
	}
	for _, k := range kernelSettings {
		v, err := os.ReadFile(filepath.Join("/proc/sys", k))
		if err != nil {
			return st, fmt.Errorf("read %s: %w", k, err)
		}
		st.Settings[k] = strings.TrimSpace(string(v))
	}
	var err error
	if st.IPTables, err = iptablesRules(); err != nil {
		return st, err
	}
	if !hasHostAddress() {
		if err := run("ip", "addr", "add", HostAddress+"/32", "dev", "lo"); err != nil {
			return st, err
		}
		st.AddedAddress = true
	}
	return st, nil
}

// lockHost takes the machine-wide lock of hostDir.
func lockHost() (func(), error) {
	if err := os.MkdirAll(filepath.Join(hostDir, "users"), 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(hostDir, "lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("lock %s: %w", hostDir, err)
	}
	return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); _ = f.Close() }, nil
}

// users are the live processes that use the host (their pids), the dead
// ones' entries removed.
func users() []int {
	entries, _ := os.ReadDir(filepath.Join(hostDir, "users"))
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err == nil && syscall.Kill(pid, 0) == nil {
			out = append(out, pid)
		} else {
			_ = os.Remove(filepath.Join(hostDir, "users", e.Name()))
		}
	}
	return out
}

func hasHostAddress() bool {
	out, err := exec.Command("ip", "-4", "addr", "show", "dev", "lo").CombinedOutput()
	return err == nil && strings.Contains(string(out), " "+HostAddress+"/")
}

// iptablesRules are the host's rules, without counters or comments.
func iptablesRules() ([]byte, error) {
	out, err := exec.Command("iptables-save").Output()
	if err != nil {
		return nil, fmt.Errorf("iptables-save: %w", err)
	}
	var kept [][]byte
	for _, l := range bytes.Split(out, []byte("\n")) {
		if len(l) > 0 && l[0] != '#' {
			kept = append(kept, bytes.TrimRight(l, " "))
		}
	}
	for i, l := range kept {
		if l[0] == ':' { // a chain's counters
			if j := bytes.LastIndexByte(l, ' '); j > 0 {
				kept[i] = l[:j]
			}
		}
	}
	return bytes.Join(kept, []byte("\n")), nil
}

// Restore gives the host back; the last process out undoes what the first
// did and what kubelet changed on the host.
func (h *Host) Restore() error {
	unlock, err := lockHost()
	if err != nil {
		return err
	}
	defer unlock()
	_ = os.Remove(filepath.Join(hostDir, "users", strconv.Itoa(os.Getpid())))
	if len(users()) > 0 {
		h.shared = true
		return nil
	}
	var errs []error
	for k, v := range h.state.Settings {
		if err := os.WriteFile(filepath.Join("/proc/sys", k), []byte(v), 0o644); err != nil {
			errs = append(errs, fmt.Errorf("restore %s: %w", k, err))
		}
	}
	if h.state.AddedAddress {
		errs = append(errs, run("ip", "addr", "del", HostAddress+"/32", "dev", "lo"))
	}
	if h.state.MadeNetnsDir {
		// `ip netns add` mounts /run/netns on itself; empty once the nodes
		// are gone.
		_ = syscall.Unmount("/run/netns", syscall.MNT_DETACH)
		if err := os.Remove("/run/netns"); err != nil && !os.IsNotExist(err) {
			errs = append(errs, err)
		}
	}
	errs = append(errs, os.RemoveAll(hostDir))
	return errors.Join(errs...)
}

// Shared reports whether, when this process gave the host back, other
// processes still ran nodes (the last of them restores the host).
func (h *Host) Shared() bool { return h.shared }

// Leftovers says what of the nodes remains on the host once this process
// gave it back, if it was the last to: kernel settings not restored,
// iptables rules changed, the host address, network namespaces of nodes.
// Nothing while other processes still run nodes.
func (h *Host) Leftovers() []string {
	if h.shared {
		return nil
	}
	var out []string
	for k, v := range h.state.Settings {
		if now, err := os.ReadFile(filepath.Join("/proc/sys", k)); err != nil || strings.TrimSpace(string(now)) != v {
			out = append(out, fmt.Sprintf("kernel setting %s is %q, was %q", k, strings.TrimSpace(string(now)), v))
		}
	}
	if now, err := iptablesRules(); err != nil || !bytes.Equal(now, h.state.IPTables) {
		out = append(out, fmt.Sprintf("the host's iptables rules changed (%v)", err))
	}
	if h.state.AddedAddress && hasHostAddress() {
		out = append(out, "address "+HostAddress+" on lo")
	}
	if _, err := os.Stat(hostDir); err == nil {
		out = append(out, "directory "+hostDir)
	}
	if _, err := os.Stat("/run/netns"); h.state.MadeNetnsDir && err == nil {
		out = append(out, "directory /run/netns")
	}
	entries, _ := os.ReadDir("/run/netns")
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), netnsPrefix) || strings.HasPrefix(e.Name(), "cni-") {
			out = append(out, "network namespace "+e.Name())
		}
	}
	return out
}

// run runs a command, its output in the error.
func run(name string, args ...string) error {
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		return fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}
