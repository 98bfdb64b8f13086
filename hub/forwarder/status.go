package forwarder

import (
	"fmt"
	"regexp"
	"slices"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	workv1 "open-cluster-management.io/api/work/v1"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/internal/conditions"
)

// State is what the forwarder knows of a remote claim's forwarding.
type State struct {
	Cluster string
	// Work is the claim's ManifestWork as the hub has it; nil when none.
	Work *workv1.ManifestWork
	// Refused is why the claim cannot be forwarded, if it cannot.
	Refused *Refused
	// ClusterAvailable: the ManagedCluster's agents report (its
	// ManagedClusterConditionAvailable is True).
	ClusterAvailable bool
	// AgentUnavailable: the cluster has the hostfleet-agent add-on and it
	// is not Available, so whatever the target says is not kept current.
	// (A cluster without the add-on has no such signal.)
	AgentUnavailable bool
	// HardwareCopy references the claim's HardwareData copy on the hub,
	// made by the Hostfleet agent serving the target; nil when none.
	HardwareCopy *metal3api.ObjectReference
	// Deleting: the claim is being deleted.
	Deleting bool
	// PausedBy, while a deleted claim is paused, is who paused it: its
	// work (and so its target) is kept until the pause ends.
	PausedBy *string
}

// SetStatus writes into the claim's status what the state says: the
// Forwarded condition, the target's conditions and status fields when the
// feedback is fresh, and a Ready that is never True on stale or incomplete
// feedback.
func SetStatus(c *metal3api.HostClaim, s State) {
	conditions.SetPaused(&c.Status.Conditions, c.Annotations, s.Deleting, c.Generation)
	set := func(t string, status metav1.ConditionStatus, reason, msg string) {
		setCondition(c, t, status, reason, msg)
	}
	notReady := func(reason, msg string) {
		set(hostfleetv1alpha1.ConditionForwarded, metav1.ConditionFalse, reason, msg)
		set(hostfleetv1alpha1.ConditionReady, metav1.ConditionFalse, reason, msg)
	}
	switch {
	case s.Deleting && s.PausedBy != nil:
		notReady(hostfleetv1alpha1.ReasonPaused, fmt.Sprintf(
			"%s: ManifestWork %s/%s is kept, and the target claim with it, until the annotation is removed; then the claim is withdrawn",
			conditions.PausedMessage(*s.PausedBy), s.Cluster, WorkName(c.UID)))
		return
	case s.Deleting:
		notReady(hostfleetv1alpha1.ReasonWithdrawing, fmt.Sprintf(
			"deleting ManifestWork %s/%s: the work agent of %s deletes the target claim, whose controller releases its host first; the claim goes once the work is gone",
			s.Cluster, WorkName(c.UID), s.Cluster))
		return
	case s.Refused != nil:
		notReady(s.Refused.Reason, s.Refused.Message)
		return
	case s.Work == nil:
		notReady(hostfleetv1alpha1.ReasonWorkNotApplied, fmt.Sprintf("creating ManifestWork %s/%s", s.Cluster, WorkName(c.UID)))
		return
	}
	fb, applied := ReadFeedback(s.Work)
	where := fmt.Sprintf("ManifestWork %s/%s", s.Cluster, s.Work.Name)
	if !applied {
		why := "its work agent has not applied it"
		if cond := meta.FindStatusCondition(s.Work.Status.Conditions, workv1.WorkApplied); cond != nil && cond.Message != "" {
			why = fmt.Sprintf("its work agent reports %s: %s", cond.Reason, cond.Message)
		}
		notReady(hostfleetv1alpha1.ReasonWorkNotApplied, fmt.Sprintf(
			"%s is not applied on %s: %s; check that %s is joined and its klusterlet's work agent runs (kubectl get managedcluster %s), or delete the claim",
			where, s.Cluster, why, s.Cluster, s.Cluster))
		return
	}
	if !s.ClusterAvailable {
		notReady(hostfleetv1alpha1.ReasonClusterUnavailable, fmt.Sprintf(
			"%s stopped reporting (its ManagedCluster is not Available): the target's last reported status is stale; it is mirrored again when the cluster is back", s.Cluster))
		return
	}
	if !fb.Synced && len(fb.Conditions) == 0 {
		msg := fmt.Sprintf("%s is applied on %s; waiting for its work agent to report the target claim's status", where, s.Cluster)
		set(hostfleetv1alpha1.ConditionForwarded, metav1.ConditionTrue, hostfleetv1alpha1.ReasonFeedbackPending, msg)
		set(hostfleetv1alpha1.ConditionReady, metav1.ConditionFalse, hostfleetv1alpha1.ReasonFeedbackPending, msg)
		return
	}

	mirror(c, s, fb)
	if reason, msg := distrust(c, s, fb); reason != "" {
		set(hostfleetv1alpha1.ConditionReady, metav1.ConditionFalse, reason, msg)
	}
}

