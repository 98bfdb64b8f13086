package scheduler

import (
	"testing"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"

	"github.com/hostfleet/hostfleet/hub/api/hardware"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// machine is a view of so many cores, GiB of memory and GPUs, with one
// NVMe disk and one 25 Gb/s NIC.
func machine(cores, gib int64, gpus int) hostfleetv1alpha1.HardwareView {
	v := hostfleetv1alpha1.HardwareView{CPU: hostfleetv1alpha1.HardwareCPU{Count: cores, Arch: "x86_64"}, MemoryMiB: gib * 1024,
		Disks: []hostfleetv1alpha1.HardwareDisk{{SizeGiB: 960, Type: "NVME"}}, NICs: []hostfleetv1alpha1.HardwareNIC{{SpeedGbps: 25}}}
	for range gpus {
		v.GPUs = append(v.GPUs, hostfleetv1alpha1.HardwareGPU{Vendor: "NVIDIA", Model: "A100"})
	}
	hardware.Normalize(&v)
	return v
}

// hwInv is an inventory of one pool per view, with free hosts each.
func hwInv(free int32, views ...hostfleetv1alpha1.HardwareView) *hostfleetv1alpha1.HostInventory {
	i := inv()
	for _, v := range views {
		name := hardware.Profile(&v)
		p := pool(free, "", nil)
		p.Profile = name
		i.Status.Pools = append(i.Status.Pools, p)
		i.Status.Profiles = append(i.Status.Profiles, hostfleetv1alpha1.HardwareProfile{Name: name, Hardware: v})
	}
	return i
}

func asking(expr string) func(*metal3api.HostClaim) {
	return func(c *metal3api.HostClaim) {
		c.Annotations = map[string]string{hostfleetv1alpha1.AnnotationHardware: expr}
	}
}

func TestPlaceByHardware(t *testing.T) {
	small, big, huge, gpu := machine(16, 64, 0), machine(64, 256, 0), machine(256, 1024, 0), machine(64, 512, 1)
	unInspected := pool(9, "", nil)
	for _, tc := range []struct {
		name        string
		expr        string
		inventories map[string]*hostfleetv1alpha1.HostInventory
		pending     map[string][]*metal3api.HostClaim
		want        string
		says        []string
	}{
		{name: "only a cluster that has the cores", expr: `host.cpu.count >= 64`,
			inventories: map[string]*hostfleetv1alpha1.HostInventory{"a": hwInv(5, small), "b": hwInv(1, big)}, want: "b"},
		{name: "the least hardware that meets it, not the most free hosts", expr: `host.cpu.count >= 64`,
			inventories: map[string]*hostfleetv1alpha1.HostInventory{"a": hwInv(9, huge), "b": hwInv(1, big)}, want: "b"},
		{name: "a GPU only where there is one", expr: `host.gpus.exists(g, g.model == "A100")`,
			inventories: map[string]*hostfleetv1alpha1.HostInventory{"a": hwInv(9, huge, big), "b": hwInv(1, gpu)}, want: "b"},
		{name: "no GPU asked: a host without one first", expr: `host.memoryMiB >= 256 * 1024`,
			inventories: map[string]*hostfleetv1alpha1.HostInventory{"a": hwInv(1, gpu), "b": hwInv(1, huge)}, want: "b"},
		{name: "without a requirement, most free hosts as before", expr: "",
			inventories: map[string]*hostfleetv1alpha1.HostInventory{"a": hwInv(9, huge), "b": hwInv(1, big)}, want: "a"},
		{name: "hosts not inspected meet no requirement", expr: `true`,
			inventories: map[string]*hostfleetv1alpha1.HostInventory{"a": inv(unInspected)},
			says:        []string{"a (9 free matching hosts, none with the hardware asked: their hosts are not inspected yet)"}},
		{name: "nothing meets it: the closest is named with what it lacks", expr: `host.cpu.count >= 128 && host.gpus.size() >= 1`,
			inventories: map[string]*hostfleetv1alpha1.HostInventory{"a": hwInv(2, small, gpu), "b": hwInv(1, huge)},
			says: []string{"a (4 free matching hosts, none with the hardware asked: the closest has 64 cores x86_64, 512 GiB, 1 disks (1 NVME), 25 Gb/s, 1 GPU (A100), lacks host.cpu.count >= 128 (has 64))",
				"b (1 free matching hosts, none with the hardware asked: the closest has 256 cores x86_64, 1024 GiB, 1 disks (1 NVME), 25 Gb/s, no GPU, lacks host.gpus.size() >= 1 (has 0))"}},
		{name: "pending claims compete only for hosts they meet", expr: `host.cpu.count >= 64`,
			inventories: map[string]*hostfleetv1alpha1.HostInventory{"a": hwInv(1, small, big)},
			pending:     map[string][]*metal3api.HostClaim{"a": claims(3, asking(`host.cpu.count < 32`))}, want: "a"},
		{name: "pending claims that meet the same hosts take them first", expr: `host.cpu.count >= 64`,
			inventories: map[string]*hostfleetv1alpha1.HostInventory{"a": hwInv(1, small, big)},
			pending:     map[string][]*metal3api.HostClaim{"a": claims(1, asking(`host.cpu.count >= 48`))},
			says:        []string{"a (1 free matching hosts after 1 pending claims)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			in := Input{Claim: claim(), Clusters: []string{"a", "b"}, Inventories: tc.inventories, Pending: tc.pending}
			if tc.expr != "" {
				r, err := hardware.Parse(tc.expr)
				g.Expect(err).NotTo(HaveOccurred())
				in.Hardware = r
				asking(tc.expr)(in.Claim)
			}
			res := Place(in)
			g.Expect(res.Cluster).To(Equal(tc.want), res.Message)
			for _, s := range tc.says {
				g.Expect(res.Message).To(ContainSubstring(s))
			}
		})
	}
}
