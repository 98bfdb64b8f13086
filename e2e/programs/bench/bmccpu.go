package main

import (
	"os"
	"time"

	"github.com/hostfleet/hostfleet/e2e/harness/planes"
)

// cpuSplit is the CPU the processes of a BMC run used besides the agent:
// the infrastructure plane's API server and etcd, and this process (the
// emulated BMCs, the image server and the watch that times the run).
type cpuSplit struct{ apiServer, etcd, bmcs time.Duration }

func readSplit(p *planes.Plane) (cpuSplit, error) {
	a, err := p.APIServerUsage()
	if err != nil {
		return cpuSplit{}, err
	}
	e, err := p.EtcdUsage()
	if err != nil {
		return cpuSplit{}, err
	}
	self, err := planes.ProcessUsage(os.Getpid())
	if err != nil {
		return cpuSplit{}, err
	}
	return cpuSplit{apiServer: a.CPU, etcd: e.CPU, bmcs: self.CPU}, nil
}

func (s cpuSplit) sub(b cpuSplit) cpuSplit {
	return cpuSplit{apiServer: s.apiServer - b.apiServer, etcd: s.etcd - b.etcd, bmcs: s.bmcs - b.bmcs}
}
