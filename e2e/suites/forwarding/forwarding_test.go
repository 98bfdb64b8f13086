package forwarding

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/agent/app"
	"github.com/hostfleet/hostfleet/e2e/emulators/redfish"
	"github.com/hostfleet/hostfleet/e2e/harness/agents"
	"github.com/hostfleet/hostfleet/e2e/harness/planes"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/hub/forwarder"
	"github.com/hostfleet/hostfleet/hub/hardwarecopy"
	"github.com/hostfleet/hostfleet/hub/lease"
	"github.com/hostfleet/hostfleet/hub/scheduler"
	"github.com/hostfleet/hostfleet/internal/setup"
)

func TestMain(m *testing.M) { planes.Main(m) }

const (
	tenantNS = "tenant-a"
	hostsNS  = "hosts"
	cluster  = "infra-1"
)

func cond(c *metal3api.HostClaim, t string) metav1.Condition {
	if x := meta.FindStatusCondition(c.Status.Conditions, t); x != nil {
		return *x
	}
	return metav1.Condition{}
}

// fleet starts a hub (tenant controller, scheduler, forwarder, leases,
// HardwareData copies) and a target plane running garbage collection and OCM's work
// agent for infra-1, with tenant a's set holding infra-1 and, on the
// target, a HostDeployPolicy admitting the namespaces of tenant a's
// forwarded claims (by the label the forwarder puts on them).
func fleet(t *testing.T, g Gomega) (*planes.Fleet, client.Client, client.Client) {
	ctx := context.Background()
	f := planes.ForTest(t, "hub", cluster)
	f.HubForTest(t, "hub", func(mgr ctrl.Manager) error {
		if err := (&scheduler.Reconciler{Client: mgr.GetClient(), Deadline: time.Minute}).SetupWithManager(context.Background(), mgr, setup.Options{}); err != nil {
			return err
		}
		if err := (&hardwarecopy.Reconciler{Client: mgr.GetClient()}).SetupWithManager(context.Background(), mgr, setup.Options{}); err != nil {
			return err
		}
		if err := (&lease.Reconciler{Client: mgr.GetClient()}).SetupWithManager(context.Background(), mgr, setup.Options{}); err != nil {
			return err
		}
		return (&forwarder.Reconciler{Client: mgr.GetClient()}).SetupWithManager(context.Background(), mgr, setup.Options{})
	})
	hub, infra := f.Plane("hub").Client, f.Plane(cluster).Client
	for _, o := range []client.Object{
		&clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "lab"}},
		&clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: cluster, Labels: map[string]string{clusterv1beta2.ClusterSetLabel: "lab"}}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: cluster}},
		&hostfleetv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Spec: hostfleetv1alpha1.TenantSpec{ClusterSet: "lab"}},
	} {
		g.Expect(hub.Create(ctx, o)).To(Succeed())
	}
	g.Eventually(func(g Gomega) {
		g.Expect(planes.SetClusterAvailable(ctx, hub, cluster, metav1.ConditionTrue)).To(Succeed())
		ta := &hostfleetv1alpha1.Tenant{}
		g.Expect(hub.Get(ctx, client.ObjectKey{Name: "a"}, ta)).To(Succeed())
		g.Expect(ta.Status.Clusters).To(Equal([]string{cluster}))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: hostsNS}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: hostsNS, Name: "bmc"}, StringData: map[string]string{"username": "admin", "password": "secret"}},
		&metal3api.HostDeployPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: hostsNS, Name: "tenant-a"},
			Spec: metal3api.HostDeployPolicySpec{HostClaimNamespaces: &metal3api.HostClaimNamespaces{
				HasLabels: []metal3api.NameValuePair{{Name: hostfleetv1alpha1.LabelTenant, Value: "a"}}}}},
	} {
		g.Expect(infra.Create(ctx, o)).To(Succeed())
	}
	f.StartControllerManagerForTest(t, cluster)
	f.StartWorkAgentForTest(t, "hub", cluster, cluster, 10*time.Second)
	return f, hub, infra
}

// drivenHosts makes n hosts on the target, each with its own emulated
// Redfish BMC, driven by the agent's BMC driver.
func drivenHosts(t *testing.T, g Gomega, infra client.Client, n int) map[string]*redfish.BMC {
	return drivenHostsWith(t, g, infra, make([]redfish.Hardware, n)...)
}

