package claim

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/hostfleet/hostfleet/agent/binder"
	"github.com/hostfleet/hostfleet/agent/hostspec"
	"github.com/hostfleet/hostfleet/agent/hoststatus"
	"github.com/hostfleet/hostfleet/agent/metrics"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/internal/claimstatus"
	"github.com/hostfleet/hostfleet/internal/conditions"
	"github.com/hostfleet/hostfleet/internal/requeue"
	"github.com/hostfleet/hostfleet/internal/setup"
)

// consumerIndex indexes BareMetalHosts by the claim their consumerRef
// names, whoever bound them: "<namespace>/<name>".
const consumerIndex = "hostfleet.consumer"

// IndexHosts registers the host index the controllers use; call it once per
// managed cluster, before setting controllers up.
func IndexHosts(ctx context.Context, managed cluster.Cluster) error {
	if err := managed.GetFieldIndexer().IndexField(ctx, &metal3api.BareMetalHost{}, consumerIndex,
		func(o client.Object) []string {
			ref := o.(*metal3api.BareMetalHost).Spec.ConsumerRef
			if ref == nil {
				return nil
			}
			return []string{consumerKey(ref.Namespace, ref.Name)}
		}); err != nil {
		return fmt.Errorf("index hosts by consumer: %w", err)
	}
	if err := managed.GetFieldIndexer().IndexField(ctx, &metal3api.BareMetalHost{}, freeIndex,
		func(o client.Object) []string {
			if binder.Free(o.(*metal3api.BareMetalHost)) {
				return []string{"true"}
			}
			return nil
		}); err != nil {
		return fmt.Errorf("index free hosts: %w", err)
	}
	return nil
}

// freeIndex marks ("true") the hosts that could be bound now (binder.Free).
const freeIndex = "hostfleet.free"

func consumerKey(namespace, name string) string {
	return namespace + "/" + name
}

// Reconciler binds claims to the hosts of one infrastructure cluster: hub
// claims placed on the cluster, or, in local mode, upstream HostClaims on the
// cluster itself. The same binder decides for both.
type Reconciler struct {
	// Claims reads (cached) and writes the claims: on the hub, label
	// filtered, or on the managed cluster in local mode.
	Claims client.Client
	// ClaimReader reads, uncached, what lives beside the claims: their
	// namespaces, secrets and HardwareData copies.
	ClaimReader client.Reader
	// Managed reads and writes hosts on the infrastructure cluster.
	Managed client.Client
	// Recorder emits events on the claims.
	Recorder events.EventRecorder

	// Consumer is how bound hosts name the claims: binder.HubConsumer or,
	// in local mode, binder.LocalConsumer.
	Consumer binder.Consumer
	// ClusterName is the managed cluster this agent serves.
	ClusterName string
	// RetryAfter is how long a claim with no host waits before it is looked at
	// again (host and policy events also wake it).
	RetryAfter time.Duration
	// Resync is how often a bound claim is looked at again, to pick up
	// changes of its hub secrets (which the agent reads but does not watch).
	Resync time.Duration
	// ManagedReader reads hosts from the managed cluster's API server,
	// uncached, where a stale cache must not decide.
	ManagedReader client.Reader
	// Hub and HubReader, in local mode, reach the hub: the HardwareData of
	// a claim forwarded from a hub claim is copied there. Nil: no copies.
	Hub       client.Client
	HubReader client.Reader
	// LocalNamespaces, in local mode, are the namespaces whose own claims
	// the agent serves beside the forwarded ones (binder.ServesLocal).
	LocalNamespaces []string

	// echo remembers the agent's own writes, whose watch events are not
	// reconciled again (SetupWithManager makes it).
	echo *echoes
	// wake carries coalesced wake-ups of the waiting claims.
	wake chan event.TypedGenericEvent[*metal3api.HostClaim]
	// warned holds the UIDs of the claims whose Event already says that
	// another HostClaim controller reconciles them too.
	warned *sync.Map
}

// Kinds the echoes are remembered by.
const (
	echoClaim = "HostClaim"
	echoHost  = "BareMetalHost"
)

// local reports whether the claims are local to the managed cluster.
func (r *Reconciler) local() bool { return r.Consumer.Hub == "" }

// Serving names the claims the reconciler serves, for messages.
func (r *Reconciler) Serving() string {
	if r.local() {
		return "local claims"
	}
	return "hub claims"
}

// serves says whether the agent serves the claim: every hub claim the cache
// holds; in local mode, the forwarded ones and those of LocalNamespaces.
func (r *Reconciler) serves(c *metal3api.HostClaim) bool {
	return !r.local() || binder.ServesLocal(c, r.LocalNamespaces)
}

