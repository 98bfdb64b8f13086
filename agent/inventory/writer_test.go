package inventory_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/agent/inventory"
	"github.com/hostfleet/hostfleet/e2e/harness/planes"
	"github.com/hostfleet/hostfleet/hub/api/hardware"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// TestWriter publishes infra-1's inventory on the hub plane and writes at
// most once per interval however fast the hosts change.
func TestWriter(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	hub, infra := writerPlanes(t)
	g.Expect(hub.Create(ctx, planes.Tenancy("infra-1",
		hostfleetv1alpha1.ServedTenant{Name: "a", Namespaces: []string{"tenant-a"}, LabelSyncPrefixes: []string{"example.com"}}))).To(Succeed())
	g.Expect(infra.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "hosts"}})).To(Succeed())
	g.Expect(infra.Create(ctx, &metal3api.HostDeployPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "hosts", Name: "p"},
		Spec: metal3api.HostDeployPolicySpec{HostClaimNamespaces: &metal3api.HostClaimNamespaces{NameMatches: "^tenant-"}}})).To(Succeed())
	const n = 6
	for i := 0; i < n; i++ {
		h := &metal3api.BareMetalHost{ObjectMeta: metav1.ObjectMeta{Namespace: "hosts", Name: fmt.Sprintf("h%d", i),
			Labels: map[string]string{"example.com/size": []string{"s", "l"}[i%2], "other.org/x": "y"}}}
		g.Expect(infra.Create(ctx, h)).To(Succeed())
		h.Status.Provisioning.State = metal3api.StateAvailable
		h.Status.OperationalStatus = metal3api.OperationalStatusOK
		g.Expect(infra.Status().Update(ctx, h)).To(Succeed())
	}

	var seen atomic.Bool
	seen.Store(true)
	w := &inventory.Writer{Hub: hub, Managed: infra, ClusterName: "infra-1", Interval: time.Second, HostWritesSeen: func(context.Context) bool { return seen.Load() }}
	run(t, w)

	inv := &hostfleetv1alpha1.HostInventory{}
	g.Eventually(func(g Gomega) {
		g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: "infra-1", Name: "infra-1"}, inv)).To(Succeed())
		g.Expect(inv.Spec.ClusterName).To(Equal("infra-1"))
		g.Expect(inv.Status.Total).To(Equal(int32(n)))
		g.Expect(inv.Status.Available).To(Equal(int32(n)))
		g.Expect(inv.Status.Pools).To(Equal([]hostfleetv1alpha1.HostPool{
			{Labels: map[string]string{"example.com/size": "l"}, Namespaces: []string{"tenant-a"}, Total: 3, Available: 3},
			{Labels: map[string]string{"example.com/size": "s"}, Namespaces: []string{"tenant-a"}, Total: 3, Available: 3},
		}))
		g.Expect(inv.Status.LastUpdated).NotTo(BeNil())
	}).WithTimeout(20 * time.Second).Should(Succeed())

	// Nothing changes, no claim is bound: nothing more is written.
	g.Eventually(w.Writes).WithTimeout(5*time.Second).Should(Equal(int64(1)), "counted once its response is back")
	g.Consistently(w.Writes).WithTimeout(3 * time.Second).Should(Equal(int64(1)))

	// A claim bound in the second of the last write: the scheduler counts
	// it as pending while the inventory may count its host, so the
	// inventory is written once more, unchanged, with a later time.
	bound := func(name string, at metav1.Time) {
		c := &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: name,
			Labels: map[string]string{hostfleetv1alpha1.LabelCluster: "infra-1"}, Annotations: planes.PlacedBy()}}
		g.Expect(hub.Create(ctx, c)).To(Succeed())
		c.Status.Conditions = []metav1.Condition{{Type: hostfleetv1alpha1.ConditionAssociated, Status: metav1.ConditionTrue,
			Reason: "Bound", LastTransitionTime: at}}
		g.Expect(hub.Status().Update(ctx, c)).To(Succeed())
	}
	first := *inv.Status.LastUpdated
	bound("same-second", first)
	g.Eventually(func(g Gomega) {
		g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(inv), inv)).To(Succeed())
		g.Expect(inv.Status.LastUpdated.After(first.Time)).To(BeTrue(), "written again, later: %s, then %s", first, inv.Status.LastUpdated)
	}).WithTimeout(5 * time.Second).Should(Succeed())
	g.Expect(inv.Status.Available).To(Equal(int32(n)))
	g.Eventually(w.Writes).WithTimeout(5*time.Second).Should(BeNumerically(">=", 2), "counted once its response is back")
	// Settled, and a claim bound long before the last write needs nothing.
	bound("earlier", metav1.NewTime(first.Add(-time.Hour)))
	before := w.Writes()
	g.Consistently(w.Writes).WithTimeout(3 * time.Second).Should(Equal(before))

	// Many host changes in a burst: at most one write per interval.
	start := time.Now()
	for round := 0; round < 10; round++ {
		for i := 0; i < n; i++ {
			h := &metal3api.BareMetalHost{}
			g.Expect(infra.Get(ctx, client.ObjectKey{Namespace: "hosts", Name: fmt.Sprintf("h%d", i)}, h)).To(Succeed())
			h.Status.Provisioning.State = []metal3api.ProvisioningState{metal3api.StateAvailable, metal3api.StateInspecting}[(round+i)%2]
			g.Expect(infra.Status().Update(ctx, h)).To(Succeed())
		}
	}
	changes := 10 * n
	elapsed := time.Since(start)
	// Let the last state settle, then count.
	g.Eventually(func(g Gomega) {
		g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(inv), inv)).To(Succeed())
		g.Expect(inv.Status.Available).To(Equal(int32(n / 2)))
	}).WithTimeout(10 * time.Second).Should(Succeed())
	writes := w.Writes() - before
	limit := int64(time.Since(start)/time.Second) + 3
	t.Logf("%d host changes in %s led to %d inventory writes (bound %d)", changes, elapsed.Round(time.Millisecond), writes, limit)
	g.Expect(writes).To(BeNumerically("<=", limit))
	g.Expect(writes).To(BeNumerically("<", changes))

	// While the cache does not show the agent's own host writes, nothing is
	// written: the inventory would miss a binding its time says it counts.
	seen.Store(false)
	// One tick skipped: any write begun before is done.
	skips := w.Skips()
	g.Eventually(w.Skips).WithTimeout(5 * time.Second).Should(BeNumerically(">", skips))
	before = w.Writes()
	h := &metal3api.BareMetalHost{}
	// h1 was left available by the burst.
	g.Expect(infra.Get(ctx, client.ObjectKey{Namespace: "hosts", Name: "h1"}, h)).To(Succeed())
	g.Expect(h.Status.Provisioning.State).To(Equal(metal3api.StateAvailable))
	h.Status.Provisioning.State = metal3api.StateInspecting
	g.Expect(infra.Status().Update(ctx, h)).To(Succeed())
	g.Consistently(w.Writes).WithTimeout(3 * time.Second).Should(Equal(before))
	seen.Store(true)
	g.Eventually(func(g Gomega) {
		g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(inv), inv)).To(Succeed())
		g.Expect(inv.Status.Available).To(Equal(int32(n/2 - 1)))
	}).WithTimeout(10 * time.Second).Should(Succeed())

	t.Log("a FirmwareBaseline reaches the ClusterTenancy: each pool counts its hosts by how they stand against it, as last read")
	ct := &hostfleetv1alpha1.ClusterTenancy{}
	g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: "infra-1", Name: hostfleetv1alpha1.TenancyName}, ct)).To(Succeed())
	ct.Spec.FirmwareBaselines = []hostfleetv1alpha1.ServedBaseline{{Name: "accounts",
		Spec: hostfleetv1alpha1.FirmwareBaselineSpec{BMCAccounts: &hostfleetv1alpha1.BMCAccountPolicy{}}}}
	g.Expect(hub.Update(ctx, ct)).To(Succeed())
	g.Expect(infra.Get(ctx, client.ObjectKey{Namespace: "hosts", Name: "h0"}, h)).To(Succeed())
	h.Annotations = map[string]string{hostfleetv1alpha1.AnnotationBaselineObserved: `{"Accounts":["admin"],"Own":"admin"}`}
	g.Expect(infra.Update(ctx, h)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(inv), inv)).To(Succeed())
		g.Expect(inv.Status.Pools).To(HaveLen(2))
		g.Expect(inv.Status.Pools[0].Firmware).To(Equal(&hostfleetv1alpha1.FirmwareStanding{Unknown: 3}), "never read")
		g.Expect(inv.Status.Pools[1].Firmware).To(Equal(&hostfleetv1alpha1.FirmwareStanding{Current: 1, Unknown: 2}))
	}).WithTimeout(10 * time.Second).Should(Succeed())
}

