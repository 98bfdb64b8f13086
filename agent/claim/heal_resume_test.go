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

// TestQuarantineResumed: the agent stops in the middle of a quarantine, its
// failed host confirmed off, the replacement recorded on the claim, the
// claim saying Replacing, the host released. Meanwhile the released host
// powers on (its erase, its deprovisioning). The agent that starts again
// finishes the quarantine as it began: the host is recorded fenced, for it
// was confirmed off before it was released, and the claim takes the other
// host.
func TestQuarantineResumed(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f, hub, infra := servedScene(t, hostfleetv1alpha1.ServedTenant{Healing: &hostfleetv1alpha1.Healing{
		Action: hostfleetv1alpha1.HealingReplace, Grace: &metav1.Duration{Duration: 2 * time.Second}}})
	for i, name := range []string{"a", "b"} {
		h := bmh(name, i, nil)
		mustCreate(t, infra, h)
		h.Status.Provisioning.State, h.Status.OperationalStatus = metal3api.StateAvailable, metal3api.OperationalStatusOK
		g.Expect(infra.Status().Update(ctx, h)).To(Succeed())
	}
	stop := startAgent(t, f, "infra-1", 2, func(o *app.Options) { o.FenceTimeout = 3 * time.Second })
	c := imageClaim("resumed")
	mustCreate(t, hub, c)
	failed := boundHost(g, hub, c)
	other := map[string]string{"a": "b", "b": "a"}[failed]
	provision(g, infra, failed)
	healthyAndReady(g, hub, c)

	t.Log("the agent stops mid-quarantine: the host confirmed off and released, the claim Replacing; the host then powers on")
	stop()
	began := metav1.NewTime(time.Now().Add(-10 * time.Second).Truncate(time.Second))
	g.Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := hub.Get(ctx, client.ObjectKeyFromObject(c), c); err != nil {
			return err
		}
		c.Annotations[hostfleetv1alpha1.AnnotationReplacements] = healing.Record{}.Add(healing.Replacement{At: metav1.NewTime(began.Add(5 * time.Second)),
			Failed: hostsNS + "/" + failed, Cluster: "infra-1", Reason: string(metal3api.PowerManagementError), Fenced: true}).String()
		return hub.Update(ctx, c)
	})).To(Succeed())
	g.Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := hub.Get(ctx, client.ObjectKeyFromObject(c), c); err != nil {
			return err
		}
		meta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{Type: hostfleetv1alpha1.ConditionHostHealthy, Status: metav1.ConditionFalse,
			Reason: hostfleetv1alpha1.ReasonReplacing, LastTransitionTime: began, ObservedGeneration: c.Generation,
			Message: "host hosts/" + failed + " is off; it is quarantined and the claim is bound to another host"})
		return hub.Status().Update(ctx, c)
	})).To(Succeed())
	g.Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		h := &metal3api.BareMetalHost{}
		if err := infra.Get(ctx, client.ObjectKey{Namespace: hostsNS, Name: failed}, h); err != nil {
			return err
		}
		h.Spec.Online, h.Spec.Image = false, nil
		return infra.Update(ctx, h)
	})).To(Succeed())
	hostStatus(g, infra, failed, func(h *metal3api.BareMetalHost) { h.Status.PoweredOn = true })

	t.Log("the agent starts again: the quarantine goes on as it began, fenced")
	startAgent(t, f, "infra-1", 2, func(o *app.Options) { o.FenceTimeout = 3 * time.Second })
	g.Expect(boundHostNamed(g, hub, c, other)).To(Equal(other))
	h := &metal3api.BareMetalHost{}
	g.Expect(infra.Get(ctx, client.ObjectKey{Namespace: hostsNS, Name: failed}, h)).To(Succeed())
	q, ok, err := healing.QuarantineOf(h.Annotations)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ok).To(BeTrue())
	g.Expect(q.Fenced).To(BeTrue(), "confirmed off before it was released, whatever it does since")
	g.Expect(q.Reason).To(Equal(string(metal3api.PowerManagementError)))
	rec, err := healing.RecordOf(c.Annotations, time.Now())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rec.Count).To(Equal(1), "the resumed quarantine is not counted twice")
}
