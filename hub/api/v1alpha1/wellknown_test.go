package v1alpha1_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

func TestSetConditionBoundsTheMessage(t *testing.T) {
	for _, tc := range []struct {
		name, msg string
		cut       bool
	}{
		{"short", "placed on c1", false},
		{"exactly the limit", strings.Repeat("a", hostfleetv1alpha1.MaxConditionMessage), false},
		{"a 42 KB annotation quoted", "Placement " + strings.Repeat("p", 42*1024) + " selects none", true},
		{"multi-byte runes across the cut", strings.Repeat("é", hostfleetv1alpha1.MaxConditionMessage), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			var conds []metav1.Condition
			hostfleetv1alpha1.SetCondition(&conds, metav1.Condition{Type: "Scheduled", Status: metav1.ConditionFalse, Reason: "NoCapacity", Message: tc.msg})
			g.Expect(conds).To(HaveLen(1))
			m := conds[0].Message
			g.Expect(len(m)).To(BeNumerically("<=", hostfleetv1alpha1.MaxConditionMessage))
			g.Expect(utf8.ValidString(m)).To(BeTrue())
			if !tc.cut {
				g.Expect(m).To(Equal(tc.msg))
				return
			}
			g.Expect(m).To(HaveSuffix("…"))
			g.Expect(tc.msg).To(HavePrefix(strings.TrimSuffix(m, "…")))
		})
	}
}
