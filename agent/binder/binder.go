package binder

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/hostfleet/hostfleet/hub/api/erase"
	"github.com/hostfleet/hostfleet/hub/api/exclusion"
	"github.com/hostfleet/hostfleet/hub/api/hardware"
	"github.com/hostfleet/hostfleet/hub/api/taints"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// FailureDomainLabel is the BareMetalHost label that places a host in a
// failure domain, as in CAPM3 and the upstream HostClaim controller.
const FailureDomainLabel = "infrastructure.cluster.x-k8s.io/failure-domain"

// Input is everything Decide looks at.
type Input struct {
	// Consumer is how hosts bound to claims of this kind name them.
	Consumer Consumer
	// Claim is the hub claim.
	Claim *metal3api.HostClaim
	// NamespaceLabels are the labels of the claim's namespace on the hub.
	NamespaceLabels map[string]string
	// Policies are the HostDeployPolicies of the infrastructure cluster.
	Policies []metal3api.HostDeployPolicy
	// Hosts are the BareMetalHosts of the infrastructure cluster that could
	// matter: the ones naming this claim (whoever bound them) and the
	// candidates. Decide only reads them: they may be the cache's own
	// objects.
	Hosts []*metal3api.BareMetalHost
	// Reserved is the host the claim reserves (Reservation): the agent
	// writes it, with the claim's resourceVersion, before it binds the host,
	// so that a claim never has two bindings in flight.
	Reserved *metal3api.ObjectReference
	// ReservedHeldByGone is the reserved host when a claim that no longer
	// exists holds it: a cluster restored from an older backup (the hub
	// lost the holder, or the infrastructure cluster lost this claim's
	// binding). The orphan controller releases it after --orphan-grace;
	// the claim waits for it, keeping its reservation, rather than take
	// another host (and another claim's reservation).
	ReservedHeldByGone *metal3api.BareMetalHost
	// Erase is the least the claim's host must erase when the claim lets
	// it go (erase.Max of tenant, cluster and claim); EraseSupport says
	// the most a host can erase. A host that cannot erase enough is not
	// bound.
	Erase        hostfleetv1alpha1.EraseMode
	EraseSupport func(*metal3api.BareMetalHost) hostfleetv1alpha1.EraseMode
	// Hardware is the claim's hardware requirement (AnnotationHardware),
	// nil when it has none; HardwareInvalid says why it does not parse.
	// View gives a host's hardware (nil: not inspected, which meets no
	// requirement). Among the hosts that meet it, the claim takes one of
	// the least hardware (hardware.Compare).
	Hardware        *hardware.Requirement
	HardwareInvalid error
	View            func(*metal3api.BareMetalHost) *hostfleetv1alpha1.HardwareView
}

// erases reports whether h can erase what the claim asks.
func (in Input) erases(h *metal3api.BareMetalHost) bool {
	if erase.Level(in.Erase) == 0 {
		return true
	}
	return in.EraseSupport != nil && erase.Level(in.EraseSupport(h)) >= erase.Level(in.Erase)
}

// OtherController is the finalizer another HostClaim controller keeps on a
// local claim (baremetal-operator's, metal3.io/hostclaim), or "".
func OtherController(c *metal3api.HostClaim) string {
	for _, f := range c.Finalizers {
		if f == metal3api.HostClaimFinalizer {
			return f
		}
	}
	return ""
}

// ServesLocal says whether the agent serves a local claim (one on its own
// cluster, with --local-claims): one the hub forwarded (it carries the
// forwarder's hostfleet.io/source-claim-uid) or one in a namespace an
// administrator named. Any other is some other controller's, or nobody's.
func ServesLocal(c *metal3api.HostClaim, namespaces []string) bool {
	return c.Annotations[hostfleetv1alpha1.AnnotationSourceClaimUID] != "" || slices.Contains(namespaces, c.Namespace)
}

// Action is what the controller must do.
type Action int

const (
	// Wait: nothing can be bound now; Reason and Message say why.
	Wait Action = iota
	// Keep: the claim already holds Host.
	Keep
	// Bind: write the claim's consumerRef on Host, the claim's reserved host.
	Bind
	// Reserve: name Host in the claim's reservation (with the claim's
	// resourceVersion), then bind it.
	Reserve
	// Defer: another HostClaim controller serves the claim (local claims
	// only): release the hosts this agent holds for it (Strays), drop the
	// reservation and the finalizer, write nothing else on it.
	Defer
)

func (a Action) String() string {
	switch a {
	case Keep:
		return "Keep"
	case Bind:
		return "Bind"
	case Reserve:
		return "Reserve"
	case Defer:
		return "Defer"
	default:
		return "Wait"
	}
}

