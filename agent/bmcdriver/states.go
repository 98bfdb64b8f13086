package bmcdriver

import (
	"context"
	"errors"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/hostfleet/hostfleet/agent/bmc"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/internal/resume"
)

// register checks that the BMC answers with the credentials, then inspects
// (or, with inspection disabled, makes the host available).
func (x *run) register(ctx context.Context) outcome {
	s, err := x.d.Power(ctx)
	if err != nil {
		return failed(fail(metal3api.RegistrationError, "%v", err))
	}
	if s.Settled() {
		x.host.Status.PoweredOn = s == bmc.PowerOn
	}
	x.host.Status.Provisioning.State = metal3api.StateInspecting
	if InspectionDisabled(x.host) {
		x.host.Status.Provisioning.State = metal3api.StateAvailable
	}
	return next()
}

// inspect reads the BMC's inventory into the host's HardwareData.
func (x *run) inspect(ctx context.Context) outcome {
	host := x.host
	hw, err := x.d.Inventory(ctx)
	switch {
	case errors.Is(err, bmc.ErrUnsupported):
		// IPMI reports no inventory: the host is available without
		// HardwareData, as with inspection disabled; what a tenant could
		// change is still kept for the release gate.
		fw, err := x.firmware(ctx)
		if err == nil {
			err = x.observeFirst(ctx, fw)
		}
		if err != nil {
			return failed(fail(metal3api.InspectionError, "%v", err))
		}
	case err != nil:
		return failed(fail(metal3api.InspectionError, "%v", err))
	default:
		var gpus []hostfleetv1alpha1.HardwareGPU
		if r, ok := x.d.(bmc.GPUReader); ok {
			if gpus, err = r.GPUs(ctx); err != nil {
				return failed(fail(metal3api.InspectionError, "%v", err))
			}
		}
		fw, err := x.firmware(ctx)
		if err != nil {
			return failed(fail(metal3api.InspectionError, "%v", err))
		}
		if err := x.saveHardware(ctx, host, hw, gpus, fw); err != nil {
			return failed(fail(metal3api.InspectionError, "save HardwareData: %v", err))
		}
		if err := x.observeFirst(ctx, fw); err != nil {
			return failed(fail(metal3api.InspectionError, "%v", err))
		}
		host.Status.HardwareDetails = hw
		host.Status.HardwareProfile = "unknown"
		x.event(corev1.EventTypeNormal, "InspectionComplete", "Inspect", "HardwareData from the BMC: %d CPUs, %d MiB, %d disks, %d NICs, %d GPUs",
			hw.CPU.Count, hw.RAMMebibytes, len(hw.Storage), len(hw.NIC), len(gpus))
	}
	delete(host.Annotations, metal3api.InspectAnnotationPrefix)
	host.Status.Provisioning.State = metal3api.StateAvailable
	return next()
}

// available erases a host released with an erase, provisions a host that
// a consumer gave an image, inspects it again when asked, and otherwise
// keeps its power as spec.online says.
func (x *run) available(ctx context.Context) outcome {
	host := x.host
	if ErasePending(host) || RestorePending(host) {
		host.Status.Provisioning.State = metal3api.StateDeprovisioning // released: erased and judged before it is free
		return next()
	}
	if host.Spec.ConsumerRef != nil {
		if err := x.markInUse(ctx); err != nil {
			return failed(fail(metal3api.ProvisioningError, "read the firmware baselines: %v", err))
		}
	}
	if img := host.Spec.Image; img != nil && img.URL != "" && host.Spec.ConsumerRef != nil {
		if err := ValidateImage(img); err != nil {
			return failed(fail(metal3api.ProvisioningError, "%v", err))
		}
		host.Status.Provisioning.State = metal3api.StateProvisioning
		return next()
	}
	if v, ok := host.Annotations[metal3api.InspectAnnotationPrefix]; ok && v != inspectDisabled {
		host.Status.Provisioning.State = metal3api.StateInspecting // re-inspection asked for
		return next()
	}
	return x.power(ctx)
}

