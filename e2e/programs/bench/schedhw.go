package main

import (
	"context"
	"fmt"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/hub/api/hardware"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// benchKind is one hardware profile of the scheduling benchmark's
// clusters (-hardware) and what a claim that needs it asks: each is met
// by its profile and the larger ones, so that the scheduler must take the
// least that meets it.
type benchKind struct {
	view hostfleetv1alpha1.HardwareView
	expr string
}

func benchKinds() []benchKind {
	view := func(cores, memGiB int64, disk string, nicGbps int64, gpu string) hostfleetv1alpha1.HardwareView {
		v := hostfleetv1alpha1.HardwareView{CPU: hostfleetv1alpha1.HardwareCPU{Count: cores, Arch: "x86_64", Model: "Bench CPU"}, MemoryMiB: memGiB * 1024,
			Disks:  []hostfleetv1alpha1.HardwareDisk{{SizeGiB: 960, Type: disk}},
			NICs:   []hostfleetv1alpha1.HardwareNIC{{SpeedGbps: nicGbps, Model: "Bench NIC"}},
			System: hostfleetv1alpha1.HardwareSystem{Manufacturer: "Bench", Product: fmt.Sprintf("B%d", cores)}}
		if gpu != "" {
			v.GPUs = []hostfleetv1alpha1.HardwareGPU{{Vendor: "NVIDIA", Model: gpu}}
		}
		hardware.Normalize(&v)
		return v
	}
	return []benchKind{
		{view(16, 64, "SSD", 10, ""), `host.cpu.count >= 16 && host.memoryMiB >= 65536`},
		{view(32, 128, "NVME", 10, ""), `host.cpu.count >= 32 && host.disks.exists(d, d.type == "NVME")`},
		{view(64, 256, "NVME", 25, ""), `host.cpu.count >= 64 && host.nics.exists(n, n.speedGbps >= 25)`},
		{view(64, 512, "NVME", 100, "H100 80GB HBM3"), `host.gpus.exists(g, g.model.startsWith("H100"))`},
	}
}

// benchHardware is the -hardware run's fleet: each cluster's kind, each
// claim's. A nil one is the run without.
type benchHardware struct {
	kinds       []benchKind
	clusterKind map[string]int
	claimKind   []int
}

// claim is the benchmark's claim i, with its kind's requirement.
func (bh *benchHardware) claim(i int) *metal3api.HostClaim {
	c := benchClaim(benchNS, i)
	if bh != nil {
		c.Annotations = map[string]string{hostfleetv1alpha1.AnnotationHardware: bh.kinds[bh.claimKind[i]].expr}
	}
	return c
}

// check fails when a claim was placed on a cluster whose hardware does not
// meet it, or on more than it asks (each kind's hosts are exactly its
// claims: the least that meets it is its own kind).
func (bh *benchHardware) check(claims []metal3api.HostClaim) error {
	if bh == nil {
		return nil
	}
	bigger := 0
	for _, c := range claims {
		var i int
		if _, err := fmt.Sscanf(c.Name, "c%04d", &i); err != nil {
			return err
		}
		want, got := bh.claimKind[i], bh.clusterKind[c.Labels[hostfleetv1alpha1.LabelCluster]]
		r, err := hardware.Parse(bh.kinds[want].expr)
		if err != nil {
			return err
		}
		if ok, _ := r.Meets(&bh.kinds[got].view); !ok {
			return fmt.Errorf("claim %s (kind %d) placed on %s (kind %d), whose hardware does not meet it", c.Name, want, c.Labels[hostfleetv1alpha1.LabelCluster], got)
		}
		if got != want {
			bigger++
		}
	}
	if bigger > 0 {
		fmt.Printf("  note:     %d claims placed on more hardware than they ask\n", bigger)
	}
	return nil
}

// claimKinds gives each of n claims a kind, round robin over the kinds
// with hosts left, so that the kinds asked are exactly the kinds free.
func claimKinds(n int, free map[int]int) []int {
	left := make(map[int]int, len(free))
	for k, v := range free {
		left[k] = v
	}
	out := make([]int, 0, n)
	for k := 0; len(out) < n; k = (k + 1) % len(benchKinds()) {
		if left[k] > 0 {
			left[k]--
			out = append(out, k)
		}
	}
	return out
}

// placedTimes watches the tenant's claims and sends, once n are placed,
// when each was first seen placed.
func placedTimes(ctx context.Context, cfg *rest.Config, s *runtime.Scheme, n int) (<-chan []time.Time, error) {
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: s})
	if err != nil {
		return nil, err
	}
	w, err := c.Watch(ctx, &metal3api.HostClaimList{}, client.InNamespace(benchNS))
	if err != nil {
		return nil, err
	}
	out := make(chan []time.Time, 1)
	go func() {
		defer w.Stop()
		seen := map[string]bool{}
		var times []time.Time
		for ev := range w.ResultChan() {
			hc, ok := ev.Object.(*metal3api.HostClaim)
			if !ok || seen[hc.Name] || hc.Labels[hostfleetv1alpha1.LabelCluster] == "" {
				continue
			}
			seen[hc.Name] = true
			if times = append(times, time.Now()); len(times) == n {
				out <- times
				return
			}
		}
		out <- times
	}()
	return out, nil
}

// gaps are the times between successive placements, the first from start:
// with one worker, each is one decision as the API server sees it.
func gaps(start time.Time, times []time.Time) []time.Duration {
	out := make([]time.Duration, 0, len(times))
	prev := start
	for _, t := range times {
		out = append(out, t.Sub(prev))
		prev = t
	}
	return out
}
