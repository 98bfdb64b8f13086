package forwarding

import (
	"context"
	"testing"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/hub/forwarder"
)

// TestForwardedLease: a remote claim leased for 25 s is forwarded, bound
// and Ready; its hub claim (the source) says LeaseEnding 10 s before the
// end, with an Event; at the end the hub deletes it, the forwarded claim
// goes from the target and its host is released and powered off, before
// the hub claim is gone.
func TestForwardedLease(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f, hub, infra := fleet(t, g)
	ta := &hostfleetv1alpha1.Tenant{}
	g.Expect(hub.Get(ctx, client.ObjectKey{Name: "a"}, ta)).To(Succeed())
	ta.Spec.LeaseWarning = &metav1.Duration{Duration: 10 * time.Second}
	g.Expect(hub.Update(ctx, ta)).To(Succeed())
	bmcs := drivenHosts(t, g, infra, 1)
	startAgent(t, f)
	g.Eventually(func(g Gomega) {
		inv := &hostfleetv1alpha1.HostInventory{}
		g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: cluster, Name: cluster}, inv)).To(Succeed())
		g.Expect(inv.Status.Available).To(BeNumerically("==", 1))
	}).WithTimeout(90*time.Second).Should(Succeed(), "the agent inspects the host and publishes it")

	c := remoteClaim("leased", func(c *metal3api.HostClaim) {
		c.Spec.PoweredOn = true
		c.Annotations = map[string]string{hostfleetv1alpha1.AnnotationLeaseFor: "40s"}
	})
	g.Expect(hub.Create(ctx, c)).To(Succeed())
	end := c.CreationTimestamp.Add(40 * time.Second)
	// Ready within the lease, however long forwarding, binding and power
	// take on this machine; the warning by the hub's clock, not this test's.
	g.Eventually(func(g Gomega) {
		g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(c), c)).To(Succeed())
		g.Expect(cond(c, hostfleetv1alpha1.ConditionReady).Status).To(Equal(metav1.ConditionTrue), "%v", conditionsOf(c))
		g.Expect(cond(c, hostfleetv1alpha1.ConditionLeaseExpiring).Reason).To(BeElementOf(hostfleetv1alpha1.ReasonLeaseActive, hostfleetv1alpha1.ReasonLeaseEnding))
	}).WithTimeout(35*time.Second).Should(Succeed(), "forwarded, bound and Ready within its lease")
	host := c.Status.BareMetalHost.Name
	g.Expect(bmcs[host].Power()).To(Equal("On"))
	g.Eventually(func(g Gomega) {
		g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(c), c)).To(Succeed())
		lease := cond(c, hostfleetv1alpha1.ConditionLeaseExpiring)
		g.Expect(lease.Reason).To(Equal(hostfleetv1alpha1.ReasonLeaseEnding))
		g.Expect(lease.LastTransitionTime.Time).To(BeTemporally(">=", end.Add(-10*time.Second)), "not before the warning")
		g.Expect(cond(c, hostfleetv1alpha1.ConditionReady).Status).To(Equal(metav1.ConditionTrue), "still serving")
	}).WithTimeout(35*time.Second).Should(Succeed(), "warned on the hub, the source")
	g.Expect(time.Now()).To(BeTemporally("<", end))
	g.Eventually(func(g Gomega) {
		var events eventsv1.EventList
		g.Expect(hub.List(ctx, &events, client.InNamespace(tenantNS))).To(Succeed())
		g.Expect(events.Items).To(ContainElement(And(HaveField("Regarding.Name", c.Name), HaveField("Reason", hostfleetv1alpha1.ReasonLeaseEnding))))
	}).WithTimeout(5 * time.Second).Should(Succeed())

	h := &metal3api.BareMetalHost{}
	g.Eventually(func(g Gomega) {
		err := hub.Get(ctx, client.ObjectKeyFromObject(c), &metal3api.HostClaim{})
		g.Expect(infra.Get(ctx, client.ObjectKey{Namespace: hostsNS, Name: host}, h)).To(Succeed())
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the hub claim is gone")
		g.Expect(h.Spec.ConsumerRef).To(BeNil(), "the host is released")
	}).WithTimeout(90 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
	g.Expect(time.Now()).To(BeTemporally(">=", end), "not before the end")
	g.Expect(infra.Get(ctx, client.ObjectKey{Namespace: forwarder.TargetNamespace(tenantNS), Name: c.Name}, &metal3api.HostClaim{})).
		To(Satisfy(apierrors.IsNotFound), "the forwarded claim went from the target")
	g.Eventually(func() string { return bmcs[host].Power() }).WithTimeout(30 * time.Second).Should(Equal("Off"))
}
