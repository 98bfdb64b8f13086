package binder

import (
	"slices"
	"testing"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

var consumer = HubConsumer("hub")

func claim(mut ...func(*metal3api.HostClaim)) *metal3api.HostClaim {
	c := &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "c1", UID: types.UID("uid-1")}}
	for _, m := range mut {
		m(c)
	}
	return c
}

func host(ns, name string, mut ...func(*metal3api.BareMetalHost)) metal3api.BareMetalHost {
	h := metal3api.BareMetalHost{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{}, Annotations: map[string]string{}}}
	h.Status.Provisioning.State = metal3api.StateAvailable
	for _, m := range mut {
		m(&h)
	}
	return h
}

func policy(ns string, c *metal3api.HostClaimNamespaces) metal3api.HostDeployPolicy {
	return metal3api.HostDeployPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p"}, Spec: metal3api.HostDeployPolicySpec{HostClaimNamespaces: c}}
}

func heldBy(c *metal3api.HostClaim) func(*metal3api.BareMetalHost) {
	return func(h *metal3api.BareMetalHost) {
		h.Spec.ConsumerRef = consumer.Ref(c)
		for k, v := range consumer.Annotations(c) {
			h.Annotations[k] = v
		}
		h.Status.Provisioning.State = metal3api.StateProvisioned
	}
}

// excluding is a claim the hub kept off some host classes.
func excluding(v string) func(*metal3api.HostClaim) {
	return func(c *metal3api.HostClaim) {
		if c.Annotations == nil {
			c.Annotations = map[string]string{}
		}
		c.Annotations[hostfleetv1alpha1.AnnotationExcludedHosts] = v
	}
}

// tolerating is a claim that tolerates taints.
func tolerating(v string) func(*metal3api.HostClaim) {
	return func(c *metal3api.HostClaim) {
		c.Annotations = map[string]string{hostfleetv1alpha1.AnnotationTolerations: v}
	}
}

func tainted(v string) func(*metal3api.BareMetalHost) {
	return func(h *metal3api.BareMetalHost) { h.Annotations[hostfleetv1alpha1.AnnotationTaints] = v }
}

func label(k, v string) func(*metal3api.BareMetalHost) {
	return func(h *metal3api.BareMetalHost) { h.Labels[k] = v }
}

func state(s metal3api.ProvisioningState) func(*metal3api.BareMetalHost) {
	return func(h *metal3api.BareMetalHost) { h.Status.Provisioning.State = s }
}

var admitAll = []metal3api.HostDeployPolicy{policy("hosts", &metal3api.HostClaimNamespaces{NameMatches: ".*"})}

