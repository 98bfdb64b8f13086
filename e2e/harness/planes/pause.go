package planes

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// PauseAPIServer stops the plane's kube-apiserver process (SIGSTOP) as a
// hung or partitioned API server: connections are accepted by the kernel
// and never answered, watches go silent, etcd keeps its data. Resume with
// ResumeAPIServer.
func (p *Plane) PauseAPIServer() error { return p.signalAPIServer(syscall.SIGSTOP) }

// ResumeAPIServer lets a paused kube-apiserver run again (SIGCONT).
func (p *Plane) ResumeAPIServer() error { return p.signalAPIServer(syscall.SIGCONT) }

func (p *Plane) signalAPIServer(sig syscall.Signal) error {
	pid, err := p.apiServerPID()
	if err != nil {
		return err
	}
	if err := syscall.Kill(pid, sig); err != nil {
		return fmt.Errorf("%s: signal kube-apiserver %d: %w", p.Name, pid, err)
	}
	return nil
}

// apiServerPID finds the plane's kube-apiserver by its secure port.
func (p *Plane) apiServerPID() (int, error) {
	u, err := url.Parse(p.Config.Host)
	if err != nil {
		return 0, err
	}
	want := "--secure-port=" + u.Port()
	dirs, err := filepath.Glob("/proc/[0-9]*")
	if err != nil {
		return 0, err
	}
	for _, d := range dirs {
		data, err := os.ReadFile(filepath.Join(d, "cmdline"))
		if err != nil {
			continue // gone meanwhile
		}
		args := strings.Split(string(data), "\x00")
		if filepath.Base(args[0]) != "kube-apiserver" {
			continue
		}
		for _, a := range args[1:] {
			if a == want {
				return strconv.Atoi(filepath.Base(d))
			}
		}
	}
	return 0, fmt.Errorf("%s: no kube-apiserver process with %s", p.Name, want)
}
