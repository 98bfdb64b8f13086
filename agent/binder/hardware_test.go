package binder

import (
	"testing"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"

	"github.com/hostfleet/hostfleet/hub/api/hardware"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

func TestDecideByHardware(t *testing.T) {
	cores := func(n int) *hostfleetv1alpha1.HardwareView {
		return hardware.Of(&metal3api.HardwareDetails{CPU: metal3api.CPU{Count: n, Arch: "x86_64"}, RAMMebibytes: 1024 * n})
	}
	views := map[string]*hostfleetv1alpha1.HardwareView{"c16": cores(16), "c64": cores(64), "c64b": cores(64), "c256": cores(256)}
	for _, tc := range []struct {
		name   string
		expr   string
		hosts  []string
		action Action
		picks  []string
		reason string
		says   string
	}{
		{name: "the least host that meets it", expr: `host.cpu.count >= 64`, hosts: []string{"c256", "c16", "c64"},
			action: Reserve, picks: []string{"c64"}},
		{name: "among hosts of the least hardware, any", expr: `host.cpu.count >= 64`, hosts: []string{"c256", "c64", "c64b"},
			action: Reserve, picks: []string{"c64", "c64b"}},
		{name: "without a requirement, any free host", hosts: []string{"c256", "c16"}, action: Reserve, picks: []string{"c256", "c16"}},
		{name: "a host not inspected meets no requirement", expr: `true`, hosts: []string{"new"},
			action: Wait, reason: hostfleetv1alpha1.ReasonNoHostAvailable, says: "1 free matching hosts lack the hardware the claim's hostfleet.io/hardware asks: their hosts are not inspected yet"},
		{name: "none meets it: the closest and what it lacks", expr: `host.cpu.count >= 128 && host.memoryMiB >= 1024`, hosts: []string{"c16", "c64"},
			action: Wait, reason: hostfleetv1alpha1.ReasonNoHostAvailable, says: "2 free matching hosts lack the hardware the claim's hostfleet.io/hardware asks: the closest has 64 cores x86_64, 64 GiB, 0 disks (0 NVME), 0 Gb/s, no GPU, lacks host.cpu.count >= 128 (has 64)"},
		{name: "a requirement that does not parse", expr: `host.cpu.cores > 1`, hosts: []string{"c64"},
			action: Wait, reason: hostfleetv1alpha1.ReasonInvalidHardware, says: "does not compile"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			c := claim()
			var hosts []*metal3api.BareMetalHost
			for _, name := range tc.hosts {
				h := host("hosts", name)
				hosts = append(hosts, &h)
			}
			in := Input{Consumer: consumer, Claim: c, Hosts: hosts,
				Policies: []metal3api.HostDeployPolicy{policy("hosts", &metal3api.HostClaimNamespaces{NameMatches: ".*"})},
				View:     func(h *metal3api.BareMetalHost) *hostfleetv1alpha1.HardwareView { return views[h.Name] }}
			if tc.expr != "" {
				in.Hardware, in.HardwareInvalid = hardware.Parse(tc.expr)
			}
			d := Decide(in)
			g.Expect(d.Action).To(Equal(tc.action), d.Message)
			g.Expect(d.Reason).To(Equal(tc.reason))
			g.Expect(d.Message).To(ContainSubstring(tc.says))
			if tc.picks != nil {
				g.Expect(tc.picks).To(ContainElement(d.Host.Name))
				for _, h := range hosts {
					g.Expect(Eligible(in, h)).To(Equal(tc.expr == "" || h.Name != "c16"), h.Name)
				}
			}
		})
	}
}

// TestKeptOffByHardware: a full host class by hardware the hub keeps the
// claim off (excluded-hosts) excludes the hosts whose HardwareData meets
// it, whatever the claim asks; hosts not inspected are not excluded.
func TestKeptOffByHardware(t *testing.T) {
	g := NewWithT(t)
	views := map[string]*hostfleetv1alpha1.HardwareView{
		"c16":  hardware.Of(&metal3api.HardwareDetails{CPU: metal3api.CPU{Count: 16, Arch: "x86_64"}}),
		"c256": hardware.Of(&metal3api.HardwareDetails{CPU: metal3api.CPU{Count: 256, Arch: "x86_64"}}),
	}
	in := func(hostNames ...string) (Input, []*metal3api.BareMetalHost) {
		c := claim()
		c.Annotations = map[string]string{hostfleetv1alpha1.AnnotationExcludedHosts: `[{"hardware":"host.cpu.count >= 128"}]`}
		var hosts []*metal3api.BareMetalHost
		for _, name := range hostNames {
			h := host("hosts", name)
			hosts = append(hosts, &h)
		}
		return Input{Consumer: consumer, Claim: c, Hosts: hosts,
			Policies: []metal3api.HostDeployPolicy{policy("hosts", &metal3api.HostClaimNamespaces{NameMatches: ".*"})},
			View:     func(h *metal3api.BareMetalHost) *hostfleetv1alpha1.HardwareView { return views[h.Name] }}, hosts
	}
	i, hosts := in("c256", "c16", "new")
	d := Decide(i)
	g.Expect(d.Action).To(Equal(Reserve))
	g.Expect(d.Host.Name).To(BeElementOf("c16", "new"))
	g.Expect(Eligible(i, hosts[0])).To(BeFalse(), "c256 is of the full class")
	g.Expect(Eligible(i, hosts[1])).To(BeTrue())
	g.Expect(Eligible(i, hosts[2])).To(BeTrue(), "not inspected: of no class by hardware")

	i, _ = in("c256")
	d = Decide(i)
	g.Expect(d.Action).To(Equal(Wait))
	g.Expect(d.Message).To(ContainSubstring("1 free matching hosts are in host classes of the tenant that were full"))
}
