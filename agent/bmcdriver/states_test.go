package bmcdriver

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hostfleet/hostfleet/agent/bmc"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// scriptedBMC is a BMC whose answers a test sets, recording what it was
// asked: the state handlers' unit tests run with it, no emulator. (Their
// BMC conversations with real protocols are the emulator tests':
// lifecycle_test.go, slow_test.go, agent/bmc.)
type scriptedBMC struct {
	power            bmc.PowerState
	powerErr         error
	inventory        *metal3api.HardwareDetails
	inventoryErr     error
	mediaErr         error
	sent             []bmc.Command
	inserted, ejects int
}

func (b *scriptedBMC) Power(context.Context) (bmc.PowerState, error) { return b.power, b.powerErr }
func (b *scriptedBMC) Send(_ context.Context, c bmc.Command) error {
	b.sent = append(b.sent, c)
	return nil
}
func (b *scriptedBMC) SetBootOnce(context.Context, bmc.BootDevice) error { return nil }
func (b *scriptedBMC) InsertMedia(context.Context, string) error {
	b.inserted++
	return b.mediaErr
}
func (b *scriptedBMC) EjectMedia(context.Context) error {
	b.ejects++
	return b.mediaErr
}
func (b *scriptedBMC) Inventory(context.Context) (*metal3api.HardwareDetails, error) {
	return b.inventory, b.inventoryErr
}
func (b *scriptedBMC) Close(context.Context) error { return nil }

func hostIn(state metal3api.ProvisioningState, mut ...func(*metal3api.BareMetalHost)) *metal3api.BareMetalHost {
	h := &metal3api.BareMetalHost{ObjectMeta: metav1.ObjectMeta{Namespace: "hosts", Name: "h0", Annotations: map[string]string{}},
		Spec: metal3api.BareMetalHostSpec{BMC: metal3api.BMCDetails{Address: "redfish://10.0.0.1/redfish/v1/Systems/1"}}}
	h.Status.Provisioning.State = state
	for _, m := range mut {
		m(h)
	}
	return h
}

// TestStateHandlers: each provisioning state's handler, one step, against
// a scripted BMC: where the host goes next, what the BMC is asked, and the
// outcome (go on, wait, or the host's error).
func TestStateHandlers(t *testing.T) {
	image := func(h *metal3api.BareMetalHost) {
		h.Spec.Image = &metal3api.Image{URL: "http://images/live.iso", DiskFormat: ptrTo("live-iso")}
		h.Spec.ConsumerRef = &corev1.ObjectReference{APIVersion: "metal3.io/v1alpha1", Kind: "HostClaim", Namespace: "hf-a", Name: "c"}
	}
	eraseFull := func(h *metal3api.BareMetalHost) {
		h.Annotations[hostfleetv1alpha1.AnnotationErase] = string(hostfleetv1alpha1.EraseFull)
	}
	quarantined := func(h *metal3api.BareMetalHost) {
		h.Annotations[hostfleetv1alpha1.AnnotationQuarantined] = `{"reason":"HealthCritical"}`
	}
	for _, tt := range []struct {
		name      string
		host      *metal3api.BareMetalHost
		bmc       *scriptedBMC
		wantState metal3api.ProvisioningState
		wantNext  bool
		wantErr   metal3api.ErrorType
		wantSent  []bmc.Command
		wantEject int
		// wantInsert: media insertions asked of the BMC.
		wantInsert int
	}{
		{name: "registering: the BMC answers, the host is inspected next", host: hostIn(metal3api.StateRegistering),
			bmc: &scriptedBMC{power: bmc.PowerOff}, wantState: metal3api.StateInspecting, wantNext: true},
		{name: "registering with inspection disabled: available next",
			host: hostIn(metal3api.StateNone, func(h *metal3api.BareMetalHost) { h.Annotations[metal3api.InspectAnnotationPrefix] = "disabled" }),
			bmc:  &scriptedBMC{power: bmc.PowerOn}, wantState: metal3api.StateAvailable, wantNext: true},
		{name: "registering: a BMC that does not answer is a registration error", host: hostIn(metal3api.StateRegistering),
			bmc: &scriptedBMC{powerErr: errors.New("connection refused")}, wantState: metal3api.StateRegistering, wantErr: metal3api.RegistrationError},
		{name: "inspecting an IPMI host: no inventory, available anyway", host: hostIn(metal3api.StateInspecting),
			bmc: &scriptedBMC{inventoryErr: bmc.ErrUnsupported}, wantState: metal3api.StateAvailable, wantNext: true},
		{name: "inspecting: a failed inventory is an inspection error", host: hostIn(metal3api.StateInspecting),
			bmc: &scriptedBMC{inventoryErr: errors.New("500")}, wantState: metal3api.StateInspecting, wantErr: metal3api.InspectionError},
		{name: "available with an image and a consumer: provisioning next", host: hostIn(metal3api.StateAvailable, image),
			bmc: &scriptedBMC{power: bmc.PowerOff}, wantState: metal3api.StateProvisioning, wantNext: true},
		{name: "available with a disk image: refused, the agent boots live ISOs only",
			host: hostIn(metal3api.StateAvailable, image, func(h *metal3api.BareMetalHost) { h.Spec.Image.DiskFormat = ptrTo("qcow2") }),
			bmc:  &scriptedBMC{power: bmc.PowerOff}, wantState: metal3api.StateAvailable, wantErr: metal3api.ProvisioningError},
		{name: "available, off as spec.online says: nothing sent", host: hostIn(metal3api.StateAvailable),
			bmc: &scriptedBMC{power: bmc.PowerOff}, wantState: metal3api.StateAvailable},
		{name: "available, a re-inspection asked: inspecting next",
			host: hostIn(metal3api.StateAvailable, func(h *metal3api.BareMetalHost) { h.Annotations[metal3api.InspectAnnotationPrefix] = "" }),
			bmc:  &scriptedBMC{power: bmc.PowerOff}, wantState: metal3api.StateInspecting, wantNext: true},
		{name: "provisioning without an image any more: deprovisioning next", host: hostIn(metal3api.StateProvisioning),
			bmc: &scriptedBMC{power: bmc.PowerOn}, wantState: metal3api.StateDeprovisioning, wantNext: true},
		{name: "provisioning: virtual media refused is a provisioning error", host: hostIn(metal3api.StateProvisioning, image),
			bmc: &scriptedBMC{power: bmc.PowerOff, mediaErr: errors.New("no virtual media")}, wantState: metal3api.StateProvisioning,
			wantErr: metal3api.ProvisioningError, wantInsert: 1},
		{name: "provisioning with online false (a fence): the ISO inserted, never powered on, provisioned", host: hostIn(metal3api.StateProvisioning, image),
			bmc: &scriptedBMC{power: bmc.PowerOff}, wantState: metal3api.StateProvisioned, wantNext: true, wantInsert: 1},
		{name: "provisioned, the consumer let go: deprovisioning next", host: hostIn(metal3api.StateProvisioned),
			bmc: &scriptedBMC{power: bmc.PowerOn}, wantState: metal3api.StateDeprovisioning, wantNext: true},
		{name: "deprovisioning, the BMC reports the host off: media ejected, available next", host: hostIn(metal3api.StateDeprovisioning),
			bmc: &scriptedBMC{power: bmc.PowerOff}, wantState: metal3api.StateAvailable, wantNext: true, wantEject: 1},
		{name: "deprovisioning a quarantined host its claim's tenant erases: off and ejected, available next, no erase",
			host: hostIn(metal3api.StateDeprovisioning, eraseFull, quarantined),
			bmc:  &scriptedBMC{power: bmc.PowerOff}, wantState: metal3api.StateAvailable, wantNext: true, wantEject: 1},
		{name: "available and quarantined, an erase pending: kept off, nothing inserted", host: hostIn(metal3api.StateAvailable, eraseFull, quarantined),
			bmc: &scriptedBMC{power: bmc.PowerOff}, wantState: metal3api.StateAvailable},
		{name: "available, returned from quarantine with an erase pending: deprovisioning (the erase) next", host: hostIn(metal3api.StateAvailable, eraseFull),
			bmc: &scriptedBMC{power: bmc.PowerOff}, wantState: metal3api.StateDeprovisioning, wantNext: true},
		{name: "an unknown state is the host's error", host: hostIn(metal3api.StateExternallyProvisioned),
			bmc: &scriptedBMC{power: bmc.PowerOn}, wantState: metal3api.StateExternallyProvisioned, wantErr: metal3api.PowerManagementError},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			x := &run{Reconciler: &Reconciler{Poll: 60e9, Power: DefaultTiming}, host: tt.host, stored: tt.host.DeepCopy(), d: tt.bmc}
			o := x.step(context.Background())
			g.Expect(tt.host.Status.Provisioning.State).To(Equal(tt.wantState))
			g.Expect(o.proceed).To(Equal(tt.wantNext), "%+v", o)
			if tt.wantErr == "" {
				g.Expect(o.err).To(BeNil())
			} else {
				g.Expect(o.err).To(HaveField("Kind", tt.wantErr))
				g.Expect(o.err.Msg).NotTo(BeEmpty())
			}
			g.Expect(tt.bmc.sent).To(Equal(tt.wantSent))
			g.Expect(tt.bmc.ejects).To(Equal(tt.wantEject))
			g.Expect(tt.bmc.inserted).To(Equal(tt.wantInsert))
		})
	}
}

