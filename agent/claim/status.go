package claim

import (
	"context"
	"fmt"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/agent/binder"
	"github.com/hostfleet/hostfleet/agent/hoststatus"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/internal/claimstatus"
	"github.com/hostfleet/hostfleet/internal/conditions"
	"github.com/hostfleet/hostfleet/internal/fence"
)

func associatedCondition(c *metal3api.HostClaim, status metav1.ConditionStatus, reason, msg string) metav1.Condition {
	return metav1.Condition{Type: hostfleetv1alpha1.ConditionAssociated, Status: status, Reason: reason, Message: msg,
		ObservedGeneration: c.Generation}
}

// boundCondition is Associated for a claim bound to h on cluster.
func boundCondition(c *metal3api.HostClaim, h *metal3api.BareMetalHost, cluster string) metav1.Condition {
	return associatedCondition(c, metav1.ConditionTrue, hostfleetv1alpha1.ReasonHostAssociated,
		fmt.Sprintf("bound to BareMetalHost %s on cluster %s", klog.KObj(h), cluster))
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
	if err := r.Fence.Write(r.hosts.Name, fence.Claims, c, func() error {
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

// confirmed reports whether the claim's status already records the binding
// to h as associated.
func confirmed(c *metal3api.HostClaim, h *metal3api.BareMetalHost) bool {
	ref := c.Status.BareMetalHost
	cond := meta.FindStatusCondition(c.Status.Conditions, hostfleetv1alpha1.ConditionAssociated)
	return ref != nil && ref.Namespace == h.Namespace && ref.Name == h.Name &&
		cond != nil && cond.Status == metav1.ConditionTrue
}
