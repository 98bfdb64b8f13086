package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/e2e/emulators/redfish"
	"github.com/hostfleet/hostfleet/e2e/harness/planes"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// tenantNS is the one tenant's namespace.
const tenantNS = "tenant-acme"

// setUp makes the hub's cluster set and tenant, and on each infrastructure
// plane its share of the hosts, each with its own emulated BMC.
func setUp(ctx context.Context, f *planes.Fleet, infras []string, bmcs []*redfish.BMC) error {
	hub := f.Plane("hub").Client
	objs := []client.Object{&clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "chaos"}}}
	for _, name := range infras {
		objs = append(objs,
			&clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"cluster.open-cluster-management.io/clusterset": "chaos"}},
				Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: true}},
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	}
	// No BMC account but the agent's: the release gate removes the one
	// each tenant adds (churn.tenantLeaves).
	objs = append(objs, &hostfleetv1alpha1.FirmwareBaseline{ObjectMeta: metav1.ObjectMeta{Name: "chaos"},
		Spec: hostfleetv1alpha1.FirmwareBaselineSpec{BMCAccounts: &hostfleetv1alpha1.BMCAccountPolicy{}}})
	objs = append(objs, &hostfleetv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "acme"},
		Spec: hostfleetv1alpha1.TenantSpec{Namespaces: []string{tenantNS}, ClusterSet: "chaos", LabelSyncPrefixes: []string{"example.com"}}})
	if err := create(ctx, hub, objs...); err != nil {
		return err
	}
	for p, name := range infras {
		c := f.Plane(name).Client
		objs := []client.Object{
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "hosts"}},
			&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "hosts", Name: "bmc"}, StringData: map[string]string{"username": "admin", "password": "password"}},
			&metal3api.HostDeployPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "hosts", Name: "tenants"},
				Spec: metal3api.HostDeployPolicySpec{HostClaimNamespaces: &metal3api.HostClaimNamespaces{NameMatches: "^tenant-"}}},
		}
		for i := p; i < len(bmcs); i += len(infras) {
			objs = append(objs, &metal3api.BareMetalHost{
				ObjectMeta: metav1.ObjectMeta{Namespace: "hosts", Name: fmt.Sprintf("host-%04d", i),
					Labels:      map[string]string{"example.com/rack": fmt.Sprintf("r%d", i%8)},
					Annotations: map[string]string{hostfleetv1alpha1.AnnotationDriver: hostfleetv1alpha1.DriverBMCLib}},
				Spec: metal3api.BareMetalHostSpec{BMC: metal3api.BMCDetails{
					Address: "redfish-virtualmedia+http://" + bmcs[i].HostPort() + redfish.SystemPath, CredentialsName: "bmc"}},
			})
		}
		if err := create(ctx, c, objs...); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	return nil
}

// fleet is the hub and agent processes, which the chaos kills and which
// are started again whenever they end, a second later, as a Deployment's
// pods are.
type fleet struct {
	f      *planes.Fleet
	bin    string
	infras []string
	bmcs   []*redfish.BMC
	// grace is the agents' --orphan-grace (30 s when zero).
	grace time.Duration
	ctx   context.Context

	// links are each agent's ways to the hub's API server and to its own
	// plane's: proxies the partitions cut.
	links map[string]*links

	mu      sync.Mutex
	procs   map[string]*planes.Process
	started map[string]int
	killed  map[string]bool
	// exits are the processes that ended by themselves, with the last line
	// of their log.
	exits []string
}

func (fl *fleet) startAll(ctx context.Context) error {
	fl.ctx = ctx
	fl.procs, fl.started, fl.killed = map[string]*planes.Process{}, map[string]int{}, map[string]bool{}
	fl.links = map[string]*links{}
	for _, name := range fl.infras {
		l, err := newLinks(fl.f, name)
		if err != nil {
			return err
		}
		fl.links[name] = l
	}
	for _, name := range append([]string{"hub"}, fl.infras...) {
		if err := fl.start(name); err != nil {
			return err
		}
	}
	return nil
}

