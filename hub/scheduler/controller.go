package scheduler

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// Indexes on HostClaims.
const (
	// pendingIndex: the cluster of a claim placed there (not being
	// deleted); those its cluster's inventory does not count yet are
	// pending (uncounted).
	pendingIndex = "hostfleet.pending-on"
	// unplacedIndex: "true" for claims without a cluster.
	unplacedIndex = "hostfleet.unplaced"
)

// Reconciler places claims.
type Reconciler struct {
	Client client.Client
	// Recorder records an Event on a claim whenever its Scheduled condition
	// changes; SetupWithManager makes one if nil.
	Recorder events.EventRecorder
	// Deadline is how long a placed claim may stay unbound before it is
	// placed elsewhere, from its Scheduled condition.
	Deadline time.Duration
	// ConfirmGrace is how long the scheduler leaves the Scheduled condition
	// of a claim it placed to the agent (default DefaultConfirmGrace): a
	// placement is one write, the cluster label, and the agent's first
	// status write says Placed. An agent that does not write in time gets
	// it written by the scheduler, which also starts the Deadline.
	ConfirmGrace time.Duration

	// Workers is how many claims are worked on at once (default 1):
	// decisions are still taken one at a time, their writes concurrently.
	Workers int

	// placed remembers the claims this scheduler placed until its cache
	// shows them, so that the next decision counts them even if the watch
	// event has not arrived yet; recorded before the write, so that a
	// decision taken while it is in flight counts it too.
	expect expectations
	// confirm are the placements whose Scheduled condition is left to
	// the agent.
	confirm confirmations
	// deciding serializes decisions.
	deciding sync.Mutex

	// claims and inventories are the cache's own stores, read without
	// copies: a decision over 1 000 clusters reads 1 000 inventories and
	// 1 000 lists of placed claims, which through the client (a deep copy
	// each, and reflection) cost most of the hub controller's CPU (make
	// bench-scale). What they return is never changed.
	claims, inventories toolscache.Indexer
}

// expectations are placements written but maybe not yet in the cache.
type expectations struct {
	mu sync.Mutex
	m  map[types.UID]expected
}

type expected struct {
	claim *metal3api.HostClaim
	at    time.Time
}

// remove forgets the placement of c on cluster, and only that one: a
// later placement of the same claim is not forgotten by an earlier write's
// failure.
func (e *expectations) remove(c *metal3api.HostClaim, cluster string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if x, ok := e.m[c.UID]; ok && x.claim.Labels[hostfleetv1alpha1.LabelCluster] == cluster {
		delete(e.m, c.UID)
	}
}

// has reports whether a placement of c is expected: written, or being
// written, and not yet shown by the cache (after missing).
func (e *expectations) has(c *metal3api.HostClaim) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	_, ok := e.m[c.UID]
	return ok
}

// add remembers the placement of c on cluster (a copy of c, labelled).
func (e *expectations) add(c *metal3api.HostClaim, cluster string) {
	placed := c.DeepCopy()
	if placed.Labels == nil {
		placed.Labels = map[string]string{}
	}
	placed.Labels[hostfleetv1alpha1.LabelCluster] = cluster
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.m == nil {
		e.m = map[types.UID]expected{}
	}
	e.m[c.UID] = expected{claim: placed, at: time.Now()}
}

// missing are, by cluster, the claims placed there that the cache does not
// show placed yet; those it shows (or older than a minute) are forgotten.
func (e *expectations) missing(placed func(*metal3api.HostClaim) bool) map[string][]*metal3api.HostClaim {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := map[string][]*metal3api.HostClaim{}
	for uid, x := range e.m {
		if placed(x.claim) || time.Since(x.at) > time.Minute {
			delete(e.m, uid)
			continue
		}
		cl := x.claim.Labels[hostfleetv1alpha1.LabelCluster]
		out[cl] = append(out[cl], x.claim)
	}
	return out
}

