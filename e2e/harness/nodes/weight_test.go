package nodes

import (
	"testing"

	. "github.com/onsi/gomega"
)

func TestNiceWeight(t *testing.T) {
	g := NewWithT(t)
	for nice, want := range map[int]int{-25: 88761, -20: 88761, -10: 9548, -1: 1277, 0: 1024, 1: 820, 19: 15, 30: 15} {
		g.Expect(niceWeight(nice)).To(Equal(want), "nice %d", nice)
	}
}
