package lanplus_test

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/hostfleet/hostfleet/agent/bmc"
	"github.com/hostfleet/hostfleet/e2e/emulators/lanplus"
)

func whats(events []lanplus.Event) []string {
	var out []string
	for _, e := range events {
		out = append(out, e.What)
	}
	return out
}

// TestAgentClientDrivesTheEmulator: the agent's native IPMI client opens a
// session, powers the chassis, sets its boot device and reads each fault as
// its health; wrong credentials and a BMC that stopped answering are told
// apart.
func TestAgentClientDrivesTheEmulator(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	b, err := lanplus.Start("admin", "secret")
	g.Expect(err).NotTo(HaveOccurred())
	defer b.Close()
	g.Expect(bmc.Ping(ctx, b.Address())).To(Succeed())
	a, err := bmc.ParseAddress("ipmi://" + b.Address())
	g.Expect(err).NotTo(HaveOccurred())
	o := bmc.Options{Timeout: 5 * time.Second}

	d, err := bmc.Open(ctx, a, "admin", "secret", o)
	g.Expect(err).NotTo(HaveOccurred())
	health := func() (bmc.Health, string) {
		_, err := d.Power(ctx)
		g.Expect(err).NotTo(HaveOccurred())
		return d.(bmc.HealthReader).Health()
	}
	g.Expect(d.Power(ctx)).To(Equal(bmc.PowerOff))
	g.Expect(d.SetBootOnce(ctx, bmc.BootPXE)).To(Succeed())
	g.Expect(b.Boot()).To(Equal("pxe"))
	g.Expect(d.Send(ctx, bmc.CommandOn)).To(Succeed())
	g.Expect(b.Power()).To(BeTrue())
	g.Expect(d.Power(ctx)).To(Equal(bmc.PowerOn))
	g.Expect(health()).To(Equal(bmc.HealthOK))

	for _, c := range []struct {
		f    lanplus.Faults
		h    bmc.Health
		what string
	}{
		{lanplus.Faults{PowerFault: true}, bmc.HealthCritical, "chassis status: power fault"},
		{lanplus.Faults{PowerControlFault: true, CoolingFault: true}, bmc.HealthCritical, "chassis status: power control fault, cooling fan fault"},
		{lanplus.Faults{PowerOverload: true, Interlock: true}, bmc.HealthCritical, "chassis status: power overload, interlock active"},
		{lanplus.Faults{DriveFault: true}, bmc.HealthWarning, "chassis status: drive fault"},
		{lanplus.Faults{}, bmc.HealthOK, ""},
	} {
		b.SetFaults(c.f)
		h, what := health()
		g.Expect(h).To(Equal(c.h), "%+v", c.f)
		g.Expect(what).To(Equal(c.what))
	}
	g.Expect(d.Send(ctx, bmc.CommandForceRestart)).To(Succeed())
	g.Expect(d.Send(ctx, bmc.CommandGracefulShutdown)).To(Succeed())
	g.Expect(b.Power()).To(BeFalse(), "its operating system obeys the power button")
	g.Expect(whats(b.Log())).To(Equal([]string{"power up", "power cycle", "soft shutdown"}))
	_, err = d.Inventory(ctx)
	g.Expect(err).To(MatchError(bmc.ErrUnsupported), "no FRU inventory")
	g.Expect(d.Close(ctx)).To(Succeed())

	t.Log("a wrong password or user is refused; a BMC that stopped answering is unreachable")
	_, err = bmc.Open(ctx, a, "admin", "wrong", o)
	g.Expect(err).To(MatchError(bmc.ErrCredentials))
	_, err = bmc.Open(ctx, a, "root", "secret", o)
	g.Expect(err).To(MatchError(bmc.ErrCredentials))
	b.SetDown(true)
	_, err = bmc.Open(ctx, a, "admin", "secret", bmc.Options{Timeout: time.Second})
	g.Expect(err).To(MatchError(bmc.ErrUnreachable))
	b.SetDown(false)
	d, err = bmc.Open(ctx, a, "admin", "secret", o)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(d.Close(ctx)).To(Succeed())
}