// TestWriterProfiles: the hosts' HardwareData (inspection's, or the BMC
// driver's with its GPUs) become the inventory's profiles, each once; a
// host inspected later joins its profile's pool.
func TestWriterProfiles(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	hub, infra := writerPlanes(t)
	g.Expect(hub.Create(ctx, planes.Tenancy("infra-1", hostfleetv1alpha1.ServedTenant{Name: "a", Namespaces: []string{"tenant-a"}}))).To(Succeed())
	g.Expect(infra.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "hosts"}})).To(Succeed())
	g.Expect(infra.Create(ctx, &metal3api.HostDeployPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "hosts", Name: "p"},
		Spec: metal3api.HostDeployPolicySpec{HostClaimNamespaces: &metal3api.HostClaimNamespaces{NameMatches: "^tenant-"}}})).To(Succeed())
	small := &metal3api.HardwareDetails{CPU: metal3api.CPU{Count: 16, Arch: "x86_64"}, RAMMebibytes: 65536,
		NIC: []metal3api.NIC{{Name: "eno1", MAC: "00:00:00:00:00:01", SpeedGbps: 10}}}
	inspected := func(name string, hw *metal3api.HardwareDetails, gpus string) {
		hd := &metal3api.HardwareData{ObjectMeta: metav1.ObjectMeta{Namespace: "hosts", Name: name}, Spec: metal3api.HardwareDataSpec{HardwareDetails: hw}}
		if gpus != "" {
			hd.Annotations = map[string]string{hardware.AnnotationGPUs: gpus}
		}
		g.Expect(infra.Create(ctx, hd)).To(Succeed())
	}
	for i := range 4 {
		h := &metal3api.BareMetalHost{ObjectMeta: metav1.ObjectMeta{Namespace: "hosts", Name: fmt.Sprintf("h%d", i)}}
		g.Expect(infra.Create(ctx, h)).To(Succeed())
		h.Status.Provisioning.State = metal3api.StateAvailable
		g.Expect(infra.Status().Update(ctx, h)).To(Succeed())
	}
	inspected("h0", small, "")
	other := small.DeepCopy()
	other.NIC[0].MAC = "00:00:00:00:00:02" // the same make: MACs are not in the view
	inspected("h1", other, "")
	big := &metal3api.HardwareDetails{CPU: metal3api.CPU{Count: 64, Arch: "x86_64"}, RAMMebibytes: 524288}
	inspected("h2", big, `[{"vendor":"NVIDIA","model":"A100"}]`)

	w := &inventory.Writer{Hub: hub, Managed: infra, ClusterName: "infra-1", Interval: time.Second}
	run(t, w)
	smallProfile, bigProfile := hardware.Profile(hardware.Of(small)), hardware.Profile(hardware.OfData(&metal3api.HardwareData{
		ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{hardware.AnnotationGPUs: `[{"vendor":"NVIDIA","model":"A100"}]`}},
		Spec:       metal3api.HardwareDataSpec{HardwareDetails: big}}))
	pools := func(small, none int32) []hostfleetv1alpha1.HostPool {
		out := []hostfleetv1alpha1.HostPool{}
		if none > 0 {
			out = append(out, hostfleetv1alpha1.HostPool{Namespaces: []string{"tenant-a"}, Total: none, Available: none})
		}
		return append(out,
			hostfleetv1alpha1.HostPool{Namespaces: []string{"tenant-a"}, Profile: smallProfile, Total: small, Available: small},
			hostfleetv1alpha1.HostPool{Namespaces: []string{"tenant-a"}, Profile: bigProfile, Total: 1, Available: 1})
	}
	inv := &hostfleetv1alpha1.HostInventory{}
	g.Eventually(func(g Gomega) {
		g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: "infra-1", Name: "infra-1"}, inv)).To(Succeed())
		g.Expect(inv.Status.Pools).To(ConsistOf(pools(2, 1)))
		g.Expect(inv.Status.Profiles).To(HaveLen(2))
	}).WithTimeout(20 * time.Second).Should(Succeed())
	for _, p := range inv.Status.Profiles {
		if p.Name == bigProfile {
			g.Expect(p.Hardware.GPUs).To(Equal([]hostfleetv1alpha1.HardwareGPU{{Vendor: "NVIDIA", Model: "A100"}}))
			g.Expect(p.Hardware.CPU.Count).To(Equal(int64(64)))
		}
	}

	inspected("h3", small, "")
	g.Eventually(func(g Gomega) {
		g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(inv), inv)).To(Succeed())
		g.Expect(inv.Status.Pools).To(ConsistOf(pools(3, 0)))
	}).WithTimeout(20*time.Second).Should(Succeed(), "h3, once inspected, joins its profile's pool")
}

