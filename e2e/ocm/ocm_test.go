//go:build linux

package ocm_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/e2e/demo"
	"github.com/hostfleet/hostfleet/hub/addon"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// addonNamespace is where `clusteradm addon enable` installs add-ons unless
// told otherwise (--namespace).
const addonNamespace = "open-cluster-management-agent-addon"

// hostedAgentNamespace is where a Hosted agent keeps its identity and Lease on
// the managed cluster.
const hostedAgentNamespace = addon.DefaultNamespace

// TestOCM runs the scenarios in order on one fleet: each builds on the one
// before, as a platform engineer's day would.
func TestOCM(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	hub := e.fleet.Plane("hub").Client

	step(t, "Join", func(t *testing.T) {
		e.t = t
		e.init()
		e.join("infra-1")
	})

	step(t, "AddonDefault", func(t *testing.T) {
		e.t = t
		g := NewWithT(t)
		if _, err := e.fleet.Run("hostfleet-hub", "hub", filepath.Join(e.bin, "hostfleet-hub"), []string{
			"--kubeconfig=" + e.fleet.Plane("hub").Kubeconfig, "--leader-elect=false", "--bind-deadline=1m",
			"--agent-image=quay.io/hostfleet/hostfleet-agent:e2e"}); err != nil {
			t.Fatal(err)
		}
		e.fleet.StartBMOForTest(t, "infra-1")
		for _, obj := range demo.InfraHosts(0) {
			g.Expect(e.fleet.Plane("infra-1").Client.Create(ctx, obj)).To(Succeed())
		}
		e.run("hub", "create", "clusterset", "lab")
		e.run("hub", "clusterset", "set", "lab", "--clusters", "infra-1")
		g.Expect(hub.Create(ctx, &hostfleetv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "acme"}, Spec: hostfleetv1alpha1.TenantSpec{
			Namespaces: []string{"tenant-acme"}, ClusterSet: "lab", LabelSyncPrefixes: []string{"example.com"},
			Admins: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}},
		}})).To(Succeed())
		g.Eventually(func(g Gomega) {
			cma := &addonv1beta1.ClusterManagementAddOn{}
			g.Expect(hub.Get(ctx, client.ObjectKey{Name: addon.Name}, cma)).To(Succeed())
		}).WithTimeout(time.Minute).Should(Succeed(), "the hub registers its add-on")

		e.run("hub", "addon", "enable", "--names", addon.Name, "--clusters", "infra-1")

		// The work agent applied what the add-on manager rendered, and the pod
		// runner runs it on infra-1.
		e.expectAgent("infra-1", addonNamespace)
		e.expectAddonAvailable("infra-1")

		// A tenant's claim, pinned to infra-1, is bound there and Ready.
		e.expectClaimReady("web-1", "infra-1")
	})

	step(t, "AddonHosted", func(t *testing.T) {
		e.t = t
		g := NewWithT(t)
		// The hosting cluster is itself a managed cluster (its work agent
		// applies the hosted agent); infra-2's klusterlet runs on it.
		e.join("hosting")
		e.join("infra-2", "--mode", "hosted", "--managed-cluster-kubeconfig", e.fleet.Plane("infra-2").Kubeconfig)
		klusterletNS := e.hostedKlusterlet("infra-2")
		t.Logf("infra-2's klusterlet runs on hosting in namespace %s", klusterletNS)

		e.fleet.StartBMOForTest(t, "infra-2")
		for _, obj := range demo.InfraHosts(1) {
			g.Expect(e.fleet.Plane("infra-2").Client.Create(ctx, obj)).To(Succeed())
		}
		e.run("hub", "clusterset", "set", "lab", "--clusters", "infra-2")

		// The agent goes beside the klusterlet, whose namespace holds the
		// external managed kubeconfig it bootstraps from.
		e.run("hub", "addon", "enable", "--names", addon.Name, "--clusters", "infra-2", "--namespace", klusterletNS,
			"--annotate", "addon.open-cluster-management.io/hosting-cluster-name=hosting")
		e.expectAgent("hosting", klusterletNS)
		e.expectAddonAvailable("infra-2")
		e.expectClaimReady("db-1", "infra-2")

		// Nothing of the agent runs on infra-2: no Deployment, no Pod. There it
		// has only the ServiceAccount it minted its token for.
		infra2 := e.fleet.Plane("infra-2").Client
		deploys := &appsv1.DeploymentList{}
		g.Expect(infra2.List(ctx, deploys)).To(Succeed())
		for _, d := range deploys.Items {
			g.Expect(d.Name).NotTo(ContainSubstring("hostfleet"), "the agent must not run on infra-2 (%s/%s)", d.Namespace, d.Name)
		}
		podList := &corev1.PodList{}
		g.Expect(infra2.List(ctx, podList)).To(Succeed())
		g.Expect(podList.Items).To(BeEmpty(), "Hosted mode: nothing runs on the managed cluster, the klusterlet included")
		g.Expect(infra2.Get(ctx, client.ObjectKey{Namespace: hostedAgentNamespace, Name: addon.Name}, &corev1.ServiceAccount{})).To(Succeed(),
			"the agent's own least-privilege identity on infra-2")
	})
}

