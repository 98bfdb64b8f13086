package scenarios

import (
	"context"
	"fmt"
	"strings"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// expectAgent waits for the agent's Deployment on a plane to be rolled out:
// its current template's pods available, none of an older one left.
func (e *fleet) expectAgent(plane, namespace string) {
	e.t.Helper()
	start := time.Now()
	c := e.Client(plane)
	NewWithT(e.t).Eventually(func(g Gomega) {
		d := &appsv1.Deployment{}
		g.Expect(c.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: hostfleetv1alpha1.AddonName}, d)).To(Succeed())
		g.Expect(d.Status.ObservedGeneration).To(BeNumerically(">=", d.Generation))
		g.Expect(d.Status.AvailableReplicas).To(BeNumerically(">=", 1))
		g.Expect(d.Status.UpdatedReplicas).To(Equal(d.Status.Replicas), "rolled out: %+v", d.Status)
		g.Expect(d.Status.AvailableReplicas).To(Equal(d.Status.Replicas), "rolled out: %+v", d.Status)
	}).WithTimeout(3*time.Minute).WithPolling(time.Second).Should(Succeed(), "the agent runs on %s in %s", plane, namespace)
	e.t.Logf("hostfleet-agent is available on %s in %s (%s)", plane, namespace, time.Since(start).Round(100*time.Millisecond))
}

// expectAddonAvailable waits for the ManagedClusterAddOn to be Available
// (health from the agent's lease).
func (e *fleet) expectAddonAvailable(cluster string) {
	e.t.Helper()
	start := time.Now()
	defer func() {
		e.t.Logf("ManagedClusterAddOn %s/%s is Available (%s)", cluster, hostfleetv1alpha1.AddonName, time.Since(start).Round(100*time.Millisecond))
	}()
	hub := e.Client("hub")
	NewWithT(e.t).Eventually(func(g Gomega) {
		mca := &addonv1beta1.ManagedClusterAddOn{}
		g.Expect(hub.Get(context.Background(), client.ObjectKey{Namespace: cluster, Name: hostfleetv1alpha1.AddonName}, mca)).To(Succeed())
		g.Expect(meta.IsStatusConditionTrue(mca.Status.Conditions, addonv1beta1.ManagedClusterAddOnConditionAvailable)).To(BeTrue(),
			"%v", mca.Status.Conditions)
	}).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
}

// expectClaimReady creates a tenant claim pinned to a cluster and waits for
// it to be Ready.
func (e *fleet) expectClaimReady(name, cluster string) {
	e.t.Helper()
	e.expectClaimOfSizeReady(name, cluster, "medium")
}

// expectClaimOfSizeReady is expectClaimReady for a host of another size
// (example.com/size).
func (e *fleet) expectClaimOfSizeReady(name, cluster, size string) {
	e.t.Helper()
	start := time.Now()
	hub := e.Client("hub")
	ctx := context.Background()
	claim := &metal3api.HostClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-acme", Name: name, Labels: map[string]string{hostfleetv1alpha1.LabelCluster: cluster}},
		Spec: metal3api.HostClaimSpec{
			PoweredOn:    true,
			Image:        &metal3api.Image{URL: "http://images.example.com/os.qcow2", Checksum: "http://images.example.com/os.qcow2.sha256sum"},
			HostSelector: metal3api.HostSelector{MatchLabels: map[string]string{"example.com/size": size}},
		},
	}
	g := NewWithT(e.t)
	g.Eventually(func() error { return hub.Create(ctx, claim) }).WithTimeout(time.Minute).Should(Succeed(),
		"the tenant's namespace and admission are ready")
	g.Eventually(func(g Gomega) {
		g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(claim), claim)).To(Succeed())
		g.Expect(meta.IsStatusConditionTrue(claim.Status.Conditions, hostfleetv1alpha1.ConditionReady)).To(BeTrue(), "%v", claim.Status.Conditions)
	}).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
	e.t.Logf("claim %s is Ready on %s (%s)", name, cluster, time.Since(start).Round(100*time.Millisecond))
}

