package claim

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

// TestEchoes: the events of the agent's own writes are dropped, whether they
// arrive before or after the write's response; nobody else's is.
func TestEchoes(t *testing.T) {
	g := NewWithT(t)
	e := &echoes{}

	// The response first, then the event.
	obj := cm("1")
	cacheAt := "1"
	cached := func(types.NamespacedName) (string, bool) { return cacheAt, true }
	g.Expect(e.unseen("k", cached)).To(BeFalse())
	g.Expect(e.write("k", obj, func() error {
		g.Expect(e.unseen("k", cached)).To(BeTrue(), "in flight")
		obj.ResourceVersion = "2"
		return nil
	})).To(Succeed())
	g.Expect(e.behind("k", cm("1"))).To(BeTrue(), "a cache at 1 is behind the write")
	g.Expect(e.unseen("k", cached)).To(BeTrue(), "made, the cache still at the version it was made on")
	g.Expect(e.unseen("other", cached)).To(BeFalse(), "per kind")
	cacheAt = "2"
	g.Expect(e.unseen("k", cached)).To(BeFalse(), "a cache past that version shows it, event or relist")
	cacheAt = "1"
	g.Expect(e.echo("k", cm("1"), cm("3"))).To(BeFalse(), "1→3 is not the write")
	g.Expect(e.echo("k", cm("1"), cm("2"))).To(BeTrue())
	g.Expect(e.behind("k", cm("1"))).To(BeFalse(), "forgotten once its event came")
	g.Expect(e.unseen("k", cached)).To(BeFalse(), "seen")
	g.Expect(e.echo("k", cm("1"), cm("2"))).To(BeFalse(), "an event is an echo once")

	// The event while the write is in flight.
	obj = cm("2")
	g.Expect(e.write("k", obj, func() error {
		g.Expect(e.echo("k", cm("2"), cm("3"))).To(BeTrue(), "leaving the version the write carries")
		g.Expect(e.echo("k", cm("5"), cm("6"))).To(BeFalse(), "from another version")
		obj.ResourceVersion = "3"
		return nil
	})).To(Succeed())
	g.Expect(e.m).To(BeEmpty(), "nothing left to match")

	// A failed write: its entry goes; the reconcile that made it retries.
	obj = cm("3")
	boom := errors.New("conflict")
	g.Expect(e.write("k", obj, func() error { return boom })).To(MatchError(boom))
	g.Expect(e.echo("k", cm("3"), cm("4"))).To(BeFalse(), "someone else's write")

	// A write that changed nothing while an event left its version: the
	// event was someone else's and was dropped, so the caller must decide
	// again.
	obj = cm("4")
	err := e.write("k", obj, func() error {
		g.Expect(e.echo("k", cm("4"), cm("5"))).To(BeTrue())
		return nil
	})
	g.Expect(apierrors.IsConflict(err)).To(BeTrue(), "%v", err)

	// Several writes of one object, events in order.
	obj = cm("10")
	g.Expect(e.write("k", obj, func() error { obj.ResourceVersion = "11"; return nil })).To(Succeed())
	g.Expect(e.write("k", obj, func() error { obj.ResourceVersion = "12"; return nil })).To(Succeed())
	g.Expect(e.echo("k", cm("10"), cm("11"))).To(BeTrue())
	g.Expect(e.echo("k", cm("11"), cm("12"))).To(BeTrue())
	g.Expect(e.m).To(BeEmpty())

	// Kinds and objects are apart; a deleted object is forgotten; nil
	// filters nothing.
	obj = cm("20")
	g.Expect(e.write("k", obj, func() error { obj.ResourceVersion = "21"; return nil })).To(Succeed())
	g.Expect(e.echo("other", cm("20"), cm("21"))).To(BeFalse())
	e.forget("k", cm("21"))
	g.Expect(e.echo("k", cm("20"), cm("21"))).To(BeFalse())
	var none *echoes
	g.Expect(none.write("k", cm("1"), func() error { return nil })).To(Succeed())
	g.Expect(none.echo("k", cm("1"), cm("2"))).To(BeFalse())
	g.Expect(none.behind("k", cm("1"))).To(BeFalse())
}
