package main_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/e2e/harness/planes"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// tenantA registers tenant a on the hub as the hub's controllers would:
// namespace tenant-a, served by cluster infra-1, as infra-1's
// ClusterTenancy says (the agent watches claims only in the namespaces of
// the tenants its cluster serves).
func tenantA(t *testing.T, hub client.Client) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	g.Expect(hub.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant-a",
		Labels: map[string]string{hostfleetv1alpha1.LabelTenant: "a"}}})).To(Succeed())
	g.Expect(client.IgnoreAlreadyExists(hub.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "infra-1"}}))).To(Succeed())
	g.Expect(hub.Create(ctx, planes.Tenancy("infra-1", hostfleetv1alpha1.ServedTenant{Name: "a", Namespaces: []string{"tenant-a"}}))).To(Succeed())
}

// agentScene is what the agent binary's tests share: the binary, a hub and
// infra-1 with tenant a, and on infra-1 the hosts namespace, the Lease's
// namespace, a HostDeployPolicy admitting every namespace and n hosts
// (ipmi://127.0.0.1:<port+i>, named h<i>) made available directly: no
// baremetal-operator here.
func agentScene(t *testing.T, n, port int, name func(i int) string) (bin string, f *planes.Fleet, hub, infra client.Client) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	bin = buildAgent(t)
	f = planes.ForTest(t, "hub", "infra-1")
	hub, infra = f.Plane("hub").Client, f.Plane("infra-1").Client
	tenantA(t, hub)
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "hosts"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "hostfleet-agent"}}, // leader election Lease
		&metal3api.HostDeployPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "hosts", Name: "all"},
			Spec: metal3api.HostDeployPolicySpec{HostClaimNamespaces: &metal3api.HostClaimNamespaces{NameMatches: ".*"}}},
	} {
		g.Expect(infra.Create(ctx, o)).To(Succeed())
	}
	for i := 0; i < n; i++ {
		h := &metal3api.BareMetalHost{ObjectMeta: metav1.ObjectMeta{Namespace: "hosts", Name: name(i)},
			Spec: metal3api.BareMetalHostSpec{BMC: metal3api.BMCDetails{Address: fmt.Sprintf("ipmi://127.0.0.1:%d", port+i), CredentialsName: "bmc"}}}
		g.Expect(infra.Create(ctx, h)).To(Succeed())
		h.Status.Provisioning.State = metal3api.StateAvailable
		h.Status.OperationalStatus = metal3api.OperationalStatusOK
		g.Expect(infra.Status().Update(ctx, h)).To(Succeed())
	}
	return bin, f, hub, infra
}

// bindsH0 creates claim c for infra-1 in tenant-a and waits, within
// timeout, until the running agent proc binds it to host h0; it returns
// the claim as last read.
func bindsH0(t *testing.T, hub client.Client, proc *planes.Process, timeout time.Duration) *metal3api.HostClaim {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	c := &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "c",
		Labels: map[string]string{hostfleetv1alpha1.LabelCluster: "infra-1"}, Annotations: planes.PlacedBy()}}
	g.Expect(hub.Create(ctx, c)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(proc.Exited()).To(BeFalse(), "agent exited; see %s", proc.Log)
		g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(c), c)).To(Succeed())
		g.Expect(c.Status.BareMetalHost).To(Equal(&metal3api.ObjectReference{Namespace: "hosts", Name: "h0"}))
	}).WithTimeout(timeout).Should(Succeed())
	return c
}

// hostName is h<i>.
func hostName(i int) string { return fmt.Sprintf("h%d", i) }

func buildAgent(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "hostfleet-agent")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func TestFlagsAreValidated(t *testing.T) {
	g := NewWithT(t)
	out, err := exec.Command(buildAgent(t), "--cluster-name=Bad_Name").CombinedOutput()
	var exitErr *exec.ExitError
	g.Expect(err).To(BeAssignableToTypeOf(exitErr))
	g.Expect(err.(*exec.ExitError).ExitCode()).To(Equal(2))
	g.Expect(string(out)).To(ContainSubstring("--hub-kubeconfig is required"))
	g.Expect(string(out)).To(ContainSubstring(`--cluster-name "Bad_Name"`))
}

