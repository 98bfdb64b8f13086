package forwarder

import (
	"testing"
	"time"

	"k8s.io/utils/ptr"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	workv1 "open-cluster-management.io/api/work/v1"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// work is an applied work whose claim's feedback holds values.
func work(applied bool, values map[string]any) *workv1.ManifestWork {
	status := metav1.ConditionFalse
	if applied {
		status = metav1.ConditionTrue
	}
	w := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Name: "hostclaim-u-1"}}
	w.Status.Conditions = []metav1.Condition{{Type: workv1.WorkApplied, Status: status}}
	m := workv1.ManifestCondition{ResourceMeta: workv1.ManifestResourceMeta{Group: "metal3.io", Resource: "hostclaims"},
		Conditions: []metav1.Condition{{Type: workv1.ManifestApplied, Status: status}, {Type: "StatusFeedbackSynced", Status: metav1.ConditionTrue}}}
	for k, v := range values {
		fv := workv1.FeedbackValue{Name: k}
		switch v := v.(type) {
		case string:
			fv.Value = workv1.FieldValue{Type: workv1.String, String: &v}
		case bool:
			fv.Value = workv1.FieldValue{Type: workv1.Boolean, Boolean: &v}
		}
		m.StatusFeedbacks.Values = append(m.StatusFeedbacks.Values, fv)
	}
	w.Status.ResourceStatus.Manifests = []workv1.ManifestCondition{m}
	return w
}

var bound = map[string]any{
	"Associated.status": "True", "Associated.reason": "BareMetalHostAssociated",
	"Ready.status": "True", "Ready.reason": "Ready", "Ready.message": "provisioned",
	"Provisioned.status": "True", "Provisioned.reason": "Provisioned",
	"poweredOn": true, "bareMetalHost.name": "h0", "bareMetalHost.namespace": "hosts",
	"hardwareData.name": "h0", "hardwareData.namespace": "hosts", "lastUpdated": "2026-11-22T10:00:00Z",
}

