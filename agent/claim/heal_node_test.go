package claim_test

import (
	"context"
	"testing"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/agent/app"
	"github.com/hostfleet/hostfleet/hub/api/healing"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// nodeReadyOn writes a claim's NodeReady condition as the agent of its
// tenant's workload cluster does.
func nodeReadyOn(g Gomega, hub client.Client, c *metal3api.HostClaim, status metav1.ConditionStatus) {
	reason := map[metav1.ConditionStatus]string{metav1.ConditionTrue: hostfleetv1alpha1.ReasonNodeReady, metav1.ConditionFalse: hostfleetv1alpha1.ReasonNodeNotReady}[status]
	g.Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := hub.Get(context.Background(), client.ObjectKeyFromObject(c), c); err != nil {
			return err
		}
		meta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{Type: hostfleetv1alpha1.ConditionNodeReady, Status: status, Reason: reason,
			Message: "Node w-1 on cluster wl", ObservedGeneration: c.Generation})
		return hub.Status().Update(context.Background(), c)
	})).To(Succeed())
}

// TestNodeNotReadyReplaced: a tenant that counts Nodes (nodeNotReady). The
// claim's Node goes not Ready while its host reports nothing wrong: the
// host is judged failed on that evidence, fenced, quarantined and replaced;
// the Node, still not Ready since before the new host was bound, is never
// held against the new host.
func TestNodeNotReadyReplaced(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f, hub, infra := servedScene(t, hostfleetv1alpha1.ServedTenant{Healing: &hostfleetv1alpha1.Healing{
		Action: hostfleetv1alpha1.HealingReplace, Grace: &metav1.Duration{Duration: 2 * time.Second}, NodeNotReady: true}})
	for i, name := range []string{"a", "b"} {
		h := bmh(name, i, nil)
		mustCreate(t, infra, h)
		h.Status.Provisioning.State, h.Status.OperationalStatus = metal3api.StateAvailable, metal3api.OperationalStatusOK
		g.Expect(infra.Status().Update(ctx, h)).To(Succeed())
	}
	startAgent(t, f, "infra-1", 2, func(o *app.Options) { o.FenceTimeout = 3 * time.Second })
	c := imageClaim("node")
	mustCreate(t, hub, c)
	failed := boundHost(g, hub, c)
	other := map[string]string{"a": "b", "b": "a"}[failed]
	provision(g, infra, failed)
	nodeReadyOn(g, hub, c, metav1.ConditionTrue)
	healthyAndReady(g, hub, c)

	t.Log("the Node goes not Ready; the host reports nothing wrong: failed on the Node's evidence, fenced past the grace")
	nodeReadyOn(g, hub, c, metav1.ConditionFalse)
	g.Eventually(func(g Gomega) {
		hc := healthOf(g, hub, c)
		g.Expect(hc.Reason).To(Equal(hostfleetv1alpha1.ReasonFencing))
		g.Expect(hc.Message).To(ContainSubstring("host hosts/%s reports NodeNotReady", failed))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	hostStatus(g, infra, failed, func(h *metal3api.BareMetalHost) { h.Status.PoweredOn = false })

	t.Log("confirmed off: quarantined, and the claim bound to the other host")
	g.Expect(boundHostNamed(g, hub, c, other)).To(Equal(other))
	h := &metal3api.BareMetalHost{}
	g.Expect(infra.Get(ctx, client.ObjectKey{Namespace: hostsNS, Name: failed}, h)).To(Succeed())
	q, ok, err := healing.QuarantineOf(h.Annotations)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ok).To(BeTrue())
	g.Expect(q.Reason).To(Equal(hostfleetv1alpha1.ReasonNodeNotReady))
	g.Expect(q.Fenced).To(BeTrue())

	t.Log("the old Node stays not Ready: never held against the new host")
	provision(g, infra, other)
	healthyAndReady(g, hub, c)
	g.Consistently(func(g Gomega) {
		g.Expect(healthOf(g, hub, c).Reason).To(Equal(hostfleetv1alpha1.ReasonHealthy))
		g.Expect(c.Status.BareMetalHost.Name).To(Equal(other))
		g.Expect(condition(c, hostfleetv1alpha1.ConditionNodeReady).Status).To(Equal(metav1.ConditionFalse))
	}).WithTimeout(5*time.Second).Should(Succeed(), "past the grace (2 s)")
	rec, err := healing.RecordOf(c.Annotations, time.Now())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rec.Count).To(Equal(1))
}

