package redfish_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	bmclib "github.com/bmc-toolbox/bmclib/v2"
	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"

	"github.com/hostfleet/hostfleet/e2e/emulators/redfish"
)

// client is bmclib with only its Redfish (gofish) provider, as a driver
// would use it.
func client(b *redfish.BMC, user, pass string) *bmclib.Client {
	host, port, _ := strings.Cut(b.HostPort(), ":")
	if strings.HasPrefix(b.URL(), "http://") {
		host = "http://" + host // bmclib's Redfish provider speaks HTTPS unless told
	}
	c := bmclib.NewClient(host, user, pass, bmclib.WithRedfishPort(port), bmclib.WithLogger(logr.Discard()),
		bmclib.WithPerProviderTimeout(10*time.Second))
	c.Registry.Drivers = c.Registry.For("gofish")
	return c
}

// TestBmclibDrivesTheEmulator: a real Redfish client opens a session,
// reads and changes power, sets a one-time CD boot, inserts virtual media
// (which the BMC fetches) and reads the inventory.
func TestBmclibDrivesTheEmulator(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	image := redfish.ImageServer()
	defer image.Close()
	b := redfish.Start(redfish.Options{TLS: true})
	defer b.Close()

	c := client(b, "admin", "password")
	g.Expect(c.Open(ctx)).To(Succeed())
	defer c.Close(ctx)

	state, err := c.GetPowerState(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(strings.ToLower(state)).To(Equal("off"))

	_, err = c.SetBootDevice(ctx, "cdrom", false, true)
	g.Expect(err).NotTo(HaveOccurred())
	enabled, target := b.BootOverride()
	g.Expect([]string{enabled, target}).To(Equal([]string{"Once", "Cd"}))

	_, err = c.SetVirtualMedia(ctx, "CD", image.URL+"/live.iso")
	g.Expect(err).NotTo(HaveOccurred())
	inserted, url, size := b.Media()
	g.Expect(inserted).To(BeTrue())
	g.Expect(url).To(Equal(image.URL + "/live.iso"))
	g.Expect(size).To(Equal(int64(redfish.ImageSize)), "the BMC fetched the image")

	_, err = c.SetPowerState(ctx, "on")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(b.Power()).To(Equal("On"))
	enabled, _ = b.BootOverride()
	g.Expect(enabled).To(Equal("Disabled"), "a one-time override is used by the boot")

	inv, err := c.Inventory(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(inv.Vendor).To(Equal("Hostfleet"))
	g.Expect(inv.Serial).To(Equal("EMU0001"))
	g.Expect(inv.CPUs).To(HaveLen(2))
	g.Expect(inv.Memory).NotTo(BeEmpty())
	g.Expect(inv.Drives).To(HaveLen(1))
	g.Expect(inv.NICs).To(HaveLen(1))
	g.Expect(inv.NICs[0].NICPorts).To(ContainElement(HaveField("MacAddress", "52:54:00:00:00:01")))

	g.Expect(b.Repeats()).To(BeEmpty(), "each command changed the power")

	_, err = c.SetPowerState(ctx, "off")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(b.Power()).To(Equal("Off"))
	_, err = c.SetPowerState(ctx, "cycle")
	g.Expect(err).To(HaveOccurred(), "a powered-off system cannot power cycle")

	_, err = c.SetVirtualMedia(ctx, "CD", image.URL+"/missing.iso")
	g.Expect(err).To(MatchError(ContainSubstring("404")), "an image the BMC cannot fetch")
	g.Expect(b.Actions()).To(ContainElements("Reset On", "InsertMedia "+image.URL+"/live.iso", "Reset ForceOff"))
}

func TestEmulatorRefuses(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	b := redfish.Start(redfish.Options{})
	defer b.Close()

	t.Log("wrong credentials")
	g.Expect(client(b, "admin", "wrong").Open(ctx)).To(MatchError(ContainSubstring("401")))

	t.Log("a BMC that answers 500s")
	b.SetFaults(redfish.Faults{Status: http.StatusInternalServerError})
	g.Expect(client(b, "admin", "password").Open(ctx)).NotTo(Succeed())
	b.SetFaults(redfish.Faults{})

	t.Log("a BMC that stops answering")
	c := client(b, "admin", "password")
	g.Expect(c.Open(ctx)).To(Succeed())
	b.SetDown(true)
	_, err := c.GetPowerState(ctx)
	g.Expect(err).To(HaveOccurred())
	b.SetDown(false)
	_, err = c.GetPowerState(ctx)
	g.Expect(err).NotTo(HaveOccurred(), "and answers again")
}

// TestLatency: with a PowerChange latency the system reports PoweringOn or
// PoweringOff (through Redfish too) until the change lands, refuses a reset
// sent meanwhile, and InsertMedia and the inventory take their time.
func TestLatency(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()

	t.Log("mid-transition (a change that takes an hour, so that a busy machine cannot see it land): PoweringOn, a reset refused")
	slow := redfish.Start(redfish.Options{Latency: redfish.Latency{PowerChange: time.Hour}})
	defer slow.Close()
	sc := client(slow, "admin", "password")
	g.Expect(sc.Open(ctx)).To(Succeed())
	defer sc.Close(ctx)
	_, err := sc.SetPowerState(ctx, "on")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(slow.Power()).To(Equal("PoweringOn"))
	state, err := sc.GetPowerState(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(strings.ToLower(state)).To(Equal("poweringon"), "what a Redfish client reads")
	_, err = sc.SetPowerState(ctx, "off")
	g.Expect(err).To(MatchError(ContainSubstring("409")), "refused mid-transition")
	g.Expect(slow.Actions()).To(Equal([]string{"Reset On", "Reset ForceOff refused: PoweringOn"}))
	on := redfish.Start(redfish.Options{PoweredOn: true, Latency: redfish.Latency{PowerChange: time.Hour}})
	defer on.Close()
	g.Expect(on.ResetForTest("ForceOff")).To(Succeed())
	g.Expect(on.Power()).To(Equal("PoweringOff"))

	t.Log("a change lands once its latency has passed")
	const change = 600 * time.Millisecond
	iso := redfish.ImageServer()
	defer iso.Close()
	b := redfish.Start(redfish.Options{Latency: redfish.Latency{PowerChange: change, MediaInsert: 300 * time.Millisecond, Inventory: 300 * time.Millisecond}})
	defer b.Close()
	c := client(b, "admin", "password")
	g.Expect(c.Open(ctx)).To(Succeed())
	defer c.Close(ctx)
	start := time.Now()
	_, err = c.SetPowerState(ctx, "on")
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(b.Power).WithTimeout(5 * time.Second).WithPolling(20 * time.Millisecond).Should(Equal("On"))
	g.Expect(time.Since(start)).To(BeNumerically(">=", change))

	_, err = c.SetPowerState(ctx, "off")
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(b.Power).WithTimeout(5 * time.Second).WithPolling(20 * time.Millisecond).Should(Equal("Off"))

	start = time.Now()
	_, err = c.Inventory(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(time.Since(start)).To(BeNumerically(">=", 300*time.Millisecond))
	start = time.Now()
	_, err = c.SetVirtualMedia(ctx, "CD", iso.URL+"/live.iso")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(time.Since(start)).To(BeNumerically(">=", 300*time.Millisecond))
}

// TestRepeats: a power command that finds the system already where it
// leads is accepted, as BMCs do, and counted as a repeat.
func TestRepeats(t *testing.T) {
	g := NewWithT(t)
	b := redfish.Start(redfish.Options{})
	defer b.Close()
	reset := func(typ string) { g.Expect(b.ResetForTest(typ)).To(Succeed()) }
	reset("On")
	reset("ForceRestart")
	reset("On")
	reset("GracefulShutdown")
	reset("ForceOff")
	g.Expect(b.Resets()).To(Equal([]string{"On", "ForceRestart", "On", "GracefulShutdown", "ForceOff"}))
	g.Expect(b.Repeats()).To(Equal([]string{"On while On", "ForceOff while Off"}))
}