// provision boots the live ISO by virtual media: insert, boot once from the
// CD, power on (or restart a host that is on), and is done once the BMC
// reports the host on; a host asked to be off is done once the ISO is
// inserted, and boots it when it is powered on.
func (x *run) provision(ctx context.Context) outcome {
	host := x.host
	st := &host.Status.Provisioning
	img := host.Spec.Image
	if img == nil || img.URL == "" {
		st.State = metal3api.StateDeprovisioning
		return next()
	}
	if err := ValidateImage(img); err != nil {
		return failed(fail(metal3api.ProvisioningError, "%v", err))
	}
	pc, _ := ChangeOf(host.Status.Conditions)
	if pc != nil && pc.For != ForProvision {
		// A change from before the consumer came: let it land first.
		o := x.drivePower(ctx, Want{On: pc.Target != TargetOff}, metal3api.ProvisioningError)
		if o.err == nil && x.change == nil {
			return next()
		}
		return o
	}
	if pc == nil {
		if err := x.d.InsertMedia(ctx, img.URL); err != nil {
			return failed(fail(metal3api.ProvisioningError, "boot the live ISO: %v", err))
		}
		if err := x.d.SetBootOnce(ctx, bmc.BootCDROM); err != nil {
			return failed(fail(metal3api.ProvisioningError, "boot the live ISO: %v", err))
		}
		x.event(corev1.EventTypeNormal, "ProvisioningStarted", "Provision", "live ISO %s inserted, one-time boot from CD", img.URL)
		if !host.Spec.Online {
			// Off as asked (a claim powered off, or a failed host being
			// fenced): never powered on to boot; it boots the ISO when it is.
			st.Image = *img.DeepCopy()
			st.State = metal3api.StateProvisioned
			x.event(corev1.EventTypeNormal, "ProvisioningComplete", "Provision", "%s boots at the next power on (spec.online is false)", img.URL)
			return next()
		}
	}
	// Power on, or restart a host that is on (at once: it is being
	// re-imaged); once that is under way, only wait for it.
	want := Want{On: true, For: ForProvision}
	if pc == nil {
		want.Reboot, want.Hard = true, true
	}
	if o := x.drivePower(ctx, want, metal3api.ProvisioningError); o.err != nil || x.landed == nil || x.landed.For != ForProvision {
		return o
	}
	st.Image = *img.DeepCopy()
	st.State = metal3api.StateProvisioned
	x.event(corev1.EventTypeNormal, "ProvisioningComplete", "Provision", "booted %s: the BMC reports the host on", img.URL)
	return next()
}

// provisioned deprovisions a host its consumer let go, and otherwise keeps
// its power as spec.online and the reboot annotations say.
func (x *run) provisioned(ctx context.Context) outcome {
	if Deprovision(x.host) {
		x.host.Status.Provisioning.State = metal3api.StateDeprovisioning
		return next()
	}
	return x.power(ctx)
}

// deprovision powers the host off, and once the BMC reports it off ejects
// its media: only then is it available again; a released host whose
// release requires an erase is erased first.
func (x *run) deprovision(ctx context.Context) outcome {
	if ErasePending(x.host) {
		return x.erase(ctx)
	}
	if c := meta.FindStatusCondition(x.host.Status.Conditions, ConditionErasing); c != nil && c.Reason == ReasonEraseFailed {
		// Its administrator erased it by hand (the annotation is gone).
		meta.RemoveStatusCondition(&x.host.Status.Conditions, ConditionErasing)
	}
	if restoring(x.host) {
		return x.restoreBoot(ctx)
	}
	if off, o := x.offAndEjected(ctx, "deprovision"); !off || o.err != nil {
		return o
	}
	// Released (no consumer: an image removed from a bound host is not a
	// release), the host is judged against its baselines before it is free.
	if x.host.Spec.ConsumerRef == nil {
		if free, o := x.gate(ctx); !free {
			return o
		}
	}
	x.host.Status.Provisioning.Image = metal3api.Image{}
	x.host.Status.Provisioning.State = metal3api.StateAvailable
	x.event(corev1.EventTypeNormal, "DeprovisioningComplete", "Deprovision", "the BMC reports the host off; media ejected")
	return next()
}

// offAndEjected powers the host off at once (its consumer let it go) and,
// once the BMC reports it off, ejects its media.
func (x *run) offAndEjected(ctx context.Context, what string) (bool, outcome) {
	o := x.drivePower(ctx, Want{On: false, Hard: true}, metal3api.ProvisioningError)
	if o.err != nil || x.change != nil || x.read != bmc.PowerOff {
		return false, o
	}
	if err := x.d.EjectMedia(ctx); err != nil {
		o.err = fail(metal3api.ProvisioningError, "%s: %v", what, err)
		return false, o
	}
	return true, o
}

// power applies spec.online and the reboot annotations.
func (x *run) power(ctx context.Context) outcome {
	want := Want{On: x.host.Spec.Online}
	reboot := RebootRequest(x.host.Annotations)
	switch {
	case reboot.HoldOff:
		want = Want{On: false, Hard: reboot.Hard}
	case reboot.Requested && want.On:
		want.Reboot, want.Hard = true, reboot.Hard
	case reboot.Requested:
		x.consume(reboot) // off, and to stay off: nothing to reboot
	}
	o := x.drivePower(ctx, want, metal3api.PowerManagementError)
	if o.err == nil && x.change == nil {
		o.after = NextPoll(x.host.UID, time.Now(), x.Poll)
	}
	return o
}

// consume removes one-shot reboot requests, once carried out.
func (x *run) consume(reboot Reboot) {
	for _, k := range reboot.Keys {
		delete(x.host.Annotations, k)
	}
}

