package tenant_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/hub/tenant"
)

// TestClaimCountsPaced: claims created steadily rewrite the Tenant's counts
// at most once per tenant.ClaimCountDelay. A Tenant lists every cluster of
// its set, so each write is large; the controller must not react to its own
// status writes (each would count again, and write again,
// as long as claims keep coming).
func TestClaimCountsPaced(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f, hub := labHub(t)
	g.Expect(hub.Create(ctx, &hostfleetv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "p"},
		Spec: hostfleetv1alpha1.TenantSpec{ClusterSet: "lab"}})).To(Succeed())
	tn := &hostfleetv1alpha1.Tenant{}
	g.Eventually(func(g Gomega) {
		g.Expect(hub.Get(ctx, client.ObjectKey{Name: "p"}, tn)).To(Succeed())
		g.Expect(tn.Status.Namespaces).To(ConsistOf("tenant-p"))
	}).WithTimeout(30 * time.Second).Should(Succeed())

	w, err := client.NewWithWatch(f.Plane("hub").Config, client.Options{Scheme: f.Scheme})
	g.Expect(err).NotTo(HaveOccurred())
	events, err := w.Watch(ctx, &hostfleetv1alpha1.TenantList{}, client.MatchingFields{"metadata.name": "p"}, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: tn.ResourceVersion}})
	g.Expect(err).NotTo(HaveOccurred())
	defer events.Stop()
	writes := 0
	counted := func() int32 {
		for {
			select {
			case e := <-events.ResultChan():
				if e.Type == watch.Modified {
					writes++
					tn = e.Object.(*hostfleetv1alpha1.Tenant)
				}
			default:
				return tn.Status.Claims
			}
		}
	}

	// A claim every 200 ms for 7 s: longer than the delay, so that counts
	// change while a write is followed by whatever it triggers.
	const n = 35
	start := time.Now()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for i := 0; i < n; i++ {
		<-tick.C
		g.Expect(hub.Create(ctx, &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-p", Name: fmt.Sprintf("c%02d", i)}})).To(Succeed())
	}
	g.Eventually(counted).WithTimeout(30 * time.Second).WithPolling(100 * time.Millisecond).Should(BeEquivalentTo(n))
	elapsed := time.Since(start)
	limit := int(elapsed/tenant.ClaimCountDelay) + 1
	t.Logf("%d claims over %s: %d status writes (at most %d)", n, elapsed.Round(time.Millisecond), writes, limit)
	g.Expect(writes).To(BeNumerically("<=", limit))
}
