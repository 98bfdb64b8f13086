package scheduler_test

import (
	"context"
	"testing"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/hub/api/hardware"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// TestHardwarePlacement: on a real API server, a claim asking for 64
// cores goes to the cluster whose hosts have them although another has
// more free hosts; one nothing meets waits, naming the closest hardware
// and what it lacks; one whose requirement does not parse is refused
// with what to fix.
func TestHardwarePlacement(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	hub := schedulerPlane(t, time.Hour)
	small := hardware.Of(&metal3api.HardwareDetails{CPU: metal3api.CPU{Count: 16, Arch: "x86_64"}, RAMMebibytes: 65536})
	big := hardware.Of(&metal3api.HardwareDetails{CPU: metal3api.CPU{Count: 64, Arch: "x86_64"}, RAMMebibytes: 262144})
	of := func(v *hostfleetv1alpha1.HardwareView, free int32) hostfleetv1alpha1.HostPool {
		return hostfleetv1alpha1.HostPool{Namespaces: []string{"tenant-a"}, Profile: hardware.Profile(v), Total: free, Available: free}
	}
	lab(g, hub, map[string][]hostfleetv1alpha1.HostPool{"many": {of(small, 5)}, "strong": {of(big, 1)}})
	for cluster, v := range map[string]*hostfleetv1alpha1.HardwareView{"many": small, "strong": big} {
		inv := &hostfleetv1alpha1.HostInventory{}
		g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: cluster, Name: cluster}, inv)).To(Succeed())
		patch := client.MergeFrom(inv.DeepCopy())
		inv.Status.Profiles = []hostfleetv1alpha1.HardwareProfile{{Name: hardware.Profile(v), Hardware: *v}}
		g.Expect(hub.Status().Patch(ctx, inv, patch)).To(Succeed())
	}
	asking := func(expr string) func(*metal3api.HostClaim) {
		return func(c *metal3api.HostClaim) { c.Annotations[hostfleetv1alpha1.AnnotationHardware] = expr }
	}
	get := getter(hub)
	strong := createClaim(g, hub, "strong", asking(`host.cpu.count >= 64`))
	gpu := createClaim(g, hub, "gpu", asking(`host.cpu.count >= 32 && host.gpus.size() > 0`))
	bad := createClaim(g, hub, "bad", asking(`host.cpu.cores >= 64`))
	g.Eventually(func(g Gomega) {
		g.Expect(get(g, strong).Labels).To(HaveKeyWithValue(hostfleetv1alpha1.LabelCluster, "strong"))
		get(g, gpu)
		g.Expect(scheduled(gpu).Reason).To(Equal(hostfleetv1alpha1.ReasonNoCapacity))
		g.Expect(scheduled(gpu).Message).To(ContainSubstring("strong (1 free matching hosts, none with the hardware asked: the closest has 64 cores x86_64, 256 GiB, 0 disks (0 NVME), 0 Gb/s, no GPU, lacks host.gpus.size() > 0 (has 0))"))
		get(g, bad)
		g.Expect(scheduled(bad).Reason).To(Equal(hostfleetv1alpha1.ReasonInvalidHardware))
		g.Expect(scheduled(bad).Message).To(ContainSubstring("hostfleet.io/hardware: the requirement does not compile"))
	}).WithTimeout(20 * time.Second).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(get(g, gpu).Labels).NotTo(HaveKey(hostfleetv1alpha1.LabelCluster))
		g.Expect(get(g, bad).Labels).NotTo(HaveKey(hostfleetv1alpha1.LabelCluster))
	}).WithTimeout(2 * time.Second).Should(Succeed())
}

