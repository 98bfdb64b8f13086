package claim

import (
	"testing"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hostfleet/hostfleet/agent/binder"
	"github.com/hostfleet/hostfleet/agent/heal"
	"github.com/hostfleet/hostfleet/agent/hostspec"
	"github.com/hostfleet/hostfleet/agent/hoststatus"
	"github.com/hostfleet/hostfleet/hub/api/healing"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// TestPlan: what a claim that holds a host, the host and their copies
// should be, and in what the executor writes, for the states a claim goes
// through.
func TestPlan(t *testing.T) {
	consumer := binder.HubConsumer("hub")
	claim := func(mut ...func(*metal3api.HostClaim)) *metal3api.HostClaim {
		c := &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "web", UID: "u1",
			Labels: map[string]string{}, Annotations: map[string]string{}}, Spec: metal3api.HostClaimSpec{PoweredOn: true}}
		for _, m := range mut {
			m(c)
		}
		return c
	}
	host := func(c *metal3api.HostClaim, mut ...func(*metal3api.BareMetalHost)) *metal3api.BareMetalHost {
		h := &metal3api.BareMetalHost{ObjectMeta: metav1.ObjectMeta{Namespace: "hosts", Name: "h0", UID: "h-uid", Annotations: map[string]string{
			hostfleetv1alpha1.AnnotationBoundAt: "2026-11-27T10:00:00Z", hostfleetv1alpha1.AnnotationBoundFor: "tenant-a", hostfleetv1alpha1.AnnotationBoundClaim: "u1"}},
			Spec: metal3api.BareMetalHostSpec{ConsumerRef: consumer.Ref(c), Online: true}}
		for k, v := range consumer.Annotations(c) {
			h.Annotations[k] = v
		}
		for _, m := range mut {
			m(h)
		}
		return h
	}
	// settled is a claim whose metadata and status already say it holds h.
	settled := func(c *metal3api.HostClaim) *metal3api.HostClaim {
		h := host(c)
		c.Annotations[hostfleetv1alpha1.AnnotationReservedHost] = binder.ReservationValue(h)
		c.Annotations[hostfleetv1alpha1.AnnotationHostUID] = string(h.UID)
		c.Labels[hostfleetv1alpha1.LabelBoundHost] = "h0"
		c.Finalizers = []string{hostfleetv1alpha1.AgentFinalizer}
		c.Status.BareMetalHost = &metal3api.ObjectReference{Namespace: "hosts", Name: "h0"}
		c.Status.Conditions = []metav1.Condition{{Type: hostfleetv1alpha1.ConditionAssociated, Status: metav1.ConditionTrue}}
		return c
	}
	observe := func(c *metal3api.HostClaim, h *metal3api.BareMetalHost, mut ...func(*observed)) observed {
		o := observed{claim: c, host: h, usageNS: "tenant-a", usageClaim: "u1"}
		if by, ok := c.Annotations[hostfleetv1alpha1.AnnotationPaused]; ok {
			o.pausedBy, o.paused = by, true
		}
		for _, m := range mut {
			m(&o)
		}
		return o
	}
	missing := &hoststatus.Sync{Reason: metal3api.BadUserDataSecretReason, Message: "secret tenant-a/ud named by spec.userData does not exist; create it"}
	withImage := func(c *metal3api.HostClaim) { c.Spec.Image = &metal3api.Image{URL: "http://images/os.qcow2"} }
	for _, tc := range []struct {
		name string
		o    observed
		want plan
	}{
		{name: "just bound: the claim's metadata, the confirmation, then the spec",
			o: func() observed { c := claim(withImage); return observe(c, host(c)) }(),
			want: plan{meta: true, confirm: true, pending: hoststatus.Sync{Reason: hostfleetv1alpha1.ReasonSynchronizing,
				Message: "writing the claim's image, power and data secrets to host hosts/h0"}, spec: &hostPlan{}, sync: hoststatus.Sync{OK: true}}},
		{name: "steady: the secrets and spec looked at again, nothing else",
			o:    func() observed { c := settled(claim()); return observe(c, host(c)) }(),
			want: plan{spec: &hostPlan{}, sync: hoststatus.Sync{OK: true}, pending: hoststatus.Sync{OK: true}}},
		{name: "a secret missing: nothing on the host until it is there",
			o: func() observed {
				c := settled(claim())
				return observe(c, host(c), func(o *observed) { o.failed = missing })
			}(),
			want: plan{sync: *missing, pending: *missing}},
		{name: "bound by an agent that kept no claim UID: the usage interval made whole",
			o: func() observed {
				c := settled(claim())
				return observe(c, host(c, func(h *metal3api.BareMetalHost) { delete(h.Annotations, hostfleetv1alpha1.AnnotationBoundClaim) }))
			}(),
			want: plan{openUsage: true, spec: &hostPlan{}, sync: hoststatus.Sync{OK: true}, pending: hoststatus.Sync{OK: true}}},
		{name: "a one-shot reboot asked: handed on",
			o: func() observed {
				c := settled(claim(func(c *metal3api.HostClaim) { c.Annotations[metal3api.RebootAnnotationPrefix] = "" }))
				return observe(c, host(c))
			}(),
			want: plan{spec: &hostPlan{}, reboot: true, sync: hoststatus.Sync{OK: true}, pending: hoststatus.Sync{OK: true}}},
		{name: "a forwarded reboot already carried out: not again",
			o: func() observed {
				c := settled(claim(func(c *metal3api.HostClaim) {
					c.Annotations[metal3api.RebootAnnotationPrefix] = ""
					c.Annotations[hostfleetv1alpha1.AnnotationRebootRequest] = "r1"
					c.Annotations[hostfleetv1alpha1.AnnotationRebootHandled] = "r1"
				}))
				return observe(c, host(c))
			}(),
			want: plan{spec: &hostPlan{}, sync: hoststatus.Sync{OK: true}, pending: hoststatus.Sync{OK: true}}},
		{name: "detach asked where no policy allows it: said",
			o: func() observed {
				c := settled(claim(func(c *metal3api.HostClaim) { c.Annotations[metal3api.DetachedAnnotation] = "" }))
				return observe(c, host(c))
			}(),
			want: plan{spec: &hostPlan{}, sync: hoststatus.Sync{Reason: hostfleetv1alpha1.ReasonDetachNotAllowed, Message: "the claim asks to detach host hosts/h0, but no HostDeployPolicy there allows it; remove baremetalhost.metal3.io/detached from the claim, or ask the cluster administrator to annotate the policy hostfleet.io/allow-detach=true"}, pending: hoststatus.Sync{Reason: hostfleetv1alpha1.ReasonDetachNotAllowed, Message: "the claim asks to detach host hosts/h0, but no HostDeployPolicy there allows it; remove baremetalhost.metal3.io/detached from the claim, or ask the cluster administrator to annotate the policy hostfleet.io/allow-detach=true"}}},
		{name: "paused with a change waiting: nothing on the host, the claim says what waits",
			o: func() observed {
				c := settled(claim(withImage, func(c *metal3api.HostClaim) {
					c.Annotations[hostfleetv1alpha1.AnnotationPaused] = "capi"
					c.Annotations[metal3api.RebootAnnotationPrefix] = ""
				}))
				return observe(c, host(c, func(h *metal3api.BareMetalHost) { delete(h.Annotations, hostfleetv1alpha1.AnnotationBoundClaim) }))
			}(),
			want: plan{sync: hoststatus.Sync{Reason: hostfleetv1alpha1.ReasonPaused,
				Message: "paused by \"capi\" (baremetalhost.metal3.io/paused): the claim's changes reach host hosts/h0 once the annotation is removed"}}},
		{name: "paused, the host up to date: synchronized, still nothing written",
			o: func() observed {
				c := settled(claim(func(c *metal3api.HostClaim) { c.Annotations[hostfleetv1alpha1.AnnotationPaused] = "" }))
				return observe(c, host(c))
			}(),
			want: plan{sync: hoststatus.Sync{OK: true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			got := planFor(tc.o, consumer, "infra-1")
			if got.spec != nil {
				got.spec = &hostPlan{} // its content is the observed secrets, passed on
			}
			g.Expect(got).To(Equal(tc.want))
		})
	}

	t.Log("a host a local claim's older agent bound with the upstream consumerRef: migrated")
	g := NewWithT(t)
	local := binder.LocalConsumer()
	c := settled(claim())
	localHost := func(apiVersion string) *metal3api.BareMetalHost {
		return host(c, func(h *metal3api.BareMetalHost) {
			h.Spec.ConsumerRef = local.Ref(c)
			h.Spec.ConsumerRef.APIVersion = apiVersion
			delete(h.Annotations, hostfleetv1alpha1.AnnotationHub)
		})
	}
	h := localHost(local.Legacy)
	g.Expect(planFor(observe(c, h), local, "infra-1").migrate).To(BeTrue())
	g.Expect(planFor(observe(c, localHost(local.APIVersion)), local, "infra-1").migrate).To(BeFalse())
	g.Expect(hostspec.UpToDate(h, hostspec.Bound(c, h, nil, false))).To(BeTrue())
}