// SetupWithManager wires the controller: claims from the manager's (hub)
// cache, or from the managed cluster's in local mode; hosts, HardwareData and
// policies from the managed cluster's cache. IndexHosts must have been called.
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, o setup.Options) error {
	managed := o.Managed
	if r.echo == nil {
		r.echo = &echoes{}
	}
	r.wake = make(chan event.TypedGenericEvent[*metal3api.HostClaim], 1)
	r.warned = &sync.Map{}
	claimIndexer := mgr.GetFieldIndexer()
	if r.local() {
		claimIndexer = managed.GetFieldIndexer()
	}
	if err := indexWaiting(ctx, claimIndexer); err != nil {
		return fmt.Errorf("index waiting and reserving claims: %w", err)
	}
	// The agent's own writes come back as watch events: the claim's (the
	// reservation, the status) and the bind's are not reconciled again.
	// Everything else is.
	b := ctrl.NewControllerManagedBy(mgr)
	if r.local() {
		served := predicate.NewTypedPredicateFuncs(func(c *metal3api.HostClaim) bool { return r.serves(c) })
		b = b.Named("local-hostclaim").WatchesRawSource(source.Kind(managed.GetCache(), &metal3api.HostClaim{},
			&handler.TypedEnqueueRequestForObject[*metal3api.HostClaim]{}, served, echoFilter[*metal3api.HostClaim](r.echo, echoClaim)))
	} else {
		b = b.Named("hostclaim").For(&metal3api.HostClaim{}, builder.WithPredicates(echoFilter[client.Object](r.echo, echoClaim)))
	}
	return b.
		WatchesRawSource(source.Kind(managed.GetCache(), &metal3api.BareMetalHost{},
			handler.TypedEnqueueRequestsFromMapFunc(r.claimsForHost), echoFilter[*metal3api.BareMetalHost](r.echo, echoHost))).
		WatchesRawSource(source.Kind(managed.GetCache(), &metal3api.HardwareData{},
			handler.TypedEnqueueRequestsFromMapFunc(r.claimsForHardware))).
		WatchesRawSource(source.Kind(managed.GetCache(), &metal3api.HostDeployPolicy{},
			handler.TypedEnqueueRequestsFromMapFunc(func(context.Context, *metal3api.HostDeployPolicy) []reconcile.Request {
				r.wakeWaiting()
				return nil
			}))).
		WatchesRawSource(source.Channel(r.wake, handler.TypedEnqueueRequestsFromMapFunc(
			func(ctx context.Context, _ *metal3api.HostClaim) []reconcile.Request { return r.waitingClaims(ctx) }))).
		WithOptions(o.Controller(1)).
		Complete(r)
}

// claimsForHost maps a host event to the claim that holds it (in local
// mode, also the claim another HostClaim controller bound it to: the agent
// leaves that claim), or, for a free host, to the claims reserving it and
// (coalesced) every claim still waiting for one.
func (r *Reconciler) claimsForHost(ctx context.Context, h *metal3api.BareMetalHost) []reconcile.Request {
	if ref := h.Spec.ConsumerRef; r.Consumer.Bound(h) || r.local() && binder.Upstream(ref) {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}}}
	}
	if !binder.Free(h) {
		return nil
	}
	r.wakeWaiting()
	// A claim waiting with its reservation on this host (held by a claim
	// that was gone, and just released) binds it now.
	var claims metal3api.HostClaimList
	if err := r.Claims.List(ctx, &claims, client.MatchingFields{reservedIndex: binder.ReservationValue(h)}, client.UnsafeDisableDeepCopy); err != nil {
		logr.FromContextOrDiscard(ctx).Error(err, "list the claims reserving a freed host", "host", klog.KObj(h))
		return nil
	}
	return requestsFor(claims.Items)
}

// wakeWaiting has every waiting claim looked at again, soon: a host became
// free, or a policy changed. Wake-ups coalesce: a burst of them (every host
// listed at start) enqueues the waiting claims once or twice, not once per
// host.
func (r *Reconciler) wakeWaiting() {
	select {
	case r.wake <- event.TypedGenericEvent[*metal3api.HostClaim]{Object: &metal3api.HostClaim{}}:
	default: // a wake-up is pending already
	}
}

// claimsForHardware maps a HardwareData event to the claim holding the host of
// the same name.
func (r *Reconciler) claimsForHardware(ctx context.Context, hw *metal3api.HardwareData) []reconcile.Request {
	h := &metal3api.BareMetalHost{}
	if err := r.Managed.Get(ctx, client.ObjectKeyFromObject(hw), h); err != nil {
		return nil
	}
	if !r.Consumer.Bound(h) {
		return nil
	}
	return r.claimsForHost(ctx, h)
}

func (r *Reconciler) waitingClaims(ctx context.Context) []reconcile.Request {
	var claims metal3api.HostClaimList
	if err := r.Claims.List(ctx, &claims, client.MatchingFields{waitingIndex: "true"}, client.UnsafeDisableDeepCopy); err != nil {
		logr.FromContextOrDiscard(ctx).Error(err, "list waiting claims")
		return nil
	}
	return requestsFor(claims.Items)
}

