package bmcdriver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/agent/bmc"
	"github.com/hostfleet/hostfleet/agent/firmwareimage"
	"github.com/hostfleet/hostfleet/hub/api/baseline"
	"github.com/hostfleet/hostfleet/hub/api/hardware"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// The FirmwareBaseline condition and its reasons (hub/api/v1alpha1).
const (
	ConditionBaseline      = hostfleetv1alpha1.ConditionFirmwareBaseline
	ReasonBaselineInUse    = hostfleetv1alpha1.ReasonBaselineInUse
	ReasonBaselineCurrent  = hostfleetv1alpha1.ReasonBaselineCurrent
	ReasonRestoring        = hostfleetv1alpha1.ReasonRestoring
	ReasonRestoreFailed    = hostfleetv1alpha1.ReasonRestoreFailed
	ReasonUnverifiable     = hostfleetv1alpha1.ReasonUnverifiable
	ReasonBaselineConflict = hostfleetv1alpha1.ReasonBaselineConflict
)

// restoreOf is the host's progress through the gate.
func restoreOf(h *metal3api.BareMetalHost) baseline.Progress {
	v, ok := h.Annotations[hostfleetv1alpha1.AnnotationRestore]
	return baseline.ProgressOf(v, ok)
}

func (x *run) setRestore(st baseline.Progress) {
	if st.Phase == "" {
		delete(x.host.Annotations, hostfleetv1alpha1.AnnotationRestore)
		return
	}
	x.host.Annotations[hostfleetv1alpha1.AnnotationRestore] = st.String()
}

// Held reports whether the release gate holds a host, and why.
func Held(h *metal3api.BareMetalHost) (string, bool) { return baseline.Held(h.Annotations) }

// RestorePending: a claim held the host while the fleet had baselines
// (InUse), and let it go: it is judged before it is free.
func RestorePending(h *metal3api.BareMetalHost) bool {
	c := meta.FindStatusCondition(h.Status.Conditions, ConditionBaseline)
	return h.Spec.ConsumerRef == nil && c != nil && c.Reason == ReasonBaselineInUse
}

// markInUse records, on a host a claim holds, that it is to be judged at
// its release: only while the fleet has baselines, so that a fleet with
// none pays nothing. A host bound and released between two reconciles
// never ran anything of its tenant's.
func (x *run) markInUse(ctx context.Context) error {
	c := meta.FindStatusCondition(x.host.Status.Conditions, ConditionBaseline)
	if x.Baselines == nil || (c != nil && c.Reason == ReasonBaselineInUse) {
		return nil
	}
	baselines, err := x.Baselines(ctx)
	if err != nil || len(baselines) == 0 {
		return err
	}
	x.setBaseline(metav1.ConditionFalse, ReasonBaselineInUse, "a claim holds the host: judged against its firmware baselines when released")
	return nil
}

// restoring reports whether the host boots for its restore now: the step
// powers it on, not off.
func restoring(h *metal3api.BareMetalHost) bool {
	return restoreOf(h).Phase == baseline.PhaseBoot
}

// restoreBoot powers a host on once, so that what was staged and flashed
// takes effect at its boot; verify follows, with the host powered off
// again.
func (x *run) restoreBoot(ctx context.Context) outcome {
	o := x.drivePower(ctx, Want{On: true}, metal3api.ProvisioningError)
	if o.err != nil || x.change != nil || x.read != bmc.PowerOn {
		return o
	}
	st := restoreOf(x.host)
	st.Phase = baseline.PhaseVerify
	x.setRestore(st)
	return next()
}