func TestDecide(t *testing.T) {
	other := claim(func(c *metal3api.HostClaim) { c.Name = "other"; c.UID = "uid-other" })
	sameNameOldUID := claim(func(c *metal3api.HostClaim) { c.UID = "uid-old" })
	tests := []struct {
		name       string
		reserved   *metal3api.ObjectReference
		claim      *metal3api.HostClaim
		nsLabels   map[string]string
		policies   []metal3api.HostDeployPolicy
		hosts      []metal3api.BareMetalHost
		wantAction Action
		wantHost   string
		wantReason string
		wantStrays []string
		// heldByGone: the reserved host is held by a claim that is gone.
		heldByGone bool
		wantKeep   bool
	}{
		{
			name: "binds the only free host", claim: claim(), policies: admitAll,
			hosts:      []metal3api.BareMetalHost{host("hosts", "h1")},
			wantAction: Reserve, wantHost: "h1",
		},
		{
			name: "the reserved host is bound if still free", claim: claim(), policies: admitAll,
			reserved:   &metal3api.ObjectReference{Namespace: "hosts", Name: "h2"},
			hosts:      []metal3api.BareMetalHost{host("hosts", "h1"), host("hosts", "h2"), host("hosts", "h3")},
			wantAction: Bind, wantHost: "h2",
		},
		{
			name: "a reserved host taken by another claim is replaced", claim: claim(), policies: admitAll,
			reserved:   &metal3api.ObjectReference{Namespace: "hosts", Name: "h2"},
			hosts:      []metal3api.BareMetalHost{host("hosts", "h1"), host("hosts", "h2", heldBy(other))},
			wantAction: Reserve, wantHost: "h1",
		},
		{
			name:       "a reserved host that no longer matches the selector is replaced",
			claim:      claim(func(c *metal3api.HostClaim) { c.Spec.HostSelector.MatchLabels = map[string]string{"gpu": "yes"} }),
			policies:   admitAll,
			reserved:   &metal3api.ObjectReference{Namespace: "hosts", Name: "h2"},
			hosts:      []metal3api.BareMetalHost{host("hosts", "h1", label("gpu", "yes")), host("hosts", "h2")},
			wantAction: Reserve, wantHost: "h1",
		},
		{
			name: "a host held beside the reservation is a stray", claim: claim(), policies: admitAll,
			reserved:   &metal3api.ObjectReference{Namespace: "hosts", Name: "mine"},
			hosts:      []metal3api.BareMetalHost{host("hosts", "a-stray", heldBy(claim())), host("hosts", "mine", heldBy(claim()))},
			wantAction: Keep, wantHost: "mine", wantStrays: []string{"a-stray"},
		},
		{
			name: "a held host that is not the reservation is a stray; the reservation is bound", claim: claim(), policies: admitAll,
			reserved:   &metal3api.ObjectReference{Namespace: "hosts", Name: "h2"},
			hosts:      []metal3api.BareMetalHost{host("hosts", "h1", heldBy(claim())), host("hosts", "h2")},
			wantAction: Bind, wantHost: "h2", wantStrays: []string{"h1"},
		},
		{
			name: "ready is as good as available", claim: claim(), policies: admitAll,
			hosts:      []metal3api.BareMetalHost{host("hosts", "h1", state(metal3api.StateReady))},
			wantAction: Reserve, wantHost: "h1",
		},
		{
			name: "keeps the host it already holds, whatever else is free", claim: claim(), policies: admitAll,
			hosts:      []metal3api.BareMetalHost{host("hosts", "free"), host("hosts", "mine", heldBy(claim()))},
			wantAction: Keep, wantHost: "mine",
		},
		{
			name: "keeps its host even if the policy no longer admits it", claim: claim(), policies: nil,
			hosts:      []metal3api.BareMetalHost{host("hosts", "mine", heldBy(claim()))},
			wantAction: Keep, wantHost: "mine",
		},
		{
			name: "a reserved host held by a claim that is gone is waited for, the reservation kept", claim: claim(), policies: admitAll,
			reserved:   &metal3api.ObjectReference{Namespace: "hosts", Name: "h2"},
			hosts:      []metal3api.BareMetalHost{host("hosts", "h1"), host("hosts", "h2", heldBy(other))},
			heldByGone: true,
			wantAction: Wait, wantReason: hostfleetv1alpha1.ReasonReservedHostOrphaned, wantKeep: true,
		},
		{
			name: "once released, the reserved host is bound again", claim: claim(), policies: admitAll,
			reserved:   &metal3api.ObjectReference{Namespace: "hosts", Name: "h2"},
			hosts:      []metal3api.BareMetalHost{host("hosts", "h1"), host("hosts", "h2")},
			wantAction: Bind, wantHost: "h2",
		},
		{
			name: "kept off the full host classes the hub excluded", claim: claim(excluding(`[{"matchLabels":{"gpu":"yes"}}]`)), policies: admitAll,
			hosts:      []metal3api.BareMetalHost{host("hosts", "a-gpu", label("gpu", "yes")), host("hosts", "plain")},
			wantAction: Reserve, wantHost: "plain",
		},
		{
			name: "only excluded hosts free: waits, and says so", claim: claim(excluding(`[{"matchLabels":{"gpu":"yes"}}]`)), policies: admitAll,
			hosts:      []metal3api.BareMetalHost{host("hosts", "a-gpu", label("gpu", "yes"))},
			wantAction: Wait, wantReason: hostfleetv1alpha1.ReasonNoHostAvailable,
		},
		{
			name: "an exclusion that does not parse binds nothing", claim: claim(excluding(`[{`)), policies: admitAll,
			hosts:      []metal3api.BareMetalHost{host("hosts", "plain")},
			wantAction: Wait, wantReason: hostfleetv1alpha1.ReasonInvalidSelector,
		},
		{
			name: "a tainted host only for a claim that tolerates its taints", claim: claim(tolerating("gpu")), policies: admitAll,
			hosts:      []metal3api.BareMetalHost{host("hosts", "a-gpu", tainted("gpu,reserved")), host("hosts", "b-gpu", tainted("gpu"))},
			wantAction: Reserve, wantHost: "b-gpu",
		},
		{
			name: "only tainted hosts free: waits, and says so", claim: claim(), policies: admitAll,
			hosts:      []metal3api.BareMetalHost{host("hosts", "a-gpu", tainted("gpu"))},
			wantAction: Wait, wantReason: hostfleetv1alpha1.ReasonNoHostAvailable,
		},
		{
			name: "a host held by an earlier claim of the same name is not this claim's", claim: claim(), policies: admitAll,
			hosts:      []metal3api.BareMetalHost{host("hosts", "old", heldBy(sameNameOldUID))},
			wantAction: Wait, wantReason: hostfleetv1alpha1.ReasonNoHostAvailable,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			in := Input{Consumer: consumer, Claim: tt.claim, NamespaceLabels: tt.nsLabels, Policies: tt.policies, Hosts: ptrs(tt.hosts), Reserved: tt.reserved}
			if tt.heldByGone {
				in.ReservedHeldByGone = in.Hosts[slices.IndexFunc(in.Hosts, func(h *metal3api.BareMetalHost) bool { return isRef(tt.reserved, h) })]
			}
			d := Decide(in)
			g.Expect(d.Action).To(Equal(tt.wantAction), d.Message)
			expectHeldDecides(g, in, d)
			g.Expect(d.KeepReservation).To(Equal(tt.wantKeep))
			if tt.wantHost != "" {
				g.Expect(d.Host).NotTo(BeNil())
				g.Expect(d.Host.Name).To(Equal(tt.wantHost))
			}
			g.Expect(d.Reason).To(Equal(tt.wantReason))
			var strays []string
			for _, h := range d.Strays {
				strays = append(strays, h.Name)
			}
			g.Expect(strays).To(Equal(tt.wantStrays))
			if tt.wantAction == Wait {
				g.Expect(d.Message).NotTo(BeEmpty())
			}
		})
	}
}