// TestBinaryBindsClaim runs the agent binary as a process with its two
// kubeconfigs and sees it bind a hub claim to a host on infra-1.
func TestBinaryBindsClaim(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	bin, f, hub, infra := agentScene(t, 1, 6230, hostName)

	metricsAddr, healthAddr := planes.FreeAddr(t), planes.FreeAddr(t)
	proc, err := f.Run("hostfleet-agent-infra-1", "infra-1", bin, []string{
		"--hub-kubeconfig=" + f.Plane("hub").Kubeconfig,
		"--managed-kubeconfig=" + f.Plane("infra-1").Kubeconfig,
		"--cluster-name=infra-1",
		"--metrics-bind-address=" + metricsAddr,
		"--health-probe-bind-address=" + healthAddr,
	})
	g.Expect(err).NotTo(HaveOccurred())

	c := bindsH0(t, hub, proc, 30*time.Second)

	// Health, readiness and metrics, including the agent's own.
	for _, path := range []string{"/healthz", "/readyz"} {
		resp, err := http.Get("http://" + healthAddr + path)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(resp.StatusCode).To(Equal(http.StatusOK), path)
		_ = resp.Body.Close()
	}
	t.Log("metrics: HTTPS, only to callers infra-1's API server authenticates and allows to get /metrics")
	reader, err := f.Plane("infra-1").TokenWith(ctx, "monitoring", "prometheus", []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}})
	g.Expect(err).NotTo(HaveOccurred())
	stranger, err := f.Plane("infra-1").Token(ctx, "monitoring", "stranger")
	g.Expect(err).NotTo(HaveOccurred())
	hubReader, err := f.Plane("hub").TokenWith(ctx, "monitoring", "prometheus", []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(scrape(metricsAddr, "", http.StatusUnauthorized)).WithTimeout(10*time.Second).Should(Succeed(), "no token")
	// A token another cluster signed fails infra-1's TokenReview: 401, as
	// infra-1's API server itself would answer.
	g.Eventually(scrape(metricsAddr, hubReader, http.StatusUnauthorized, "the API server does not accept this token")).WithTimeout(10*time.Second).Should(Succeed(),
		"a token of the hub, not of infra-1")
	g.Eventually(scrape(metricsAddr, stranger, http.StatusForbidden)).WithTimeout(10*time.Second).Should(Succeed(), "not allowed /metrics")
	g.Eventually(scrape(metricsAddr, reader, http.StatusOK,
		`hostfleet_agent_claims{cluster="infra-1",condition="Associated",status="True"} 1`,
		"hostfleet_agent_bind_latency_seconds_count 1",
		`controller_runtime_reconcile_total{controller="hostclaim"`)).WithTimeout(10 * time.Second).Should(Succeed())

	// The Lease on the managed cluster names this agent as leader.
	lease := &coordinationv1.Lease{}
	g.Expect(infra.Get(ctx, client.ObjectKey{Namespace: "hostfleet-agent", Name: "hostfleet-agent-infra-1"}, lease)).To(Succeed())
	g.Expect(lease.Spec.HolderIdentity).NotTo(BeNil())
	// And the add-on's health Lease, which OCM reads, is kept fresh.
	health := &coordinationv1.Lease{}
	g.Eventually(func(g Gomega) {
		g.Expect(infra.Get(ctx, client.ObjectKey{Namespace: "hostfleet-agent", Name: "hostfleet-agent"}, health)).To(Succeed())
		g.Expect(time.Since(health.Spec.RenewTime.Time)).To(BeNumerically("<", time.Minute))
	}).WithTimeout(30 * time.Second).Should(Succeed())

	// Claims are watched only in the namespaces of the tenants infra-1
	// serves: a tenant whose set gains infra-1 is served from then on, by the
	// same process (its controllers start again over the new namespaces).
	h1 := &metal3api.BareMetalHost{ObjectMeta: metav1.ObjectMeta{Namespace: "hosts", Name: "h1"},
		Spec: metal3api.BareMetalHostSpec{BMC: metal3api.BMCDetails{Address: "ipmi://127.0.0.1:6231", CredentialsName: "bmc"}}}
	g.Expect(infra.Create(ctx, h1)).To(Succeed())
	h1.Status.Provisioning.State = metal3api.StateAvailable
	h1.Status.OperationalStatus = metal3api.OperationalStatusOK
	g.Expect(infra.Status().Update(ctx, h1)).To(Succeed())
	g.Expect(hub.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant-b",
		Labels: map[string]string{hostfleetv1alpha1.LabelTenant: "b"}}})).To(Succeed())
	cb := &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-b", Name: "c",
		Labels: map[string]string{hostfleetv1alpha1.LabelCluster: "infra-1"}, Annotations: planes.PlacedBy()}}
	g.Expect(hub.Create(ctx, cb)).To(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(cb), cb)).To(Succeed())
		g.Expect(cb.Status.BareMetalHost).To(BeNil(), "infra-1 does not serve tenant b")
	}).WithTimeout(4 * time.Second).Should(Succeed())
	ct := &hostfleetv1alpha1.ClusterTenancy{}
	g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: "infra-1", Name: hostfleetv1alpha1.TenancyName}, ct)).To(Succeed())
	ct.Spec.Tenants = append(ct.Spec.Tenants, hostfleetv1alpha1.ServedTenant{Name: "b", Namespaces: []string{"tenant-b"}})
	g.Expect(hub.Update(ctx, ct)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(proc.Exited()).To(BeFalse(), "agent exited; see %s", proc.Log)
		g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(cb), cb)).To(Succeed())
		g.Expect(cb.Status.BareMetalHost).To(Equal(&metal3api.ObjectReference{Namespace: "hosts", Name: "h1"}))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(c), c)).To(Succeed())
	g.Expect(c.Status.BareMetalHost).To(Equal(&metal3api.ObjectReference{Namespace: "hosts", Name: "h0"}), "tenant a's claim keeps its host")

	// SIGTERM stops it cleanly, and promptly.
	stopStart := time.Now()
	g.Expect(proc.Stop()).To(Succeed())
	t.Logf("stopped in %s", time.Since(stopStart).Round(time.Millisecond))
	g.Expect(proc.Wait(ctx)).To(Succeed())
	log, _ := os.ReadFile(proc.Log)
	g.Expect(strings.Contains(string(log), "bound")).To(BeTrue(), "the agent logs the binding")
}