// Decision is Decide's answer.
type Decision struct {
	Action Action
	// Host is the held or chosen host (Keep, Bind).
	Host *metal3api.BareMetalHost
	// Reason is a stable CamelCase reason for the Associated condition when
	// Action is Wait.
	Reason string
	// Message tells the tenant what is wrong and what to do.
	Message string
	// Strays are hosts that name the claim in their consumerRef but are not
	// the one it keeps or reserves: left over from a binding that lost a
	// race. They were never given the claim's spec and must be unbound.
	Strays []*metal3api.BareMetalHost
	// KeepReservation, with Wait, keeps the claim's reservation: its
	// reserved host is released soon (ReservedHeldByGone) and then bound.
	KeepReservation bool
}

// Decide returns what to do for a claim that is not being deleted.
//
// The claim's reservation (Reservation) is the only host it may hold:
// a host naming the claim is kept if it is the reservation (or if there is no
// reservation yet, for claims bound before reservations existed); any other is
// a stray. Otherwise the reserved host is bound if it is still free and
// eligible, or a new host is chosen to be reserved.
//
// A local claim another HostClaim controller serves is left to it (Defer):
// a host naming the claim that this agent did not bind (no
// hostfleet.io/claim-uid) means that controller bound it, and a claim that
// carries its finalizer is never bound by the agent (one it holds a host for
// already, because it bound first, it keeps).
func Decide(in Input) Decision {
	held := heldHosts(in)
	if d, ok := deferTo(in, held); ok {
		return d
	}
	var strays []*metal3api.BareMetalHost
	if len(held) > 0 {
		keep := -1
		for i, h := range held {
			if in.Reserved == nil || isRef(in.Reserved, h) {
				keep = i
				break
			}
		}
		if keep >= 0 {
			for i, h := range held {
				if i != keep {
					strays = append(strays, h)
				}
			}
			return Decision{Action: Keep, Host: held[keep], Strays: strays}
		}
		strays = held
	}
	d := choose(in)
	d.Strays = strays
	return d
}

// HeldDecides reports whether Decide's answer for in, whose Hosts are the
// hosts naming the claim, stays the same whatever free hosts are added: the
// claim keeps a host it holds, or is deferred to another HostClaim
// controller. Free hosts need only be gathered when it is false, so a bound
// claim costs no pass over every free host.
func HeldDecides(in Input) bool {
	switch Decide(in).Action {
	case Keep, Defer:
		return true
	default:
		return false
	}
}

// deferTo is the Defer decision for a local claim that another HostClaim
// controller serves.
func deferTo(in Input, held []*metal3api.BareMetalHost) (Decision, bool) {
	if in.Consumer.Hub != "" {
		return Decision{}, false
	}
	c := in.Claim
	for _, h := range in.Hosts {
		if BoundByOther(h, c) {
			return Decision{Action: Defer, Strays: held, Reason: hostfleetv1alpha1.ReasonServedByOtherController, Message: fmt.Sprintf(
				"BareMetalHost %s/%s names the claim and was bound by another HostClaim controller (an upstream metal3.io consumerRef without the claim's %s): that controller serves the claim",
				h.Namespace, h.Name, hostfleetv1alpha1.AnnotationClaimUID)}, true
		}
	}
	f := OtherController(c)
	if f == "" {
		return Decision{}, false
	}
	if len(held) == 0 {
		return Decision{Action: Defer, Reason: hostfleetv1alpha1.ReasonServedByOtherController, Message: fmt.Sprintf(
			"the claim carries finalizer %s: baremetal-operator's HostClaim controller serves it", f)}, true
	}
	// The agent writes status.bareMetalHost only with a host it holds:
	// another host there is the other controller's association, which a
	// stale cache does not show yet.
	if ref := c.Status.BareMetalHost; ref != nil && !slices.ContainsFunc(held, func(h *metal3api.BareMetalHost) bool { return isRef(ref, h) }) {
		return Decision{Action: Defer, Strays: held, Reason: hostfleetv1alpha1.ReasonServedByOtherController, Message: fmt.Sprintf(
			"the claim carries finalizer %s and its status names BareMetalHost %s/%s: baremetal-operator's HostClaim controller associated it",
			f, ref.Namespace, ref.Name)}, true
	}
	return Decision{}, false
}

