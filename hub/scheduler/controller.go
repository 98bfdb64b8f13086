package scheduler

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/hostfleet/hostfleet/hub/api/exclusion"
	"github.com/hostfleet/hostfleet/hub/api/healing"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/hub/classes"
	"github.com/hostfleet/hostfleet/hub/metrics"
	"github.com/hostfleet/hostfleet/hub/tenant"
	"github.com/hostfleet/hostfleet/internal/claimstatus"
	"github.com/hostfleet/hostfleet/internal/conditions"
	"github.com/hostfleet/hostfleet/internal/requeue"
)

// Indexes on HostClaims.
const (
	// pendingIndex: the cluster of a claim placed there (not being
	// deleted); those its cluster's inventory does not count yet are
	// pending (uncounted).
	pendingIndex = "hostfleet.pending-on"
	// onClusterIndex: the cluster of a claim placed there, being deleted or
	// not.
	onClusterIndex = "hostfleet.on-cluster"
	// unplacedIndex: "true" for claims without a cluster.
	unplacedIndex = "hostfleet.unplaced"
	// classHeldIndex: "true" for unplaced claims a host class holds back
	// (Scheduled reason ClassQuotaExceeded).
	classHeldIndex = "hostfleet.class-held"
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

	// placed remembers the claims this scheduler placed until its cache
	// shows them, so that the next decision counts them even if the watch
	// event has not arrived yet; recorded before the write, so that a
	// decision taken while it is in flight counts it too.
	expect expectations
	// said are the Placed conditions written that the cache may not show
	// yet.
	said said
	// deciding serializes decisions.
	deciding sync.Mutex

	// claims and inventories are the cache's own stores, read without
	// copies: a decision placing a claim nowhere reads every candidate's
	// inventory and placed claims, which through the client (a deep copy
	// each, and reflection) cost most of the hub controller's CPU (make
	// bench-scale). What they return is never changed.
	claims, inventories toolscache.Indexer
	// clusters are the ManagedClusters: none is placed on one that is not
	// Available (lost.go).
	clusters toolscache.Indexer
	// order is the clusters by available hosts, for a decision's walk.
	order *order
}

// shownCounted reports whether the cache shows the claim counted where it
// was placed (placed, or its pin admitted: classes.Counted), or gone.
func (r *Reconciler) shownCounted(c *metal3api.HostClaim) bool {
	obj, found, err := r.claims.GetByKey(c.Namespace + "/" + c.Name)
	if err != nil {
		return false
	}
	seen, ok := obj.(*metal3api.HostClaim)
	return !found || !ok || seen.UID != c.UID || classes.Counted(seen)
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

// Reconcile places, checks or re-places one claim, then writes what it
// found in the claim's Scheduled condition, once (the scheduler alone
// writes it: claimstatus).
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	c := &metal3api.HostClaim{}
	if err := r.Client.Get(ctx, req.NamespacedName, c); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !c.DeletionTimestamp.IsZero() {
		return r.deleting(ctx, c)
	}
	// Who writes what is judged on the claim as read: an unplaced claim's
	// Ready is the scheduler's, a placed one's its agent's.
	kind := claimstatus.HubKind(c)
	var v verdict
	res, err := r.schedule(ctx, c, &v)
	if err != nil {
		return res, err
	}
	if err := r.writeScheduled(ctx, c, kind, v); err != nil {
		if v.admits != "" {
			r.expect.remove(c, v.admits)
		}
		return requeue.OnConflict(err)
	}
	return res, nil
}

// verdict is what a reconcile says in the claim's Scheduled condition,
// and whether an Event records a change of it. admits names the cluster
// of a pin the verdict lets through: its expectation goes if the write
// fails.
type verdict struct {
	set, ok         bool
	reason, message string
	record          bool
	admits          string
}

// not is a verdict that the claim is not scheduled, recorded.
func not(reason, msg string) verdict {
	return verdict{set: true, reason: reason, message: msg, record: true}
}

// placedOn is the verdict of a claim the scheduler placed on cluster.
func placedOn(cluster string) verdict {
	return verdict{set: true, ok: true, reason: hostfleetv1alpha1.ReasonPlaced, message: conditions.PlacedMessage(cluster)}
}