// requestsFor are the reconcile requests of objects.
func requestsFor[T any, PT interface {
	*T
	client.Object
}](items []T) []reconcile.Request {
	out := make([]reconcile.Request, 0, len(items))
	for i := range items {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(PT(&items[i]))})
	}
	return out
}

// waitingIndex marks ("true") the claims that reserve no host and
// are not being deleted: those a freed host or a policy change may serve.
const waitingIndex = "hostfleet.waiting"

// reservedIndex indexes the claims by the host they reserve
// ("<namespace>/<name>").
const reservedIndex = "hostfleet.reserved"

func indexWaiting(ctx context.Context, indexer client.FieldIndexer) error {
	if err := indexer.IndexField(ctx, &metal3api.HostClaim{}, waitingIndex, func(o client.Object) []string {
		c := o.(*metal3api.HostClaim)
		// A claim another controller serves waits for nothing of this agent's.
		if binder.Reservation(c) == nil && c.DeletionTimestamp == nil && binder.OtherController(c) == "" {
			return []string{"true"}
		}
		return nil
	}); err != nil {
		return err
	}
	return indexer.IndexField(ctx, &metal3api.HostClaim{}, reservedIndex, func(o client.Object) []string {
		if ref := binder.Reservation(o.(*metal3api.HostClaim)); ref != nil {
			return []string{ref.Namespace + "/" + ref.Name}
		}
		return nil
	})
}

// Reconcile binds, keeps or releases the host of one claim.
//
// A claim holds at most one host, under any concurrency, restarts or cache
// lag, because every binding goes through the claim's reservation:
//   - the host to bind is first named in the hostfleet.io/reserved-host
//     annotation (the reservation), written with the claim's resourceVersion
//     in one patch with the finalizer and the host's labels;
//   - the host is bound with its own resourceVersion (so it is never bound
//     to two claims);
//   - the host gets the claim's spec only after the status write that
//     confirms the binding (status.bareMetalHost), again with the claim's
//     resourceVersion;
//   - a reservation moves only after an uncached read shows the claim does
//     not hold that host, and any other host naming the claim (a binding that
//     lost a race) is unbound before it ever got the claim's spec.
//
// A claim bound on the first try costs three writes: the reservation, the
// bind and the confirmation, which carries every condition.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	c := &metal3api.HostClaim{}
	if err := r.Claims.Get(ctx, req.NamespacedName, c); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if r.echo.behind(echoClaim, c) {
		// The cache has not caught up with this agent's last write: decide
		// from what was written, shortly.
		return ctrl.Result{RequeueAfter: requeue.CacheLag}, nil
	}
	// The hub cache only holds claims placed on this cluster; a claim
	// relabelled away is no longer ours and disappears from it.
	if !r.local() && (c.Labels[hostfleetv1alpha1.LabelCluster] != r.ClusterName || c.Labels[hostfleetv1alpha1.LabelKind] == hostfleetv1alpha1.KindRemote) {
		return ctrl.Result{}, nil
	}
	if !r.serves(c) {
		return ctrl.Result{}, nil
	}
	if by, ok := conditions.PausedBy(c.Annotations); ok {
		return r.paused(ctx, c, by)
	}
	if !c.DeletionTimestamp.IsZero() {
		return r.release(ctx, c)
	}

	in, d, err := r.decide(ctx, c)
	if err != nil {
		return ctrl.Result{}, err
	}
	if d.Action == binder.Defer {
		return r.yield(ctx, c, d)
	}
	for _, h := range d.Strays {
		if _, err := r.releaseHost(ctx, c, h); err != nil {
			return requeue.OnConflict(err)
		}
		log.Info("unbound a stray host that named the claim", "host", klog.KObj(h))
	}
	if in.Reserved != nil && (d.Action == binder.Reserve || d.Action == binder.Wait && !d.KeepReservation) {
		// About to move or drop the reservation: make sure, without the
		// cache, that the claim does not hold the reserved host and that it
		// is not about to be bound.
		if stale, err := r.reservationStands(ctx, in); err != nil || stale {
			return ctrl.Result{RequeueAfter: requeue.CacheLag}, err
		}
	}
	if d.Action == binder.Wait {
		return r.wait(ctx, c, d)
	}

	prefixes, err := r.tenantPrefixes(ctx, in.NamespaceLabels)
	if err != nil {
		return ctrl.Result{}, err
	}
	if d.Action == binder.Reserve || d.Action == binder.Bind {
		// The reservation, the finalizer and the host's labels, in one
		// write (none when the reservation is already written).
		if err := r.syncMeta(ctx, c, d.Host, prefixes); err != nil {
			return requeue.OnConflict(err)
		}
		if err := r.bind(ctx, c, d.Host); err != nil {
			if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
				// Someone changed the host first (possibly another claim
				// bound it). Decide again from fresher data.
				log.Info("host changed while binding; deciding again", "host", d.Host.Name)
				return ctrl.Result{RequeueAfter: requeue.CacheLag}, nil
			}
			return ctrl.Result{}, err
		}
		log.Info("bound", "host", klog.KObj(d.Host))
	}
	return r.keep(ctx, c, d.Host, in, prefixes)
}

