package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/agent/app"
	"github.com/hostfleet/hostfleet/e2e/harness/planes"
	"github.com/hostfleet/hostfleet/hub/addon"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// scaleTenant and scaleNS are the one tenant of the scale benchmark.
const scaleTenant, scaleNS = "fleet", "tenant-fleet"

// scaleResult is one run of the scale benchmark.
type scaleResult struct {
	clusters, claims int
	setup, elapsed   time.Duration
	// scheduling and ready are created→Scheduled and created→Ready.
	scheduling, ready [2]time.Duration // p50, p99
	hubServer         planes.Usage     // CPU over the claims, memory at the end
	hubController     planes.Usage
	// agents is this process's CPU (every agent); infraServers the
	// infrastructure planes' API servers'.
	agents, infraServers time.Duration
	// serverGC and agentsGC are what the hub API server's and this
	// process's garbage collectors took of their CPU.
	serverGC, agentsGC time.Duration
	// requests are the hub API server's requests (all clients, WATCH
	// excluded) over the claims, by verb.
	requests map[string]float64
	// watches ended (and were opened again) on the hub during the claims,
	// and the watchers among them the hub API server closed for falling
	// behind: a watcher that does not take its events in time holds up
	// every other's.
	watches, terminated float64
	// terminatedBy splits terminated by resource.
	terminatedBy map[string]float64
	// claimCache is the capacity of the hub API server's watch cache of
	// claims, in events, when the claims began and at the end: a watch
	// opened on it gets a buffer of capacity/75 events, from 10 to 100, for
	// as long as it lasts.
	claimCache [2]float64
	// slowCreates are claim creates the hub API server took over 1 s to
	// serve, slowEtcd its etcd requests over 1 s: a stall the server
	// measured, not its clients.
	slowCreates, slowEtcd float64
	// tenantBytes are the bytes of Tenant events sent to the hub's watchers.
	tenantBytes float64
	// agentHeap is this process's live heap once every agent has started,
	// per cluster: what a simulated agent holds.
	agentHeap int64
	// observerWaited is the longest a goroutine of the process that
	// creates and watches the claims waited to run: a measure of the
	// measurement.
	observerWaited time.Duration
}

// runScale runs the scale benchmark at each number of clusters and prints
// the runs side by side.
// hubPprof is the hub controller's --pprof-bind-address in scale runs.
var hubPprof = flag.String("scale-hub-pprof", "0", "scale: the hub controller's --pprof-bind-address (e.g. localhost:6061; 0: none)")

// scaleClaims caps the claims of a run: where the machine cannot keep up
// with one claim per host at the largest sizes.
var scaleClaims = flag.Int("scale-claims", 0, "scale: claims per run, at most (0: one per host)")

// scaleClaimWatch is the agents' --claim-watch in scale runs; the hub writes
// PlacedClaims only for "placed".
var scaleClaimWatch = flag.String("scale-claim-watch", "placed", "scale: the agents' --claim-watch, label or placed (the hub writes PlacedClaims only for placed)")

// scaleAgentCores caps the cores the simulated agents' process runs on
// while the claims are made: a fleet's agents run on their own clusters,
// never on the hub's cores, and on a small machine their garbage collector
// (whose idle workers take every core the Go scheduler sees idle) would
// otherwise take the hub's.
var scaleAgentCores = flag.Int("scale-agent-cores", 1, "scale: GOMAXPROCS of this process, which runs the agents, while the claims are made (0: unchanged)")

// scaleFleetNice is the nice value of what simulates the fleet while the
// claims are made: the infrastructure planes and this process.
var scaleFleetNice = flag.Int("scale-fleet-nice", 0, "scale: while the claims are made, run the infrastructure planes and this process (the agents) at this nice value, so that they take only the CPU the hub leaves (0: as started; lowering it back needs CAP_SYS_NICE)")

// reniceFleet sets the nice value of the infrastructure planes and of this
// process.
func (b *scaleBench) reniceFleet(nice int) error {
	for _, name := range b.names[1:] {
		if err := b.f.Plane(name).Renice(nice); err != nil {
			return err
		}
	}
	return planes.ReniceProcess(os.Getpid(), nice)
}

// agentCores says what the agents' process runs on while the claims are made.
func agentCores() string {
	if *scaleAgentCores > 0 {
		return fmt.Sprintf("%d of %d cores", min(*scaleAgentCores, runtime.NumCPU()), runtime.NumCPU())
	}
	return fmt.Sprintf("all %d cores", runtime.NumCPU())
}

