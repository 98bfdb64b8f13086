package claim_test

import (
	"context"
	"testing"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/agent/app"
	"github.com/hostfleet/hostfleet/e2e/emulators/redfish"
	"github.com/hostfleet/hostfleet/hub/api/healing"
	"github.com/hostfleet/hostfleet/hub/api/usage"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// TestFailedHostReplaced: a bound host whose BMC fails is reported, then,
// past its tenant's grace, powered off; only once it is confirmed off is it
// quarantined (out of the pool, its image removed, its use closed) and the
// same claim (name and UID) bound to the other host, which takes its place
// until Ready, the replacement recorded on the claim and told in Events.
func TestFailedHostReplaced(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	hub, infra := healScene(t, g, "a", "b")
	c := imageClaim("web")
	mustCreate(t, hub, c)
	uid := c.UID
	failed := boundHost(g, hub, c)
	other := map[string]string{"a": "b", "b": "a"}[failed]
	provision(g, infra, failed)
	healthyAndReady(g, hub, c)

	t.Log("the host's BMC fails: reported at once, fenced past the grace")
	hostStatus(g, infra, failed, powerFault)
	g.Eventually(func(g Gomega) {
		hc := healthOf(g, hub, c)
		g.Expect(hc.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(hc.Reason).To(BeElementOf(hostfleetv1alpha1.ReasonHostFailed, hostfleetv1alpha1.ReasonFencing))
		g.Expect(hc.Message).To(ContainSubstring("host hosts/%s reports power management error", failed))
		g.Expect(hc.Message).NotTo(ContainSubstring("the BMC does not answer"), "a host's errorMessage never reaches the hub")
	}).WithTimeout(30 * time.Second).Should(Succeed())
	h := &metal3api.BareMetalHost{}
	g.Eventually(func(g Gomega) {
		g.Expect(infra.Get(ctx, client.ObjectKey{Namespace: hostsNS, Name: failed}, h)).To(Succeed())
		g.Expect(h.Spec.Online).To(BeFalse(), "powered off")
		g.Expect(healthOf(g, hub, c).Reason).To(BeElementOf(hostfleetv1alpha1.ReasonFencing, hostfleetv1alpha1.ReasonFenceUnconfirmed))
		g.Expect(condition(c, hostfleetv1alpha1.ConditionReady).Reason).To(Equal(hostfleetv1alpha1.ReasonReplacing))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	g.Expect(h.Spec.ConsumerRef).NotTo(BeNil(), "not replaced before it is confirmed off")
	g.Expect(h.Spec.Image).NotTo(BeNil())
	spare := &metal3api.BareMetalHost{}
	g.Expect(infra.Get(ctx, client.ObjectKey{Namespace: hostsNS, Name: other}, spare)).To(Succeed())
	g.Expect(spare.Spec.ConsumerRef).To(BeNil(), "no second host while the first is not confirmed off")

	t.Log("the BMC answers and confirms the host off: quarantined, and the claim bound to the other host")
	hostStatus(g, infra, failed, func(h *metal3api.BareMetalHost) {
		h.Status.PoweredOn, h.Status.OperationalStatus, h.Status.ErrorType, h.Status.ErrorMessage = false, metal3api.OperationalStatusOK, "", ""
	})
	var q healing.Quarantine
	g.Eventually(func(g Gomega) {
		g.Expect(infra.Get(ctx, client.ObjectKey{Namespace: hostsNS, Name: failed}, h)).To(Succeed())
		var ok bool
		var err error
		q, ok, err = healing.QuarantineOf(h.Annotations)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(ok).To(BeTrue())
	}).WithTimeout(30 * time.Second).Should(Succeed())
	g.Expect(q.Claim).To(Equal(tenantNS + "/web"))
	g.Expect(q.ClaimUID).To(Equal(string(uid)))
	g.Expect(q.Fenced).To(BeTrue())
	g.Expect(q.Reason).To(Equal("power management error"))
	g.Expect(h.Spec.ConsumerRef).To(BeNil())
	g.Expect(h.Spec.Image).To(BeNil(), "released: its image goes, erased as at any release")
	iv, err := usage.Of(h)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(iv).To(ContainElement(And(HaveField("Claim", BeEquivalentTo(uid)), HaveField("End.Time", Not(BeZero())))), "its use closed")

	g.Expect(boundHostNamed(g, hub, c, other)).To(Equal(other))
	g.Expect(c.UID).To(Equal(uid), "the same claim")
	g.Expect(infra.Get(ctx, client.ObjectKey{Namespace: hostsNS, Name: other}, spare)).To(Succeed())
	boundAt, err := time.Parse(time.RFC3339, spare.Annotations[hostfleetv1alpha1.AnnotationBoundAt])
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(boundAt).NotTo(BeTemporally("<", q.Since.Time.Truncate(time.Second)), "the new host bound after the failed one was quarantined")
	rec, err := healing.RecordOf(c.Annotations, time.Now())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rec.Count).To(Equal(1))
	g.Expect(rec.Recent[0].Failed).To(Equal(hostsNS + "/" + failed))
	g.Eventually(func(g Gomega) {
		hc := healthOf(g, hub, c)
		g.Expect(hc.Reason).To(Equal(hostfleetv1alpha1.ReasonReplacing))
		g.Expect(hc.Message).To(ContainSubstring("takes the place of host %s/%s", hostsNS, failed))
		g.Expect(condition(c, hostfleetv1alpha1.ConditionReady).Reason).To(Equal(hostfleetv1alpha1.ReasonReplacing))
	}).WithTimeout(30 * time.Second).Should(Succeed())

	t.Log("the new host provisions: Ready, saying what it replaced")
	provision(g, infra, other)
	g.Eventually(func(g Gomega) {
		hc := healthOf(g, hub, c)
		g.Expect(hc.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(hc.Reason).To(Equal(hostfleetv1alpha1.ReasonHealthy))
		g.Expect(hc.Message).To(ContainSubstring("took the place of host %s/%s", hostsNS, failed))
		g.Expect(condition(c, hostfleetv1alpha1.ConditionReady).Status).To(Equal(metav1.ConditionTrue))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	// Events are sent asynchronously, after the status the test saw.
	g.Eventually(func(g Gomega) {
		g.Expect(eventReasons(g, hub)).To(ContainElements(hostfleetv1alpha1.ReasonHostFailed, hostfleetv1alpha1.ReasonFencing, "HostQuarantined", "HostReplaced"))
	}).WithTimeout(10 * time.Second).Should(Succeed())
}

// TestFailedHostHeldBack: a Notify claim's failed host is only reported;
// a host never confirmed off is not replaced; and with two of the four
// bound hosts failed, the breaker pauses replacement.
func TestFailedHostHeldBack(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	hub, infra := healScene(t, g, "h1", "h2", "h3", "h4", "spare")
	claims := map[string]*metal3api.HostClaim{}
	hosts := map[string]string{}
	for _, name := range []string{"notify", "stuck", "paused", "fine"} {
		c := imageClaim(name)
		if name == "notify" {
			c.Annotations[hostfleetv1alpha1.AnnotationHealing] = "Notify"
		}
		mustCreate(t, hub, c)
		claims[name] = c
	}
	for name, c := range claims {
		hosts[name] = boundHost(g, hub, c)
	}
	spare := func() *metal3api.BareMetalHost {
		var list metal3api.BareMetalHostList
		g.Expect(infra.List(ctx, &list, client.InNamespace(hostsNS))).To(Succeed())
		for i := range list.Items {
			if list.Items[i].Spec.ConsumerRef == nil {
				return &list.Items[i]
			}
		}
		return nil
	}

	t.Log("a Notify claim: reported, never fenced")
	hostStatus(g, infra, hosts["notify"], powerFault)
	g.Eventually(func(g Gomega) {
		hc := healthOf(g, hub, claims["notify"])
		g.Expect(hc.Reason).To(Equal(hostfleetv1alpha1.ReasonHostFailed))
		g.Expect(hc.Message).To(ContainSubstring("the claim's healing policy is Notify"))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	g.Consistently(func(g Gomega) {
		h := &metal3api.BareMetalHost{}
		g.Expect(infra.Get(ctx, client.ObjectKey{Namespace: hostsNS, Name: hosts["notify"]}, h)).To(Succeed())
		g.Expect(h.Spec.ConsumerRef).NotTo(BeNil())
		g.Expect(healthOf(g, hub, claims["notify"]).Reason).To(Equal(hostfleetv1alpha1.ReasonHostFailed))
	}).WithTimeout(6*time.Second).Should(Succeed(), "past the grace (2 s) and a fence's time (3 s)")
	hostStatus(g, infra, hosts["notify"], func(h *metal3api.BareMetalHost) {
		h.Status.OperationalStatus, h.Status.ErrorType, h.Status.ErrorMessage = metal3api.OperationalStatusOK, "", ""
	})
	g.Eventually(func(g Gomega) {
		g.Expect(healthOf(g, hub, claims["notify"]).Reason).To(Equal(hostfleetv1alpha1.ReasonHealthy))
	}).WithTimeout(30*time.Second).Should(Succeed(), "recovered")

	t.Log("a host whose BMC never confirms it off: fenced, unconfirmed, not replaced")
	hostStatus(g, infra, hosts["stuck"], powerFault)
	g.Eventually(func(g Gomega) {
		hc := healthOf(g, hub, claims["stuck"])
		g.Expect(hc.Reason).To(Equal(hostfleetv1alpha1.ReasonFenceUnconfirmed))
		g.Expect(hc.Message).To(ContainSubstring("it is not replaced"))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	h := &metal3api.BareMetalHost{}
	g.Expect(infra.Get(ctx, client.ObjectKey{Namespace: hostsNS, Name: hosts["stuck"]}, h)).To(Succeed())
	g.Expect(h.Spec.Online).To(BeFalse(), "asked off")
	g.Expect(h.Spec.ConsumerRef).NotTo(BeNil(), "still the claim's")
	g.Expect(h.Annotations).NotTo(HaveKey(hostfleetv1alpha1.AnnotationQuarantined))
	g.Expect(spare().Spec.ConsumerRef).To(BeNil())

	t.Log("a second failure among four bound hosts: the breaker holds replacement back")
	hostStatus(g, infra, hosts["paused"], powerFault)
	g.Eventually(func(g Gomega) {
		hc := healthOf(g, hub, claims["paused"])
		g.Expect(hc.Reason).To(Equal(hostfleetv1alpha1.ReasonReplacementPaused))
		g.Expect(hc.Message).To(ContainSubstring("2 of the 4 hosts bound on the cluster within 1h0m0s failed"))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	g.Expect(infra.Get(ctx, client.ObjectKey{Namespace: hostsNS, Name: hosts["paused"]}, h)).To(Succeed())
	g.Expect(h.Spec.Online).To(BeTrue(), "not fenced in a storm")
	g.Expect(spare().Annotations).NotTo(HaveKey(hostfleetv1alpha1.AnnotationQuarantined))
	g.Expect(healthOf(g, hub, claims["fine"]).Reason).To(Equal(hostfleetv1alpha1.ReasonHealthy))
}

// TestDrivenHostReplaced: three hosts the agent's BMC driver drives through
// emulated Redfish BMCs. The bound host's BMC stops answering: the claim's
// host fails, is asked off, and, since no BMC confirms it, is not replaced
// (FenceUnconfirmed); once the claim accepts the risk (unfenced, which its
// tenant allows), the host is quarantined unfenced and the claim is Ready
// on another host, its live ISO booted there. Then that host's BMC reports
// it Critical: it is fenced, confirmed off, quarantined, and the claim is
// Ready on the third host, bound after the quarantine. The times from each
// failure to Ready on the new host are logged.
func TestDrivenHostReplaced(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	policy := replacing()
	policy.AllowUnfenced = true
	hub, infra, bmcs, iso, _ := redfishScene(t, hostfleetv1alpha1.ServedTenant{Healing: policy}, redfish.Options{}, []string{"rf-a", "rf-b", "rf-c"},
		func(o *app.Options) {
			o.BMCPoll, o.BMCTimeout, o.FenceTimeout = 2*time.Second, 3*time.Second, 5*time.Second
			o.BreakerMaxPercent = 100 // one host of one claim failing twice is not a rack
		})
	c := hubClaim("live", "infra-1", nil)
	c.Spec.PoweredOn = true
	c.Spec.Image = &metal3api.Image{URL: iso.URL + "/live.iso", DiskFormat: ptr.To("live-iso")}
	mustCreate(t, hub, c)
	ready := func(g Gomega) {
		g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(c), c)).To(Succeed())
		r := condition(c, hostfleetv1alpha1.ConditionReady)
		g.Expect(r.Status).To(Equal(metav1.ConditionTrue), r.Message)
	}
	g.Eventually(ready).WithTimeout(90 * time.Second).Should(Succeed())
	failed := c.Status.BareMetalHost.Name

	t.Log("the bound host's BMC stops answering: failed, asked off, never confirmed off: not replaced")
	bmcs[failed].SetDown(true)
	down := time.Now()
	g.Eventually(func(g Gomega) {
		hc := healthOf(g, hub, c)
		g.Expect(hc.Reason).To(Equal(hostfleetv1alpha1.ReasonFenceUnconfirmed), hc.Message)
		g.Expect(hc.Message).To(ContainSubstring("power management error"))
	}).WithTimeout(60 * time.Second).Should(Succeed())
	h := &metal3api.BareMetalHost{}
	g.Expect(infra.Get(ctx, client.ObjectKey{Namespace: hostsNS, Name: failed}, h)).To(Succeed())
	g.Expect(h.Spec.ConsumerRef).NotTo(BeNil(), "a host not confirmed off stays the claim's")
	g.Expect(h.Spec.Online).To(BeFalse())
	g.Expect(h.Annotations).NotTo(HaveKey(hostfleetv1alpha1.AnnotationQuarantined))
	t.Logf("BMC down to FenceUnconfirmed: %s (grace 2 s + fence timeout 5 s)", time.Since(down).Round(100*time.Millisecond))

	t.Log("the claim accepts the risk: replaced unfenced, Ready on the other host")
	setAnnotation(g, hub, client.ObjectKeyFromObject(c), hostfleetv1alpha1.AnnotationHealing, "Replace,unfenced")
	accepted := time.Now()
	g.Eventually(func(g Gomega) {
		ready(g)
		g.Expect(c.Status.BareMetalHost.Name).NotTo(Equal(failed))
	}).WithTimeout(90 * time.Second).Should(Succeed())
	other := c.Status.BareMetalHost.Name
	t.Logf("unfenced accepted to Ready on the new host: %s (the new host's live ISO boot and power on)", time.Since(accepted).Round(100*time.Millisecond))
	g.Expect(infra.Get(ctx, client.ObjectKey{Namespace: hostsNS, Name: failed}, h)).To(Succeed())
	q, ok, err := healing.QuarantineOf(h.Annotations)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ok).To(BeTrue())
	g.Expect(q.Fenced).To(BeFalse(), "replaced at the claim's risk")
	g.Expect(bmcs[other].Power()).To(Equal("On"))
	inserted, url, _ := bmcs[other].Media()
	g.Expect(inserted).To(BeTrue())
	g.Expect(url).To(Equal(iso.URL+"/live.iso"), "the claim's image on the new host")

	t.Log("the new host's BMC reports it Critical (a power supply): failed, fenced, confirmed off, replaced")
	setAnnotation(g, hub, client.ObjectKeyFromObject(c), hostfleetv1alpha1.AnnotationHealing, "Replace")
	bmcs[other].SetHealth("Critical", "")
	critical := time.Now()
	criticalOn(g, infra, other, "the BMC reports Status.Health Critical")
	g.Eventually(func(g Gomega) {
		ready(g)
		g.Expect(c.Status.BareMetalHost.Name).NotTo(BeElementOf(failed, other))
	}).WithTimeout(90 * time.Second).Should(Succeed())
	t.Logf("Critical to Ready on a third host: %s (grace 2 s, the fence, the new host's live ISO boot)", time.Since(critical).Round(100*time.Millisecond))
	hc := healthOf(g, hub, c)
	g.Expect(hc.Reason).To(Equal(hostfleetv1alpha1.ReasonHealthy))
	g.Expect(hc.Message).To(ContainSubstring(other))
	g.Expect(infra.Get(ctx, client.ObjectKey{Namespace: hostsNS, Name: other}, h)).To(Succeed())
	q, ok, err = healing.QuarantineOf(h.Annotations)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ok).To(BeTrue())
	g.Expect(q.Fenced).To(BeTrue(), "its BMC answers: confirmed off first")
	g.Expect(q.Reason).To(Equal(hostfleetv1alpha1.ReasonHealthCritical))
	g.Expect(bmcs[other].Power()).To(Equal("Off"))
	third := &metal3api.BareMetalHost{}
	g.Expect(infra.Get(ctx, client.ObjectKey{Namespace: hostsNS, Name: c.Status.BareMetalHost.Name}, third)).To(Succeed())
	boundAt, err := time.Parse(time.RFC3339, third.Annotations[hostfleetv1alpha1.AnnotationBoundAt])
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(boundAt).NotTo(BeTemporally("<", q.Since.Time), "the new host bound only once the failed one was confirmed off and quarantined")
	rec, err := healing.RecordOf(c.Annotations, time.Now())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rec.Count).To(Equal(2))
}

// TestReplacedClaimLetGo: once its failed host is quarantined, a claim
// that finds no other free host on the cluster holds nothing there: the
// agent drops its finalizer (the hub may place it elsewhere after its bind
// deadline) and records where the host failed; a host freed there
// meanwhile is bound as for any claim, the finalizer with it.
func TestReplacedClaimLetGo(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	hub, infra := healScene(t, g, "only")
	c := imageClaim("alone")
	mustCreate(t, hub, c)
	boundHost(g, hub, c)
	provision(g, infra, "only")
	hostStatus(g, infra, "only", powerFault)
	g.Eventually(func(g Gomega) {
		g.Expect(healthOf(g, hub, c).Reason).To(Equal(hostfleetv1alpha1.ReasonFencing))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	hostStatus(g, infra, "only", func(h *metal3api.BareMetalHost) {
		h.Status.PoweredOn, h.Status.OperationalStatus, h.Status.ErrorType, h.Status.ErrorMessage = false, metal3api.OperationalStatusOK, "", ""
	})

	t.Log("quarantined, and no other host: the agent lets the claim go")
	g.Eventually(func(g Gomega) {
		g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(c), c)).To(Succeed())
		g.Expect(c.Finalizers).NotTo(ContainElement(hostfleetv1alpha1.AgentFinalizer))
		g.Expect(c.Status.BareMetalHost).To(BeNil())
		g.Expect(condition(c, hostfleetv1alpha1.ConditionAssociated).Reason).To(Equal(hostfleetv1alpha1.ReasonNoHostAvailable))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	rec, err := healing.RecordOf(c.Annotations, time.Now())
	g.Expect(err).NotTo(HaveOccurred())
	last, _ := rec.Last()
	g.Expect(last.Cluster).To(Equal("infra-1"), "where the host failed: the hub moves the claim only from there")

	t.Log("a host is freed there: bound, the finalizer with it")
	h := bmh("new", 5, nil)
	mustCreate(t, infra, h)
	h.Status.Provisioning.State, h.Status.OperationalStatus = metal3api.StateAvailable, metal3api.OperationalStatusOK
	g.Expect(infra.Status().Update(ctx, h)).To(Succeed())
	g.Expect(boundHostNamed(g, hub, c, "new")).To(Equal("new"))
	g.Expect(c.Finalizers).To(ContainElement(hostfleetv1alpha1.AgentFinalizer))
}