// drivenHostsWith makes a driven host per hardware (the emulator's default
// for a zero one).
func drivenHostsWith(t *testing.T, g Gomega, infra client.Client, hw ...redfish.Hardware) map[string]*redfish.BMC {
	bmcs := map[string]*redfish.BMC{}
	for i := range hw {
		b := redfish.Start(redfish.Options{Username: "admin", Password: "secret", Hardware: hw[i]})
		t.Cleanup(b.Close)
		name := fmt.Sprintf("rf%02d", i)
		bmcs[name] = b
		g.Expect(infra.Create(context.Background(), &metal3api.BareMetalHost{
			ObjectMeta: metav1.ObjectMeta{Namespace: hostsNS, Name: name,
				Annotations: map[string]string{hostfleetv1alpha1.AnnotationDriver: hostfleetv1alpha1.DriverBMCLib}},
			Spec: metal3api.BareMetalHostSpec{
				BMC:            metal3api.BMCDetails{Address: "redfish-virtualmedia+http://" + b.HostPort() + redfish.SystemPath, CredentialsName: "bmc"},
				BootMACAddress: fmt.Sprintf("00:11:22:33:55:%02x", i),
			},
		})).To(Succeed())
	}
	return bmcs
}

// startAgent runs the Hostfleet agent for the target in --local-claims mode
// in this process, its options then changed by more.
func startAgent(t *testing.T, f *planes.Fleet, more ...func(*app.Options)) {
	agents.ForTest(t, f.Plane("hub").Config, f.Plane(cluster).Config, cluster, func(o *app.Options) {
		o.LocalClaims, o.BMCPoll, o.BMCTimeout = true, 2*time.Second, 5*time.Second
		o.Resync = app.NewOptions().Resync // host and claim events drive it; a 2 s resync of 20 claims only costs CPU
		for _, m := range more {
			m(o)
		}
	})
}

// conditionsOf renders a claim's conditions as type=status/reason, for
// failure messages.
func conditionsOf(c *metal3api.HostClaim) []string {
	var out []string
	for _, x := range c.Status.Conditions {
		out = append(out, fmt.Sprintf("%s=%s/%s", x.Type, x.Status, x.Reason))
	}
	return out
}

func remoteClaim(name string, mut func(*metal3api.HostClaim)) *metal3api.HostClaim {
	c := &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: tenantNS, Name: name,
		Labels: map[string]string{hostfleetv1alpha1.LabelKind: hostfleetv1alpha1.KindRemote}}}
	if mut != nil {
		mut(c)
	}
	return c
}