func ptrTo[T any](v T) *T { return &v }

// TestEqualStatus: what the BMC reported last of a change under way is no
// reason to write; the change itself, and anything else, is.
func TestEqualStatus(t *testing.T) {
	at := metav1.NewMicroTime(metav1.Now().Time)
	on := &Change{Target: TargetOn, Command: bmc.CommandOn, Sent: 1, SentAt: at, Since: at}
	with := func(c *Change, s bmc.PowerState, powered bool) *metal3api.BareMetalHost {
		h := &metal3api.BareMetalHost{}
		h.Status.PoweredOn = powered
		h.Status.Conditions = []metav1.Condition{PowerCondition(c, s, 1)}
		return h
	}
	resent := *on
	resent.Sent = 2
	readBack := func(h *metal3api.BareMetalHost) *metal3api.BareMetalHost {
		data, err := json.Marshal(h)
		NewWithT(t).Expect(err).NotTo(HaveOccurred())
		out := &metal3api.BareMetalHost{}
		NewWithT(t).Expect(json.Unmarshal(data, out)).To(Succeed())
		return out
	}
	for _, tt := range []struct {
		name  string
		a, b  *metal3api.BareMetalHost
		equal bool
	}{
		{name: "Off, then PoweringOn read during the change", a: with(on, bmc.PowerOff, false), b: with(on, bmc.PoweringOn, false), equal: true},
		{name: "the command sent again", a: with(on, bmc.PoweringOn, false), b: with(&resent, bmc.PoweringOn, false)},
		{name: "the change landed", a: with(on, bmc.PoweringOn, false), b: with(nil, bmc.PowerOn, true)},
		{name: "settled, read again", a: with(nil, bmc.PowerOn, true), b: with(nil, bmc.PowerOn, true), equal: true},
		{name: "as the API server gave it back (times in the local zone)", a: readBack(with(on, bmc.PowerOff, false)), b: with(on, bmc.PowerOff, false), equal: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(equalStatus(tt.a, tt.b)).To(Equal(tt.equal))
		})
	}
}