// schedule is the reconcile's phases: find the claim's tenant and candidate
// clusters; a placed claim is checked (placed); an unplaced one holding a
// host is left alone; any other is placed (decide, then place).
func (r *Reconciler) schedule(ctx context.Context, c *metal3api.HostClaim, v *verdict) (ctrl.Result, error) {
	t, err := tenant.Of(ctx, r.Client, c.Namespace)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("find the tenant of claim %s: %w", klog.KObj(c), err)
	}
	if t == nil {
		*v = not(hostfleetv1alpha1.ReasonNoTenant, fmt.Sprintf("namespace %s belongs to no Tenant: claims are served only in tenant namespaces", c.Namespace))
		return ctrl.Result{}, nil
	}
	clusters, err := r.candidates(ctx, c, t)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("candidate clusters of claim %s: %w", klog.KObj(c), err)
	}
	if cluster := c.Labels[hostfleetv1alpha1.LabelCluster]; cluster != "" {
		return r.placed(ctx, c, t, cluster, clusters, v)
	}
	if host := holds(c); host != "" {
		// It holds a host on the cluster its label named: placing it again
		// would strand that host. Only the agent that holds it lets it go.
		*v = not(hostfleetv1alpha1.ReasonHoldsHost, fmt.Sprintf(
			"the claim holds host %s but has no %s label: it is not placed elsewhere; put the label back, or delete the claim to release the host",
			host, hostfleetv1alpha1.LabelCluster))
		return ctrl.Result{}, nil
	}
	res, excluded, stale, err := r.decide(ctx, c, t, clusters)
	if err != nil || stale {
		return ctrl.Result{RequeueAfter: requeue.CacheLag}, err
	}
	if res.Reason == hostfleetv1alpha1.ReasonClassQuotaExceeded {
		*v = not(res.Reason, res.Message)
		// Woken when a claim of its tenant goes (SetupWithManager).
		return ctrl.Result{RequeueAfter: 30 * time.Second}, nil
	}
	if res.Cluster == "" {
		ctrl.LoggerFrom(ctx).V(1).Info("claim not placed", "reason", res.Reason, "why", res.Message)
		*v = not(res.Reason, res.Message)
		return ctrl.Result{RequeueAfter: 30 * time.Second}, nil
	}
	return r.place(ctx, c, res, excluded, len(clusters), v)
}

// place writes a decided placement: the cluster label (which the agent
// acts on); the Scheduled condition follows (Reconcile), saying why, and
// with it the Deadline.
func (r *Reconciler) place(ctx context.Context, c *metal3api.HostClaim, res Result, excluded []hostfleetv1alpha1.ClassSelector, candidates int, v *verdict) (ctrl.Result, error) {
	orig := c.DeepCopy()
	if c.Labels == nil {
		c.Labels = map[string]string{}
	}
	if c.Annotations == nil {
		c.Annotations = map[string]string{}
	}
	c.Labels[hostfleetv1alpha1.LabelCluster] = res.Cluster
	c.Annotations[hostfleetv1alpha1.AnnotationPlacedBy] = hostfleetv1alpha1.PlacedByScheduler
	c.Annotations[hostfleetv1alpha1.AnnotationPlacedAt] = time.Now().UTC().Format(time.RFC3339)
	exclude, err := exclusion.Encode(excluded)
	if err != nil {
		r.expect.remove(c, res.Cluster)
		return ctrl.Result{}, err
	}
	delete(c.Annotations, hostfleetv1alpha1.AnnotationExcludedHosts)
	if exclude != "" {
		c.Annotations[hostfleetv1alpha1.AnnotationExcludedHosts] = exclude
	}
	metrics.Placements.WithLabelValues(hostfleetv1alpha1.ReasonPlaced).Inc()
	if err := r.Client.Patch(ctx, c, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
		r.expect.remove(c, res.Cluster)
		return requeue.OnConflict(fmt.Errorf("place claim %s on %s: %w", klog.KObj(c), res.Cluster, err))
	}
	ctrl.LoggerFrom(ctx).V(1).Info("claim placed", "cluster", res.Cluster, "free", res.Free, "candidates", candidates)
	// Why it went there rides the Scheduled condition: no Event, two
	// writes per placement.
	*v = placedOn(res.Cluster)
	v.message = res.Message
	return ctrl.Result{RequeueAfter: r.Deadline}, nil
}