// DefaultConfirmGrace is the default Reconciler.ConfirmGrace, above the
// time in which agents write their first status even when the hub is
// loaded (make bench-scale, 1 000 clusters on 2 cores: created → Ready
// p99 6.4 s).
const DefaultConfirmGrace = 10 * time.Second

// confirmations remember when this scheduler placed each claim whose
// Scheduled condition it left to the agent. Forgotten after a restart: the
// scheduler then writes the condition of a placed claim that lacks it at
// once, as it does when the grace is over.
type confirmations struct {
	mu sync.Mutex
	m  map[types.UID]time.Time
}

func (p *confirmations) add(uid types.UID) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil {
		p.m = map[types.UID]time.Time{}
	}
	if len(p.m) >= 1024 {
		// Claims deleted before they were looked at again.
		for u, at := range p.m {
			if time.Since(at) > time.Minute {
				delete(p.m, u)
			}
		}
	}
	p.m[uid] = time.Now()
}

// left is how long the agent still has to write the Scheduled condition of
// the claim; 0 when this scheduler did not place it, or the time is up (it
// is then forgotten).
func (p *confirmations) left(uid types.UID, grace time.Duration) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	at, ok := p.m[uid]
	if !ok {
		return 0
	}
	if left := grace - time.Since(at); left > 0 {
		return left
	}
	delete(p.m, uid)
	return 0
}

func (p *confirmations) forget(uid types.UID) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.m, uid)
}

// shownPlaced reports whether the cache shows the claim placed, or gone.
func (r *Reconciler) shownPlaced(c *metal3api.HostClaim) bool {
	obj, found, err := r.claims.GetByKey(c.Namespace + "/" + c.Name)
	if err != nil {
		return false
	}
	seen, ok := obj.(*metal3api.HostClaim)
	return !found || !ok || seen.UID != c.UID || seen.Labels[hostfleetv1alpha1.LabelCluster] != ""
}

// storeOf is the manager cache's informer of obj's kind, as the client-go
// informer it is.
func storeOf(ctx context.Context, mgr ctrl.Manager, obj client.Object) (toolscache.SharedIndexInformer, error) {
	inf, err := mgr.GetCache().GetInformer(ctx, obj)
	if err != nil {
		return nil, fmt.Errorf("informer for %T: %w", obj, err)
	}
	sii, ok := inf.(toolscache.SharedIndexInformer)
	if !ok {
		return nil, fmt.Errorf("informer for %T is a %T, not a SharedIndexInformer", obj, inf)
	}
	return sii, nil
}

func isRemote(c *metal3api.HostClaim) bool {
	return c.Labels[hostfleetv1alpha1.LabelKind] == hostfleetv1alpha1.KindRemote
}

func associated(c *metal3api.HostClaim) bool {
	return meta.IsStatusConditionTrue(c.Status.Conditions, hostfleetv1alpha1.ConditionAssociated)
}

// uncounted reports whether a claim placed on a cluster takes a host its
// inventory still counts as available: not bound yet, or bound after the
// agent last wrote the inventory. The agent writes both times, with one
// clock, to the second: a claim bound in the second the inventory was
// written is counted twice rather than not at all.
func uncounted(c *metal3api.HostClaim, inv *hostfleetv1alpha1.HostInventory) bool {
	cond := meta.FindStatusCondition(c.Status.Conditions, hostfleetv1alpha1.ConditionAssociated)
	if cond == nil || cond.Status != metav1.ConditionTrue || inv == nil || inv.Status.LastUpdated == nil {
		return true
	}
	return !cond.LastTransitionTime.Before(inv.Status.LastUpdated)
}

