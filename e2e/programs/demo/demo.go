// Package demo is what `make demo` runs: a hub and three infrastructure
// clusters as local control planes, a real baremetal-operator (test mode) on
// the first two, BMC emulators (Redfish and IPMI) on the third whose hosts
// the agent drives itself, hostfleet-hub and one hostfleet-agent per cluster
// as processes, a tenant, hosts and claims, and a short report of each claim
// going Associated and Ready.
package demo

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/e2e/emulators/ipmisim"
	"github.com/hostfleet/hostfleet/e2e/emulators/redfish"
	"github.com/hostfleet/hostfleet/e2e/harness/planes"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/hub/kubectl"
)

// Options tune Run.
type Options struct {
	// Bin holds hostfleet-hub and hostfleet-agent.
	Bin string
	// Dir receives kubeconfigs and logs.
	Dir string
	// Out receives the report.
	Out io.Writer
	// ExitWhenReady returns once every claim is Ready instead of waiting
	// for ctx to end.
	ExitWhenReady bool
	// Timeout bounds the wait for claims to go Ready.
	Timeout time.Duration
}

// infras run baremetal-operator; edge's hosts have none: the agent drives
// them through their BMCs.
var infras = []string{"infra-1", "infra-2"}

const edge = "infra-3"

// apps is tenant acme's workload cluster: its Nodes run on the claimed
// hosts, and its agent (workload role) labels them from the claims.
const apps = "apps"

// claims of the demo: name, cluster (pinned by the tenant), image.
var claims = []struct {
	name, cluster, image string
	size                 string
}{
	{"web-1", "infra-1", "http://images.example/ubuntu-24.04.qcow2", "medium"},
	{"web-2", "", "http://images.example/ubuntu-24.04.qcow2", "medium"},
	{"db-1", "", "", "large"},
	{"edge-1", edge, liveISO, "medium"},
	{"edge-2", edge, "", "large"},
}

// liveISO stands for the demo's image server, which Run starts.
const liveISO = "live-iso"

// run is one run of the demo: what it started, for the steps after.
type run struct {
	o     Options
	f     *planes.Fleet
	hub   client.Client
	start time.Time
	rf    *redfish.BMC
	sim   *ipmisim.BMC
	// closers stop what steps started (their BMC emulators).
	closers []func()
	// liveURL is edge-1's live ISO, eraseURL the erase image, on the
	// demo's image server.
	liveURL, eraseURL string
}

func (r *run) say(format string, a ...any) { fmt.Fprintf(r.o.Out, format+"\n", a...) }

// Run runs the demo until ctx ends (or, with ExitWhenReady, until every
// claim is Ready), and stops everything it started.
func Run(ctx context.Context, o Options) error {
	r := &run{o: o, start: time.Now()}
	r.say("Starting five control planes (hub, infra-1, infra-2, infra-3, and apps, a workload cluster): real kube-apiserver and etcd processes…")
	f, err := planes.Start(ctx, planes.Options{Dir: o.Dir}, append(append([]string{"hub"}, infras...), edge, apps)...)
	if err != nil {
		return err
	}
	defer func() {
		r.say("Stopping the hub, the agents, baremetal-operator and the control planes…")
		_ = f.Stop()
	}()
	r.f, r.hub = f, f.Plane("hub").Client
	r.say("  up in %s", time.Since(r.start).Round(100*time.Millisecond))
	images := redfish.ImageServer()
	defer images.Close()
	r.liveURL, r.eraseURL = images.URL+"/edge-live.iso", images.URL+"/erase.iso"
	// As slow as a real server: power changes take 3 s, media and
	// inventory 1 s; its erase image runs 3 s.
	r.rf = redfish.Start(redfish.Options{TLS: true, Hardware: redfish.DefaultHardware("EDGE0001"),
		Latency: redfish.Latency{PowerChange: 3 * time.Second, MediaInsert: time.Second, Inventory: time.Second}, Erase: 3 * time.Second})
	defer r.rf.Close()
	defer func() {
		if r.sim != nil {
			r.sim.Close()
		}
		for _, c := range r.closers {
			c()
		}
	}()
	for _, step := range []func(context.Context) error{r.hosts, r.processes, r.tenant, r.claims, r.features, r.service, r.care, r.heal, r.plugin} {
		if err := step(ctx); err != nil {
			return err
		}
	}
	r.lookAround()
	if o.ExitWhenReady {
		return nil
	}
	r.say("Press Ctrl-C to stop.")
	<-ctx.Done()
	return nil
}