// expectAgent waits for the agent's Deployment on a plane to be available.
func (e *env) expectAgent(plane, namespace string) {
	e.t.Helper()
	c := e.fleet.Plane(plane).Client
	NewWithT(e.t).Eventually(func(g Gomega) {
		d := &appsv1.Deployment{}
		g.Expect(c.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: addon.Name}, d)).To(Succeed())
		g.Expect(d.Status.AvailableReplicas).To(BeNumerically(">=", 1))
	}).WithTimeout(3*time.Minute).WithPolling(time.Second).Should(Succeed(), "the agent runs on %s in %s", plane, namespace)
	e.t.Logf("hostfleet-agent is available on %s in %s", plane, namespace)
}

// expectAddonAvailable waits for the ManagedClusterAddOn to be Available
// (health from the agent's lease).
func (e *env) expectAddonAvailable(cluster string) {
	e.t.Helper()
	hub := e.fleet.Plane("hub").Client
	NewWithT(e.t).Eventually(func(g Gomega) {
		mca := &addonv1beta1.ManagedClusterAddOn{}
		g.Expect(hub.Get(context.Background(), client.ObjectKey{Namespace: cluster, Name: addon.Name}, mca)).To(Succeed())
		g.Expect(meta.IsStatusConditionTrue(mca.Status.Conditions, addonv1beta1.ManagedClusterAddOnConditionAvailable)).To(BeTrue(),
			"%v", mca.Status.Conditions)
	}).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
}

// expectClaimReady creates a tenant claim pinned to a cluster and waits for
// it to be Ready.
func (e *env) expectClaimReady(name, cluster string) {
	e.t.Helper()
	hub := e.fleet.Plane("hub").Client
	ctx := context.Background()
	claim := &metal3api.HostClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-acme", Name: name, Labels: map[string]string{hostfleetv1alpha1.LabelCluster: cluster}},
		Spec: metal3api.HostClaimSpec{
			PoweredOn:    true,
			Image:        &metal3api.Image{URL: "http://images.example.com/os.qcow2", Checksum: "http://images.example.com/os.qcow2.sha256sum"},
			HostSelector: metal3api.HostSelector{MatchLabels: map[string]string{"example.com/size": "medium"}},
		},
	}
	g := NewWithT(e.t)
	g.Eventually(func() error { return hub.Create(ctx, claim) }).WithTimeout(time.Minute).Should(Succeed(),
		"the tenant's namespace and admission are ready")
	g.Eventually(func(g Gomega) {
		g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(claim), claim)).To(Succeed())
		g.Expect(meta.IsStatusConditionTrue(claim.Status.Conditions, hostfleetv1alpha1.ConditionReady)).To(BeTrue(), "%v", claim.Status.Conditions)
	}).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
	e.t.Logf("claim %s is Ready on %s", name, cluster)
}
