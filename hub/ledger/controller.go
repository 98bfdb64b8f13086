package ledger

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/hub/metrics"
	"github.com/hostfleet/hostfleet/hub/usage"
	"github.com/hostfleet/hostfleet/internal/conditions"
	"github.com/hostfleet/hostfleet/internal/requeue"
)

// Reconciler keeps the UsageLedger of one cluster per request (namespace
// and name: the cluster).
type Reconciler struct {
	Client client.Client
	// Recorder records a Warning Event on the HostUsage for each refusal.
	Recorder events.EventRecorder
	// Now is the hub's clock (time.Now when nil).
	Now func() time.Time
	// Skew, Memory and MaxGone are usage.Input's.
	Skew, Memory time.Duration
	MaxGone      int

	mu sync.Mutex
	// told is what this hub last wrote of each report: a read from a
	// cache that does not show it yet counts nothing twice.
	told map[types.NamespacedName]told
}

// told is the hub's part of a report as last written.
type told struct {
	uid     types.UID
	settled []string
	refused []usage.Refusal
}

// MaxGone is how many claims gone from a cluster its ledger remembers at
// most: about 150 bytes each, a ledger stays well under etcd's limit on an
// object.
const MaxGone = 2000

// compactEvery is how often a ledger is looked at with nothing new, so
// that claims gone past the memory are forgotten.
const compactEvery = time.Hour

// Reconcile reads the cluster's report, ledger and placed claims, ingests
// (usage.Ingest), then applies in the order nothing is lost: the ledger
// first, then the claims' finalizers (a claim goes only once its
// placement is in the ledger), then what the agent is told.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	cluster := req.Namespace
	if req.Name != cluster {
		return ctrl.Result{}, nil
	}
	now := time.Now()
	if r.Now != nil {
		now = r.Now()
	}
	report := &hostfleetv1alpha1.HostUsage{}
	if err := r.Client.Get(ctx, req.NamespacedName, report); client.IgnoreNotFound(err) != nil {
		return ctrl.Result{}, fmt.Errorf("read HostUsage %s: %w", req, err)
	} else if err != nil {
		report = nil
	}
	ledger, err := r.ledger(ctx, cluster)
	if errors.Is(err, errCacheLag) {
		return ctrl.Result{RequeueAfter: requeue.CacheLag}, nil
	}
	if ledger == nil || err != nil {
		return ctrl.Result{}, err
	}
	claims, err := r.placed(ctx, cluster)
	if err != nil {
		return ctrl.Result{}, err
	}
	in := usage.Input{Ledger: ledger.Status, Now: now, Skew: r.Skew, Memory: r.Memory, MaxGone: r.MaxGone, Ended: map[types.UID]bool{}}
	if report != nil {
		in.Report = r.recall(req.NamespacedName, report)
	}
	var hold []*metal3api.HostClaim
	for _, c := range claims {
		in.Placed = append(in.Placed, usage.Placement{UID: c.UID, Namespace: c.Namespace, From: PlacedAt(c)})
		switch {
		case ended(c):
			in.Ended[c.UID] = true
		case c.DeletionTimestamp.IsZero() && !controllerutil.ContainsFinalizer(c, hostfleetv1alpha1.UsageFinalizer):
			hold = append(hold, c)
		}
	}
	res := usage.Ingest(in)
	if err := r.writeLedger(ctx, ledger, res.Ledger, now); err != nil {
		return requeue.OnConflict(err)
	}
	if err := r.finalizers(ctx, claims, in.Ended, hold); err != nil {
		return requeue.OnConflict(err)
	}
	if report != nil {
		if err := r.tell(ctx, report, res); err != nil {
			return requeue.OnConflict(err)
		}
		r.remember(req.NamespacedName, told{uid: report.UID, settled: res.Settled, refused: res.Refused})
	}
	return ctrl.Result{RequeueAfter: compactEvery}, nil
}