// hosts sets up the hub's objects and every cluster's hosts: under
// baremetal-operator on infra-1 and infra-2, behind BMC emulators on edge.
func (r *run) hosts(ctx context.Context) error {
	// kube-controller-manager on the hub keeps ResourceQuota status, without
	// which the API server cannot enforce a Tenant's maxClaims.
	if _, err := r.f.StartControllerManager("hub"); err != nil {
		return fmt.Errorf("kube-controller-manager on the hub: %w", err)
	}
	if err := setUpHub(ctx, r.hub); err != nil {
		return err
	}
	for i, name := range infras {
		if _, err := r.f.StartBMO(name); err != nil {
			return err
		}
		if err := setUpInfra(ctx, r.f.Plane(name).Client, i); err != nil {
			return err
		}
	}
	r.say("baremetal-operator (test mode) drives 2 BareMetalHosts on each of infra-1 and infra-2")
	ipmiDir := filepath.Join(r.o.Dir, "ipmi_sim")
	if err := os.MkdirAll(ipmiDir, 0o755); err != nil {
		return err
	}
	sim, err := ipmisim.Start(ipmiDir, "admin", "password")
	if err != nil {
		return err
	}
	r.sim = sim
	if err := sim.EraseByNetwork(3 * time.Second); err != nil { // the PXE server's erase image
		return err
	}
	if err := setUpEdge(ctx, r.f.Plane(edge).Client, r.rf, sim); err != nil {
		return err
	}
	r.say("infra-3 has no baremetal-operator: its agent drives server-0 through an emulated Redfish BMC (%s,", r.rf.HostPort())
	r.say("as slow as hardware: a power change takes 3 s)")
	r.say("and server-1 through ipmi_sim (IPMI, %s)", sim.Address())
	return nil
}

// processes starts the hub, an agent per cluster and, on edge, OCM's work
// agent.
func (r *run) processes(ctx context.Context) error {
	f, hubKubeconfig := r.f, r.f.Plane("hub").Kubeconfig
	// The hub serves its webhook on loopback and keeps its certificate in
	// its namespace.
	port, err := planes.FreePort()
	if err != nil {
		return err
	}
	if err := create(ctx, r.hub, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "hostfleet-system"}}); err != nil {
		return err
	}
	webhook := fmt.Sprintf("127.0.0.1:%d", port)
	if _, err := f.Run("hostfleet-hub", "hub", filepath.Join(r.o.Bin, "hostfleet-hub"), []string{
		"--kubeconfig=" + hubKubeconfig, "--leader-elect=false", "--bind-deadline=1m",
		"--webhook-bind-address=" + webhook, "--webhook-url=https://" + webhook}); err != nil {
		return err
	}
	for _, name := range append(append([]string(nil), infras...), edge) {
		if _, err := f.Run("hostfleet-agent-"+name, name, filepath.Join(r.o.Bin, "hostfleet-agent"), []string{
			"--hub-kubeconfig=" + hubKubeconfig, "--managed-kubeconfig=" + f.Plane(name).Kubeconfig,
			"--cluster-name=" + name, "--leader-elect=false", "--retry-after=5s", "--inventory-interval=2s",
			"--health-lease=false", "--bmc-poll=5s", fmt.Sprintf("--local-claims=%t", name == edge),
			"--erase-image=" + r.eraseURL, "--erase-pxe"}); err != nil {
			return err
		}
	}
	if _, err := f.Run("hostfleet-agent-"+apps, apps, filepath.Join(r.o.Bin, "hostfleet-agent"), []string{
		"--hub-kubeconfig=" + hubKubeconfig, "--managed-kubeconfig=" + f.Plane(apps).Kubeconfig,
		"--cluster-name=" + apps, "--role=workload", "--leader-elect=false", "--health-lease=false", "--label-sync-interval=10s"}); err != nil {
		return err
	}
	// infra-3 also takes remote claims: OCM's work agent applies what the
	// hub forwards there. No registration agent runs here, so the demo
	// reports the cluster Available, as one would.
	if _, err := f.StartWorkAgent("hub", edge, edge, 10*time.Second); err != nil {
		return err
	}
	if err := planes.SetClusterAvailable(ctx, r.hub, edge, metav1.ConditionTrue); err != nil {
		return err
	}
	r.say("hostfleet-hub, one hostfleet-agent per infrastructure cluster and one on apps (workload role) are running")
	return nil
}

