package firmwaregate

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/hostfleet/hostfleet/agent/firmwareimage"
	"github.com/hostfleet/hostfleet/hub/api/baseline"
	"github.com/hostfleet/hostfleet/hub/api/hardware"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/internal/fence"
	"github.com/hostfleet/hostfleet/internal/hostwrites"
	"github.com/hostfleet/hostfleet/internal/requeue"
	"github.com/hostfleet/hostfleet/internal/resume"
	"github.com/hostfleet/hostfleet/internal/setup"
)

// Reconciler gates the released hosts baremetal-operator serves.
type Reconciler struct {
	// Client is the managed cluster's.
	Client client.Client
	// Baselines are the fleet's FirmwareBaselines (the cluster's
	// ClusterTenancy carries them).
	Baselines func(context.Context) ([]hostfleetv1alpha1.FirmwareBaseline, error)
	// Images verifies a firmware image against its baseline's checksum
	// before baremetal-operator is asked to flash it; nil verifies nothing.
	Images *firmwareimage.Checker
	// Driven says whether the agent's BMC driver drives a host: those it
	// gates itself.
	Driven func(*metal3api.BareMetalHost) bool
	// Recorder receives the Events on the hosts.
	Recorder events.EventRecorder
	// Fence is the agent's write fence.
	Fence *fence.Fence
	// Timeout bounds how long baremetal-operator may take to apply a
	// restore (DefaultTimeout when zero): a host past it is held.
	Timeout time.Duration
}

// DefaultTimeout is Reconciler.Timeout's default: a firmware update, with
// the host prepared for it, takes minutes; a restore still pending after
// two hours is stuck.
const DefaultTimeout = 2 * time.Hour

// SetupWithManager watches the managed cluster's hosts that carry
// hostfleet.io/restore, and their HostFirmwareComponents and Settings
// (baremetal-operator names them after the host).
func (r *Reconciler) SetupWithManager(_ context.Context, mgr ctrl.Manager, o setup.Options) error {
	if r.Fence == nil {
		r.Fence = &fence.Fence{}
	}
	cache := o.Managed.GetCache()
	return ctrl.NewControllerManagedBy(mgr).
		Named("firmware-gate").
		WatchesRawSource(source.Kind(cache, &metal3api.BareMetalHost{}, &handler.TypedEnqueueRequestForObject[*metal3api.BareMetalHost]{},
			predicate.NewTypedPredicateFuncs(func(h *metal3api.BareMetalHost) bool {
				_, ok := h.Annotations[hostfleetv1alpha1.AnnotationRestore]
				return ok && (r.Driven == nil || !r.Driven(h))
			}))).
		WatchesRawSource(source.Kind(cache, &metal3api.HostFirmwareComponents{}, &handler.TypedEnqueueRequestForObject[*metal3api.HostFirmwareComponents]{})).
		WatchesRawSource(source.Kind(cache, &metal3api.HostFirmwareSettings{}, &handler.TypedEnqueueRequestForObject[*metal3api.HostFirmwareSettings]{})).
		WithOptions(o.Controller(4)).
		Complete(resume.Reconciler(r))
}

