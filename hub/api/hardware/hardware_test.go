package hardware

import (
	"fmt"
	"strings"
	"testing"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// gpuHost is a 64-core host with 512 GiB, two NVMe disks of 1.9 TB and a
// spinning 8 TB one, a 25 and a 100 Gb/s NIC and an A100, its BIOS at
// 1.4.2 (as inspection reports it) and its BMC at 7.10.
func gpuHost() *View {
	v := Of(&metal3api.HardwareDetails{
		Firmware:     metal3api.Firmware{BIOS: metal3api.BIOS{Vendor: "Dell Inc.", Version: "1.4.2"}},
		SystemVendor: metal3api.HardwareSystemVendor{Manufacturer: "Dell Inc.", ProductName: "PowerEdge R750", SerialNumber: "ABC123"},
		RAMMebibytes: 512 * 1024,
		CPU:          metal3api.CPU{Arch: "x86_64", Model: "Intel Xeon Gold 6338", Count: 64},
		Storage: []metal3api.Storage{
			{Name: "/dev/sda", Rotational: true, Type: metal3api.HDD, SizeBytes: 8 * metal3api.TeraByte, SerialNumber: "s1"},
			{Name: "/dev/nvme0n1", Type: metal3api.NVME, SizeBytes: 1920 * metal3api.GigaByte, SerialNumber: "s2"},
			{Name: "/dev/nvme1n1", Type: metal3api.NVME, SizeBytes: 1920 * metal3api.GigaByte, SerialNumber: "s3"},
		},
		NIC: []metal3api.NIC{
			{Name: "eno1", Model: "Intel E810", MAC: "00:11:22:33:44:55", SpeedGbps: 25, IP: "192.168.1.10"},
			{Name: "ens1f0", Model: "Mellanox ConnectX-6", MAC: "00:11:22:33:44:56", SpeedGbps: 100},
		},
	})
	v.GPUs = []GPU{{Vendor: "NVIDIA", Model: "A100-SXM4-80GB"}}
	v.Firmware["bmc"] = "7.10"
	return v
}

func TestOf(t *testing.T) {
	g := NewWithT(t)
	g.Expect(Of(nil)).To(BeNil(), "a host not inspected has no view")
	v := gpuHost()
	g.Expect(v.CPU).To(Equal(CPU{Count: 64, Arch: "x86_64", Model: "Intel Xeon Gold 6338"}))
	g.Expect(v.MemoryMiB).To(Equal(int64(512 * 1024)))
	g.Expect(v.Disks).To(Equal([]Disk{{SizeGiB: 7450, Rotational: true, Type: "HDD"}, {SizeGiB: 1788, Type: "NVME"}, {SizeGiB: 1788, Type: "NVME"}}),
		"largest first, GiB rounded down, no names or serials")
	g.Expect(v.NICs).To(Equal([]NIC{{SpeedGbps: 100, Model: "Mellanox ConnectX-6"}, {SpeedGbps: 25, Model: "Intel E810"}}), "fastest first, no MACs or addresses")
	g.Expect(v.System).To(Equal(System{Manufacturer: "Dell Inc.", Product: "PowerEdge R750"}), "no serial number")

	empty := Of(&metal3api.HardwareDetails{})
	g.Expect(empty.Disks).NotTo(BeNil())
	g.Expect(Profile(empty)).To(Equal(Profile(&View{})), "a missing list is an empty one")

	g.Expect(v.Firmware).To(Equal(map[string]string{"bios": "1.4.2", "bmc": "7.10"}))
	g.Expect(Profile(&View{Firmware: map[string]string{}})).To(Equal(Profile(&View{})), "a view without firmware keeps the profile it had")

	many := &View{Firmware: map[string]string{}}
	for i := range MaxNICs + 10 {
		many.NICs = append(many.NICs, NIC{SpeedGbps: 1})
		many.Firmware[fmt.Sprintf("nic:%02d", i)] = "1"
	}
	Normalize(many)
	g.Expect(many.NICs).To(HaveLen(MaxNICs))
	g.Expect(many.Firmware).To(HaveLen(MaxFirmware))
	g.Expect(many.Firmware).To(HaveKey("nic:00"), "the first by name")

	t.Log("OfData: the firmware the BMC driver read (hostfleet.io/firmware) beside the BIOS inspection reported")
	hd := &metal3api.HardwareData{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{AnnotationFirmware: `{"bmc":"7.10","nic:NIC.1":"22.31"}`}},
		Spec: metal3api.HardwareDataSpec{HardwareDetails: &metal3api.HardwareDetails{Firmware: metal3api.Firmware{BIOS: metal3api.BIOS{Version: "2.0"}}}}}
	g.Expect(OfData(hd).Firmware).To(Equal(map[string]string{"bios": "2.0", "bmc": "7.10", "nic:NIC.1": "22.31"}))
	hd.Annotations[AnnotationFirmware] = "not json"
	g.Expect(OfData(hd).Firmware).To(Equal(map[string]string{"bios": "2.0"}), "a firmware list that does not parse is none")
}