// recall is the report's status with what this hub last wrote of it
// added: the cache may not show that write yet, and what was settled or
// refused is never settled, counted or said again.
func (r *Reconciler) recall(key types.NamespacedName, report *hostfleetv1alpha1.HostUsage) hostfleetv1alpha1.HostUsageStatus {
	st := report.Status
	r.mu.Lock()
	t, ok := r.told[key]
	r.mu.Unlock()
	if !ok || t.uid != report.UID {
		return st
	}
	st.Settled = slices.Clone(st.Settled)
	for _, k := range t.settled {
		if !slices.Contains(st.Settled, k) {
			st.Settled = append(st.Settled, k)
		}
	}
	st.Refused = slices.Clone(st.Refused)
	for _, f := range t.refused {
		if !slices.ContainsFunc(st.Refused, func(g usage.Refusal) bool { return g.Key == f.Key }) {
			st.Refused = append(st.Refused, f)
		}
	}
	return st
}

func (r *Reconciler) remember(key types.NamespacedName, t told) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.told == nil {
		r.told = map[types.NamespacedName]told{}
	}
	r.told[key] = t
}

// errCacheLag: the cache does not show a ledger that exists yet.
var errCacheLag = errors.New("the ledger exists, the cache does not show it yet")

// ledger is the cluster's UsageLedger, made if missing (nil: the cluster's
// namespace is not there).
func (r *Reconciler) ledger(ctx context.Context, cluster string) (*hostfleetv1alpha1.UsageLedger, error) {
	l := &hostfleetv1alpha1.UsageLedger{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: cluster, Name: cluster}, l)
	if !apierrors.IsNotFound(err) {
		return l, err
	}
	l = &hostfleetv1alpha1.UsageLedger{ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: cluster},
		Spec: hostfleetv1alpha1.UsageLedgerSpec{ClusterName: cluster}}
	switch err := r.Client.Create(ctx, l); {
	case apierrors.IsNotFound(err):
		return nil, nil
	case apierrors.IsAlreadyExists(err):
		return nil, errCacheLag
	case err != nil:
		return nil, fmt.Errorf("make UsageLedger %s/%s: %w", cluster, cluster, err)
	}
	return l, nil
}

// placed are the claims placed on the cluster that the hub counts for:
// admitted there (conditions.Admitted), being deleted or not; a claim
// being deleted holds its place until the hub lets it go.
func (r *Reconciler) placed(ctx context.Context, cluster string) ([]*metal3api.HostClaim, error) {
	var list metal3api.HostClaimList
	if err := r.Client.List(ctx, &list, client.MatchingFields{clusterIndex: cluster}); err != nil {
		return nil, fmt.Errorf("list the claims placed on %s: %w", cluster, err)
	}
	out := make([]*metal3api.HostClaim, 0, len(list.Items))
	for i := range list.Items {
		if c := &list.Items[i]; conditions.Admitted(c) || controllerutil.ContainsFinalizer(c, hostfleetv1alpha1.UsageFinalizer) {
			out = append(out, c)
		}
	}
	return out, nil
}

// ended reports whether a claim being deleted has its host released: no
// Hostfleet finalizer but the ledger's holds it.
func ended(c *metal3api.HostClaim) bool {
	return !c.DeletionTimestamp.IsZero() && controllerutil.ContainsFinalizer(c, hostfleetv1alpha1.UsageFinalizer) &&
		!controllerutil.ContainsFinalizer(c, hostfleetv1alpha1.AgentFinalizer) && !controllerutil.ContainsFinalizer(c, hostfleetv1alpha1.ForwarderFinalizer)
}

// PlacedAt is when a claim was placed on its cluster, as far as the hub
// knows: its hostfleet.io/placed-at; for a claim placed before the hub
// wrote it, when its Scheduled condition last turned True, else its
// creation.
func PlacedAt(c *metal3api.HostClaim) time.Time {
	if t, err := time.Parse(time.RFC3339, c.Annotations[hostfleetv1alpha1.AnnotationPlacedAt]); err == nil {
		return t
	}
	if s := meta.FindStatusCondition(c.Status.Conditions, hostfleetv1alpha1.ConditionScheduled); s != nil && s.Status == metav1.ConditionTrue {
		return s.LastTransitionTime.Time
	}
	return c.CreationTimestamp.Time
}

