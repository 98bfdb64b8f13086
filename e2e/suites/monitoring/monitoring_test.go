package monitoring

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/hostfleet/hostfleet/e2e/harness/planes"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

func TestMain(m *testing.M) { planes.Main(m) }

// waitingThreshold replaces the alert's 30 minutes, so that a claim waits
// long enough in seconds.
const waitingThreshold = 5

// TestPrometheusScrapesTheFleet: Prometheus scrapes the hub and the agent
// with tokens their API servers allow to get /metrics; a claim no host
// matches fires HostfleetClaimsWaiting; labelling a host to match lets it
// bind, and the alert resolves.
func TestPrometheusScrapesTheFleet(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	prom := lookPath(t, "prometheus")
	f := planes.ForTest(t, "hub", "infra-1")
	hub, infra := f.Plane("hub").Client, f.Plane("infra-1").Client
	fleet(t, g, hub, infra)

	dir := t.TempDir()
	hubAddr, agentAddr, promAddr := planes.FreeAddr(t), planes.FreeAddr(t), planes.FreeAddr(t)
	_, err := f.Run("hostfleet-hub", "hub", build(t, dir, "hub/cmd/hostfleet-hub"), []string{
		"--kubeconfig=" + f.Plane("hub").Kubeconfig, "--metrics-bind-address=" + hubAddr,
		"--addon-manager=false", "--leader-election-namespace=default"})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = f.Run("hostfleet-agent", "infra-1", build(t, dir, "agent/cmd/hostfleet-agent"), []string{
		"--hub-kubeconfig=" + f.Plane("hub").Kubeconfig, "--managed-kubeconfig=" + f.Plane("infra-1").Kubeconfig,
		"--cluster-name=infra-1", "--metrics-bind-address=" + agentAddr, "--bmh-driver=none", "--health-lease=false",
		"--leader-elect=false", "--inventory-interval=1s", "--retry-after=2s"})
	g.Expect(err).NotTo(HaveOccurred())

	t.Log("Prometheus: the hub's and the agent's metrics, each with a token its API server allows to get /metrics")
	metricsReader := []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}
	for plane, file := range map[string]string{"hub": "hub.token", "infra-1": "agent.token"} {
		token, err := f.Plane(plane).TokenWith(ctx, "monitoring", "prometheus", metricsReader)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(os.WriteFile(filepath.Join(dir, file), []byte(token), 0o600)).To(Succeed())
	}
	writeRules(t, g, filepath.Join(dir, "rules.yaml"))
	g.Expect(os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(fmt.Sprintf(promConfig,
		dir, hubAddr, dir, agentAddr)), 0o644)).To(Succeed())
	_, err = f.Run("prometheus", "hub", prom, []string{"--config.file=" + filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path=" + filepath.Join(dir, "tsdb"), "--web.listen-address=" + promAddr})
	g.Expect(err).NotTo(HaveOccurred())
	api := promAPI(promAddr)

	g.Eventually(func(g Gomega) {
		var targets struct {
			ActiveTargets []struct {
				ScrapePool, Health, LastError string
			} `json:"activeTargets"`
		}
		api(g, "/api/v1/targets", nil, &targets)
		g.Expect(targets.ActiveTargets).To(HaveLen(2))
		for _, tg := range targets.ActiveTargets {
			g.Expect(tg.Health).To(Equal("up"), "%s: %s", tg.ScrapePool, tg.LastError)
		}
	}).WithTimeout(60*time.Second).WithPolling(time.Second).Should(Succeed(), "both scrapes succeed through authentication")
	for _, q := range []string{`hostfleet_hosts{cluster="infra-1",state="available"}`, `hostfleet_agent_hosts{cluster="infra-1"}`,
		`leader_election_master_status{name="hostfleet-hub"}`} {
		g.Eventually(func(g Gomega) { g.Expect(query(g, api, q)).NotTo(BeEmpty(), q) }).WithTimeout(30 * time.Second).Should(Succeed())
	}

	t.Log("a claim no host matches waits: HostfleetClaimsWaiting fires for its tenant")
	c := &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "big"},
		Spec: metal3api.HostClaimSpec{HostSelector: metal3api.HostSelector{MatchLabels: map[string]string{"example.com/size": "large"}}}}
	g.Expect(hub.Create(ctx, c)).To(Succeed())
	start := time.Now()
	g.Eventually(func(g Gomega) {
		g.Expect(alerts(g, api)).To(ContainElement(And(HaveField("Labels", HaveKeyWithValue("alertname", "HostfleetClaimsWaiting")),
			HaveField("Labels", HaveKeyWithValue("tenant", "a")), HaveField("State", "firing"))))
	}).WithTimeout(90 * time.Second).WithPolling(time.Second).Should(Succeed())
	t.Logf("fired %s after the claim was made", time.Since(start).Round(time.Second))

	t.Log("the host labelled to match: the claim binds, the alert resolves")
	h := &metal3api.BareMetalHost{}
	g.Eventually(func() error {
		if err := infra.Get(ctx, client.ObjectKey{Namespace: "hosts", Name: "h0"}, h); err != nil {
			return err
		}
		h.Labels = map[string]string{"example.com/size": "large"}
		return infra.Update(ctx, h)
	}).WithTimeout(10 * time.Second).Should(Succeed())
	start = time.Now()
	g.Eventually(func(g Gomega) {
		g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(c), c)).To(Succeed())
		g.Expect(c.Status.BareMetalHost).NotTo(BeNil())
		g.Expect(alerts(g, api)).NotTo(ContainElement(HaveField("Labels", HaveKeyWithValue("alertname", "HostfleetClaimsWaiting"))))
	}).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
	t.Logf("resolved %s after the host matched", time.Since(start).Round(time.Second))
}