func TestProfile(t *testing.T) {
	g := NewWithT(t)
	a, b := gpuHost(), gpuHost()
	b.Disks[0], b.Disks[2] = b.Disks[2], b.Disks[0] // the order it was reported in
	g.Expect(Profile(a)).To(Equal(Profile(b)), "hosts of one make and fit share a profile")
	g.Expect(Profile(a)).To(HavePrefix(Version + "-"))
	g.Expect(b.Disks[0].Type).To(Equal("NVME"), "Profile leaves the view as it was")
	for name, change := range map[string]func(*View){
		"cores":    func(v *View) { v.CPU.Count = 32 },
		"memory":   func(v *View) { v.MemoryMiB /= 2 },
		"a disk":   func(v *View) { v.Disks = v.Disks[1:] },
		"NIC type": func(v *View) { v.NICs[0].Model = "other" },
		"GPU":      func(v *View) { v.GPUs = nil },
		"product":  func(v *View) { v.System.Product = "R650" },
		"firmware": func(v *View) { v.Firmware["bios"] = "1.0.0" },
	} {
		c := gpuHost()
		change(c)
		g.Expect(Profile(c)).NotTo(Equal(Profile(a)), name)
	}
}

func TestParseAndMeets(t *testing.T) {
	small := Of(&metal3api.HardwareDetails{RAMMebibytes: 64 * 1024, CPU: metal3api.CPU{Arch: "aarch64", Count: 16},
		Storage: []metal3api.Storage{{Rotational: true, Type: metal3api.HDD, SizeBytes: 2 * metal3api.TeraByte}},
		NIC:     []metal3api.NIC{{SpeedGbps: 10}}})
	for _, tc := range []struct {
		expr       string
		big, small bool
	}{
		{`host.cpu.count >= 64`, true, false},
		{`host.cpu.arch == "aarch64"`, false, true},
		{`host.memoryMiB >= 256 * 1024`, true, false},
		{`host.disks.exists(d, d.type == "NVME" && d.sizeGiB >= 1000)`, true, false},
		{`host.disks.exists(d, !d.rotational)`, true, false},
		{`host.disks.filter(d, d.type == "NVME").size() >= 2`, true, false},
		{`host.nics.exists(n, n.speedGbps >= 25)`, true, false},
		{`host.gpus.exists(g, g.model.startsWith("A100"))`, true, false},
		{`host.gpus.size() == 0`, false, true},
		{`host.system.manufacturer.lowerAscii().contains("dell")`, true, false},
		{`host.cpu.model.matches("Xeon (Gold|Platinum)")`, true, false},
		{`"bios" in host.firmware && host.firmware["bios"] == "1.4.2"`, true, false},
		{`host.firmware.exists(c, c == "bmc")`, true, false},
		{`host.firmware.size() == 0`, false, true},
		{`true`, true, true},
	} {
		t.Run(tc.expr, func(t *testing.T) {
			g := NewWithT(t)
			r, err := Parse(tc.expr)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(r.String()).To(Equal(tc.expr))
			for _, c := range []struct {
				v    *View
				want bool
			}{{gpuHost(), tc.big}, {small, tc.small}, {nil, false}} {
				ok, err := r.Meets(c.v)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(ok).To(Equal(c.want), "%+v", c.v)
			}
		})
	}
}

func TestParseRefuses(t *testing.T) {
	for _, tc := range []struct{ expr, says string }{
		{"", "empty"},
		{"  ", "empty"},
		{strings.Repeat("true && ", 300) + "true", "bytes long"},
		{`host.cpu.cores >= 4`, "does not compile"},
		{`host.cpu.count >= "4"`, "does not compile"},
		{`host.cpu.count`, "must yield a bool"},
		{`node.cpu.count > 2`, "does not compile"},
		{`host.disks.exists(d, host.nics.exists(n, d.sizeGiB == n.speedGbps))`, "may cost"},
	} {
		t.Run(tc.expr, func(t *testing.T) {
			g := NewWithT(t)
			_, err := Parse(tc.expr)
			g.Expect(err).To(MatchError(ContainSubstring(tc.says)))
		})
	}
}