// TestPlanHeals: the healing steps are part of the plan. A fence keeps the
// host off whatever the claim asks; a replacement writes its quarantine,
// with the failure as the fence began, and records it once.
func TestPlanHeals(t *testing.T) {
	consumer := binder.HubConsumer("hub")
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	began := metav1.NewTime(now.Add(-3 * time.Minute))
	c := &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "web", UID: "u1", Annotations: map[string]string{
		metal3api.RebootAnnotationPrefix: ""}}, Spec: metal3api.HostClaimSpec{PoweredOn: true}}
	h := &metal3api.BareMetalHost{ObjectMeta: metav1.ObjectMeta{Namespace: "hosts", Name: "h0"},
		Spec: metal3api.BareMetalHostSpec{ConsumerRef: consumer.Ref(c)}} // asked off, status off: confirmed off
	fencing := &metav1.Condition{Type: hostfleetv1alpha1.ConditionHostHealthy, Status: metav1.ConditionFalse, Reason: hostfleetv1alpha1.ReasonFencing,
		LastTransitionTime: began, Message: "host hosts/h0 reports power management error; powering host hosts/h0 off before another host takes its place"}
	earlier := healing.Replacement{At: metav1.NewTime(now.Add(-48 * time.Hour)), Failed: "hosts/h9", Cluster: "infra-1", Reason: "failed"}
	for _, tc := range []struct {
		name   string
		health health
		want   plan
	}{
		{name: "fenced: the host's spec powers it off, and no reboot is handed on",
			health: health{d: heal.Decision{Step: heal.Fence}},
			want:   plan{spec: &hostPlan{off: true}, sync: hoststatus.Sync{OK: true}}},
		{name: "replaced: the evidence the fence began with, recorded with the replacement",
			health: health{d: heal.Decision{Step: heal.Quarantine}, current: fencing, record: healing.Record{}.Add(earlier),
				verdict: heal.Verdict{State: heal.Healthy}}, // the host looks well once off
			want: plan{quarantine: &quarantine{evidence: "power management error", why: fencing.Message, fenced: true,
				record: ptr(healing.Record{}.Add(earlier).Add(healing.Replacement{At: metav1.NewTime(now), Failed: "hosts/h0", Cluster: "infra-1",
					Reason: "power management error", Fenced: true}))}}},
		{name: "a replacement cut short: resumed as recorded, not recorded again",
			health: health{d: heal.Decision{Step: heal.Quarantine}, current: fencing, verdict: heal.Verdict{State: heal.Healthy},
				record: healing.Record{}.Add(healing.Replacement{At: metav1.NewTime(now.Add(-time.Minute)), Failed: "hosts/h0", Reason: "hardware critical"})},
			want: plan{quarantine: &quarantine{evidence: "hardware critical", why: fencing.Message}}},
		{name: "no evidence anywhere: said as failed",
			health: health{d: heal.Decision{Step: heal.Quarantine}},
			want: plan{quarantine: &quarantine{evidence: "failed", fenced: true, record: ptr(healing.Record{}.Add(healing.Replacement{
				At: metav1.NewTime(now), Failed: "hosts/h0", Cluster: "infra-1", Reason: "failed", Fenced: true}))}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			got := planFor(observed{claim: c, host: h, now: now, health: tc.health}, consumer, "infra-1")
			if got.spec != nil {
				got.spec.refs, got.spec.secrets = nil, nil
			}
			got.meta, got.confirm, got.pending = false, false, hoststatus.Sync{} // TestPlan's
			g.Expect(got).To(Equal(tc.want))
		})
	}
}

func ptr[T any](v T) *T { return &v }
