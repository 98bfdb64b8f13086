package binder

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"

	"github.com/hostfleet/hostfleet/hub/api/erase"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// Selector turns a claim's hostSelector into a label selector. Operators
// are matched case-insensitively, as upstream does ("In", "in").
func Selector(hs metal3api.HostSelector) (labels.Selector, error) {
	sel := labels.NewSelector()
	keys := make([]string, 0, len(hs.MatchLabels))
	for k := range hs.MatchLabels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		r, err := labels.NewRequirement(k, selection.Equals, []string{hs.MatchLabels[k]})
		if err != nil {
			return nil, fmt.Errorf("matchLabels %s: %w", k, err)
		}
		sel = sel.Add(*r)
	}
	for _, e := range hs.MatchExpressions {
		op := selection.Operator(strings.ToLower(string(e.Operator)))
		switch op {
		case "doesnotexist":
			op = selection.DoesNotExist
		case "notin":
			op = selection.NotIn
		}
		r, err := labels.NewRequirement(e.Key, op, e.Values)
		if err != nil {
			return nil, fmt.Errorf("matchExpressions %s %s: %w", e.Key, e.Operator, err)
		}
		sel = sel.Add(*r)
	}
	return sel, nil
}

// AdmittedNamespaces are the infrastructure namespaces whose hosts a claim from
// claimNS (with nsLabels on the hub) may bind: those holding a HostDeployPolicy
// that admits it. With inNamespace set, only that namespace is considered.
func AdmittedNamespaces(policies []metal3api.HostDeployPolicy, claimNS string, nsLabels map[string]string, inNamespace string) (sets.Set[string], error) {
	out := sets.New[string]()
	for i := range policies {
		p := &policies[i]
		if inNamespace != "" && p.Namespace != inNamespace {
			continue
		}
		if out.Has(p.Namespace) {
			continue
		}
		ok, err := Admits(p, claimNS, nsLabels)
		if err != nil {
			return nil, err
		}
		if ok {
			out.Insert(p.Namespace)
		}
	}
	return out, nil
}

// Admits reports whether one HostDeployPolicy admits claims from a namespace.
// A policy without hostClaimNamespaces admits nothing, as upstream.
func Admits(p *metal3api.HostDeployPolicy, ns string, nsLabels map[string]string) (bool, error) {
	c := p.Spec.HostClaimNamespaces
	if c == nil {
		return false, nil
	}
	if c.Names != nil && !slices.Contains(c.Names, ns) {
		return false, nil
	}
	if c.NameMatches != "" {
		re, err := regexp.Compile(c.NameMatches)
		if err != nil {
			return false, fmt.Errorf("HostDeployPolicy %s: nameMatches %q: %w", klog.KObj(p), c.NameMatches, err)
		}
		if !re.MatchString(ns) {
			return false, nil
		}
	}
	for _, l := range c.HasLabels {
		v, ok := nsLabels[l.Name]
		if !ok || (l.Value != "" && v != l.Value) {
			return false, nil
		}
	}
	return true, nil
}

// pick chooses among free hosts: those in the claim's failure domain if any,
// then the heaviest for the claim (weight).
func pick(claim *metal3api.HostClaim, free []*metal3api.BareMetalHost) *metal3api.BareMetalHost {
	if fd := claim.Spec.FailureDomain; fd != "" {
		var in []*metal3api.BareMetalHost
		for _, h := range free {
			if h.Labels[FailureDomainLabel] == fd {
				in = append(in, h)
			}
		}
		if len(in) > 0 {
			free = in
		}
	}
	var best *metal3api.BareMetalHost
	var top uint64
	seed := fnv1a(fnvOffset, string(claim.UID))
	for _, h := range free {
		if w := weight(seed, h); best == nil || w > top || (w == top && less(h, best)) {
			best, top = h, w
		}
	}
	return best
}

// weight is the host's weight for a claim (rendezvous hashing; seed is the
// hash of the claim's UID): the claim takes the heaviest of the hosts it may
// take. One pass, no sort; a claim's choice changes only when its host is
// taken or a heavier one comes free, and concurrent claims spread over the
// hosts.
func weight(seed uint64, h *metal3api.BareMetalHost) uint64 {
	x := fnv1a(fnv1a(fnv1a(seed, h.Namespace), "/"), h.Name)
	// FNV's last bytes barely move the high bits: mix (splitmix64's
	// finalizer) so that hosts named alike weigh unalike.
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// fnv1a continues a 64-bit FNV-1a hash h over s.
func fnv1a(h uint64, s string) uint64 {
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= fnvPrime
	}
	return h
}

func less(a, b *metal3api.BareMetalHost) bool {
	if a.Namespace != b.Namespace {
		return a.Namespace < b.Namespace
	}
	return a.Name < b.Name
}

func describe(sel labels.Selector) string {
	if sel.Empty() {
		return "(any)"
	}
	return "{" + sel.String() + "}"
}

// DetachAllowed reports whether a HostDeployPolicy in the host's namespace
// that admits the claim's namespace allows detaching (annotation
// hostfleet.io/allow-detach: "true").
func DetachAllowed(in Input, h *metal3api.BareMetalHost) bool {
	for i := range in.Policies {
		p := &in.Policies[i]
		if p.Namespace != h.Namespace || p.Annotations[hostfleetv1alpha1.AnnotationAllowDetach] != "true" {
			continue
		}
		if ok, err := Admits(p, in.Claim.Namespace, in.NamespaceLabels); err == nil && ok {
			return true
		}
	}
	return false
}

// Free reports whether a host can be bound now: no consumer, not deleting,
// no error, not paused, not kept for reuse, not unhealthy, not under a
// HostMaintenance, not quarantined after a failure, no erase or judgement
// or restore against its firmware baselines pending (or failed), and
// available or ready.
func Free(h *metal3api.BareMetalHost) bool {
	if h.Spec.ConsumerRef != nil || h.DeletionTimestamp != nil || h.Status.ErrorMessage != "" {
		return false
	}
	if _, reuse := h.Labels[NodeReuseLabel]; reuse {
		return false
	}
	if erase.Level(erase.Of(h.Annotations)) > 0 {
		return false
	}
	for _, a := range []string{metal3api.PausedAnnotation, UnhealthyAnnotation, hostfleetv1alpha1.AnnotationMaintenance, hostfleetv1alpha1.AnnotationQuarantined,
		hostfleetv1alpha1.AnnotationRestore} {
		if _, ok := h.Annotations[a]; ok {
			return false
		}
	}
	if c := meta.FindStatusCondition(h.Status.Conditions, hostfleetv1alpha1.ConditionFirmwareBaseline); c != nil && c.Reason == hostfleetv1alpha1.ReasonBaselineInUse {
		return false // released, not judged yet
	}
	switch h.Status.Provisioning.State {
	case metal3api.StateAvailable, metal3api.StateReady:
		return true
	}
	return false
}
