package app_test

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/e2e/harness/planes"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/hub/app"
	"github.com/hostfleet/hostfleet/internal/permissions"
)

func TestMain(m *testing.M) { planes.Main(m) }

// freeAddr is a free 127.0.0.1 port.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ln.Close() }()
	return ln.Addr().String()
}

// token makes a ServiceAccount holding exactly rules (cluster-wide) and
// returns a token of it: no certificate, no admin.
func token(t *testing.T, f *planes.Fleet, plane, ns, name string, rules []rbacv1.PolicyRule) string {
	t.Helper()
	tok, err := f.Plane(plane).TokenWith(context.Background(), ns, name, rules)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// hubIdentity is the hub's ServiceAccount with exactly permissions.Hub()
// (the rules the operator installs), as a config with a token of it.
func hubIdentity(t *testing.T, f *planes.Fleet, plane string) *rest.Config {
	t.Helper()
	return f.Plane(plane).TokenConfig(token(t, f, plane, "hostfleet-system", "hostfleet-hub", permissions.Hub()))
}

// TestHubRunsWithItsOwnRBAC: the whole hub (tenant registration, admission
// policies, scheduling, HardwareData copies, the add-on manager) works with
// only permissions.Hub(), and that identity can do nothing else that
// matters.
func TestHubRunsWithItsOwnRBAC(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := planes.ForTest(t, "hub")
	hub := f.Plane("hub").Client
	cfg := hubIdentity(t, f, "hub")
	// The hub reaches its API server through a proxy the test can cut.
	px, err := f.Proxy("hub")
	g.Expect(err).NotTo(HaveOccurred())
	cfg.Host = px.Config.Host

	o := app.NewOptions()
	o.Addon.Image = "registry.example/hostfleet-agent:v1"
	o.LeaderElectionNamespace = "hostfleet-system"
	o.HealthAddr = freeAddr(t)
	o.MetricsAddr = freeAddr(t)
	o.PprofAddr = freeAddr(t)
	// The webhook's Secret, empty, as the operator makes it.
	o.Webhook.BindAddress = freeAddr(t)
	o.Webhook.URL = "https://" + o.Webhook.BindAddress
	g.Expect(hub.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "hostfleet-system", Name: hostfleetv1alpha1.HubWebhookSecret}})).To(Succeed())
	mgr, err := app.New(ctx, cfg, o)
	g.Expect(err).NotTo(HaveOccurred())
	mctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mctx) }()
	t.Cleanup(func() {
		cancel()
		g.Expect(<-done).To(Succeed())
	})

	readyz := func(code int, says string) func(g Gomega) {
		return func(g Gomega) {
			resp, err := http.Get("http://" + o.HealthAddr + "/readyz?verbose")
			g.Expect(err).NotTo(HaveOccurred())
			defer func() { _ = resp.Body.Close() }()
			body, err := io.ReadAll(resp.Body)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(resp.StatusCode).To(Equal(code), "%s", body)
			g.Expect(string(body)).To(ContainSubstring(says))
		}
	}
	g.Eventually(readyz(http.StatusOK, "[+]hub ok")).WithTimeout(30*time.Second).Should(Succeed(), "ready once its caches have synced and its API server answers")
	resp, err := http.Get("http://" + o.PprofAddr + "/debug/pprof/heap?debug=1")
	g.Expect(err).NotTo(HaveOccurred())
	_ = resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK), "--pprof-bind-address serves profiles")

	t.Log("as the hub: who am I, and what I may not do")
	asHub, err := client.New(cfg, client.Options{Scheme: f.Scheme})
	g.Expect(err).NotTo(HaveOccurred())
	self := &authenticationv1.SelfSubjectReview{}
	g.Expect(asHub.Create(ctx, self)).To(Succeed())
	g.Expect(self.Status.UserInfo.Username).To(Equal("system:serviceaccount:hostfleet-system:hostfleet-hub"))
	g.Expect(asHub.List(ctx, &corev1.PodList{})).To(Satisfy(apierrors.IsForbidden), "no pods")
	g.Expect(asHub.List(ctx, &corev1.NodeList{})).To(Satisfy(apierrors.IsForbidden), "no nodes")
	g.Expect(asHub.Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "everything"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}}}})).
		To(Satisfy(apierrors.IsForbidden), "no role with rights the hub does not hold")
	admin := rest.CopyConfig(cfg)
	admin.Impersonate = rest.ImpersonationConfig{UserName: "system:admin", Groups: []string{"system:masters"}}
	asAdmin, err := client.New(admin, client.Options{Scheme: f.Scheme})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(asAdmin.List(ctx, &corev1.PodList{})).To(Satisfy(apierrors.IsForbidden), "impersonates the admission probe only")

	t.Log("a cluster set, two clusters with inventories, a tenant")
	set := map[string]string{clusterv1beta2.ClusterSetLabel: "lab"}
	for _, o := range []client.Object{
		&clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "lab"}},
		&clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "c1", Labels: set}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "c1"}},
		&hostfleetv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Spec: hostfleetv1alpha1.TenantSpec{ClusterSet: "lab",
			Admins: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}}}},
	} {
		g.Expect(hub.Create(ctx, o)).To(Succeed())
	}
	inv := &hostfleetv1alpha1.HostInventory{ObjectMeta: metav1.ObjectMeta{Namespace: "c1", Name: "c1"}, Spec: hostfleetv1alpha1.HostInventorySpec{ClusterName: "c1"}}
	g.Expect(hub.Create(ctx, inv)).To(Succeed())
	inv.Status.Pools = []hostfleetv1alpha1.HostPool{{Namespaces: []string{"tenant-a"}, Total: 2, Available: 2}}
	g.Expect(hub.Status().Update(ctx, inv)).To(Succeed())

	t.Log("the tenant is registered: namespace, grants behind its admission policy, Ready")
	g.Eventually(func(g Gomega) {
		ta := &hostfleetv1alpha1.Tenant{}
		g.Expect(hub.Get(ctx, client.ObjectKey{Name: "a"}, ta)).To(Succeed())
		ready := meta.FindStatusCondition(ta.Status.Conditions, hostfleetv1alpha1.ConditionReady)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Status).To(Equal(metav1.ConditionTrue), "%s: %s", ready.Reason, ready.Message)
		g.Expect(ta.Status.Clusters).To(Equal([]string{"c1"}))
		g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: "tenant-a", Name: hostfleetv1alpha1.TenantAdminRole}, &rbacv1.RoleBinding{})).To(Succeed())
		g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: "tenant-a", Name: hostfleetv1alpha1.AgentTenantRole}, &rbacv1.RoleBinding{})).To(Succeed())
	}).WithTimeout(time.Minute).Should(Succeed())

	t.Log("a claim is placed")
	claim := &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "web"}}
	g.Eventually(func() error { return hub.Create(ctx, claim) }).WithTimeout(30 * time.Second).Should(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(claim), claim)).To(Succeed())
		g.Expect(claim.Labels).To(HaveKeyWithValue(hostfleetv1alpha1.LabelCluster, "c1"))
	}).WithTimeout(30 * time.Second).Should(Succeed())

	t.Log("its webhook refuses a requirement that does not compile")
	g.Eventually(func() error {
		return hub.Create(ctx, &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "bad",
			Annotations: map[string]string{hostfleetv1alpha1.AnnotationHardware: "host.cpu.cores > 2"}}}, client.DryRunAll)
	}).WithTimeout(30 * time.Second).Should(MatchError(ContainSubstring(`admission webhook "hardware.hostclaims.hostfleet.io" denied the request`)))

	t.Log("the add-on manager registers the add-on, renders the agent and binds its identity")
	cma := &addonv1beta1.ClusterManagementAddOn{}
	g.Eventually(func() error { return hub.Get(ctx, client.ObjectKey{Name: hostfleetv1alpha1.AddonName}, cma) }).WithTimeout(30 * time.Second).Should(Succeed())
	g.Expect(hub.Create(ctx, &addonv1beta1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Namespace: "c1", Name: hostfleetv1alpha1.AddonName,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: addonv1beta1.GroupVersion.String(), Kind: "ClusterManagementAddOn", Name: cma.Name, UID: cma.UID}}}})).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: "c1", Name: "addon-hostfleet-agent-deploy-0"}, &workv1.ManifestWork{})).To(Succeed())
		g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: "c1", Name: hostfleetv1alpha1.AgentClusterRole}, &rbacv1.RoleBinding{})).To(Succeed())
	}).WithTimeout(time.Minute).Should(Succeed())

	t.Log("metrics: HTTPS, only to callers the API server authenticates and allows to get /metrics")
	reader := token(t, f, "hub", "monitoring", "prometheus", permissions.MetricsReader())
	metrics := func(token string, code int) func(g Gomega) {
		return func(g Gomega) {
			req, err := http.NewRequest(http.MethodGet, "https://"+o.MetricsAddr+"/metrics", nil)
			g.Expect(err).NotTo(HaveOccurred())
			if token != "" {
				req.Header.Set("Authorization", "Bearer "+token)
			}
			// The metrics server's certificate is self-signed.
			c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec
			resp, err := c.Do(req)
			g.Expect(err).NotTo(HaveOccurred())
			defer func() { _ = resp.Body.Close() }()
			body, err := io.ReadAll(resp.Body)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(resp.StatusCode).To(Equal(code), "%s", body)
			if code == http.StatusOK {
				g.Expect(string(body)).To(ContainSubstring("controller_runtime_reconcile_total"))
			}
		}
	}
	g.Eventually(metrics("", http.StatusUnauthorized)).WithTimeout(30*time.Second).Should(Succeed(), "no token")
	g.Eventually(metrics("not-a-token", http.StatusUnauthorized)).WithTimeout(30*time.Second).Should(Succeed(), "a token the API server does not accept: 401, as it answers itself")
	g.Eventually(metrics(cfg.BearerToken, http.StatusForbidden)).WithTimeout(30*time.Second).Should(Succeed(), "a token not allowed /metrics")
	g.Eventually(metrics(reader, http.StatusOK)).WithTimeout(30*time.Second).Should(Succeed(), "a metrics reader")

	t.Log("not ready while its API server does not answer, ready again when it does")
	px.Cut()
	g.Eventually(readyz(http.StatusInternalServerError, "[-]hub failed")).WithTimeout(30*time.Second).Should(Succeed(), "its API server does not answer")
	g.Eventually(metrics("nor-this-one", http.StatusInternalServerError)).WithTimeout(60*time.Second).Should(Succeed(),
		"a token that cannot be checked, the API server down: 500, not a refusal")
	px.Restore()
	g.Eventually(readyz(http.StatusOK, "[+]hub ok")).WithTimeout(30 * time.Second).Should(Succeed())

	t.Log("the tenant is deleted: the hub removes what it made")
	g.Expect(hub.Delete(ctx, claim)).To(Succeed())
	g.Eventually(func() error {
		return hub.Delete(ctx, &hostfleetv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "a"}})
	}).WithTimeout(30*time.Second).Should(Succeed(), "once the hub has counted the claim gone")
	g.Eventually(func() error {
		return hub.Get(ctx, client.ObjectKey{Name: "a"}, &hostfleetv1alpha1.Tenant{})
	}).WithTimeout(time.Minute).Should(Satisfy(apierrors.IsNotFound))
}

// TestHubWaitsForItsAPIServer: a hub started while its API server does not
// answer waits for it instead of exiting.
func TestHubWaitsForItsAPIServer(t *testing.T) {
	g := NewWithT(t)
	f := planes.ForTest(t, "hub")
	px, err := f.Proxy("hub")
	g.Expect(err).NotTo(HaveOccurred())
	px.Cut()
	done := make(chan error, 1)
	go func() { done <- app.WaitForAPIServer(context.Background(), px.Config) }()
	g.Consistently(done).WithTimeout(3*time.Second).ShouldNot(Receive(), "waits while nothing answers")
	px.Restore()
	g.Eventually(done).WithTimeout(15 * time.Second).Should(Receive(BeNil()))
}