// Reconcile reads the host and its firmware, judges, and applies what the
// judgement asks: free, restore, wait, or hold.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	h := &metal3api.BareMetalHost{}
	if err := r.Client.Get(ctx, req.NamespacedName, h); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	v, marked := h.Annotations[hostfleetv1alpha1.AnnotationRestore]
	if !marked || (r.Driven != nil && r.Driven(h)) || h.Spec.ConsumerRef != nil || h.DeletionTimestamp != nil {
		return ctrl.Result{}, nil
	}
	if r.Fence.Behind(string(hostwrites.FirmwareGate), fence.Hosts, h) {
		return ctrl.Result{RequeueAfter: requeue.CacheLag}, nil
	}
	p := baseline.ProgressOf(v, marked)
	if p.Phase == baseline.PhaseHeld {
		return ctrl.Result{}, nil
	}
	switch h.Status.Provisioning.State {
	case metal3api.StateAvailable, metal3api.StateReady:
	default:
		return ctrl.Result{}, nil // baremetal-operator deprovisions, or prepares: judged once it is done
	}
	baselines, err := r.Baselines(ctx)
	if err != nil {
		return ctrl.Result{}, err
	}
	hd := &metal3api.HardwareData{}
	var view *hardware.View
	if err := r.Client.Get(ctx, req.NamespacedName, hd); err == nil {
		view = hardware.OfData(hd)
	} else if !apierrors.IsNotFound(err) {
		return ctrl.Result{}, err
	}
	want, err := baseline.Merge(baselines, view)
	if err != nil {
		return r.hold(ctx, h, p, hostfleetv1alpha1.ReasonBaselineConflict, "%v: fix the baselines, then remove the host's %s annotation", err, hostfleetv1alpha1.AnnotationRestore)
	}
	if len(want.From) == 0 {
		return ctrl.Result{}, r.write(ctx, h, baseline.Progress{})
	}
	hfc, hfs, err := r.firmware(ctx, req.NamespacedName)
	if err != nil {
		return ctrl.Result{}, err
	}
	have := Observed(hfc, hfs)
	j := baseline.Judge(want, have, nil)
	found := j.Said()
	switch {
	case j.State == baseline.Current:
		if len(p.Found) > 0 {
			r.event(h, corev1.EventTypeNormal, "BaselineRestored", "restored to baselines %s by baremetal-operator: %s", strings.Join(want.From, ", "), strings.Join(p.Found, "; "))
		}
		return ctrl.Result{}, r.write(ctx, h, baseline.Progress{})
	case p.Phase == baseline.PhaseVerify && Pending(hfc, hfs):
		timeout := cmp.Or(r.Timeout, DefaultTimeout)
		since, err := time.Parse(time.RFC3339, p.Since)
		if left := timeout - time.Since(since); err == nil && left <= 0 {
			return r.hold(ctx, h, p, hostfleetv1alpha1.ReasonRestoreFailed, "baremetal-operator has not applied the restore to baselines %s in %s: %s; see its HostFirmwareComponents and HostFirmwareSettings conditions, then remove the host's %s annotation",
				strings.Join(want.From, ", "), timeout, strings.Join(p.Found, "; "), hostfleetv1alpha1.AnnotationRestore)
		}
		return ctrl.Result{RequeueAfter: time.Minute}, nil // baremetal-operator applies it
	case p.Phase == baseline.PhaseVerify:
		return r.hold(ctx, h, p, hostfleetv1alpha1.ReasonRestoreFailed, "still not as baselines %s want after baremetal-operator applied the restore: %s; find out why (its HostFirmwareComponents and HostFirmwareSettings conditions), then remove the host's %s annotation",
			strings.Join(want.From, ", "), strings.Join(found, "; "), hostfleetv1alpha1.AnnotationRestore)
	}
	plan, ok := baseline.Plan(want, j)
	if !ok || len(plan.RemoveAccounts) > 0 { // a part it has no object for is Unknown: !ok
		return r.hold(ctx, h, p, hostfleetv1alpha1.ReasonUnverifiable, "cannot be verified or restored through baremetal-operator against baselines %s: %s (it serves no BMC accounts, and firmware only with HostFirmwareComponents and HostFirmwareSettings)",
			strings.Join(want.From, ", "), strings.Join(found, "; "))
	}
	if err := r.restore(ctx, hfc, hfs, plan); errors.Is(err, firmwareimage.ErrMismatch) {
		return r.hold(ctx, h, p, hostfleetv1alpha1.ReasonRestoreFailed, "%v; fix the baseline's url or checksum, then remove the host's %s annotation",
			err, hostfleetv1alpha1.AnnotationRestore)
	} else if err != nil {
		return ctrl.Result{}, err
	}
	r.event(h, corev1.EventTypeNormal, "BaselineRestoring", "found on release: %s; baremetal-operator applies the restore", strings.Join(found, "; "))
	return ctrl.Result{RequeueAfter: time.Minute}, r.write(ctx, h, baseline.Progress{Phase: baseline.PhaseVerify, Found: found,
		Since: time.Now().UTC().Format(time.RFC3339)})
}

// firmware reads the host's HostFirmwareComponents and Settings; either nil
// when baremetal-operator made none.
func (r *Reconciler) firmware(ctx context.Context, key client.ObjectKey) (*metal3api.HostFirmwareComponents, *metal3api.HostFirmwareSettings, error) {
	hfc, hfs := &metal3api.HostFirmwareComponents{}, &metal3api.HostFirmwareSettings{}
	if err := r.Client.Get(ctx, key, hfc); apierrors.IsNotFound(err) {
		hfc = nil
	} else if err != nil {
		return nil, nil, err
	}
	if err := r.Client.Get(ctx, key, hfs); apierrors.IsNotFound(err) {
		hfs = nil
	} else if err != nil {
		return nil, nil, err
	}
	return hfc, hfs, nil
}

// Observed is what baremetal-operator reports of a host's firmware: its
// components' current versions and its settings; a part it has no object
// for is unknown, and BMC accounts always are.
func Observed(hfc *metal3api.HostFirmwareComponents, hfs *metal3api.HostFirmwareSettings) baseline.Observed {
	var o baseline.Observed
	if hfc != nil {
		o.Firmware = map[string]string{}
		for _, c := range hfc.Status.Components {
			v := c.CurrentVersion
			if v == "" {
				v = c.InitialVersion
			}
			o.Firmware[c.Component] = v
		}
	}
	if hfs != nil {
		o.BIOS = maps.Clone(map[string]string(hfs.Status.Settings))
		if o.BIOS == nil {
			o.BIOS = map[string]string{}
		}
	}
	return o
}