func choose(in Input) Decision {
	sel, err := Selector(in.Claim.Spec.HostSelector)
	if err != nil {
		return Decision{Action: Wait, Reason: hostfleetv1alpha1.ReasonInvalidSelector,
			Message: fmt.Sprintf("spec.hostSelector is invalid: %v; fix the claim's hostSelector", err)}
	}
	admitted, err := AdmittedNamespaces(in.Policies, in.Claim.Namespace, in.NamespaceLabels, in.Claim.Spec.HostSelector.InNamespace)
	if err != nil {
		return Decision{Action: Wait, Reason: hostfleetv1alpha1.ReasonNoDeployPolicy,
			Message: fmt.Sprintf("cannot evaluate HostDeployPolicies: %v; the cluster administrator must fix the policy", err)}
	}
	if admitted.Len() == 0 {
		where := "any namespace"
		if ns := in.Claim.Spec.HostSelector.InNamespace; ns != "" {
			where = "namespace " + ns
		}
		return Decision{Action: Wait, Reason: hostfleetv1alpha1.ReasonNoDeployPolicy,
			Message: fmt.Sprintf("no HostDeployPolicy in %s admits claims from namespace %s; ask the cluster administrator to admit it", where, in.Claim.Namespace)}
	}
	excluded, err := exclusion.Of(in.Claim)
	if err != nil {
		return Decision{Action: Wait, Reason: hostfleetv1alpha1.ReasonInvalidSelector,
			Message: fmt.Sprintf("the hub's %v; the hub writes it when it places the claim", err)}
	}
	if in.HardwareInvalid != nil {
		return Decision{Action: Wait, Reason: hostfleetv1alpha1.ReasonInvalidHardware,
			Message: fmt.Sprintf("%s: %v", hostfleetv1alpha1.AnnotationHardware, in.HardwareInvalid)}
	}
	f := scan(in, sel, admitted, excluded)
	if f.reserved != nil {
		return Decision{Action: Bind, Host: f.reserved}
	}
	if h := in.ReservedHeldByGone; h != nil && isRef(in.Reserved, h) {
		ref := h.Spec.ConsumerRef
		return Decision{Action: Wait, KeepReservation: true, Reason: hostfleetv1alpha1.ReasonReservedHostOrphaned, Message: fmt.Sprintf(
			"BareMetalHost %s/%s, which the claim reserves, is held by claim %s/%s, which no longer exists (a cluster restored from an older backup?): "+
				"the agent releases it after its --orphan-grace, then binds it to this claim again", h.Namespace, h.Name, ref.Namespace, ref.Name)}
	}
	if len(f.free) == 0 && f.unerasable > 0 {
		return Decision{Action: Wait, Reason: hostfleetv1alpha1.ReasonEraseUnsupported, Message: fmt.Sprintf(
			"%d free matching hosts cannot erase %s at release, as the claim's erase policy asks (tenant spec.erase, the cluster's --erase or %s): "+
				"hosts baremetal-operator serves erase Metadata at most (automatedCleaningMode), hosts the agent drives only with an erase image "+
				"(--erase-image for Redfish, --erase-pxe for IPMI); the claim binds as soon as a host can",
			f.unerasable, in.Erase, hostfleetv1alpha1.AnnotationErase)}
	}
	if len(f.free) == 0 {
		return Decision{Action: Wait, Reason: hostfleetv1alpha1.ReasonNoHostAvailable, Message: noneFree(in, sel, admitted, f)}
	}
	free := f.free
	if in.Hardware != nil {
		free = least(free, f.views)
	}
	return Decision{Action: Reserve, Host: pick(in.Claim, free)}
}

// found is what scan found among the hosts.
type found struct {
	// reserved is the claim's reserved host, when it may still take it.
	reserved *metal3api.BareMetalHost
	// free are the hosts the claim may take, views their hardware.
	free  []*metal3api.BareMetalHost
	views map[*metal3api.BareMetalHost]*hostfleetv1alpha1.HardwareView
	// Free matching hosts the claim may not take: in a full class, tainted,
	// unable to erase, or without the hardware asked (unmet: their views).
	kept, tainted, unerasable int
	unmet                     []*hostfleetv1alpha1.HardwareView
}

// scan sorts the free matching hosts into those the claim may take and
// why it may not take the others.
func scan(in Input, sel labels.Selector, admitted sets.Set[string], excluded []exclusion.Selector) found {
	f := found{views: map[*metal3api.BareMetalHost]*hostfleetv1alpha1.HardwareView{}}
	for _, h := range in.Hosts {
		if !admitted.Has(h.Namespace) || !sel.Matches(labels.Set(h.Labels)) || !Free(h) {
			continue
		}
		ok, view := in.meets(h)
		switch {
		case in.kept(excluded, h):
			f.kept++
		case !taints.Tolerated(in.Claim.Annotations, taints.Of(h.Annotations)):
			f.tainted++
		case !in.erases(h):
			f.unerasable++
		case !ok:
			f.unmet = append(f.unmet, view)
		case isRef(in.Reserved, h):
			f.reserved = h
			return f
		default:
			f.views[h] = view
			f.free = append(f.free, h)
		}
	}
	return f
}