// tenant registers tenant acme and waits for it to be Ready.
func (r *run) tenant(ctx context.Context) error {
	if err := createTenant(ctx, r.hub); err != nil {
		return err
	}
	if err := poll(ctx, r.o.Timeout, func() (bool, error) {
		t := &hostfleetv1alpha1.Tenant{}
		if err := r.hub.Get(ctx, client.ObjectKey{Name: "acme"}, t); err != nil {
			return false, err
		}
		return meta.IsStatusConditionTrue(t.Status.Conditions, hostfleetv1alpha1.ConditionReady), nil
	}); err != nil {
		return fmt.Errorf("tenant acme not Ready: %w", err)
	}
	r.say("Tenant acme registered: namespace tenant-acme, admin alice, cluster set lab (infra-1, infra-2, infra-3); its hosts erase Metadata at release")
	return nil
}

// claims creates the demo's claims and reports each one's progress until
// all are Ready.
func (r *run) claims(ctx context.Context) error {
	if err := createClaims(ctx, r.hub, r.liveURL); err != nil {
		return err
	}
	r.say("Claims created in tenant-acme: web-1 pinned by the tenant to infra-1 and web-2 (medium hosts, an image and")
	r.say("cloud-init user data each), db-1 (a large host, powered on, no image); the hub scheduler places web-2 and db-1.")
	r.say("edge-1 (a live ISO, booted by virtual media) and edge-2 (powered on, no image) are pinned to infra-3.")
	r.say("")
	seen := map[string]string{}
	err := poll(ctx, r.o.Timeout, func() (bool, error) {
		var list metal3api.HostClaimList
		if err := r.hub.List(ctx, &list, client.InNamespace("tenant-acme")); err != nil {
			return false, err
		}
		ready := 0
		for i := range list.Items {
			c := &list.Items[i]
			if state := describe(c); seen[c.Name] != state {
				seen[c.Name] = state
				r.say("  %-6s %s", c.Name, state)
			}
			if meta.IsStatusConditionTrue(c.Status.Conditions, hostfleetv1alpha1.ConditionReady) {
				ready++
			}
		}
		return ready == len(claims), nil
	})
	if err != nil {
		return fmt.Errorf("claims not Ready (logs in %s): %w", r.o.Dir, err)
	}
	r.say("")
	r.say("All %d claims are Ready, %s after the start.", len(claims), time.Since(r.start).Round(time.Second))
	return summary(ctx, r.o.Out, r.hub)
}

// features shows, once the claims are Ready, the quota, Node labels, a
// power cycle through a slow BMC and a forwarded claim.
func (r *run) features(ctx context.Context) error {
	r.say("")
	if err := quotaRefuses(ctx, r.hub); err != nil {
		return err
	}
	r.say("A sixth claim is refused: tenant acme's maxClaims is 5 (a ResourceQuota the API server enforces).")
	r.say("")
	if err := nodeLabels(ctx, r.hub, r.f.Plane("infra-1").Client, r.f.Plane(apps).Client, r.o.Timeout, r.say); err != nil {
		return fmt.Errorf("labels on the Nodes of apps (logs in %s): %w", r.o.Dir, err)
	}
	r.say("")
	if err := powerCycle(ctx, r.hub, r.rf, r.o.Timeout, r.say); err != nil {
		return fmt.Errorf("power cycle (logs in %s): %w", r.o.Dir, err)
	}
	r.say("")
	if err := forward(ctx, r.hub, r.o.Timeout, r.say); err != nil {
		return fmt.Errorf("remote claim (logs in %s): %w", r.o.Dir, err)
	}
	r.say("")
	return nil
}

// plugin shows `kubectl hostfleet`: the claims, why one is what it is,
// and the host use the hub counted (the claims released so far).
func (r *run) plugin(ctx context.Context) error {
	kc := "--kubeconfig=" + r.f.Plane("hub").Kubeconfig
	for _, args := range [][]string{{"claims", "-n", "tenant-acme"}, {"why", "web-1", "-n", "tenant-acme", "--events", "3"}, {"usage"}} {
		r.say("$ kubectl hostfleet %s", strings.Join(args, " "))
		if err := kubectl.Main(ctx, append(args, kc), r.o.Out); err != nil {
			return fmt.Errorf("kubectl hostfleet %s: %w", args[0], err)
		}
		r.say("")
	}
	return nil
}