// SetupWithManager wires the controller and its indexes.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Recorder == nil {
		r.Recorder = mgr.GetEventRecorder("hostfleet-scheduler")
	}
	ctx := context.Background()
	claims, err := storeOf(ctx, mgr, &metal3api.HostClaim{})
	if err != nil {
		return err
	}
	if err := claims.AddIndexers(toolscache.Indexers{
		pendingIndex: func(o any) ([]string, error) {
			c, ok := o.(*metal3api.HostClaim)
			if !ok || c.DeletionTimestamp != nil || c.Labels[hostfleetv1alpha1.LabelCluster] == "" {
				return nil, nil
			}
			return []string{c.Labels[hostfleetv1alpha1.LabelCluster]}, nil
		},
		unplacedIndex: func(o any) ([]string, error) {
			c, ok := o.(*metal3api.HostClaim)
			if !ok || c.DeletionTimestamp != nil || c.Labels[hostfleetv1alpha1.LabelCluster] != "" {
				return nil, nil
			}
			return []string{"true"}, nil
		},
	}); err != nil {
		return fmt.Errorf("index claims: %w", err)
	}
	inventories, err := storeOf(ctx, mgr, &hostfleetv1alpha1.HostInventory{})
	if err != nil {
		return err
	}
	r.claims, r.inventories = claims.GetIndexer(), inventories.GetIndexer()
	unplaced := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, _ client.Object) []reconcile.Request {
		unplaced, err := r.claims.ByIndex(unplacedIndex, "true")
		if err != nil {
			return nil
		}
		out := make([]reconcile.Request, 0, len(unplaced))
		for _, o := range unplaced {
			if c, ok := o.(*metal3api.HostClaim); ok {
				out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(c)})
			}
		}
		return out
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("scheduler").
		For(&metal3api.HostClaim{}).
		Watches(&hostfleetv1alpha1.HostInventory{}, unplaced).
		Watches(&hostfleetv1alpha1.Tenant{}, unplaced).
		Watches(&clusterv1beta1.PlacementDecision{}, unplaced).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(1, r.Workers)}).
		Complete(r)
}

// cacheLag is how long a claim waits before it is looked at again when the
// cache is behind: its placement not shown yet, or a write that conflicted.
const cacheLag = 100 * time.Millisecond

