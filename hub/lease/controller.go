package lease

import (
	"context"
	"fmt"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
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

// Reconciler ends the leases of the hub's claims.
type Reconciler struct {
	Client client.Client
	// Recorder records LeaseEnding and LeaseEnded Events on claims.
	Recorder events.EventRecorder
	// Now is the hub's clock (time.Now when nil).
	Now func() time.Time
}

// Reconcile reads a claim's lease, decides (Decide), and applies the plan
// in phases: the lease's annotations, the LeaseExpiring condition, and at
// the end the deletion.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	c := &metal3api.HostClaim{}
	if err := r.Client.Get(ctx, req.NamespacedName, c); err != nil || !c.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if c.Annotations[hostfleetv1alpha1.AnnotationSourceClaim] != "" {
		// A forwarded copy (the hub is also a target): its lease is its
		// source's.
		return ctrl.Result{}, nil
	}
	t, err := tenant.Of(ctx, r.Client, c.Namespace)
	if err != nil || t == nil {
		// Not a tenant's claim: no lease to keep.
		return ctrl.Result{}, err
	}
	kind := claimstatus.HubKind(c)
	p := Decide(r.input(c, t))
	if err := r.annotate(ctx, c, p); err != nil {
		return requeue.OnConflict(err)
	}
	if err := r.writeCondition(ctx, c, kind, p); err != nil {
		return requeue.OnConflict(err)
	}
	if p.Release {
		return ctrl.Result{}, r.release(ctx, c)
	}
	return ctrl.Result{RequeueAfter: p.After}, nil
}

func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// input is what Decide reads of a claim and its tenant.
func (r *Reconciler) input(c *metal3api.HostClaim, t *hostfleetv1alpha1.Tenant) Input {
	in := Input{Now: r.now(), Claim: c.Namespace + "/" + c.Name, Created: c.CreationTimestamp.Time, Warning: DefaultWarning,
		Until: c.Annotations[hostfleetv1alpha1.AnnotationLeaseUntil], For: c.Annotations[hostfleetv1alpha1.AnnotationLeaseFor],
		ReleasedBy: c.Annotations[hostfleetv1alpha1.AnnotationReleasedBy]}
	if t.Spec.MaxLeaseDuration != nil {
		in.Cap = &t.Spec.MaxLeaseDuration.Duration
	}
	if t.Spec.LeaseWarning != nil {
		in.Warning = t.Spec.LeaseWarning.Duration
	}
	return in
}

// annotate writes the lease's end when it was a length or the cap, and at
// the end marks the claim released by its lease, with an Event: the mark
// is written once (an optimistic lock), and so is the Event.
func (r *Reconciler) annotate(ctx context.Context, c *metal3api.HostClaim, p Plan) error {
	mark := p.Release && c.Annotations[hostfleetv1alpha1.AnnotationReleasedBy] == ""
	if p.Until.IsZero() && !mark {
		return nil
	}
	orig := c.DeepCopy()
	if c.Annotations == nil {
		c.Annotations = map[string]string{}
	}
	if !p.Until.IsZero() {
		c.Annotations[hostfleetv1alpha1.AnnotationLeaseUntil] = p.Until.UTC().Format(time.RFC3339)
		delete(c.Annotations, hostfleetv1alpha1.AnnotationLeaseFor)
	}
	if mark {
		c.Annotations[hostfleetv1alpha1.AnnotationReleasedBy] = hostfleetv1alpha1.ReleasedByLease
	}
	if err := r.Client.Patch(ctx, c, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("write the lease of claim %s: %w", klog.KObj(c), err)
	}
	if mark {
		ctrl.LoggerFrom(ctx).Info("lease ended: releasing the claim", "until", c.Annotations[hostfleetv1alpha1.AnnotationLeaseUntil])
		r.Recorder.Eventf(c, nil, corev1.EventTypeNormal, hostfleetv1alpha1.ReasonLeaseEnded, "Release", "%s", p.Condition.Message)
	}
	return nil
}

// writeCondition writes LeaseExpiring (or removes it from a claim without
// a lease), and records an Event when the lease starts ending.
func (r *Reconciler) writeCondition(ctx context.Context, c *metal3api.HostClaim, kind claimstatus.Kind, p Plan) error {
	var was string // the reason before: the write changes the claim in place
	cur := meta.FindStatusCondition(c.Status.Conditions, hostfleetv1alpha1.ConditionLeaseExpiring)
	switch {
	case cur != nil:
		was = cur.Reason
	case p.Condition == nil:
		return nil
	}
	written, err := claimstatus.Write(ctx, r.Client, claimstatus.Lease, kind, c, func(st *metal3api.HostClaimStatus) {
		if p.Condition == nil {
			meta.RemoveStatusCondition(&st.Conditions, hostfleetv1alpha1.ConditionLeaseExpiring)
			return
		}
		cond := *p.Condition
		cond.ObservedGeneration = c.Generation
		conditions.Set(&st.Conditions, cond)
	})
	if err != nil {
		return fmt.Errorf("write the LeaseExpiring condition of claim %s: %w", klog.KObj(c), err)
	}
	if written && p.Condition != nil && p.Condition.Reason == hostfleetv1alpha1.ReasonLeaseEnding && was != p.Condition.Reason {
		r.Recorder.Eventf(c, nil, corev1.EventTypeWarning, hostfleetv1alpha1.ReasonLeaseEnding, "Warn", "%s", p.Condition.Message)
	}
	return nil
}

// release deletes the claim whose lease ended, this very claim (its UID):
// the forwarder and the agent release its host as for any deletion.
func (r *Reconciler) release(ctx context.Context, c *metal3api.HostClaim) error {
	err := r.Client.Delete(ctx, c, client.Preconditions{UID: &c.UID})
	if client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("delete claim %s, whose lease ended: %w", klog.KObj(c), err)
	}
	return nil
}
