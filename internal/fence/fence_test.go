package fence

import (
	"errors"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func cm(rv string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "x", ResourceVersion: rv}}
}

// TestFence: a writer's writes are echoes to it, whether their event
// arrives before or after the write's response, to every watch it has;
// another writer's are news; a cache at a version a writer wrote over is
// behind it until it shows the write.
func TestFence(t *testing.T) {
	g := NewWithT(t)
	e := &Fence{}

	// The response first, then the event.
	obj := cm("1")
	cacheAt := "1"
	cached := func(types.NamespacedName) (string, bool) { return cacheAt, true }
	g.Expect(e.Unseen("", "k", cached)).To(BeFalse())
	g.Expect(e.Write("a", "k", obj, func() error {
		g.Expect(e.Unseen("a", "k", cached)).To(BeTrue(), "in flight")
		obj.ResourceVersion = "2"
		return nil
	})).To(Succeed())
	g.Expect(e.Behind("a", "k", cm("1"))).To(BeTrue(), "a cache at 1 is behind a's write")
	g.Expect(e.Behind("b", "k", cm("1"))).To(BeFalse(), "b wrote nothing")
	g.Expect(e.Unseen("a", "k", cached)).To(BeTrue(), "made, the cache still at the version it was made on")
	g.Expect(e.Unseen("", "k", cached)).To(BeTrue(), "any writer")
	g.Expect(e.Unseen("b", "k", cached)).To(BeFalse(), "by writer")
	g.Expect(e.Unseen("a", "other", cached)).To(BeFalse(), "per kind")
	cacheAt = "2"
	g.Expect(e.Unseen("a", "k", cached)).To(BeFalse(), "a cache past that version shows it, event or relist")
	g.Expect(e.Behind("a", "k", cm("2"))).To(BeFalse())
	g.Expect(e.echo("a", "k", cm("1"), cm("3"))).To(BeFalse(), "1→3 is not the write")
	g.Expect(e.echo("a", "k", cm("1"), cm("2"))).To(BeTrue())
	g.Expect(e.echo("a", "k", cm("1"), cm("2"))).To(BeTrue(), "to each of a's watches")
	g.Expect(e.echo("b", "k", cm("1"), cm("2"))).To(BeFalse(), "news to b")

	// The event while the write is in flight.
	obj = cm("2")
	g.Expect(e.Write("a", "k", obj, func() error {
		g.Expect(e.echo("a", "k", cm("2"), cm("3"))).To(BeTrue(), "leaving the version the write carries")
		g.Expect(e.echo("a", "k", cm("5"), cm("6"))).To(BeFalse(), "from another version")
		obj.ResourceVersion = "3"
		return nil
	})).To(Succeed())

	// A failed write: its entry goes; the reconcile that made it retries.
	obj = cm("3")
	boom := errors.New("conflict")
	g.Expect(e.Write("a", "k", obj, func() error { return boom })).To(MatchError(boom))
	g.Expect(e.echo("a", "k", cm("3"), cm("4"))).To(BeFalse(), "someone else's write")

	// A write that changed nothing while an event left its version: the
	// event was someone else's and was taken for the write, so the caller
	// must decide again.
	obj = cm("4")
	err := e.Write("a", "k", obj, func() error {
		g.Expect(e.echo("a", "k", cm("4"), cm("5"))).To(BeTrue())
		return nil
	})
	g.Expect(apierrors.IsConflict(err)).To(BeTrue(), "%v", err)

	// Writes by two writers, one after the other.
	obj = cm("10")
	g.Expect(e.Write("a", "k", obj, func() error { obj.ResourceVersion = "11"; return nil })).To(Succeed())
	g.Expect(e.Write("b", "k", obj, func() error { obj.ResourceVersion = "12"; return nil })).To(Succeed())
	g.Expect(e.echo("a", "k", cm("10"), cm("11"))).To(BeTrue())
	g.Expect(e.echo("a", "k", cm("11"), cm("12"))).To(BeFalse(), "b's write wakes a")
	g.Expect(e.echo("b", "k", cm("11"), cm("12"))).To(BeTrue())

	// At most maxWrites per object; a deleted object is forgotten; nil
	// filters nothing.
	for i := range 2 * maxWrites {
		obj = cm(string(rune('a' + i)))
		g.Expect(e.Write("a", "k", obj, func() error { obj.ResourceVersion += "+"; return nil })).To(Succeed())
	}
	g.Expect(e.m[keyOf("k", obj)]).To(HaveLen(maxWrites))
	e.Forget("k", obj)
	g.Expect(e.m).To(BeEmpty())
	var none *Fence
	g.Expect(none.Write("a", "k", cm("1"), func() error { return nil })).To(Succeed())
	g.Expect(none.echo("a", "k", cm("1"), cm("2"))).To(BeFalse())
	g.Expect(none.Behind("a", "k", cm("1"))).To(BeFalse())
}
