// Package deploy_test checks the install bundles: the kustomize base and the
// Helm chart render with the pinned tools (hack/tools.sh kustomize helm),
// install the same objects, carry the CRD the operator's API generates, and
// the samples are HostfleetHubs a real API server accepts.
package deploy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/e2e/harness/hardening"
	"github.com/hostfleet/hostfleet/e2e/harness/planes"
	"github.com/hostfleet/hostfleet/manifests"
)

func TestMain(m *testing.M) { planes.Main(m) }

// tool is a pinned tool's binary, built by hack/tools.sh.
func tool(t *testing.T, name string) string {
	t.Helper()
	out, err := exec.Command("../hack/tools.sh", "--print-bin", name).Output()
	if err != nil {
		t.Fatalf("hack/tools.sh --print-bin %s: %v", name, err)
	}
	bin := strings.TrimSpace(string(out))
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%s is not built (run `hack/tools.sh %s` or `make tools`): %v", name, name, err)
	}
	return bin
}

// render runs a tool and parses what it prints, by "Kind/namespace/name".
func render(t *testing.T, bin string, args ...string) map[string]*unstructured.Unstructured {
	t.Helper()
	var stderr bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(bin), strings.Join(args, " "), err, stderr.String())
	}
	docs, err := planes.Decode(out)
	if err != nil {
		t.Fatalf("parse the output of %s: %v", filepath.Base(bin), err)
	}
	objs := map[string]*unstructured.Unstructured{}
	for _, u := range docs {
		objs[u.GetKind()+"/"+u.GetNamespace()+"/"+u.GetName()] = u
	}
	return objs
}