// Reconcile places, checks or re-places one claim.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	c := &metal3api.HostClaim{}
	if err := r.Client.Get(ctx, req.NamespacedName, c); err != nil || !c.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	t, err := r.tenant(ctx, c.Namespace)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("find the tenant of claim %s/%s: %w", c.Namespace, c.Name, err)
	}
	if t == nil {
		return requeueOnConflict(r.setScheduled(ctx, c, false, hostfleetv1alpha1.ReasonNoTenant,
			fmt.Sprintf("namespace %s belongs to no Tenant: claims are served only in tenant namespaces", c.Namespace)))
	}
	clusters, err := r.candidates(ctx, c, t)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("candidate clusters of claim %s/%s: %w", c.Namespace, c.Name, err)
	}
	if cluster := c.Labels[hostfleetv1alpha1.LabelCluster]; cluster != "" {
		return r.placed(ctx, c, t, cluster, clusters)
	}
	if host := holds(c); host != "" {
		// It holds a host on the cluster its label named: placing it again
		// would strand that host. Only the agent that holds it lets it go.
		return requeueOnConflict(r.setScheduled(ctx, c, false, hostfleetv1alpha1.ReasonHoldsHost, fmt.Sprintf(
			"the claim holds host %s but has no %s label: it is not placed elsewhere; put the label back, or delete the claim to release the host",
			host, hostfleetv1alpha1.LabelCluster)))
	}

	in := Input{Claim: c, Clusters: clusters, Inventories: map[string]*hostfleetv1alpha1.HostInventory{},
		Pending: map[string][]*metal3api.HostClaim{}, Prefixes: t.Spec.LabelSyncPrefixes, Exclude: map[string]bool{},
		Placement: c.Annotations[hostfleetv1alpha1.AnnotationPlacement], SetClusters: t.Status.Clusters, Remote: isRemote(c)}
	for _, e := range strings.Split(c.Annotations[hostfleetv1alpha1.AnnotationExcluded], ",") {
		if e != "" {
			in.Exclude[e] = true
		}
	}
	// Decisions are taken one at a time, each counting the placements
	// before it (expectations, recorded before their writes); the writes
	// run concurrently (Workers).
	r.deciding.Lock()
	decided := false
	defer func() {
		if !decided {
			r.deciding.Unlock()
		}
	}()
	missing := r.expect.missing(r.shownPlaced)
	if r.expect.has(c) {
		// Placed already, and the cache does not show it yet (this view
		// of the claim is stale): deciding again would place it twice,
		// and the placement it has would stop being counted.
		return ctrl.Result{RequeueAfter: cacheLag}, nil
	}
	for _, cl := range clusters {
		obj, found, err := r.inventories.GetByKey(cl + "/" + cl)
		if err != nil {
			return ctrl.Result{}, fmt.Errorf("read HostInventory %s/%s: %w", cl, cl, err)
		}
		if inv, ok := obj.(*hostfleetv1alpha1.HostInventory); found && ok {
			in.Inventories[cl] = inv
		}
		placed, err := r.claims.ByIndex(pendingIndex, cl)
		if err != nil {
			return ctrl.Result{}, fmt.Errorf("list the claims pending on %s: %w", cl, err)
		}
		for _, o := range placed {
			if p, ok := o.(*metal3api.HostClaim); ok && uncounted(p, in.Inventories[cl]) {
				in.Pending[cl] = append(in.Pending[cl], p)
			}
		}
		in.Pending[cl] = append(in.Pending[cl], missing[cl]...)
	}
	res := Place(in)
	log := ctrl.LoggerFrom(ctx)
	if res.Cluster != "" {
		r.expect.add(c, res.Cluster)
	}
	decided = true
	r.deciding.Unlock()
	if res.Cluster == "" {
		log.V(1).Info("claim not placed", "reason", res.Reason, "why", res.Message)
		if err := r.setScheduled(ctx, c, false, res.Reason, res.Message); err != nil {
			return requeueOnConflict(err)
		}
		return ctrl.Result{RequeueAfter: 30 * time.Second}, nil
	}
	// One write: the label, which the agent acts on. The Scheduled
	// condition is left to the agent's first status write (ConfirmGrace):
	// every write to a claim is an event each agent's claim watch is woken
	// for, whatever its cluster (make bench-scale), and a second write of
	// the scheduler's would race the agent's, which carry the claim's
	// resourceVersion.
	orig := c.DeepCopy()
	if c.Labels == nil {
		c.Labels = map[string]string{}
	}
	if c.Annotations == nil {
		c.Annotations = map[string]string{}
	}
	c.Labels[hostfleetv1alpha1.LabelCluster] = res.Cluster
	c.Annotations[hostfleetv1alpha1.AnnotationPlacedBy] = hostfleetv1alpha1.PlacedByScheduler
	// Before the write: its event may be reconciled before Patch returns.
	r.confirm.add(c.UID)
	if err := r.Client.Patch(ctx, c, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
		r.expect.remove(c, res.Cluster)
		r.confirm.forget(c.UID)
		return requeueOnConflict(fmt.Errorf("place claim %s/%s on %s: %w", c.Namespace, c.Name, res.Cluster, err))
	}
	r.Recorder.Eventf(c, nil, corev1.EventTypeNormal, hostfleetv1alpha1.ReasonPlaced, "Schedule", "%s", res.Message)
	log.V(1).Info("claim placed", "cluster", res.Cluster, "free", res.Free, "candidates", len(clusters))
	return ctrl.Result{RequeueAfter: r.confirmGrace()}, nil
}

func (r *Reconciler) confirmGrace() time.Duration {
	if r.ConfirmGrace > 0 {
		return r.ConfirmGrace
	}
	return DefaultConfirmGrace
}

