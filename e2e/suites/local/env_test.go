//go:build linux

package local_test

import (
	"context"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/e2e/emulators/ipmisim"
	"github.com/hostfleet/hostfleet/e2e/harness/planes"
	"github.com/hostfleet/hostfleet/e2e/harness/pods"
	"github.com/hostfleet/hostfleet/e2e/harness/registry"
	"github.com/hostfleet/hostfleet/manifests"
)

// env is the fleet the scenarios share: four planes, each with
// kube-controller-manager and a pod runner.
type env struct {
	t          *testing.T
	fleet      *planes.Fleet
	runners    map[string]*pods.Runner
	clusteradm string
	registry   *registry.Registry
	images     map[string]string // hostfleet-operator, -hub and -agent: their references
	ocmVersion string
	ipmi       *ipmisim.BMC // an IPMI BMC every pod reaches at its address
	hubToken   string
	hubURL     string
	hubCA      string
}

// tool returns a binary from the tool cache (hack/tools.sh).
func tool(t *testing.T, name, binary string) string {
	t.Helper()
	out, err := exec.Command("../../../hack/tools.sh", "--print-bin", name).Output()
	if err != nil {
		t.Fatalf("hack/tools.sh --print-bin %s: %v", name, err)
	}
	path := filepath.Join(filepath.Dir(strings.TrimSpace(string(out))), binary)
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("%s is not built: run `hack/tools.sh %s` (make test and make e2e-local do): %v", path, name, err)
	}
	return path
}

func newEnv(t *testing.T) *env {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("the local end-to-end tests run OCM's pods in mount and network namespaces: run them as root")
	}
	e := &env{t: t, runners: map[string]*pods.Runner{}, clusteradm: tool(t, "clusteradm", "clusteradm"), images: map[string]string{}}
	e.registry = registry.Start()
	t.Cleanup(e.registry.Close)
	start := time.Now()
	// Hostfleet's images, as `make images` built them.
	for _, name := range []string{"hostfleet-operator", "hostfleet-hub", "hostfleet-agent"} {
		ref, err := e.registry.PushLayout(filepath.Join("..", "..", "..", "bin", "images", name))
		if err != nil {
			t.Fatalf("%v: the local end-to-end tests run the images `make images` builds", err)
		}
		e.images[name] = ref
	}
	// OCM's, at the references clusteradm names for the bundle the tool
	// cache built: each binary where upstream's image keeps it, user 10001
	// as upstream's, no entrypoint (the Deployments' args name the binary).
	reg := tool(t, "ocm", "registration")
	m := regexp.MustCompile(`/ocm-(v[0-9.]+)/`).FindStringSubmatch(reg)
	if m == nil {
		t.Fatalf("no OCM version in the tool cache path %s", reg)
	}
	e.ocmVersion = m[1]
	for image, binary := range map[string]string{
		"registration-operator": "registration-operator", "registration": "registration", "work": "work",
		"placement": "placement", "addon-manager": "addon",
	} {
		img, err := registry.Binary(tool(t, "ocm", binary), "/"+binary, "10001")
		if err != nil {
			t.Fatal(err)
		}
		if err := e.registry.Push("quay.io/open-cluster-management/"+image+":"+e.ocmVersion, img); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("registry %s serves %v and OCM %s's images (%s)", e.registry.Host, e.images, e.ocmVersion, time.Since(start).Round(time.Second))

	// OCM's own CRDs come from `clusteradm init` and `join`, as for a user.
	e.fleet = planes.ForTestWith(t, planes.Options{ForPods: true, CRDSets: []string{manifests.Hostfleet, manifests.Metal3}},
		"hub", "infra-1", "infra-2", "hosting")
	var ports []int
	for _, name := range e.fleet.Names() {
		u, err := url.Parse(e.fleet.Plane(name).Config.Host)
		if err != nil {
			t.Fatal(err)
		}
		port, _ := strconv.Atoi(u.Port())
		ports = append(ports, port)
	}
	// A BMC on the host's loopback, reachable from every pod (UDP forwarded
	// as the API servers' ports are): the agent drives it from its image.
	sim, err := ipmisim.Start(filepath.Join(e.fleet.Dir, "ipmi_sim"), "admin", "password")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sim.Close)
	e.ipmi = sim
	for _, name := range e.fleet.Names() {
		e.fleet.StartControllerManagerForTest(t, name)
		r, err := pods.Start(context.Background(), pods.Options{
			Name: name, Config: e.fleet.Plane(name).Config, Registry: e.registry.Host, ForwardPorts: ports, ForwardUDPPorts: []int{sim.Port},
			Dir: filepath.Join(e.fleet.Dir, "pods-"+name), ImageCache: filepath.Join(e.fleet.Dir, "images"),
		})
		if err != nil {
			t.Fatalf("pod runner on %s: %v", name, err)
		}
		e.runners[name] = r
	}
	t.Cleanup(func() {
		for name, r := range e.runners {
			r.Stop()
			if t.Failed() {
				for _, l := range r.Logs() {
					tail(t, name, l)
				}
			}
		}
	})
	e.hubCA = filepath.Join(e.fleet.Dir, "hub-ca.crt")
	if err := os.WriteFile(e.hubCA, e.fleet.Plane("hub").Config.CAData, 0o644); err != nil {
		t.Fatal(err)
	}
	return e
}

// tail logs the last lines of a pod's log.
func tail(t *testing.T, plane, path string) {
	b, err := os.ReadFile(path)
	if err != nil {
		return
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > 40 {
		lines = lines[len(lines)-40:]
	}
	t.Logf("--- %s: last lines of %s ---\n%s", plane, filepath.Base(path), strings.Join(lines, "\n"))
}

// run runs clusteradm against a plane, as a person would, and returns its
// output; a failure fails the test.
func (e *env) run(plane string, args ...string) string {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, e.clusteradm, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+e.fleet.Plane(plane).Kubeconfig)
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
func (e *env) init() {
	e.t.Helper()
	out := e.run("hub", "init", "--wait", "--bundle-version", e.ocmVersion)
	if m := joinCommand.FindStringSubmatch(out); m != nil {
		e.hubToken, e.hubURL = m[1], m[2]
	}
	if e.hubToken == "" {
		e.t.Fatalf("clusteradm init printed no join token:\n%s", out)
	}
}

// join runs `clusteradm join` for a cluster on a plane (its own in Default
// mode, the hosting one in Hosted mode) and accepts it on the hub.
func (e *env) join(plane, cluster string, extra ...string) {
	e.t.Helper()
	args := append([]string{"join", "--hub-token", e.hubToken, "--hub-apiserver", e.hubURL, "--cluster-name", cluster,
		"--ca-file", e.hubCA, "--wait", "--bundle-version", e.ocmVersion}, extra...)
	e.run(plane, args...)
	e.run("hub", "accept", "--clusters", cluster, "--wait")
	e.expectAvailable(cluster)
}

func (e *env) expectAvailable(cluster string) {
	e.t.Helper()
	hub := e.fleet.Plane("hub").Client
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
func (e *env) hostedKlusterlet(cluster string) string {
	e.t.Helper()
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(schema.GroupVersionKind{Group: "operator.open-cluster-management.io", Version: "v1", Kind: "KlusterletList"})
	g := NewWithT(e.t)
	g.Expect(e.fleet.Plane("hosting").Client.List(context.Background(), list)).To(Succeed())
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
