package bmc_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/hostfleet/hostfleet/agent/bmc"
	"github.com/hostfleet/hostfleet/e2e/emulators/ipmisim"
	"github.com/hostfleet/hostfleet/e2e/emulators/lanplus"
	"github.com/hostfleet/hostfleet/e2e/emulators/redfish"
)

// TestFirmware: the driver reads a host's firmware out of band, named as
// baremetal-operator's HostFirmwareComponents: on Redfish the BIOS, the
// BMC and the NIC from the system, its manager and the FirmwareInventory,
// and what a tenant flashed in-band is read back; on IPMI the BMC's
// revision from Get Device ID, of OpenIPMI's simulator and of the
// project's IPMI 2.0 emulator alike.
func TestFirmware(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	read := func(d bmc.Driver) map[string]string {
		fr, ok := d.(bmc.FirmwareReader)
		g.ExpectWithOffset(1, ok).To(BeTrue())
		fw, err := fr.Firmware(ctx)
		g.ExpectWithOffset(1, err).NotTo(HaveOccurred())
		return fw
	}

	b := redfish.Start(redfish.Options{})
	defer b.Close()
	d, err := bmc.Open(ctx, address(b), b.Username, b.Password, bmc.Options{Timeout: 10 * time.Second})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(read(d)).To(Equal(map[string]string{"bios": "1.2.3", "bmc": "1.0.0", "nic:NIC.1": "22.31.6"}))
	g.Expect(b.FlashInBand("BIOS", "0.9.0")).To(Succeed())
	g.Expect(b.FlashInBand("NIC.1", "20.0.0")).To(Succeed())
	g.Expect(read(d)).To(Equal(map[string]string{"bios": "0.9.0", "bmc": "1.0.0", "nic:NIC.1": "20.0.0"}))

	sim, err := ipmisim.Start(t.TempDir(), "admin", "password")
	g.Expect(err).NotTo(HaveOccurred())
	defer sim.Close()
	a, err := bmc.ParseAddress("ipmi://" + sim.Address())
	g.Expect(err).NotTo(HaveOccurred())
	d, err = bmc.Open(ctx, a, "admin", "password", bmc.Options{Timeout: 30 * time.Second})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(read(d)).To(Equal(map[string]string{"bmc": "9.08"}), "the revision OpenIPMI's simulator is configured with")
	g.Expect(d.Close(ctx)).To(Succeed())

	lp, err := lanplus.Start("admin", "secret")
	g.Expect(err).NotTo(HaveOccurred())
	defer lp.Close()
	a, err = bmc.ParseAddress("ipmi://" + lp.Address())
	g.Expect(err).NotTo(HaveOccurred())
	d, err = bmc.Open(ctx, a, "admin", "secret", bmc.Options{Timeout: 10 * time.Second})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(read(d)).To(Equal(map[string]string{"bmc": "1.00"}))
	lp.FlashInBand(2, 5)
	g.Expect(read(d)).To(Equal(map[string]string{"bmc": "2.05"}))
	g.Expect(d.Close(ctx)).To(Succeed())
}

// TestComponentName: FirmwareInventory members as vendors name them.
func TestComponentName(t *testing.T) {
	for _, tc := range []struct{ id, name, want string }{
		{"BIOS", "BIOS", "bios"},
		{"Installed-0-2.19.1", "BIOS", "bios"},
		{"UEFI", "System ROM", "bios"},
		{"BMC", "BMC Firmware", "bmc"},
		{"iDRAC.Embedded.1", "Integrated Remote Access Controller", "bmc"},
		{"NIC.1", "Ethernet Controller eno1", "nic:NIC.1"},
		{"NIC.Slot.2-1", "Intel(R) Ethernet 25G 2P E810-XXV Adapter", "nic:NIC.Slot.2-1"},
		{"Disk.Bay.0", "PM893 SSD", ""},
		{"PSU.Slot.1", "Power Supply", ""},
	} {
		if got := bmc.ComponentName(tc.id, tc.name); got != tc.want {
			t.Errorf("ComponentName(%q, %q) = %q, want %q", tc.id, tc.name, got, tc.want)
		}
	}
}

