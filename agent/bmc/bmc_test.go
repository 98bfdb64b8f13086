package bmc_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"

	"github.com/hostfleet/hostfleet/agent/bmc"
	"github.com/hostfleet/hostfleet/e2e/emulators/ipmisim"
	"github.com/hostfleet/hostfleet/e2e/emulators/redfish"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

func TestParseAddress(t *testing.T) {
	tests := []struct {
		in   string
		want bmc.Address
		err  string
	}{
		{in: "ipmi://10.0.0.5", want: bmc.Address{Protocol: bmc.IPMI, Host: "10.0.0.5"}},
		{in: "10.0.0.5:6230", want: bmc.Address{Protocol: bmc.IPMI, Host: "10.0.0.5", Port: "6230"}},
		{in: "redfish://bmc.lab:8443/redfish/v1/Systems/1", want: bmc.Address{Protocol: bmc.Redfish, Host: "bmc.lab", Port: "8443", SystemPath: "/redfish/v1/Systems/1"}},
		{in: "redfish+http://127.0.0.1:8000/redfish/v1/Systems/1/", want: bmc.Address{Protocol: bmc.Redfish, Host: "127.0.0.1", Port: "8000", HTTP: true, SystemPath: "/redfish/v1/Systems/1"}},
		{in: "redfish-virtualmedia://[fd00::1]/redfish/v1/Systems/1", want: bmc.Address{Protocol: bmc.Redfish, Host: "fd00::1", VirtualMedia: true, SystemPath: "/redfish/v1/Systems/1"}},
		{in: "idrac-virtualmedia://idrac/redfish/v1/Systems/System.Embedded.1", want: bmc.Address{Protocol: bmc.Redfish, Host: "idrac", VirtualMedia: true, SystemPath: "/redfish/v1/Systems/System.Embedded.1"}},
		{in: "irmc://10.0.0.5", err: `scheme "irmc" is not one the agent drives`},
		{in: "redfish:///redfish/v1/Systems/1", err: "has no host"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			g := NewWithT(t)
			got, err := bmc.ParseAddress(tt.in)
			if tt.err != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.err)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tt.want))
		})
	}
	g := NewWithT(t)
	a, _ := bmc.ParseAddress("ipmi://h")
	g.Expect(a.HostPort()).To(Equal("h:623"))
	a, _ = bmc.ParseAddress("redfish://h/redfish/v1/Systems/1")
	g.Expect(a.HostPort()).To(Equal("h:443"))
}

func TestPowerState(t *testing.T) {
	g := NewWithT(t)
	for in, want := range map[string]bmc.PowerState{"On": bmc.PowerOn, "on": bmc.PowerOn, "Chassis Power is on\n": bmc.PowerOn,
		"Off": bmc.PowerOff, "Chassis Power is off": bmc.PowerOff, "PoweringOn": bmc.PoweringOn, "powering off": bmc.PoweringOff} {
		got, err := bmc.ParsePowerState(in)
		g.Expect(err).NotTo(HaveOccurred(), in)
		g.Expect(got).To(Equal(want), in)
		g.Expect(got.Settled()).To(Equal(want == bmc.PowerOn || want == bmc.PowerOff), in)
	}
	_, err := bmc.ParsePowerState("Unknown")
	g.Expect(err).To(HaveOccurred())
}

func address(b *redfish.BMC) bmc.Address {
	scheme := "redfish-virtualmedia"
	if strings.HasPrefix(b.URL(), "http://") {
		scheme = "redfish-virtualmedia+http"
	}
	a, err := bmc.ParseAddress(scheme + "://" + b.HostPort() + redfish.SystemPath)
	if err != nil {
		panic(err)
	}
	return a
}

