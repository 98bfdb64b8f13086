package heal

import (
	"testing"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hostfleet/hostfleet/hub/api/healing"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// FuzzNext holds Next to its promises for any input: a host is quarantined
// only once confirmed off or under an unfenced policy, only under Replace,
// and never within the grace from its failure, nor while the breaker is
// open or the claim is at its limit, unless its fence was already under way;
// a fence begins only past the grace.
func FuzzNext(f *testing.F) {
	f.Add(uint8(2), uint8(1), int64(30), int64(60), int64(60), false, false, false, 0, 3)
	f.Add(uint8(2), uint8(2), int64(200), int64(60), int64(60), true, false, true, 3, 3)
	f.Fuzz(func(t *testing.T, state, reason uint8, agoSec, graceSec, fenceSec int64, off, unfenced, breaker bool, replaced, maxPerDay int) {
		now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
		reasons := []string{"", hostfleetv1alpha1.ReasonHealthy, hostfleetv1alpha1.ReasonHostFailed, hostfleetv1alpha1.ReasonFencing,
			hostfleetv1alpha1.ReasonFenceUnconfirmed, hostfleetv1alpha1.ReasonReplacing, hostfleetv1alpha1.ReasonReplacementPaused}
		r := reasons[int(reason)%len(reasons)]
		grace := time.Duration(graceSec%100000) * time.Second
		in := Input{Host: "h", Verdict: Verdict{State: State(state % 3)}, Off: off, BreakerOpen: breaker, Replaced: replaced,
			Policy:       healing.Policy{Action: hostfleetv1alpha1.HealingReplace, Grace: grace, MaxPerDay: maxPerDay, Unfenced: unfenced},
			FenceTimeout: time.Duration(fenceSec%100000) * time.Second, Now: now}
		if state&4 != 0 {
			in.Policy.Action = hostfleetv1alpha1.HealingNotify
		}
		var since time.Time
		if r != "" {
			status := metav1.ConditionFalse
			if r == hostfleetv1alpha1.ReasonHealthy {
				status = metav1.ConditionTrue
			}
			since = now.Add(-time.Duration(agoSec%1000000) * time.Second)
			in.Current = &metav1.Condition{Status: status, Reason: r, LastTransitionTime: metav1.NewTime(since)}
		}
		if state&8 != 0 {
			in.Last = &healing.Replacement{Failed: "h"}
		}
		d := Next(in)
		wasFencing := r == hostfleetv1alpha1.ReasonFencing || r == hostfleetv1alpha1.ReasonFenceUnconfirmed
		if d.Step == Quarantine && (in.Policy.Action != hostfleetv1alpha1.HealingReplace || !wasFencing || !off && !unfenced) && !resumes(in) {
			t.Fatalf("quarantined without a fence confirmed (or allowed) under Replace: %+v → %+v", in, d)
		}
		if in.Current == nil || in.Current.Status != metav1.ConditionFalse || r == hostfleetv1alpha1.ReasonReplacing {
			since = now // failed from now on
		}
		if d.Step == Fence {
			if in.Verdict.State != Failed || now.Before(since.Add(grace)) || breaker || replaced >= maxPerDay || in.Policy.Action != hostfleetv1alpha1.HealingReplace {
				t.Fatalf("a fence begun before its time: %+v → %+v", in, d)
			}
		}
		if d.Step != Report && d.Status != metav1.ConditionFalse {
			t.Fatalf("a step other than Report with the host healthy: %+v", d)
		}
		if d.Reason == "" || d.Message == "" || d.After < 0 {
			t.Fatalf("a decision without reason, message or a sane requeue: %+v", d)
		}
	})
}

// FuzzJudge: any host gets a verdict; a failed one names its evidence.
func FuzzJudge(f *testing.F) {
	f.Add("error", "power management error", "x", "False", int64(10), int64(5))
	f.Fuzz(func(t *testing.T, op, kind, msg, nodeStatus string, nodeSince, boundAt int64) {
		h := &metal3api.BareMetalHost{}
		h.Status.OperationalStatus, h.Status.ErrorType, h.Status.ErrorMessage = metal3api.OperationalStatus(op), metal3api.ErrorType(kind), msg
		v := Judge(h)
		if v.State != Healthy && (v.Evidence == "" || v.Message == "") {
			t.Fatalf("a verdict without evidence: %+v", v)
		}
		// A Node counts only against a host it may run on, and never
		// clears a failure.
		node := &metav1.Condition{Status: metav1.ConditionStatus(nodeStatus), LastTransitionTime: metav1.NewTime(time.Unix(nodeSince, 0))}
		bound := time.Time{}
		if boundAt != 0 {
			bound = time.Unix(boundAt, 0)
		}
		n := Node(v, h, node, bound)
		switch {
		case v.State == Failed && n != v:
			t.Fatalf("a Node changed a failed host's verdict: %+v, then %+v", v, n)
		case n.State == Failed && v.State != Failed && (bound.IsZero() || nodeSince < boundAt || node.Status == metav1.ConditionTrue):
			t.Fatalf("a host failed by a Node that is Ready or not its own: %+v (bound at %d)", node, boundAt)
		case n.State == Failed && EvidenceIn(n.Message) != n.Evidence:
			t.Fatalf("the evidence does not read back: %+v", n)
		}
	})
}