// drivePower reads the power and moves it one step towards want (Decide):
// the status says what the BMC reported; a command is remembered in the
// host's status (its PowerChanging condition) before it is sent. After it,
// x.read is the power read, x.change the change under way, x.landed the
// change that landed at this read.
func (x *run) drivePower(ctx context.Context, want Want, kind metal3api.ErrorType) outcome {
	host := x.host
	x.change, x.landed = nil, nil
	s, err := x.d.Power(ctx)
	if err != nil {
		return failed(fail(bmcFault(host, kind), "%v", err))
	}
	x.read = s
	if hr, ok := x.d.(bmc.HealthReader); ok {
		SetHealth(&host.Status.Conditions, host.Generation, hr)
	}
	pc, perr := ChangeOf(host.Status.Conditions)
	if perr != nil {
		ctrl.LoggerFrom(ctx).Info(perr.Error())
	}
	if u, ok := x.unsent.Load(host.UID); ok && pc != nil && u.(Change).same(pc) {
		pc.Unsent = true
		x.unsent.Delete(host.UID)
	}
	now := time.Now()
	st := Decide(now, s, want, pc, x.Power)
	x.change, x.landed = st.Change, st.Landed
	if s.Settled() {
		host.Status.PoweredOn = s == bmc.PowerOn
	}
	if c := st.Landed; c != nil {
		x.event(corev1.EventTypeNormal, "PowerChanged", "Power", "%s done: the BMC reports %s %s after the request, %d × %s sent",
			c.words(), s, now.Sub(c.Since.Time).Round(100*time.Millisecond), c.Sent, c.Command)
		if c.Target == TargetReboot {
			x.consume(RebootRequest(host.Annotations)) // carried out
		}
	}
	x.setPowerCondition(s)
	var f *hostError
	if st.Send != "" {
		f = x.send(ctx, st, kind)
	}
	if st.Stuck != "" {
		stuck := fail(bmcFault(host, kind), "the BMC at %s: %s", x.bmcAddress(), st.Stuck)
		if f != nil {
			stuck.Msg += "; the last one failed: " + f.Msg
		}
		f = stuck
	}
	return outcome{after: st.Requeue, err: f}
}

// setPowerCondition writes the change under way, or none, into the host's
// PowerChanging condition.
func (x *run) setPowerCondition(s bmc.PowerState) {
	meta.SetStatusCondition(&x.host.Status.Conditions, PowerCondition(x.change, s, x.host.Generation))
	if c := meta.FindStatusCondition(x.host.Status.Conditions, hostfleetv1alpha1.ConditionPowerChanging); c != nil && x.change != nil {
		// Since the change began, not since the condition turned True; to
		// the second, as it is stored (else each read would write it again).
		c.LastTransitionTime = metav1.NewTime(x.change.Since.Time).Rfc3339Copy()
	}
}

// send remembers the change in the host's status, then sends its command
// once. A change whose first command the BMC refused is forgotten, so that
// the next read starts over.
func (x *run) send(ctx context.Context, st Step, kind metal3api.ErrorType) *hostError {
	if err := x.remember(ctx); err != nil {
		if resume.Unreachable(err) {
			// The write may have landed and its answer been lost: if its
			// record is read back, its command is sent then (not after
			// Timing.Wait, as one that was sent). A write the API server
			// refused (a conflict) did not land: nothing to keep.
			x.unsent.Store(x.host.UID, *st.Change)
		}
		return fail(kind, "remember the power change on the host before sending it: %v", err)
	}
	if err := x.d.Send(ctx, st.Send); err != nil {
		if st.Started {
			// Nothing of this change reached the BMC: forget it.
			x.change = nil
			x.setPowerCondition(x.read)
		} // else an earlier command of the change may still land: kept
		return fail(bmcFault(x.host, kind), "%s: %v", st.Change.words(), err)
	}
	switch {
	case st.Escalated:
		x.event(corev1.EventTypeWarning, "SoftPowerOffTimedOut", "PowerOff", "the host did not power off within %s of GracefulShutdown: ForceOff sent", x.Power.SoftOff)
	case st.Change.Sent > 1:
		x.event(corev1.EventTypeWarning, "PowerCommandResent", "Power", "%s: %s sent again (%d), the BMC still reports %s", st.Change.words(), st.Send, st.Change.Sent, x.read)
	default:
		x.event(corev1.EventTypeNormal, "PowerCommandSent", "Power", "%s: %s sent, the BMC reports %s", st.Change.words(), st.Send, x.read)
	}
	return nil
}

// remember writes the host's status as the steps left it (the change about
// to be sent among it), only if the host has not changed since it was read:
// the write the steps would make anyway, made before the command.
func (x *run) remember(ctx context.Context) error {
	if equalStatus(x.stored, x.host) {
		return nil
	}
	return x.writeStatus(ctx)
}

// bmcAddress is the host's BMC address, for messages to its administrator.
func (x *run) bmcAddress() string {
	if a, err := bmc.ParseAddress(x.host.Spec.BMC.Address); err == nil {
		return a.HostPort()
	}
	return x.host.Spec.BMC.Address
}

// firmware is what the BMC reads of the host's firmware; nil when it
// reads none.
func (x *run) firmware(ctx context.Context) (map[string]string, error) {
	r, ok := x.d.(bmc.FirmwareReader)
	if !ok {
		return nil, nil
	}
	fw, err := r.Firmware(ctx)
	if errors.Is(err, bmc.ErrUnsupported) {
		return nil, nil
	}
	return fw, err
}
