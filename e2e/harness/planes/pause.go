package planes

import (
	"fmt"
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
	pid, _, err := findProcess("kube-apiserver", "--secure-port="+p.port())
	if err != nil {
		return 0, fmt.Errorf("%s: %w", p.Name, err)
	}
	return pid, nil
}

// etcdPID finds the plane's etcd by its client URL.
func (p *Plane) etcdPID() (int, error) {
	pid, _, err := findProcess("etcd", "--listen-client-urls="+p.etcdURL())
	if err != nil {
		return 0, fmt.Errorf("%s: %w", p.Name, err)
	}
	return pid, nil
}