func runScale(clusterCounts []int, hostsPer, infraPlanes int, rate float64, hubBin string) error {
	var results []scaleResult
	for _, c := range clusterCounts {
		fmt.Printf("\nscale: %d clusters × %d hosts on %d infrastructure planes, %d claims at %.0f/s, claim watch %s, agents on %s, fleet at nice %d\n", c, hostsPer, infraPlanes, claimsOf(c, hostsPer), rate, *scaleClaimWatch, agentCores(), *scaleFleetNice)
		r, err := scaleRun(c, hostsPer, infraPlanes, rate, hubBin)
		if err != nil {
			return fmt.Errorf("%d clusters: %w", c, err)
		}
		results = append(results, r)
		printScale(results)
	}
	return nil
}

func printScale(rs []scaleResult) {
	row := func(name string, f func(r scaleResult) string) {
		fmt.Printf("  %-40s", name)
		for _, r := range rs {
			fmt.Printf(" %18s", f(r))
		}
		fmt.Println()
	}
	fmt.Println()
	row("clusters", func(r scaleResult) string { return strconv.Itoa(r.clusters) })
	row("claims", func(r scaleResult) string { return strconv.Itoa(r.claims) })
	row("setup (planes, clusters, agents)", func(r scaleResult) string { return r.setup.Round(time.Second).String() })
	row("all claims Ready after", func(r scaleResult) string { return r.elapsed.Round(100 * time.Millisecond).String() })
	row("scheduling p50 / p99", func(r scaleResult) string { return pair(r.scheduling) })
	row("created → Ready p50 / p99", func(r scaleResult) string { return pair(r.ready) })
	row("hub API server CPU per claim", func(r scaleResult) string {
		return (r.hubServer.CPU / time.Duration(r.claims)).Round(10 * time.Microsecond).String()
	})
	row("  of it, its garbage collector's", func(r scaleResult) string {
		return (r.serverGC / time.Duration(r.claims)).Round(10 * time.Microsecond).String()
	})
	row("hub API server RSS (peak)", func(r scaleResult) string { return mib(r.hubServer.RSS) + " (" + mib(r.hubServer.PeakRSS) + ")" })
	row("hub controller CPU per claim", func(r scaleResult) string {
		return (r.hubController.CPU / time.Duration(r.claims)).Round(10 * time.Microsecond).String()
	})
	row("agents' CPU per claim (all, one process)", func(r scaleResult) string {
		return (r.agents / time.Duration(r.claims)).Round(10 * time.Microsecond).String()
	})
	row("  of it, their garbage collector's", func(r scaleResult) string {
		return (r.agentsGC / time.Duration(r.claims)).Round(10 * time.Microsecond).String()
	})
	row("infrastructure API servers' CPU per claim", func(r scaleResult) string {
		return (r.infraServers / time.Duration(r.claims)).Round(10 * time.Microsecond).String()
	})
	row("agents' live heap per cluster", func(r scaleResult) string { return fmt.Sprintf("%.2f MB", float64(r.agentHeap)/1e6) })
	row("hub controller RSS (peak)", func(r scaleResult) string {
		return mib(r.hubController.RSS) + " (" + mib(r.hubController.PeakRSS) + ")"
	})
	verbs := []string{}
	for _, r := range rs {
		for v := range r.requests {
			if !slices.Contains(verbs, v) {
				verbs = append(verbs, v)
			}
		}
	}
	slices.Sort(verbs)
	row("hub API requests per claim", func(r scaleResult) string {
		total := 0.0
		for _, v := range r.requests {
			total += v
		}
		return fmt.Sprintf("%.1f", total/float64(r.claims))
	})
	for _, v := range verbs {
		row("  "+v, func(r scaleResult) string { return fmt.Sprintf("%.2f", r.requests[v]/float64(r.claims)) })
	}
	row("hub watches ended, closed for falling behind", func(r scaleResult) string {
		return fmt.Sprintf("%.0f, %.0f%s", r.watches, r.terminated, byResource(r.terminatedBy))
	})
	row("hub watch cache of claims, events (start, end)", func(r scaleResult) string {
		return fmt.Sprintf("%.0f, %.0f", r.claimCache[0], r.claimCache[1])
	})
	row("hub claim creates over 1 s; etcd requests over 1 s", func(r scaleResult) string {
		return fmt.Sprintf("%.0f; %.0f", r.slowCreates, r.slowEtcd)
	})
	row("Tenant events sent to the hub's watchers", func(r scaleResult) string { return fmt.Sprintf("%.0f MB", r.tenantBytes/1e6) })
	row("observer's goroutines waited to run, at most", func(r scaleResult) string { return r.observerWaited.String() })
}

