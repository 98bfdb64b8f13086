package main_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/e2e/harness/planes"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// TestHostedMode runs the agent outside its managed cluster with only a
// bootstrap (cluster-admin) kubeconfig for it: the agent creates its own
// least-privilege identity and, with that alone, provisions a claim with an
// image and user data through the real baremetal-operator and releases it.
func TestHostedMode(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	bin := buildAgent(t)
	f := planes.ForTest(t, "hub", "infra-1")
	hub, infra := f.Plane("hub").Client, f.Plane("infra-1").Client
	f.StartBMOForTest(t, "infra-1")
	tenantA(t, hub)
	g.Expect(hub.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "klusterlet-infra-1"}})).To(Succeed())
	owner := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "klusterlet-infra-1", Name: "hostfleet-agent"}}
	g.Expect(hub.Create(ctx, owner)).To(Succeed())
	g.Expect(hub.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "ud"},
		StringData: map[string]string{"userData": "#cloud-config"}})).To(Succeed())
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "hosts"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "hosts", Name: "bmc"}, StringData: map[string]string{"username": "a", "password": "b"}},
		&metal3api.HostDeployPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "hosts", Name: "all"},
			Spec: metal3api.HostDeployPolicySpec{HostClaimNamespaces: &metal3api.HostClaimNamespaces{NameMatches: ".*"}}},
		&metal3api.BareMetalHost{ObjectMeta: metav1.ObjectMeta{Namespace: "hosts", Name: "h0"},
			Spec: metal3api.BareMetalHostSpec{BMC: metal3api.BMCDetails{Address: "ipmi://127.0.0.1:6230", CredentialsName: "bmc"},
				BootMACAddress: "00:11:22:33:44:00"}},
	} {
		g.Expect(infra.Create(ctx, o)).To(Succeed())
	}

	metricsAddr := planes.FreeAddr(t)
	proc, err := f.Run("agent-hosted", "hub", bin, []string{
		"--hub-kubeconfig=" + f.Plane("hub").Kubeconfig,
		"--bootstrap-managed-kubeconfig=" + f.Plane("infra-1").Kubeconfig,
		// The process runs with KUBECONFIG pointing at the hub: the hub plays
		// the hosting cluster, where the health Lease goes.
		"--hosting-namespace=klusterlet-infra-1",
		"--lease-owner=hostfleet-agent",
		"--token-dir=" + t.TempDir(),
		"--cluster-name=infra-1",
		"--metrics-bind-address=" + metricsAddr,
		"--retry-after=2s",
		// The BMC driver reads credentials only where it drives hosts.
		"--bmc-namespaces=hosts",
	})
	g.Expect(err).NotTo(HaveOccurred())

	c := &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "web",
		Labels: map[string]string{hostfleetv1alpha1.LabelCluster: "infra-1"}, Annotations: planes.PlacedBy()},
		Spec: metal3api.HostClaimSpec{PoweredOn: true, UserData: &corev1.SecretReference{Name: "ud"},
			Image: &metal3api.Image{URL: "http://127.0.0.1:8099/os.qcow2", Checksum: "http://127.0.0.1:8099/os.qcow2.sha256sum"}}}
	g.Expect(hub.Create(ctx, c)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(proc.Exited()).To(BeFalse(), "agent exited; see %s", proc.Log)
		g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(c), c)).To(Succeed())
		ready := meta.FindStatusCondition(c.Status.Conditions, hostfleetv1alpha1.ConditionReady)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Status).To(Equal(metav1.ConditionTrue), ready.Message)
		g.Expect(c.Status.HardwareData).NotTo(BeNil())
	}).WithTimeout(4 * time.Minute).WithPolling(time.Second).Should(Succeed())

	// The identity it made and works as.
	sa := &corev1.ServiceAccount{}
	g.Expect(infra.Get(ctx, client.ObjectKey{Namespace: "hostfleet-agent", Name: "hostfleet-agent"}, sa)).To(Succeed())
	h := &metal3api.BareMetalHost{}
	g.Expect(infra.Get(ctx, client.ObjectKey{Namespace: "hosts", Name: "h0"}, h)).To(Succeed())
	managers := map[string]bool{}
	for _, mf := range h.ManagedFields {
		managers[mf.Manager] = true
	}
	g.Expect(managers).To(HaveKey("hostfleet-agent"))

	// OCM reads a Hosted add-on's health Lease on the hosting cluster, in the
	// agent's namespace there; none is kept on the managed cluster.
	g.Eventually(func(g Gomega) {
		lease := &coordinationv1.Lease{}
		g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: "klusterlet-infra-1", Name: "hostfleet-agent"}, lease)).To(Succeed())
		g.Expect(lease.OwnerReferences).To(ConsistOf(HaveField("UID", owner.UID)), "the pod's ServiceAccount owns the Lease (--lease-owner)")
	}).WithTimeout(30 * time.Second).Should(Succeed())
	g.Expect(apierrors.IsNotFound(infra.Get(ctx, client.ObjectKey{Namespace: "hostfleet-agent", Name: "hostfleet-agent"}, &coordinationv1.Lease{}))).To(BeTrue())

	t.Log("metrics: for callers the hosting cluster (where the pod runs, and its Prometheus) authenticates and allows")
	readMetrics := []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}
	hostingReader, err := f.Plane("hub").TokenWith(ctx, "monitoring", "prometheus", readMetrics)
	g.Expect(err).NotTo(HaveOccurred())
	managedReader, err := f.Plane("infra-1").TokenWith(ctx, "monitoring", "prometheus", readMetrics)
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(scrape(metricsAddr, "", http.StatusUnauthorized)).WithTimeout(10*time.Second).Should(Succeed(), "no token")
	g.Eventually(scrape(metricsAddr, managedReader, http.StatusUnauthorized, "the API server does not accept this token")).WithTimeout(10*time.Second).Should(Succeed(),
		"a token of the managed cluster, which the hosting cluster did not sign: 401, as an API server answers")
	g.Eventually(scrape(metricsAddr, hostingReader, http.StatusOK, "hostfleet_agent_bind_latency_seconds_count 1")).WithTimeout(10 * time.Second).Should(Succeed())

	g.Expect(hub.Delete(ctx, c)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(apierrors.IsNotFound(hub.Get(ctx, client.ObjectKeyFromObject(c), &metal3api.HostClaim{}))).To(BeTrue())
		g.Expect(infra.Get(ctx, client.ObjectKey{Namespace: "hosts", Name: "h0"}, h)).To(Succeed())
		g.Expect(h.Spec.ConsumerRef).To(BeNil())
		g.Expect(h.Status.Provisioning.State).To(Equal(metal3api.StateAvailable))
		var secrets corev1.SecretList
		g.Expect(infra.List(ctx, &secrets, client.InNamespace("hosts"))).To(Succeed())
		g.Expect(secrets.Items).To(HaveLen(1), "only the BMC credentials remain")
	}).WithTimeout(4 * time.Minute).WithPolling(time.Second).Should(Succeed())
}