// merge is a copy of a with b's values over it.
func merge(a, b map[string]any) map[string]any {
	out := map[string]any{}
	for _, m := range []map[string]any{a, b} {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

func TestSetStatus(t *testing.T) {
	copyRef := &metal3api.ObjectReference{Namespace: "tenant-a", Name: "web"}
	for _, tc := range []struct {
		name              string
		state             State
		forwarded, ready  metav1.ConditionStatus
		fReason, rReason  string
		host              bool
		messageMentioning string
	}{
		{"bound and ready", State{Cluster: "c1", Work: work(true, bound), ClusterAvailable: true, HardwareCopy: copyRef},
			metav1.ConditionTrue, metav1.ConditionTrue, hostfleetv1alpha1.ReasonTargetBound, "Ready", true, "bound to BareMetalHost hosts/h0"},
		{"not applied", State{Cluster: "c1", Work: work(false, nil), ClusterAvailable: true},
			metav1.ConditionFalse, metav1.ConditionFalse, hostfleetv1alpha1.ReasonWorkNotApplied, hostfleetv1alpha1.ReasonWorkNotApplied, false, "kubectl get managedcluster c1"},
		{"cluster gone: stale", State{Cluster: "c1", Work: work(true, bound), ClusterAvailable: false},
			metav1.ConditionFalse, metav1.ConditionFalse, hostfleetv1alpha1.ReasonClusterUnavailable, hostfleetv1alpha1.ReasonClusterUnavailable, false, "stale"},
		{"the cluster's agent add-on not Available", State{Cluster: "c1", Work: work(true, bound), ClusterAvailable: true, AgentUnavailable: true},
			metav1.ConditionTrue, metav1.ConditionFalse, hostfleetv1alpha1.ReasonTargetBound, hostfleetv1alpha1.ReasonAgentUnavailable, true, "may be stale"},
		{"no Ready in the feedback", State{Cluster: "c1", Work: work(true, map[string]any{"Associated.status": "True", "bareMetalHost.name": "h0", "bareMetalHost.namespace": "hosts"}), ClusterAvailable: true},
			metav1.ConditionTrue, metav1.ConditionFalse, hostfleetv1alpha1.ReasonTargetBound, hostfleetv1alpha1.ReasonFeedbackIncomplete, true, "does not report condition Ready"},
		{"Associated without a host", State{Cluster: "c1", Work: work(true, map[string]any{"Associated.status": "True", "Ready.status": "True", "Ready.reason": "Ready"}), ClusterAvailable: true},
			metav1.ConditionTrue, metav1.ConditionFalse, hostfleetv1alpha1.ReasonTargetNotBound, hostfleetv1alpha1.ReasonFeedbackIncomplete, false, "status.bareMetalHost"},
		{"refused", State{Cluster: "c1", Refused: &Refused{Reason: hostfleetv1alpha1.ReasonSecretInvalid, Message: "fix it"}},
			metav1.ConditionFalse, metav1.ConditionFalse, hostfleetv1alpha1.ReasonSecretInvalid, hostfleetv1alpha1.ReasonSecretInvalid, false, "fix it"},
		{"associated by baremetal-operator only: never Ready", State{Cluster: "c1", ClusterAvailable: true, Work: work(true, map[string]any{
			"Associated.status": "True", "Associated.reason": "BareMetalHostAssociated", "Ready.status": "True", "Ready.reason": "Ready",
			"bareMetalHost.name": "h0", "bareMetalHost.namespace": "hosts", "finalizer.baremetalOperator": "metal3.io/hostclaim"})},
			metav1.ConditionTrue, metav1.ConditionFalse, hostfleetv1alpha1.ReasonTargetBound, hostfleetv1alpha1.ReasonServedByBareMetalOperator, true,
			"bound to BareMetalHost hosts/h0 by baremetal-operator"},
		{"baremetal-operator took a claim the agent serves: the agent's word stands, and the Forwarded message says both", State{Cluster: "c1",
			ClusterAvailable: true, Work: work(true, merge(bound, map[string]any{"finalizer.agent": "hostfleet.io/agent", "finalizer.baremetalOperator": "metal3.io/hostclaim"}))},
			metav1.ConditionTrue, metav1.ConditionTrue, hostfleetv1alpha1.ReasonTargetBound, "Ready", true,
			"by the Hostfleet agent; baremetal-operator's HostClaim controller reconciles it too (finalizer metal3.io/hostclaim): two HostClaim controllers run on c1, turn baremetal-operator's --hostclaims off there"},
		{"deleting", State{Cluster: "c1", Deleting: true},
			metav1.ConditionFalse, metav1.ConditionFalse, hostfleetv1alpha1.ReasonWithdrawing, hostfleetv1alpha1.ReasonWithdrawing, false, "releases its host first"},
		{"deleting, paused: waits", State{Cluster: "c1", Deleting: true, PausedBy: ptr.To("metal3.io/capm3")},
			metav1.ConditionFalse, metav1.ConditionFalse, hostfleetv1alpha1.ReasonPaused, hostfleetv1alpha1.ReasonPaused, false,
			`paused by "metal3.io/capm3" (baremetalhost.metal3.io/paused): ManifestWork c1/hostclaim-u-1 is kept`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			c := claim()
			SetStatus(c, tc.state)
			f := meta.FindStatusCondition(c.Status.Conditions, hostfleetv1alpha1.ConditionForwarded)
			r := meta.FindStatusCondition(c.Status.Conditions, hostfleetv1alpha1.ConditionReady)
			g.Expect(f).NotTo(BeNil())
			g.Expect(r).NotTo(BeNil())
			g.Expect(f.Status).To(Equal(tc.forwarded))
			g.Expect(f.Reason).To(Equal(tc.fReason))
			g.Expect(r.Status).To(Equal(tc.ready))
			g.Expect(r.Reason).To(Equal(tc.rReason))
			g.Expect(f.Message + " " + r.Message).To(ContainSubstring(tc.messageMentioning))
			if tc.host {
				g.Expect(c.Status.BareMetalHost).To(Equal(&metal3api.ObjectReference{Namespace: "hosts", Name: "h0"}))
			}
		})
	}
	t.Run("Associated keeps when the target was bound, as its agent's clock says: the scheduler compares it with that agent's inventory", func(t *testing.T) {
		g := NewWithT(t)
		c := claim()
		SetStatus(c, State{Cluster: "c1", Work: work(true, merge(bound, map[string]any{"Associated.lastTransitionTime": "2026-11-22T09:59:58Z"})), ClusterAvailable: true})
		a := meta.FindStatusCondition(c.Status.Conditions, hostfleetv1alpha1.ConditionAssociated)
		g.Expect(a.LastTransitionTime.UTC()).To(Equal(time.Date(2026, 11, 22, 9, 59, 58, 0, time.UTC)))
		future := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
		c = claim()
		SetStatus(c, State{Cluster: "c1", Work: work(true, merge(bound, map[string]any{"Associated.lastTransitionTime": future})), ClusterAvailable: true})
		a = meta.FindStatusCondition(c.Status.Conditions, hostfleetv1alpha1.ConditionAssociated)
		g.Expect(a.LastTransitionTime.Time).To(BeTemporally("<=", time.Now()), "never later than the hub's now")
	})
	t.Run("mirrored fields", func(t *testing.T) {
		g := NewWithT(t)
		c := claim()
		SetStatus(c, State{Cluster: "c1", Work: work(true, bound), ClusterAvailable: true, HardwareCopy: copyRef})
		g.Expect(c.Status.PoweredOn).To(BeTrue())
		g.Expect(c.Status.HardwareData).To(Equal(copyRef), "the hub copy, not the target cluster's object")
		g.Expect(c.Status.LastUpdated.UTC().Format("15:04")).To(Equal("10:00"))
		p := meta.FindStatusCondition(c.Status.Conditions, hostfleetv1alpha1.ConditionProvisioned)
		g.Expect(p).NotTo(BeNil())
		g.Expect(p.Reason).To(Equal("Provisioned"))
		a := meta.FindStatusCondition(c.Status.Conditions, hostfleetv1alpha1.ConditionAssociated)
		g.Expect(a.Reason).To(Equal("BareMetalHostAssociated"))
		s := meta.FindStatusCondition(c.Status.Conditions, hostfleetv1alpha1.ConditionSynchronized)
		g.Expect(s).To(BeNil(), "absent from the target, absent here")
		g.Expect(meta.FindStatusCondition(c.Status.Conditions, hostfleetv1alpha1.ConditionHostHealthy)).To(BeNil())
	})
	t.Run("the target's host health, as its agent judged it", func(t *testing.T) {
		g := NewWithT(t)
		c := claim()
		SetStatus(c, State{Cluster: "c1", Work: work(true, merge(bound, map[string]any{"HostHealthy.status": "False", "HostHealthy.reason": "Fencing",
			"HostHealthy.message": "host hosts/h0 reports power management error; powering it off"})), ClusterAvailable: true})
		h := meta.FindStatusCondition(c.Status.Conditions, hostfleetv1alpha1.ConditionHostHealthy)
		g.Expect(h).NotTo(BeNil())
		g.Expect(h.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(h.Reason).To(Equal(hostfleetv1alpha1.ReasonFencing))
		g.Expect(h.Message).To(ContainSubstring("powering it off"))
	})
}

// TestRecorded: a change of Forwarded's reason is an Event, but not the
// steps every forwarded claim passes, nor Withdrawing (an Event of its
// own); the work not applied once it had been is one.
func TestRecorded(t *testing.T) {
	g := NewWithT(t)
	reason := func(r string) *metav1.Condition { return &metav1.Condition{Reason: r} }
	for name, tc := range map[string]struct {
		before, after *metav1.Condition
		want          bool
	}{
		"no condition":                   {nil, nil, false},
		"reason unchanged":               {reason(hostfleetv1alpha1.ReasonTargetBound), reason(hostfleetv1alpha1.ReasonTargetBound), false},
		"not placed yet":                 {nil, reason(hostfleetv1alpha1.ReasonNotPlaced), false},
		"work being created":             {nil, reason(hostfleetv1alpha1.ReasonWorkNotApplied), false},
		"work being created once placed": {reason(hostfleetv1alpha1.ReasonNotPlaced), reason(hostfleetv1alpha1.ReasonWorkNotApplied), false},
		"feedback awaited":               {reason(hostfleetv1alpha1.ReasonWorkNotApplied), reason(hostfleetv1alpha1.ReasonFeedbackPending), false},
		"bound":                          {reason(hostfleetv1alpha1.ReasonFeedbackPending), reason(hostfleetv1alpha1.ReasonTargetBound), true},
		"work no longer applied":         {reason(hostfleetv1alpha1.ReasonTargetBound), reason(hostfleetv1alpha1.ReasonWorkNotApplied), true},
		"cluster lost":                   {reason(hostfleetv1alpha1.ReasonTargetBound), reason(hostfleetv1alpha1.ReasonClusterUnavailable), true},
		"refused at once":                {nil, reason(hostfleetv1alpha1.ReasonSecretInvalid), true},
		"withdrawing, said by its own":   {reason(hostfleetv1alpha1.ReasonTargetBound), reason(hostfleetv1alpha1.ReasonWithdrawing), false},
	} {
		g.Expect(recorded(tc.before, tc.after)).To(Equal(tc.want), name)
	}
}