const promConfig = `global: {scrape_interval: 2s, evaluation_interval: 2s}
rule_files: [rules.yaml]
scrape_configs:
- job_name: hostfleet-hub
  scheme: https
  tls_config: {insecure_skip_verify: true}
  authorization: {credentials_file: %s/hub.token}
  static_configs: [{targets: ["%s"]}]
- job_name: hostfleet-agent
  scheme: https
  tls_config: {insecure_skip_verify: true}
  authorization: {credentials_file: %s/agent.token}
  static_configs: [{targets: ["%s"]}]
`

// fleet is tenant a on cluster set lab (infra-1), syncing example.com
// labels, and on infra-1 a host h0, available, that no claim matches yet.
func fleet(t *testing.T, g *WithT, hub, infra client.Client) {
	ctx := context.Background()
	for _, o := range []client.Object{
		&clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "lab"}},
		&clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "infra-1", Labels: map[string]string{clusterv1beta2.ClusterSetLabel: "lab"}}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "infra-1"}},
		&hostfleetv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Spec: hostfleetv1alpha1.TenantSpec{ClusterSet: "lab", LabelSyncPrefixes: []string{"example.com"}}},
	} {
		g.Expect(hub.Create(ctx, o)).To(Succeed())
	}
	h := &metal3api.BareMetalHost{ObjectMeta: metav1.ObjectMeta{Namespace: "hosts", Name: "h0", Labels: map[string]string{"example.com/size": "small"}},
		Spec: metal3api.BareMetalHostSpec{BMC: metal3api.BMCDetails{Address: "ipmi://127.0.0.1:6230", CredentialsName: "bmc"}, BootMACAddress: "00:11:22:33:44:00"}}
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "hosts"}},
		&metal3api.HostDeployPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "hosts", Name: "tenants"},
			Spec: metal3api.HostDeployPolicySpec{HostClaimNamespaces: &metal3api.HostClaimNamespaces{NameMatches: "^tenant-"}}},
		h,
	} {
		g.Expect(infra.Create(ctx, o)).To(Succeed())
	}
	h.Status.Provisioning.State, h.Status.OperationalStatus = metal3api.StateAvailable, metal3api.OperationalStatusOK
	g.Expect(infra.Status().Update(ctx, h)).To(Succeed())
	t.Log("tenant a, cluster infra-1, host h0 (example.com/size=small)")
}

// writeRules writes the PrometheusRule's rules with HostfleetClaimsWaiting
// made fast: waitingThreshold seconds, no pending time.
func writeRules(t *testing.T, g *WithT, path string) {
	raw, err := os.ReadFile("../../../deploy/monitoring/prometheusrule.yaml")
	g.Expect(err).NotTo(HaveOccurred())
	var rule struct {
		Spec struct {
			Groups []struct {
				Name  string           `json:"name"`
				Rules []map[string]any `json:"rules"`
			} `json:"groups"`
		} `json:"spec"`
	}
	g.Expect(yaml.Unmarshal(raw, &rule)).To(Succeed())
	found := false
	for _, grp := range rule.Spec.Groups {
		for _, r := range grp.Rules {
			if r["alert"] == "HostfleetClaimsWaiting" {
				found = true
				r["expr"] = fmt.Sprintf("max by (tenant) (hostfleet_claims_oldest_waiting_seconds) > %d", waitingThreshold)
				r["for"] = "0s"
			}
		}
	}
	g.Expect(found).To(BeTrue())
	out, err := yaml.Marshal(rule.Spec)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(os.WriteFile(path, out, 0o644)).To(Succeed())
	t.Logf("rules: deploy/monitoring/prometheusrule.yaml, HostfleetClaimsWaiting after %ds", waitingThreshold)
}

// alert is one of Prometheus's active alerts.
type alert struct {
	Labels map[string]string
	State  string
}

func alerts(g Gomega, api func(Gomega, string, url.Values, any)) []alert {
	var out struct{ Alerts []alert }
	api(g, "/api/v1/alerts", nil, &out)
	return out.Alerts
}

func query(g Gomega, api func(Gomega, string, url.Values, any), q string) []any {
	var out struct{ Result []any }
	api(g, "/api/v1/query", url.Values{"query": {q}}, &out)
	return out.Result
}

// promAPI gets a Prometheus HTTP API path and decodes its data.
func promAPI(addr string) func(g Gomega, path string, q url.Values, data any) {
	return func(g Gomega, path string, q url.Values, data any) {
		u := "http://" + addr + path
		if q != nil {
			u += "?" + q.Encode()
		}
		resp, err := http.Get(u)
		g.Expect(err).NotTo(HaveOccurred())
		defer resp.Body.Close()
		var body struct {
			Status string
			Data   json.RawMessage
		}
		g.Expect(json.NewDecoder(resp.Body).Decode(&body)).To(Succeed())
		g.Expect(body.Status).To(Equal("success"))
		g.Expect(json.Unmarshal(body.Data, data)).To(Succeed())
	}
}

// build compiles a command of this module into dir.
func build(t *testing.T, dir, pkg string) string {
	t.Helper()
	bin := filepath.Join(dir, filepath.Base(pkg))
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/hostfleet/hostfleet/"+pkg).CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, out)
	}
	return bin
}

// lookPath is a tool hack/tools.sh installs.
func lookPath(t *testing.T, name string) string {
	t.Helper()
	bin, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s is not installed (run `hack/tools.sh prometheus` or `make tools`): %v", name, err)
	}
	return bin
}
