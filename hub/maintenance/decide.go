package maintenance

import (
	"fmt"
	"sort"
	"strings"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/hostfleet/hostfleet/hub/api/labelkeys"
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

// Selects judges, from what the hub knows, whether a maintenance's
// hostSelector selects the host a claim holds, which the cluster's agent
// lists as host: the claim must hold that host (status.bareMetalHost),
// and the selector must match the host's labels the agent synced to the
// claim, those under its tenant's prefixes. A requirement on a label the
// tenant does not sync cannot be judged: the claim is not selected, as far
// as the hub knows. The agent's list alone never releases a claim. nil:
// selected; else why not.
func Selects(sel metav1.LabelSelector, host string, c *metal3api.HostClaim, prefixes []string) error {
	if b := c.Status.BareMetalHost; b == nil || b.Namespace+"/"+b.Name != host {
		held := "no host"
		if b != nil {
			held = "host " + b.Namespace + "/" + b.Name
		}
		return fmt.Errorf("the agent lists it on host %s, but the claim holds %s", host, held)
	}
	s, err := metav1.LabelSelectorAsSelector(&sel)
	if err != nil {
		return fmt.Errorf("hostSelector: %w", err)
	}
	reqs, _ := s.Requirements()
	synced := labels.Set{}
	for k, v := range c.Labels {
		if labelkeys.UnderPrefixes(k, prefixes) {
			synced[k] = v
		}
	}
	var unseen []string
	for _, r := range reqs {
		if !labelkeys.UnderPrefixes(r.Key(), prefixes) {
			unseen = append(unseen, r.Key())
			continue
		}
		if !r.Matches(synced) {
			return fmt.Errorf("its host's labels synced to the claim (%s) do not satisfy %s", synced, r.String())
		}
	}
	if len(unseen) > 0 {
		return fmt.Errorf("hostSelector uses %s, which the claim's tenant does not sync (prefixes %s): the hub cannot see them on the claim; select hosts by synced labels",
			strings.Join(unseen, ", "), strings.Join(prefixes, ", "))
	}
	return nil
}
