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
	"github.com/hostfleet/hostfleet/hub/api/healing"
	"github.com/hostfleet/hostfleet/hub/api/usage"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// TestFailedHostMovedToAnotherCluster: the hub's scheduler (bind deadline
// 5 s) and two clusters of one host each. An unpinned claim's host fails
// and is quarantined; its cluster has no other host, so its agent lets the
// claim go and, past the deadline, the hub places the same claim (name and
// UID) on the other cluster, where it is Ready; the failed host's use is
// closed on its cluster and the new host's opened on the other.
func TestFailedHostMovedToAnotherCluster(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const bindDeadline = 5 * time.Second
	clusters := []string{"infra-1", "infra-2"}
	f := schedulerFleet(t, g, clusters, bindDeadline, hostfleetv1alpha1.TenantSpec{
		Healing: &hostfleetv1alpha1.Healing{Action: hostfleetv1alpha1.HealingReplace, Grace: &metav1.Duration{Duration: 2 * time.Second}}})
	hub := f.Plane("hub").Client
	for i, c := range clusters {
		infra := f.Plane(c).Client
		hostInfra(t, infra)
		h := bmh("host-"+c, i, nil)
		mustCreate(t, infra, h)
		h.Status.Provisioning.State, h.Status.OperationalStatus = metal3api.StateAvailable, metal3api.OperationalStatusOK
		g.Expect(infra.Status().Update(ctx, h)).To(Succeed())
	}
	for _, c := range clusters {
		startAgentWith(t, f.Plane("hub").Config, f.Plane(c).Config, c, 2, func(o *app.Options) {
			o.InventoryInterval, o.FenceTimeout = time.Second, 3*time.Second
		})
	}

	c := &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: tenantNS, Name: "roams"},
		Spec: metal3api.HostClaimSpec{PoweredOn: true, Image: &metal3api.Image{URL: "http://images.example.com/os.qcow2", Checksum: "http://images.example.com/os.qcow2.sha256"}}}
	mustCreate(t, hub, c)
	uid := c.UID
	failed := boundHost(g, hub, c)
	from := c.Labels[hostfleetv1alpha1.LabelCluster]
	to := map[string]string{"infra-1": "infra-2", "infra-2": "infra-1"}[from]
	source, target := f.Plane(from).Client, f.Plane(to).Client
	provision(g, source, failed)

	t.Logf("%s on %s fails; its cluster has no other host", failed, from)
	hostStatus(g, source, failed, powerFault)
	failedAt := time.Now()
	g.Eventually(func(g Gomega) {
		g.Expect(healthOf(g, hub, c).Reason).To(Equal(hostfleetv1alpha1.ReasonFencing))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	hostStatus(g, source, failed, func(h *metal3api.BareMetalHost) {
		h.Status.PoweredOn, h.Status.OperationalStatus, h.Status.ErrorType, h.Status.ErrorMessage = false, metal3api.OperationalStatusOK, "", ""
	})

	t.Logf("quarantined, then, past the bind deadline, the claim moves to %s and is Ready there", to)
	other := "host-" + to
	g.Eventually(func(g Gomega) {
		g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(c), c)).To(Succeed())
		g.Expect(c.Labels).To(HaveKeyWithValue(hostfleetv1alpha1.LabelCluster, to))
		g.Expect(c.Status.BareMetalHost).NotTo(BeNil())
		g.Expect(c.Status.BareMetalHost.Name).To(Equal(other))
	}).WithTimeout(90 * time.Second).Should(Succeed())
	g.Expect(c.UID).To(Equal(uid), "the same claim")
	g.Expect(c.Annotations).To(HaveKeyWithValue(hostfleetv1alpha1.AnnotationExcluded, from))
	provision(g, target, other)
	g.Eventually(func(g Gomega) {
		g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(c), c)).To(Succeed())
		g.Expect(condition(c, hostfleetv1alpha1.ConditionReady).Status).To(Equal(metav1.ConditionTrue))
		g.Expect(healthOf(g, hub, c).Reason).To(Equal(hostfleetv1alpha1.ReasonHealthy))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	t.Logf("failure to Ready on %s: %s (grace 2 s, the fence confirmed by the test, bind deadline 5 s)", to, time.Since(failedAt).Round(100*time.Millisecond))
	rec, err := healing.RecordOf(c.Annotations, time.Now())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rec.Count).To(Equal(1))
	g.Expect(rec.Recent[0].Cluster).To(Equal(from))

	h := &metal3api.BareMetalHost{}
	g.Expect(source.Get(ctx, client.ObjectKey{Namespace: hostsNS, Name: failed}, h)).To(Succeed())
	q, ok, err := healing.QuarantineOf(h.Annotations)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ok).To(BeTrue())
	g.Expect(q.Fenced).To(BeTrue())
	iv, err := usage.Of(h)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(iv).To(ContainElement(And(HaveField("Claim", BeEquivalentTo(uid)), HaveField("End.Time", Not(BeZero())))), "its use closed on %s", from)
	g.Expect(target.Get(ctx, client.ObjectKey{Namespace: hostsNS, Name: other}, h)).To(Succeed())
	g.Expect(h.Annotations).To(HaveKeyWithValue(hostfleetv1alpha1.AnnotationClaimUID, string(uid)))
	boundAt, err := time.Parse(time.RFC3339, h.Annotations[hostfleetv1alpha1.AnnotationBoundAt])
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(boundAt).NotTo(BeTemporally("<", q.Since.Time.Truncate(time.Second).Add(bindDeadline)), "bound there only past the deadline after the quarantine")
}
