package claim

import (
	"context"
	"fmt"
	"sync"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/hostfleet/hostfleet/agent/binder"
	"github.com/hostfleet/hostfleet/agent/servedtenants"
	"github.com/hostfleet/hostfleet/hub/api/hardware"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/internal/conditions"
	"github.com/hostfleet/hostfleet/internal/fence"
	"github.com/hostfleet/hostfleet/internal/hostwrites"
	"github.com/hostfleet/hostfleet/internal/requeue"
)

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
	// Erase is how hosts are erased at release.
	Erase Erase
	// Healing is how claims whose hosts fail are healed.
	Healing Healing

	// Fence remembers the agent's own writes, whose watch events are not
	// reconciled again: the agent's one fence, shared by every writer of
	// its hosts (SetupWithManager makes one if nil).
	Fence *fence.Fence
	// hosts writes hosts as the claim controller (SetupWithManager).
	hosts hostwrites.Writer
	// wake carries coalesced wake-ups of the waiting claims.
	wake chan event.TypedGenericEvent[*metal3api.HostClaim]
	// warned holds the UIDs of the claims whose Event already says that
	// another HostClaim controller reconciles them too.
	warned *sync.Map
}

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

// ours says whether the agent binds and keeps a host for the claim: one it
// serves, placed on its cluster (the hub cache holds only those; a claim
// relabelled away disappears from it) on the pull path, and admitted by the
// hub: a tenant's pin the scheduler has not let through yet (a full host
// class holds it back, or it has not looked) gets nothing.
func (r *Reconciler) ours(c *metal3api.HostClaim) bool {
	if r.local() {
		return r.serves(c)
	}
	return c.Labels[hostfleetv1alpha1.LabelCluster] == r.ClusterName && c.Labels[hostfleetv1alpha1.LabelKind] != hostfleetv1alpha1.KindRemote &&
		conditions.Admitted(c)
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
	if r.Fence.Behind(r.hosts.Name, fence.Claims, c) {
		// The cache has not caught up with this agent's last write: decide
		// from what was written, shortly.
		return ctrl.Result{RequeueAfter: requeue.CacheLag}, nil
	}
	if !r.ours(c) {
		// One the agent served before still goes.
		if !c.DeletionTimestamp.IsZero() && r.serves(c) && controllerutil.ContainsFinalizer(c, hostfleetv1alpha1.AgentFinalizer) {
			return r.release(ctx, c)
		}
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
		if _, err := r.releaseHost(ctx, r.hosts, c, h); err != nil {
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
		if err := r.bind(ctx, c, d.Host, in.Erase); err != nil {
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
		if err := r.letGo(ctx, c); err != nil {
			return requeue.OnConflict(err)
		}
	}
	assoc := associatedCondition(c, metav1.ConditionFalse, d.Reason, d.Message)
	if err := r.setStatus(ctx, c, nil, nil, assoc, nil); err != nil {
		return requeue.OnConflict(err)
	}
	return ctrl.Result{RequeueAfter: r.RetryAfter}, nil
}

func (r *Reconciler) inputs(ctx context.Context, c *metal3api.HostClaim) (binder.Input, error) {
	nsLabels, err := r.namespaceLabels(ctx, c.Namespace)
	if err != nil {
		return binder.Input{}, err
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
	mode, err := r.eraseOf(ctx, c, nsLabels)
	if err != nil {
		return binder.Input{}, err
	}
	in := binder.Input{Consumer: r.Consumer, Claim: c, NamespaceLabels: nsLabels, Policies: policies.Items,
		Hosts: pointers(held.Items), Reserved: binder.Reservation(c), Erase: mode, EraseSupport: r.Erase.support}
	expr, asks := c.Annotations[hostfleetv1alpha1.AnnotationHardware]
	if asks {
		in.Hardware, in.HardwareInvalid = hardware.Cached(expr)
	}
	// Hosts' hardware is read for a requirement, and for the full classes
	// by hardware the hub keeps the claim off.
	if asks || c.Annotations[hostfleetv1alpha1.AnnotationExcludedHosts] != "" {
		in.View = func(h *metal3api.BareMetalHost) *hostfleetv1alpha1.HardwareView {
			hd := &metal3api.HardwareData{}
			if err := r.Managed.Get(ctx, client.ObjectKeyFromObject(h), hd, client.UnsafeDisableDeepCopy); err != nil {
				return nil // not inspected (or not yet in the cache): meets nothing
			}
			return hardware.OfData(hd)
		}
	}
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

// namespaceLabels are the labels of a claim's namespace: a hub claim's as
// the cluster's ClusterTenancy gives them (agents read no Namespace on the
// hub: a ClusterRoleBinding per agent would cost every hub request a walk
// over one more binding per cluster); a local claim's namespace is read
// from the managed cluster.
func (r *Reconciler) namespaceLabels(ctx context.Context, ns string) (map[string]string, error) {
	if r.local() {
		n := &corev1.Namespace{}
		if err := r.ClaimReader.Get(ctx, client.ObjectKey{Name: ns}, n); err != nil {
			return nil, fmt.Errorf("get namespace %s: %w", ns, err)
		}
		return n.Labels, nil
	}
	ct, err := servedtenants.Get(ctx, r.Claims, r.ClusterName)
	if err != nil {
		return nil, err
	}
	labels, ok := servedtenants.NamespaceLabels(ct, ns)
	if !ok {
		return nil, fmt.Errorf("namespace %s is not a namespace of a tenant cluster %s serves (its ClusterTenancy): the hub has not written it yet, or the tenant's cluster set no longer holds the cluster", ns, r.ClusterName)
	}
	return labels, nil
}
