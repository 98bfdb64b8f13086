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

// TestDumpAfterStop: a failed test whose fleet was stopped before the
// harness's cleanup (the local suite stops its own) still gets its dump,
// not a panic that hides why it failed.
func TestDumpAfterStop(t *testing.T) {
	f := &Fleet{planes: map[string]*Plane{}, order: []string{"hub", "infra-1"}}
	_, _ = fmt.Fprintln(inProcessLogs, "the last thing a controller said")
	rec := &recorder{TB: t}
	f.dumpInProcess(rec)
	NewWithT(t).Expect(rec.logged).To(ContainElement(ContainSubstring("the last thing a controller said")))
}

// recorder keeps what a test logs.
type recorder struct {
	testing.TB
	logged []string
}

func (r *recorder) Logf(format string, args ...any) {
	r.logged = append(r.logged, fmt.Sprintf(format, args...))
}
