package forwarding

import (
	"context"
	"testing"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/e2e/emulators/redfish"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/hub/forwarder"
)

// TestForwardedHardware: a remote claim asking for an H100 is placed on
// infra-1, whose inventory lists a profile with one, forwarded with its
// requirement, and bound by the target's agent (--local-claims) to the
// host that has it, not to the one without; a claim nothing meets is not
// placed, and the hub names what the closest hardware lacks.
func TestForwardedHardware(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f, hub, infra := fleet(t, g)
	gpu := redfish.DefaultHardware("GPU0001")
	gpu.GPUs = []redfish.GPU{{Manufacturer: "NVIDIA", Model: "H100 80GB HBM3"}}
	bmcs := drivenHostsWith(t, g, infra, redfish.DefaultHardware("PLAIN01"), gpu)
	startAgent(t, f)
	g.Eventually(func(g Gomega) {
		inv := &hostfleetv1alpha1.HostInventory{}
		g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: cluster, Name: cluster}, inv)).To(Succeed())
		g.Expect(inv.Status.Profiles).To(HaveLen(2))
		g.Expect(inv.Status.Available).To(BeNumerically("==", 2))
	}).WithTimeout(90*time.Second).Should(Succeed(), "the agent inventories both hosts and publishes two profiles")

	asking := func(name, expr string) *metal3api.HostClaim {
		c := remoteClaim(name, func(c *metal3api.HostClaim) {
			c.Annotations = map[string]string{hostfleetv1alpha1.AnnotationHardware: expr}
		})
		g.Expect(hub.Create(ctx, c)).To(Succeed())
		return c
	}
	h100 := asking("h100", `host.gpus.exists(g, g.model.startsWith("H100"))`)
	g.Eventually(func(g Gomega) {
		g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(h100), h100)).To(Succeed())
		g.Expect(cond(h100, hostfleetv1alpha1.ConditionForwarded).Reason).To(Equal(hostfleetv1alpha1.ReasonTargetBound), "%v", conditionsOf(h100))
		g.Expect(h100.Status.BareMetalHost).NotTo(BeNil())
	}).WithTimeout(2 * time.Minute).Should(Succeed())
	g.Expect(h100.Status.BareMetalHost.Name).To(Equal("rf01"), "the host with the H100")
	g.Expect(bmcs).To(HaveKey("rf01"))
	target := &metal3api.HostClaim{}
	g.Expect(infra.Get(ctx, client.ObjectKey{Namespace: forwarder.TargetNamespace(tenantNS), Name: "h100"}, target)).To(Succeed())
	g.Expect(target.Annotations).To(HaveKeyWithValue(hostfleetv1alpha1.AnnotationHardware, h100.Annotations[hostfleetv1alpha1.AnnotationHardware]),
		"the forwarded claim carries the requirement")

	b200 := asking("b200", `host.gpus.exists(g, g.model == "B200")`)
	g.Eventually(func(g Gomega) {
		g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(b200), b200)).To(Succeed())
		s := cond(b200, hostfleetv1alpha1.ConditionScheduled)
		g.Expect(s.Reason).To(Equal(hostfleetv1alpha1.ReasonNoCapacity))
		g.Expect(s.Message).To(MatchRegexp(`none with the hardware asked: the closest has \d+ cores x86_64, 64 GiB, 1 disks \(0 NVME\), 10 Gb/s, (no GPU|1 GPU \(H100 80GB HBM3\)), lacks host.gpus.exists\(g, g.model == "B200"\)`))
	}).WithTimeout(time.Minute).Should(Succeed())
	g.Expect(b200.Labels).NotTo(HaveKey(hostfleetv1alpha1.LabelCluster))
	g.Expect(cond(b200, hostfleetv1alpha1.ConditionForwarded).Status).NotTo(Equal(metav1.ConditionTrue))
}