// lookAround says where to look with kubectl and ipmitool.
func (r *run) lookAround() {
	f := r.f
	r.say("Look around with kubectl:")
	for _, name := range append(append([]string{"hub"}, infras...), edge, apps) {
		r.say("  %-8s kubectl --kubeconfig %s …", name, f.Plane(name).Kubeconfig)
	}
	r.say("  e.g.     kubectl --kubeconfig %s get hostclaims,hardwaredata -n tenant-acme", f.Plane("hub").Kubeconfig)
	r.say("           kubectl --kubeconfig %s get baremetalhosts -n hosts", f.Plane("infra-1").Kubeconfig)
	r.say("           kubectl --kubeconfig %s get baremetalhosts -n hosts   # driven by the agent", f.Plane(edge).Kubeconfig)
	r.say("           kubectl --kubeconfig %s get hostclaims -n hf-tenant-acme   # edge-fwd, forwarded", f.Plane(edge).Kubeconfig)
	r.say("           kubectl --kubeconfig %s get manifestworks -n %s", f.Plane("hub").Kubeconfig, edge)
	r.say("           kubectl --kubeconfig %s get nodes -L example.com/rack,example.com/size   # labelled from the hosts", f.Plane(apps).Kubeconfig)
	r.say("The Redfish BMC at https://%s (admin/password) and ipmi_sim at %s answer too, e.g.", r.rf.HostPort(), r.sim.Address())
	r.say("           ipmitool -I lanplus -C 3 -H 127.0.0.1 -p %d -U admin -P password chassis power status", r.sim.Port)
	r.say("Logs of every process are in %s", r.o.Dir)
}

// powerCycle powers edge-1 off and on again through its slow BMC, and says
// what the claim said meanwhile and how many commands the BMC received.
func powerCycle(ctx context.Context, hub client.Client, rf *redfish.BMC, timeout time.Duration, say func(string, ...any)) error {
	c := &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-acme", Name: "edge-1"}}
	for _, on := range []bool{false, true} {
		before := len(rf.Resets())
		start := time.Now()
		patch := client.RawPatch(types.MergePatchType, fmt.Appendf(nil, `{"spec":{"poweredOn":%t}}`, on))
		if err := hub.Patch(ctx, c, patch); err != nil {
			return fmt.Errorf("power edge-1 %s: %w", map[bool]string{false: "off", true: "on"}[on], err)
		}
		changing := ""
		if err := poll(ctx, timeout, func() (bool, error) {
			if err := hub.Get(ctx, client.ObjectKeyFromObject(c), c); err != nil {
				return false, err
			}
			r := meta.FindStatusCondition(c.Status.Conditions, hostfleetv1alpha1.ConditionReady)
			if r == nil || r.ObservedGeneration != c.Generation {
				return false, nil
			}
			if r.Reason == hostfleetv1alpha1.ReasonPowerChanging {
				changing = r.Message // the last one seen: what the BMC reported last
			}
			return r.Status == metav1.ConditionTrue && c.Status.PoweredOn == on, nil
		}); err != nil {
			return fmt.Errorf("edge-1 powered %t: %w", on, err)
		}
		if changing == "" {
			changing = "not seen"
		}
		say("edge-1 powered %s: Ready again %s later, once the BMC reported it; meanwhile Ready was False, PowerChanging:",
			map[bool]string{true: "on", false: "off"}[on], time.Since(start).Round(100*time.Millisecond))
		say("  %q; the BMC received %v", changing, rf.Resets()[before:])
	}
	return nil
}

func describe(c *metal3api.HostClaim) string {
	assoc := meta.FindStatusCondition(c.Status.Conditions, hostfleetv1alpha1.ConditionAssociated)
	ready := meta.FindStatusCondition(c.Status.Conditions, hostfleetv1alpha1.ConditionReady)
	sched := meta.FindStatusCondition(c.Status.Conditions, hostfleetv1alpha1.ConditionScheduled)
	switch {
	case ready != nil && ready.Status == metav1.ConditionTrue:
		return "Ready       " + ready.Message
	case assoc != nil && assoc.Status == metav1.ConditionTrue && ready != nil:
		return "Associated  " + ready.Message
	case assoc != nil:
		return "waiting     " + assoc.Message
	case sched != nil:
		return "scheduled   " + sched.Message
	default:
		return "created"
	}
}