// TestNodeStormPaused: a tenant that counts Nodes; three of the four
// claims' Nodes go not Ready at once (their switch, not their hosts), while
// every host reports nothing wrong. The breaker counts the Nodes' evidence
// as it counts the hosts': it opens before any host is fenced, so none is
// powered off or quarantined.
func TestNodeStormPaused(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f, hub, infra := servedScene(t, hostfleetv1alpha1.ServedTenant{Healing: &hostfleetv1alpha1.Healing{
		Action: hostfleetv1alpha1.HealingReplace, Grace: &metav1.Duration{Duration: 5 * time.Second}, NodeNotReady: true}})
	for i, name := range []string{"h1", "h2", "h3", "h4", "spare"} {
		h := bmh(name, i, nil)
		mustCreate(t, infra, h)
		h.Status.Provisioning.State, h.Status.OperationalStatus = metal3api.StateAvailable, metal3api.OperationalStatusOK
		g.Expect(infra.Status().Update(ctx, h)).To(Succeed())
	}
	startAgent(t, f, "infra-1", 2, func(o *app.Options) { o.FenceTimeout = 3 * time.Second })
	var claims []*metal3api.HostClaim
	for _, name := range []string{"w1", "w2", "w3", "w4"} {
		c := imageClaim(name)
		mustCreate(t, hub, c)
		claims = append(claims, c)
	}
	for _, c := range claims {
		provision(g, infra, boundHost(g, hub, c))
		nodeReadyOn(g, hub, c, metav1.ConditionTrue)
	}
	for _, c := range claims {
		g.Eventually(func(g Gomega) {
			g.Expect(healthOf(g, hub, c).Reason).To(Equal(hostfleetv1alpha1.ReasonHealthy))
			g.Expect(condition(c, hostfleetv1alpha1.ConditionReady).Status).To(Equal(metav1.ConditionTrue))
		}).WithTimeout(30 * time.Second).Should(Succeed())
	}

	// The grace (5 s) covers the three writes on a busy machine: the first
	// claim to reach its fence must see the other two.
	t.Log("three Nodes of four go not Ready at once: the breaker pauses their replacement, nothing is fenced")
	for _, c := range claims[:3] {
		nodeReadyOn(g, hub, c, metav1.ConditionFalse)
	}
	for _, c := range claims[:3] {
		g.Eventually(func(g Gomega) {
			hc := healthOf(g, hub, c)
			g.Expect(hc.Reason).To(Equal(hostfleetv1alpha1.ReasonReplacementPaused), hc.Message)
			g.Expect(hc.Message).To(ContainSubstring("3 of the 4 hosts bound on the cluster within 1h0m0s failed"))
		}).WithTimeout(30 * time.Second).Should(Succeed())
	}
	g.Consistently(func(g Gomega) {
		var list metal3api.BareMetalHostList
		g.Expect(infra.List(ctx, &list, client.InNamespace(hostsNS))).To(Succeed())
		for _, h := range list.Items {
			g.Expect(h.Annotations).NotTo(HaveKey(hostfleetv1alpha1.AnnotationQuarantined), h.Name)
			if h.Spec.ConsumerRef != nil {
				g.Expect(h.Spec.Online).To(BeTrue(), "%s: not fenced in a storm", h.Name)
			}
		}
	}).WithTimeout(5*time.Second).Should(Succeed(), "past the grace and a fence's time (3 s)")
	g.Expect(healthOf(g, hub, claims[3]).Reason).To(Equal(hostfleetv1alpha1.ReasonHealthy))
}
