package maintenance

import (
	"context"
	"fmt"
	"strings"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/hub/tenant"
	"github.com/hostfleet/hostfleet/internal/claimstatus"
	"github.com/hostfleet/hostfleet/internal/conditions"
	"github.com/hostfleet/hostfleet/internal/requeue"
)

// Reconciler asks and releases the hub's claims for maintenance.
type Reconciler struct {
	Client client.Client
	// Recorder records MaintenanceRequested and ReleasedForMaintenance
	// Events on claims.
	Recorder events.EventRecorder
	// Now is the hub's clock (time.Now when nil).
	Now func() time.Time
}

// Reconcile reads the maintenances listing a claim, decides (Decide), and
// applies the plan in phases: the condition, then the release.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	c := &metal3api.HostClaim{}
	if err := r.Client.Get(ctx, req.NamespacedName, c); err != nil || !c.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if c.Annotations[hostfleetv1alpha1.AnnotationSourceClaim] != "" {
		// A forwarded copy (the hub is also a target): asked on its source.
		return ctrl.Result{}, nil
	}
	reqs, err := r.requests(ctx, c)
	if err != nil {
		return ctrl.Result{}, err
	}
	now := time.Now()
	if r.Now != nil {
		now = r.Now()
	}
	p := Decide(Input{Now: now, Requests: reqs, Approved: c.Annotations[hostfleetv1alpha1.AnnotationMaintenanceApproved] == "true",
		Current: meta.FindStatusCondition(c.Status.Conditions, hostfleetv1alpha1.ConditionMaintenanceRequested)})
	if err := r.writeCondition(ctx, c, p); err != nil {
		return requeue.OnConflict(err)
	}
	if p.Release {
		return requeue.OnConflict(r.release(ctx, c, p))
	}
	return ctrl.Result{RequeueAfter: p.After}, nil
}

// requests are the maintenances whose status lists the claim, on the
// cluster the claim is placed on (an agent names only claims of its own
// cluster, whatever it writes), and whose hostSelector selects the claim's
// host as far as the hub can tell (Selects): a listing the hub cannot
// confirm is said in a Warning Event on the maintenance, and asks nothing.
func (r *Reconciler) requests(ctx context.Context, c *metal3api.HostClaim) ([]Request, error) {
	cluster := c.Labels[hostfleetv1alpha1.LabelCluster]
	if cluster == "" {
		return nil, nil
	}
	key := c.Namespace + "/" + c.Name
	var ms hostfleetv1alpha1.HostMaintenanceList
	if err := r.Client.List(ctx, &ms, client.InNamespace(cluster), client.MatchingFields{claimIndex: key}); err != nil {
		return nil, fmt.Errorf("list the maintenances of cluster %s: %w", cluster, err)
	}
	if len(ms.Items) == 0 {
		return nil, nil
	}
	t, err := tenant.Of(ctx, r.Client, c.Namespace)
	if err != nil {
		return nil, err
	}
	var prefixes []string
	if t != nil {
		prefixes = t.Spec.LabelSyncPrefixes
	}
	var out []Request
	for i := range ms.Items {
		m := &ms.Items[i]
		for _, h := range m.Status.Hosts {
			if h.Claim != key {
				continue
			}
			if err := Selects(m.Spec.HostSelector, h.Host, c, prefixes); err != nil {
				r.Recorder.Eventf(m, c, corev1.EventTypeWarning, hostfleetv1alpha1.ReasonMaintenanceNotSelected, "Ask",
					"%s", conditions.EventNote(fmt.Sprintf("claim %s is not asked: %v", key, err)))
				continue
			}
			out = append(out, Request{Cluster: m.Namespace, Name: m.Name, Policy: m.Spec.Policy, Deadline: m.Spec.Deadline.Time,
				Reason: m.Spec.Reason, Complete: m.Spec.Complete || !m.DeletionTimestamp.IsZero(), Host: h.Host, State: h.State})
		}
	}
	return out, nil
}

// writeCondition writes MaintenanceRequested, with an Event when the
// claim is first asked.
func (r *Reconciler) writeCondition(ctx context.Context, c *metal3api.HostClaim, p Plan) error {
	cur := meta.FindStatusCondition(c.Status.Conditions, hostfleetv1alpha1.ConditionMaintenanceRequested)
	if p.Condition == nil || (cur != nil && cur.Status == p.Condition.Status && cur.Reason == p.Condition.Reason && cur.Message == p.Condition.Message) {
		return nil
	}
	var was string
	if cur != nil {
		was = cur.Reason
	}
	written, err := claimstatus.Write(ctx, r.Client, claimstatus.Maintenance, claimstatus.HubKind(c), c, func(st *metal3api.HostClaimStatus) {
		cond := *p.Condition
		cond.ObservedGeneration = c.Generation
		conditions.Set(&st.Conditions, cond)
	})
	if err != nil {
		return fmt.Errorf("write the MaintenanceRequested condition of claim %s: %w", klog.KObj(c), err)
	}
	if written && p.Condition.Status == metav1.ConditionTrue && was != p.Condition.Reason && !p.Release {
		r.Recorder.Eventf(c, nil, corev1.EventTypeWarning, hostfleetv1alpha1.ConditionMaintenanceRequested, "Ask", "%s", p.Condition.Message)
	}
	return nil
}

// release marks the claim released for the maintenance (once: an
// optimistic lock) and deletes this very claim (its UID): the agent
// releases its host as for any deletion.
func (r *Reconciler) release(ctx context.Context, c *metal3api.HostClaim, p Plan) error {
	if !strings.HasPrefix(c.Annotations[hostfleetv1alpha1.AnnotationReleasedBy], hostfleetv1alpha1.ReleasedByMaintenance+"/") {
		orig := c.DeepCopy()
		if c.Annotations == nil {
			c.Annotations = map[string]string{}
		}
		c.Annotations[hostfleetv1alpha1.AnnotationReleasedBy] = p.ReleasedBy
		if err := r.Client.Patch(ctx, c, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
			return fmt.Errorf("mark claim %s released for maintenance: %w", klog.KObj(c), err)
		}
		ctrl.LoggerFrom(ctx).Info("releasing the claim for maintenance", "releasedBy", p.ReleasedBy)
		r.Recorder.Eventf(c, nil, corev1.EventTypeNormal, hostfleetv1alpha1.ReasonMaintenanceReleased, "Release", "%s", p.Condition.Message)
	}
	if err := r.Client.Delete(ctx, c, client.Preconditions{UID: &c.UID}); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("delete claim %s, released for maintenance: %w", klog.KObj(c), err)
	}
	return nil
}
