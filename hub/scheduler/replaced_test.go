package scheduler_test

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

	"github.com/hostfleet/hostfleet/e2e/harness/planes"
	"github.com/hostfleet/hostfleet/hub/api/healing"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/internal/conditions"
)

// replacedOn writes on a placed claim what its agent writes once it
// quarantined the claim's failed host on cluster and finds no other free
// there: the record of the replacement and Associated False; keep leaves
// the agent's finalizer on it, as while a host is being bound.
func replacedOn(g Gomega, hub client.Client, c *metal3api.HostClaim, cluster string, keep bool) {
	ctx := context.Background()
	g.Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := hub.Get(ctx, client.ObjectKeyFromObject(c), c); err != nil {
			return err
		}
		rec := healing.Record{}.Add(healing.Replacement{At: metav1.Now(), Failed: "hosts/h-1", Cluster: cluster, Reason: "PowerManagementError"})
		c.Annotations[hostfleetv1alpha1.AnnotationReplacements] = rec.String()
		c.Finalizers = nil
		if keep {
			c.Finalizers = []string{hostfleetv1alpha1.AgentFinalizer}
		}
		return hub.Update(ctx, c)
	})).To(Succeed())
	g.Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := hub.Get(ctx, client.ObjectKeyFromObject(c), c); err != nil {
			return err
		}
		meta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{Type: hostfleetv1alpha1.ConditionAssociated, Status: metav1.ConditionFalse,
			Reason: hostfleetv1alpha1.ReasonNoHostAvailable, Message: "no free host matches", ObservedGeneration: c.Generation})
		return hub.Status().Update(ctx, c)
	})).To(Succeed())
}

// TestReplacedClaimMoves: a claim whose failed host was replaced on its
// cluster and that finds no other host there waits there while its agent
// keeps it (its finalizer), then for the bind deadline after it lost its
// host, and only then is placed on another cluster, the first excluded; a
// pinned claim stays where its tenant put it.
func TestReplacedClaimMoves(t *testing.T) {
	g := NewWithT(t)
	hub := schedulerPlane(t, deadline)
	lab(g, hub, map[string][]hostfleetv1alpha1.HostPool{
		"c1": {{Namespaces: []string{"tenant-a"}, Total: 3, Available: 3}},
		"c2": {{Namespaces: []string{"tenant-a"}, Total: 3, Available: 3}},
	})
	get := getter(hub)
	placedOn := func(c *metal3api.HostClaim) string {
		var cluster string
		g.Eventually(func(g Gomega) {
			g.Expect(scheduled(get(g, c)).Reason).To(Equal(hostfleetv1alpha1.ReasonPlaced))
			cluster = c.Labels[hostfleetv1alpha1.LabelCluster]
		}).WithTimeout(20 * time.Second).Should(Succeed())
		return cluster
	}
	kept := createClaim(g, hub, "kept", nil)
	moved := createClaim(g, hub, "moved", nil)
	pinned := createClaim(g, hub, "pinned", func(c *metal3api.HostClaim) { c.Labels[hostfleetv1alpha1.LabelCluster] = "c1" })
	keptOn, from := placedOn(kept), placedOn(moved)
	g.Eventually(func(g Gomega) {
		g.Expect(conditions.Admitted(get(g, pinned))).To(BeTrue())
	}).WithTimeout(20 * time.Second).Should(Succeed())

	replacedOn(g, hub, kept, keptOn, true)
	replacedOn(g, hub, pinned, "c1", false)
	replacedOn(g, hub, moved, from, false)
	lost := meta.FindStatusCondition(get(g, moved).Status.Conditions, hostfleetv1alpha1.ConditionAssociated).LastTransitionTime.Time

	t.Log("past the deadline, the claim its agent let go moves; the kept and the pinned claims stay")
	g.Eventually(func(g Gomega) {
		get(g, moved)
		g.Expect(moved.Labels[hostfleetv1alpha1.LabelCluster]).NotTo(BeElementOf("", from))
		g.Expect(scheduled(moved).Reason).To(Equal(hostfleetv1alpha1.ReasonPlaced))
	}).WithTimeout(deadline + 20*time.Second).Should(Succeed())
	g.Expect(moved.Annotations).To(HaveKeyWithValue(hostfleetv1alpha1.AnnotationExcluded, from))
	at, err := time.Parse(time.RFC3339, moved.Annotations[hostfleetv1alpha1.AnnotationPlacedAt])
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(at).NotTo(BeTemporally("<", lost.Add(deadline)), "not placed elsewhere before the deadline after it lost its host")
	g.Expect(planes.Events(context.Background(), hub, moved)).To(ContainElement(ContainSubstring(
		"%s has no host to replace the claim's failed one within %s; placing it elsewhere", from, deadline)))
	g.Consistently(func(g Gomega) {
		g.Expect(get(g, kept).Labels).To(HaveKeyWithValue(hostfleetv1alpha1.LabelCluster, keptOn), "its agent keeps it")
		g.Expect(get(g, pinned).Labels).To(HaveKeyWithValue(hostfleetv1alpha1.LabelCluster, "c1"), "pinned")
		g.Expect(pinned.Annotations).NotTo(HaveKey(hostfleetv1alpha1.AnnotationExcluded))
	}).WithTimeout(3 * time.Second).Should(Succeed())
}