// start runs the hub ("hub") or the agent of an infrastructure plane, and
// starts it again a second after it ends, until the fleet's context ends.
func (fl *fleet) start(name string) error {
	fl.mu.Lock()
	defer fl.mu.Unlock()
	fl.started[name]++
	hubCfg := fl.f.Plane("hub").Kubeconfig
	bin, plane := "hostfleet-hub", "hub"
	args := []string{"--kubeconfig=" + hubCfg, "--leader-elect=false", "--bind-deadline=30s"}
	if name != "hub" {
		bin, plane = "hostfleet-agent", name
		grace := fl.grace
		if grace == 0 {
			grace = 30 * time.Second
		}
		args = []string{"--hub-kubeconfig=" + fl.links[name].hub.Kubeconfig, "--managed-kubeconfig=" + fl.links[name].infra.Kubeconfig,
			"--cluster-name=" + name, "--leader-elect=false", "--retry-after=5s", "--inventory-interval=2s",
			"--health-lease=false", "--bmc-poll=10s",
			// The emulated hosts run no OS to shut down; and a host whose
			// claim vanished mid-bind is released after this grace.
			"--bmc-soft-power-off-timeout=20s", "--orphan-grace=" + grace.String()}
	}
	p, err := fl.f.Run(fmt.Sprintf("%s-%s-%d", bin, plane, fl.started[name]), plane, filepath.Join(fl.bin, bin), args)
	if err != nil {
		return err
	}
	fl.procs[name] = p
	go fl.supervise(name, p)
	return nil
}

// supervise starts the process again once it ended, and records an end
// that was not a kill.
func (fl *fleet) supervise(name string, p *planes.Process) {
	_ = p.Wait(fl.ctx)
	if fl.ctx.Err() != nil {
		return
	}
	fl.mu.Lock()
	if !fl.killed[name] {
		fl.exits = append(fl.exits, fmt.Sprintf("%s: %s", p.Name, exitOf(p.Log)))
	}
	fl.killed[name] = false
	fl.mu.Unlock()
	select {
	case <-fl.ctx.Done():
		return
	case <-time.After(time.Second):
	}
	_ = fl.start(name)
}

// kill kills the hub ("hub") or an infrastructure plane's agent with
// SIGKILL; it is started again a second later.
func (fl *fleet) kill(name string) {
	fl.mu.Lock()
	p := fl.procs[name]
	fl.killed[name] = !p.Exited()
	fl.mu.Unlock()
	p.Kill()
}

// killRandom kills the hub or one agent with SIGKILL, as a crash or an
// evicted pod would; it is started again a second later.
func (fl *fleet) killRandom(r *rand.Rand) string {
	names := append([]string{"hub"}, fl.infras...)
	r.Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
	fl.mu.Lock()
	name := names[0]
	for _, n := range names {
		if !fl.procs[n].Exited() { // one being started again is not killed twice
			name = n
			break
		}
	}
	fl.mu.Unlock()
	fl.kill(name)
	if name == "hub" {
		return "hostfleet-hub"
	}
	return "hostfleet-agent on " + name
}

// Exits are the processes that ended by themselves.
func (fl *fleet) Exits() []string {
	fl.mu.Lock()
	defer fl.mu.Unlock()
	return append([]string(nil), fl.exits...)
}

// exitOf describes how a process ended, from its log: its panic, if it
// panicked, else its last line.
func exitOf(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	for _, l := range lines {
		if strings.HasPrefix(l, "panic: ") {
			return l
		}
	}
	return lines[len(lines)-1]
}

// listHosts lists an infrastructure plane's hosts.
func listHosts(ctx context.Context, c client.Client) ([]metal3api.BareMetalHost, error) {
	var list metal3api.BareMetalHostList
	if err := c.List(ctx, &list, client.InNamespace("hosts")); err != nil {
		return nil, err
	}
	return list.Items, nil
}