func pair(d [2]time.Duration) string {
	return d[0].Round(time.Millisecond).String() + " / " + d[1].Round(time.Millisecond).String()
}

func mib(b int64) string { return fmt.Sprintf("%d MiB", b>>20) }

// scaleBench is one run of the scale benchmark while it runs: the planes,
// the hub controller's process and the clusters' agent identities.
type scaleBench struct {
	clusters, hostsPer, infraPlanes int
	names                           []string
	f                               *planes.Fleet
	hubPlane                        *planes.Plane
	hub                             client.Client
	hubCmd                          *exec.Cmd
	hubOut                          bytes.Buffer
	agentCfgs                       []*rest.Config
}

func (b *scaleBench) clusterName(i int) string { return fmt.Sprintf("c%04d", i) }
func (b *scaleBench) infraOf(i int) *planes.Plane {
	return b.f.Plane(fmt.Sprintf("infra-%d", i%b.infraPlanes+1))
}

// hubFailed adds the tail of the hub controller's output to err.
func (b *scaleBench) hubFailed(err error) error {
	return fmt.Errorf("%w\nhub: %s", err, tail(b.hubOut.String()))
}

// claimsOf is the number of claims of a run: one per host, or -scale-claims.
func claimsOf(clusters, hostsPer int) int {
	if *scaleClaims > 0 {
		return min(*scaleClaims, clusters*hostsPer)
	}
	return clusters * hostsPer
}

func scaleRun(clusters, hostsPer, infraPlanes int, rate float64, hubBin string) (scaleResult, error) {
	res := scaleResult{clusters: clusters, claims: claimsOf(clusters, hostsPer)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	began := time.Now()
	b := &scaleBench{clusters: clusters, hostsPer: hostsPer, infraPlanes: infraPlanes, names: []string{"hub"}}
	for i := 1; i <= infraPlanes; i++ {
		b.names = append(b.names, fmt.Sprintf("infra-%d", i))
	}
	stop, err := b.start(ctx, hubBin)
	if err != nil {
		return res, err
	}
	defer stop()
	if err := b.setUpClusters(ctx); err != nil {
		return res, err
	}
	if err := b.startAgents(ctx); err != nil {
		return res, err
	}
	res.setup = time.Since(began)
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	res.agentHeap = int64(ms.HeapAlloc) / int64(clusters)
	obs, tl, err := b.measure(ctx, &res, rate)
	if err != nil {
		return res, err
	}
	b.latencies(&res, obs, tl)
	return res, nil
}

// start starts the planes and the hub controller, in its own process: its
// CPU and memory are its own. stop stops them.
func (b *scaleBench) start(ctx context.Context, hubBin string) (stop func(), _ error) {
	f, stopPlanes, err := startPlanes(ctx, b.names...)
	if err != nil {
		return nil, err
	}
	b.f, b.hubPlane = f, f.Plane("hub")
	b.hub = b.hubPlane.Client
	b.hubCmd = exec.Command(hubBin, "--kubeconfig", b.hubPlane.Kubeconfig, "--addon-manager=false", "--leader-elect=false",
		"--metrics-bind-address=0", "--health-probe-bind-address=0", "--pprof-bind-address="+*hubPprof,
		fmt.Sprintf("--placed-claims=%t", *scaleClaimWatch == "placed"))
	b.hubCmd.Stdout, b.hubCmd.Stderr = &b.hubOut, &b.hubOut
	var logFile *os.File
	if *keepLogs {
		// Its decisions too (V(1)), beside the planes' logs.
		b.hubCmd.Args = append(b.hubCmd.Args, "--zap-log-level=debug")
		if logFile, err = os.Create(filepath.Join(f.Dir, "hostfleet-hub.log")); err != nil {
			stopPlanes()
			return nil, err
		}
		b.hubCmd.Stdout, b.hubCmd.Stderr = io.MultiWriter(&b.hubOut, logFile), io.MultiWriter(&b.hubOut, logFile)
	}
	if err := b.hubCmd.Start(); err != nil {
		stopPlanes()
		return nil, fmt.Errorf("start %s (make bench-scale builds it): %w", hubBin, err)
	}
	return func() {
		_ = b.hubCmd.Process.Signal(syscall.SIGTERM)
		_ = b.hubCmd.Wait()
		if logFile != nil {
			_ = logFile.Close()
		}
		stopPlanes()
	}, nil
}

// setUpClusters makes the tenant, and every cluster with its add-on
// identity on the hub and its hosts on an infrastructure plane; then waits
// for the hub to count them.
func (b *scaleBench) setUpClusters(ctx context.Context) error {
	fmt.Printf("  %d clusters: ManagedClusters, add-on identities, hosts\n", b.clusters)
	for _, o := range []client.Object{
		&clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "fleet"}},
		&hostfleetv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: scaleTenant}, Spec: hostfleetv1alpha1.TenantSpec{ClusterSet: "fleet"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: scaleNS, Labels: map[string]string{hostfleetv1alpha1.LabelTenant: scaleTenant}}},
	} {
		if err := b.hub.Create(ctx, o); err != nil {
			return err
		}
	}
	kube, err := kubernetes.NewForConfig(b.hubPlane.Config)
	if err != nil {
		return err
	}
	b.agentCfgs = make([]*rest.Config, b.clusters)
	// The first cluster alone: it creates the ClusterRoles all share.
	if err := b.setUpCluster(ctx, kube, 0); err != nil {
		return err
	}
	if err := parallel(b.clusters-1, 16, func(i int) error { return b.setUpCluster(ctx, kube, i+1) }); err != nil {
		return err
	}
	if err := waitFor(ctx, 5*time.Minute, "the tenant to count every cluster", func() (bool, error) {
		t := &hostfleetv1alpha1.Tenant{}
		if err := b.hub.Get(ctx, client.ObjectKey{Name: scaleTenant}, t); err != nil {
			return false, err
		}
		return len(t.Status.Clusters) == b.clusters, nil
	}); err != nil {
		return b.hubFailed(err)
	}
	if err := waitFor(ctx, 5*time.Minute, "every cluster's ClusterTenancy to name the tenant", func() (bool, error) {
		var list hostfleetv1alpha1.ClusterTenancyList
		if err := b.hub.List(ctx, &list); err != nil {
			return false, err
		}
		n := 0
		for i := range list.Items {
			if list.Items[i].Tenant(hostfleetv1alpha1.RoleInfrastructure, scaleTenant) != nil {
				n++
			}
		}
		return n == b.clusters, nil
	}); err != nil {
		return b.hubFailed(err)
	}
	return nil
}

