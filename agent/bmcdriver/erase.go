package bmcdriver

import (
	"context"
	"fmt"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hostfleet/hostfleet/agent/bmc"
	"github.com/hostfleet/hostfleet/hub/api/erase"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// Eraser is how the driver erases a released host: it boots an erase
// image, which erases the disks and powers the host off, and frees the
// host only once the BMC reports it off.
type Eraser struct {
	// Image is the erase image's http(s) URL, booted by Redfish virtual
	// media.
	Image string
	// PXE: IPMI hosts erase by booting once from the network, where the
	// cluster's PXE server serves the erase image.
	PXE bool
	// Timeout bounds an erase: a host still on after it has failed.
	Timeout time.Duration
}

// DefaultEraseTimeout bounds an erase when Eraser.Timeout is unset.
const DefaultEraseTimeout = time.Hour

// Supports is the most the driver can erase on h: Full with a way to boot
// the erase image on its BMC, else nothing.
func (e Eraser) Supports(h *metal3api.BareMetalHost) hostfleetv1alpha1.EraseMode {
	a, err := bmc.ParseAddress(h.Spec.BMC.Address)
	switch {
	case err != nil:
		return hostfleetv1alpha1.EraseNone
	case a.Protocol == bmc.Redfish && e.Image != "", a.Protocol == bmc.IPMI && e.PXE:
		return hostfleetv1alpha1.EraseFull
	}
	return hostfleetv1alpha1.EraseNone
}

// ErasePending: the host's claim let it go and its release requires an
// erase not done yet (or failed). A quarantined host has none pending: it
// failed, and stays off until its administrator returns it; its erase runs
// then, before it is free.
func ErasePending(h *metal3api.BareMetalHost) bool {
	_, quarantined := h.Annotations[hostfleetv1alpha1.AnnotationQuarantined]
	return h.Spec.ConsumerRef == nil && !quarantined && erase.Level(erase.Of(h.Annotations)) > 0
}

// The Erasing condition on a driven host: True while the erase image
// runs; False Erased once the host powered itself off, or EraseFailed
// (the host is kept out of the pool until an administrator acts).
const (
	ConditionErasing   = "Erasing"
	ReasonEraseRunning = "EraseImageRunning"
	ReasonErased       = "Erased"
	ReasonEraseFailed  = "EraseFailed"
)

// erase boots the erase image on a released host (powered off and
// ejected first), then waits until the host powers itself off.
func (x *run) erase(ctx context.Context) outcome {
	host := x.host
	ec := meta.FindStatusCondition(host.Status.Conditions, ConditionErasing)
	switch {
	case ec != nil && ec.Reason == ReasonEraseFailed:
		return failed(fail(metal3api.ProvisioningError, "%s", ec.Message))
	case ec != nil && ec.Status == metav1.ConditionTrue:
		return x.awaitErase(ctx, ec)
	}
	if pc, _ := ChangeOf(host.Status.Conditions); pc == nil || pc.For != ForErase {
		if off, o := x.offAndEjected(ctx, "erase"); !off || o.err != nil {
			return o
		}
		if erase.Level(x.Eraser.Supports(host)) == 0 {
			return failed(fail(metal3api.ProvisioningError, "the host must erase %s before it is free again, and the agent has no way to boot an erase image on it "+
				"(--erase-image for Redfish virtual media, --erase-pxe for IPMI): it stays out of the pool; give the agent one, "+
				"or erase it by hand and remove its %s annotation", host.Annotations[hostfleetv1alpha1.AnnotationErase], hostfleetv1alpha1.AnnotationErase))
		}
		if err := x.bootErase(ctx); err != nil {
			return failed(fail(metal3api.ProvisioningError, "boot the erase image: %v", err))
		}
	}
	o := x.drivePower(ctx, Want{On: true, For: ForErase}, metal3api.ProvisioningError)
	if o.err != nil || x.landed == nil || x.landed.For != ForErase {
		return o
	}
	meta.SetStatusCondition(&host.Status.Conditions, metav1.Condition{Type: ConditionErasing, Status: metav1.ConditionTrue, Reason: ReasonEraseRunning,
		ObservedGeneration: host.Generation, Message: fmt.Sprintf("the erase image (%s) runs since %s; the host is free once it powers itself off",
			x.eraseSource(), time.Now().UTC().Format(time.RFC3339))})
	return outcome{after: x.Power.Poll}
}

// bootErase sets the host to boot the erase image once: by virtual media
// on Redfish, from the network on IPMI.
func (x *run) bootErase(ctx context.Context) error {
	a, err := bmc.ParseAddress(x.host.Spec.BMC.Address)
	if err != nil {
		return err
	}
	dev := bmc.BootPXE
	if a.Protocol == bmc.Redfish {
		if err := x.d.InsertMedia(ctx, x.Eraser.Image); err != nil {
			return err
		}
		dev = bmc.BootCDROM
	}
	if err := x.d.SetBootOnce(ctx, dev); err != nil {
		return err
	}
	x.event(corev1.EventTypeNormal, "EraseStarted", "Erase", "released with erase %s: booting the erase image (%s)",
		x.host.Annotations[hostfleetv1alpha1.AnnotationErase], x.eraseSource())
	return nil
}

func (x *run) eraseSource() string {
	if a, err := bmc.ParseAddress(x.host.Spec.BMC.Address); err == nil && a.Protocol == bmc.Redfish {
		return x.Eraser.Image
	}
	return "network boot"
}

// awaitErase ends the erase once the BMC reports the host off (the erase
// image powered it off), and fails it past its timeout.
func (x *run) awaitErase(ctx context.Context, ec *metav1.Condition) outcome {
	host := x.host
	s, err := x.d.Power(ctx)
	if err != nil {
		return failed(fail(metal3api.ProvisioningError, "erase: %v", err))
	}
	x.read = s
	took := time.Since(ec.LastTransitionTime.Time).Round(time.Second)
	if s == bmc.PowerOff {
		if err := x.d.EjectMedia(ctx); err != nil {
			return failed(fail(metal3api.ProvisioningError, "erase: eject the erase image: %v", err))
		}
		delete(host.Annotations, hostfleetv1alpha1.AnnotationErase)
		host.Status.PoweredOn = false
		host.Status.Provisioning.Image = metal3api.Image{}
		meta.SetStatusCondition(&host.Status.Conditions, metav1.Condition{Type: ConditionErasing, Status: metav1.ConditionFalse, Reason: ReasonErased,
			ObservedGeneration: host.Generation, Message: fmt.Sprintf("erased: the host powered itself off %s after booting the erase image", took)})
		x.event(corev1.EventTypeNormal, "EraseComplete", "Erase", "the host powered itself off %s after booting the erase image", took)
		return next() // deprovisioning goes on: the release gate, then free
	}
	timeout := x.Eraser.Timeout
	if timeout <= 0 {
		timeout = DefaultEraseTimeout
	}
	if left := timeout - time.Since(ec.LastTransitionTime.Time); left > 0 {
		return outcome{after: min(x.Power.Poll, left)}
	}
	msg := fmt.Sprintf("erase failed: the host is still %s %s after booting the erase image (%s, timeout %s): it stays out of the pool; "+
		"find out why on its console, erase it by hand and remove its %s annotation", s, took, x.eraseSource(), timeout, hostfleetv1alpha1.AnnotationErase)
	meta.SetStatusCondition(&host.Status.Conditions, metav1.Condition{Type: ConditionErasing, Status: metav1.ConditionFalse, Reason: ReasonEraseFailed,
		ObservedGeneration: host.Generation, Message: msg})
	x.event(corev1.EventTypeWarning, ReasonEraseFailed, "Erase", "%s", msg)
	return failed(fail(metal3api.ProvisioningError, "%s", msg))
}