// setCondition sets a condition of the claim, at its generation.
func setCondition(c *metal3api.HostClaim, t string, status metav1.ConditionStatus, reason, msg string) {
	conditions.Set(&c.Status.Conditions, metav1.Condition{Type: t, Status: status, Reason: reason,
		Message: msg, ObservedGeneration: c.Generation})
}

// mirror copies fresh feedback of the target claim into the claim: its
// conditions and status fields, and a Forwarded condition that says
// whether the target is bound and by which controller.
func mirror(c *metal3api.HostClaim, s State, fb *Feedback) {
	for _, t := range MirroredConditions {
		tc, ok := fb.Conditions[t]
		if !ok {
			meta.RemoveStatusCondition(&c.Status.Conditions, t)
			continue
		}
		tc = valid(tc)
		conditions.Set(&c.Status.Conditions, metav1.Condition{Type: t, Status: tc.Status, Reason: tc.Reason, Message: tc.Message,
			ObservedGeneration: c.Generation, LastTransitionTime: sinceAtMost(tc.LastTransitionTime, time.Now())})
	}
	c.Status.PoweredOn = fb.PoweredOn
	c.Status.BareMetalHost = fb.BareMetalHost
	c.Status.HardwareData = s.HardwareCopy
	if fb.LastUpdated != nil {
		c.Status.LastUpdated = fb.LastUpdated
	}
	target := TargetNamespace(c.Namespace) + "/" + c.Name
	servedBy := servedBy(fb, s.Cluster)
	if fb.Bound() {
		setCondition(c, hostfleetv1alpha1.ConditionForwarded, metav1.ConditionTrue, hostfleetv1alpha1.ReasonTargetBound, fmt.Sprintf(
			"applied on %s as HostClaim %s; bound to BareMetalHost %s/%s%s", s.Cluster, target, fb.BareMetalHost.Namespace, fb.BareMetalHost.Name, servedBy))
		return
	}
	why := "its controller has not reported an Associated condition"
	if a, ok := fb.Conditions[hostfleetv1alpha1.ConditionAssociated]; ok {
		why = fmt.Sprintf("%s: %s", a.Reason, a.Message)
	}
	setCondition(c, hostfleetv1alpha1.ConditionForwarded, metav1.ConditionTrue, hostfleetv1alpha1.ReasonTargetNotBound, fmt.Sprintf(
		"applied on %s as HostClaim %s; not bound to a host%s: %s", s.Cluster, target, servedBy, why))
}

// conditionReason is what the API accepts as a condition's reason.
var conditionReason = regexp.MustCompile(`^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$`)

// valid is a target's condition as the hub's API accepts it: a status
// other than True, False or Unknown is Unknown, a reason that is not one
// (or none) is Unspecified. Whatever a target cluster reports, the claim's
// status write goes through.
func valid(c metav1.Condition) metav1.Condition {
	switch c.Status {
	case metav1.ConditionTrue, metav1.ConditionFalse, metav1.ConditionUnknown:
	default:
		c.Status = metav1.ConditionUnknown
	}
	if len(c.Reason) > 1024 || !conditionReason.MatchString(c.Reason) {
		c.Reason = "Unspecified"
	}
	return c
}