// Pending: baremetal-operator has not applied what the spec asks yet: its
// ChangeDetected condition is True, or the status does not show the spec
// yet (it has not looked).
func Pending(hfc *metal3api.HostFirmwareComponents, hfs *metal3api.HostFirmwareSettings) bool {
	if hfc != nil && (meta.IsStatusConditionTrue(hfc.Status.Conditions, string(metal3api.HostFirmwareComponentsChangeDetected)) ||
		!slices.Equal(hfc.Spec.Updates, hfc.Status.Updates) && len(hfc.Spec.Updates) > 0) {
		return true
	}
	if hfs == nil {
		return false
	}
	if meta.IsStatusConditionTrue(hfs.Status.Conditions, string(metal3api.FirmwareSettingsChangeDetected)) {
		return true
	}
	for k, v := range hfs.Spec.Settings {
		if hfs.Status.Settings[k] != v.String() {
			return !hasCondition(hfs.Status.Conditions, string(metal3api.FirmwareSettingsChangeDetected))
		}
	}
	return false
}

// hasCondition: baremetal-operator has said whether a change is pending.
func hasCondition(conds []metav1.Condition, t string) bool {
	return meta.FindStatusCondition(conds, t) != nil
}

// restore verifies the images the plan flashes (ErrMismatch), then writes
// what it asks into the spec of the host's
// HostFirmwareComponents (updates) and HostFirmwareSettings (settings).
func (r *Reconciler) restore(ctx context.Context, hfc *metal3api.HostFirmwareComponents, hfs *metal3api.HostFirmwareSettings, plan baseline.Restore) error {
	for _, c := range slices.Sorted(maps.Keys(plan.Flash)) {
		if err := r.Images.Verify(ctx, plan.Flash[c]); err != nil {
			return fmt.Errorf("the image of %s %s: %w", c, plan.Flash[c].Version, err)
		}
	}
	if len(plan.Flash) > 0 {
		orig := hfc.DeepCopy()
		hfc.Spec.Updates = nil
		for _, c := range slices.Sorted(maps.Keys(plan.Flash)) {
			hfc.Spec.Updates = append(hfc.Spec.Updates, metal3api.FirmwareUpdate{Component: c, URL: plan.Flash[c].URL})
		}
		if err := r.Client.Patch(ctx, hfc, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
			return fmt.Errorf("ask HostFirmwareComponents %s/%s for the updates: %w", hfc.Namespace, hfc.Name, err)
		}
	}
	if len(plan.BIOS) > 0 {
		orig := hfs.DeepCopy()
		if hfs.Spec.Settings == nil {
			hfs.Spec.Settings = metal3api.DesiredSettingsMap{}
		}
		for k, v := range plan.BIOS {
			hfs.Spec.Settings[k] = intstr.FromString(v)
		}
		if err := r.Client.Patch(ctx, hfs, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
			return fmt.Errorf("ask HostFirmwareSettings %s/%s for the settings: %w", hfs.Namespace, hfs.Name, err)
		}
	}
	return nil
}

// hold keeps the host out of the pool with the reason: the annotation
// (phase held) and a Warning Event.
func (r *Reconciler) hold(ctx context.Context, h *metal3api.BareMetalHost, p baseline.Progress, reason, format string, args ...any) (ctrl.Result, error) {
	msg := fmt.Sprintf(format, args...)
	r.event(h, corev1.EventTypeWarning, reason, "held out of the pool: %s", msg)
	return ctrl.Result{}, r.write(ctx, h, baseline.Progress{Phase: baseline.PhaseHeld, Reason: reason, Found: p.Found})
}

// write records the host's progress (none: free), with its
// resourceVersion.
func (r *Reconciler) write(ctx context.Context, h *metal3api.BareMetalHost, p baseline.Progress) error {
	orig := h.DeepCopy()
	if p.Phase == "" {
		delete(h.Annotations, hostfleetv1alpha1.AnnotationRestore)
	} else {
		h.Annotations[hostfleetv1alpha1.AnnotationRestore] = p.String()
	}
	w := hostwrites.Writer{Client: r.Client, Fence: r.Fence, Owner: hostwrites.FirmwareGate}
	if err := w.Patch(ctx, h, orig); err != nil && !apierrors.IsConflict(err) {
		return client.IgnoreNotFound(err)
	}
	return nil
}

func (r *Reconciler) event(h *metal3api.BareMetalHost, eventType, reason, note string, args ...any) {
	if r.Recorder != nil {
		r.Recorder.Eventf(h, nil, eventType, reason, "Restore", note, args...)
	}
}