// decide is binder.Decide on the claim's inputs, the hosts it will write
// copied (they come from the cache uncopied).
func (r *Reconciler) decide(ctx context.Context, c *metal3api.HostClaim) (binder.Input, binder.Decision, error) {
	in, err := r.inputs(ctx, c)
	if err != nil {
		return in, binder.Decision{}, err
	}
	d := binder.Decide(in)
	ctrl.LoggerFrom(ctx).V(1).Info("decided", "action", d.Action.String(), "reason", d.Reason, "strays", len(d.Strays))
	if d.Host != nil {
		d.Host = d.Host.DeepCopy()
	}
	for i := range d.Strays {
		d.Strays[i] = d.Strays[i].DeepCopy()
	}
	return in, d, nil
}

// wait leaves the claim unbound, saying why, and looks again after
// RetryAfter.
func (r *Reconciler) wait(ctx context.Context, c *metal3api.HostClaim, d binder.Decision) (ctrl.Result, error) {
	if !d.KeepReservation {
		if err := r.syncMeta(ctx, c, nil, nil); err != nil {
			return requeue.OnConflict(err)
		}
	}
	assoc := associatedCondition(c, metav1.ConditionFalse, d.Reason, d.Message)
	if err := r.setStatus(ctx, c, nil, nil, assoc, nil); err != nil {
		return requeue.OnConflict(err)
	}
	return ctrl.Result{RequeueAfter: r.RetryAfter}, nil
}

// keep serves a claim bound to h: its metadata (reservation, finalizer,
// labels), the confirmation of the binding in its status, then the host's
// spec and secrets, reboots and HardwareData, and the conditions.
func (r *Reconciler) keep(ctx context.Context, c *metal3api.HostClaim, h *metal3api.BareMetalHost, in binder.Input, prefixes []string) (ctrl.Result, error) {
	if err := r.syncMeta(ctx, c, h, prefixes); err != nil {
		return requeue.OnConflict(err)
	}
	if err := r.migrate(ctx, c, h); err != nil {
		return requeue.OnConflict(err)
	}
	r.warnOtherController(c, h)
	plan, sync, err := r.planHost(ctx, c, h, binder.DetachAllowed(in, h))
	if err != nil {
		return ctrl.Result{}, err
	}
	hw, err := r.syncHardware(ctx, c, h)
	if err != nil {
		return ctrl.Result{}, err
	}
	assoc := associatedCondition(c, metav1.ConditionTrue, hostfleetv1alpha1.ReasonHostAssociated,
		fmt.Sprintf("bound to BareMetalHost %s on cluster %s", klog.KObj(h), r.ClusterName))
	if !confirmed(c, h) {
		// The confirmation carries every condition: with nothing to
		// write on the host, the claim's last write.
		pending := sync
		if plan != nil && plan.writes {
			pending = hoststatus.Sync{Reason: hostfleetv1alpha1.ReasonSynchronizing, Message: fmt.Sprintf(
				"writing the claim's image, power and data secrets to host %s", klog.KObj(h))}
		}
		if err := r.setStatus(ctx, c, h, hw, assoc, hoststatus.Conditions(c, h, pending)); err != nil {
			return requeue.OnConflict(err)
		}
		metrics.BindLatency.Observe(time.Since(c.CreationTimestamp.Time).Seconds())
	}
	if plan != nil {
		if sync, err = r.applyHost(ctx, c, h, plan); err != nil {
			return ctrl.Result{}, err
		}
	}
	if err := r.forwardReboot(ctx, c, h); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.setStatus(ctx, c, h, hw, assoc, hoststatus.Conditions(c, h, sync)); err != nil {
		return requeue.OnConflict(err)
	}
	// Hub secrets are read, not watched: look again now and then.
	return ctrl.Result{RequeueAfter: r.Resync}, nil
}

// warnOtherController says, once per claim and agent process, in a Warning
// Event, that another HostClaim controller (baremetal-operator's) also
// reconciles a claim this agent serves, and what to turn off.
func (r *Reconciler) warnOtherController(c *metal3api.HostClaim, h *metal3api.BareMetalHost) {
	if !r.local() || binder.OtherController(c) == "" {
		return
	}
	if _, done := r.warned.LoadOrStore(c.UID, true); done {
		return
	}
	r.Recorder.Eventf(c, nil, corev1.EventTypeWarning, hostfleetv1alpha1.ReasonTwoHostClaimControllers, "Serve",
		"baremetal-operator's HostClaim controller (finalizer %s) reconciles this claim too; the Hostfleet agent bound it to BareMetalHost %s and keeps serving it, "+
			"leaving the Associated and Ready conditions to the other controller. Run one HostClaim controller on cluster %s: "+
			"baremetal-operator without --hostclaims (or the agent without --local-claims)",
		metal3api.HostClaimFinalizer, klog.KObj(h), r.ClusterName)
}

