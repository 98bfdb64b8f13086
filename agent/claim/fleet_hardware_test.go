package claim_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/agent/app"
	"github.com/hostfleet/hostfleet/e2e/harness/planes"
	"github.com/hostfleet/hostfleet/hub/api/hardware"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/hub/scheduler"
	"github.com/hostfleet/hostfleet/internal/setup"
)

// machine is a host of the fleet test: its cluster, name and hardware.
type machine struct {
	cluster, name string
	cores, memGiB int
	disk          metal3api.DiskType
	diskGiB       int
	nicGbps       int
	gpu           string
}

// TestFleetByHardware: three clusters, six hardware profiles between them,
// the hub's scheduler and each cluster's agent. A claim nothing meets is
// not placed, and its Scheduled condition names each cluster's closest
// hardware and what it lacks; claims asking for cores, memory, an NVMe
// disk, a 100 Gb/s NIC and a GPU are each placed and bound to the one host
// that has it (the least that meets it, where two do); a host class by
// hardware holds a second GPU claim back.
func TestFleetByHardware(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	clusters := []string{"infra-1", "infra-2", "infra-3"}
	f := schedulerFleet(t, g, clusters, time.Hour, hostfleetv1alpha1.TenantSpec{})
	hub := f.Plane("hub").Client

	machines := []machine{
		{"infra-1", "small", 16, 64, metal3api.SSD, 480, 10, ""},
		{"infra-1", "memory", 32, 1024, metal3api.SSD, 480, 10, ""},
		{"infra-2", "nvme", 32, 128, metal3api.NVME, 3840, 25, ""},
		{"infra-2", "fast", 32, 128, metal3api.SSD, 960, 100, ""},
		{"infra-3", "gpu", 64, 512, metal3api.NVME, 1920, 25, "H100 80GB HBM3"},
		{"infra-3", "big", 128, 512, metal3api.SSD, 960, 25, ""},
	}
	for _, c := range clusters {
		hostInfra(t, f.Plane(c).Client)
	}
	for i, m := range machines {
		infra := f.Plane(m.cluster).Client
		h := bmh(m.name, i, nil)
		mustCreate(t, infra, h)
		h.Status.Provisioning.State, h.Status.OperationalStatus = metal3api.StateAvailable, metal3api.OperationalStatusOK
		g.Expect(infra.Status().Update(ctx, h)).To(Succeed())
		mustCreate(t, infra, hardwareDataOf(g, m))
	}
	for _, c := range clusters {
		startAgentWith(t, f.Plane("hub").Config, f.Plane(c).Config, c, 2, func(o *app.Options) { o.InventoryInterval = time.Second })
	}
	g.Eventually(func(g Gomega) {
		for _, c := range clusters {
			inv := &hostfleetv1alpha1.HostInventory{}
			g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: c, Name: c}, inv)).To(Succeed())
			g.Expect(inv.Status.Profiles).To(HaveLen(2), c)
			g.Expect(inv.Status.Available).To(BeNumerically("==", 2), c)
		}
	}).WithTimeout(time.Minute).Should(Succeed(), "each agent publishes its two profiles")

	asking := func(name, expr string) *metal3api.HostClaim {
		c := &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: tenantNS, Name: name,
			Annotations: map[string]string{hostfleetv1alpha1.AnnotationHardware: expr}}}
		mustCreate(t, hub, c)
		return c
	}
	none := asking("none", `host.cpu.count >= 256 && host.memoryMiB >= 524288`)
	g.Eventually(func(g Gomega) {
		g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(none), none)).To(Succeed())
		s := meta.FindStatusCondition(none.Status.Conditions, hostfleetv1alpha1.ConditionScheduled)
		g.Expect(s).NotTo(BeNil())
		g.Expect(s.Reason).To(Equal(hostfleetv1alpha1.ReasonNoCapacity))
		g.Expect(s.Message).To(And(
			ContainSubstring("infra-1 (2 free matching hosts, none with the hardware asked: the closest has 32 cores x86_64, 1024 GiB, 1 disks (0 NVME), 10 Gb/s, no GPU, lacks host.cpu.count >= 256 (has 32))"),
			ContainSubstring("infra-2 (2 free matching hosts, none with the hardware asked: the closest has 32 cores x86_64, 128 GiB, 1 disks (1 NVME), 25 Gb/s, no GPU, lacks host.cpu.count >= 256 (has 32), host.memoryMiB >= 524288 (has 131072))"),
			ContainSubstring("infra-3 (2 free matching hosts, none with the hardware asked: the closest has 64 cores x86_64, 512 GiB, 1 disks (1 NVME), 25 Gb/s, 1 GPU (H100 80GB HBM3), lacks host.cpu.count >= 256 (has 64))")))
	}).WithTimeout(time.Minute).Should(Succeed(), "a claim nothing meets is not placed, and told what each cluster's closest hardware lacks")
	g.Expect(none.Labels).NotTo(HaveKey(hostfleetv1alpha1.LabelCluster))

	for _, want := range []struct{ claim, expr, cluster, host string }{
		{"cores", `host.cpu.count >= 96`, "infra-3", "big"},
		{"memory", `host.memoryMiB >= 1048576`, "infra-1", "memory"},
		{"nvme", `host.disks.exists(d, d.type == "NVME" && d.sizeGiB >= 1000)`, "infra-2", "nvme"},
		{"nic", `host.nics.exists(n, n.speedGbps >= 100)`, "infra-2", "fast"},
		{"gpu", `host.gpus.exists(g, g.model.startsWith("H100"))`, "infra-3", "gpu"},
		{"any", `host.cpu.count >= 8`, "infra-1", "small"},
	} {
		c := asking(want.claim, want.expr)
		g.Eventually(func(g Gomega) {
			g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(c), c)).To(Succeed())
			g.Expect(c.Status.BareMetalHost).NotTo(BeNil(), "%v", c.Status.Conditions)
		}).WithTimeout(time.Minute).Should(Succeed(), "%s (%s) bound", want.claim, want.expr)
		g.Expect(c.Labels).To(HaveKeyWithValue(hostfleetv1alpha1.LabelCluster, want.cluster), want.claim)
		g.Expect(c.Status.BareMetalHost.Name).To(Equal(want.host), want.claim)
	}

	t.Log("a host class by hardware: gpu, one claim, held by the claim bound to the GPU host")
	ta := &hostfleetv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "a"}}
	g.Expect(hub.Patch(ctx, ta, client.RawPatch(types.MergePatchType,
		[]byte(`{"spec":{"quotas":[{"name":"gpu","maxClaims":1,"hostSelector":{"hardware":"host.gpus.size() > 0"}}]}}`)))).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(hub.Get(ctx, client.ObjectKey{Name: "a"}, ta)).To(Succeed())
		g.Expect(ta.Status.Classes).To(Equal([]hostfleetv1alpha1.ClassUsage{{Name: "gpu", Claims: 1, MaxClaims: 1}}))
	}).WithTimeout(time.Minute).Should(Succeed(), "the claim bound to the GPU host counts, by its HardwareData")
	more := asking("gpu-2", `host.gpus.size() >= 1`)
	g.Eventually(func(g Gomega) {
		g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(more), more)).To(Succeed())
		s := meta.FindStatusCondition(more.Status.Conditions, hostfleetv1alpha1.ConditionScheduled)
		g.Expect(s).NotTo(BeNil())
		g.Expect(s.Reason).To(Equal(hostfleetv1alpha1.ReasonClassQuotaExceeded))
		g.Expect(s.Message).To(ContainSubstring("class gpu holds 1 of its 1 claims"))
	}).WithTimeout(time.Minute).Should(Succeed(), "a second claim asking for a GPU is held back")
}

