package lease

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// DefaultWarning is how long before its end a lease says LeaseExpiring
// when the Tenant does not say (spec.leaseWarning).
const DefaultWarning = time.Hour

// Input is what a lease decision reads.
type Input struct {
	// Now is the hub's time.
	Now time.Time
	// Claim names the claim, namespace/name, for messages.
	Claim string
	// Created is the claim's creation time.
	Created time.Time
	// Until and For are the claim's hostfleet.io/lease-until and
	// hostfleet.io/lease-for; ReleasedBy its hostfleet.io/released-by.
	Until, For, ReleasedBy string
	// Cap is the Tenant's maxLeaseDuration; nil for none.
	Cap *time.Duration
	// Warning is the Tenant's leaseWarning (DefaultWarning when unset).
	Warning time.Duration
}

// Plan is what the controller does about a claim's lease.
type Plan struct {
	// Until, when not zero, is the end to write (hostfleet.io/lease-until),
	// and lease-for goes.
	Until time.Time
	// Release: the lease has ended; the claim is marked
	// (hostfleet.io/released-by) and deleted.
	Release bool
	// Condition is the claim's LeaseExpiring; nil: the claim has no lease
	// and no such condition.
	Condition *metav1.Condition
	// After is when to look again (zero: not for the lease's sake).
	After time.Duration
}

// Decide plans one claim's lease.
func Decide(in Input) Plan {
	var p Plan
	until, err := end(in)
	switch {
	case err != nil:
		return Plan{Condition: &metav1.Condition{Type: hostfleetv1alpha1.ConditionLeaseExpiring, Status: metav1.ConditionFalse,
			Reason: hostfleetv1alpha1.ReasonLeaseInvalid, Message: fmt.Sprintf("%v; the claim keeps its host until the lease is fixed or the claim deleted", err)}}
	case until.IsZero():
		return p
	case in.Until == "":
		p.Until = until
	}
	at := until.UTC().Format(time.RFC3339)
	warnFrom := until.Add(-in.Warning)
	switch {
	case in.ReleasedBy != "" || !in.Now.Before(until):
		p.Release = true
		p.Condition = &metav1.Condition{Type: hostfleetv1alpha1.ConditionLeaseExpiring, Status: metav1.ConditionTrue,
			Reason: hostfleetv1alpha1.ReasonLeaseEnded, Message: fmt.Sprintf("the lease ended at %s: the hub deleted the claim, and its host is being released", at)}
	case !in.Now.Before(warnFrom):
		p.After = until.Sub(in.Now)
		p.Condition = &metav1.Condition{Type: hostfleetv1alpha1.ConditionLeaseExpiring, Status: metav1.ConditionTrue,
			Reason: hostfleetv1alpha1.ReasonLeaseEnding, Message: fmt.Sprintf("the lease ends at %s, in %s: the hub then deletes the claim and releases its host; %s",
				at, until.Sub(in.Now).Round(time.Second), extend(in))}
	default:
		p.After = warnFrom.Sub(in.Now)
		p.Condition = &metav1.Condition{Type: hostfleetv1alpha1.ConditionLeaseExpiring, Status: metav1.ConditionFalse,
			Reason: hostfleetv1alpha1.ReasonLeaseActive, Message: fmt.Sprintf("the lease ends at %s", at)}
	}
	return p
}

// end is the lease's end: lease-until, else lease-for from the creation,
// else the tenant's cap from the creation (but never sooner than a
// warning from now: a cap set on claims already running warns them
// first); zero for no lease.
func end(in Input) (time.Time, error) {
	switch {
	case in.Until != "":
		t, err := time.Parse(time.RFC3339, in.Until)
		if err != nil {
			return time.Time{}, fmt.Errorf("%s %q is not an RFC 3339 time", hostfleetv1alpha1.AnnotationLeaseUntil, in.Until)
		}
		return t, nil
	case in.For != "":
		d, err := time.ParseDuration(in.For)
		if err != nil || d <= 0 {
			return time.Time{}, fmt.Errorf("%s %q is not a positive duration", hostfleetv1alpha1.AnnotationLeaseFor, in.For)
		}
		return in.Created.Add(d), nil
	case in.Cap != nil:
		t := in.Created.Add(*in.Cap)
		if soon := in.Now.Add(in.Warning); t.Before(soon) {
			t = soon
		}
		return t, nil
	}
	return time.Time{}, nil
}

// extend says how to extend, and how far the cap allows.
func extend(in Input) string {
	how := "extend it with kubectl hostfleet extend " + in.Claim + " --for 2h"
	if in.Cap == nil {
		return how
	}
	return fmt.Sprintf("%s, up to %s (the tenant's maxLeaseDuration of %s from the claim's creation)",
		how, in.Created.Add(*in.Cap).UTC().Format(time.RFC3339), *in.Cap)
}
