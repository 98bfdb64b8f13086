package kubectl_test

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hostfleet/hostfleet/hub/api/hardware"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	hfkubectl "github.com/hostfleet/hostfleet/hub/kubectl"
)

func inventory(cluster string, pools []hostfleetv1alpha1.HostPool, views ...hostfleetv1alpha1.HardwareView) hostfleetv1alpha1.HostInventory {
	inv := hostfleetv1alpha1.HostInventory{ObjectMeta: metav1.ObjectMeta{Name: cluster}, Spec: hostfleetv1alpha1.HostInventorySpec{ClusterName: cluster}}
	inv.Status.Pools = pools
	for i := range views {
		inv.Status.Profiles = append(inv.Status.Profiles, hostfleetv1alpha1.HardwareProfile{Name: hardware.Profile(&views[i]), Hardware: views[i]})
	}
	return inv
}

func TestFits(t *testing.T) {
	cores := func(n int64, gpus ...string) hostfleetv1alpha1.HardwareView {
		v := hostfleetv1alpha1.HardwareView{CPU: hostfleetv1alpha1.HardwareCPU{Count: n, Arch: "x86_64"}, MemoryMiB: n * 2048}
		for _, m := range gpus {
			v.GPUs = append(v.GPUs, hostfleetv1alpha1.HardwareGPU{Vendor: "NVIDIA", Model: m})
		}
		return v
	}
	c32, c48, c64, h100 := cores(32), cores(48), cores(64), cores(64, "H100")
	pool := func(v *hostfleetv1alpha1.HardwareView, avail, total int32, labels map[string]string) hostfleetv1alpha1.HostPool {
		p := hostfleetv1alpha1.HostPool{Labels: labels, Available: avail, Total: total}
		if v != nil {
			p.Profile = hardware.Profile(v)
		}
		return p
	}
	rack := map[string]string{"example.com/rack": "b"}
	invs := []hostfleetv1alpha1.HostInventory{
		inventory("infra-2", []hostfleetv1alpha1.HostPool{pool(&h100, 0, 2, nil), pool(&c48, 1, 3, nil), pool(nil, 0, 1, nil)}, h100, c48),
		inventory("infra-1", []hostfleetv1alpha1.HostPool{pool(&c64, 1, 2, nil), pool(&c32, 4, 4, nil), pool(&c64, 2, 2, rack)}, c64, c32),
	}
	lines := hfkubectl.Profiles(invs)
	type row struct {
		cluster          string
		cores            int64
		available, total int32
	}
	var got []row
	for _, l := range lines {
		r := row{cluster: l.Cluster, available: l.Available, total: l.Total}
		if l.View != nil {
			r.cores = l.View.CPU.Count
		}
		got = append(got, r)
	}
	g := NewWithT(t)
	// Per cluster, the least hardware first; a profile's pools summed; the
	// hosts not inspected last.
	g.Expect(got).To(Equal([]row{{"infra-1", 32, 4, 4}, {"infra-1", 64, 3, 4}, {"infra-2", 48, 1, 3}, {"infra-2", 64, 0, 2}, {"infra-2", 0, 0, 1}}))

	for _, tc := range []struct {
		name, expr string
		want       []hfkubectl.Fit
		lacks      [][]string
	}{
		{name: "met on both", expr: "host.cpu.count >= 48",
			want: []hfkubectl.Fit{{Cluster: "infra-1", Available: 3, Total: 4}, {Cluster: "infra-2", Available: 1, Total: 5}}, lacks: [][]string{nil, nil}},
		{name: "met on one: the other names its closest, the most hardware first", expr: "host.cpu.count >= 64 && host.gpus.size() == 0",
			want:  []hfkubectl.Fit{{Cluster: "infra-1", Available: 3, Total: 4}, {Cluster: "infra-2"}},
			lacks: [][]string{nil, {"host.gpus.size() == 0 (has 1)", "host.cpu.count >= 64 (has 48)"}}},
		{name: "met nowhere", expr: `host.gpus.exists(g, g.model == "B200")`,
			want:  []hfkubectl.Fit{{Cluster: "infra-1"}, {Cluster: "infra-2"}},
			lacks: [][]string{{`host.gpus.exists(g, g.model == "B200")`, `host.gpus.exists(g, g.model == "B200")`}, {`host.gpus.exists(g, g.model == "B200")`, `host.gpus.exists(g, g.model == "B200")`}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			r, err := hardware.Parse(tc.expr)
			g.Expect(err).NotTo(HaveOccurred())
			fits := hfkubectl.Fits(r, lines)
			g.Expect(fits).To(HaveLen(len(tc.want)))
			for i, f := range fits {
				g.Expect(f.Cluster).To(Equal(tc.want[i].Cluster))
				g.Expect([]int32{f.Available, f.Total}).To(Equal([]int32{tc.want[i].Available, tc.want[i].Total}), f.Cluster)
				var lacks []string
				for _, n := range f.Closest {
					lacks = append(lacks, n.Lacks...)
				}
				g.Expect(lacks).To(Equal(tc.lacks[i]), f.Cluster)
			}
		})
	}
}