// TestWriterSettlesWithinSeconds: a claim bound in the second of a write is
// settled by writes a second apart, not a whole interval later, and the
// writes stop once the inventory's time is past the binding. A claim the
// hub forwarded here is not among the agent's hub claims: its copy here,
// bound by the agent, settles it (the hub gives the claim the copy's
// Associated time; without this, the scheduler counted the claim's host
// twice until the inventory next changed, and held a free host back).
func TestWriterSettlesWithinSeconds(t *testing.T) {
	t.Run("placed", func(t *testing.T) { settles(t, false) })
	t.Run("forwarded", func(t *testing.T) { settles(t, true) })
}

func settles(t *testing.T, forwarded bool) {
	g := NewWithT(t)
	ctx := context.Background()
	hub, infra := writerPlanes(t)
	// A claim whose binding is in the second that starts in one to two
	// seconds: the first writes come before or in it, and each is
	// unsettled until one is written after it.
	boundAt := metav1.NewTime(time.Now().Truncate(time.Second).Add(2 * time.Second))
	c := &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "c",
		Labels: map[string]string{hostfleetv1alpha1.LabelCluster: "infra-1"}, Annotations: planes.PlacedBy()}}
	on := hub
	if forwarded {
		c.Namespace, c.Labels, c.Annotations = "hf-tenant-a", nil, nil
		g.Expect(infra.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: c.Namespace}})).To(Succeed())
		on = infra
	}
	g.Expect(on.Create(ctx, c)).To(Succeed())
	c.Status.Conditions = []metav1.Condition{{Type: hostfleetv1alpha1.ConditionAssociated, Status: metav1.ConditionTrue,
		Reason: "Bound", LastTransitionTime: boundAt}}
	g.Expect(on.Status().Update(ctx, c)).To(Succeed())

	// An interval far longer than the test: only the settling writes can
	// write after the first.
	w := &inventory.Writer{Hub: hub, Managed: infra, LocalClaims: forwarded, ClusterName: "infra-1", Interval: time.Hour}
	run(t, w)

	inv := &hostfleetv1alpha1.HostInventory{}
	g.Eventually(func(g Gomega) {
		g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: "infra-1", Name: "infra-1"}, inv)).To(Succeed())
		g.Expect(inv.Status.LastUpdated).NotTo(BeNil())
		g.Expect(inv.Status.LastUpdated.After(boundAt.Time)).To(BeTrue(), "written after the binding's second: %s", inv.Status.LastUpdated)
	}).WithTimeout(10 * time.Second).Should(Succeed())
	g.Expect(w.Writes()).To(BeNumerically(">=", 2))
	// Settled: no more writes.
	settled := w.Writes()
	g.Consistently(w.Writes).WithTimeout(3 * time.Second).Should(Equal(settled))
}

// writerPlanes starts a hub and an infrastructure plane, with infra-1's
// namespace and a tenant namespace on the hub.
func writerPlanes(t *testing.T) (hub, infra client.Client) {
	g := NewWithT(t)
	f := planes.ForTest(t, "hub", "infra-1")
	hub, infra = f.Plane("hub").Client, f.Plane("infra-1").Client
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "infra-1"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant-a", Labels: map[string]string{hostfleetv1alpha1.LabelTenant: "a"}}},
	} {
		g.Expect(hub.Create(context.Background(), o)).To(Succeed())
	}
	return hub, infra
}

// run runs the writer until the test ends.
func run(t *testing.T, w *inventory.Writer) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- w.Start(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}
