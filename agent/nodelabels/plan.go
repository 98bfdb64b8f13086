package nodelabels

import (
	"maps"
	"slices"

	"github.com/hostfleet/hostfleet/agent/labelsync"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// Plan is what to do to one Node's labels.
type Plan struct {
	// Apply is every label the field manager hostfleet-labelsync owns on
	// the Node afterwards (server-side apply: a label it owned and leaves
	// out is removed); nil when the Node is already so.
	Apply map[string]string
	// Remove are labels to delete outright: labels under the prefixes that
	// someone else put on the Node and the claim does not have, and the
	// hostfleet.io/labels-pending gate once the synced labels are there.
	Remove []string
}

// Wanted are the claim's labels under the prefixes: what its Node carries.
func Wanted(claim map[string]string, prefixes []string) map[string]string {
	out := map[string]string{}
	for k, v := range claim {
		if labelsync.Under(k, prefixes) {
			out[k] = v
		}
	}
	return out
}

// PlanNode compares a Node's labels, and the keys hostfleet-labelsync owns
// there, with the claim's wanted labels. Labels under the prefixes follow
// the claim: added, changed, removed, restored when edited or deleted on
// the Node. Labels outside the prefixes are never touched, except that
// labels the field manager owns under a prefix since removed from the
// Tenant are kept as the Node has them (syncing stops; nothing is removed).
func PlanNode(node map[string]string, owned []string, wanted map[string]string, prefixes []string) Plan {
	apply := maps.Clone(wanted)
	for _, k := range owned {
		if v, ok := node[k]; ok && !labelsync.Under(k, prefixes) {
			apply[k] = v // a prefix removed from the Tenant: left as it is
		}
	}
	var p Plan
	same := len(owned) == len(apply)
	for _, k := range owned {
		if _, ok := apply[k]; !ok {
			same = false
		}
	}
	for k, v := range apply {
		if cur, ok := node[k]; !ok || cur != v {
			same = false
		}
	}
	if !same {
		p.Apply = apply
	}
	for k := range node {
		if _, ok := apply[k]; !ok && labelsync.Under(k, prefixes) && !slices.Contains(owned, k) {
			p.Remove = append(p.Remove, k)
		}
	}
	if _, ok := node[hostfleetv1alpha1.LabelLabelsPending]; ok {
		p.Remove = append(p.Remove, hostfleetv1alpha1.LabelLabelsPending)
	}
	slices.Sort(p.Remove)
	return p
}

// Empty says whether the plan changes nothing.
func (p Plan) Empty() bool { return p.Apply == nil && len(p.Remove) == 0 }