// sinceAtMost is a target's transition time, if any, never later than now
// (zero: SetStatusCondition takes now).
func sinceAtMost(t metav1.Time, now time.Time) metav1.Time {
	if t.IsZero() || t.After(now) {
		return metav1.Time{}
	}
	return t
}

// distrust is why the mirrored Ready cannot be trusted, if it cannot: the
// agent serving the target is unavailable, only baremetal-operator's
// HostClaim controller serves it, or the feedback lacks conditions.
// Empty when the mirrored Ready stands.
func distrust(c *metal3api.HostClaim, s State, fb *Feedback) (reason, msg string) {
	target := TargetNamespace(c.Namespace) + "/" + c.Name
	provisioned := fb.Conditions[hostfleetv1alpha1.ConditionProvisioned].Status == metav1.ConditionTrue
	onlyBMO := !slices.Contains(fb.ServedBy, ServedByAgent) && slices.Contains(fb.ServedBy, ServedByBMO)
	switch {
	case s.AgentUnavailable && !onlyBMO:
		return hostfleetv1alpha1.ReasonAgentUnavailable, fmt.Sprintf(
			"the hostfleet-agent add-on on %s is not Available (kubectl get managedclusteraddon -n %s %s): nothing keeps the target claim's status current, so it may be stale",
			s.Cluster, s.Cluster, hostfleetv1alpha1.AddonName)
	case onlyBMO && !provisioned:
		return hostfleetv1alpha1.ReasonServedByBareMetalOperator, fmt.Sprintf(
			"baremetal-operator's HostClaim controller serves the target claim %s on %s (finalizer %s) and reports no Provisioned host: "+
				"it associates a host and does not provision it (v0.14). Have the Hostfleet agent serve %s's forwarded claims: "+
				"run baremetal-operator there without --hostclaims, and the agent with --local-claims (delete and re-create the claim to move it)",
			target, s.Cluster, metal3api.HostClaimFinalizer, s.Cluster)
	case len(fb.Conditions) == 0:
		return hostfleetv1alpha1.ReasonFeedbackIncomplete, fmt.Sprintf(
			"the target claim %s on %s has no status yet: no HostClaim controller there has taken it; run the Hostfleet agent with --local-claims on %s (or baremetal-operator's HostClaim controller)",
			target, s.Cluster, s.Cluster)
	}
	if m := fb.missing(); len(m) > 0 {
		return hostfleetv1alpha1.ReasonFeedbackIncomplete, fmt.Sprintf(
			"the target claim %s on %s does not report %s, so the hub cannot tell whether it is ready "+
				"(upstream baremetal-operator's HostClaim controller writes only Associated and Synchronized); serve %s with the Hostfleet agent's --local-claims for a Ready condition",
			target, s.Cluster, joinMissing(m), s.Cluster)
	}
	if !fb.Bound() {
		a := fb.Conditions[hostfleetv1alpha1.ConditionAssociated]
		return hostfleetv1alpha1.ReasonTargetNotBound, fmt.Sprintf(
			"the target claim %s on %s reports Ready but is not bound to a host (Associated %s %s): its Ready is not trusted",
			target, s.Cluster, a.Status, a.Reason)
	}
	return "", ""
}

// servedBy names, for the Forwarded message, the HostClaim controllers
// serving the target claim (their finalizers on it). With both, the
// agent serves it (baremetal-operator's finalizer is on every claim its
// controller reconciles) and the message says what to turn off.
func servedBy(fb *Feedback, cluster string) string {
	switch len(fb.ServedBy) {
	case 0:
		return ""
	case 1:
		return " by " + fb.ServedBy[0]
	}
	return fmt.Sprintf(" by %s; %s's HostClaim controller reconciles it too (finalizer %s): two HostClaim controllers run on %s, turn %s's --hostclaims off there",
		fb.ServedBy[0], fb.ServedBy[1], metal3api.HostClaimFinalizer, cluster, fb.ServedBy[1])
}
