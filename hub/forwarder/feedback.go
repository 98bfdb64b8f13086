package forwarder

import (
	"fmt"
	"strings"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	workv1 "open-cluster-management.io/api/work/v1"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// MirroredConditions are the target claim's conditions copied to the hub
// claim: the Hostfleet agent writes all of them (HostHealthy once it judged
// the host); upstream baremetal-operator's HostClaim controller writes
// Associated and Synchronized only.
var MirroredConditions = []string{
	hostfleetv1alpha1.ConditionAssociated,
	hostfleetv1alpha1.ConditionSynchronized,
	hostfleetv1alpha1.ConditionProvisioned,
	hostfleetv1alpha1.ConditionAvailableForProvisioning,
	hostfleetv1alpha1.ConditionReady,
	hostfleetv1alpha1.ConditionHostHealthy,
}

// Names of the scalar feedback values besides the conditions'
// ("<Type>.status", "<Type>.reason", "<Type>.message").
const (
	feedbackPoweredOn     = "poweredOn"
	feedbackHostName      = "bareMetalHost.name"
	feedbackHostNamespace = "bareMetalHost.namespace"
	feedbackHWName        = "hardwareData.name"
	feedbackHWNamespace   = "hardwareData.namespace"
	feedbackLastUpdated   = "lastUpdated"
	feedbackRebootHandled = "rebootHandled"
	// feedbackAssociatedSince is when the target's Associated last changed:
	// the hub's Associated keeps it, so that the scheduler counts the
	// claim's host as its agent's HostInventory does (both on the agent's
	// clock), not from when the feedback arrived.
	feedbackAssociatedSince = "Associated.lastTransitionTime"
	// The HostClaim controllers' finalizers on the target: which serves it.
	feedbackAgentFinalizer = "finalizer.agent"
	feedbackBMOFinalizer   = "finalizer.baremetalOperator"
)

// Controllers that may serve a target claim, as Feedback.ServedBy names them.
const (
	ServedByAgent = "the Hostfleet agent"
	ServedByBMO   = "baremetal-operator"
)

// FeedbackPaths are the work's feedback rules on the target claim: scalar
// values only, which a stock OCM work agent reports without the
// RawFeedbackJsonString feature gate (whose JSON is also capped at 1024
// characters). A missing value (a condition the target does not have, a
// false poweredOn) is simply absent.
func FeedbackPaths() []workv1.JsonPath {
	var out []workv1.JsonPath
	for _, t := range MirroredConditions {
		for _, f := range []string{"status", "reason", "message"} {
			out = append(out, workv1.JsonPath{Name: t + "." + f,
				Path: fmt.Sprintf(`.status.conditions[?(@.type=="%s")].%s`, t, f)})
		}
	}
	return append(out,
		workv1.JsonPath{Name: feedbackAssociatedSince, Path: fmt.Sprintf(`.status.conditions[?(@.type=="%s")].lastTransitionTime`, hostfleetv1alpha1.ConditionAssociated)},
		workv1.JsonPath{Name: feedbackPoweredOn, Path: ".status.poweredOn"},
		workv1.JsonPath{Name: feedbackHostName, Path: ".status.bareMetalHost.name"},
		workv1.JsonPath{Name: feedbackHostNamespace, Path: ".status.bareMetalHost.namespace"},
		workv1.JsonPath{Name: feedbackHWName, Path: ".status.hardwareData.name"},
		workv1.JsonPath{Name: feedbackHWNamespace, Path: ".status.hardwareData.namespace"},
		workv1.JsonPath{Name: feedbackLastUpdated, Path: ".status.lastUpdated"},
		workv1.JsonPath{Name: feedbackRebootHandled, Path: `.metadata.annotations.hostfleet\.io/reboot-handled`},
		workv1.JsonPath{Name: feedbackAgentFinalizer, Path: fmt.Sprintf(`.metadata.finalizers[?(@=="%s")]`, hostfleetv1alpha1.AgentFinalizer)},
		workv1.JsonPath{Name: feedbackBMOFinalizer, Path: fmt.Sprintf(`.metadata.finalizers[?(@=="%s")]`, metal3api.HostClaimFinalizer)},
	)
}

// Feedback is what the work agent reported of the target claim.
type Feedback struct {
	// Synced: the work agent has read the target claim's status (its
	// StatusFeedbackSynced condition is True).
	Synced bool
	// Conditions the target has, by type.
	Conditions    map[string]metav1.Condition
	PoweredOn     bool
	BareMetalHost *metal3api.ObjectReference
	// HardwareData is the target's own reference (on the target cluster).
	HardwareData  *metal3api.ObjectReference
	LastUpdated   *metav1.Time
	RebootHandled string
	// ServedBy are the HostClaim controllers whose finalizer the target
	// carries (ServedByAgent, ServedByBMO), in that order.
	ServedBy []string
}

// Bound reports whether the target is bound to a host.
func (f *Feedback) Bound() bool {
	c, ok := f.Conditions[hostfleetv1alpha1.ConditionAssociated]
	return ok && c.Status == metav1.ConditionTrue && f.BareMetalHost != nil
}

// ReadFeedback is the target claim's feedback in w's status, and whether the
// work agent has applied the target claim.
func ReadFeedback(w *workv1.ManifestWork) (fb *Feedback, applied bool) {
	fb = &Feedback{Conditions: map[string]metav1.Condition{}}
	for _, m := range w.Status.ResourceStatus.Manifests {
		if m.ResourceMeta.Group != metal3api.GroupVersion.Group || m.ResourceMeta.Resource != "hostclaims" {
			continue
		}
		applied = isTrue(m.Conditions, workv1.ManifestApplied)
		fb.Synced = isTrue(m.Conditions, "StatusFeedbackSynced")
		values := map[string]workv1.FieldValue{}
		for _, v := range m.StatusFeedbacks.Values {
			values[v.Name] = v.Value
		}
		str := func(name string) string {
			if v, ok := values[name]; ok && v.String != nil {
				return *v.String
			}
			return ""
		}
		for _, t := range MirroredConditions {
			status := str(t + ".status")
			if status == "" {
				continue
			}
			fb.Conditions[t] = metav1.Condition{Type: t, Status: metav1.ConditionStatus(status), Reason: str(t + ".reason"), Message: str(t + ".message")}
		}
		if a, ok := fb.Conditions[hostfleetv1alpha1.ConditionAssociated]; ok {
			if since, err := time.Parse(time.RFC3339, str(feedbackAssociatedSince)); err == nil {
				a.LastTransitionTime = metav1.NewTime(since)
				fb.Conditions[hostfleetv1alpha1.ConditionAssociated] = a
			}
		}
		if v, ok := values[feedbackPoweredOn]; ok && v.Boolean != nil {
			fb.PoweredOn = *v.Boolean
		}
		if n := str(feedbackHostName); n != "" {
			fb.BareMetalHost = &metal3api.ObjectReference{Namespace: str(feedbackHostNamespace), Name: n}
		}
		if n := str(feedbackHWName); n != "" {
			fb.HardwareData = &metal3api.ObjectReference{Namespace: str(feedbackHWNamespace), Name: n}
		}
		if t, err := time.Parse(time.RFC3339, str(feedbackLastUpdated)); err == nil {
			fb.LastUpdated = &metav1.Time{Time: t}
		}
		fb.RebootHandled = str(feedbackRebootHandled)
		for _, f := range [][2]string{{feedbackAgentFinalizer, ServedByAgent}, {feedbackBMOFinalizer, ServedByBMO}} {
			if str(f[0]) != "" {
				fb.ServedBy = append(fb.ServedBy, f[1])
			}
		}
	}
	return fb, applied && isTrue(w.Status.Conditions, workv1.WorkApplied)
}

func isTrue(conds []metav1.Condition, t string) bool {
	for _, c := range conds {
		if c.Type == t {
			return c.Status == metav1.ConditionTrue
		}
	}
	return false
}

// missing lists, sorted, what the hub needs and the feedback lacks.
func (f *Feedback) missing() []string {
	var out []string
	for _, t := range []string{hostfleetv1alpha1.ConditionAssociated, hostfleetv1alpha1.ConditionReady} {
		if _, ok := f.Conditions[t]; !ok {
			out = append(out, "condition "+t)
		}
	}
	if c, ok := f.Conditions[hostfleetv1alpha1.ConditionAssociated]; ok && c.Status == metav1.ConditionTrue && f.BareMetalHost == nil {
		out = append(out, "status.bareMetalHost")
	}
	return out
}

func joinMissing(m []string) string { return strings.Join(m, ", ") }