func summary(ctx context.Context, out io.Writer, hub client.Client) error {
	var list metal3api.HostClaimList
	if err := hub.List(ctx, &list, client.InNamespace("tenant-acme")); err != nil {
		return err
	}
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Name < list.Items[j].Name })
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "  CLAIM\tCLUSTER\tHOST\tPOWER\tHARDWARE\tSYNCED LABELS")
	for _, c := range list.Items {
		host, hw, power := "-", "-", "off"
		if c.Status.BareMetalHost != nil {
			host = c.Status.BareMetalHost.Namespace + "/" + c.Status.BareMetalHost.Name
		}
		if c.Status.HardwareData != nil {
			hw = "hardwaredata/" + c.Status.HardwareData.Name
		}
		if c.Status.PoweredOn {
			power = "on"
		}
		var synced []string
		for k, v := range c.Labels {
			if strings.HasPrefix(k, "example.com/") {
				synced = append(synced, k+"="+v)
			}
		}
		sort.Strings(synced)
		fmt.Fprintf(w, "  %s\t%s\t%s\t%s\t%s\t%s\n", c.Name, c.Labels[hostfleetv1alpha1.LabelCluster], host, power, hw, strings.Join(synced, ","))
	}
	return w.Flush()
}

// forward gives edge-2's host back and asks for it again as a remote claim:
// the hub forwards it to infra-3 over a ManifestWork, OCM's work agent
// applies it there, infra-3's agent (--local-claims) binds and powers the
// host, and the status comes back to the hub.
func forward(ctx context.Context, hub client.Client, timeout time.Duration, say func(string, ...any)) error {
	if err := hub.Delete(ctx, &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-acme", Name: "edge-2"}}); err != nil {
		return err
	}
	if err := poll(ctx, timeout, func() (bool, error) {
		err := hub.Get(ctx, client.ObjectKey{Namespace: "tenant-acme", Name: "edge-2"}, &metal3api.HostClaim{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	}); err != nil {
		return fmt.Errorf("edge-2 not released: %w", err)
	}
	say("edge-2 deleted: the agent powered the IPMI host off and released it; tenant acme erases Metadata at release,")
	say("so server-1 boots the erase image from the network and is free once it has powered itself off.")
	start := time.Now()
	c := &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-acme", Name: "edge-fwd",
		Labels: map[string]string{hostfleetv1alpha1.LabelKind: hostfleetv1alpha1.KindRemote, hostfleetv1alpha1.LabelCluster: edge}},
		Spec: metal3api.HostClaimSpec{PoweredOn: true, HostSelector: metal3api.HostSelector{MatchLabels: map[string]string{"example.com/size": "large"}}}}
	// The quota's count of claims follows edge-2's deletion a moment
	// later (kube-controller-manager recounts it): until then the claim is
	// refused, and created again.
	if err := poll(ctx, timeout, func() (bool, error) {
		err := create(ctx, hub, c.DeepCopy())
		return err == nil, err
	}); err != nil {
		return fmt.Errorf("create edge-fwd: %w", err)
	}
	say("edge-fwd, a remote claim (hostfleet.io/kind=remote) for the same host, is forwarded to infra-3 as a ManifestWork:")
	if err := poll(ctx, timeout, func() (bool, error) {
		if err := hub.Get(ctx, client.ObjectKeyFromObject(c), c); err != nil {
			return false, err
		}
		return meta.IsStatusConditionTrue(c.Status.Conditions, hostfleetv1alpha1.ConditionReady), nil
	}); err != nil {
		if fwd := meta.FindStatusCondition(c.Status.Conditions, hostfleetv1alpha1.ConditionForwarded); fwd != nil {
			return fmt.Errorf("edge-fwd not Ready (Forwarded %s, %s: %s): %w", fwd.Status, fwd.Reason, fwd.Message, err)
		}
		return fmt.Errorf("edge-fwd not Ready: %w", err)
	}
	fwd := meta.FindStatusCondition(c.Status.Conditions, hostfleetv1alpha1.ConditionForwarded)
	say("  edge-fwd Ready after %s; Forwarded: %s", time.Since(start).Round(100*time.Millisecond), fwd.Message)
	say("  on infra-3 it is a plain metal3 HostClaim in namespace hf-tenant-acme, bound by infra-3's agent (--local-claims)")
	return nil
}

// quotaRefuses shows maxClaims at work: with the tenant's five claims made, a
// sixth is refused by the API server's quota admission (once
// kube-controller-manager has counted the five).
func quotaRefuses(ctx context.Context, hub client.Client) error {
	sixth := &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-acme", Name: "one-too-many"}}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		err := hub.Create(ctx, sixth, client.DryRunAll)
		if apierrors.IsForbidden(err) && strings.Contains(err.Error(), "exceeded quota") {
			return nil
		}
		if err != nil && !apierrors.IsForbidden(err) {
			return fmt.Errorf("try a sixth claim: %w", err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("a sixth claim was not refused by the quota: %v", err)
		case <-time.After(time.Second):
		}
	}
}