// TestServedByTheAgent: remote claims created on the hub are placed on
// infra-1 (from its agent's inventory), forwarded by the work agent, bound
// and booted by the Hostfleet agent there, and Ready on the hub with the
// host's HardwareData copied to the hub; a power change and a one-shot
// reboot flow down (the reboot happens once); deleting a claim releases its
// host before the hub claim goes. It logs claim-created → Ready on the hub.
func TestServedByTheAgent(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const n = 20
	f, hub, infra := fleet(t, g)
	iso := redfish.ImageServer()
	t.Cleanup(iso.Close)
	bmcs := drivenHosts(t, g, infra, n)
	startAgent(t, f)
	g.Eventually(func(g Gomega) {
		inv := &hostfleetv1alpha1.HostInventory{}
		g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: cluster, Name: cluster}, inv)).To(Succeed())
		free := int32(0)
		for _, p := range inv.Status.Pools {
			free += p.Available
		}
		g.Expect(free).To(BeNumerically("==", n))
	}).WithTimeout(90*time.Second).Should(Succeed(), "the agent inspects the hosts and publishes them")

	t.Logf("%d remote claims, one every 200 ms", n)
	var mu sync.Mutex
	created := map[string]time.Time{}
	for i := range n {
		c := remoteClaim(fmt.Sprintf("web-%02d", i), func(c *metal3api.HostClaim) {
			c.Spec.PoweredOn = true
			c.Spec.Image = &metal3api.Image{URL: iso.URL + "/live.iso", DiskFormat: ptr("live-iso")}
		})
		mu.Lock()
		created[c.Name] = time.Now()
		mu.Unlock()
		g.Expect(hub.Create(ctx, c)).To(Succeed())
		time.Sleep(200 * time.Millisecond) // a steady arrival rate, not a wait for anything
	}
	latency := map[string]time.Duration{}
	g.Eventually(func(g Gomega) {
		var list metal3api.HostClaimList
		g.Expect(hub.List(ctx, &list, client.InNamespace(tenantNS))).To(Succeed())
		var waiting []string
		for i := range list.Items {
			c := &list.Items[i]
			if _, done := latency[c.Name]; done {
				continue
			}
			if cond(c, hostfleetv1alpha1.ConditionReady).Status != metav1.ConditionTrue {
				waiting = append(waiting, fmt.Sprintf("%s %v", c.Name, conditionsOf(c)))
				continue
			}
			latency[c.Name] = time.Since(created[c.Name])
		}
		g.Expect(waiting).To(BeEmpty(), "claims not Ready on the hub")
		g.Expect(latency).To(HaveLen(n))
	}).WithTimeout(4 * time.Minute).WithPolling(100 * time.Millisecond).Should(Succeed())
	var ds []time.Duration
	for _, d := range latency {
		ds = append(ds, d)
	}
	slices.Sort(ds)
	t.Logf("claim created → Ready on the hub, %d forwarded claims: median %s, max %s (min %s)",
		n, ds[len(ds)/2].Round(10*time.Millisecond), ds[len(ds)-1].Round(10*time.Millisecond), ds[0].Round(10*time.Millisecond))

	web := &metal3api.HostClaim{}
	g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: tenantNS, Name: "web-00"}, web)).To(Succeed())
	g.Expect(web.Labels).To(HaveKeyWithValue(hostfleetv1alpha1.LabelCluster, cluster))
	g.Expect(cond(web, hostfleetv1alpha1.ConditionForwarded).Reason).To(Equal(hostfleetv1alpha1.ReasonTargetBound))
	g.Expect(cond(web, hostfleetv1alpha1.ConditionProvisioned).Status).To(Equal(metav1.ConditionTrue))
	g.Expect(web.Status.PoweredOn).To(BeTrue())
	host := web.Status.BareMetalHost.Name
	g.Expect(bmcs).To(HaveKey(host))
	g.Expect(web.Status.BareMetalHost.Namespace).To(Equal(hostsNS))

	t.Log("the host's HardwareData reaches the hub as a copy of the claim")
	g.Eventually(func(g Gomega) {
		g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(web), web)).To(Succeed())
		g.Expect(web.Status.HardwareData).To(Equal(&metal3api.ObjectReference{Namespace: tenantNS, Name: "web-00"}))
		hw := &metal3api.HardwareData{}
		g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(web), hw)).To(Succeed())
		g.Expect(hw.Labels).To(HaveKeyWithValue(hostfleetv1alpha1.LabelClaimUID, string(web.UID)))
		g.Expect(hw.Labels).To(HaveKeyWithValue(hostfleetv1alpha1.LabelCluster, cluster))
		g.Expect(hw.Spec.HardwareDetails).NotTo(BeNil())
	}).WithTimeout(30 * time.Second).Should(Succeed())

	t.Log("a one-shot reboot flows down and the host reboots once; poweredOn false powers it off")
	// A soft reboot (the default) is a soft power-off, then On.
	resets := func() int {
		k := 0
		for _, a := range bmcs[host].Resets() {
			if a == "GracefulShutdown" {
				k++
			}
		}
		return k
	}
	before := resets()
	g.Eventually(func(g Gomega) {
		g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(web), web)).To(Succeed())
		web.Annotations = map[string]string{metal3api.RebootAnnotationPrefix: ""}
		g.Expect(hub.Update(ctx, web)).To(Succeed())
	}).WithTimeout(10 * time.Second).Should(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(web), web)).To(Succeed())
		g.Expect(web.Annotations).NotTo(HaveKey(metal3api.RebootAnnotationPrefix), "handled on the target, then dropped")
		g.Expect(resets()).To(Equal(before + 1))
		g.Expect(bmcs[host].Power()).To(Equal("On"), "and on again")
	}).WithTimeout(60 * time.Second).Should(Succeed())
	g.Consistently(resets).WithTimeout(5*time.Second).Should(Equal(before+1), "once, even as the work is applied again")

	g.Eventually(func(g Gomega) {
		g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(web), web)).To(Succeed())
		web.Spec.PoweredOn = false
		g.Expect(hub.Update(ctx, web)).To(Succeed())
	}).WithTimeout(10 * time.Second).Should(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(web), web)).To(Succeed())
		g.Expect(web.Status.PoweredOn).To(BeFalse())
		g.Expect(bmcs[host].Power()).To(Equal("Off"))
	}).WithTimeout(60 * time.Second).Should(Succeed())

	t.Log("deleting the hub claim releases the host before the hub claim goes")
	g.Expect(hub.Delete(ctx, web)).To(Succeed())
	start := time.Now()
	h := &metal3api.BareMetalHost{}
	g.Eventually(func(g Gomega) {
		err := hub.Get(ctx, client.ObjectKeyFromObject(web), &metal3api.HostClaim{})
		g.Expect(infra.Get(ctx, client.ObjectKey{Namespace: hostsNS, Name: host}, h)).To(Succeed())
		if apierrors.IsNotFound(err) {
			g.Expect(h.Spec.ConsumerRef).To(BeNil(), "the hub claim went before its host was released")
			return
		}
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(true).To(BeFalse(), "the hub claim is still there")
	}).WithTimeout(3 * time.Minute).WithPolling(100 * time.Millisecond).Should(Succeed())
	t.Logf("deletion on the hub → hub claim gone, host released: %s", time.Since(start).Round(100*time.Millisecond))
	g.Expect(infra.Get(ctx, client.ObjectKey{Namespace: forwarder.TargetNamespace(tenantNS), Name: "web-00"}, &metal3api.HostClaim{})).
		To(Satisfy(apierrors.IsNotFound))
}