// migrate rewrites the upstream consumerRef of a host an older agent bound
// to a local claim (binder.Consumer's Legacy) to the current one, which no
// other HostClaim controller takes for its own, with the host's
// resourceVersion.
func (r *Reconciler) migrate(ctx context.Context, c *metal3api.HostClaim, h *metal3api.BareMetalHost) error {
	if !r.Consumer.IsLegacy(h) {
		return nil
	}
	orig := h.DeepCopy()
	h.Spec.ConsumerRef = r.Consumer.Ref(c)
	if err := r.echo.patchLocked(ctx, r.Managed, echoHost, h, orig); err != nil {
		return fmt.Errorf("rewrite the consumerRef of host %s bound to %s: %w", klog.KObj(h), klog.KObj(c), err)
	}
	ctrl.LoggerFrom(ctx).Info("rewrote the host's upstream consumerRef", "host", klog.KObj(h), "apiVersion", h.Spec.ConsumerRef.APIVersion)
	return nil
}

// confirmed reports whether the claim's status already records the binding
// to h as associated.
func confirmed(c *metal3api.HostClaim, h *metal3api.BareMetalHost) bool {
	ref := c.Status.BareMetalHost
	cond := meta.FindStatusCondition(c.Status.Conditions, hostfleetv1alpha1.ConditionAssociated)
	return ref != nil && ref.Namespace == h.Namespace && ref.Name == h.Name &&
		cond != nil && cond.Status == metav1.ConditionTrue
}

// reservationStands reads the reserved host from the API server: if the claim
// holds it, or it is free and eligible, the cache is stale and the reservation
// must stand (true).
func (r *Reconciler) reservationStands(ctx context.Context, in binder.Input) (bool, error) {
	h := &metal3api.BareMetalHost{}
	err := r.ManagedReader.Get(ctx, client.ObjectKey{Namespace: in.Reserved.Namespace, Name: in.Reserved.Name}, h)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return true, fmt.Errorf("read reserved host %s/%s: %w", in.Reserved.Namespace, in.Reserved.Name, err)
	}
	return r.Consumer.Holds(h, in.Claim) || binder.Eligible(in, h), nil
}

func (r *Reconciler) inputs(ctx context.Context, c *metal3api.HostClaim) (binder.Input, error) {
	ns := &corev1.Namespace{}
	if err := r.hubGet(ctx, client.ObjectKey{Name: c.Namespace}, ns); err != nil {
		return binder.Input{}, fmt.Errorf("get hub namespace %s: %w", c.Namespace, err)
	}
	var policies metal3api.HostDeployPolicyList
	if err := r.Managed.List(ctx, &policies); err != nil {
		return binder.Input{}, fmt.Errorf("list HostDeployPolicies: %w", err)
	}
	// The hosts that matter: those naming the claim, and the free ones
	// unless the held ones decide. Decisions only read them: no deep copy
	// per reconcile. Whatever is written is copied first (see Reconcile).
	var held metal3api.BareMetalHostList
	if err := r.Managed.List(ctx, &held, client.MatchingFields{consumerIndex: consumerKey(c.Namespace, c.Name)},
		client.UnsafeDisableDeepCopy); err != nil {
		return binder.Input{}, fmt.Errorf("list the BareMetalHosts of %s: %w", klog.KObj(c), err)
	}
	in := binder.Input{Consumer: r.Consumer, Claim: c, NamespaceLabels: ns.Labels, Policies: policies.Items,
		Hosts: pointers(held.Items), Reserved: binder.Reservation(c)}
	var err error
	if in.ReservedHeldByGone, err = r.heldByGone(ctx, in.Reserved); err != nil || binder.HeldDecides(in) {
		return in, err
	}
	var free metal3api.BareMetalHostList
	if err := r.Managed.List(ctx, &free, client.MatchingFields{freeIndex: "true"}, client.UnsafeDisableDeepCopy); err != nil {
		return binder.Input{}, fmt.Errorf("list free BareMetalHosts: %w", err)
	}
	in.Hosts = append(in.Hosts, pointers(free.Items)...)
	return in, nil
}