func TestBundlesAgree(t *testing.T) {
	g := NewWithT(t)
	kustomize, helm := tool(t, "kustomize"), tool(t, "helm")
	base := render(t, kustomize, "build", "operator")
	chart := render(t, helm, "template", "hostfleet-operator", "helm/hostfleet-operator", "--namespace", "hostfleet-operator", "--include-crds", "--kube-version", "1.37.2")

	g.Expect(base).To(HaveKey("Namespace//hostfleet-operator"))
	delete(base, "Namespace//hostfleet-operator") // Helm makes it: --create-namespace
	keys := func(m map[string]*unstructured.Unstructured) []string {
		var out []string
		for k := range m {
			out = append(out, k)
		}
		return out
	}
	g.Expect(keys(chart)).To(ConsistOf(keys(base)), "the chart and the kustomize base install the same objects")
	for k, want := range base {
		g.Expect(chart[k].Object).To(Equal(want.Object), "%s: the chart's default values give what the base has", k)
	}

	t.Log("the operator runs hardened")
	for _, bundle := range []map[string]*unstructured.Unstructured{base, chart} {
		u := bundle["Deployment/hostfleet-operator/hostfleet-operator"]
		g.Expect(u).NotTo(BeNil())
		d := &appsv1.Deployment{}
		g.Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, d)).To(Succeed())
		g.Expect(hardening.Check(&d.Spec.Template.Spec)).To(BeEmpty())
	}

	t.Log("the CRD is the one the operator's API generates")
	crds, err := manifests.CRDs(manifests.Operator)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(crds).To(HaveLen(1))
	want, err := json.Marshal(crds[0].Spec)
	g.Expect(err).NotTo(HaveOccurred())
	got, err := json.Marshal(base["CustomResourceDefinition//hostfleethubs.operator.hostfleet.io"].Object["spec"])
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(MatchJSON(want))

	t.Log("the chart's values: image, replicas, namespace, ServiceMonitor")
	custom := render(t, helm, "template", "hf", "helm/hostfleet-operator", "--namespace", "ops",
		"--set", "image.repository=mirror.example/hf/hostfleet-operator", "--set", "image.tag=v0.1.0", "--set", "replicas=2",
		"--set", "serviceMonitor.enabled=true", "--kube-version", "1.37.2")
	d := custom["Deployment/ops/hostfleet-operator"]
	g.Expect(d).NotTo(BeNil())
	containers, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	g.Expect(containers[0]).To(HaveKeyWithValue("image", "mirror.example/hf/hostfleet-operator:v0.1.0"))
	replicas, _, _ := unstructured.NestedFieldNoCopy(d.Object, "spec", "replicas")
	g.Expect(replicas).To(BeNumerically("==", 2))
	g.Expect(custom).To(HaveKey("ServiceMonitor/ops/hostfleet-operator"))

	t.Log("the monitoring overlay: the base and the chart's ServiceMonitor")
	monitoring := render(t, kustomize, "build", "monitoring")
	sm := monitoring["ServiceMonitor/hostfleet-operator/hostfleet-operator"]
	g.Expect(sm).NotTo(BeNil())
	withMonitor := render(t, helm, "template", "hostfleet-operator", "helm/hostfleet-operator", "--namespace", "hostfleet-operator",
		"--set", "serviceMonitor.enabled=true", "--kube-version", "1.37.2")
	g.Expect(withMonitor["ServiceMonitor/hostfleet-operator/hostfleet-operator"].Object).To(Equal(sm.Object))
	hubSM := monitoring["ServiceMonitor/hostfleet-system/hostfleet-hub"]
	g.Expect(hubSM).NotTo(BeNil(), "the hub's metrics too")
	g.Expect(withMonitor["ServiceMonitor/hostfleet-system/hostfleet-hub"].Object).To(Equal(hubSM.Object))
	rule := monitoring["PrometheusRule/hostfleet-operator/hostfleet"]
	g.Expect(rule).NotTo(BeNil(), "the alerts")
	withRules := render(t, helm, "template", "hostfleet-operator", "helm/hostfleet-operator", "--namespace", "hostfleet-operator",
		"--set", "prometheusRule.enabled=true", "--kube-version", "1.37.2")
	g.Expect(withRules["PrometheusRule/hostfleet-operator/hostfleet"].Object).To(Equal(rule.Object))
	g.Expect(len(monitoring)).To(Equal(len(base)+4), "the base (with its namespace), the two ServiceMonitors and the PrometheusRule")

	t.Log("the agents' overlay: a PodMonitor presenting a token the agent's cluster allows to get /metrics")
	agent := render(t, kustomize, "build", "monitoring/agent")
	pm := agent["PodMonitor/hostfleet-monitoring/hostfleet-agent"]
	g.Expect(pm).NotTo(BeNil())
	endpoints, _, _ := unstructured.NestedSlice(pm.Object, "spec", "podMetricsEndpoints")
	g.Expect(endpoints[0]).To(And(HaveKeyWithValue("port", "metrics"), HaveKeyWithValue("scheme", "https")))
	g.Expect(agent).To(HaveKey("ClusterRoleBinding//hostfleet:agent-metrics-reader"))
	g.Expect(agent).To(HaveKey("Secret/hostfleet-monitoring/hostfleet-agent-metrics"))
	crb := custom["ClusterRoleBinding//hostfleet-operator"]
	subjects, _, _ := unstructured.NestedSlice(crb.Object, "subjects")
	g.Expect(subjects[0]).To(HaveKeyWithValue("namespace", "ops"), "the operator's ServiceAccount is where it is installed")
}

// TestSamplesAreAccepted: every sample is a HostfleetHub the API server
// (with the generated CRD and its validation) accepts.
func TestSamplesAreAccepted(t *testing.T) {
	g := NewWithT(t)
	f := planes.ForTestWith(t, planes.Options{CRDSets: []string{manifests.Operator}}, "hub")
	samples, err := filepath.Glob("samples/*.yaml")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(samples).To(HaveLen(2))
	for _, path := range samples {
		data, err := os.ReadFile(path)
		g.Expect(err).NotTo(HaveOccurred())
		docs, err := planes.Decode(data)
		g.Expect(err).NotTo(HaveOccurred(), path)
		g.Expect(docs).To(HaveLen(1), path)
		u := docs[0]
		g.Expect(u.GetKind()).To(Equal("HostfleetHub"), path)
		g.Expect(f.Plane("hub").Client.Create(context.Background(), u, client.DryRunAll)).To(Succeed(), path)
	}
}