// expectNoAgent waits until a plane holds nothing of the agent: no Deployment
// or Pod, no ServiceAccount, role, binding or Lease named for it, and no
// process.
func (e *fleet) expectNoAgent(plane string) {
	e.t.Helper()
	c := e.Client(plane)
	ctx := context.Background()
	NewWithT(e.t).Eventually(func(g Gomega) {
		g.Expect(hostfleetObjects(ctx, g, c, "")).To(BeEmpty())
	}).WithTimeout(2*time.Minute).WithPolling(time.Second).Should(Succeed(), "nothing of the agent is left on %s", plane)
	// Pods of a deleted Deployment stop on the kubelet's time.
	NewWithT(e.t).Eventually(func(g Gomega) {
		for _, ns := range []string{addonNamespace, hostedAgentNamespace} {
			g.Expect(e.Running(plane, ns, hostfleetv1alpha1.AddonName)).To(BeEmpty(), "no agent pod left on %s", plane)
		}
	}).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
}

// hostfleetObjects lists, in a namespace or everywhere, the objects whose
// name says they are the agent's or the add-on's.
func hostfleetObjects(ctx context.Context, g Gomega, c client.Client, namespace string) []string {
	var left []string
	lists := []client.ObjectList{&appsv1.DeploymentList{}, &corev1.PodList{}, &corev1.ServiceAccountList{}, &rbacv1.RoleList{},
		&rbacv1.RoleBindingList{}, &coordinationv1.LeaseList{}, &corev1.SecretList{}}
	if namespace == "" {
		lists = append(lists, &rbacv1.ClusterRoleList{}, &rbacv1.ClusterRoleBindingList{}, &corev1.NamespaceList{})
	}
	for _, list := range lists {
		g.Expect(c.List(ctx, list, client.InNamespace(namespace))).To(Succeed())
		g.Expect(meta.EachListItem(list, func(o runtime.Object) error {
			obj := o.(client.Object)
			if strings.Contains(obj.GetName(), "hostfleet") {
				left = append(left, fmt.Sprintf("%T %s/%s", o, obj.GetNamespace(), obj.GetName()))
			}
			return nil
		})).To(Succeed())
	}
	return left
}

// expectLeasesOwned waits for the agent's Leases to belong to its pod's
// ServiceAccount, so that they go with the add-on.
func (e *fleet) expectLeasesOwned(plane, namespace string, names ...string) {
	e.t.Helper()
	c := e.Client(plane)
	ctx := context.Background()
	NewWithT(e.t).Eventually(func(g Gomega) {
		sa := &corev1.ServiceAccount{}
		g.Expect(c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: hostfleetv1alpha1.AddonName}, sa)).To(Succeed())
		for _, name := range names {
			lease := &coordinationv1.Lease{}
			g.Expect(c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, lease)).To(Succeed())
			g.Expect(lease.OwnerReferences).To(ContainElement(HaveField("UID", sa.UID)), "Lease %s", name)
		}
	}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
}

// expectAddonCSRIssued checks that the agent's hub identity came from the real
// CSR flow: the cluster's registration agent asked, the hub's add-on manager
// approved, kube-controller-manager signed.
func (e *fleet) expectAddonCSRIssued(cluster string) {
	e.t.Helper()
	csrs := &certificatesv1.CertificateSigningRequestList{}
	g := NewWithT(e.t)
	g.Expect(e.Client("hub").List(context.Background(), csrs, client.MatchingLabels{
		"open-cluster-management.io/cluster-name": cluster, "open-cluster-management.io/addon-name": hostfleetv1alpha1.AddonName,
	})).To(Succeed())
	g.Expect(csrs.Items).To(ContainElement(And(
		HaveField("Spec.SignerName", certificatesv1.KubeAPIServerClientSignerName),
		HaveField("Status.Certificate", Not(BeEmpty())),
		HaveField("Status.Conditions", ContainElement(HaveField("Type", certificatesv1.CertificateApproved))),
	)), "an approved and signed CSR for the add-on from %s", cluster)
}