// TestServedByBaremetalOperator: a target cluster that runs only upstream
// baremetal-operator. v0.13.2 registers a HostClaim controller whose
// Reconcile does nothing (the association code in its pkg/hostclaim is a
// library no controller calls), so the forwarded claim is applied and never
// bound: the hub says so (Forwarded, TargetNotBound; Ready False, the target
// has no status), the host stays free, and deleting the hub claim removes
// the target at once.
func TestServedByBaremetalOperator(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f, hub, infra := fleet(t, g)
	f.StartBMOForTest(t, cluster)
	g.Expect(infra.Create(ctx, &metal3api.BareMetalHost{
		ObjectMeta: metav1.ObjectMeta{Namespace: hostsNS, Name: "bmo-0"},
		Spec: metal3api.BareMetalHostSpec{
			BMC:            metal3api.BMCDetails{Address: "ipmi://127.0.0.1:6230", CredentialsName: "bmc"},
			BootMACAddress: "00:11:22:33:66:00",
		},
	})).To(Succeed())
	h := &metal3api.BareMetalHost{}
	g.Eventually(func(g Gomega) {
		g.Expect(infra.Get(ctx, client.ObjectKey{Namespace: hostsNS, Name: "bmo-0"}, h)).To(Succeed())
		g.Expect(h.Status.Provisioning.State).To(Equal(metal3api.StateAvailable))
	}).WithTimeout(90 * time.Second).Should(Succeed())

	c := remoteClaim("db", func(c *metal3api.HostClaim) { c.Labels[hostfleetv1alpha1.LabelCluster] = cluster })
	g.Expect(hub.Create(ctx, c)).To(Succeed())
	target := &metal3api.HostClaim{}
	g.Eventually(func(g Gomega) {
		g.Expect(infra.Get(ctx, client.ObjectKey{Namespace: forwarder.TargetNamespace(tenantNS), Name: "db"}, target)).To(Succeed())
		g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(c), c)).To(Succeed())
		g.Expect(cond(c, hostfleetv1alpha1.ConditionForwarded).Reason).To(Equal(hostfleetv1alpha1.ReasonTargetNotBound))
		ready := cond(c, hostfleetv1alpha1.ConditionReady)
		g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(ready.Reason).To(Equal(hostfleetv1alpha1.ReasonFeedbackIncomplete))
		g.Expect(ready.Message).To(ContainSubstring("has no status yet: no HostClaim controller there has taken it"))
	}).WithTimeout(60 * time.Second).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(infra.Get(ctx, client.ObjectKey{Namespace: hostsNS, Name: "bmo-0"}, h)).To(Succeed())
		g.Expect(h.Spec.ConsumerRef).To(BeNil())
		g.Expect(infra.Get(ctx, client.ObjectKeyFromObject(target), target)).To(Succeed())
		g.Expect(target.Status.BareMetalHost).To(BeNil())
	}).WithTimeout(5 * time.Second).Should(Succeed())

	g.Expect(hub.Delete(ctx, c)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(c), c)).To(Satisfy(apierrors.IsNotFound))
		g.Expect(infra.Get(ctx, client.ObjectKeyFromObject(target), target)).To(Satisfy(apierrors.IsNotFound))
	}).WithTimeout(time.Minute).Should(Succeed())
}

func ptr[T any](v T) *T { return &v }