// setUpCluster makes cluster i: its ManagedCluster (accepted, Available),
// what OCM's registration does for the add-on's CSR identity, and its
// namespace, policy and available hosts on its infrastructure plane.
func (b *scaleBench) setUpCluster(ctx context.Context, kube kubernetes.Interface, i int) error {
	name := b.clusterName(i)
	mc := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{clusterv1beta2.ClusterSetLabel: "fleet"}},
		Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: true}}
	for _, o := range []client.Object{mc, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}} {
		if err := b.hub.Create(ctx, o); err != nil {
			return err
		}
	}
	if err := planes.SetClusterAvailable(ctx, b.hub, name, metav1.ConditionTrue); err != nil {
		return err
	}
	mca := &addonv1beta1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: hostfleetv1alpha1.AddonName}}
	if err := b.hub.Create(ctx, mca); err != nil {
		return err
	}
	subject := addonv1beta1.KubeClientSubject{BaseSubject: addonv1beta1.BaseSubject{
		User: hostfleetv1alpha1.AgentHubUser(name), Groups: []string{hostfleetv1alpha1.AgentHubGroup(name), hostfleetv1alpha1.AgentSharedGroup}}}
	mca.Status.Registrations = []addonv1beta1.RegistrationConfig{{Type: addonv1beta1.KubeClient,
		KubeClient: &addonv1beta1.KubeClientConfig{Subject: subject}}}
	if err := addon.Permissions(kube)(ctx, mc, mca); err != nil {
		return err
	}
	cfg, err := b.f.AddUser("hub", subject.User, append(subject.Groups, "system:authenticated")...)
	if err != nil {
		return err
	}
	b.agentCfgs[i] = cfg // each i is its own slot
	infra := b.infraOf(i).Client
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}},
		&metal3api.HostDeployPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: "tenants"},
			Spec: metal3api.HostDeployPolicySpec{HostClaimNamespaces: &metal3api.HostClaimNamespaces{Names: []string{scaleNS}}}},
	} {
		if err := infra.Create(ctx, o); err != nil {
			return err
		}
	}
	for h := 0; h < b.hostsPer; h++ {
		bmh := &metal3api.BareMetalHost{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: fmt.Sprintf("h%02d", h)},
			Spec: metal3api.BareMetalHostSpec{BMC: metal3api.BMCDetails{Address: fmt.Sprintf("ipmi://10.%d.%d.%d", i/250, i%250, h), CredentialsName: "bmc"}}}
		if err := infra.Create(ctx, bmh); err != nil {
			return err
		}
		bmh.Status.Provisioning.State = metal3api.StateAvailable
		bmh.Status.OperationalStatus = metal3api.OperationalStatusOK
		if err := infra.Status().Update(ctx, bmh); err != nil {
			return err
		}
	}
	return nil
}

