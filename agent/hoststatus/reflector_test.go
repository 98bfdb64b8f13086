package hoststatus

import (
	"testing"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

func TestConditions(t *testing.T) {
	img := &metal3api.Image{URL: "http://img/os.qcow2"}
	claim := func(image *metal3api.Image, on bool) *metal3api.HostClaim {
		return &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "t", Name: "c", Generation: 3},
			Spec: metal3api.HostClaimSpec{Image: image, PoweredOn: on}}
	}
	host := func(state metal3api.ProvisioningState, on bool, mut ...func(*metal3api.BareMetalHost)) *metal3api.BareMetalHost {
		h := &metal3api.BareMetalHost{ObjectMeta: metav1.ObjectMeta{Namespace: "hosts", Name: "h"}}
		h.Status.Provisioning.State = state
		h.Status.PoweredOn = on
		h.Status.OperationalStatus = metal3api.OperationalStatusOK
		for _, m := range mut {
			m(h)
		}
		return h
	}
	withImage := func(h *metal3api.BareMetalHost) { h.Status.Provisioning.Image = *img }
	inError := func(t metal3api.ErrorType) func(*metal3api.BareMetalHost) {
		return func(h *metal3api.BareMetalHost) {
			h.Status.ErrorType = t
			h.Status.ErrorMessage = "Failed to get power state for node 1: ipmi://10.0.0.7:623 password incorrect"
			h.Status.OperationalStatus = metal3api.OperationalStatusError
		}
	}
	changing := func(h *metal3api.BareMetalHost) {
		h.Status.Conditions = []metav1.Condition{{Type: hostfleetv1alpha1.ConditionPowerChanging, Status: metav1.ConditionTrue,
			Reason: hostfleetv1alpha1.ReasonPoweringOff, Message: "powering off since 2026-11-22T10:00:00.000Z: GracefulShutdown sent once, last at 2026-11-22T10:00:00.000Z; the BMC reports On"}}
	}
	poweringOn := func(h *metal3api.BareMetalHost) {
		h.Status.Conditions = []metav1.Condition{{Type: hostfleetv1alpha1.ConditionPowerChanging, Status: metav1.ConditionTrue,
			Reason: hostfleetv1alpha1.ReasonPoweringOn, Message: "powering on since 2026-11-22T10:00:00.000Z: On sent once, last at 2026-11-22T10:00:00.000Z; the BMC reports Off"}}
	}
	ok := Sync{OK: true}

	tests := []struct {
		name        string
		claim       *metal3api.HostClaim
		host        *metal3api.BareMetalHost
		sync        Sync
		ready       bool
		readyReason string
		provReason  string
		availReason string
	}{
		{name: "no image, available, off: ready", claim: claim(nil, false), host: host(metal3api.StateAvailable, false), sync: ok,
			ready: true, readyReason: hostfleetv1alpha1.ReasonReady, provReason: hostfleetv1alpha1.ReasonNoWorkload, availReason: hostfleetv1alpha1.ReasonHostAvailable},
		{name: "no image, power on pending", claim: claim(nil, true), host: host(metal3api.StateAvailable, false), sync: ok,
			readyReason: hostfleetv1alpha1.ReasonPowerPending, provReason: hostfleetv1alpha1.ReasonNoWorkload, availReason: hostfleetv1alpha1.ReasonHostAvailable},
		{name: "image, provisioning", claim: claim(img, true), host: host(metal3api.StateProvisioning, false), sync: ok,
			readyReason: hostfleetv1alpha1.ReasonProvisioning, provReason: hostfleetv1alpha1.ReasonProvisioning, availReason: hostfleetv1alpha1.ReasonHostAvailable},
		{name: "image, provisioning while the BMC powers the host on (a live ISO): Ready says the power change", claim: claim(img, true),
			host: host(metal3api.StateProvisioning, false, poweringOn), sync: ok,
			readyReason: hostfleetv1alpha1.ReasonPowerChanging, provReason: hostfleetv1alpha1.ReasonProvisioning, availReason: hostfleetv1alpha1.ReasonHostAvailable},
		{name: "image, provisioned, on: ready", claim: claim(img, true), host: host(metal3api.StateProvisioned, true, withImage), sync: ok,
			ready: true, readyReason: hostfleetv1alpha1.ReasonReady, provReason: hostfleetv1alpha1.ReasonProvisioned, availReason: hostfleetv1alpha1.ReasonHostAvailable},
		{name: "image changed: deprovisioning first", claim: claim(&metal3api.Image{URL: "http://img/new.qcow2"}, true),
			host: host(metal3api.StateProvisioned, true, withImage), sync: ok,
			readyReason: hostfleetv1alpha1.ReasonDeprovisioning, provReason: hostfleetv1alpha1.ReasonDeprovisioning, availReason: hostfleetv1alpha1.ReasonHostAvailable},
		{name: "image but powered off: not provisioned", claim: claim(img, false), host: host(metal3api.StateAvailable, false), sync: ok,
			readyReason: hostfleetv1alpha1.ReasonPowerPending, provReason: hostfleetv1alpha1.ReasonPowerPending, availReason: hostfleetv1alpha1.ReasonHostAvailable},
		{name: "sync failure wins", claim: claim(img, true), host: host(metal3api.StateProvisioned, true, withImage),
			sync:        Sync{Reason: metal3api.BadUserDataSecretReason, Message: "secret tenant-a/ud not found"},
			readyReason: metal3api.BadUserDataSecretReason, provReason: hostfleetv1alpha1.ReasonProvisioned, availReason: hostfleetv1alpha1.ReasonHostAvailable},
		{name: "provisioning error", claim: claim(img, true), host: host(metal3api.StateProvisioning, false, inError(metal3api.ProvisioningError)), sync: ok,
			readyReason: hostfleetv1alpha1.ReasonHostError, provReason: hostfleetv1alpha1.ReasonHostError, availReason: hostfleetv1alpha1.ReasonHostError},
		{name: "registration error", claim: claim(nil, false), host: host(metal3api.StateAvailable, false, inError(metal3api.RegistrationError)), sync: ok,
			readyReason: hostfleetv1alpha1.ReasonHostError, provReason: hostfleetv1alpha1.ReasonNoWorkload, availReason: hostfleetv1alpha1.ReasonHostError},
		{name: "power off under way, host still reported on: not ready", claim: claim(img, true), host: host(metal3api.StateProvisioned, true, withImage, changing), sync: ok,
			readyReason: hostfleetv1alpha1.ReasonPowerChanging, provReason: hostfleetv1alpha1.ReasonProvisioned, availReason: hostfleetv1alpha1.ReasonHostAvailable},
		{name: "provisioned, then the BMC refuses its credentials: the error, not the power", claim: claim(img, false),
			host: host(metal3api.StateProvisioned, true, withImage, changing, inError(metal3api.PowerManagementError)), sync: ok,
			readyReason: hostfleetv1alpha1.ReasonHostError, provReason: hostfleetv1alpha1.ReasonProvisioned, availReason: hostfleetv1alpha1.ReasonHostError},
		{name: "provisioned, registration error: the error", claim: claim(img, true),
			host: host(metal3api.StateProvisioned, true, withImage, inError(metal3api.RegistrationError)), sync: ok,
			readyReason: hostfleetv1alpha1.ReasonHostError, provReason: hostfleetv1alpha1.ReasonProvisioned, availReason: hostfleetv1alpha1.ReasonHostError},
		{name: "image removed, host not yet deprovisioned: not ready on the old system", claim: claim(nil, true),
			host: host(metal3api.StateProvisioned, true, withImage), sync: ok,
			readyReason: hostfleetv1alpha1.ReasonDeprovisioning, provReason: hostfleetv1alpha1.ReasonNoWorkload, availReason: hostfleetv1alpha1.ReasonDeprovisioning},
		{name: "deprovisioning", claim: claim(nil, false), host: host(metal3api.StateDeprovisioning, false), sync: ok,
			readyReason: hostfleetv1alpha1.ReasonDeprovisioning, provReason: hostfleetv1alpha1.ReasonNoWorkload, availReason: hostfleetv1alpha1.ReasonDeprovisioning},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			conds := Conditions(tt.claim, tt.host, tt.sync)
			ready := meta.FindStatusCondition(conds, hostfleetv1alpha1.ConditionReady)
			g.Expect(ready).NotTo(BeNil())
			g.Expect(ready.Status == metav1.ConditionTrue).To(Equal(tt.ready), ready.Message)
			g.Expect(ready.Reason).To(Equal(tt.readyReason), ready.Message)
			if tt.readyReason == hostfleetv1alpha1.ReasonPowerChanging {
				g.Expect(ready.Message).To(ContainSubstring("since 2026-11-22T10:00:00.000Z"), "what was sent, and since when")
			}
			g.Expect(meta.FindStatusCondition(conds, hostfleetv1alpha1.ConditionProvisioned).Reason).To(Equal(tt.provReason))
			g.Expect(meta.FindStatusCondition(conds, hostfleetv1alpha1.ConditionAvailableForProvisioning).Reason).To(Equal(tt.availReason))
			for _, c := range conds {
				g.Expect(c.ObservedGeneration).To(Equal(int64(3)))
				g.Expect(c.Message).NotTo(BeEmpty())
				g.Expect(c.Message).NotTo(ContainSubstring("ipmi://"), "BMC details never reach the hub")
				g.Expect(c.Message).NotTo(ContainSubstring("10.0.0.7"))
			}
		})
	}
}

func TestNotBound(t *testing.T) {
	g := NewWithT(t)
	c := &metal3api.HostClaim{}
	meta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{Type: hostfleetv1alpha1.ConditionAssociated,
		Status: metav1.ConditionFalse, Reason: "NoBareMetalHostAvailable", Message: "no free BareMetalHost matches"})
	conds := Conditions(c, nil, Sync{})
	g.Expect(conds).To(HaveLen(1))
	g.Expect(conds[0].Type).To(Equal(hostfleetv1alpha1.ConditionReady))
	g.Expect(conds[0].Message).To(Equal("no free BareMetalHost matches"))
}