// pointers points at each host of a list.
func pointers(items []metal3api.BareMetalHost) []*metal3api.BareMetalHost {
	out := make([]*metal3api.BareMetalHost, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}

// heldByGone returns the reserved host when a claim this agent bound holds
// it and the claim cache no longer has that claim (by UID), or nil.
func (r *Reconciler) heldByGone(ctx context.Context, reserved *metal3api.ObjectReference) (*metal3api.BareMetalHost, error) {
	if reserved == nil {
		return nil, nil
	}
	h := &metal3api.BareMetalHost{}
	if err := r.Managed.Get(ctx, client.ObjectKey{Namespace: reserved.Namespace, Name: reserved.Name}, h); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	if !r.Consumer.Bound(h) {
		return nil, nil
	}
	ref, holder := h.Spec.ConsumerRef, &metal3api.HostClaim{}
	err := r.Claims.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, holder)
	switch {
	case apierrors.IsNotFound(err) || err == nil && string(holder.UID) != h.Annotations[hostfleetv1alpha1.AnnotationClaimUID]:
		return h, nil
	case err != nil:
		return nil, fmt.Errorf("read the claim holding host %s: %w", klog.KObj(h), err)
	}
	return nil, nil
}

// hubGet reads a tenant namespace of the hub from the cache, which holds
// them all (the agent's hub cache watches tenant namespaces); what the
// cache lacks is read from the API server. Local claims' namespaces are
// always read from the API server.
func (r *Reconciler) hubGet(ctx context.Context, key client.ObjectKey, obj client.Object) error {
	if !r.local() {
		if err := r.Claims.Get(ctx, key, obj); err == nil {
			return nil
		}
	}
	return r.ClaimReader.Get(ctx, key, obj)
}

// bind writes the claim's consumerRef on the host. The patch carries the
// resourceVersion the decision was made on, so it fails with a conflict if
// anyone changed the host since: two claims can never both win one host.
func (r *Reconciler) bind(ctx context.Context, c *metal3api.HostClaim, h *metal3api.BareMetalHost) error {
	orig := h.DeepCopy()
	h.Spec.ConsumerRef = r.Consumer.Ref(c)
	if h.Annotations == nil {
		h.Annotations = map[string]string{}
	}
	for k, v := range r.Consumer.Annotations(c) {
		h.Annotations[k] = v
	}
	// A host taken wakes no waiting claim, and this one knows: its event
	// is an echo.
	if err := r.echo.patchLocked(ctx, r.Managed, echoHost, h, orig); err != nil {
		return fmt.Errorf("bind %s to host %s/%s: %w", klog.KObj(c), h.Namespace, h.Name, err)
	}
	return nil
}

// release frees every host the claim holds, then deletes the secret and
// HardwareData copies. Only then does the finalizer go.
func (r *Reconciler) release(ctx context.Context, c *metal3api.HostClaim) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(c, hostfleetv1alpha1.AgentFinalizer) {
		return ctrl.Result{}, nil
	}
	if res, done, err := r.releaseHeld(ctx, c); !done || err != nil {
		return res, err
	}
	orig := c.DeepCopy()
	controllerutil.RemoveFinalizer(c, hostfleetv1alpha1.AgentFinalizer)
	// A claim already gone (another reconcile lifted the finalizer first)
	// is what was wanted: no error.
	if err := r.Claims.Patch(ctx, c, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); client.IgnoreNotFound(err) != nil {
		return requeue.OnConflict(fmt.Errorf("remove finalizer from %s: %w", klog.KObj(c), err))
	}
	return ctrl.Result{}, nil
}

// yield leaves a local claim to the HostClaim controller that serves it
// (baremetal-operator's): it says so in an Event, releases the hosts this
// agent holds for it as on delete, takes back a binding it confirmed in the
// status, then drops its reservation and finalizer. It never touches the
// other controller's host or binding.
func (r *Reconciler) yield(ctx context.Context, c *metal3api.HostClaim, d binder.Decision) (ctrl.Result, error) {
	r.Recorder.Eventf(c, nil, corev1.EventTypeWarning, d.Reason, "Yield",
		"%s; the Hostfleet agent leaves the claim to it. Run one HostClaim controller per cluster: baremetal-operator without --hostclaims, or the agent without --local-claims", d.Message)
	_, reserved := c.Annotations[hostfleetv1alpha1.AnnotationReservedHost]
	if !controllerutil.ContainsFinalizer(c, hostfleetv1alpha1.AgentFinalizer) && !reserved {
		return ctrl.Result{}, r.dropDangling(ctx, c)
	}
	if res, done, err := r.releaseHeld(ctx, c); !done || err != nil {
		return res, err
	}
	// A binding this agent confirmed in the status goes with its host: the
	// other controller writes its own.
	if ref := c.Status.BareMetalHost; ref != nil && slices.ContainsFunc(d.Strays, func(h *metal3api.BareMetalHost) bool {
		return h.Namespace == ref.Namespace && h.Name == ref.Name
	}) {
		if err := r.setStatus(ctx, c, nil, nil, associatedCondition(c, metav1.ConditionFalse, d.Reason, d.Message), nil); err != nil {
			return requeue.OnConflict(err)
		}
	}
	orig := c.DeepCopy()
	controllerutil.RemoveFinalizer(c, hostfleetv1alpha1.AgentFinalizer)
	delete(c.Annotations, hostfleetv1alpha1.AnnotationReservedHost)
	if err := r.echo.patchLocked(ctx, r.Claims, echoClaim, c, orig); client.IgnoreNotFound(err) != nil {
		return requeue.OnConflict(fmt.Errorf("leave %s to its other controller: %w", klog.KObj(c), err))
	}
	ctrl.LoggerFrom(ctx).Info("left the claim to another HostClaim controller", "why", d.Message)
	// The other controller may have named the released host in the status
	// meanwhile (its association crossed the release): no event of its
	// write may come again.
	return ctrl.Result{}, r.dropDangling(ctx, c)
}