// startAgents runs every cluster's agent in this process, each with its
// cluster's hub identity, and waits for their HostInventories.
func (b *scaleBench) startAgents(ctx context.Context) error {
	fmt.Printf("  %d agents in this process, each with its cluster's hub identity\n", b.clusters)
	agentErrs := make(chan error, b.clusters)
	for i := 0; i < b.clusters; i++ {
		name := b.clusterName(i)
		o := app.NewOptions()
		o.ClusterName, o.ServedNamespaces, o.HostNamespaces = name, []string{scaleNS}, []string{name}
		o.BMHDriver, o.LeaderElect, o.HealthLease, o.InProcess = "none", false, false, true
		o.MetricsAddr, o.HealthAddr = "0", "0"
		o.Concurrency = 1
		o.ClaimWatch = *scaleClaimWatch
		managedCfg := rest.CopyConfig(b.infraOf(i).Config)
		hubCfg := rest.CopyConfig(b.agentCfgs[i])
		hubCfg.QPS, hubCfg.Burst = o.QPS, o.Burst
		managedCfg.QPS, managedCfg.Burst = o.QPS, o.Burst
		a, err := app.New(ctx, hubCfg, managedCfg, o)
		if err != nil {
			return fmt.Errorf("agent %s: %w", name, err)
		}
		go func() {
			if err := a.Manager.Start(ctx); err != nil && ctx.Err() == nil {
				agentErrs <- fmt.Errorf("agent %s: %w", name, err)
			}
		}()
	}
	return waitFor(ctx, 10*time.Minute, "every cluster's HostInventory", func() (bool, error) {
		select {
		case err := <-agentErrs:
			return false, err
		default:
		}
		var invs hostfleetv1alpha1.HostInventoryList
		if err := b.hub.List(ctx, &invs); err != nil {
			return false, err
		}
		full := 0
		for _, inv := range invs.Items {
			if int(inv.Status.Available) == b.hostsPer {
				full++
			}
		}
		return full == b.clusters, nil
	})
}

// usage is what the hub's API server, its controller and its requests
// have used so far.
type usage struct {
	server, controller planes.Usage
	requests           map[string]float64
	gc                 float64
}

func (b *scaleBench) usage(ctx context.Context) (usage, error) {
	var u usage
	var err error
	if u.server, err = b.hubPlane.APIServerUsage(); err != nil {
		return u, err
	}
	if u.controller, err = planes.ProcessUsage(b.hubCmd.Process.Pid); err != nil {
		return u, err
	}
	if u.requests, err = apiRequests(ctx, b.hubPlane.Config); err != nil {
		return u, err
	}
	u.gc = gcSeconds()
	return u, nil
}