// ipmitoolAs runs ipmitool against b over lanplus as user, once (no
// retries): its output and whether it failed.
func ipmitoolAs(b *lanplus.BMC, user, pass string, args ...string) (string, error) {
	host, port, _ := strings.Cut(b.Address(), ":")
	out, err := exec.Command("ipmitool", append([]string{"-I", "lanplus", "-C", "3", "-N", "1", "-R", "1",
		"-H", host, "-p", port, "-U", user, "-P", pass}, args...)...).CombinedOutput()
	return string(out), err
}

// TestIpmitoolDrivesTheEmulator: ipmitool, another implementation of the
// same protocol, reads the faults the emulator reports.
func TestIpmitoolDrivesTheEmulator(t *testing.T) {
	g := NewWithT(t)
	b, err := lanplus.Start("admin", "secret")
	g.Expect(err).NotTo(HaveOccurred())
	defer b.Close()
	ipmitool := func(pass string, args ...string) (string, error) { return ipmitoolAs(b, "admin", pass, args...) }
	out, err := ipmitool("secret", "chassis", "power", "on")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(b.Power()).To(BeTrue())
	b.SetFaults(lanplus.Faults{PowerFault: true, DriveFault: true})
	out, err = ipmitool("secret", "chassis", "status")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(MatchRegexp(`System Power\s+: on`))
	g.Expect(out).To(MatchRegexp(`Main Power Fault\s+: true`))
	g.Expect(out).To(MatchRegexp(`Drive Fault\s+: true`))
	g.Expect(out).To(MatchRegexp(`Cooling/Fan Fault\s+: false`))
	out, err = ipmitool("secret", "chassis", "bootdev", "pxe")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(b.Boot()).To(Equal("pxe"))
	out, err = ipmitool("secret", "chassis", "power", "off")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(b.Power()).To(BeFalse())
	out, err = ipmitool("wrong", "chassis", "power", "status")
	g.Expect(err).To(HaveOccurred(), out)
}

// TestIpmitoolSetsUsers: the user table as ipmitool reads and writes it; a
// user added (as a tenant does in-band) logs in, one disabled no longer
// does.
func TestIpmitoolSetsUsers(t *testing.T) {
	g := NewWithT(t)
	b, err := lanplus.Start("admin", "secret")
	g.Expect(err).NotTo(HaveOccurred())
	defer b.Close()
	ipmitool := func(user, pass string, args ...string) (string, error) { return ipmitoolAs(b, user, pass, args...) }
	for _, args := range [][]string{
		{"user", "set", "name", "5", "ghost"}, {"user", "set", "password", "5", "boo"},
		{"user", "priv", "5", "4", "1"}, {"user", "enable", "5"},
	} {
		out, err := ipmitool("admin", "secret", args...)
		g.Expect(err).NotTo(HaveOccurred(), "%v: %s", args, out)
	}
	g.Expect(b.Users()).To(ContainElement(lanplus.User{ID: 5, Name: "ghost", Password: "boo", Enabled: true, Privilege: 4}))
	out, err := ipmitool("admin", "secret", "user", "list", "1")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(MatchRegexp(`(?m)^2\s+admin\s+true\s+false\s+true\s+ADMINISTRATOR`))
	g.Expect(out).To(MatchRegexp(`(?m)^5\s+ghost\s+true\s+false\s+true\s+ADMINISTRATOR`))
	out, err = ipmitool("ghost", "boo", "chassis", "power", "on")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(b.Power()).To(BeTrue())

	out, err = ipmitool("admin", "secret", "user", "disable", "5")
	g.Expect(err).NotTo(HaveOccurred(), out)
	out, err = ipmitool("ghost", "boo", "chassis", "power", "status")
	g.Expect(err).To(HaveOccurred(), "a disabled user cannot log in: %s", out)
	b.SetUserInBand(lanplus.User{ID: 6, Name: "oper", Password: "op", Enabled: true, Privilege: 3})
	out, err = ipmitool("oper", "op", "-L", "OPERATOR", "user", "disable", "2")
	g.Expect(err).To(HaveOccurred(), "an operator cannot change users: %s", out)
}
