package planes

import (
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
)

func TestRingKeepsTheLastLines(t *testing.T) {
	g := NewWithT(t)
	r := &ring{max: 3}
	g.Expect(r.tail(5)).To(BeEmpty())
	_, _ = r.Write([]byte("a\nb\n"))
	g.Expect(r.tail(5)).To(Equal([]string{"a", "b"}))
	for i := range 4 {
		_, _ = fmt.Fprintf(r, "l%d\n", i)
	}
	g.Expect(r.tail(5)).To(Equal([]string{"l1", "l2", "l3"}), "oldest first, only the last max")
	g.Expect(r.tail(2)).To(Equal([]string{"l2", "l3"}))
}