func TestPickIsDeterministicAndSpreads(t *testing.T) {
	g := NewWithT(t)
	var hosts []metal3api.BareMetalHost
	for _, n := range []string{"h1", "h2", "h3", "h4"} {
		hosts = append(hosts, host("hosts", n))
	}
	chosen := map[string]int{}
	for i := 0; i < 40; i++ {
		c := claim(func(c *metal3api.HostClaim) { c.UID = types.UID("uid-" + string(rune('a'+i))) })
		first := Decide(Input{Consumer: consumer, Claim: c, Policies: admitAll, Hosts: ptrs(hosts)})
		again := Decide(Input{Consumer: consumer, Claim: c, Policies: admitAll, Hosts: ptrs(hosts)})
		g.Expect(again.Host.Name).To(Equal(first.Host.Name), "same claim, same inputs, same host")
		chosen[first.Host.Name]++
		// Another host taken does not move the claim's choice.
		var others []metal3api.BareMetalHost
		for _, h := range hosts {
			if h.Name != first.Host.Name && len(others) < 2 {
				others = append(others, h)
			}
		}
		rest := slices.DeleteFunc(slices.Clone(hosts), func(h metal3api.BareMetalHost) bool {
			return h.Name == others[i%2].Name
		})
		g.Expect(Decide(Input{Consumer: consumer, Claim: c, Policies: admitAll, Hosts: ptrs(rest)}).Host.Name).To(Equal(first.Host.Name),
			"host %s taken moved the choice", others[i%2].Name)
	}
	g.Expect(chosen).To(HaveLen(4), "40 claims should not all pick the same few of 4 hosts: %v", chosen)
}

// expectHeldDecides checks HeldDecides against d, Decide's answer on every
// host: the hosts naming the claim (what the consumer index returns) decide
// alone exactly when d keeps or defers, and then decide the same.
func expectHeldDecides(g Gomega, in Input, d Decision) {
	named := in
	named.Hosts = nil
	for _, h := range in.Hosts {
		if ref := h.Spec.ConsumerRef; ref != nil && ref.Namespace == in.Claim.Namespace && ref.Name == in.Claim.Name {
			named.Hosts = append(named.Hosts, h)
		}
	}
	g.Expect(HeldDecides(named)).To(Equal(d.Action == Keep || d.Action == Defer), "HeldDecides on the hosts naming the claim, against %s on all", d.Action)
	if HeldDecides(named) {
		g.Expect(Decide(named)).To(Equal(d))
	}
}

// ptrs points at each host, as the agent hands Decide the cache's objects.
func ptrs(hosts []metal3api.BareMetalHost) []*metal3api.BareMetalHost {
	out := make([]*metal3api.BareMetalHost, len(hosts))
	for i := range hosts {
		out[i] = &hosts[i]
	}
	return out
}