// placed checks a claim that has a cluster: a tenant's pin must be in the
// tenant's clusters; the scheduler's placement is said in the Scheduled
// condition (repaired if it lost a write race), and undone when the claim
// was not bound within the Deadline.
func (r *Reconciler) placed(ctx context.Context, c *metal3api.HostClaim, t *hostfleetv1alpha1.Tenant, cluster string, clusters []string, v *verdict) (ctrl.Result, error) {
	_, paused := conditions.PausedBy(c.Annotations)
	// A claim whose host was replaced there waits there for another while
	// its agent keeps it, and then for the Deadline.
	replaced, waits := r.replacedWaits(c, cluster)
	served := associated(c) || holds(c) != "" || isRemote(c) || paused || replaced && waits != 0
	byScheduler := c.Annotations[hostfleetv1alpha1.AnnotationPlacedBy] == hostfleetv1alpha1.PlacedByScheduler
	if !byScheduler && !conditions.Admitted(c) {
		// A pin is judged as a placement is, host classes included,
		// before its agent may serve it.
		return r.admitPin(ctx, c, t, cluster, clusters, v)
	}
	since, down := r.unavailable(cluster)
	if down && (served || !byScheduler) {
		*v = stranded(cluster, since)
		return ctrl.Result{}, nil
	}
	if down {
		return r.replace(ctx, c, cluster, fmt.Sprintf("is not Available since %s and nothing holds the claim there", at(since)), v)
	}
	if !byScheduler {
		*v = r.pinned(c, t, cluster, clusters)
		return ctrl.Result{}, nil
	}
	// The agent has it (served); a remote claim is served by its target,
	// bound or not, and a paused claim waits where it is: none is moved by
	// the deadline.
	if !conditions.SaysPlaced(c.Status.Conditions) {
		if r.said.pending(c.UID) {
			return ctrl.Result{RequeueAfter: requeue.CacheLag}, nil // written a moment ago: the cache is behind
		}
		*v = placedOn(cluster)
		if served {
			return ctrl.Result{RequeueAfter: max(waits, 0)}, nil
		}
		return ctrl.Result{RequeueAfter: r.Deadline}, nil
	}
	r.said.forget(c.UID)
	if served {
		return ctrl.Result{RequeueAfter: max(waits, 0)}, nil
	}
	if replaced {
		return r.replace(ctx, c, cluster, fmt.Sprintf("has no host to replace the claim's failed one within %s", r.Deadline), v)
	}
	cond := meta.FindStatusCondition(c.Status.Conditions, hostfleetv1alpha1.ConditionScheduled)
	if left := r.Deadline - time.Since(cond.LastTransitionTime.Time); left > 0 {
		return ctrl.Result{RequeueAfter: left}, nil
	}
	return r.replace(ctx, c, cluster, fmt.Sprintf("did not bind the claim within %s", r.Deadline), v)
}

// replacedWaits says whether a claim's failed host was replaced on
// cluster (its record's last replacement was there, or names no cluster)
// and how much longer it waits there for another: with no end (-1) while
// its agent keeps it (the agent's finalizer) or it is not waiting unbound,
// else until the Deadline after it was last bound; at 0 the hub places it
// elsewhere, unless it is pinned.
func (r *Reconciler) replacedWaits(c *metal3api.HostClaim, cluster string) (bool, time.Duration) {
	if _, ok := c.Annotations[hostfleetv1alpha1.AnnotationReplacements]; !ok {
		return false, 0
	}
	rec, err := healing.RecordOf(c.Annotations, time.Now())
	if last, ok := rec.Last(); err == nil && ok && last.Cluster != "" && last.Cluster != cluster {
		return false, 0
	}
	a := meta.FindStatusCondition(c.Status.Conditions, hostfleetv1alpha1.ConditionAssociated)
	if err != nil || controllerutil.ContainsFinalizer(c, hostfleetv1alpha1.AgentFinalizer) || a == nil || a.Status != metav1.ConditionFalse {
		return true, -1
	}
	return true, max(r.Deadline-time.Since(a.LastTransitionTime.Time), 0)
}