// gate holds a released host (off, erased when its release asked for it)
// to the FirmwareBaselines that select it, and says whether it is free
// now. Nothing selects it: free, with no BMC read. Otherwise its BMC is
// read once (firmware, BIOS settings, accounts) and judged: current, it
// is free; else what differs is restored (accounts removed, BIOS settings
// staged, firmware flashed), the host booted once, read and judged again;
// what cannot be read, restored or verified holds it.
func (x *run) gate(ctx context.Context) (bool, outcome) {
	if x.Baselines == nil {
		return true, outcome{}
	}
	host := x.host
	st := restoreOf(host)
	if st.Phase == baseline.PhaseHeld {
		c := meta.FindStatusCondition(host.Status.Conditions, ConditionBaseline)
		msg := "held by the release gate: remove its " + hostfleetv1alpha1.AnnotationRestore + " annotation to judge it again"
		if c != nil && c.Status == metav1.ConditionFalse {
			msg = c.Message
		}
		return false, failed(fail(metal3api.ProvisioningError, "%s", msg))
	}
	baselines, err := x.Baselines(ctx)
	if err != nil {
		return false, failed(fail(metal3api.ProvisioningError, "read the firmware baselines: %v", err))
	}
	view := x.view(ctx)
	want, err := baseline.Merge(baselines, view)
	if err != nil {
		return false, x.hold(ReasonBaselineConflict, nil, "%v: fix the baselines, then remove the host's %s annotation", err, hostfleetv1alpha1.AnnotationRestore)
	}
	if len(want.From) == 0 {
		meta.RemoveStatusCondition(&host.Status.Conditions, ConditionBaseline)
		x.setRestore(baseline.Progress{})
		return true, outcome{}
	}
	r, _ := x.d.(bmc.Restorer)
	if st.Phase == baseline.PhaseFlash {
		if o, done := x.followTasks(ctx, r, &st); !done {
			return false, o
		}
		return false, next()
	}
	have, err := x.observe(ctx)
	if err != nil {
		return false, failed(fail(metal3api.ProvisioningError, "read the host against its firmware baselines: %v", err))
	}
	j := baseline.Judge(want, have, before(host, view))
	if j.State == baseline.Current {
		x.pass(want, have, st)
		return true, outcome{}
	}
	findings := j.Said()
	if st.Phase == baseline.PhaseVerify {
		return false, x.hold(ReasonRestoreFailed, st.Found, "still not as baselines %s want after the restore: %s; find out why on the BMC, then remove the host's %s annotation",
			strings.Join(want.From, ", "), strings.Join(findings, "; "), hostfleetv1alpha1.AnnotationRestore)
	}
	plan, ok := baseline.Plan(want, j)
	if !ok || r == nil {
		return false, x.hold(ReasonUnverifiable, findings, "cannot be verified against baselines %s: %s; its BMC cannot read or restore it (Redfish does)",
			strings.Join(want.From, ", "), strings.Join(findings, "; "))
	}
	return false, x.restore(ctx, r, plan, findings)
}

// restore applies the plan: extra accounts removed, BIOS settings staged,
// updates started; the host is then booted once and verified.
func (x *run) restore(ctx context.Context, r bmc.Restorer, plan baseline.Restore, found []string) outcome {
	st := baseline.Progress{Phase: baseline.PhaseVerify, Found: found, Tasks: map[string]string{}}
	for _, c := range slices.Sorted(maps.Keys(plan.Flash)) {
		if err := x.Images.Verify(ctx, plan.Flash[c]); errors.Is(err, firmwareimage.ErrMismatch) {
			return x.hold(ReasonRestoreFailed, found, "the image of %s %s: %v; fix the baseline's url or checksum, then remove the host's %s annotation",
				c, plan.Flash[c].Version, err, hostfleetv1alpha1.AnnotationRestore)
		} else if err != nil {
			return failed(fail(metal3api.ProvisioningError, "verify the image of %s %s: %v", c, plan.Flash[c].Version, err))
		}
	}
	for _, a := range plan.RemoveAccounts {
		if err := r.RemoveAccount(ctx, a); err != nil {
			return x.hold(ReasonRestoreFailed, found, "remove BMC account %s: %v", a, err)
		}
	}
	if len(plan.BIOS) > 0 {
		if err := r.StageBIOS(ctx, plan.BIOS); err != nil {
			return x.hold(ReasonRestoreFailed, found, "stage BIOS settings %s: %v", strings.Join(slices.Sorted(maps.Keys(plan.BIOS)), ", "), err)
		}
		st.Phase = baseline.PhaseBoot
	}
	for _, c := range slices.Sorted(maps.Keys(plan.Flash)) {
		task, err := r.Flash(ctx, c, plan.Flash[c].URL)
		if err != nil {
			return x.hold(ReasonRestoreFailed, found, "flash %s %s: %v", c, plan.Flash[c].Version, err)
		}
		st.Tasks[c] = task
		st.Phase = baseline.PhaseFlash
	}
	x.setRestore(st)
	x.setBaseline(metav1.ConditionFalse, ReasonRestoring, "released; restoring to its firmware baselines: %s", strings.Join(found, "; "))
	x.event(corev1.EventTypeNormal, "BaselineRestoring", "Restore", "found on release: %s", strings.Join(found, "; "))
	if st.Phase == baseline.PhaseFlash {
		return outcome{after: x.Power.Poll}
	}
	return next()
}

// followTasks reads the update tasks: all done, the host boots next; one
// failed holds the host.
func (x *run) followTasks(ctx context.Context, r bmc.Restorer, st *baseline.Progress) (outcome, bool) {
	if r == nil {
		return x.hold(ReasonRestoreFailed, st.Found, "the BMC can no longer follow its update tasks"), false
	}
	for _, c := range slices.Sorted(maps.Keys(st.Tasks)) {
		ts, err := r.Task(ctx, st.Tasks[c])
		switch {
		case err != nil:
			return failed(fail(metal3api.ProvisioningError, "follow the update of %s: %v", c, err)), false
		case ts.Failed:
			return x.hold(ReasonRestoreFailed, st.Found, "the update of %s failed: %s; fix the baseline's image or the BMC, then remove the host's %s annotation",
				c, ts.Message, hostfleetv1alpha1.AnnotationRestore), false
		case !ts.Done:
			return outcome{after: x.Power.Poll}, false
		}
	}
	st.Phase, st.Tasks = baseline.PhaseBoot, nil
	x.setRestore(*st)
	return outcome{}, true
}