// placed checks a claim that has a cluster: a tenant's pin must be in the
// tenant's clusters; a placement that did not bind in time is undone.
func (r *Reconciler) placed(ctx context.Context, c *metal3api.HostClaim, t *hostfleetv1alpha1.Tenant, cluster string, clusters []string) (ctrl.Result, error) {
	if c.Annotations[hostfleetv1alpha1.AnnotationPlacedBy] != hostfleetv1alpha1.PlacedByScheduler {
		if !contains(clusters, cluster) {
			return requeueOnConflict(r.setScheduled(ctx, c, false, hostfleetv1alpha1.ReasonPinnedOutsideSet, fmt.Sprintf(
				"pinned to %s, which is not among the clusters of tenant %s (set %s: %s); pin one of them or remove the %s label",
				cluster, t.Name, t.Spec.ClusterSet, strings.Join(clusters, ","), hostfleetv1alpha1.LabelCluster)))
		}
		return requeueOnConflict(r.setScheduled(ctx, c, true, hostfleetv1alpha1.ReasonPinned, "pinned by the tenant to "+cluster))
	}
	cond := meta.FindStatusCondition(c.Status.Conditions, hostfleetv1alpha1.ConditionScheduled)
	saysPlaced := hostfleetv1alpha1.SaysPlaced(c.Status.Conditions)
	if !saysPlaced {
		// The agent's to write, for a while: a remote claim's target
		// writes none.
		if left := r.confirm.left(c.UID, r.confirmGrace()); left > 0 && !isRemote(c) {
			return ctrl.Result{RequeueAfter: left}, nil
		}
	} else {
		r.confirm.forget(c.UID)
	}
	if associated(c) || holds(c) != "" || isRemote(c) {
		// Bound, or being bound: the agent has it; a remote claim is
		// served by its target, bound or not, and never moved by the
		// deadline. A Scheduled condition that lost a write race to the
		// agent is repaired, never left stale.
		if !saysPlaced {
			return requeueOnConflict(r.writeScheduled(ctx, c, true, hostfleetv1alpha1.ReasonPlaced, hostfleetv1alpha1.PlacedMessage(cluster), false))
		}
		return ctrl.Result{}, nil
	}
	if !saysPlaced {
		// Placed, and the agent did not say so in time: the deadline
		// starts now. (The placement's Event was recorded with the label.)
		res, err := requeueOnConflict(r.writeScheduled(ctx, c, true, hostfleetv1alpha1.ReasonPlaced, hostfleetv1alpha1.PlacedMessage(cluster), false))
		if err == nil && res.IsZero() {
			res.RequeueAfter = r.Deadline
		}
		return res, err
	}
	if left := r.Deadline - time.Since(cond.LastTransitionTime.Time); left > 0 {
		return ctrl.Result{RequeueAfter: left}, nil
	}
	orig := c.DeepCopy()
	delete(c.Labels, hostfleetv1alpha1.LabelCluster)
	delete(c.Annotations, hostfleetv1alpha1.AnnotationPlacedBy)
	excluded := strings.Split(c.Annotations[hostfleetv1alpha1.AnnotationExcluded], ",")
	excluded = append(excluded, cluster)
	sort.Strings(excluded)
	c.Annotations[hostfleetv1alpha1.AnnotationExcluded] = strings.Trim(strings.Join(excluded, ","), ",")
	if err := r.Client.Patch(ctx, c, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
		return requeueOnConflict(fmt.Errorf("take claim %s/%s back from %s: %w", c.Namespace, c.Name, cluster, err))
	}
	ctrl.LoggerFrom(ctx).V(1).Info("claim not bound in time: placing it elsewhere", "cluster", cluster, "deadline", r.Deadline, "excluded", c.Annotations[hostfleetv1alpha1.AnnotationExcluded])
	if err := r.setScheduled(ctx, c, false, hostfleetv1alpha1.ReasonRescheduling,
		fmt.Sprintf("%s did not bind the claim within %s; placing it elsewhere", cluster, r.Deadline)); err != nil {
		return requeueOnConflict(err)
	}
	return ctrl.Result{RequeueAfter: time.Second}, nil
}

