//go:build linux

package local_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/e2e/emulators/ipmisim"
	"github.com/hostfleet/hostfleet/e2e/harness/nodes"
	"github.com/hostfleet/hostfleet/e2e/harness/planes"
	"github.com/hostfleet/hostfleet/e2e/harness/registry"
	"github.com/hostfleet/hostfleet/e2e/scenarios"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/manifests"
)

// env is the fleet the scenarios share: four planes, each with
// kube-controller-manager, kube-scheduler and one real node.
type env struct {
	fleet      *planes.Fleet
	nodes      map[string]*nodes.Node
	watch      *podWatch
	registry   *registry.Registry
	images     map[string]string // hostfleet-operator, -hub and -agent: their references
	ocmVersion string
	ipmi       *ipmisim.BMC // an IPMI BMC every pod reaches at its address
	hubCA      string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("the local end-to-end tests run real nodes (network and mount namespaces, cgroups): run them as root")
	}
	host, err := nodes.PrepareHost()
	if err != nil {
		t.Fatal(err)
	}
	e := &env{nodes: map[string]*nodes.Node{}}
	if e.registry, err = registry.StartOn(nodes.HostAddress); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	e.pushImages(t)
	t.Logf("registry %s serves %v, OCM %s's images and the pause image (%s)", e.registry.Host, e.images, e.ocmVersion, time.Since(start).Round(time.Second))

	// OCM's own CRDs come from `clusteradm init` and `join`, as for a user.
	e.fleet = planes.ForTestWith(t, planes.Options{ForNodes: true, CRDSets: []string{manifests.Hostfleet, manifests.Metal3}},
		scenarios.Clusters...)
	// A BMC on the host address, which every node's pods reach: the agent
	// drives it from its image.
	sim, err := ipmisim.StartAt(filepath.Join(e.fleet.Dir, "ipmi_sim"), nodes.HostAddress, scenarios.BMCUsername, scenarios.BMCPassword)
	if err != nil {
		t.Fatal(err)
	}
	e.ipmi = sim
	t.Cleanup(func() { e.stop(t, host, sim) })
	e.startNodes(t)
	e.watchPods(t)
	e.hubCA = filepath.Join(e.fleet.Dir, "hub-ca.crt")
	if err := os.WriteFile(e.hubCA, e.fleet.Plane("hub").Config.CAData, 0o644); err != nil {
		t.Fatal(err)
	}
	return e
}

// pushImages serves Hostfleet's images (as `make images` built them), OCM's
// (at the references clusteradm names for the bundle the tool cache
// built: each binary where upstream's image keeps it, user 10001 as
// upstream's, no entrypoint) and the pause image.
func (e *env) pushImages(t *testing.T) {
	e.images = e.LoadImages(t, filepath.Join(scenarios.Root(), "bin", "images"))
	e.ocmVersion = scenarios.OCMToolVersion(t)
	for image, binary := range map[string]string{
		"registration-operator": "registration-operator", "registration": "registration", "work": "work",
		"placement": "placement", "addon-manager": "addon",
	} {
		img, err := registry.Binary(scenarios.Tool(t, "ocm", binary), "/"+binary, "10001")
		if err != nil {
			t.Fatal(err)
		}
		if err := e.registry.Push("quay.io/open-cluster-management/"+image+":"+e.ocmVersion, img); err != nil {
			t.Fatal(err)
		}
	}
	if err := nodes.PushPause(e.registry, t.TempDir()); err != nil {
		t.Fatal(err)
	}
}

