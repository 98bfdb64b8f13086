package tenant_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/e2e/harness/planes"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// TestPolicyBeforeRBAC: from the instant a tenant admin's RoleBinding lets a
// request through, the tenant's admission policy refuses what it must. A
// tight loop of forged claims, started before the Tenant exists, must never
// see one admitted.
func TestPolicyBeforeRBAC(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f, hub := labHub(t)
	bobCfg, err := f.AddUser("hub", "bob")
	g.Expect(err).NotTo(HaveOccurred())
	bob, err := client.New(bobCfg, client.Options{Scheme: f.Scheme})
	g.Expect(err).NotTo(HaveOccurred())

	forged := func() error {
		return bob.Create(ctx, &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-late", Name: "forged",
			Labels: map[string]string{hostfleetv1alpha1.LabelBoundHost: "h0"}}}, client.DryRunAll)
	}
	var admitted, requests atomic.Int64
	refusedByPolicy := make(chan struct{})
	go func() {
		defer close(refusedByPolicy)
		for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); {
			err := forged()
			requests.Add(1)
			switch {
			case err == nil:
				admitted.Add(1)
			case strings.Contains(err.Error(), "hostfleet.io/bound-host is set by Hostfleet"):
				return
			}
		}
	}()
	time.Sleep(200 * time.Millisecond) // the loop is running before the Tenant exists
	g.Expect(hub.Create(ctx, &hostfleetv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "late"}, Spec: hostfleetv1alpha1.TenantSpec{
		ClusterSet: "lab", Admins: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "bob"}}}})).To(Succeed())
	g.Eventually(refusedByPolicy).WithTimeout(90 * time.Second).Should(BeClosed())
	t.Logf("%d forged requests before the policy refused one", requests.Load())
	g.Expect(admitted.Load()).To(BeZero(), "a forged claim was admitted between the grant and the policy")
	g.Expect(bob.Create(ctx, &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-late", Name: "fine"}}, client.DryRunAll)).
		To(Succeed(), "and the admin's rights are granted")
}

// labHub is a hub plane running the hub's policies and tenant controller,
// with a ManagedClusterSet lab.
func labHub(t *testing.T) (*planes.Fleet, client.Client) {
	t.Helper()
	f := planes.ForTest(t, "hub")
	hub := f.Plane("hub").Client
	f.HubForTest(t, "hub")
	NewWithT(t).Expect(hub.Create(context.Background(), &clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "lab"}})).To(Succeed())
	return f, hub
}
