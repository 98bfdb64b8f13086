package binder

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	"k8s.io/apimachinery/pkg/labels"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// states a fuzzed host may be in.
var states = []metal3api.ProvisioningState{metal3api.StateAvailable, metal3api.StateReady, metal3api.StateProvisioned,
	metal3api.StateInspecting, metal3api.StateDeprovisioning, metal3api.StateNone}

// fuzzInput builds a binder input from fuzzed bytes: a claim with a
// selector, tolerations, exclusion and erase from the strings, and hosts
// whose labels, states, annotations and holders come from seed.
func fuzzInput(seed uint64, selector, tolerations, excluded, reserved string, hosts uint8) Input {
	r := rand.New(rand.NewPCG(seed, seed>>7))
	c := claim(func(c *metal3api.HostClaim) {
		c.Annotations = map[string]string{hostfleetv1alpha1.AnnotationTolerations: tolerations, hostfleetv1alpha1.AnnotationExcludedHosts: excluded}
		if k, v, ok := strings.Cut(selector, "="); ok {
			c.Spec.HostSelector.MatchLabels = map[string]string{k: v}
		} else if selector != "" {
			c.Spec.HostSelector.MatchExpressions = []metal3api.HostSelectorRequirement{{Key: selector, Operator: "Exists"}}
		}
	})
	other := claim(func(c *metal3api.HostClaim) { c.Name, c.UID = "other", "uid-other" })
	var hs []metal3api.BareMetalHost
	for i := range int(hosts % 12) {
		h := host("hosts", fmt.Sprintf("h%d", i), state(states[r.IntN(len(states))]))
		if r.IntN(2) == 0 {
			h.Labels["gpu"] = "yes"
		}
		if r.IntN(3) == 0 {
			h.Labels[selector] = "x"
		}
		switch r.IntN(6) {
		case 0:
			heldBy(c)(&h)
		case 1:
			heldBy(other)(&h)
		case 2:
			h.Annotations[hostfleetv1alpha1.AnnotationTaints] = tolerations
		case 3:
			h.Annotations[hostfleetv1alpha1.AnnotationMaintenance] = "m"
		}
		hs = append(hs, h)
	}
	in := Input{Consumer: consumer, Claim: c, Policies: admitAll, Hosts: ptrs(hs), Erase: hostfleetv1alpha1.EraseMode(reserved),
		EraseSupport: func(h *metal3api.BareMetalHost) hostfleetv1alpha1.EraseMode {
			return []hostfleetv1alpha1.EraseMode{hostfleetv1alpha1.EraseNone, hostfleetv1alpha1.EraseMetadata, hostfleetv1alpha1.EraseFull}[len(h.Name)%3]
		}}
	if ns, name, ok := strings.Cut(reserved, "/"); ok {
		in.Reserved = &metal3api.ObjectReference{Namespace: ns, Name: name}
	}
	return in
}

// checkDecision is what any decision must satisfy: a host to bind is one
// the claim may have, a kept host holds the claim, strays hold it and are
// not the kept host, a wait says why.
func checkDecision(in Input, d Decision) error {
	switch d.Action {
	case Reserve, Bind:
		if d.Host == nil || !Eligible(in, d.Host) {
			return fmt.Errorf("%s a host the claim may not have: %v", d.Action, d.Host)
		}
		if d.Action == Bind && !isRef(in.Reserved, d.Host) {
			return fmt.Errorf("Bind of %s, not the reserved host", d.Host.Name)
		}
	case Keep:
		if d.Host == nil || !in.Consumer.Holds(d.Host, in.Claim) {
			return fmt.Errorf("Keep of a host that does not hold the claim")
		}
	case Wait:
		if d.Reason == "" || d.Message == "" {
			return fmt.Errorf("Wait without a reason or message: %+v", d)
		}
	}
	for _, s := range d.Strays {
		if !in.Consumer.Holds(s, in.Claim) || s == d.Host {
			return fmt.Errorf("stray %s does not hold the claim, or is the kept host", s.Name)
		}
	}
	return nil
}

func FuzzDecide(f *testing.F) {
	f.Add(uint64(1), "gpu=yes", "gpu", "", "hosts/h1", uint8(5))
	f.Add(uint64(2), "", "", `[{"matchLabels":{"gpu":"yes"}}]`, "Full", uint8(9))
	f.Add(uint64(3), "a b", "x,,y", "[{", "hosts/", uint8(3))
	f.Fuzz(func(t *testing.T, seed uint64, selector, tolerations, excluded, reserved string, hosts uint8) {
		in := fuzzInput(seed, selector, tolerations, excluded, reserved, hosts)
		d := Decide(in)
		if err := checkDecision(in, d); err != nil {
			t.Fatal(err)
		}
		if _, err := Selector(in.Claim.Spec.HostSelector); err == nil && d.Action == Reserve {
			sel, _ := Selector(in.Claim.Spec.HostSelector)
			if !sel.Matches(labels.Set(d.Host.Labels)) {
				t.Fatalf("reserved %s, which its selector does not match", d.Host.Name)
			}
		}
	})
}
