package bmcdriver

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"sync"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/hostfleet/hostfleet/agent/bmc"
	"github.com/hostfleet/hostfleet/agent/firmwareimage"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/internal/fence"
	"github.com/hostfleet/hostfleet/internal/hostwrites"
	"github.com/hostfleet/hostfleet/internal/requeue"
	"github.com/hostfleet/hostfleet/internal/resume"
	"github.com/hostfleet/hostfleet/internal/setup"
)

// Reconciler drives the BareMetalHosts Driven selects.
type Reconciler struct {
	Client client.Client
	// Secrets reads BMC credentials, uncached: the agent may get a Secret
	// by name but never list or watch them.
	Secrets client.Reader
	// All drives every host, not only the annotated ones.
	All bool
	// Namespaces, when set, limits the driver to the hosts of these
	// namespaces: the only ones whose BMC credentials the agent may read.
	Namespaces []string
	// BMC tunes the BMC calls.
	BMC bmc.Options
	// Poll is how often the power of a settled host is read again.
	Poll time.Duration
	// Power bounds power changes: re-sends, soft power-off, reboots.
	Power Timing
	// Eraser erases released hosts that require it (hostfleet.io/erase).
	Eraser Eraser
	// Baselines are the fleet's FirmwareBaselines (the cluster's
	// ClusterTenancy carries them): a released host is free again only
	// once it matches those that select it. Nil: no release gate.
	Baselines func(context.Context) ([]hostfleetv1alpha1.FirmwareBaseline, error)
	// Images verifies a firmware image against its baseline's checksum
	// before the BMC is asked to flash it; nil verifies nothing.
	Images *firmwareimage.Checker
	// Recorder, when set, receives Events on the hosts: power changes,
	// inspection, provisioning, errors.
	Recorder events.EventRecorder
	// Open opens a session with a host's BMC; nil means bmc.Open. Tests
	// give the state handlers a BMC of their own.
	Open func(ctx context.Context, addr bmc.Address, username, password string, o bmc.Options) (bmc.Driver, error)

	// Fence is the agent's write fence: the driver writes hosts through it
	// (a host cached at a version its own writes left is older than what it
	// wrote, and acting on it would do again what was done: an inspection,
	// a media insert). SetupWithManager makes one if nil.
	Fence *fence.Fence

	// unsent holds, by host UID, the last change whose record's write
	// failed: its command was not sent.
	unsent sync.Map
	// secrets keeps each credentials Secret read, by namespace and name
	// (session.go).
	secrets sync.Map
}

// hosts writes hosts as the BMC driver.
func (r *Reconciler) hosts() hostwrites.Writer {
	return hostwrites.Writer{Client: r.Client, Fence: r.Fence, Owner: hostwrites.BMCDriver}
}

// Defaults of Reconciler.Power: baremetal-operator's 3 minutes for a soft
// power-off.
var DefaultTiming = Timing{Wait: 2 * time.Minute, SoftOff: 3 * time.Minute, Settle: 10 * time.Second, Poll: 2 * time.Second}