// measure creates the claims at rate (from a process of the bench's own,
// which watches them), with a timeline of the hub alongside, and records
// what the run cost.
func (b *scaleBench) measure(ctx context.Context, res *scaleResult, rate float64) (observation, *timeline, error) {
	before, err := b.usage(ctx)
	if err != nil {
		return observation{}, nil, err
	}
	others := planeUsage(b.f, b.names[1:]...)
	fmt.Printf("  %d claims at %.0f/s\n", res.claims, rate)
	if *scaleAgentCores > 0 {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(*scaleAgentCores))
	}
	tl := &timeline{window: 10 * time.Second}
	tlCtx, tlStop := context.WithCancel(ctx)
	defer tlStop()
	tlDone := make(chan struct{})
	go func() {
		defer close(tlDone)
		tl.run(tlCtx, b.sample)
	}()
	// The claims, at a steady rate, unpinned: the hub scheduler places them.
	start := time.Now()
	// The observer starts as this process is: only then is the fleet
	// reniced.
	started := func() error { return nil }
	if *scaleFleetNice != 0 {
		started = func() error { return b.reniceFleet(*scaleFleetNice) }
		defer func() {
			if err := planes.ReniceProcess(os.Getpid(), 0); err != nil {
				fmt.Printf("  this process stays at nice %d: %v\n", *scaleFleetNice, err)
			}
		}()
	}
	obs, err := observe(ctx, observeRequest{Kubeconfig: b.hubPlane.Kubeconfig, Namespace: scaleNS, Claims: res.claims, Rate: rate}, started)
	if err != nil {
		b.gaveUp(ctx, before, others, time.Since(start))
		return obs, nil, b.hubFailed(err)
	}
	res.observerWaited = obs.Waited
	if len(obs.Relists) > 0 {
		fmt.Printf("  the observer's watches listed every claim again at %s\n", strings.Join(obs.Relists, ", "))
	}
	if len(obs.Resumes) > 0 {
		fmt.Printf("  the observer's watches ended and watched again at %s\n", strings.Join(obs.Resumes, ", "))
	}
	for _, t := range obs.Ready {
		res.elapsed = max(res.elapsed, t.Sub(obs.Start))
	}
	tlStop()
	<-tlDone
	after, err := b.usage(ctx)
	if err != nil {
		return obs, nil, err
	}
	res.hubServer, res.hubController = after.server.Sub(before.server), after.controller.Sub(before.controller)
	for name, cpu := range others() {
		if name == "" {
			res.agents = cpu
		} else {
			res.infraServers += cpu
		}
	}
	res.agentsGC = time.Duration((after.gc - before.gc) * float64(time.Second))
	res.countRequests(before.requests, after.requests)
	return obs, tl, nil
}

// gaveUp prints where the CPU went over the claims of a run the observer
// gave up on: the cores each part used on average.
func (b *scaleBench) gaveUp(ctx context.Context, before usage, others func() map[string]time.Duration, d time.Duration) {
	after, err := b.usage(ctx)
	if err != nil {
		return
	}
	cores := func(cpu time.Duration) float64 { return cpu.Seconds() / d.Seconds() }
	var agents, infra time.Duration
	for name, cpu := range others() {
		if name == "" {
			agents = cpu
		} else {
			infra += cpu
		}
	}
	fmt.Printf("  gave up after %s; cores used on average: hub API server %.2f, hub controller %.2f, agents %.2f, infrastructure API servers %.2f\n",
		d.Round(time.Second), cores(after.server.Sub(before.server).CPU), cores(after.controller.Sub(before.controller).CPU), cores(agents), cores(infra))
}

// sample is one point of the timeline: the hub API server's CPU and
// requests, and this process's (the agents').
func (b *scaleBench) sample(ctx context.Context) (sample, error) {
	u, err := b.hubPlane.APIServerUsage()
	if err != nil {
		return sample{}, err
	}
	req, err := apiRequests(ctx, b.hubPlane.Config)
	if err != nil {
		return sample{}, err
	}
	own, err := planes.ProcessUsage(os.Getpid())
	if err != nil {
		return sample{}, err
	}
	controller, err := planes.ProcessUsage(b.hubCmd.Process.Pid)
	if err != nil {
		return sample{}, err
	}
	etcd, err := b.hubPlane.EtcdUsage()
	if err != nil {
		return sample{}, err
	}
	var infra time.Duration
	for _, name := range b.names[1:] {
		server, err := b.f.Plane(name).APIServerUsage()
		if err != nil {
			return sample{}, err
		}
		infra += server.CPU
	}
	machine, err := planes.MachineCPU()
	return sample{etcd: etcd.CPU, infra: infra, at: time.Now(), cpu: u.CPU, watches: req[keyWatches], terminated: req[keyTerminated], slowCreates: req[keySlowCreates],
		slowEtcd: req[keySlowEtcd], tenantBytes: req[keyTenantBytes], lists: req["LIST"], serverGC: req[keyGC], agents: own.CPU, controller: controller.CPU,
		machine: machine, runtime: readRuntime()}, err
}