// schedulerFleet starts a hub running the scheduler with the given bind
// deadline and the named clusters, each Available in set lab, which tenant
// a (spec, its cluster set lab) spans. It returns once the tenant lists
// them; the agents are the test's to start.
func schedulerFleet(t *testing.T, g Gomega, clusters []string, deadline time.Duration, spec hostfleetv1alpha1.TenantSpec) *planes.Fleet {
	ctx := context.Background()
	f := planes.ForTest(t, append([]string{"hub"}, clusters...)...)
	f.HubForTest(t, "hub", func(mgr ctrl.Manager) error {
		return (&scheduler.Reconciler{Client: mgr.GetClient(), Deadline: deadline}).SetupWithManager(context.Background(), mgr, setup.Options{})
	})
	hub := f.Plane("hub").Client
	spec.ClusterSet = "lab"
	mustCreate(t, hub, &clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "lab"}},
		&hostfleetv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Spec: spec})
	for _, c := range clusters {
		mustCreate(t, hub, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: c}},
			&clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: c, Labels: map[string]string{clusterv1beta2.ClusterSetLabel: "lab"}}})
	}
	g.Eventually(func(g Gomega) {
		for _, c := range clusters {
			g.Expect(planes.SetClusterAvailable(ctx, hub, c, metav1.ConditionTrue)).To(Succeed())
		}
		tn := &hostfleetv1alpha1.Tenant{}
		g.Expect(hub.Get(ctx, client.ObjectKey{Name: "a"}, tn)).To(Succeed())
		g.Expect(tn.Status.Clusters).To(Equal(clusters))
	}).WithTimeout(time.Minute).Should(Succeed(), "tenant a's set holds the clusters")
	return f
}

// hardwareDataOf is what inspection would report of m (its GPU as the BMC
// driver's Redfish inventory adds it).
func hardwareDataOf(g Gomega, m machine) *metal3api.HardwareData {
	hd := &metal3api.HardwareData{ObjectMeta: metav1.ObjectMeta{Namespace: hostsNS, Name: m.name},
		Spec: metal3api.HardwareDataSpec{HardwareDetails: &metal3api.HardwareDetails{
			CPU:          metal3api.CPU{Count: m.cores, Arch: "x86_64", Model: "Test CPU"},
			RAMMebibytes: m.memGiB * 1024,
			Storage:      []metal3api.Storage{{Name: "/dev/sda", SizeBytes: metal3api.Capacity(m.diskGiB) * metal3api.GibiByte, Type: m.disk}},
			NIC:          []metal3api.NIC{{Name: "eno1", MAC: fmt.Sprintf("52:54:00:00:01:%02x", m.cores%256), SpeedGbps: m.nicGbps}},
		}}}
	if m.gpu != "" {
		b, err := json.Marshal([]hardware.GPU{{Vendor: "NVIDIA", Model: m.gpu}})
		g.Expect(err).NotTo(HaveOccurred())
		hd.Annotations = map[string]string{hardware.AnnotationGPUs: string(b)}
	}
	return hd
}
