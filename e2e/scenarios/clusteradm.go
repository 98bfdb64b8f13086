package scenarios

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// run runs clusteradm against a plane, as a person would, and returns its
// output; a failure fails the test.
func (e *fleet) run(plane string, args ...string) string {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, Tool(e.t, "clusteradm", "clusteradm"), args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+e.Kubeconfig(plane))
	start := time.Now()
	out, err := cmd.CombinedOutput()
	e.t.Logf("clusteradm %s (on %s, %s)", redact(args), plane, time.Since(start).Round(100*time.Millisecond))
	if err != nil {
		e.t.Fatalf("clusteradm %s on %s: %v\n%s", redact(args), plane, err, out)
	}
	return string(out)
}

// joinCommand is the join command `clusteradm init` prints.
var joinCommand = regexp.MustCompile(`join --hub-token (\S+) --hub-apiserver (\S+)`)

// init installs the OCM hub with `clusteradm init` and keeps the join token.
// The hub is one node: one replica of OCM's cluster-manager operator (its
// chart's default is three; OCM itself runs one of each hub controller on
// a single-node cluster).
func (e *fleet) init() {
	e.t.Helper()
	values := filepath.Join(e.t.TempDir(), "cluster-manager-values.yaml")
	if err := os.WriteFile(values, []byte("replicaCount: 1\n"), 0o600); err != nil {
		e.t.Fatal(err)
	}
	out := e.run("hub", "init", "--wait", "--bundle-version", e.OCMVersion(), "--cluster-manager-values-file", values)
	if m := joinCommand.FindStringSubmatch(out); m != nil {
		e.hubToken, e.hubURL = m[1], m[2]
	}
	if s := e.HubAPIServer(); s != "" {
		e.hubURL = s
	}
	if e.hubToken == "" {
		e.t.Fatalf("clusteradm init printed no join token:\n%s", out)
	}
}

// join runs `clusteradm join` for a cluster on a plane (its own in Default
// mode, the hosting one in Hosted mode) and accepts it on the hub.
func (e *fleet) join(plane, cluster string, extra ...string) {
	e.t.Helper()
	args := append([]string{"join", "--hub-token", e.hubToken, "--hub-apiserver", e.hubURL, "--cluster-name", cluster,
		"--ca-file", e.HubCAFile(), "--wait", "--bundle-version", e.OCMVersion()}, extra...)
	e.run(plane, args...)
	e.run("hub", "accept", "--clusters", cluster, "--wait")
	e.expectAvailable(cluster)
}

func (e *fleet) expectAvailable(cluster string) {
	e.t.Helper()
	hub := e.Client("hub")
	NewWithT(e.t).Eventually(func(g Gomega) {
		mc := &clusterv1.ManagedCluster{}
		g.Expect(hub.Get(context.Background(), client.ObjectKey{Name: cluster}, mc)).To(Succeed())
		for _, c := range []string{clusterv1.ManagedClusterConditionHubAccepted, clusterv1.ManagedClusterConditionJoined, clusterv1.ManagedClusterConditionAvailable} {
			g.Expect(meta.IsStatusConditionTrue(mc.Status.Conditions, c)).To(BeTrue(), "%s: %v", c, mc.Status.Conditions)
		}
	}).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
}

// step runs one scenario as a subtest and logs how long it took.
func step(t *testing.T, name string, fn func(t *testing.T)) {
	start := time.Now()
	ok := t.Run(name, fn)
	t.Logf("scenario %s: %s in %s", name, map[bool]string{true: "passed", false: "FAILED"}[ok], time.Since(start).Round(100*time.Millisecond))
	if !ok {
		t.FailNow()
	}
}

// hostedKlusterlet returns the namespace of a cluster's Hosted-mode
// klusterlet on the hosting plane: clusteradm names it
// klusterlet-hosted-<random>.
func (e *fleet) hostedKlusterlet(cluster string) string {
	e.t.Helper()
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(schema.GroupVersionKind{Group: "operator.open-cluster-management.io", Version: "v1", Kind: "KlusterletList"})
	g := NewWithT(e.t)
	g.Expect(e.Client("hosting").List(context.Background(), list)).To(Succeed())
	for _, k := range list.Items {
		if name, _, _ := unstructured.NestedString(k.Object, "spec", "clusterName"); name == cluster {
			return k.GetName()
		}
	}
	e.t.Fatalf("no klusterlet for %s on hosting", cluster)
	return ""
}

// redact is a command line for the log, without the join token.
func redact(args []string) string {
	out := append([]string(nil), args...)
	for i := range out {
		if i > 0 && out[i-1] == "--hub-token" {
			out[i] = "<token>"
		}
	}
	return strings.Join(out, " ")
}