func TestLacks(t *testing.T) {
	small := Of(&metal3api.HardwareDetails{RAMMebibytes: 64 * 1024, CPU: metal3api.CPU{Arch: "x86_64", Count: 48},
		NIC: []metal3api.NIC{{SpeedGbps: 10}}})
	for _, tc := range []struct {
		expr  string
		lacks []string
	}{
		{`host.cpu.count >= 64`, []string{"host.cpu.count >= 64 (has 48)"}},
		{`host.cpu.count >= 32 && host.memoryMiB >= 131072 && host.gpus.size() >= 1`,
			[]string{"host.memoryMiB >= 131072 (has 65536)", "host.gpus.size() >= 1 (has 0)"}},
		{`host.cpu.arch == "x86_64" && host.nics.exists(n, n.speedGbps >= 25)`, []string{"host.nics.exists(n, n.speedGbps >= 25)"}},
		{`host.cpu.count >= 64 || host.memoryMiB > 1`, nil},
		{`!(host.cpu.count < 64)`, []string{"!(host.cpu.count < 64)"}},
	} {
		t.Run(tc.expr, func(t *testing.T) {
			g := NewWithT(t)
			r, err := Parse(tc.expr)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(r.Lacks(small)).To(Equal(tc.lacks))
			ok, err := r.Meets(small)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(ok).To(Equal(len(tc.lacks) == 0), "a host lacks nothing exactly when it meets the requirement")
			g.Expect(r.Lacks(nil)).To(ConsistOf(ContainSubstring("inspection")))
		})
	}
}

func TestMeetsWithinItsCost(t *testing.T) {
	g := NewWithT(t)
	r, err := Parse(`host.disks.all(d, d.sizeGiB > 0 && d.type.lowerAscii() != "x") && host.nics.all(n, n.speedGbps > 0) && host.gpus.all(g, g.model.contains("A"))`)
	g.Expect(err).NotTo(HaveOccurred())
	v := &View{}
	for range MaxDisks {
		v.Disks = append(v.Disks, Disk{SizeGiB: 1, Type: strings.Repeat("N", MaxString)})
	}
	for range MaxNICs {
		v.NICs = append(v.NICs, NIC{SpeedGbps: 2})
	}
	for range MaxGPUs {
		v.GPUs = append(v.GPUs, GPU{Model: strings.Repeat("A", MaxString)})
	}
	Normalize(v)
	ok, err := r.Meets(v)
	g.Expect(err).NotTo(HaveOccurred(), "a view at its largest evaluates within the runtime limit the estimate promised")
	g.Expect(ok).To(BeTrue())
}

// FuzzParse: what parses evaluates on any view without panicking, within
// its cost; what does not parse says so.
func FuzzParse(f *testing.F) {
	f.Add(`host.cpu.count >= 64 && host.disks.exists(d, d.type == "NVME")`)
	f.Add(`host.gpus[0].model == "x"`)
	f.Add(`host.nics.all(n, n.speedGbps > 10) || host.memoryMiB < 1`)
	f.Fuzz(func(t *testing.T, expr string) {
		r, err := Parse(expr)
		if err != nil {
			if err.Error() == "" {
				t.Fatalf("%q refused without a message", expr)
			}
			return
		}
		for _, v := range []*View{gpuHost(), {}, nil} {
			ok, err := r.Meets(v)
			if lacks := r.Lacks(v); err == nil && ok != (len(lacks) == 0) {
				t.Fatalf("%q: meets %t but lacks %q", expr, ok, lacks)
			}
		}
	})
}

// TestMeetsProfile: a profile's verdict is remembered per cluster and
// name, and agrees with Meets; a cluster that reports another cluster's
// profile name with other hardware changes nothing for the other's hosts.
func TestMeetsProfile(t *testing.T) {
	g := NewWithT(t)
	r, err := Parse(`host.cpu.count >= 32`)
	g.Expect(err).NotTo(HaveOccurred())
	big, small := &View{CPU: CPU{Count: 64}}, &View{CPU: CPU{Count: 16}}
	Normalize(big)
	Normalize(small)
	g.Expect(r.MeetsProfile("c1", Profile(big), big)).To(BeTrue())
	g.Expect(r.MeetsProfile("c1", Profile(small), small)).To(BeFalse())
	g.Expect(r.MeetsProfile("c1", "", big)).To(BeFalse(), "hosts not inspected meet nothing")
	g.Expect(r.MeetsProfile("c1", Profile(big), nil)).To(BeFalse())
	// Remembered per cluster and name: c1's view is not evaluated again.
	g.Expect(r.MeetsProfile("c1", Profile(big), small)).To(BeTrue())
	// evil reports c1's names with the other hardware: judged on it, for
	// evil alone, first or after c1.
	g.Expect(r.MeetsProfile("evil", Profile(big), small)).To(BeFalse())
	g.Expect(r.MeetsProfile("evil", Profile(small), big)).To(BeTrue())
	g.Expect(r.MeetsProfile("c2", Profile(small), big)).To(BeTrue())
	g.Expect(r.MeetsProfile("c1", Profile(small), small)).To(BeFalse())
	for i := range 5000 {
		v := &View{CPU: CPU{Count: int64(i)}}
		Normalize(v)
		ok, _ := r.Meets(v)
		g.Expect(r.MeetsProfile("c1", Profile(v), v)).To(Equal(ok))
	}
}
