package tenant_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/e2e/harness/planes"
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

// TestUnchangedObjectsNotApplied: the claim counts' reconciles apply
// nothing that is already as the Tenant wants it (its RoleBindings name
// two subjects per cluster: at thousands of clusters each apply is
// costly), and still put back what someone else changed or deleted.
func TestUnchangedObjectsNotApplied(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f, hub := labHub(t)
	alice := rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}
	g.Expect(hub.Create(ctx, &hostfleetv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "a"},
		Spec: hostfleetv1alpha1.TenantSpec{ClusterSet: "lab", Admins: []rbacv1.Subject{alice}}})).To(Succeed())
	tn := &hostfleetv1alpha1.Tenant{}
	g.Eventually(func(g Gomega) {
		g.Expect(hub.Get(ctx, client.ObjectKey{Name: "a"}, tn)).To(Succeed())
		g.Expect(ready(tn).Reason).To(Equal(hostfleetv1alpha1.ReasonRegistered))
	}).WithTimeout(30 * time.Second).Should(Succeed())

	before := applies(ctx, g, f.Plane("hub").Config)
	claims := 0
	claim := func() {
		claims++
		g.Expect(hub.Create(ctx, &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: fmt.Sprintf("c%02d", claims)}})).To(Succeed())
		g.Eventually(func(g Gomega) {
			g.Expect(hub.Get(ctx, client.ObjectKey{Name: "a"}, tn)).To(Succeed())
			g.Expect(tn.Status.Claims).To(BeEquivalentTo(claims))
		}).WithTimeout(30*time.Second).Should(Succeed(), "the Tenant counted the claim")
	}
	claim()
	claim()
	g.Expect(applies(ctx, g, f.Plane("hub").Config)-before).To(BeZero(), "two reconciles applied objects that had not changed")

	t.Log("an admin binding edited by hand is put back at the next reconcile")
	admins := &rbacv1.RoleBinding{}
	key := client.ObjectKey{Namespace: "tenant-a", Name: hostfleetv1alpha1.TenantAdminRole}
	g.Expect(hub.Get(ctx, key, admins)).To(Succeed())
	admins.Subjects = []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "mallory"}}
	g.Expect(hub.Update(ctx, admins)).To(Succeed())
	putBack := func() {
		claim()
		g.Eventually(func(g Gomega) {
			g.Expect(hub.Get(ctx, key, admins)).To(Succeed())
			g.Expect(admins.Subjects).To(ConsistOf(alice))
		}).WithTimeout(30 * time.Second).Should(Succeed())
	}
	putBack()

	t.Log("and one deleted is made again")
	g.Expect(hub.Delete(ctx, admins)).To(Succeed())
	putBack()
}

// applies is how many server-side applies of RoleBindings the API server
// has served.
func applies(ctx context.Context, g Gomega, cfg *rest.Config) float64 {
	n, err := planes.Requests(ctx, cfg, "APPLY", "rolebindings")
	g.Expect(err).NotTo(HaveOccurred())
	return n
}