// TestPausedRemoteClaim: the pause annotation of a remote claim flows to
// its target, whose agent then changes nothing on the host: a power change
// asked on the hub reaches the target claim but not the host. Deleting the
// paused claim keeps its work, and so the target and its host, until the
// pause ends; then the host is released and the claim goes.
func TestPausedRemoteClaim(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f, hub, infra := fleet(t, g)
	iso := redfish.ImageServer()
	t.Cleanup(iso.Close)
	drivenHosts(t, g, infra, 1)
	startAgent(t, f)
	web := remoteClaim("web", func(c *metal3api.HostClaim) {
		c.Labels[hostfleetv1alpha1.LabelCluster] = cluster
		c.Spec.PoweredOn = true
		c.Spec.Image = &metal3api.Image{URL: iso.URL + "/live.iso", DiskFormat: ptr("live-iso")}
	})
	g.Expect(hub.Create(ctx, web)).To(Succeed())
	key := client.ObjectKeyFromObject(web)
	target := client.ObjectKey{Namespace: forwarder.TargetNamespace(tenantNS), Name: "web"}
	hostKey := client.ObjectKey{Namespace: hostsNS, Name: "rf00"}
	g.Eventually(func(g Gomega) {
		g.Expect(hub.Get(ctx, key, web)).To(Succeed())
		g.Expect(cond(web, hostfleetv1alpha1.ConditionReady).Status).To(Equal(metav1.ConditionTrue))
	}).WithTimeout(2 * time.Minute).Should(Succeed())
	edit := func(change func(*metal3api.HostClaim)) {
		g.Eventually(func() error {
			if err := hub.Get(ctx, key, web); err != nil {
				return err
			}
			change(web)
			return hub.Update(ctx, web)
		}).WithTimeout(10 * time.Second).Should(Succeed())
	}

	t.Log("paused on the hub, and asked to power off: the target is paused and asked too, the host stays on")
	edit(func(c *metal3api.HostClaim) {
		c.Annotations = map[string]string{hostfleetv1alpha1.AnnotationPaused: "metal3.io/capm3"}
		c.Spec.PoweredOn = false
	})
	h := &metal3api.BareMetalHost{}
	g.Eventually(func(g Gomega) {
		tc := &metal3api.HostClaim{}
		g.Expect(infra.Get(ctx, target, tc)).To(Succeed())
		g.Expect(tc.Annotations).To(HaveKeyWithValue(hostfleetv1alpha1.AnnotationPaused, "metal3.io/capm3"))
		g.Expect(tc.Spec.PoweredOn).To(BeFalse())
		g.Expect(cond(tc, hostfleetv1alpha1.ConditionSynchronized).Reason).To(Equal(hostfleetv1alpha1.ReasonPaused))
		g.Expect(hub.Get(ctx, key, web)).To(Succeed())
		g.Expect(cond(web, hostfleetv1alpha1.ConditionPaused).Message).To(ContainSubstring(`paused by "metal3.io/capm3"`))
		g.Expect(cond(web, hostfleetv1alpha1.ConditionSynchronized).Reason).To(Equal(hostfleetv1alpha1.ReasonPaused), "mirrored from the target")
	}).WithTimeout(60 * time.Second).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(infra.Get(ctx, hostKey, h)).To(Succeed())
		g.Expect(h.Spec.Online).To(BeTrue())
	}).WithTimeout(3 * time.Second).Should(Succeed())

	t.Log("deleted while paused: the work, the target and the host stay until it is unpaused")
	g.Expect(hub.Delete(ctx, web)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(hub.Get(ctx, key, web)).To(Succeed())
		g.Expect(cond(web, hostfleetv1alpha1.ConditionForwarded).Reason).To(Equal(hostfleetv1alpha1.ReasonPaused))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(infra.Get(ctx, target, &metal3api.HostClaim{})).To(Succeed())
		g.Expect(infra.Get(ctx, hostKey, h)).To(Succeed())
		g.Expect(h.Spec.ConsumerRef).NotTo(BeNil())
	}).WithTimeout(3 * time.Second).Should(Succeed())
	edit(func(c *metal3api.HostClaim) { delete(c.Annotations, hostfleetv1alpha1.AnnotationPaused) })
	g.Eventually(func(g Gomega) {
		err := hub.Get(ctx, key, &metal3api.HostClaim{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "claim gone, got %v", err)
		g.Expect(infra.Get(ctx, hostKey, h)).To(Succeed())
		g.Expect(h.Spec.ConsumerRef).To(BeNil())
	}).WithTimeout(2 * time.Minute).Should(Succeed())
}
