package ipmisim_test

import (
	"context"
	"os/exec"
	"strconv"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/hostfleet/hostfleet/agent/bmc"
	"github.com/hostfleet/hostfleet/e2e/emulators/ipmisim"
)

func TestSimulator(t *testing.T) {
	g := NewWithT(t)
	b, err := ipmisim.Start(t.TempDir(), "admin", "password")
	g.Expect(err).NotTo(HaveOccurred())
	defer b.Close()
	g.Expect(bmc.Ping(context.Background(), b.Address())).To(Succeed())
	ipmitool := func(args ...string) string {
		out, err := exec.Command("ipmitool", append([]string{"-I", "lanplus", "-C", "3", "-H", "127.0.0.1", "-p", strconv.Itoa(b.Port),
			"-U", "admin", "-P", "password"}, args...)...).CombinedOutput()
		g.Expect(err).NotTo(HaveOccurred(), string(out))
		return string(out)
	}
	g.Expect(ipmitool("chassis", "power", "status")).To(ContainSubstring("Chassis Power is off"))
	ipmitool("chassis", "power", "on")
	g.Expect(b.Power()).To(BeTrue())
	g.Expect(ipmitool("chassis", "power", "status")).To(ContainSubstring("Chassis Power is on"))
	ipmitool("chassis", "bootdev", "cdrom")
	g.Expect(b.Boot()).To(Equal("cdrom"))
	g.Expect(b.Log()).To(Equal([]string{"power 1", "boot cdrom"}))

	t.Log("with a latency, a power change lands later and the old state is read meanwhile")
	g.Expect(b.SetLatency(2 * time.Second)).To(Succeed())
	sent := time.Now()
	ipmitool("chassis", "power", "off")
	g.Expect(ipmitool("chassis", "power", "status")).To(ContainSubstring("Chassis Power is on"))
	g.Eventually(func() string { return ipmitool("chassis", "power", "status") }).WithTimeout(10 * time.Second).
		Should(ContainSubstring("Chassis Power is off"))
	g.Expect(time.Since(sent)).To(BeNumerically(">=", 2*time.Second))
	g.Expect(b.Power()).To(BeFalse())

	t.Log("a soft shutdown powers off an operating system that obeys it, not one that ignores it")
	g.Expect(b.SetLatency(0)).To(Succeed())
	ipmitool("chassis", "power", "on")
	g.Expect(b.IgnoreShutdown(true)).To(Succeed())
	ipmitool("chassis", "power", "soft")
	g.Expect(b.Power()).To(BeTrue())
	g.Expect(b.IgnoreShutdown(false)).To(Succeed())
	ipmitool("chassis", "power", "soft")
	g.Expect(b.Power()).To(BeFalse())

	t.Log("a network boot runs the erase image, which powers off once seen on; a power-on sent twice boots once")
	g.Expect(b.EraseByNetwork(time.Second)).To(Succeed())
	ipmitool("chassis", "bootdev", "pxe")
	ipmitool("chassis", "power", "on")
	ipmitool("chassis", "power", "on")
	g.Expect(ipmitool("chassis", "power", "status")).To(ContainSubstring("Chassis Power is on"))
	g.Eventually(func() string { return ipmitool("chassis", "power", "status") }).WithTimeout(10 * time.Second).
		Should(ContainSubstring("Chassis Power is off"))
	g.Expect(b.Log()).To(ContainElement("erased"))
}

// TestFRU: a BMC given a FRU inventory serves it as ipmitool reads it.
func TestFRU(t *testing.T) {
	g := NewWithT(t)
	b, err := ipmisim.Start(t.TempDir(), "admin", "password", ipmisim.WithFRU("Supermicro", "SYS-1029U-TRT", "S123"))
	g.Expect(err).NotTo(HaveOccurred())
	defer b.Close()
	out, err := exec.Command("ipmitool", "-I", "lanplus", "-C", "3", "-H", "127.0.0.1", "-p", strconv.Itoa(b.Port),
		"-U", "admin", "-P", "password", "fru", "print", "0").CombinedOutput()
	g.Expect(err).NotTo(HaveOccurred(), string(out))
	g.Expect(string(out)).To(And(MatchRegexp(`Product Manufacturer\s+: Supermicro`), MatchRegexp(`Product Name\s+: SYS-1029U-TRT`),
		MatchRegexp(`Product Serial\s+: S123`)))
}