func TestConsumers(t *testing.T) {
	g := NewWithT(t)
	c := claim()
	h := host("hosts", "h", heldBy(c))
	g.Expect(consumer.Holds(&h, c)).To(BeTrue())
	g.Expect(HubConsumer("another-hub").Holds(&h, c)).To(BeFalse())
	g.Expect(LocalConsumer().Holds(&h, c)).To(BeFalse(), "a local metal3.io claim of the same name is not the hub claim")

	local := LocalConsumer()
	l := host("hosts", "l")
	l.Spec.ConsumerRef = local.Ref(c)
	for k, v := range local.Annotations(c) {
		l.Annotations[k] = v
	}
	g.Expect(l.Spec.ConsumerRef.APIVersion).To(Equal("hostfleet.io/v1alpha1"), "no other HostClaim controller takes the binding for its own")
	g.Expect(Upstream(l.Spec.ConsumerRef)).To(BeFalse())
	g.Expect(l.Annotations).NotTo(HaveKey(hostfleetv1alpha1.AnnotationHub))
	g.Expect(local.Holds(&l, c)).To(BeTrue())
	g.Expect(consumer.Holds(&l, c)).To(BeFalse(), "a hub claim of the same name does not hold a local claim's host")
	g.Expect(local.Bound(&h)).To(BeFalse(), "nor a local claim a hub claim's")
	recreated := claim(func(c *metal3api.HostClaim) { c.UID = "uid-new" })
	g.Expect(local.Holds(&l, recreated)).To(BeFalse(), "a recreated claim does not inherit the host")
	g.Expect(local.IsLegacy(&l)).To(BeFalse())

	legacy := l.DeepCopy()
	legacy.Spec.ConsumerRef.APIVersion = "metal3.io/v1alpha1"
	g.Expect(local.Holds(legacy, c)).To(BeTrue(), "a host an older agent bound with the upstream consumerRef is still the claim's")
	g.Expect(local.IsLegacy(legacy)).To(BeTrue(), "and is rewritten")
	g.Expect(BoundByOther(legacy, c)).To(BeFalse())
	g.Expect(consumer.IsLegacy(&h)).To(BeFalse())

	theirs := host("hosts", "t")
	theirs.Spec.ConsumerRef = &corev1.ObjectReference{APIVersion: "metal3.io/v1alpha1", Kind: "HostClaim", Namespace: c.Namespace, Name: c.Name}
	g.Expect(local.Bound(&theirs)).To(BeFalse(), "baremetal-operator's binding carries no claim UID")
	g.Expect(BoundByOther(&theirs, c)).To(BeTrue())
	stale := theirs.DeepCopy()
	stale.Annotations[hostfleetv1alpha1.AnnotationClaimUID] = "uid-of-a-deleted-claim"
	g.Expect(local.Holds(stale, c)).To(BeFalse(), "another claim's UID left behind does not make it ours")
	g.Expect(BoundByOther(stale, c)).To(BeTrue())
}

func TestEligible(t *testing.T) {
	g := NewWithT(t)
	c := claim(func(c *metal3api.HostClaim) { c.Spec.HostSelector.MatchLabels = map[string]string{"gpu": "yes"} })
	in := Input{Consumer: consumer, Claim: c, Policies: admitAll}
	ok := host("hosts", "a", label("gpu", "yes"))
	g.Expect(Eligible(in, &ok)).To(BeTrue())
	wrongLabel := host("hosts", "b")
	g.Expect(Eligible(in, &wrongLabel)).To(BeFalse())
	otherNS := host("elsewhere", "c", label("gpu", "yes"))
	g.Expect(Eligible(in, &otherNS)).To(BeFalse())
	busy := host("hosts", "d", label("gpu", "yes"), state(metal3api.StateProvisioned))
	g.Expect(Eligible(in, &busy)).To(BeFalse())
}

