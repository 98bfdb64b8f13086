package maintenance

import (
	"testing"
	"time"

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
