package claim_test

import (
	"context"
	"testing"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/agent/app"
	"github.com/hostfleet/hostfleet/e2e/harness/planes"
	"github.com/hostfleet/hostfleet/hub/api/hardware"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// TestHardwareRequirement: the agent binds a claim asking for 64 cores to
// the least host whose HardwareData has them (not the 256-core one, not
// the 16-core one), publishes the hosts' profiles, and tells a claim
// nothing meets which host comes closest and what it lacks.
func TestHardwareRequirement(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	s := newScene(t, g, false, "small", "big", "huge", "new")
	for name, cores := range map[string]int{"small": 16, "big": 64, "huge": 256} {
		mustCreate(t, s.infra, &metal3api.HardwareData{ObjectMeta: metav1.ObjectMeta{Namespace: hostsNS, Name: name},
			Spec: metal3api.HardwareDataSpec{HardwareDetails: &metal3api.HardwareDetails{CPU: metal3api.CPU{Count: cores, Arch: "x86_64"}, RAMMebibytes: 1024 * cores}}})
	}
	mustCreate(t, s.hub, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "infra-1"}},
		planes.Tenancy("infra-1", hostfleetv1alpha1.ServedTenant{Name: "a", Namespaces: []string{tenantNS}}))
	startAgent(t, s.f, "infra-1", 2, func(o *app.Options) { o.InventoryInterval = time.Second })
	g.Eventually(func(g Gomega) {
		inv := &hostfleetv1alpha1.HostInventory{}
		g.Expect(s.hub.Get(ctx, client.ObjectKey{Namespace: "infra-1", Name: "infra-1"}, inv)).To(Succeed())
		g.Expect(inv.Status.Profiles).To(HaveLen(3))
		g.Expect(inv.Status.Pools).To(ContainElement(And(HaveField("Profile", ""), HaveField("Available", int32(1)))), "the host not inspected")
	}).WithTimeout(30*time.Second).Should(Succeed(), "three profiles, and a pool of the host not inspected")

	asking := func(name, expr string) *metal3api.HostClaim {
		c := hubClaim(name, "infra-1", nil)
		c.Annotations[hostfleetv1alpha1.AnnotationHardware] = expr
		mustCreate(t, s.hub, c)
		return c
	}
	strong := asking("strong", `host.cpu.count >= 64`)
	g.Eventually(func(g Gomega) {
		g.Expect(s.hub.Get(ctx, client.ObjectKeyFromObject(strong), strong)).To(Succeed())
		g.Expect(strong.Status.BareMetalHost).NotTo(BeNil())
		g.Expect(strong.Status.BareMetalHost.Name).To(Equal("big"), "the least host with 64 cores")
	}).WithTimeout(30 * time.Second).Should(Succeed())

	gpu := asking("gpu", `host.cpu.count >= 128 && host.gpus.size() >= 1`)
	g.Eventually(func(g Gomega) {
		g.Expect(s.hub.Get(ctx, client.ObjectKeyFromObject(gpu), gpu)).To(Succeed())
		a := associated(gpu)
		g.Expect(a).NotTo(BeNil())
		g.Expect(a.Reason).To(Equal(hostfleetv1alpha1.ReasonNoHostAvailable))
		g.Expect(a.Message).To(ContainSubstring("3 free matching hosts lack the hardware the claim's hostfleet.io/hardware asks: the closest has 256 cores x86_64, 256 GiB, 0 disks (0 NVME), 0 Gb/s, no GPU, lacks host.gpus.size() >= 1 (has 0)"))
	}).WithTimeout(30 * time.Second).Should(Succeed())

	bad := asking("bad", `host.cpu.cores > 1`)
	g.Eventually(func(g Gomega) {
		g.Expect(s.hub.Get(ctx, client.ObjectKeyFromObject(bad), bad)).To(Succeed())
		a := associated(bad)
		g.Expect(a).NotTo(BeNil())
		g.Expect(a.Reason).To(Equal(hostfleetv1alpha1.ReasonInvalidHardware))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	_, err := hardware.Parse(`host.cpu.cores > 1`)
	g.Expect(associated(bad).Message).To(ContainSubstring(err.Error()))
}
