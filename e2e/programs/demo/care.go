package demo

import (
	"context"
	"fmt"
	"strings"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/agent/bmcdriver"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// care shows a maintenance window and an erase (docs/service.md): an
// Enforced HostMaintenance of server-0 asks edge-1 and releases it at its
// deadline; server-0 erases itself (the erase image by virtual media)
// before it is in maintenance; completing the maintenance returns it.
func (r *run) care(ctx context.Context) error {
	deadline := time.Now().Add(12 * time.Second).Truncate(time.Second)
	m := &hostfleetv1alpha1.HostMaintenance{ObjectMeta: metav1.ObjectMeta{Namespace: edge, Name: "firmware-edge"},
		Spec: hostfleetv1alpha1.HostMaintenanceSpec{HostSelector: metav1.LabelSelector{MatchLabels: map[string]string{"example.com/size": "medium"}},
			Policy: hostfleetv1alpha1.MaintenanceEnforced, Deadline: metav1.NewTime(deadline), Reason: "BMC firmware 2.14"}}
	if err := r.hub.Create(ctx, m); err != nil {
		return fmt.Errorf("create HostMaintenance: %w", err)
	}
	r.say("")
	r.say("HostMaintenance %s/%s (Enforced, deadline in 12 s, %q) takes infra-3's medium host, server-0, out of service:", edge, m.Name, m.Spec.Reason)
	if err := r.tenantLeavesSomething(ctx); err != nil {
		return err
	}
	c := &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-acme", Name: "edge-1"}}
	if err := r.waitClaim(ctx, c, func(c *metal3api.HostClaim) bool {
		return c != nil && meta.IsStatusConditionTrue(c.Status.Conditions, hostfleetv1alpha1.ConditionMaintenanceRequested)
	}); err != nil {
		return fmt.Errorf("edge-1 not asked: %w", err)
	}
	asked := meta.FindStatusCondition(c.Status.Conditions, hostfleetv1alpha1.ConditionMaintenanceRequested)
	r.say("  edge-1: MaintenanceRequested=True %s:\n  %q", asked.Reason, asked.Message)
	if err := r.waitClaim(ctx, c, func(c *metal3api.HostClaim) bool { return c == nil }); err != nil {
		return fmt.Errorf("edge-1 not released at the deadline: %w", err)
	}
	r.say("  at the deadline the hub released edge-1 (hostfleet.io/released-by: %s); deprovisioned, it was gone %s later",
		c.Annotations[hostfleetv1alpha1.AnnotationReleasedBy], time.Since(deadline).Round(100*time.Millisecond))
	infra := r.f.Plane(edge).Client
	var erased, restored *metav1.Condition
	if err := poll(ctx, r.o.Timeout, func() (bool, error) {
		if err := r.hub.Get(ctx, client.ObjectKeyFromObject(m), m); err != nil {
			return false, err
		}
		h := &metal3api.BareMetalHost{}
		if err := infra.Get(ctx, client.ObjectKey{Namespace: "hosts", Name: "server-0"}, h); err != nil {
			return false, err
		}
		erased = meta.FindStatusCondition(h.Status.Conditions, bmcdriver.ConditionErasing)
		restored = meta.FindStatusCondition(h.Status.Conditions, bmcdriver.ConditionBaseline)
		return m.Status.InMaintenance == 1 && erased != nil && erased.Reason == bmcdriver.ReasonErased &&
			restored != nil && restored.Reason == bmcdriver.ReasonBaselineCurrent, nil
	}); err != nil {
		return fmt.Errorf("server-0 not erased, restored and in maintenance: %w", err)
	}
	var media []string
	for _, a := range r.rf.Actions() {
		if strings.Contains(a, "erase") || strings.HasPrefix(a, "Erased") {
			media = append(media, a)
		}
	}
	r.say("  server-0 erased itself first (tenant acme erases Metadata): %s; its BMC: %v", erased.Message, media)
	var restore []string
	for _, a := range r.rf.Actions() {
		if strings.HasPrefix(a, "Account ghost") || strings.Contains(a, "BIOS") {
			restore = append(restore, a)
		}
	}
	current, _ := r.rf.BIOS()
	r.say("  then the release gate found and undid what the tenant left (FirmwareBaseline=True %s):\n  %q", restored.Reason, restored.Message)
	r.say("  its BMC: %v; accounts now %v, SecureBoot %s", restore, r.rf.Accounts(), current["SecureBoot"])
	r.say("  the maintenance lists it %s: free, and out of the pool", m.Status.Hosts[0].State)
	if err := r.hub.Patch(ctx, m, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"complete":true}}`))); err != nil {
		return fmt.Errorf("complete the maintenance: %w", err)
	}
	if err := poll(ctx, r.o.Timeout, func() (bool, error) {
		h := &metal3api.BareMetalHost{}
		if err := infra.Get(ctx, client.ObjectKey{Namespace: "hosts", Name: "server-0"}, h); err != nil {
			return false, err
		}
		_, marked := h.Annotations[hostfleetv1alpha1.AnnotationMaintenance]
		return !marked, nil
	}); err != nil {
		return fmt.Errorf("server-0 not back in the pool: %w", err)
	}
	r.say("  complete: server-0 is Done and back in the pool")
	return r.hardwareAsked(ctx)
}

// tenantLeavesSomething gives the fleet a FirmwareBaseline for the
// emulated servers, then plays edge-1's tenant, root on server-0: it adds
// a BMC account and turns Secure Boot off, in-band, before its host is
// taken away.
func (r *run) tenantLeavesSomething(ctx context.Context) error {
	fb := &hostfleetv1alpha1.FirmwareBaseline{ObjectMeta: metav1.ObjectMeta{Name: "emulated-r1"},
		Spec: hostfleetv1alpha1.FirmwareBaselineSpec{Hardware: `host.system.product == "Emulated R1"`,
			BIOSSettings: map[string]string{"SecureBoot": "Enabled"}, BMCAccounts: &hostfleetv1alpha1.BMCAccountPolicy{}}}
	if err := r.hub.Create(ctx, fb); err != nil {
		return fmt.Errorf("create FirmwareBaseline: %w", err)
	}
	r.rf.AddAccountInBand("ghost", "tenant-was-here")
	r.rf.SetBIOSInBand("SecureBoot", "Disabled")
	r.say("  FirmwareBaseline %s (the administrator's): %s hosts keep Secure Boot on and no BMC account but the agent's.", fb.Name, fb.Spec.Hardware)
	r.say("  Meanwhile edge-1's tenant, root on server-0, adds BMC account ghost and turns Secure Boot off, in-band.")
	return nil
}
