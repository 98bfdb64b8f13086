package maintenance

import (
	"fmt"
	"sort"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// Request is one maintenance that lists the claim's host.
type Request struct {
	// Cluster and Name name the HostMaintenance (its namespace is the
	// cluster).
	Cluster, Name string
	Policy        hostfleetv1alpha1.MaintenancePolicy
	Deadline      time.Time
	Reason        string
	Complete      bool
	// Host is the claim's host, namespace/name on the cluster, and State
	// where the maintenance's status has it.
	Host  string
	State hostfleetv1alpha1.MaintenanceHostState
}

// Input is what Decide reads.
type Input struct {
	Now      time.Time
	Requests []Request
	// Approved: the tenant annotated the claim
	// hostfleet.io/maintenance-approved: "true".
	Approved bool
	// Current is the claim's MaintenanceRequested condition, if any.
	Current *metav1.Condition
}

// Plan is what to do.
type Plan struct {
	// Condition is MaintenanceRequested as it should be; nil leaves the
	// claim without one.
	Condition *metav1.Condition
	// Release: mark the claim ReleasedBy and delete it.
	Release    bool
	ReleasedBy string
	// After is when to look again (an Enforced deadline); 0: on a change.
	After time.Duration
}

// Decide: a claim whose host an active maintenance waits for is asked
// (True, the earliest deadline first); it is released once approved, or
// at an Enforced deadline. Once no maintenance waits for it, a claim that
// was asked is told the maintenance is complete (False); one never asked
// gets no condition.
func Decide(in Input) Plan {
	var waiting []Request
	for _, r := range in.Requests {
		if !r.Complete && r.State == hostfleetv1alpha1.MaintenanceWaiting {
			waiting = append(waiting, r)
		}
	}
	if len(waiting) == 0 {
		if in.Current == nil || in.Current.Status != metav1.ConditionTrue || in.Current.Reason == hostfleetv1alpha1.ReasonMaintenanceReleased {
			return Plan{Condition: in.Current}
		}
		return Plan{Condition: &metav1.Condition{Type: hostfleetv1alpha1.ConditionMaintenanceRequested, Status: metav1.ConditionFalse,
			Reason: hostfleetv1alpha1.ReasonMaintenanceComplete, Message: "no maintenance waits for the claim's host any more: it keeps its host"}}
	}
	sort.Slice(waiting, func(i, j int) bool {
		if !waiting[i].Deadline.Equal(waiting[j].Deadline) {
			return waiting[i].Deadline.Before(waiting[j].Deadline)
		}
		return waiting[i].Cluster+"/"+waiting[i].Name < waiting[j].Cluster+"/"+waiting[j].Name
	})
	r := waiting[0]
	cond := &metav1.Condition{Type: hostfleetv1alpha1.ConditionMaintenanceRequested, Status: metav1.ConditionTrue}
	what := fmt.Sprintf("host %s on cluster %s is wanted for maintenance %s (%s)", r.Host, r.Cluster, r.Name, r.Reason)
	deadline := r.Deadline.UTC().Format(time.RFC3339)
	releasedBy := fmt.Sprintf("%s/%s/%s", hostfleetv1alpha1.ReleasedByMaintenance, r.Cluster, r.Name)
	due := r.Policy == hostfleetv1alpha1.MaintenanceEnforced && !in.Now.Before(r.Deadline)
	switch {
	case in.Approved || due:
		why := "its tenant approved"
		if !in.Approved {
			why = "its deadline " + deadline + " passed"
		}
		cond.Reason = hostfleetv1alpha1.ReasonMaintenanceReleased
		cond.Message = fmt.Sprintf("%s: %s, so the hub released the claim (deleted it); its host is deprovisioned and the claim is gone once it is", what, why)
		return Plan{Condition: cond, Release: true, ReleasedBy: releasedBy}
	case r.Policy == hostfleetv1alpha1.MaintenanceEnforced:
		cond.Reason = hostfleetv1alpha1.ReasonMaintenanceEnforced
		cond.Message = fmt.Sprintf("%s: the hub releases the claim (deletes it) at %s; to release it sooner, annotate it %s=true or delete it",
			what, deadline, hostfleetv1alpha1.AnnotationMaintenanceApproved)
		return Plan{Condition: cond, After: r.Deadline.Sub(in.Now)}
	default:
		cond.Reason = hostfleetv1alpha1.ReasonMaintenanceOwnerApproval
		cond.Message = fmt.Sprintf("%s: please release it by %s: annotate the claim %s=true (the hub then deletes it) or delete it; nothing is released without you",
			what, deadline, hostfleetv1alpha1.AnnotationMaintenanceApproved)
		return Plan{Condition: cond}
	}
}
