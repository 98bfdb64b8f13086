package binder

import (
	"testing"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/selection"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// TestSelectionMatchesUpstream: which host a claim may take, rule by rule,
// beside what upstream's HostClaim association does (baremetal-operator
// pkg/hostclaim, HostManager.chooseBMH and acceptableNamespaces, v0.14).
// A row whose "differs" is set is a deliberate difference, listed in
// docs/decisions.md.
func TestSelectionMatchesUpstream(t *testing.T) {
	now := metav1.Now()
	other := claim(func(c *metal3api.HostClaim) { c.Name = "other"; c.UID = "uid-other" })
	sel := func(labels map[string]string, exprs ...metal3api.HostSelectorRequirement) *metal3api.HostClaim {
		return claim(func(c *metal3api.HostClaim) {
			c.Spec.HostSelector.MatchLabels, c.Spec.HostSelector.MatchExpressions = labels, exprs
		})
	}
	expr := func(key, op string, values ...string) metal3api.HostSelectorRequirement {
		return metal3api.HostSelectorRequirement{Key: key, Operator: selection.Operator(op), Values: values}
	}
	for _, tt := range []struct {
		rule, upstream, differs string
		claim                   *metal3api.HostClaim
		nsLabels                map[string]string
		policies                []metal3api.HostDeployPolicy
		hosts                   []metal3api.BareMetalHost
		want                    string // the host taken; "" waits
		reason                  string // when waiting
	}{
		{rule: "HostDeployPolicy names", upstream: "acceptableNamespaces: names, when set, must list the claim's namespace",
			claim: claim(), policies: []metal3api.HostDeployPolicy{
				policy("hosts", &metal3api.HostClaimNamespaces{Names: []string{"tenant-b"}}),
				policy("more", &metal3api.HostClaimNamespaces{Names: []string{"tenant-a"}})},
			hosts: []metal3api.BareMetalHost{host("hosts", "h1"), host("more", "h2")}, want: "h2"},
		{rule: "an empty names list admits nothing", upstream: "acceptableNamespaces: names non-nil and not containing the namespace",
			claim: claim(), policies: []metal3api.HostDeployPolicy{policy("hosts", &metal3api.HostClaimNamespaces{Names: []string{}})},
			hosts: []metal3api.BareMetalHost{host("hosts", "h1")}, reason: hostfleetv1alpha1.ReasonNoDeployPolicy},
		{rule: "HostDeployPolicy nameMatches, unanchored", upstream: "acceptableNamespaces: regexp.MatchString(nameMatches, namespace)",
			claim: claim(), policies: []metal3api.HostDeployPolicy{
				policy("hosts", &metal3api.HostClaimNamespaces{NameMatches: "^prod-"}),
				policy("more", &metal3api.HostClaimNamespaces{NameMatches: "ant-"})},
			hosts: []metal3api.BareMetalHost{host("hosts", "h1"), host("more", "h2")}, want: "h2"},
		{rule: "a bad nameMatches", upstream: "acceptableNamespaces returns the regexp error: the association fails",
			differs: "reported in Associated (NoDeployPolicy) with the policy's name",
			claim:   claim(), policies: []metal3api.HostDeployPolicy{policy("hosts", &metal3api.HostClaimNamespaces{NameMatches: "("})},
			hosts: []metal3api.BareMetalHost{host("hosts", "h1")}, reason: hostfleetv1alpha1.ReasonNoDeployPolicy},
		{rule: "HostDeployPolicy hasLabels, all of them, on the claim's namespace", upstream: "acceptableNamespaces: every pair must be on the namespace",
			differs:  "for a hub claim, the labels of its namespace on the hub",
			claim:    claim(),
			nsLabels: map[string]string{"tier": "gold"},
			policies: []metal3api.HostDeployPolicy{
				policy("two", &metal3api.HostClaimNamespaces{HasLabels: []metal3api.NameValuePair{{Name: "tier", Value: "gold"}, {Name: "zone", Value: "a"}}}),
				policy("one", &metal3api.HostClaimNamespaces{HasLabels: []metal3api.NameValuePair{{Name: "tier", Value: "gold"}}})},
			hosts: []metal3api.BareMetalHost{host("two", "h2"), host("one", "h1")}, want: "h1"},
		{rule: "a hasLabels pair without a value asks only for the label", upstream: "acceptableNamespaces: pair.Value empty matches any value",
			claim: claim(), nsLabels: map[string]string{"tier": "bronze"},
			policies: []metal3api.HostDeployPolicy{policy("hosts", &metal3api.HostClaimNamespaces{HasLabels: []metal3api.NameValuePair{{Name: "tier"}}})},
			hosts:    []metal3api.BareMetalHost{host("hosts", "h1")}, want: "h1"},
		{rule: "a policy without hostClaimNamespaces admits nothing", upstream: "acceptableNamespaces: \"Ignoring HostDeployPolicy without constraint\"",
			claim: claim(), policies: []metal3api.HostDeployPolicy{policy("hosts", nil)},
			hosts: []metal3api.BareMetalHost{host("hosts", "h1")}, reason: hostfleetv1alpha1.ReasonNoDeployPolicy},
		{rule: "hostSelector.inNamespace", upstream: "chooseBMH: acceptableNamespaces(inNamespace) lists the policies of that namespace only",
			claim: claim(func(c *metal3api.HostClaim) { c.Spec.HostSelector.InNamespace = "more" }),
			policies: []metal3api.HostDeployPolicy{
				policy("hosts", &metal3api.HostClaimNamespaces{NameMatches: ".*"}),
				policy("more", &metal3api.HostClaimNamespaces{NameMatches: ".*"})},
			hosts: []metal3api.BareMetalHost{host("hosts", "a"), host("more", "b")}, want: "b"},
		{rule: "matchLabels", upstream: "hostLabelSelectorForHostClaim: an Equals requirement per pair",
			claim: sel(map[string]string{"gpu": "yes"}), policies: admitAll,
			hosts: []metal3api.BareMetalHost{host("hosts", "a", label("gpu", "no")), host("hosts", "b", label("gpu", "yes"))}, want: "b"},
		{rule: "matchExpressions In and NotIn, operators in any case", upstream: "hostLabelSelectorForHostClaim: selection.Operator(strings.ToLower(op))",
			claim: sel(nil, expr("size", "In", "l", "xl"), expr("rack", "notin", "r1")), policies: admitAll,
			hosts: []metal3api.BareMetalHost{host("hosts", "a", label("size", "s")), host("hosts", "b", label("size", "l"), label("rack", "r1")),
				host("hosts", "c", label("size", "xl"), label("rack", "r2"))}, want: "c"},
		{rule: "matchExpressions Exists", upstream: "lower-cased \"exists\" is selection.Exists",
			claim: sel(nil, expr("gpu", "Exists")), policies: admitAll,
			hosts: []metal3api.BareMetalHost{host("hosts", "a"), host("hosts", "b", label("gpu", ""))}, want: "b"},
		{rule: "matchExpressions DoesNotExist", upstream: "lower-cased \"doesnotexist\" is no selection operator: upstream fails the association",
			differs: "DoesNotExist (any case) works",
			claim:   sel(nil, expr("broken", "DoesNotExist")), policies: admitAll,
			hosts: []metal3api.BareMetalHost{host("hosts", "a", label("broken", "yes")), host("hosts", "b")}, want: "b"},
		{rule: "matchExpressions Gt and Lt", upstream: "lower-cased \"gt\" and \"lt\" are selection operators",
			claim: sel(nil, expr("cores", "Gt", "16"), expr("cores", "lt", "128")), policies: admitAll,
			hosts: []metal3api.BareMetalHost{host("hosts", "a", label("cores", "8")), host("hosts", "b", label("cores", "64"))}, want: "b"},
		{rule: "an invalid operator", upstream: "labels.NewRequirement fails: the association fails",
			differs: "reported in Associated (InvalidSelector)",
			claim:   sel(nil, expr("a", "Near")), policies: admitAll,
			hosts: []metal3api.BareMetalHost{host("hosts", "h1")}, reason: hostfleetv1alpha1.ReasonInvalidSelector},
		{rule: "skips consumed, deleting, paused, unhealthy, kept-for-reuse, erroring and not-ready hosts",
			upstream: "chooseBMH: ConsumerRef set, node-reuse label, deletionTimestamp, paused or capi.metal3.io/unhealthy annotation, state not ready/available, errorMessage",
			claim:    claim(), policies: admitAll,
			hosts: []metal3api.BareMetalHost{
				host("hosts", "a-consumed", heldBy(other)),
				host("hosts", "b-local", func(h *metal3api.BareMetalHost) {
					h.Spec.ConsumerRef = &corev1.ObjectReference{APIVersion: "metal3.io/v1alpha1", Kind: "HostClaim", Namespace: "x", Name: "y"}
				}),
				host("hosts", "c-deleting", func(h *metal3api.BareMetalHost) { h.DeletionTimestamp = &now }),
				host("hosts", "d-paused", func(h *metal3api.BareMetalHost) { h.Annotations[metal3api.PausedAnnotation] = "" }),
				host("hosts", "e-unhealthy", func(h *metal3api.BareMetalHost) { h.Annotations[UnhealthyAnnotation] = "" }),
				host("hosts", "f-reuse", label(NodeReuseLabel, "md-1")),
				host("hosts", "g-error", func(h *metal3api.BareMetalHost) { h.Status.ErrorMessage = "boom" }),
				host("hosts", "h-inspecting", state(metal3api.StateInspecting)),
				host("hosts", "i-provisioned", state(metal3api.StateProvisioned)),
				host("hosts", "z-free"),
			}, want: "z-free"},
		{rule: "ready is as good as available", upstream: "chooseBMH: StateReady, StateAvailable",
			claim: claim(), policies: admitAll, hosts: []metal3api.BareMetalHost{host("hosts", "h1", state(metal3api.StateReady))}, want: "h1"},
		{rule: "the failure domain is preferred", upstream: "pickHost: among the hosts labelled with the claim's failureDomain if any",
			claim: claim(func(c *metal3api.HostClaim) { c.Spec.FailureDomain = "rack-2" }), policies: admitAll,
			hosts: []metal3api.BareMetalHost{host("hosts", "a", label(FailureDomainLabel, "rack-1")), host("hosts", "b", label(FailureDomainLabel, "rack-2")),
				host("hosts", "c")}, want: "b"},
		{rule: "the failure domain is only a preference", upstream: "pickHost: \"choosing from other available hosts\"",
			claim: claim(func(c *metal3api.HostClaim) { c.Spec.FailureDomain = "rack-9" }), policies: admitAll,
			hosts: []metal3api.BareMetalHost{host("hosts", "a", label(FailureDomainLabel, "rack-1"))}, want: "a"},
		{rule: "among the candidates, one by rendezvous hash of the claim", upstream: "pickHost: crypto/rand among the candidates",
			differs: "deterministic for a claim and spread across claims (TestPickIsDeterministicAndSpreads): a retry never moves the reservation",
			claim:   claim(), policies: admitAll, hosts: []metal3api.BareMetalHost{host("hosts", "h1"), host("hosts", "h2")},
			want: Decide(Input{Consumer: consumer, Claim: claim(), Policies: admitAll, Hosts: ptrs([]metal3api.BareMetalHost{host("hosts", "h1"), host("hosts", "h2")})}).Host.Name},
		{rule: "a host already naming the claim", upstream: "chooseBMH: a host whose consumerRef matches the claim (name, namespace, kind) is taken again",
			differs: "only if it carries the claim's UID (hostfleet.io/claim-uid): a host an earlier claim of that name held, or another controller bound, is not",
			claim:   claim(), policies: admitAll,
			hosts:  []metal3api.BareMetalHost{host("hosts", "old", heldBy(claim(func(c *metal3api.HostClaim) { c.UID = "uid-old" })))},
			reason: hostfleetv1alpha1.ReasonNoHostAvailable},
	} {
		t.Run(tt.rule, func(t *testing.T) {
			g := NewWithT(t)
			d := Decide(Input{Consumer: consumer, Claim: tt.claim, NamespaceLabels: tt.nsLabels, Policies: tt.policies, Hosts: ptrs(tt.hosts)})
			if tt.want == "" {
				g.Expect(d.Action).To(Equal(Wait), "upstream: %s", tt.upstream)
				g.Expect(d.Reason).To(Equal(tt.reason))
				g.Expect(d.Message).NotTo(BeEmpty())
				return
			}
			g.Expect(d.Action).To(Equal(Reserve), "%s (upstream: %s)", d.Message, tt.upstream)
			g.Expect(d.Host.Name).To(Equal(tt.want), "upstream: %s", tt.upstream)
		})
	}
}

// TestDeferToAnotherController: a local claim that baremetal-operator's
// HostClaim controller serves is left to it.
func TestDeferToAnotherController(t *testing.T) {
	local := LocalConsumer()
	mine := func(c *metal3api.HostClaim) func(*metal3api.BareMetalHost) {
		return func(h *metal3api.BareMetalHost) {
			h.Spec.ConsumerRef = local.Ref(c)
			for k, v := range local.Annotations(c) {
				h.Annotations[k] = v
			}
			h.Status.Provisioning.State = metal3api.StateProvisioned
		}
	}
	theirs := func(c *metal3api.HostClaim) func(*metal3api.BareMetalHost) {
		return func(h *metal3api.BareMetalHost) { // upstream's association: its consumerRef, no UID
			h.Spec.ConsumerRef = &corev1.ObjectReference{APIVersion: "metal3.io/v1alpha1", Kind: "HostClaim", Namespace: c.Namespace, Name: c.Name}
		}
	}
	withFinalizer := claim(func(c *metal3api.HostClaim) { c.Finalizers = []string{metal3api.HostClaimFinalizer} })
	for _, tt := range []struct {
		name       string
		consumer   Consumer
		claim      *metal3api.HostClaim
		hosts      []metal3api.BareMetalHost
		want       Action
		wantStrays []string
	}{
		{"its finalizer, no host of ours: defer", local, withFinalizer, []metal3api.BareMetalHost{host("hosts", "free")}, Defer, nil},
		{"its finalizer on a claim we bound first: keep (it took our host too)", local, withFinalizer,
			[]metal3api.BareMetalHost{host("hosts", "ours", mine(withFinalizer))}, Keep, nil},
		{"a host it bound to the claim: defer", local, claim(), []metal3api.BareMetalHost{host("hosts", "free"), host("hosts", "b", theirs(claim()))}, Defer, nil},
		{"a host it bound beside ours: defer, ours released", local, claim(),
			[]metal3api.BareMetalHost{host("hosts", "a", mine(claim())), host("hosts", "b", theirs(claim()))}, Defer, []string{"a"}},
		{"its finalizer, and its association of another host in the status (its host not cached yet): defer, ours released", local,
			claim(func(c *metal3api.HostClaim) {
				c.Finalizers = []string{metal3api.HostClaimFinalizer}
				c.Status.BareMetalHost = &metal3api.ObjectReference{Namespace: "hosts", Name: "b"}
			}),
			[]metal3api.BareMetalHost{host("hosts", "a", mine(claim()))}, Defer, []string{"a"}},
		{"nobody else: reserve", local, claim(), []metal3api.BareMetalHost{host("hosts", "free")}, Reserve, nil},
		{"hub claims never defer", consumer, withFinalizer, []metal3api.BareMetalHost{host("hosts", "free")}, Reserve, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			in := Input{Consumer: tt.consumer, Claim: tt.claim, Policies: admitAll, Hosts: ptrs(tt.hosts)}
			d := Decide(in)
			g.Expect(d.Action).To(Equal(tt.want), d.Message)
			expectHeldDecides(g, in, d)
			var strays []string
			for _, h := range d.Strays {
				strays = append(strays, h.Name)
			}
			g.Expect(strays).To(Equal(tt.wantStrays))
			if tt.want == Defer {
				g.Expect(d.Reason).To(Equal(hostfleetv1alpha1.ReasonServedByOtherController))
			}
		})
	}
}

func TestServesLocal(t *testing.T) {
	g := NewWithT(t)
	forwarded := claim(func(c *metal3api.HostClaim) {
		c.Namespace, c.Annotations = "hf-tenant-a", map[string]string{hostfleetv1alpha1.AnnotationSourceClaimUID: "u"}
	})
	g.Expect(ServesLocal(forwarded, nil)).To(BeTrue(), "the hub's forwarded claims")
	g.Expect(ServesLocal(claim(), nil)).To(BeFalse(), "no other, by default")
	g.Expect(ServesLocal(claim(), []string{"tenant-a"})).To(BeTrue(), "those of the namespaces an administrator names")
	g.Expect(ServesLocal(claim(), []string{"tenant-b"})).To(BeFalse())
}