// countRequests records the hub API server's requests over the claims, by
// verb, and the counts kept beside them.
func (res *scaleResult) countRequests(before, after map[string]float64) {
	res.requests = map[string]float64{}
	for verb, n := range after {
		if d := n - before[verb]; d > 0 {
			res.requests[verb] = d
		}
	}
	res.watches, res.terminated = res.requests[keyWatches], res.requests[keyTerminated]
	res.slowCreates, res.slowEtcd = res.requests[keySlowCreates], res.requests[keySlowEtcd]
	res.tenantBytes = res.requests[keyTenantBytes]
	res.claimCache = [2]float64{before[keyClaimCache], after[keyClaimCache]}
	res.serverGC = time.Duration(res.requests[keyGC] * float64(time.Second))
	for _, k := range []string{keyWatches, keyTerminated, keySlowCreates, keySlowEtcd, keyTenantBytes, keyGC, keyClaimCache} {
		delete(res.requests, k)
	}
	res.terminatedBy = map[string]float64{}
	for k, n := range res.requests {
		if resource, ok := strings.CutPrefix(k, keyTerminated+"/"); ok {
			res.terminatedBy[resource] = n
			delete(res.requests, k)
		}
	}
}

// latencies are created → placed and created → Ready, with the late
// claims (placed after more than 1 s) explained: by minute of creation,
// created → seen by the bench's watch (the API server's write and event
// delivery) and seen → placed, and the timeline around them.
func (b *scaleBench) latencies(res *scaleResult, obs observation, tl *timeline) {
	var sched, rdy, delivered, placing []time.Duration
	slow := map[int]int{}
	late := make([]bool, len(obs.Created))
	for i, created := range obs.Created {
		sched = append(sched, obs.Placed[i].Sub(created))
		rdy = append(rdy, obs.Ready[i].Sub(created))
		if sched[i] > time.Second {
			late[i] = true
			slow[int(created.Sub(obs.Start).Minutes())]++
			delivered = append(delivered, obs.Seen[i].Sub(created))
			placing = append(placing, obs.Placed[i].Sub(obs.Seen[i]))
		}
	}
	printSlow(slow, delivered, placing)
	if len(slow) > 0 {
		tl.print(obs.Start, obs.Created, late)
	}
	slices.Sort(sched)
	slices.Sort(rdy)
	res.scheduling = [2]time.Duration{quantile(sched, 0.5), quantile(sched, 0.99)}
	res.ready = [2]time.Duration{quantile(rdy, 0.5), quantile(rdy, 0.99)}
}

// waitFor polls cond every 500 ms until it holds, fails, or timeout passes.
func waitFor(ctx context.Context, timeout time.Duration, what string, cond func() (bool, error)) error {
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, timeout, true, func(context.Context) (bool, error) { return cond() })
	switch {
	case wait.Interrupted(err) && ctx.Err() == nil:
		return fmt.Errorf("%s not there after %s", what, timeout)
	case err != nil:
		return fmt.Errorf("waiting for %s: %w", what, err)
	}
	return nil
}

// Counts apiRequests reads beside the requests by verb.
const (
	// keyWatches: watch requests that ended; their clients watch again.
	keyWatches = "WATCH"
	// keyTerminated: watchers the API server closed because they fell
	// behind its events (apiserver_terminated_watchers_total);
	// keyTerminated/<resource> counts them by resource.
	keyTerminated = "terminated"
	// keySlowCreates: claim creates the API server took over 1 s to serve
	// (apiserver_request_duration_seconds).
	keySlowCreates = "slow creates"
	// keySlowEtcd: the API server's etcd requests that took over 1 s
	// (etcd_request_duration_seconds).
	keySlowEtcd = "slow etcd"
	// keyTenantBytes: the bytes of Tenant events the API server sent its
	// watchers (the hub's own; agents read their ClusterTenancy instead).
	keyTenantBytes = "tenant event bytes"
	// keyGC: the CPU seconds the API server's garbage collector took.
	keyGC = "gc cpu"
	// keyClaimCache: the capacity of its watch cache of claims, in events.
	keyClaimCache = "claim cache"
)

// overOneSecond counts, from a histogram's _count and le="1" _bucket lines,
// the observations over 1 s: the count adds, the bucket subtracts.
func overOneSecond(line, name string) (float64, bool) {
	sign := 0.0
	switch {
	case strings.HasPrefix(line, name+"_count{"):
		sign = 1
	case strings.HasPrefix(line, name+"_bucket{") && strings.Contains(line, `le="1"}`):
		sign = -1
	default:
		return 0, false
	}
	v, err := sampleValue(line)
	return sign * v, err == nil
}