// SetupWithManager watches the hosts of the managed cluster, which mgr
// runs (the agent's manager is the hub's; managed is added to it). Client
// must be managed's.
func (r *Reconciler) SetupWithManager(_ context.Context, mgr ctrl.Manager, o setup.Options) error {
	if r.Poll <= 0 {
		r.Poll = time.Minute
	}
	if r.Fence == nil {
		r.Fence = &fence.Fence{}
	}
	def := DefaultTiming
	for _, f := range []struct{ v, d *time.Duration }{{&r.Power.Wait, &def.Wait}, {&r.Power.SoftOff, &def.SoftOff},
		{&r.Power.Settle, &def.Settle}, {&r.Power.Poll, &def.Poll}} {
		if *f.v <= 0 {
			*f.v = *f.d
		}
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("bmc-driver").
		WatchesRawSource(source.Kind(o.Managed.GetCache(), &metal3api.BareMetalHost{},
			&handler.TypedEnqueueRequestForObject[*metal3api.BareMetalHost]{},
			predicate.TypedFuncs[*metal3api.BareMetalHost]{
				CreateFunc:  func(e event.TypedCreateEvent[*metal3api.BareMetalHost]) bool { return r.drives(e.Object) },
				DeleteFunc:  func(event.TypedDeleteEvent[*metal3api.BareMetalHost]) bool { return false },
				GenericFunc: func(e event.TypedGenericEvent[*metal3api.BareMetalHost]) bool { return r.drives(e.Object) },
				// Status writes are our own: spec, annotations and
				// deletion matter.
				UpdateFunc: func(e event.TypedUpdateEvent[*metal3api.BareMetalHost]) bool {
					return r.drives(e.ObjectNew) && (e.ObjectOld.GetGeneration() != e.ObjectNew.GetGeneration() ||
						!maps.Equal(e.ObjectOld.GetAnnotations(), e.ObjectNew.GetAnnotations()) ||
						e.ObjectNew.GetDeletionTimestamp() != nil)
				},
			})).
		WithOptions(o.Controller(10)).
		Complete(resume.Reconciler(r))
}

// drives says whether the driver drives host.
func (r *Reconciler) drives(host *metal3api.BareMetalHost) bool {
	return DrivenIn(host, r.All, r.Namespaces)
}

// Reconcile moves one host one step.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	host := &metal3api.BareMetalHost{}
	if err := r.Client.Get(ctx, req.NamespacedName, host); err != nil {
		if apierrors.IsNotFound(err) {
			r.Fence.Forget(fence.Hosts, &metal3api.BareMetalHost{ObjectMeta: metav1.ObjectMeta{Namespace: req.Namespace, Name: req.Name}})
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	driven := r.drives(host)
	if host.DeletionTimestamp != nil {
		return r.delete(ctx, host, driven)
	}
	if r.Fence.Behind(string(hostwrites.BMCDriver), fence.Hosts, host) {
		return ctrl.Result{RequeueAfter: requeue.CacheLag}, nil
	}
	switch {
	case !driven:
		// Handed back (annotation removed, paused, detached): let go.
		return ctrl.Result{}, r.setFinalizer(ctx, host, false)
	case !controllerutil.ContainsFinalizer(host, hostfleetv1alpha1.BMCDriverFinalizer):
		// Deleting a host the agent drives powers it off and ejects its
		// media first, as baremetal-operator deprovisions.
		if err := r.setFinalizer(ctx, host, true); err != nil {
			return requeue.OnConflict(err)
		}
	}
	// One BMC session for as many steps as follow each other (registering
	// to provisioning is four), and one status write for all of them: at
	// the end, or before a power command (which it remembers).
	x := &run{Reconciler: r, host: host, stored: host.DeepCopy()}
	defer x.close(ctx)
	if host.Status.OperationalStatus == "" {
		host.Status.OperationalStatus = metal3api.OperationalStatusOK // a new host, until an error says otherwise
	}
	for step := 1; ; step++ {
		var o outcome
		if x.d == nil {
			if err := x.open(ctx, errorKind(host)); err != nil {
				o = failed(err)
				if host.Status.Provisioning.State == metal3api.StateNone {
					host.Status.Provisioning.State = metal3api.StateRegistering
				}
			}
		}
		if o.err == nil {
			o = x.step(ctx)
		}
		if o.err == nil && o.proceed {
			if step < maxSteps {
				continue
			}
			o = outcome{after: time.Millisecond} // the next steps in a reconcile of their own, at once
		}
		return x.record(ctx, o)
	}
}

func (r *Reconciler) setFinalizer(ctx context.Context, host *metal3api.BareMetalHost, on bool) error {
	if controllerutil.ContainsFinalizer(host, hostfleetv1alpha1.BMCDriverFinalizer) == on {
		return nil
	}
	orig := host.DeepCopy()
	if on {
		controllerutil.AddFinalizer(host, hostfleetv1alpha1.BMCDriverFinalizer)
	} else {
		controllerutil.RemoveFinalizer(host, hostfleetv1alpha1.BMCDriverFinalizer)
	}
	return client.IgnoreNotFound(r.hosts().Patch(ctx, host, orig))
}

// delete powers a deleted host off and ejects its media (when it was
// deployed and is still driven), then lets it go.
func (r *Reconciler) delete(ctx context.Context, host *metal3api.BareMetalHost, driven bool) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(host, hostfleetv1alpha1.BMCDriverFinalizer) {
		return ctrl.Result{}, nil
	}
	switch host.Status.Provisioning.State {
	case metal3api.StateProvisioning, metal3api.StateProvisioned, metal3api.StateDeprovisioning:
		if !driven {
			break
		}
		x := &run{Reconciler: r, host: host, stored: host.DeepCopy()}
		defer x.close(ctx)
		off, o := false, outcome{}
		if err := x.open(ctx, metal3api.ProvisioningError); err != nil {
			o = failed(err)
		} else {
			off, o = x.offAndEjected(ctx, "deprovision before deletion")
		}
		if !off || o.err != nil {
			// Kept until it is off; the detached annotation lets it go
			// as is.
			res, err := x.record(ctx, o)
			return res, client.IgnoreNotFound(err)
		}
	}
	// The host goes: its HardwareData may go with it.
	if err := r.releaseHardware(ctx, host, false); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	r.forgetSecret(host)
	return ctrl.Result{}, r.setFinalizer(ctx, host, false)
}

// maxSteps bounds the steps taken in one reconcile.
const maxSteps = 6

// run is one reconcile of one host: the host as the steps change it, as
// last written, and its BMC session.
type run struct {
	*Reconciler
	host   *metal3api.BareMetalHost
	stored *metal3api.BareMetalHost
	d      bmc.Driver
	// user is the BMC account the session logged in as: the host's own.
	user string
	// After drivePower: the power read, the change under way, the change
	// that landed at this read.
	read           bmc.PowerState
	change, landed *Change
}

func (x *run) close(ctx context.Context) {
	if x.d != nil {
		_ = x.d.Close(context.WithoutCancel(ctx))
	}
}

// record writes what the steps did: their error or the end of one, the
// annotations they changed, then the status. It ends the reconcile.
func (x *run) record(ctx context.Context, o outcome) (ctrl.Result, error) {
	host, orig := x.host, x.stored
	if e := o.err; e != nil {
		switch {
		case host.Status.ErrorMessage != e.Msg || host.Status.ErrorType != e.Kind:
			x.event(corev1.EventTypeWarning, "BMCError", string(e.Kind), "%s", e.Msg)
			host.Status.ErrorCount++
		case o.after == 0:
			host.Status.ErrorCount++ // one more failed attempt
			// else: the same error while a change is followed at each
			// read, not a new attempt: no write for it.
		}
		host.Status.ErrorMessage = e.Msg
		host.Status.ErrorType = e.Kind
		host.Status.OperationalStatus = metal3api.OperationalStatusError
	} else if host.Status.ErrorType != "" || host.Status.OperationalStatus != metal3api.OperationalStatusOK {
		host.Status.ErrorCount, host.Status.ErrorMessage, host.Status.ErrorType = 0, "", ""
		host.Status.OperationalStatus = metal3api.OperationalStatusOK
	}
	// The annotations first (a done reboot or inspection request): a status
	// that says it is done never stands beside a request still there.
	if !maps.Equal(host.Annotations, orig.Annotations) {
		done := orig.DeepCopy()
		done.Annotations = maps.Clone(host.Annotations)
		if err := x.hosts().Patch(ctx, done, orig); err != nil {
			return recordFailed(host, err)
		}
		host.ResourceVersion = done.ResourceVersion
		orig.Annotations, orig.ResourceVersion = done.Annotations, done.ResourceVersion
	}
	if !equalStatus(orig, host) {
		if err := x.writeStatus(ctx); err != nil {
			return recordFailed(host, err)
		}
	}
	switch {
	case o.err != nil:
		wait := Retry(host)
		if o.after > 0 {
			wait = min(wait, o.after) // a change under way is read again sooner
		}
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	return ctrl.Result{RequeueAfter: o.after}, nil
}

// writeStatus writes the whole status, as its only writer (a patch on a
// host that has none yet would lack the fields the schema requires), with
// the host's resourceVersion: a host changed since it was read is not
// written. The annotations the steps changed are kept for record.
func (x *run) writeStatus(ctx context.Context) error {
	annotations := maps.Clone(x.host.Annotations)
	x.host.Annotations = maps.Clone(x.stored.Annotations)
	now := metav1.Now()
	x.host.Status.LastUpdated = &now
	if err := x.hosts().UpdateStatus(ctx, x.host, x.stored); err != nil {
		x.host.Annotations = annotations
		return err
	}
	x.stored = x.host.DeepCopy()
	x.host.Annotations = annotations
	return nil
}

// recordFailed ends a reconcile whose write failed: quietly on a conflict
// or a host that is gone.
func recordFailed(host *metal3api.BareMetalHost, err error) (ctrl.Result, error) {
	switch {
	case apierrors.IsConflict(err):
		return ctrl.Result{RequeueAfter: requeue.CacheLag}, nil
	case apierrors.IsNotFound(err):
		return ctrl.Result{}, nil
	}
	return ctrl.Result{}, fmt.Errorf("status of %s: %w", klog.KObj(host), err)
}

// event records an Event on the host, when the Reconciler has a recorder.
func (x *run) event(eventType, reason, action, note string, args ...any) {
	if x.Recorder != nil {
		x.Recorder.Eventf(x.host, nil, eventType, reason, action, note, args...)
	}
}

// outcome is what a step asks of the reconcile, as baremetal-operator's
// actionResult: go on with the next step now (its status is written
// first), look again after a while (0: only on the next event), or report
// the host's error (and, while a change is under way, still look again by
// then).
type outcome struct {
	proceed bool
	after   time.Duration
	err     *hostError
}

// next: the host moved to a state whose step follows at once.
func next() outcome { return outcome{proceed: true} }

// failed: the step failed with the host's error.
func failed(err *hostError) outcome { return outcome{err: err} }

// hostError is a step's error, as baremetal-operator reports it in the
// host's status (errorType, errorMessage).
type hostError struct {
	Kind metal3api.ErrorType
	Msg  string
}

func (e *hostError) Error() string { return string(e.Kind) + ": " + e.Msg }

func fail(kind metal3api.ErrorType, format string, args ...any) *hostError {
	return &hostError{Kind: kind, Msg: fmt.Sprintf(format, args...)}
}

// stateHandler does what one provisioning state asks of a host, once,
// through its BMC.
type stateHandler func(x *run, ctx context.Context) outcome

// handlers are the states the driver moves hosts through, as
// baremetal-operator's host state machine does.
var handlers = map[metal3api.ProvisioningState]stateHandler{
	metal3api.StateNone:           (*run).register,
	metal3api.StateRegistering:    (*run).register,
	metal3api.StateInspecting:     (*run).inspect,
	metal3api.StateAvailable:      (*run).available,
	metal3api.StateProvisioning:   (*run).provision,
	metal3api.StateProvisioned:    (*run).provisioned,
	metal3api.StateDeprovisioning: (*run).deprovision,
}

// step does what the host's state asks, once.
func (x *run) step(ctx context.Context) outcome {
	h, ok := handlers[x.host.Status.Provisioning.State]
	if !ok {
		return failed(fail(errorKind(x.host), "state %q is not one the agent's BMC driver handles", x.host.Status.Provisioning.State))
	}
	return h(x, ctx)
}

// equalStatus compares statuses but for when they were written and what
// the BMC reported last of a change under way (PoweringOn, then On...):
// a write for that alone would only record what the next read shows.
func equalStatus(a, b *metal3api.BareMetalHost) bool {
	x, y := a.Status.DeepCopy(), b.Status.DeepCopy()
	x.LastUpdated, y.LastUpdated = nil, nil
	for _, s := range []*metal3api.BareMetalHostStatus{x, y} {
		if c := meta.FindStatusCondition(s.Conditions, hostfleetv1alpha1.ConditionPowerChanging); c != nil && c.Status == metav1.ConditionTrue {
			c.Message, _, _ = strings.Cut(c.Message, readSuffix)
		}
	}
	return equality.Semantic.DeepEqual(x, y) // times by their instant, not their location
}
