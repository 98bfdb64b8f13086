package scheduler

import (
	"fmt"
	"hash/fnv"
	"slices"
	"sort"
	"strings"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"

	"github.com/hostfleet/hostfleet/hub/api/exclusion"
	"github.com/hostfleet/hostfleet/hub/api/hardware"
	"github.com/hostfleet/hostfleet/hub/api/labelkeys"
	"github.com/hostfleet/hostfleet/hub/api/taints"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// Input is what Place looks at.
type Input struct {
	Claim *metal3api.HostClaim
	// Clusters are the candidate clusters: the tenant's set, already
	// intersected with the Placement's decisions.
	Clusters []string
	// Inventories by cluster.
	Inventories map[string]*hostfleetv1alpha1.HostInventory
	// Pending is, by cluster, the claims placed there that its inventory
	// does not count yet: not bound, or bound after it was written. They
	// are only read.
	Pending map[string][]*metal3api.HostClaim
	// Prefixes are the label prefixes inventories report; selector keys
	// outside them cannot be judged here and are left to the agent.
	Prefixes []string
	// Exclude are clusters not to use (where the claim timed out before).
	Exclude map[string]bool
	// ExcludeHosts select the pools the claim may not use: the tenant's
	// full host classes it does not ask for (classes.Decide).
	ExcludeHosts []exclusion.Selector
	// Placement is the Placement the claim names, if any; SetClusters are
	// the tenant's clusters before the Placement narrowed them.
	Placement   string
	SetClusters []string
	// Unavailable are the candidates whose ManagedCluster is not
	// Available, with since when: no claim is placed there.
	Unavailable map[string]time.Time
	// Hardware is the claim's hardware requirement (AnnotationHardware),
	// nil when it has none: only pools whose profile meets it are used,
	// and among the clusters, the one whose least such pool with free
	// hosts has the least hardware (hardware.Compare).
	Hardware *hardware.Requirement
	// Remote: the claim is forwarded (hostfleet.io/kind=remote). A cluster
	// that publishes no HostInventory (one that runs only its own HostClaim
	// controller, no Hostfleet agent) is then a candidate of unknown
	// capacity, chosen only when no cluster is known to have a free host.
	Remote bool
}

// Result is where to place the claim, or why nowhere.
type Result struct {
	Cluster string
	// Free is the free matching hosts counted on Cluster.
	Free int
	// Message explains a placement, or the lack of one, per cluster.
	Message string
	// Reason is why no cluster was chosen: ReasonWaitingForInventory while
	// none of the candidates has published a HostInventory, else
	// ReasonNoCapacity. Empty when placed.
	Reason string
}

// candidate is a cluster with free matching hosts.
type candidate struct {
	name string
	free int
	// least is the least hardware among its pools with free hosts that
	// meet the claim's requirement (nil without one).
	least *hostfleetv1alpha1.HardwareView
}

// Place chooses a cluster for a claim.
func Place(in Input) Result {
	sel, err := selector(in.Claim.Spec.HostSelector, in.Prefixes)
	if err != nil {
		return Result{Reason: hostfleetv1alpha1.ReasonNoCapacity, Message: fmt.Sprintf("spec.hostSelector is invalid: %v", err)}
	}
	var cands []candidate
	var why reasons
	var noInventory, unknown []string
	clusters := in.Clusters
	if !slices.IsSorted(clusters) {
		// A Tenant lists its clusters sorted: no copy to sort per decision.
		clusters = slices.Sorted(slices.Values(clusters))
	}
	for _, c := range clusters {
		inv := in.Inventories[c]
		switch {
		case in.Exclude[c]:
			why.add("%s (did not bind it in time)", c)
		case !in.Unavailable[c].IsZero():
			why.add("%s (not Available since %s)", c, at(in.Unavailable[c]))
		case inv == nil && in.Remote:
			unknown = append(unknown, c)
		case inv == nil:
			why.add("%s (no HostInventory yet)", c)
			noInventory = append(noInventory, c)
		default:
			o := offerOf(in, sel, c, inv)
			if o.free-o.pending <= 0 {
				if o.unmet > 0 && o.free == 0 {
					why.addWith(func() string {
						return fmt.Sprintf("%s (%d free matching hosts, none with the hardware asked: %s)", c, o.unmet, hardware.Closest(in.Hardware, o.unmetViews))
					})
					continue
				}
				why.add("%s (%d free matching hosts after %d pending claims)", c, o.free, o.pending)
				continue
			}
			cands = append(cands, candidate{c, o.free - o.pending, o.least})
		}
	}
	if len(cands) == 0 && len(unknown) > 0 {
		chosen := unknown[int(hash(in.Claim)%uint32(len(unknown)))]
		msg := fmt.Sprintf("placed on %s, which publishes no HostInventory: the claim is forwarded there and its own HostClaim controller decides whether a host matches", chosen)
		if why.n() > 0 {
			msg += fmt.Sprintf(" (no cluster with an inventory has a free matching host: %s)", why)
		}
		return Result{Cluster: chosen, Message: msg}
	}
	if len(cands) == 0 {
		return nowhere(in, clusters, noInventory, why)
	}
	return choose(in, cands)
}

// offer is what a cluster's inventory holds for a claim.
type offer struct {
	// free are the free hosts the claim may use, pending the claims placed
	// on the cluster and not yet bound that compete for them (they take
	// hosts first).
	free, pending int
	// least is the least hardware of the pools with free hosts that meet
	// the claim's requirement; unmet counts the free hosts the claim could
	// use but for its requirement, unmetViews are their profiles.
	least      *hostfleetv1alpha1.HardwareView
	unmet      int
	unmetViews []*hostfleetv1alpha1.HardwareView
}

// freeHosts counts the free hosts of inv that the claim may use, and the
// claims placed on cluster and not yet bound that compete for them.
func freeHosts(in Input, sel labels.Selector, cluster string, inv *hostfleetv1alpha1.HostInventory) (free, pending int) {
	o := offerOf(in, sel, cluster, inv)
	return o.free, o.pending
}

// offerOf is what inv holds for the claim.
func offerOf(in Input, sel labels.Selector, cluster string, inv *hostfleetv1alpha1.HostInventory) offer {
	var o offer
	// The pools the claim may use; within a failure domain that has free
	// hosts, only those (a failure domain is a preference).
	var usable, inFD []hostfleetv1alpha1.HostPool
	for _, p := range inv.Status.Pools {
		if admits(p.Namespaces, in.Claim.Namespace) && sel.Matches(labels.Set(p.Labels)) && !exclusion.Matches(in.ExcludeHosts, labels.Set(p.Labels), cluster, p.Profile, profile(inv, p.Profile)) &&
			taints.Tolerated(in.Claim.Annotations, p.Taints) {
			if in.Hardware != nil {
				view := profile(inv, p.Profile)
				if !in.Hardware.MeetsProfile(cluster, p.Profile, view) {
					if p.Available > 0 {
						o.unmet += int(p.Available)
						o.unmetViews = append(o.unmetViews, view)
					}
					continue
				}
				if p.Available > 0 && (o.least == nil || hardware.Compare(view, o.least) < 0) {
					o.least = view
				}
			}
			usable = append(usable, p)
			if fd := in.Claim.Spec.FailureDomain; fd != "" && p.FailureDomain == fd && p.Available > 0 {
				inFD = append(inFD, p)
			}
		}
	}
	if len(inFD) > 0 {
		usable = inFD
	}
	for _, p := range usable {
		o.free += int(p.Available)
	}
	for _, p := range in.Pending[cluster] {
		if competes(p, cluster, inv, usable, in.Prefixes) {
			o.pending++
		}
	}
	return o
}

// profile is the view of an inventory's profile; nil for hosts not
// inspected.
func profile(inv *hostfleetv1alpha1.HostInventory, name string) *hostfleetv1alpha1.HardwareView {
	if name == "" {
		return nil
	}
	for i := range inv.Status.Profiles {
		if inv.Status.Profiles[i].Name == name {
			return &inv.Status.Profiles[i].Hardware
		}
	}
	return nil
}

// nowhere says why no cluster of clusters can take the claim.
func nowhere(in Input, clusters, noInventory []string, why reasons) Result {
	switch {
	case len(clusters) == 0 && in.Placement != "" && len(in.SetClusters) > 0:
		return Result{Reason: hostfleetv1alpha1.ReasonNoCapacity, Message: fmt.Sprintf("Placement %s selects none of the tenant's clusters (%s): change the Placement, or remove the %s annotation",
			in.Placement, listed(in.SetClusters), hostfleetv1alpha1.AnnotationPlacement)}
	case len(clusters) == 0:
		return Result{Reason: hostfleetv1alpha1.ReasonNoCapacity, Message: "no cluster can serve the claim: the tenant's cluster set (and Placement, if any) has no clusters"}
	case len(noInventory) == len(clusters):
		return Result{Reason: hostfleetv1alpha1.ReasonWaitingForInventory, Message: fmt.Sprintf(
			"waiting for the agents of %s to publish their HostInventories: no cluster has reported its hosts yet; the claim is placed as soon as one does",
			listed(noInventory))}
	}
	return Result{Reason: hostfleetv1alpha1.ReasonNoCapacity, Message: fmt.Sprintf("no cluster has a free host matching %s for namespace %s: %s; the claim is placed as soon as one has",
		describe(in.Claim), in.Claim.Namespace, why)}
}

// listedMax is how many clusters a message names: an Event's message holds
// at most 1 024 characters, and a fleet has thousands of clusters.
const listedMax = 5

// listed names the first listedMax items, and how many more there are.
func listed(items []string) string {
	if len(items) <= listedMax {
		return strings.Join(items, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(items[:listedMax], ", "), len(items)-listedMax)
}

// reasons are why clusters were passed over, as listed says them: only the
// first listedMax are formatted (a decision passes over thousands of
// clusters, and says why only when it places the claim nowhere).
type reasons struct {
	said []func() string
	more int
}

// add says why a cluster cannot take the claim; the words are made only if
// they are printed (a claim placed elsewhere prints none).
func (r *reasons) add(format string, args ...any) {
	r.addWith(func() string { return fmt.Sprintf(format, args...) })
}

func (r *reasons) addWith(say func() string) {
	if len(r.said) < listedMax {
		r.said = append(r.said, say)
		return
	}
	r.more++
}

func (r reasons) n() int { return len(r.said) + r.more }

func (r reasons) String() string {
	said := make([]string, len(r.said))
	for i, say := range r.said {
		said[i] = say()
	}
	if r.more == 0 {
		return strings.Join(said, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(said, ", "), r.more)
}

// choose picks among the candidates: with a hardware requirement, those
// whose least meeting pool has the least hardware; then most free hosts
// first; among equals, a hash of the claim spreads claims.
func choose(in Input, cands []candidate) Result {
	if in.Hardware != nil {
		least := cands[0].least
		for _, c := range cands {
			if c.least != nil && (least == nil || hardware.Compare(c.least, least) < 0) {
				least = c.least
			}
		}
		var fit []candidate
		for _, c := range cands {
			if least == nil || c.least != nil && hardware.Compare(c.least, least) == 0 {
				fit = append(fit, c)
			}
		}
		cands = fit
	}
	best := cands[0].free
	for _, c := range cands {
		best = max(best, c.free)
	}
	var top []candidate
	for _, c := range cands {
		if c.free == best {
			top = append(top, c)
		}
	}
	chosen := top[int(hash(in.Claim)%uint32(len(top)))]
	msg := fmt.Sprintf("placed on %s: %d free hosts match", chosen.name, chosen.free)
	if keys := unpublished(in.Claim.Spec.HostSelector, in.Prefixes); len(keys) > 0 {
		// Say only what is known: inventories carry only the tenant's
		// prefixed labels, so these keys were not matched here.
		msg = fmt.Sprintf("placed on %s: %d free hosts match the labels the inventories publish; hostSelector keys %s are not published "+
			"(they are not under the tenant's labelSyncPrefixes), so they could not be checked here and the agent of %s checks them when it binds",
			chosen.name, chosen.free, strings.Join(keys, ", "), chosen.name)
	}
	return Result{Cluster: chosen.name, Free: chosen.free, Message: msg}
}

// hash spreads claims among equal clusters.
func hash(c *metal3api.HostClaim) uint32 {
	h := fnv.New32a()
	_, _ = h.Write([]byte(c.UID))
	return h.Sum32()
}

// unpublished are the hostSelector keys that no inventory reports (outside
// the prefixes), sorted.
func unpublished(hs metal3api.HostSelector, prefixes []string) []string {
	var keys []string
	for k := range hs.MatchLabels {
		if !labelkeys.UnderPrefixes(k, prefixes) {
			keys = append(keys, k)
		}
	}
	for _, e := range hs.MatchExpressions {
		if !labelkeys.UnderPrefixes(e.Key, prefixes) && !slices.Contains(keys, e.Key) {
			keys = append(keys, e.Key)
		}
	}
	sort.Strings(keys)
	return keys
}

// competes says whether a pending claim could take a host of one of pools.
// A selector or requirement that cannot be read competes for everything.
func competes(c *metal3api.HostClaim, cluster string, inv *hostfleetv1alpha1.HostInventory, pools []hostfleetv1alpha1.HostPool, prefixes []string) bool {
	sel, err := selector(c.Spec.HostSelector, prefixes)
	var r *hardware.Requirement
	if expr, ok := c.Annotations[hostfleetv1alpha1.AnnotationHardware]; ok {
		r, _ = hardware.Cached(expr)
	}
	for _, p := range pools {
		if admits(p.Namespaces, c.Namespace) && (err != nil || sel.Matches(labels.Set(p.Labels))) && taints.Tolerated(c.Annotations, p.Taints) &&
			(r == nil || r.MeetsProfile(cluster, p.Profile, profile(inv, p.Profile))) {
			return true
		}
	}
	return false
}

func admits(namespaces []string, ns string) bool {
	for _, n := range namespaces {
		if n == ns {
			return true
		}
	}
	return false
}

// selector keeps the requirements on keys the inventories report.
func selector(hs metal3api.HostSelector, prefixes []string) (labels.Selector, error) {
	sel := labels.NewSelector()
	keep := func(key string) bool { return labelkeys.UnderPrefixes(key, prefixes) }
	for k, v := range hs.MatchLabels {
		if !keep(k) {
			continue
		}
		r, err := labels.NewRequirement(k, "=", []string{v})
		if err != nil {
			return nil, err
		}
		sel = sel.Add(*r)
	}
	for _, e := range hs.MatchExpressions {
		if !keep(e.Key) {
			continue
		}
		r, err := labels.NewRequirement(e.Key, operator(string(e.Operator)), e.Values)
		if err != nil {
			return nil, err
		}
		sel = sel.Add(*r)
	}
	return sel, nil
}

func describe(c *metal3api.HostClaim) string {
	var parts []string
	for k, v := range c.Spec.HostSelector.MatchLabels {
		parts = append(parts, k+"="+v)
	}
	sort.Strings(parts)
	for _, e := range c.Spec.HostSelector.MatchExpressions {
		parts = append(parts, fmt.Sprintf("%s %s %v", e.Key, e.Operator, e.Values))
	}
	if c.Spec.FailureDomain != "" {
		parts = append(parts, "failure domain "+c.Spec.FailureDomain)
	}
	if len(parts) == 0 {
		return "(any host)"
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// operator maps an upstream HostSelector operator (any case) to a label
// selector operator.
func operator(op string) selection.Operator {
	switch strings.ToLower(op) {
	case "in":
		return selection.In
	case "notin":
		return selection.NotIn
	case "exists":
		return selection.Exists
	case "doesnotexist":
		return selection.DoesNotExist
	default:
		return selection.Operator(op)
	}
}
