package claim_test

import (
	"context"
	"testing"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/agent/app"
	"github.com/hostfleet/hostfleet/e2e/emulators/lanplus"
	"github.com/hostfleet/hostfleet/hub/api/healing"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// firstEvent is when the BMC first carried out one of the controls named,
// or the zero time.
func firstEvent(b *lanplus.BMC, what ...string) time.Time {
	for _, e := range b.Log() {
		for _, w := range what {
			if e.What == w {
				return e.At
			}
		}
	}
	return time.Time{}
}

// TestIPMIHostReplaced: two hosts the agent's BMC driver drives over IPMI
// 2.0 (RMCP+). The bound host's chassis reports a power fault: the host
// fails (HealthCritical, read from the chassis status), is powered down and
// confirmed off, quarantined, and the claim is Ready on the other host,
// which was powered up only after the failed one went off.
func TestIPMIHostReplaced(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f, hub, infra := servedScene(t, hostfleetv1alpha1.ServedTenant{Healing: &hostfleetv1alpha1.Healing{
		Action: hostfleetv1alpha1.HealingReplace, Grace: &metav1.Duration{Duration: 2 * time.Second}}})
	bmcs := map[string]*lanplus.BMC{}
	for i, name := range []string{"ipmi-a", "ipmi-b"} {
		b, err := lanplus.Start("admin", "secret")
		g.Expect(err).NotTo(HaveOccurred())
		t.Cleanup(b.Close)
		bmcs[name] = b
		h := bmh(name, i, nil)
		h.Annotations = map[string]string{hostfleetv1alpha1.AnnotationDriver: hostfleetv1alpha1.DriverBMCLib}
		h.Spec.BMC.Address = "ipmi://" + b.Address()
		mustCreate(t, infra, h)
	}
	startAgent(t, f, "infra-1", 2, func(o *app.Options) {
		o.BMCPoll, o.BMCTimeout, o.FenceTimeout = 2*time.Second, 3*time.Second, 5*time.Second
	})
	c := hubClaim("ipmi", "infra-1", nil)
	c.Spec.PoweredOn = true
	mustCreate(t, hub, c)
	ready := func(g Gomega) {
		g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(c), c)).To(Succeed())
		r := condition(c, hostfleetv1alpha1.ConditionReady)
		g.Expect(r.Status).To(Equal(metav1.ConditionTrue), r.Message)
	}
	g.Eventually(ready).WithTimeout(90 * time.Second).Should(Succeed())
	failed, other := c.Status.BareMetalHost.Name, "ipmi-b"
	if failed == other {
		other = "ipmi-a"
	}
	g.Expect(bmcs[failed].Power()).To(BeTrue())
	g.Expect(bmcs[other].Power()).To(BeFalse(), "the spare waits powered off")

	t.Log("the bound host's chassis reports a power fault: failed, powered down, confirmed off, replaced")
	bmcs[failed].SetFaults(lanplus.Faults{PowerFault: true})
	fault := time.Now()
	h := &metal3api.BareMetalHost{}
	criticalOn(g, infra, failed, "the BMC reports chassis status: power fault")
	g.Eventually(func(g Gomega) {
		ready(g)
		g.Expect(c.Status.BareMetalHost.Name).To(Equal(other))
	}).WithTimeout(90 * time.Second).Should(Succeed())
	t.Logf("power fault to Ready on the other host: %s (grace 2 s, the fence, the new host's power-on)", time.Since(fault).Round(100*time.Millisecond))

	g.Expect(bmcs[failed].Power()).To(BeFalse())
	off := firstEvent(bmcs[failed], "power down", "soft shutdown")
	on := firstEvent(bmcs[other], "power up")
	g.Expect(off).To(BeTemporally(">", fault), "the failed host powered down after its fault")
	g.Expect(on).To(BeTemporally(">", off), "the new host powered up only after the failed one was off")
	g.Expect(infra.Get(ctx, client.ObjectKey{Namespace: hostsNS, Name: failed}, h)).To(Succeed())
	q, ok, err := healing.QuarantineOf(h.Annotations)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ok).To(BeTrue())
	g.Expect(q.Fenced).To(BeTrue(), "its BMC answers: confirmed off first")
	g.Expect(q.Reason).To(Equal(hostfleetv1alpha1.ReasonHealthCritical))
	g.Expect(h.Spec.ConsumerRef).To(BeNil())
	hc := healthOf(g, hub, c)
	g.Expect(hc.Reason).To(Equal(hostfleetv1alpha1.ReasonHealthy))
	rec, err := healing.RecordOf(c.Annotations, time.Now())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rec.Count).To(Equal(1))
}
