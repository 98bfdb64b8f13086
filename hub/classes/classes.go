// Package classes counts a tenant's claims per host class (the Tenant's
// spec.quotas) and decides whether a claim may be placed: the scheduler
// holds back a claim that would take a class over its cap, and keeps a
// claim that does not ask for a full class off that class's hosts. Pure
// functions but Read: the scheduler, the tenant controller and kubectl
// hostfleet count alike.
package classes

import (
	"fmt"
	"strings"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"

	"github.com/hostfleet/hostfleet/hub/api/hardware"
	"github.com/hostfleet/hostfleet/hub/api/labelkeys"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/internal/conditions"
)

// Class is one of a tenant's host classes, its selector compiled.
type Class struct {
	hostfleetv1alpha1.ClassQuota
	Selector labels.Selector
	// Hardware is the class's hardware requirement; nil for none.
	Hardware *hardware.Requirement
}

// Of compiles the tenant's classes. A label selector the API server let
// through but that does not compile (it cannot: the CRD checks it), or a
// hardware requirement that does not parse, is an error.
func Of(t *hostfleetv1alpha1.Tenant) ([]Class, error) {
	out := make([]Class, 0, len(t.Spec.Quotas))
	for _, q := range t.Spec.Quotas {
		sel, err := metav1.LabelSelectorAsSelector(q.HostSelector.LabelSelector())
		if err != nil {
			return nil, fmt.Errorf("class %s of tenant %s: %w", q.Name, t.Name, err)
		}
		cl := Class{ClassQuota: q, Selector: sel}
		if q.HostSelector.Hardware != "" {
			if cl.Hardware, err = hardware.Cached(q.HostSelector.Hardware); err != nil {
				return nil, fmt.Errorf("class %s of tenant %s: hostSelector.hardware: %w", q.Name, t.Name, err)
			}
		}
		out = append(out, cl)
	}
	return out, nil
}

// Fleet is what the classes know of hardware: each bound claim's host and
// the fleet's profiles. A zero Fleet knows none: no claim is of a class by
// hardware.
type Fleet struct {
	// Host is the hardware of a bound claim's host (its HardwareData copy
	// on the hub); nil when not known.
	Host func(*metal3api.HostClaim) *hardware.View
	// Profiles are the fleet's hardware profiles, by the cluster that
	// reports each and its name: a cluster's report of a name stands for
	// that cluster's hosts alone.
	Profiles map[Profile]*hardware.View
}

// Profile names a hardware profile as one cluster reports it.
type Profile struct{ Cluster, Name string }

// Of reports whether a claim is of class cl: its labels (Labels) match the
// class's selector and, for a class by hardware, its host's hardware meets
// the class's; before the claim is bound (or while its host's hardware is
// not known), every profile of the fleet that meets the claim's own
// requirement must meet the class's, and one must.
func (cl Class) Of(c *metal3api.HostClaim, set labels.Set, f Fleet) bool {
	if !cl.Selector.Matches(set) {
		return false
	}
	if cl.Hardware == nil {
		return true
	}
	if Bound(c) && f.Host != nil {
		if v := f.Host(c); v != nil {
			ok, err := cl.Hardware.Meets(v)
			return ok && err == nil
		}
	}
	return asks(cl.Hardware, c, f.Profiles)
}

// asks reports whether every profile that meets the claim's requirement
// (without one, every profile) meets class, and one does.
func asks(class *hardware.Requirement, c *metal3api.HostClaim, profiles map[Profile]*hardware.View) bool {
	var own *hardware.Requirement
	if expr, ok := c.Annotations[hostfleetv1alpha1.AnnotationHardware]; ok {
		r, err := hardware.Cached(expr)
		if err != nil {
			return false // it meets no host: it takes none of the class's
		}
		own = r
	}
	some := false
	for p, v := range profiles {
		if own != nil && !own.MeetsProfile(p.Cluster, p.Name, v) {
			continue
		}
		if !class.MeetsProfile(p.Cluster, p.Name, v) {
			return false
		}
		some = true
	}
	return some
}

