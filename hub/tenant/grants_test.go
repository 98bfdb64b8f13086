package tenant_test

import (
	"context"
	"testing"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/e2e/harness/planes"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/internal/permissions"
)

// TestGrantsBindTheOperatorsRoles: a tenant's rights are RoleBindings to
// the ClusterRoles the operator installs, so the hub holds none of them; a
// Tenant says when one is missing; the Role an earlier hub made in its place
// is replaced.
func TestGrantsBindTheOperatorsRoles(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := planes.ForTest(t, "hub")
	hub := f.Plane("hub").Client

	t.Log("a namespace as an earlier hub left it: the admins' rights in a Role of the binding's name")
	meta := metav1.ObjectMeta{Namespace: "tenant-old", Name: hostfleetv1alpha1.TenantAdminRole}
	alice := []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}}
	for _, o := range []client.Object{
		&clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "lab"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant-old", Labels: map[string]string{hostfleetv1alpha1.LabelTenant: "old"}}},
		&rbacv1.Role{ObjectMeta: meta, Rules: permissions.TenantAdmin()},
		&rbacv1.RoleBinding{ObjectMeta: meta, Subjects: alice, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: meta.Name}},
	} {
		g.Expect(hub.Create(ctx, o)).To(Succeed())
	}
	t.Log("and a hub installed without the operator's tenant-admin ClusterRole")
	g.Expect(hub.Delete(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: hostfleetv1alpha1.TenantAdminClusterRole}})).To(Succeed())
	f.HubForTest(t, "hub")
	g.Expect(hub.Create(ctx, &hostfleetv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "old"},
		Spec: hostfleetv1alpha1.TenantSpec{ClusterSet: "lab", Admins: alice}})).To(Succeed())

	tenant := func(g Gomega) *hostfleetv1alpha1.Tenant {
		tn := &hostfleetv1alpha1.Tenant{}
		g.Expect(hub.Get(ctx, client.ObjectKey{Name: "old"}, tn)).To(Succeed())
		return tn
	}
	g.Eventually(func(g Gomega) {
		g.Expect(ready(tenant(g))).To(And(HaveField("Reason", hostfleetv1alpha1.ReasonGrantRolesMissing),
			HaveField("Message", ContainSubstring("ClusterRoles hostfleet:tenant-admin do not exist"))))
	}).WithTimeout(30*time.Second).Should(Succeed(), "the Tenant says what is missing")
	rb := &rbacv1.RoleBinding{}
	g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(&rbacv1.RoleBinding{ObjectMeta: meta}), rb)).To(Succeed())
	g.Expect(rb.RoleRef).To(Equal(rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: hostfleetv1alpha1.TenantAdminClusterRole}),
		"the earlier binding is replaced (a roleRef cannot change)")
	g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(&rbacv1.Role{ObjectMeta: meta}), &rbacv1.Role{})).To(Satisfy(apierrors.IsNotFound),
		"and the Role with the rights in it is gone")

	cfg, err := f.AddUser("hub", "alice")
	g.Expect(err).NotTo(HaveOccurred())
	asAlice, err := client.New(cfg, client.Options{Scheme: f.Scheme})
	g.Expect(err).NotTo(HaveOccurred())
	claim := &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-old", Name: "web"}}
	g.Expect(asAlice.Create(ctx, claim, client.DryRunAll)).To(Satisfy(apierrors.IsForbidden), "a binding to a missing role grants nothing")

	t.Log("the operator installs it: the Tenant is Ready and its admins hold their rights")
	for _, role := range permissions.GrantedClusterRoles() {
		if role.Name == hostfleetv1alpha1.TenantAdminClusterRole {
			g.Expect(hub.Create(ctx, &role)).To(Succeed())
		}
	}
	g.Eventually(func(g Gomega) {
		g.Expect(ready(tenant(g)).Reason).To(Equal(hostfleetv1alpha1.ReasonRegistered))
	}).WithTimeout(30*time.Second).Should(Succeed(), "the hub watches the ClusterRoles it binds")
	g.Eventually(func() error { return asAlice.Create(ctx, claim, client.DryRunAll) }).WithTimeout(10 * time.Second).Should(Succeed())
}