func TestDetachAllowed(t *testing.T) {
	g := NewWithT(t)
	h := host("hosts", "h")
	allow := policy("hosts", &metal3api.HostClaimNamespaces{NameMatches: "^tenant-"})
	allow.Annotations = map[string]string{hostfleetv1alpha1.AnnotationAllowDetach: "true"}
	elsewhere := allow.DeepCopy()
	elsewhere.Namespace = "other"
	refusing := policy("hosts", &metal3api.HostClaimNamespaces{Names: []string{"tenant-b"}})
	refusing.Annotations = allow.Annotations

	g.Expect(DetachAllowed(Input{Consumer: consumer, Claim: claim(), Policies: []metal3api.HostDeployPolicy{allow}}, &h)).To(BeTrue())
	g.Expect(DetachAllowed(Input{Consumer: consumer, Claim: claim(), Policies: admitAll}, &h)).To(BeFalse(), "not annotated")
	g.Expect(DetachAllowed(Input{Consumer: consumer, Claim: claim(), Policies: []metal3api.HostDeployPolicy{*elsewhere}}, &h)).To(BeFalse(), "another namespace's policy")
	g.Expect(DetachAllowed(Input{Consumer: consumer, Claim: claim(), Policies: []metal3api.HostDeployPolicy{refusing}}, &h)).To(BeFalse(), "does not admit the claim")
}

func TestUnconfirmed(t *testing.T) {
	reserving := func(v string) func(*metal3api.HostClaim) {
		return func(c *metal3api.HostClaim) {
			c.Annotations = map[string]string{hostfleetv1alpha1.AnnotationReservedHost: v}
		}
	}
	c := claim(reserving("hosts/h1"))
	h1, h2 := host("hosts", "h1", heldBy(c)), host("hosts", "h2", heldBy(c))
	for _, tc := range []struct {
		name  string
		claim *metal3api.HostClaim
		held  []*metal3api.BareMetalHost
		want  *metal3api.ObjectReference
	}{
		{"nothing reserved", claim(), nil, nil},
		{"the reserved host shown held", c, []*metal3api.BareMetalHost{&h1}, nil},
		{"the reserved host not shown held: read it", c, nil, &metal3api.ObjectReference{Namespace: "hosts", Name: "h1"}},
		{"another host shown held", c, []*metal3api.BareMetalHost{&h2}, &metal3api.ObjectReference{Namespace: "hosts", Name: "h1"}},
		{"a malformed reservation", claim(reserving("h1")), nil, nil},
		{"reserved in status only", claim(func(c *metal3api.HostClaim) {
			c.Status.BareMetalHost = &metal3api.ObjectReference{Namespace: "hosts", Name: "h2"}
		}), nil, &metal3api.ObjectReference{Namespace: "hosts", Name: "h2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			NewWithT(t).Expect(Unconfirmed(tc.claim, tc.held)).To(Equal(tc.want))
		})
	}
}

// TestEraseDecides: a claim whose release must erase Full is bound only to
// a host that can; with none, it waits and says why; a host whose erase is
// pending (or failed) is never free.
func TestEraseDecides(t *testing.T) {
	g := NewWithT(t)
	support := func(h *metal3api.BareMetalHost) hostfleetv1alpha1.EraseMode {
		if h.Labels["erases"] == "full" {
			return hostfleetv1alpha1.EraseFull
		}
		return hostfleetv1alpha1.EraseMetadata
	}
	hosts := []metal3api.BareMetalHost{host("hosts", "a-metadata"), host("hosts", "b-full", label("erases", "full"))}
	in := Input{Consumer: consumer, Claim: claim(), Policies: admitAll, Hosts: ptrs(hosts), Erase: hostfleetv1alpha1.EraseFull, EraseSupport: support}
	d := Decide(in)
	g.Expect(d.Action).To(Equal(Reserve))
	g.Expect(d.Host.Name).To(Equal("b-full"))
	g.Expect(Eligible(in, in.Hosts[0])).To(BeFalse())

	in.Hosts = in.Hosts[:1]
	d = Decide(in)
	g.Expect(d.Action).To(Equal(Wait))
	g.Expect(d.Reason).To(Equal(hostfleetv1alpha1.ReasonEraseUnsupported))
	g.Expect(d.Message).To(ContainSubstring("1 free matching hosts cannot erase Full at release"))

	in.Erase = hostfleetv1alpha1.EraseMetadata
	g.Expect(Decide(in).Action).To(Equal(Reserve), "Metadata: either host")

	pending := host("hosts", "erasing", func(h *metal3api.BareMetalHost) { h.Annotations[hostfleetv1alpha1.AnnotationErase] = "Full" })
	g.Expect(Free(&pending)).To(BeFalse())
	none := host("hosts", "none", func(h *metal3api.BareMetalHost) { h.Annotations[hostfleetv1alpha1.AnnotationErase] = "None" })
	g.Expect(Free(&none)).To(BeTrue())
}
