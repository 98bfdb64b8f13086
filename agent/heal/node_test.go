package heal

import (
	"testing"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

func TestNode(t *testing.T) {
	bound := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	node := func(s metav1.ConditionStatus, since time.Time) *metav1.Condition {
		return &metav1.Condition{Type: hostfleetv1alpha1.ConditionNodeReady, Status: s, Reason: hostfleetv1alpha1.ReasonNodeNotReady,
			LastTransitionTime: metav1.NewTime(since)}
	}
	ok := host(metal3api.OperationalStatusOK, "", "")
	warned := sick(metav1.ConditionFalse, hostfleetv1alpha1.ReasonHealthWarning)
	broken := host(metal3api.OperationalStatusError, metal3api.PowerManagementError, "")
	tests := []struct {
		name     string
		h        *metal3api.BareMetalHost
		node     *metav1.Condition
		boundAt  time.Time
		state    State
		evidence string
	}{
		{"no Node found: the host's own verdict", ok, nil, bound, Healthy, ""},
		{"a Ready Node", ok, node(metav1.ConditionTrue, bound.Add(time.Hour)), bound, Healthy, ""},
		{"not Ready since after binding: failed", ok, node(metav1.ConditionFalse, bound.Add(time.Hour)), bound, Failed, hostfleetv1alpha1.ReasonNodeNotReady},
		{"Unknown (its kubelet stopped reporting): failed", ok, node(metav1.ConditionUnknown, bound.Add(time.Minute)), bound, Failed, hostfleetv1alpha1.ReasonNodeNotReady},
		{"not Ready since the second it was bound: failed", ok, node(metav1.ConditionFalse, bound), bound, Failed, hostfleetv1alpha1.ReasonNodeNotReady},
		{"not Ready since before binding: a former host's Node", ok, node(metav1.ConditionFalse, bound.Add(-time.Second)), bound, Healthy, ""},
		{"no bound-at: never judged by a Node", ok, node(metav1.ConditionFalse, bound.Add(time.Hour)), time.Time{}, Healthy, ""},
		{"a degraded host whose Node is not Ready: failed", warned, node(metav1.ConditionFalse, bound.Add(time.Hour)), bound, Failed, hostfleetv1alpha1.ReasonNodeNotReady},
		{"failed already: its own evidence stays", broken, node(metav1.ConditionFalse, bound.Add(time.Hour)), bound, Failed, "power management error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			v := Node(Judge(tt.h), tt.h, tt.node, tt.boundAt)
			g.Expect(v.State).To(Equal(tt.state))
			g.Expect(v.Evidence).To(Equal(tt.evidence))
			if tt.evidence == hostfleetv1alpha1.ReasonNodeNotReady {
				g.Expect(EvidenceIn(v.Message)).To(Equal(tt.evidence), "the evidence reads back from the message")
				g.Expect(v.Message).To(ContainSubstring(tt.node.LastTransitionTime.UTC().Format(time.RFC3339)))
			}
		})
	}
}