// dropDangling clears a claim's status.bareMetalHost that names a host
// whose consumerRef, read from the API server, does not name the claim: an
// association the other controller recorded while this agent released the
// host it had adopted (a release and an adoption from a stale cache can
// cross). Cleared, the other controller associates the claim again; left,
// two claims' status would name one host.
func (r *Reconciler) dropDangling(ctx context.Context, c *metal3api.HostClaim) error {
	ref := c.Status.BareMetalHost
	if ref == nil {
		return nil
	}
	h := &metal3api.BareMetalHost{}
	err := r.ManagedReader.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, h)
	if client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("read host %s named by %s/%s: %w", klog.KRef(ref.Namespace, ref.Name), c.Namespace, c.Name, err)
	}
	if ref := h.Spec.ConsumerRef; err == nil && ref != nil && ref.Kind == hostfleetv1alpha1.ConsumerKind && ref.Namespace == c.Namespace && ref.Name == c.Name {
		return nil // bound to the claim: by the other controller
	}
	_, err = claimstatus.Write(ctx, r.Claims, claimstatus.Agent, r.kind(c), c, func(st *metal3api.HostClaimStatus) { st.BareMetalHost = nil })
	if client.IgnoreNotFound(err) != nil {
		if apierrors.IsConflict(err) {
			return nil // the claim moved on: looked at again on its event
		}
		return fmt.Errorf("clear the dangling host of %s: %w", klog.KObj(c), err)
	}
	r.Recorder.Eventf(c, nil, corev1.EventTypeWarning, hostfleetv1alpha1.ReasonServedByOtherController, "Yield",
		"status.bareMetalHost named %s/%s, which is not bound to the claim (released while its other controller adopted it): cleared, for that controller to associate the claim again",
		ref.Namespace, ref.Name)
	return nil
}

// releaseHeld frees every host the claim holds and deletes the secret and
// HardwareData copies; done once all of it is gone (else the result says
// when to look again).
func (r *Reconciler) releaseHeld(ctx context.Context, c *metal3api.HostClaim) (ctrl.Result, bool, error) {
	held, err := r.held(ctx, c)
	if err != nil {
		return ctrl.Result{}, false, err
	}
	for _, h := range held {
		done, err := r.releaseHost(ctx, c, h)
		if err != nil {
			res, err := requeue.OnConflict(err)
			return res, false, err
		}
		if done {
			r.Recorder.Eventf(c, nil, corev1.EventTypeNormal, hostfleetv1alpha1.ReasonReleasing, "Release",
				"released BareMetalHost %s on cluster %s", klog.KObj(h), r.ClusterName)
		}
		if err := r.deleteCopies(ctx, c, h.Namespace, nil); err != nil {
			return ctrl.Result{}, false, err
		}
		if !done {
			// The host's status changes wake this claim up again.
			if err := r.setStatus(ctx, c, h, c.Status.HardwareData, associatedCondition(c, metav1.ConditionTrue, hostfleetv1alpha1.ReasonReleasing,
				fmt.Sprintf("releasing BareMetalHost %s: %s", klog.KObj(h), hostspec.Releasing(h))),
				hoststatus.Conditions(c, h, hoststatus.Sync{OK: true})); err != nil {
				res, err := requeue.OnConflict(err)
				return res, false, err
			}
			return ctrl.Result{RequeueAfter: r.RetryAfter}, false, nil
		}
	}
	if err := r.deleteHardwareCopy(ctx, c); err != nil {
		return ctrl.Result{}, false, err
	}
	return ctrl.Result{}, true, nil
}