// pass frees a host that matches its baselines: what was found and
// restored is said once (an Event, the condition), and what its BMC read
// is kept for its next release.
func (x *run) pass(want baseline.Want, have baseline.Observed, st baseline.Progress) {
	if data, err := json.Marshal(have); err == nil {
		x.host.Annotations[hostfleetv1alpha1.AnnotationBaselineObserved] = string(data)
	}
	x.setRestore(baseline.Progress{})
	msg := "matches baselines " + strings.Join(want.From, ", ")
	if len(st.Found) > 0 {
		msg = fmt.Sprintf("restored to baselines %s: %s", strings.Join(want.From, ", "), strings.Join(st.Found, "; "))
		x.event(corev1.EventTypeNormal, "BaselineRestored", "Restore", "%s", msg)
	}
	x.setBaseline(metav1.ConditionTrue, ReasonBaselineCurrent, "%s", msg)
}

// hold keeps the host out of the pool with the reason: the condition, a
// Warning Event, and an error on the host until its administrator acts.
func (x *run) hold(reason string, found []string, format string, args ...any) outcome {
	msg := fmt.Sprintf(format, args...)
	x.setRestore(baseline.Progress{Phase: baseline.PhaseHeld, Reason: reason, Found: found})
	x.setBaseline(metav1.ConditionFalse, reason, "held out of the pool: %s", msg)
	x.event(corev1.EventTypeWarning, reason, "Restore", "held out of the pool: %s", msg)
	return failed(fail(metal3api.ProvisioningError, "held out of the pool: %s", msg))
}

func (x *run) setBaseline(status metav1.ConditionStatus, reason, format string, args ...any) {
	meta.SetStatusCondition(&x.host.Status.Conditions, metav1.Condition{Type: ConditionBaseline, Status: status, Reason: reason,
		ObservedGeneration: x.host.Generation, Message: fmt.Sprintf(format, args...)})
}

// observe reads what a tenant can change, out of band: firmware, BIOS
// settings, enabled accounts. A part the BMC does not serve is nil
// (unknown); another error fails the read.
func (x *run) observe(ctx context.Context) (baseline.Observed, error) {
	fw, err := x.firmware(ctx)
	if err != nil {
		return baseline.Observed{}, err
	}
	return x.observeWith(ctx, fw)
}

// observeWith reads, beside the firmware fw already read, the BIOS
// settings and the enabled accounts; a part the BMC does not serve is nil.
func (x *run) observeWith(ctx context.Context, fw map[string]string) (baseline.Observed, error) {
	o := baseline.Observed{Firmware: fw, Own: x.user}
	r, ok := x.d.(bmc.Restorer)
	if !ok {
		return o, nil
	}
	var err error
	if o.BIOS, err = r.BIOS(ctx); err != nil && !errors.Is(err, bmc.ErrUnsupported) {
		return o, err
	}
	if o.Accounts, err = r.Accounts(ctx); err != nil && !errors.Is(err, bmc.ErrUnsupported) {
		return o, err
	}
	return o, nil
}

// observeFirst keeps, at inspection, what a tenant could change and the
// release gate checks (firmware fw as inspected, BIOS settings,
// accounts): what a first claim changes is then judged drifted, not
// behind. The BMC that cannot read a part leaves it unknown.
func (x *run) observeFirst(ctx context.Context, fw map[string]string) error {
	if _, ok := x.d.(bmc.Restorer); x.Baselines == nil || !ok {
		return nil
	}
	o, err := x.observeWith(ctx, fw)
	if err != nil {
		return err
	}
	data, err := json.Marshal(o)
	if err != nil {
		return err
	}
	x.host.Annotations[hostfleetv1alpha1.AnnotationBaselineObserved] = string(data)
	return nil
}

// view is the host's hardware as baselines select it: its HardwareData
// (with the GPUs and firmware the driver read), else its status.
func (x *run) view(ctx context.Context) *hardware.View {
	hd := &metal3api.HardwareData{}
	if err := x.Client.Get(ctx, client.ObjectKeyFromObject(x.host), hd); err == nil {
		return hardware.OfData(hd)
	}
	return hardware.Of(x.host.Status.HardwareDetails)
}

// before is what the host's BMC read when it was last freed; for a host
// never freed by the gate, the firmware its inspection read.
func before(h *metal3api.BareMetalHost, v *hardware.View) *baseline.Observed {
	var o baseline.Observed
	if json.Unmarshal([]byte(h.Annotations[hostfleetv1alpha1.AnnotationBaselineObserved]), &o) == nil {
		return &o
	}
	if v == nil || v.Firmware == nil {
		return nil
	}
	return &baseline.Observed{Firmware: v.Firmware}
}
