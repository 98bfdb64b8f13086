package nodes

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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

// Host is what PrepareHost changed on the host, to be undone.
type Host struct {
	addedAddress bool
	// madeNetnsDir: /run/netns, where `ip netns add` keeps namespaces, was
	// not there.
	madeNetnsDir bool
	settings     map[string]string
	iptables     []byte
}

// PrepareHost puts HostAddress on the host's loopback if it is not there,
// and records the kernel settings kubelet changes and the host's iptables
// rules, for Restore and Leftovers.
func PrepareHost() (*Host, error) {
	h := &Host{settings: map[string]string{}}
	if _, err := os.Stat("/run/netns"); os.IsNotExist(err) {
		h.madeNetnsDir = true
	}
	for _, k := range kernelSettings {
		v, err := os.ReadFile(filepath.Join("/proc/sys", k))
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", k, err)
		}
		h.settings[k] = strings.TrimSpace(string(v))
	}
	var err error
	if h.iptables, err = iptablesRules(); err != nil {
		return nil, err
	}
	out, err := exec.Command("ip", "-4", "addr", "show", "dev", "lo").CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("ip addr show dev lo: %v: %s", err, out)
	}
	if !strings.Contains(string(out), " "+HostAddress+"/") {
		if err := run("ip", "addr", "add", HostAddress+"/32", "dev", "lo"); err != nil {
			return nil, err
		}
		h.addedAddress = true
	}
	return h, nil
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

// Restore undoes PrepareHost and what kubelet changed on the host.
func (h *Host) Restore() error {
	var errs []error
	for k, v := range h.settings {
		if err := os.WriteFile(filepath.Join("/proc/sys", k), []byte(v), 0o644); err != nil {
			errs = append(errs, fmt.Errorf("restore %s: %w", k, err))
		}
	}
	if h.addedAddress {
		errs = append(errs, run("ip", "addr", "del", HostAddress+"/32", "dev", "lo"))
	}
	if h.madeNetnsDir {
		// `ip netns add` mounts /run/netns on itself; empty once the nodes
		// are gone.
		_ = syscall.Unmount("/run/netns", syscall.MNT_DETACH)
		if err := os.Remove("/run/netns"); err != nil && !os.IsNotExist(err) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Leftovers says what of the nodes remains on the host once they stopped
// and Restore ran: kernel settings not restored, iptables rules changed,
// the host address, network namespaces of nodes.
func (h *Host) Leftovers() []string {
	var out []string
	for k, v := range h.settings {
		if now, err := os.ReadFile(filepath.Join("/proc/sys", k)); err != nil || strings.TrimSpace(string(now)) != v {
			out = append(out, fmt.Sprintf("kernel setting %s is %q, was %q", k, strings.TrimSpace(string(now)), v))
		}
	}
	if now, err := iptablesRules(); err != nil || !bytes.Equal(now, h.iptables) {
		out = append(out, fmt.Sprintf("the host's iptables rules changed (%v)", err))
	}
	if h.addedAddress {
		if o, _ := exec.Command("ip", "-4", "addr", "show", "dev", "lo").Output(); strings.Contains(string(o), " "+HostAddress+"/") {
			out = append(out, "address "+HostAddress+" on lo")
		}
	}
	if _, err := os.Stat("/run/netns"); h.madeNetnsDir && err == nil {
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
