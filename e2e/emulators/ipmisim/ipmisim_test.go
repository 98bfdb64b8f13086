package ipmisim_test

import (
	"context"
	"os/exec"
	"strconv"
	"testing"

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
}
