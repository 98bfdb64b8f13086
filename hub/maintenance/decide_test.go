package maintenance

import (
	"testing"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

func TestDecide(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	req := func(name string, policy hostfleetv1alpha1.MaintenancePolicy, deadline time.Duration, state hostfleetv1alpha1.MaintenanceHostState) Request {
		return Request{Cluster: "c1", Name: name, Policy: policy, Deadline: now.Add(deadline), Reason: "firmware", Host: "hosts/h0", State: state}
	}
	asked := &metav1.Condition{Type: hostfleetv1alpha1.ConditionMaintenanceRequested, Status: metav1.ConditionTrue, Reason: hostfleetv1alpha1.ReasonMaintenanceEnforced}
	for _, tc := range []struct {
		name        string
		in          Input
		reason      string
		status      metav1.ConditionStatus
		release     string
		after       time.Duration
		noCondition bool
	}{
		{name: "no maintenance, never asked: nothing", in: Input{}, noCondition: true},
		{name: "enforced, before the deadline: asked, looked at again then",
			in:     Input{Requests: []Request{req("m", hostfleetv1alpha1.MaintenanceEnforced, time.Hour, hostfleetv1alpha1.MaintenanceWaiting)}},
			reason: hostfleetv1alpha1.ReasonMaintenanceEnforced, status: metav1.ConditionTrue, after: time.Hour},
		{name: "enforced, at the deadline: released",
			in:     Input{Requests: []Request{req("m", hostfleetv1alpha1.MaintenanceEnforced, 0, hostfleetv1alpha1.MaintenanceWaiting)}},
			reason: hostfleetv1alpha1.ReasonMaintenanceReleased, status: metav1.ConditionTrue, release: "maintenance/c1/m"},
		{name: "owner approval, past the deadline: still asked, never released by the hub",
			in:     Input{Requests: []Request{req("m", hostfleetv1alpha1.MaintenanceOwnerApproval, -time.Hour, hostfleetv1alpha1.MaintenanceWaiting)}},
			reason: hostfleetv1alpha1.ReasonMaintenanceOwnerApproval, status: metav1.ConditionTrue},
		{name: "owner approval, approved: released",
			in:     Input{Approved: true, Requests: []Request{req("m", hostfleetv1alpha1.MaintenanceOwnerApproval, time.Hour, hostfleetv1alpha1.MaintenanceWaiting)}},
			reason: hostfleetv1alpha1.ReasonMaintenanceReleased, status: metav1.ConditionTrue, release: "maintenance/c1/m"},
		{name: "approved without a maintenance: nothing",
			in: Input{Approved: true}, noCondition: true},
		{name: "the earliest deadline first",
			in: Input{Requests: []Request{req("later", hostfleetv1alpha1.MaintenanceOwnerApproval, 2*time.Hour, hostfleetv1alpha1.MaintenanceWaiting),
				req("sooner", hostfleetv1alpha1.MaintenanceEnforced, -time.Minute, hostfleetv1alpha1.MaintenanceWaiting)}},
			reason: hostfleetv1alpha1.ReasonMaintenanceReleased, status: metav1.ConditionTrue, release: "maintenance/c1/sooner"},
		{name: "complete with the claim still bound: told so",
			in: Input{Current: asked, Requests: []Request{func() Request {
				r := req("m", hostfleetv1alpha1.MaintenanceEnforced, time.Hour, hostfleetv1alpha1.MaintenanceDone)
				r.Complete = true
				return r
			}()}},
			reason: hostfleetv1alpha1.ReasonMaintenanceComplete, status: metav1.ConditionFalse},
		{name: "maintenance gone after asking: told so",
			in: Input{Current: asked}, reason: hostfleetv1alpha1.ReasonMaintenanceComplete, status: metav1.ConditionFalse},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			tc.in.Now = now
			p := Decide(tc.in)
			if tc.noCondition {
				g.Expect(p.Condition).To(BeNil())
				g.Expect(p.Release).To(BeFalse())
				return
			}
			g.Expect(p.Condition).NotTo(BeNil())
			g.Expect(p.Condition.Reason).To(Equal(tc.reason), p.Condition.Message)
			g.Expect(p.Condition.Status).To(Equal(tc.status))
			g.Expect(p.Condition.Message).NotTo(BeEmpty())
			g.Expect(p.Release).To(Equal(tc.release != ""))
			g.Expect(p.ReleasedBy).To(Equal(tc.release))
			g.Expect(p.After).To(Equal(tc.after))
		})
	}
}

func TestSelects(t *testing.T) {
	on := func(host string, lbls map[string]string) *metal3api.HostClaim {
		c := &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Labels: lbls}}
		if host != "" {
			c.Status.BareMetalHost = &metal3api.ObjectReference{Namespace: "hosts", Name: host}
		}
		return c
	}
	r1 := map[string]string{"example.com/rack": "r1", "app": "web"}
	prefixes := []string{"example.com"}
	for _, tc := range []struct {
		name  string
		sel   metav1.LabelSelector
		host  string
		claim *metal3api.HostClaim
		why   string
	}{
		{name: "its host, a synced label that matches", sel: metav1.LabelSelector{MatchLabels: map[string]string{"example.com/rack": "r1"}},
			host: "hosts/h0", claim: on("h0", r1)},
		{name: "an expression on a synced label", sel: metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "example.com/rack", Operator: metav1.LabelSelectorOpIn, Values: []string{"r1", "r2"}}}}, host: "hosts/h0", claim: on("h0", r1)},
		{name: "another rack", sel: metav1.LabelSelector{MatchLabels: map[string]string{"example.com/rack": "r2"}},
			host: "hosts/h0", claim: on("h0", r1), why: "do not satisfy example.com/rack=r2"},
		{name: "NotIn its rack", sel: metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "example.com/rack", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"r1"}}}}, host: "hosts/h0", claim: on("h0", r1),
			why: "do not satisfy example.com/rack notin (r1)"},
		{name: "a host the claim does not hold", sel: metav1.LabelSelector{MatchLabels: map[string]string{"example.com/rack": "r1"}},
			host: "hosts/h1", claim: on("h0", r1), why: "the agent lists it on host hosts/h1, but the claim holds host hosts/h0"},
		{name: "a claim holding nothing", sel: metav1.LabelSelector{MatchLabels: map[string]string{"example.com/rack": "r1"}},
			host: "hosts/h0", claim: on("", r1), why: "the claim holds no host"},
		{name: "a label the tenant does not sync", sel: metav1.LabelSelector{MatchLabels: map[string]string{"rack": "r1"}},
			host: "hosts/h0", claim: on("h0", map[string]string{"example.com/rack": "r1", "rack": "r1"}), why: "hostSelector uses rack, which the claim's tenant does not sync"},
		{name: "a synced label and one not synced", sel: metav1.LabelSelector{MatchLabels: map[string]string{"example.com/rack": "r1", "other.org/pdu": "p1"}},
			host: "hosts/h0", claim: on("h0", r1), why: "hostSelector uses other.org/pdu"},
		{name: "the claim's own labels outside the prefixes do not count", sel: metav1.LabelSelector{MatchLabels: map[string]string{"example.com/app": "web"}},
			host: "hosts/h0", claim: on("h0", r1), why: "do not satisfy example.com/app=web"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			err := Selects(tc.sel, tc.host, tc.claim, prefixes)
			if tc.why == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(err).To(MatchError(ContainSubstring(tc.why)))
		})
	}
}