// TestRestore: on Redfish the driver reads the BIOS attributes and the
// enabled accounts, stages BIOS settings for the next boot, removes an
// account, and flashes a component through SimpleUpdate, following its
// task to the end: done, or failed with the BMC's message.
func TestRestore(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	images := redfish.ImageServer()
	defer images.Close()
	b := redfish.Start(redfish.Options{UpdateTime: time.Hour})
	defer b.Close()
	d, err := bmc.Open(ctx, address(b), b.Username, b.Password, bmc.Options{Timeout: 10 * time.Second})
	g.Expect(err).NotTo(HaveOccurred())
	defer d.Close(ctx)
	r, ok := d.(bmc.Restorer)
	g.Expect(ok).To(BeTrue())

	b.SetBIOSInBand("SecureBoot", "Disabled")
	b.AddAccountInBand("ghost", "boo")
	bios, err := r.BIOS(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(bios).To(HaveKeyWithValue("SecureBoot", "Disabled"))
	g.Expect(r.Accounts(ctx)).To(ConsistOf("admin", "ghost"))

	g.Expect(r.StageBIOS(ctx, map[string]string{"SecureBoot": "Enabled"})).To(Succeed())
	_, pending := b.BIOS()
	g.Expect(pending).To(Equal(map[string]string{"SecureBoot": "Enabled"}), "staged for the next boot")
	g.Expect(r.RemoveAccount(ctx, "ghost")).To(Succeed())
	g.Expect(r.RemoveAccount(ctx, "ghost")).To(Succeed(), "already gone")
	g.Expect(b.Accounts()).To(Equal([]string{"admin"}))

	task, err := r.Flash(ctx, "bios", images.URL+"/firmware/bios-2.0.0")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(r.Task(ctx, task)).To(HaveField("Done", false))
	b.FinishUpdates()
	g.Expect(r.Task(ctx, task)).To(Equal(bmc.TaskState{Done: true, Message: "BIOS updated to 2.0.0"}))
	g.Expect(r.Firmware(ctx)).To(HaveKeyWithValue("bios", "2.0.0"))

	task, err = r.Flash(ctx, "nic:NIC.1", images.URL+"/live.iso")
	g.Expect(err).NotTo(HaveOccurred())
	b.FinishUpdates()
	g.Expect(r.Task(ctx, task)).To(Equal(bmc.TaskState{Done: true, Failed: true, Message: "the image is not firmware for NIC.1"}))
	_, err = r.Flash(ctx, "nic:NIC.9", images.URL+"/firmware/x")
	g.Expect(err).To(MatchError(ContainSubstring("no member for nic:NIC.9")))
}

// TestRestoreIPMI: on IPMI the driver lists the BMC's enabled users and
// disables those a tenant added in-band (IPMI deletes none), never its own;
// BIOS settings and updates are not IPMI's to read or make. OpenIPMI's
// simulator answers the same user commands.
func TestRestoreIPMI(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	lp, err := lanplus.Start("admin", "secret")
	g.Expect(err).NotTo(HaveOccurred())
	defer lp.Close()
	a, err := bmc.ParseAddress("ipmi://" + lp.Address())
	g.Expect(err).NotTo(HaveOccurred())
	d, err := bmc.Open(ctx, a, "admin", "secret", bmc.Options{Timeout: 10 * time.Second})
	g.Expect(err).NotTo(HaveOccurred())
	defer d.Close(ctx)
	r, ok := d.(bmc.Restorer)
	g.Expect(ok).To(BeTrue())
	g.Expect(r.Accounts(ctx)).To(Equal([]string{"admin"}))

	lp.SetUserInBand(lanplus.User{ID: 5, Name: "ghost", Password: "boo", Enabled: true, Privilege: 4})
	lp.SetUserInBand(lanplus.User{ID: 7, Password: "nameless", Enabled: true, Privilege: 4})
	lp.SetUserInBand(lanplus.User{ID: 8, Name: "old", Enabled: false, Privilege: 4})
	g.Expect(r.Accounts(ctx)).To(Equal([]string{"admin", "ghost", "#7"}), "a disabled user is no account; one without a name is named by its ID")
	g.Expect(r.RemoveAccount(ctx, "ghost")).To(Succeed())
	g.Expect(r.RemoveAccount(ctx, "#7")).To(Succeed())
	g.Expect(r.RemoveAccount(ctx, "ghost")).To(Succeed(), "already disabled")
	g.Expect(r.RemoveAccount(ctx, "admin")).To(MatchError(ContainSubstring("the one the agent logs in with")))
	g.Expect(r.Accounts(ctx)).To(Equal([]string{"admin"}))
	g.Expect(lp.Users()).To(ContainElement(lanplus.User{ID: 5, Name: "ghost", Password: "boo", Enabled: false, Privilege: 4}))
	_, err = bmc.Open(ctx, a, "ghost", "boo", bmc.Options{Timeout: 5 * time.Second})
	g.Expect(err).To(MatchError(bmc.ErrCredentials), "a disabled user no longer logs in")

	_, err = r.BIOS(ctx)
	g.Expect(err).To(MatchError(bmc.ErrUnsupported))
	g.Expect(r.StageBIOS(ctx, map[string]string{"SecureBoot": "Enabled"})).To(MatchError(bmc.ErrUnsupported))
	_, err = r.Flash(ctx, "bmc", "http://images/bmc-2.0")
	g.Expect(err).To(MatchError(bmc.ErrUnsupported))

	sim, err := ipmisim.Start(t.TempDir(), "admin", "password")
	g.Expect(err).NotTo(HaveOccurred())
	defer sim.Close()
	a, err = bmc.ParseAddress("ipmi://" + sim.Address())
	g.Expect(err).NotTo(HaveOccurred())
	d, err = bmc.Open(ctx, a, "admin", "password", bmc.Options{Timeout: 30 * time.Second})
	g.Expect(err).NotTo(HaveOccurred())
	defer d.Close(ctx)
	g.Expect(d.(bmc.Restorer).Accounts(ctx)).To(ContainElement("admin"))
}