// noneFree says why no free host matching the selector may be taken.
func noneFree(in Input, sel labels.Selector, admitted sets.Set[string], f found) string {
	msg := fmt.Sprintf("no free BareMetalHost matches hostSelector %s in admitted namespaces %s; "+
		"the claim binds as soon as one is available, or relax the selector", describe(sel), strings.Join(sets.List(admitted), ","))
	if f.kept > 0 {
		msg += fmt.Sprintf(" (%d free matching hosts are in host classes of the tenant that were full when the hub placed the claim: %s)",
			f.kept, hostfleetv1alpha1.AnnotationExcludedHosts)
	}
	if f.tainted > 0 {
		msg += fmt.Sprintf(" (%d free matching hosts are tainted (%s) with keys the claim's %s does not name)",
			f.tainted, hostfleetv1alpha1.AnnotationTaints, hostfleetv1alpha1.AnnotationTolerations)
	}
	if len(f.unmet) > 0 {
		msg += fmt.Sprintf(" (%d free matching hosts lack the hardware the claim's %s asks: %s)",
			len(f.unmet), hostfleetv1alpha1.AnnotationHardware, hardware.Closest(in.Hardware, f.unmet))
	}
	return msg
}

// Eligible reports whether a host could be bound to the claim now: free,
// admitted for the claim's namespace and matching its selector.
func Eligible(in Input, h *metal3api.BareMetalHost) bool {
	if !Free(h) {
		return false
	}
	sel, err := Selector(in.Claim.Spec.HostSelector)
	if err != nil || !sel.Matches(labels.Set(h.Labels)) {
		return false
	}
	if excluded, err := exclusion.Of(in.Claim); err != nil || in.kept(excluded, h) {
		return false
	}
	if !taints.Tolerated(in.Claim.Annotations, taints.Of(h.Annotations)) || !in.erases(h) || in.HardwareInvalid != nil {
		return false
	}
	if ok, _ := in.meets(h); !ok {
		return false
	}
	admitted, err := AdmittedNamespaces(in.Policies, in.Claim.Namespace, in.NamespaceLabels, in.Claim.Spec.HostSelector.InNamespace)
	return err == nil && admitted.Has(h.Namespace)
}

func isRef(ref *metal3api.ObjectReference, h *metal3api.BareMetalHost) bool {
	return ref != nil && ref.Namespace == h.Namespace && ref.Name == h.Name
}

// heldHosts are the hosts whose consumerRef names the claim, sorted. A host
// naming the claim but another UID belonged to an earlier claim of the same
// name and is not this claim's.
func heldHosts(in Input) []*metal3api.BareMetalHost {
	var out []*metal3api.BareMetalHost
	for _, h := range in.Hosts {
		if in.Consumer.Holds(h, in.Claim) {
			out = append(out, h)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].Namespace+"/"+out[i].Name < out[j].Namespace+"/"+out[j].Name
	})
	return out
}

// Reservation is the host a claim reserves: its hostfleet.io/reserved-host
// annotation or, on a claim reserved before the annotation existed, its
// status.bareMetalHost. A malformed annotation reserves nothing.
func Reservation(c *metal3api.HostClaim) *metal3api.ObjectReference {
	v, ok := c.Annotations[hostfleetv1alpha1.AnnotationReservedHost]
	if !ok {
		return c.Status.BareMetalHost
	}
	ns, name, found := strings.Cut(v, "/")
	if !found || ns == "" || name == "" {
		return nil
	}
	return &metal3api.ObjectReference{Namespace: ns, Name: name}
}

// Unconfirmed is the host the claim reserves when none of held (the hosts
// a cache shows holding it) is that host, else nil: a binding the cache may
// not show yet. A claim letting go reads it from the API server first; a
// host bound a moment before the claim's deletion would otherwise stay
// bound to a claim that is gone.
func Unconfirmed(c *metal3api.HostClaim, held []*metal3api.BareMetalHost) *metal3api.ObjectReference {
	r := Reservation(c)
	if r == nil || slices.ContainsFunc(held, func(h *metal3api.BareMetalHost) bool { return h.Namespace == r.Namespace && h.Name == r.Name }) {
		return nil
	}
	return r
}

// ReservationValue is the hostfleet.io/reserved-host annotation naming h.
func ReservationValue(h *metal3api.BareMetalHost) string { return h.Namespace + "/" + h.Name }

// Upstream's markers of hosts no new claim may take (baremetal-operator's
// pkg/hostclaim, as CAPM3): a host kept for a Metal3Machine to reuse, and a
// host Metal3Remediation marked unhealthy.
const (
	NodeReuseLabel      = "infrastructure.cluster.x-k8s.io/node-reuse"
	UnhealthyAnnotation = "capi.metal3.io/unhealthy"
)

const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)