// TestClassByHardware: a host class by hardware ("gpu": any GPU) holds
// back a second claim asking for an H100 while its one claim is placed,
// keeps a claim asking nothing off the GPU hosts (excluded-hosts names
// the class's hardware), is reported on the Tenant, and lets the held
// claim through once the first goes.
func TestClassByHardware(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	hub := schedulerPlane(t, time.Hour)
	gpuView := hardware.Of(&metal3api.HardwareDetails{CPU: metal3api.CPU{Count: 64, Arch: "x86_64"}, RAMMebibytes: 262144})
	gpuView.GPUs = []hardware.GPU{{Vendor: "NVIDIA", Model: "H100 80GB HBM3"}}
	hardware.Normalize(gpuView)
	plainView := hardware.Of(&metal3api.HardwareDetails{CPU: metal3api.CPU{Count: 64, Arch: "x86_64"}, RAMMebibytes: 262144})
	of := func(v *hostfleetv1alpha1.HardwareView) hostfleetv1alpha1.HostPool {
		return hostfleetv1alpha1.HostPool{Namespaces: []string{"tenant-a"}, Profile: hardware.Profile(v), Total: 3, Available: 3}
	}
	lab(g, hub, map[string][]hostfleetv1alpha1.HostPool{"c1": {of(gpuView), of(plainView)}})
	inv := &hostfleetv1alpha1.HostInventory{}
	g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: "c1", Name: "c1"}, inv)).To(Succeed())
	patch := client.MergeFrom(inv.DeepCopy())
	inv.Status.Profiles = []hostfleetv1alpha1.HardwareProfile{{Name: hardware.Profile(gpuView), Hardware: *gpuView}, {Name: hardware.Profile(plainView), Hardware: *plainView}}
	g.Expect(hub.Status().Patch(ctx, inv, patch)).To(Succeed())
	ta := &hostfleetv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "a"}}
	g.Expect(hub.Patch(ctx, ta, client.RawPatch(types.MergePatchType,
		[]byte(`{"spec":{"quotas":[{"name":"gpu","maxClaims":1,"hostSelector":{"hardware":"host.gpus.size() > 0"}}]}}`)))).To(Succeed())
	get := getter(hub)
	h100 := func(c *metal3api.HostClaim) {
		c.Annotations[hostfleetv1alpha1.AnnotationHardware] = `host.gpus.exists(g, g.model.startsWith("H100"))`
	}

	first := createClaim(g, hub, "gpu-1", h100)
	g.Eventually(func(g Gomega) {
		g.Expect(get(g, first).Labels).To(HaveKeyWithValue(hostfleetv1alpha1.LabelCluster, "c1"))
	}).WithTimeout(20 * time.Second).Should(Succeed())
	second := createClaim(g, hub, "gpu-2", h100)
	plain := createClaim(g, hub, "plain", nil)
	g.Eventually(func(g Gomega) {
		get(g, second)
		g.Expect(second.Labels).NotTo(HaveKey(hostfleetv1alpha1.LabelCluster))
		g.Expect(scheduled(second).Reason).To(Equal(hostfleetv1alpha1.ReasonClassQuotaExceeded))
		g.Expect(scheduled(second).Message).To(ContainSubstring("class gpu holds 1 of its 1 claims"))
		get(g, plain)
		g.Expect(plain.Labels).To(HaveKeyWithValue(hostfleetv1alpha1.LabelCluster, "c1"))
		g.Expect(plain.Annotations).To(HaveKeyWithValue(hostfleetv1alpha1.AnnotationExcludedHosts, `[{"hardware":"host.gpus.size() \u003e 0"}]`))
		g.Expect(hub.Get(ctx, client.ObjectKey{Name: "a"}, ta)).To(Succeed())
		g.Expect(ta.Status.Classes).To(Equal([]hostfleetv1alpha1.ClassUsage{{Name: "gpu", Claims: 1, MaxClaims: 1}}))
	}).WithTimeout(20*time.Second).Should(Succeed(), "the second H100 claim is held back; a claim asking nothing is kept off the GPU hosts")

	g.Expect(hub.Delete(ctx, first)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(get(g, second).Labels).To(HaveKeyWithValue(hostfleetv1alpha1.LabelCluster, "c1"))
	}).WithTimeout(20*time.Second).Should(Succeed(), "placed once the class has room")
}