// holds names ("<namespace>/<name>") the host a claim holds or is being
// bound to: the agent's reservation, or its status; "" for none.
func holds(c *metal3api.HostClaim) string {
	if v := c.Annotations[hostfleetv1alpha1.AnnotationReservedHost]; v != "" {
		return v
	}
	if b := c.Status.BareMetalHost; b != nil {
		return b.Namespace + "/" + b.Name
	}
	return ""
}

// tenant is the Tenant owning a namespace, or nil.
func (r *Reconciler) tenant(ctx context.Context, namespace string) (*hostfleetv1alpha1.Tenant, error) {
	ns := &corev1.Namespace{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: namespace}, ns); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	name := ns.Labels[hostfleetv1alpha1.LabelTenant]
	if name == "" {
		return nil, nil
	}
	t := &hostfleetv1alpha1.Tenant{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: name}, t); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	return t, nil
}

// candidates are the tenant's clusters, intersected with the decisions of
// the claim's Placement, if it names one.
func (r *Reconciler) candidates(ctx context.Context, c *metal3api.HostClaim, t *hostfleetv1alpha1.Tenant) ([]string, error) {
	clusters := append([]string(nil), t.Status.Clusters...)
	name := c.Annotations[hostfleetv1alpha1.AnnotationPlacement]
	if name == "" {
		return clusters, nil
	}
	var decisions clusterv1beta1.PlacementDecisionList
	if err := r.Client.List(ctx, &decisions, client.InNamespace(c.Namespace),
		client.MatchingLabels{clusterv1beta1.PlacementLabel: name}); err != nil {
		return nil, err
	}
	chosen := map[string]bool{}
	for _, d := range decisions.Items {
		for _, dec := range d.Status.Decisions {
			chosen[dec.ClusterName] = true
		}
	}
	var out []string
	for _, cl := range clusters {
		if chosen[cl] {
			out = append(out, cl)
		}
	}
	return out, nil
}

// setScheduled writes the Scheduled condition if it changed, with the
// claim's resourceVersion (the agent writes the same status), and records an
// Event when its status or reason changed: Normal when scheduled, Warning
// when not.
func (r *Reconciler) setScheduled(ctx context.Context, c *metal3api.HostClaim, ok bool, reason, msg string) error {
	return r.writeScheduled(ctx, c, ok, reason, msg, true)
}

// writeScheduled is setScheduled, with the Event only if record.
func (r *Reconciler) writeScheduled(ctx context.Context, c *metal3api.HostClaim, ok bool, reason, msg string, record bool) error {
	status := metav1.ConditionFalse
	if ok {
		status = metav1.ConditionTrue
	}
	cur := meta.FindStatusCondition(c.Status.Conditions, hostfleetv1alpha1.ConditionScheduled)
	if cur != nil && cur.Status == status && cur.Reason == reason && cur.Message == msg {
		return nil
	}
	changed := cur == nil || cur.Status != status || cur.Reason != reason
	orig := c.DeepCopy()
	hostfleetv1alpha1.SetCondition(&c.Status.Conditions, metav1.Condition{Type: hostfleetv1alpha1.ConditionScheduled,
		Status: status, Reason: reason, Message: msg, ObservedGeneration: c.Generation})
	if err := r.Client.Status().Patch(ctx, c, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("write the Scheduled condition of claim %s/%s: %w", c.Namespace, c.Name, err)
	}
	if changed && record {
		kind := corev1.EventTypeWarning
		if ok {
			kind = corev1.EventTypeNormal
		}
		r.Recorder.Eventf(c, nil, kind, reason, "Schedule", "%s", msg)
	}
	return nil
}

// requeueOnConflict tries again soon after a conflict: the cache was
// behind, and catches up in milliseconds.
func requeueOnConflict(err error) (ctrl.Result, error) {
	if apierrors.IsConflict(err) {
		return ctrl.Result{RequeueAfter: cacheLag}, nil
	}
	return ctrl.Result{}, err
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