// scrape gets https://addr/metrics with a bearer token (none if empty) and
// expects the status code and, in the body, each of want.
func scrape(addr, token string, code int, want ...string) func(g Gomega) {
	return func(g Gomega) {
		req, err := http.NewRequest(http.MethodGet, "https://"+addr+"/metrics", nil)
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
		for _, w := range want {
			g.Expect(string(body)).To(ContainSubstring(w))
		}
	}
}

// TestStartsWhileTheHubIsDown: an agent started while its hub does not
// answer (restarted during a hub outage) waits for it instead of exiting,
// then serves.
func TestStartsWhileTheHubIsDown(t *testing.T) {
	g := NewWithT(t)
	bin, f, hub, _ := agentScene(t, 1, 6230, hostName)

	px, err := f.Proxy("hub")
	g.Expect(err).NotTo(HaveOccurred())
	px.Cut()
	proc, err := f.Run("hostfleet-agent-infra-1", "infra-1", bin, []string{
		"--hub-kubeconfig=" + px.Kubeconfig, "--managed-kubeconfig=" + f.Plane("infra-1").Kubeconfig,
		"--cluster-name=infra-1", "--leader-elect=false", "--health-lease=false",
		"--metrics-bind-address=0", "--health-probe-bind-address=0",
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Consistently(proc.Exited).WithTimeout(5*time.Second).Should(BeFalse(), "waits for the hub; see %s", proc.Log)
	px.Restore()

	bindsH0(t, hub, proc, 60*time.Second)
}
