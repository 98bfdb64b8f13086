package conditions_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hostfleet/hostfleet/internal/conditions"
)

func TestSetConditionBoundsTheMessage(t *testing.T) {
	for _, tc := range []struct {
		name, msg string
		cut       bool
	}{
		{"short", "placed on c1", false},
		{"exactly the limit", strings.Repeat("a", conditions.MaxConditionMessage), false},
		{"a 42 KB annotation quoted", "Placement " + strings.Repeat("p", 42*1024) + " selects none", true},
		{"multi-byte runes across the cut", strings.Repeat("é", conditions.MaxConditionMessage), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			var conds []metav1.Condition
			conditions.Set(&conds, metav1.Condition{Type: "Scheduled", Status: metav1.ConditionFalse, Reason: "NoCapacity", Message: tc.msg})
			g.Expect(conds).To(HaveLen(1))
			m := conds[0].Message
			g.Expect(len(m)).To(BeNumerically("<=", conditions.MaxConditionMessage))
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

func TestEventNote(t *testing.T) {
	g := NewWithT(t)
	g.Expect(conditions.EventNote("placed on a")).To(Equal("placed on a"))
	long := strings.Repeat("é", 600) // 1 200 bytes
	note := conditions.EventNote(long)
	g.Expect(len(note)).To(BeNumerically("<=", 1024), "what an Event holds")
	g.Expect(utf8.ValidString(note)).To(BeTrue(), "cut between characters")
	g.Expect(note).To(HaveSuffix("…"))
}