// Bound reports whether a claim holds (or is being bound to) a host: its
// labels then are its host's (the agent copies them with the reservation).
func Bound(c *metal3api.HostClaim) bool {
	return c.Annotations[hostfleetv1alpha1.AnnotationReservedHost] != "" || c.Status.BareMetalHost != nil
}

// Counted reports whether a claim counts against its tenant's classes: it
// is placed on a cluster (a pin once admitted: conditions.Admitted), or
// bound. Claims not placed take no host, so that claims held back do not
// hold each other back.
func Counted(c *metal3api.HostClaim) bool {
	return c.Labels[hostfleetv1alpha1.LabelCluster] != "" && conditions.Admitted(c) || Bound(c)
}

// Labels are what a claim's classes are judged on: the labels its
// hostSelector asks for (matchLabels, and In requirements with one value),
// which its host has; once bound, with its labels under the tenant's
// prefixes over them (its host's, as the agent syncs them; a remote claim
// has none of these).
func Labels(c *metal3api.HostClaim, prefixes []string) labels.Set {
	out := labels.Set{}
	for k, v := range c.Spec.HostSelector.MatchLabels {
		out[k] = v
	}
	for _, e := range c.Spec.HostSelector.MatchExpressions {
		if (e.Operator == selection.In || e.Operator == selection.Equals || e.Operator == selection.DoubleEquals) && len(e.Values) == 1 {
			out[e.Key] = e.Values[0]
		}
	}
	if Bound(c) {
		for k, v := range c.Labels {
			if labelkeys.UnderPrefixes(k, prefixes) {
				out[k] = v
			}
		}
	}
	return out
}

// Counts are the claims counting against each class, by name. Claims
// being deleted still hold their hosts and count.
func Counts(classes []Class, claims []*metal3api.HostClaim, prefixes []string, f Fleet) map[string]int32 {
	out := make(map[string]int32, len(classes))
	for _, cl := range classes {
		out[cl.Name] = 0
	}
	for _, c := range claims {
		set := Labels(c, prefixes)
		for _, cl := range classes {
			if cl.Of(c, set, f) {
				out[cl.Name]++
			}
		}
	}
	return out
}

// byHardware reports whether a class of classes selects by hardware: its
// counts then need a Fleet.
func byHardware(classes []Class) bool {
	for _, cl := range classes {
		if cl.Hardware != nil {
			return true
		}
	}
	return false
}

// Usage is the tenant's status.classes: each class's count and cap.
func Usage(classes []Class, counts map[string]int32) []hostfleetv1alpha1.ClassUsage {
	out := make([]hostfleetv1alpha1.ClassUsage, 0, len(classes))
	for _, cl := range classes {
		out = append(out, hostfleetv1alpha1.ClassUsage{Name: cl.Name, Claims: counts[cl.Name], MaxClaims: cl.MaxClaims})
	}
	return out
}

// Verdict is what the classes say about placing a claim.
type Verdict struct {
	// Held names the full classes the claim asks for: it is not placed.
	Held []string
	// Message says why, with each class's use.
	Message string
	// Exclude are the selectors of the full classes the claim does not ask
	// for: it may be placed, on none of their hosts.
	Exclude []hostfleetv1alpha1.ClassSelector
}

// Decide judges one unplaced claim against its tenant's classes, counted
// over the tenant's other claims (counts must not include this one).
func Decide(classes []Class, counts map[string]int32, c *metal3api.HostClaim, prefixes []string, f Fleet) Verdict {
	var v Verdict
	set := Labels(c, prefixes)
	var why []string
	for _, cl := range classes {
		full := counts[cl.Name] >= cl.MaxClaims
		switch {
		case full && cl.Of(c, set, f):
			v.Held = append(v.Held, cl.Name)
			why = append(why, fmt.Sprintf("class %s holds %d of its %d claims", cl.Name, counts[cl.Name], cl.MaxClaims))
		case full:
			v.Exclude = append(v.Exclude, cl.HostSelector)
		}
	}
	if len(v.Held) > 0 {
		v.Message = fmt.Sprintf("not placed: the claim's hostSelector asks for full host classes of its tenant (%s); it is placed as soon as one of its claims in %s is deleted, or the cap raised",
			strings.Join(why, "; "), strings.Join(v.Held, ", "))
	}
	return v
}