// held are the hosts the claim holds: those the cache shows, and its
// reserved host read from the API server when the cache does not show it
// held (binder.Unconfirmed).
func (r *Reconciler) held(ctx context.Context, c *metal3api.HostClaim) ([]*metal3api.BareMetalHost, error) {
	var hosts metal3api.BareMetalHostList
	if err := r.Managed.List(ctx, &hosts, client.MatchingFields{consumerIndex: consumerKey(c.Namespace, c.Name)}); err != nil {
		return nil, fmt.Errorf("list hosts of %s: %w", klog.KObj(c), err)
	}
	var held []*metal3api.BareMetalHost
	for i := range hosts.Items {
		if r.Consumer.Holds(&hosts.Items[i], c) {
			held = append(held, &hosts.Items[i])
		}
	}
	ref := binder.Unconfirmed(c, held)
	if ref == nil {
		return held, nil
	}
	h := &metal3api.BareMetalHost{}
	err := r.ManagedReader.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, h)
	switch {
	case err == nil && r.Consumer.Holds(h, c):
		held = append(held, h)
	case client.IgnoreNotFound(err) != nil:
		return nil, fmt.Errorf("read host %s reserved by %s: %w", klog.KRef(ref.Namespace, ref.Name), klog.KObj(c), err)
	}
	return held, nil
}

// releaseHost powers a host held by the claim off and removes the image
// (baremetal-operator deprovisions). Once the host has settled it clears the
// consumerRef and reports done.
func (r *Reconciler) releaseHost(ctx context.Context, c *metal3api.HostClaim, h *metal3api.BareMetalHost) (bool, error) {
	if err := r.Managed.Apply(ctx, client.ApplyConfigurationFromUnstructured(hostspec.Released(h)),
		client.FieldOwner(hostfleetv1alpha1.FieldManagerAgent), client.ForceOwnership); err != nil {
		return false, fmt.Errorf("deprovision host %s of %s/%s: %w", klog.KObj(h), c.Namespace, c.Name, err)
	}
	if !hostspec.Settled(h) {
		return false, nil
	}
	orig := h.DeepCopy()
	h.Spec.ConsumerRef = nil
	delete(h.Annotations, hostfleetv1alpha1.AnnotationHub)
	delete(h.Annotations, hostfleetv1alpha1.AnnotationClaimUID)
	delete(h.Annotations, hostfleetv1alpha1.AnnotationOrphanedSince)
	if err := r.Managed.Patch(ctx, h, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
		return false, fmt.Errorf("release host %s of %s/%s: %w", klog.KObj(h), c.Namespace, c.Name, err)
	}
	ctrl.LoggerFrom(ctx).Info("released", "host", klog.KObj(h), "claim", klog.KObj(c))
	return true, nil
}

func associatedCondition(c *metal3api.HostClaim, status metav1.ConditionStatus, reason, msg string) metav1.Condition {
	return metav1.Condition{Type: hostfleetv1alpha1.ConditionAssociated, Status: status, Reason: reason, Message: msg,
		ObservedGeneration: c.Generation}
}

// setStatus writes status.bareMetalHost, hardwareData, poweredOn and the
// conditions the agent owns on the claim (claimstatus: on a local claim
// baremetal-operator also reconciles, Associated and Ready are that
// controller's, which rewrites them on every reconcile), only when
// something changed (one status write per change, not per reconcile), and
// only if the claim has not changed since it was read.
func (r *Reconciler) setStatus(ctx context.Context, c *metal3api.HostClaim, h *metal3api.BareMetalHost, hw *metal3api.ObjectReference,
	assoc metav1.Condition, conds []metav1.Condition) error {
	kind := r.kind(c)
	if conds == nil {
		conds = hoststatus.Conditions(c, nil, hoststatus.Sync{})
	}
	orig, changed, err := claimstatus.Update(claimstatus.Agent, kind, c, func(st *metal3api.HostClaimStatus) {
		st.BareMetalHost, st.PoweredOn, st.HardwareData = nil, false, hw
		if h != nil {
			st.BareMetalHost = &metal3api.ObjectReference{Namespace: h.Namespace, Name: h.Name}
			st.PoweredOn = h.Status.PoweredOn
		}
		for _, cond := range append([]metav1.Condition{assoc}, conds...) {
			if claimstatus.Owns(claimstatus.Agent, kind, claimstatus.Condition(cond.Type)) {
				conditions.Set(&st.Conditions, cond)
			}
		}
		conditions.SetPaused(&st.Conditions, c.Annotations, !c.DeletionTimestamp.IsZero(), c.Generation)
	})
	if err != nil || !changed {
		return err
	}
	now := metav1.Now()
	c.Status.LastUpdated = &now
	// With the claim's resourceVersion: the status holds the reservation,
	// and a write from a stale view must fail rather than move it.
	if err := r.echo.write(echoClaim, c, func() error {
		return r.Claims.Status().Patch(ctx, c, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))
	}); err != nil {
		return fmt.Errorf("write status of %s: %w", klog.KObj(c), err)
	}
	return nil
}

// kind is the claim's kind for the status it writes: a hub claim on the
// pull path, or a local claim (one baremetal-operator also reconciles, if
// it carries that controller's finalizer).
func (r *Reconciler) kind(c *metal3api.HostClaim) claimstatus.Kind {
	if r.local() {
		return claimstatus.LocalKind(c)
	}
	return claimstatus.HubKind(c)
}