func TestRedfish(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	iso := redfish.ImageServer()
	defer iso.Close()
	emulated := redfish.DefaultHardware("EMU0001")
	emulated.NICs[0].IP = "192.0.2.11"
	emulated.GPUs = []redfish.GPU{{Manufacturer: "NVIDIA", Model: "A100-SXM4-80GB"}, {Manufacturer: "NVIDIA", Model: "A100-SXM4-80GB"}}
	b := redfish.Start(redfish.Options{TLS: true, Hardware: emulated})
	defer b.Close()

	t.Log("a self-signed certificate is refused unless verification is disabled")
	_, err := bmc.Open(ctx, address(b), "admin", "password", bmc.Options{Timeout: 5 * time.Second})
	g.Expect(err).To(HaveOccurred())
	g.Expect(errors.Is(err, bmc.ErrCredentials)).To(BeFalse())
	d, err := bmc.Open(ctx, address(b), "admin", "password", bmc.Options{Timeout: 5 * time.Second, InsecureSkipVerify: true})
	g.Expect(err).NotTo(HaveOccurred())
	defer d.Close(ctx)

	s, err := d.Power(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(s).To(Equal(bmc.PowerOff))

	t.Log("inventory becomes HardwareDetails")
	hw, err := d.Inventory(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(hw.SystemVendor.Manufacturer).To(Equal("Hostfleet"))
	g.Expect(hw.SystemVendor.SerialNumber).To(Equal("EMU0001"))
	g.Expect(hw.CPU.Count).To(Equal(32), "2 sockets of 8 cores, 16 threads; the GPUs are no CPUs")
	g.Expect(hw.CPU.Arch).To(Equal("x86_64"))
	g.Expect(hw.RAMMebibytes).To(Equal(64 * 1024))
	g.Expect(hw.Storage).To(HaveLen(1))
	g.Expect(int64(hw.Storage[0].SizeBytes)).To(Equal(int64(480 << 30)))
	g.Expect(hw.NIC).To(ConsistOf(HaveField("MAC", "52:54:00:00:00:01")))
	g.Expect(hw.NIC[0].IP).To(Equal("192.0.2.11"), "bmclib's NIC, with the address only EthernetInterfaces report")
	gpus, err := d.(bmc.GPUReader).GPUs(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(gpus).To(Equal([]hostfleetv1alpha1.HardwareGPU{{Vendor: "NVIDIA", Model: "A100-SXM4-80GB"}, {Vendor: "NVIDIA", Model: "A100-SXM4-80GB"}}),
		"the Processors of type GPU")

	t.Log("live ISO boot: media, one-time CD boot, power on")
	g.Expect(d.InsertMedia(ctx, iso.URL+"/live.iso")).To(Succeed())
	g.Expect(d.SetBootOnce(ctx, bmc.BootCDROM)).To(Succeed())
	g.Expect(d.Send(ctx, bmc.CommandOn)).To(Succeed())
	g.Expect(b.Power()).To(Equal("On"))
	inserted, _, size := b.Media()
	g.Expect(inserted).To(BeTrue())
	g.Expect(size).To(Equal(int64(redfish.ImageSize)))
	g.Expect(d.Send(ctx, bmc.CommandForceRestart)).To(Succeed())
	g.Expect(d.Send(ctx, bmc.CommandGracefulShutdown)).To(Succeed())
	g.Expect(b.Power()).To(Equal("Off"))
	g.Expect(d.Send(ctx, bmc.CommandOn)).To(Succeed())
	g.Expect(b.Resets()).To(Equal([]string{"On", "ForceRestart", "GracefulShutdown", "On"}), "each command is one Reset with its own ResetType")
	g.Expect(d.InsertMedia(ctx, iso.URL+"/missing.iso")).To(MatchError(ContainSubstring("404")))

	t.Log("deprovision: power off, eject")
	g.Expect(d.Send(ctx, bmc.CommandForceOff)).To(Succeed())
	g.Expect(d.EjectMedia(ctx)).To(Succeed())
	g.Expect(b.Power()).To(Equal("Off"))
	inserted, _, _ = b.Media()
	g.Expect(inserted).To(BeFalse())
}

// TestRedfishHealth: the system's health is read with its power, in the
// same request, and says which field said it.
func TestRedfishHealth(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	b := redfish.Start(redfish.Options{})
	defer b.Close()
	d, err := bmc.Open(ctx, address(b), b.Username, b.Password, bmc.Options{Timeout: 10 * time.Second})
	g.Expect(err).NotTo(HaveOccurred())
	defer d.Close(ctx)
	hr, ok := d.(bmc.HealthReader)
	g.Expect(ok).To(BeTrue())
	_, before := b.Traffic()
	for _, tc := range []struct {
		health, rollup string
		want           bmc.Health
		what           string
	}{
		{"", "", bmc.HealthOK, "Status.Health OK"},
		{"Critical", "", bmc.HealthCritical, "Status.Health Critical"},
		{"OK", "Warning", bmc.HealthWarning, "Status.HealthRollup Warning"},
	} {
		b.SetHealth(tc.health, tc.rollup)
		_, err := d.Power(ctx)
		g.Expect(err).NotTo(HaveOccurred())
		h, what := hr.Health()
		g.Expect(h).To(Equal(tc.want))
		g.Expect(what).To(Equal(tc.what))
	}
	_, after := b.Traffic()
	g.Expect(after-before).To(BeNumerically("<=", 3), "one request per power read, health included")
}

func TestRedfishFailures(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	b := redfish.Start(redfish.Options{})
	defer b.Close()
	var mu sync.Mutex
	results := map[string]int{}
	o := bmc.Options{Timeout: 2 * time.Second, Observe: func(_, result string, _ time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		results[result]++
	}}

	_, err := bmc.Open(ctx, address(b), "admin", "wrong", o)
	g.Expect(err).To(MatchError(bmc.ErrCredentials))

	d, err := bmc.Open(ctx, address(b), "admin", "password", o)
	g.Expect(err).NotTo(HaveOccurred())
	b.SetFaults(redfish.Faults{Status: http.StatusInternalServerError})
	_, err = d.Power(ctx)
	g.Expect(err).NotTo(HaveOccurred(), "the first power read is the one that opened the session")
	_, err = d.Power(ctx)
	g.Expect(err).To(HaveOccurred())
	g.Expect(errors.Is(err, bmc.ErrCredentials) || errors.Is(err, bmc.ErrUnreachable)).To(BeFalse(), "a 500 is the BMC failing, not refusing or gone: %v", err)

	b.SetFaults(redfish.Faults{Delay: 5 * time.Second})
	start := time.Now()
	_, err = d.Power(ctx)
	g.Expect(err).To(MatchError(bmc.ErrUnreachable))
	g.Expect(time.Since(start)).To(BeNumerically("<", 4*time.Second), "the per-call timeout holds")
	b.SetFaults(redfish.Faults{})

	b.Close()
	_, err = bmc.Open(ctx, address(b), "admin", "password", o)
	g.Expect(err).To(MatchError(bmc.ErrUnreachable))
	mu.Lock()
	defer mu.Unlock()
	g.Expect(results).To(And(HaveKey(bmc.ResultCredentials), HaveKey(bmc.ResultOK), HaveKey(bmc.ResultError), HaveKey(bmc.ResultTimeout),
		HaveKey(bmc.ResultUnreachable)), "every call observed, by result")
}

func TestIPMIToolMissing(t *testing.T) {
	g := NewWithT(t)
	sim, err := ipmisim.Start(t.TempDir(), "admin", "password")
	g.Expect(err).NotTo(HaveOccurred())
	defer sim.Close()
	a, err := bmc.ParseAddress("ipmi://" + sim.Address())
	g.Expect(err).NotTo(HaveOccurred())
	_, err = bmc.Open(context.Background(), a, "admin", "password", bmc.Options{IpmitoolPath: "/nonexistent/ipmitool"})
	g.Expect(err).To(MatchError(bmc.ErrUnsupported))
	g.Expect(err).To(MatchError(ContainSubstring("--ipmitool /nonexistent/ipmitool")))
}

// TestIPMI drives ipmi_sim through both IPMI paths: the native client
// (what the agent's image uses) and bmclib's ipmitool provider.
func TestIPMI(t *testing.T) {
	for name, tool := range map[string]string{"native": "", "ipmitool": "ipmitool"} {
		t.Run(name, func(t *testing.T) { testIPMI(t, tool) })
	}
}

func testIPMI(t *testing.T, ipmitool string) {
	g := NewWithT(t)
	ctx := context.Background()
	sim, err := ipmisim.Start(t.TempDir(), "admin", "password")
	g.Expect(err).NotTo(HaveOccurred())
	defer sim.Close()
	a, err := bmc.ParseAddress("ipmi://" + sim.Address())
	g.Expect(err).NotTo(HaveOccurred())
	o := bmc.Options{Timeout: 30 * time.Second, IpmitoolPath: ipmitool}

	d, err := bmc.Open(ctx, a, "admin", "password", o)
	g.Expect(err).NotTo(HaveOccurred())
	s, err := d.Power(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(s).To(Equal(bmc.PowerOff))
	g.Expect(d.SetBootOnce(ctx, bmc.BootPXE)).To(Succeed())
	g.Expect(sim.Boot()).To(Equal("pxe"))
	g.Expect(d.Send(ctx, bmc.CommandOn)).To(Succeed())
	g.Expect(sim.Power()).To(BeTrue())
	s, err = d.Power(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(s).To(Equal(bmc.PowerOn))
	hr, ok := d.(bmc.HealthReader)
	g.Expect(ok).To(BeTrue())
	if h, _ := hr.Health(); ipmitool == "" {
		g.Expect(h).To(Equal(bmc.HealthOK), "the chassis status, read with the power, has no fault")
	} else {
		g.Expect(h).To(Equal(bmc.HealthUnknown), "ipmitool's answers say nothing of health")
	}
	g.Expect(d.SetBootOnce(ctx, bmc.BootCDROM)).To(Succeed())
	g.Expect(sim.Boot()).To(Equal("cdrom"))
	g.Expect(d.Send(ctx, bmc.CommandForceRestart)).To(Succeed())
	g.Expect(sim.Log()).To(HaveLen(4), "boot pxe, power 1, boot cdrom, then the cycle")
	g.Expect(sim.Log()[3]).To(Equal("power 0"), "a power cycle goes through off")
	g.Eventually(sim.Power).WithTimeout(10*time.Second).Should(BeTrue(), "and on again")
	g.Expect(d.Send(ctx, bmc.CommandForceOff)).To(Succeed())
	g.Expect(sim.Power()).To(BeFalse())
	g.Expect(d.InsertMedia(ctx, "http://x/live.iso")).To(MatchError(bmc.ErrUnsupported))
	_, err = d.Inventory(ctx)
	g.Expect(err).To(MatchError(bmc.ErrUnsupported))
	g.Expect(d.Close(ctx)).To(Succeed())

	t.Log("a wrong password is told apart from a BMC that is not there")
	_, err = bmc.Open(ctx, a, "admin", "wrong", o)
	g.Expect(err).To(MatchError(bmc.ErrCredentials))
	gone, _ := bmc.ParseAddress("ipmi://127.0.0.1:9")
	start := time.Now()
	_, err = bmc.Open(ctx, gone, "admin", "password", o)
	g.Expect(err).To(MatchError(bmc.ErrUnreachable))
	g.Expect(time.Since(start)).To(BeNumerically("<", 5*time.Second), "without waiting for retries")
}

func TestClassifyIgnoresPorts(t *testing.T) {
	g := NewWithT(t)
	// An address with 401 in its port is not a refusal.
	a, _ := bmc.ParseAddress("redfish+http://127.0.0.1:40123" + redfish.SystemPath)
	_, err := bmc.Open(context.Background(), a, "admin", "password", bmc.Options{Timeout: 2 * time.Second})
	g.Expect(err).To(HaveOccurred())
	g.Expect(errors.Is(err, bmc.ErrCredentials)).To(BeFalse(), "%v", err)
}

// TestRedfishInventoryAsMostBMCsGiveIt: a BMC that lists its NICs only as the
// system's EthernetInterfaces (no NetworkInterfaces or NetworkAdapters, which
// bmclib's inventory reads) and has no serial number still yields NICs (name,
// MAC, speed, address), the hostname, and the vendor and model.
func TestRedfishInventoryAsMostBMCsGiveIt(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	hw := redfish.DefaultHardware("")
	hw.Manufacturer, hw.Model = "Acme", "R2"
	hw.NICs = append(hw.NICs, redfish.NIC{Name: "eno2", MAC: "52:54:00:00:00:02", SpeedMbps: 25000, IP: "192.0.2.12"})
	hw.HostName = "worker-2"
	b := redfish.Start(redfish.Options{EthernetInterfacesOnly: true, Hardware: hw})
	defer b.Close()
	d, err := bmc.Open(ctx, address(b), "admin", "password", bmc.Options{Timeout: 5 * time.Second})
	g.Expect(err).NotTo(HaveOccurred())
	defer d.Close(ctx)
	details, err := d.Inventory(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(details.NIC).To(Equal([]metal3api.NIC{
		{Name: "eno1", MAC: "52:54:00:00:00:01", SpeedGbps: 10},
		{Name: "eno2", MAC: "52:54:00:00:00:02", SpeedGbps: 25, IP: "192.0.2.12"},
	}))
	g.Expect(details.Hostname).To(Equal("worker-2"))
	g.Expect(details.SystemVendor).To(Equal(metal3api.HardwareSystemVendor{Manufacturer: "Acme", ProductName: "R2"}))
}

// TestCallsAreLogged: every BMC call is logged at V(1) by the context's
// logger (the reconciler's, which names the host) with the BMC, the action,
// its result and its duration.
func TestCallsAreLogged(t *testing.T) {
	g := NewWithT(t)
	b := redfish.Start(redfish.Options{})
	defer b.Close()
	var lines []string
	log := funcr.New(func(prefix, args string) { lines = append(lines, args) }, funcr.Options{Verbosity: 1})
	ctx := logr.NewContext(context.Background(), log.WithValues("BareMetalHost", "hosts/a"))
	d, err := bmc.Open(ctx, address(b), "admin", "password", bmc.Options{Timeout: 5 * time.Second})
	g.Expect(err).NotTo(HaveOccurred())
	defer d.Close(ctx)
	_, err = d.Power(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	b.SetFaults(redfish.Faults{Status: http.StatusConflict})
	g.Expect(d.Send(ctx, bmc.CommandOn)).NotTo(Succeed())
	g.Expect(lines).To(ContainElements(
		And(ContainSubstring(`"BareMetalHost"="hosts/a"`), ContainSubstring(`"bmc"="redfish://`+b.HostPort()+`"`),
			ContainSubstring(`"action"="get power"`), ContainSubstring(`"result"="ok"`), ContainSubstring(`"duration"=`)),
		And(ContainSubstring(`"action"="power On"`), ContainSubstring(`"result"="power On on `), ContainSubstring("409"))))
}

// TestRedfishKeepsItsConnection: an inspection and a provisioning, then
// the next session's power read, take one connection (one TLS handshake)
// and no Redfish session.
func TestRedfishKeepsItsConnection(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	iso := redfish.ImageServer()
	defer iso.Close()
	b := redfish.Start(redfish.Options{TLS: true})
	defer b.Close()
	o := bmc.Options{Timeout: 5 * time.Second, InsecureSkipVerify: true}
	d, err := bmc.Open(ctx, address(b), "admin", "password", o)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = d.Power(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	hw, err := d.Inventory(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(hw.CPU).To(Equal(metal3api.CPU{Arch: "x86_64", Model: "Emulated CPU @ 2.4GHz", ClockMegahertz: 2400, Count: 32}))
	g.Expect(hw.Storage).To(Equal([]metal3api.Storage{{Name: "sda", Model: "Emulated Disk", SerialNumber: "EMU0001-sda", SizeBytes: 480 << 30}}))
	g.Expect(hw.Firmware.BIOS.Version).To(Equal("1.2.3"))
	g.Expect(d.InsertMedia(ctx, iso.URL+"/live.iso")).To(Succeed())
	g.Expect(d.InsertMedia(ctx, iso.URL+"/live.iso")).To(Succeed(), "what is in is ejected first")
	g.Expect(d.SetBootOnce(ctx, bmc.BootCDROM)).To(Succeed())
	g.Expect(d.Send(ctx, bmc.CommandOn)).To(Succeed())
	g.Expect(d.Close(ctx)).To(Succeed())
	d, err = bmc.Open(ctx, address(b), "admin", "password", o)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(d.Power(ctx)).To(Equal(bmc.PowerOn))
	g.Expect(d.EjectMedia(ctx)).To(Succeed())
	g.Expect(d.Close(ctx)).To(Succeed())

	g.Expect(b.Actions()).To(Equal([]string{"InsertMedia " + iso.URL + "/live.iso", "EjectMedia", "InsertMedia " + iso.URL + "/live.iso",
		"PATCH Boot Once/Cd", "Reset On", "EjectMedia"}))
	conns, requests := b.Traffic()
	g.Expect(conns).To(Equal(int64(1)), "every request on one connection")
	g.Expect(requests).To(BeNumerically("<=", 30), "no Redfish session created or deleted")
}

// TestRedfishWithoutVirtualMedia: a BMC without virtual media refuses an
// insert as unsupported and has nothing to eject.
func TestRedfishWithoutVirtualMedia(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	b := redfish.Start(redfish.Options{NoVirtualMedia: true})
	defer b.Close()
	d, err := bmc.Open(ctx, address(b), "admin", "password", bmc.Options{Timeout: 5 * time.Second})
	g.Expect(err).NotTo(HaveOccurred())
	defer d.Close(ctx)
	g.Expect(d.InsertMedia(ctx, "http://images/live.iso")).To(MatchError(bmc.ErrUnsupported))
	g.Expect(d.EjectMedia(ctx)).To(Succeed())
}