// label is the value of a label of a metrics text line, "" if it has none.
func label(line, name string) string {
	for _, sep := range []string{"{", ","} {
		if i := strings.Index(line, sep+name+`="`); i >= 0 {
			v := line[i+len(sep)+len(name)+2:]
			return v[:strings.IndexByte(v, '"')]
		}
	}
	return ""
}

// byResource prints counts by resource, largest first: " (hostclaims 3,
// leases 1)", or nothing.
func byResource(n map[string]float64) string {
	keys := make([]string, 0, len(n))
	for k, v := range n {
		if v > 0 {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return ""
	}
	slices.SortFunc(keys, func(a, b string) int { return cmp.Or(cmp.Compare(n[b], n[a]), strings.Compare(a, b)) })
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %.0f", k, n[k])
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// sampleValue is the value of a metrics text line: its last field.
func sampleValue(line string) (float64, error) {
	return strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
}

// apiRequests reads the API server's request counts (apiserver_request_total)
// by verb, and keyTerminated, keySlowCreates and keySlowEtcd.
func apiRequests(ctx context.Context, cfg *rest.Config) (map[string]float64, error) {
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	data, err := kube.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("API server metrics: %w", err)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if v, ok := overOneSecond(line, "etcd_request_duration_seconds"); ok {
			out[keySlowEtcd] += v
			continue
		}
		if strings.Contains(line, `resource="hostclaims"`) && strings.Contains(line, `verb="POST"`) {
			if v, ok := overOneSecond(line, "apiserver_request_duration_seconds"); ok {
				out[keySlowCreates] += v
				continue
			}
		}
		if strings.HasPrefix(line, "apiserver_watch_events_sizes_sum{") && strings.Contains(line, `resource="tenants"`) {
			if v, err := sampleValue(line); err == nil {
				out[keyTenantBytes] += v
			}
			continue
		}
		if strings.HasPrefix(line, "go_cpu_classes_gc_total_cpu_seconds_total ") {
			if v, err := sampleValue(line); err == nil {
				out[keyGC] = v
			}
			continue
		}
		if strings.HasPrefix(line, "watch_cache_capacity{") && label(line, "resource") == "hostclaims" {
			if v, err := sampleValue(line); err == nil {
				out[keyClaimCache] = v
			}
			continue
		}
		if strings.HasPrefix(line, "apiserver_terminated_watchers_total{") {
			if v, err := sampleValue(line); err == nil {
				out[keyTerminated] += v
				out[keyTerminated+"/"+label(line, "resource")] += v
			}
			continue
		}
		if !strings.HasPrefix(line, "apiserver_request_total{") {
			continue
		}
		verb := label(line, "verb")
		if verb == "" || verb == "CONNECT" {
			continue
		}
		v, err := sampleValue(line)
		if err != nil {
			continue
		}
		out[verb] += v
	}
	return out, sc.Err()
}

func tail(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > 20 {
		lines = lines[len(lines)-20:]
	}
	return strings.Join(lines, "\n")
}

// parseCounts parses "100,1000".
func parseCounts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, errors.New("-scale-clusters takes counts such as 100,1000")
		}
		out = append(out, n)
	}
	return out, nil
}

// printSlow prints how many claims took over 1 s to be placed, by minute
// of their creation: a tail spread over the run is load, one in a few
// minutes is an event there. Their latency is split where the bench's watch
// first saw them: before, the hub API server created the claim and
// delivered its event late (to every watcher); after, the scheduler placed
// it late.
func printSlow(byMinute map[int]int, delivered, placing []time.Duration) {
	if len(byMinute) == 0 {
		return
	}
	var parts []string
	for _, m := range slices.Sorted(maps.Keys(byMinute)) {
		parts = append(parts, fmt.Sprintf("min %d: %d", m, byMinute[m]))
	}
	fmt.Printf("  placed after more than 1 s, by minute of creation: %s\n", strings.Join(parts, ", "))
	slices.Sort(delivered)
	slices.Sort(placing)
	fmt.Printf("    of their latency, created → seen by a watch p50 / max %s / %s, seen → placed p50 / max %s / %s\n",
		quantile(delivered, 0.5).Round(time.Millisecond), delivered[len(delivered)-1].Round(time.Millisecond),
		quantile(placing, 0.5).Round(time.Millisecond), placing[len(placing)-1].Round(time.Millisecond))
}