// replace takes a placement that did not bind in time back, excluding its
// cluster from the next decision; the Scheduled condition says so
// (Reconcile).
func (r *Reconciler) replace(ctx context.Context, c *metal3api.HostClaim, cluster, why string, v *verdict) (ctrl.Result, error) {
	// Its placement there, if still expected, is over: the next decision
	// places it afresh.
	r.expect.remove(c, cluster)
	orig := c.DeepCopy()
	delete(c.Labels, hostfleetv1alpha1.LabelCluster)
	delete(c.Annotations, hostfleetv1alpha1.AnnotationPlacedBy)
	delete(c.Annotations, hostfleetv1alpha1.AnnotationPlacedAt)
	// It holds no host there (served claims are never moved): its usage
	// there ends with no interval to wait for, but the one a replaced
	// host closed, which the cluster's ledger counts (it remembers a claim
	// moved away).
	controllerutil.RemoveFinalizer(c, hostfleetv1alpha1.UsageFinalizer)
	excluded := strings.Split(c.Annotations[hostfleetv1alpha1.AnnotationExcluded], ",")
	excluded = append(excluded, cluster)
	sort.Strings(excluded)
	c.Annotations[hostfleetv1alpha1.AnnotationExcluded] = strings.Trim(strings.Join(excluded, ","), ",")
	if err := r.Client.Patch(ctx, c, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
		return requeue.OnConflict(fmt.Errorf("take claim %s back from %s: %w", klog.KObj(c), cluster, err))
	}
	ctrl.LoggerFrom(ctx).V(1).Info("claim not bound in time: placing it elsewhere", "cluster", cluster, "deadline", r.Deadline, "excluded", c.Annotations[hostfleetv1alpha1.AnnotationExcluded])
	*v = not(hostfleetv1alpha1.ReasonRescheduling, fmt.Sprintf("%s %s; placing it elsewhere", cluster, why))
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

// candidates are the tenant's clusters, intersected with the decisions of
// the claim's Placement, if it names one, sorted.
func (r *Reconciler) candidates(ctx context.Context, c *metal3api.HostClaim, t *hostfleetv1alpha1.Tenant) ([]string, error) {
	clusters := t.Status.Clusters // only read
	if !slices.IsSorted(clusters) {
		clusters = slices.Sorted(slices.Values(clusters))
	}
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

// writeScheduled writes the verdict in the Scheduled condition, if it
// changes it, with the claim's resourceVersion, and records an Event when
// its status or reason changed and the verdict asks: Normal when
// scheduled, Warning when not. A verdict that is recorded counts in the
// placements metric, whether or not it changes the condition.
func (r *Reconciler) writeScheduled(ctx context.Context, c *metal3api.HostClaim, kind claimstatus.Kind, v verdict) error {
	if !v.set {
		return nil
	}
	if v.record {
		metrics.Placements.WithLabelValues(v.reason).Inc()
	}
	status := metav1.ConditionFalse
	if v.ok {
		status = metav1.ConditionTrue
	}
	cur := meta.FindStatusCondition(c.Status.Conditions, hostfleetv1alpha1.ConditionScheduled)
	changed := cur == nil || cur.Status != status || cur.Reason != v.reason
	written, err := claimstatus.Write(ctx, r.Client, claimstatus.Scheduler, kind, c, func(st *metal3api.HostClaimStatus) {
		conditions.Set(&st.Conditions, metav1.Condition{Type: hostfleetv1alpha1.ConditionScheduled,
			Status: status, Reason: v.reason, Message: v.message, ObservedGeneration: c.Generation})
		// An unplaced claim's Ready is the scheduler's: it says why a class
		// holds the claim back, and goes with the hold.
		if !claimstatus.Owns(claimstatus.Scheduler, kind, claimstatus.Condition(hostfleetv1alpha1.ConditionReady)) {
			return
		}
		if !v.ok && v.reason == hostfleetv1alpha1.ReasonClassQuotaExceeded {
			conditions.Set(&st.Conditions, metav1.Condition{Type: hostfleetv1alpha1.ConditionReady,
				Status: metav1.ConditionFalse, Reason: v.reason, Message: v.message, ObservedGeneration: c.Generation})
		} else if r := meta.FindStatusCondition(st.Conditions, hostfleetv1alpha1.ConditionReady); r != nil && r.Reason == hostfleetv1alpha1.ReasonClassQuotaExceeded {
			meta.RemoveStatusCondition(&st.Conditions, hostfleetv1alpha1.ConditionReady)
		}
	})
	if err != nil {
		return fmt.Errorf("write the Scheduled condition of claim %s: %w", klog.KObj(c), err)
	}
	if written && v.ok && v.reason == hostfleetv1alpha1.ReasonPlaced {
		r.said.add(c.UID)
	}
	if written && changed && v.record {
		kind := corev1.EventTypeWarning
		if v.ok {
			kind = corev1.EventTypeNormal
		}
		r.Recorder.Eventf(c, nil, kind, v.reason, "Schedule", "%s", conditions.EventNote(v.message))
	}
	return nil
}