// writeLedger writes the ledger's status if Ingest changed it, with its
// resourceVersion: two hubs never both add the same interval.
func (r *Reconciler) writeLedger(ctx context.Context, l *hostfleetv1alpha1.UsageLedger, st hostfleetv1alpha1.UsageLedgerStatus, now time.Time) error {
	st.LastUpdated = l.Status.LastUpdated
	if equality.Semantic.DeepEqual(l.Status, st) {
		return nil
	}
	at := metav1.NewTime(now.UTC().Truncate(time.Second))
	st.LastUpdated = &at
	l.Status = st
	if err := r.Client.Status().Update(ctx, l); err != nil {
		return fmt.Errorf("write UsageLedger %s/%s: %w", l.Namespace, l.Name, err)
	}
	return nil
}

// finalizers lets go of the claims whose end the ledger now holds, and
// holds those placed that the ledger does not hold yet; each with the
// claim's resourceVersion.
func (r *Reconciler) finalizers(ctx context.Context, claims []*metal3api.HostClaim, ended map[types.UID]bool, hold []*metal3api.HostClaim) error {
	for _, c := range claims {
		if !ended[c.UID] {
			continue
		}
		orig := c.DeepCopy()
		controllerutil.RemoveFinalizer(c, hostfleetv1alpha1.UsageFinalizer)
		if err := r.Client.Patch(ctx, c, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("let go of claim %s, its placement in the ledger: %w", klog.KObj(c), err)
		}
	}
	for _, c := range hold {
		orig := c.DeepCopy()
		controllerutil.AddFinalizer(c, hostfleetv1alpha1.UsageFinalizer)
		if err := r.Client.Patch(ctx, c, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("hold claim %s for the usage ledger: %w", klog.KObj(c), err)
		}
	}
	return nil
}

// tell writes the hub's part of the report (settled, refused, Accepted)
// by server-side apply under the hub's field manager, and records each new
// refusal once: an Event on the report and the metric.
func (r *Reconciler) tell(ctx context.Context, report *hostfleetv1alpha1.HostUsage, res usage.Result) error {
	for _, f := range res.New {
		metrics.UsageRefused.WithLabelValues(report.Namespace, f.Reason).Inc()
		r.Recorder.Eventf(report, nil, corev1.EventTypeWarning, f.Reason, "Count", "%s", conditions.EventNote(f.Message))
	}
	cond := accepted(res.Refused, report.Generation)
	cur := meta.FindStatusCondition(report.Status.Conditions, hostfleetv1alpha1.ConditionUsageAccepted)
	if cur != nil && cur.Status == cond.Status && cur.Reason == cond.Reason && cur.Message == cond.Message &&
		slices.Equal(report.Status.Settled, res.Settled) && equality.Semantic.DeepEqual(report.Status.Refused, res.Refused) {
		return nil
	}
	conds := slices.Clone(report.Status.Conditions)
	conditions.Set(&conds, cond)
	apply := &hostfleetv1alpha1.HostUsage{
		TypeMeta:   metav1.TypeMeta{APIVersion: hostfleetv1alpha1.GroupVersion.String(), Kind: "HostUsage"},
		ObjectMeta: metav1.ObjectMeta{Namespace: report.Namespace, Name: report.Name},
		Status:     hostfleetv1alpha1.HostUsageStatus{Settled: res.Settled, Refused: res.Refused, Conditions: conds},
	}
	u, err := toApply(apply)
	if err != nil {
		return err
	}
	if err := r.Client.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(hostfleetv1alpha1.FieldManagerHub), client.ForceOwnership); err != nil {
		return fmt.Errorf("tell HostUsage %s/%s what was settled: %w", report.Namespace, report.Name, err)
	}
	return nil
}

// accepted is the report's Accepted condition: what was refused, bounded.
func accepted(refused []usage.Refusal, generation int64) metav1.Condition {
	c := metav1.Condition{Type: hostfleetv1alpha1.ConditionUsageAccepted, Status: metav1.ConditionTrue, Reason: hostfleetv1alpha1.ReasonUsageAccepted,
		Message: "every interval and open host of the report is counted in the cluster's UsageLedger", ObservedGeneration: generation}
	if len(refused) == 0 {
		return c
	}
	c.Status, c.Reason = metav1.ConditionFalse, hostfleetv1alpha1.ReasonUsageRefused
	var why []string
	for _, f := range refused {
		why = append(why, f.Reason+": "+f.Message)
	}
	c.Message = fmt.Sprintf("%d refused, not counted: %s", len(refused), strings.Join(why, "; "))
	return c
}