// startNodes starts, on every plane, kube-controller-manager and a node
// (kube-scheduler with it), the nodes at once. Hosting's node is the
// workload cluster's: registered with the providerID that names claim
// db-1 and the labels-pending gate.
func (e *env) startNodes(t *testing.T) {
	mirrors, err := e.registry.Upstreams()
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make([]error, len(scenarios.Clusters))
	for i, name := range scenarios.Clusters {
		e.fleet.StartControllerManagerForTest(t, name)
		o := planes.NodeOptions{Index: i + 1, Registry: e.registry.Host, Mirrors: mirrors, PauseImage: nodes.PauseImage}
		if name == scenarios.WorkloadCluster {
			o.ProviderID, o.Labels = scenarios.WorkloadProviderID, map[string]string{hostfleetv1alpha1.LabelLabelsPending: "true"}
		}
		wg.Go(func() {
			start := time.Now()
			n, err := e.fleet.StartNode(context.Background(), name, o)
			if err != nil {
				errs[i] = err
				return
			}
			mu.Lock()
			e.nodes[name] = n
			mu.Unlock()
			kubelet, containerd := n.Versions()
			t.Logf("node %s Ready in %s: kubelet %s, %s, pods %s", name, time.Since(start).Round(100*time.Millisecond), kubelet, containerd, n.PodCIDR())
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

// stop, once the scenarios are done: the pods each node ran, and that no
// container restarted or was killed for memory; on failure, the tail of
// every log; then the nodes stop with the planes, and nothing of them may
// remain on the host.
func (e *env) stop(t *testing.T, host *nodes.Host, sim *ipmisim.BMC) {
	for _, name := range scenarios.Clusters {
		if e.nodes[name] == nil {
			continue
		}
		ran, restarted := e.watch.seen(name)
		t.Logf("node %s ran %d pods: %s", name, len(ran), strings.Join(ran, ", "))
		if len(restarted) > 0 {
			t.Errorf("node %s: containers restarted or killed: %s", name, strings.Join(restarted, "; "))
		}
		if t.Failed() {
			for _, l := range e.nodes[name].Logs() {
				tail(t, name, l)
			}
		}
	}
	if err := e.fleet.Stop(); err != nil {
		t.Errorf("stop the planes and nodes: %v", err)
	}
	sim.Close()
	e.registry.Close()
	var left []string
	for name, n := range e.nodes {
		for _, l := range n.Leftovers() {
			left = append(left, name+": "+l)
		}
	}
	if err := host.Restore(); err != nil {
		t.Errorf("restore the host: %v", err)
	}
	left = append(left, host.Leftovers()...)
	switch {
	case len(left) > 0:
		t.Errorf("the nodes left behind: %s", strings.Join(left, "; "))
	case host.Shared():
		t.Logf("the nodes left nothing behind: no process, mount, network namespace or cgroup (another test process still runs nodes: the last one checks the host's iptables rules and kernel settings)")
	default:
		t.Logf("the nodes left nothing behind: no process, mount, network namespace, cgroup, iptables rule or kernel setting")
	}
}

// podWatch records, from each plane's API server, every pod its node ran
// and every container that restarted or was last killed for memory.
type podWatch struct {
	mu        sync.Mutex
	ran       map[string]map[string]bool // node → namespace/name
	restarted map[string]map[string]string
}

// watchPods watches the pods of every plane until the test ends.
func (e *env) watchPods(t *testing.T) {
	e.watch = &podWatch{ran: map[string]map[string]bool{}, restarted: map[string]map[string]string{}}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	for _, name := range scenarios.Clusters {
		c, err := cache.New(e.fleet.Plane(name).Config, cache.Options{Scheme: e.fleet.Scheme})
		if err != nil {
			t.Fatal(err)
		}
		inf, err := c.GetInformer(ctx, &corev1.Pod{})
		if err != nil {
			t.Fatal(err)
		}
		note := func(o any) {
			if p, ok := o.(*corev1.Pod); ok {
				e.watch.note(p)
			}
		}
		if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: note, UpdateFunc: func(_, n any) { note(n) }}); err != nil {
			t.Fatal(err)
		}
		go func() { _ = c.Start(ctx) }()
	}
}

func (w *podWatch) note(p *corev1.Pod) {
	if p.Spec.NodeName == "" {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	node, key := p.Spec.NodeName, p.Namespace+"/"+p.Name
	if w.ran[node] == nil {
		w.ran[node], w.restarted[node] = map[string]bool{}, map[string]string{}
	}
	w.ran[node][key] = true
	for _, s := range append(slices.Clone(p.Status.InitContainerStatuses), p.Status.ContainerStatuses...) {
		last := s.LastTerminationState.Terminated
		if s.RestartCount > 0 || last != nil && last.Reason == "OOMKilled" {
			why := ""
			if last != nil {
				why = fmt.Sprintf(", last %s (exit %d)", last.Reason, last.ExitCode)
			}
			w.restarted[node][key+" "+s.Name] = fmt.Sprintf("%s %s: %d restarts%s", key, s.Name, s.RestartCount, why)
		}
	}
}

// seen are the pods a node ran (namespace/name) and its containers that
// restarted or were killed for memory.
func (w *podWatch) seen(node string) (ran, restarted []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for k := range w.ran[node] {
		ran = append(ran, k)
	}
	for _, v := range w.restarted[node] {
		restarted = append(restarted, v)
	}
	sort.Strings(ran)
	sort.Strings(restarted)
	return ran, restarted
}

// tail logs the last lines of a log file.
func tail(t *testing.T, node, path string) {
	b, err := os.ReadFile(path)
	if err != nil {
		return
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > 40 {
		lines = lines[len(lines)-40:]
	}
	t.Logf("--- %s: last lines of %s ---\n%s", node, strings.TrimPrefix(path, e2eDir(path)), strings.Join(lines, "\n"))
}

// e2eDir is the node directory part of a log path, left out when logged.
func e2eDir(path string) string {
	if i := strings.Index(path, "/node-"); i >= 0 {
		return path[:i+1]
	}
	return ""
}

// TestOCM runs the shared scenarios (e2e/scenarios) on the local fleet.
func TestOCM(t *testing.T) {
	scenarios.Run(t, newEnv(t))
}

func (e *env) Client(cluster string) client.Client { return e.fleet.Plane(cluster).Client }
func (e *env) Kubeconfig(cluster string) string    { return e.fleet.Plane(cluster).Kubeconfig }

// InClusterKubeconfig: the planes serve on the host address, which the test
// and every node reach alike.
func (e *env) InClusterKubeconfig(c string) string { return e.fleet.Plane(c).Kubeconfig }
func (e *env) HubAPIServer() string                { return "" }
func (e *env) HubCAFile() string                   { return e.hubCA }
func (e *env) OCMVersion() string                  { return e.ocmVersion }
func (e *env) Image(name string) string            { return e.images[name] }

// LoadImages pushes hack/images' layouts in dir to the registry the nodes
// pull from.
func (e *env) LoadImages(t *testing.T, dir string) map[string]string {
	refs := map[string]string{}
	for _, name := range scenarios.Images {
		ref, err := e.registry.PushLayout(filepath.Join(dir, name))
		if err != nil {
			t.Fatalf("%v: the local end-to-end tests run the images hack/images builds (make images)", err)
		}
		refs[name] = ref
	}
	return refs
}
func (e *env) BMC() scenarios.BMC { return e.ipmi }
func (e *env) Dir() string        { return e.fleet.Dir }

// Running lists a Deployment's pods that have not ended.
func (e *env) Running(cluster, namespace, deployment string) []string {
	list := &corev1.PodList{}
	if err := e.Client(cluster).List(context.Background(), list, client.InNamespace(namespace)); err != nil {
		return []string{"cannot list pods: " + err.Error()}
	}
	var out []string
	for _, p := range list.Items {
		if strings.HasPrefix(p.Name, deployment+"-") && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			out = append(out, p.Name)
		}
	}
	return out
}

// PodAddress: the host routes every node's pod range to it.
func (e *env) PodAddress(cluster, namespace, name string, port int) (string, func(), error) {
	p := &corev1.Pod{}
	if err := e.Client(cluster).Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, p); err != nil {
		return "", nil, err
	}
	return net.JoinHostPort(p.Status.PodIP, strconv.Itoa(port)), func() {}, nil
}

func (e *env) StartBMO(t *testing.T, cluster string, namespaces ...string) {
	e.fleet.StartBMOForTest(t, cluster, namespaces...)
}

// WorkloadNode: hosting's kubelet registered its Node as the workload
// cluster's (startNodes).
func (e *env) WorkloadNode(t *testing.T, cluster string) string { return cluster }

// TestMain runs the suite, and every process it starts (the planes, the
// nodes and their pods), at nice -10: make test runs other packages beside
// it on the same cores, and a real kubelet kills a pod whose liveness probe
// a starved process cannot answer (OCM's webhooks and controllers).
func TestMain(m *testing.M) {
	if err := planes.ReniceProcess(os.Getpid(), -10); err != nil {
		fmt.Fprintln(os.Stderr, "e2e-local: run at nice -10:", err)
	}
	planes.Main(m)
}
