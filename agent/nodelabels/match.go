package nodelabels

import (
	"fmt"
	"slices"
	"strings"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// How a Node was found for a claim, strongest first: a Node another claim
// names by a stronger way is that claim's.
type Via int

const (
	ViaHardware   Via = iota // an address or the hostname in the claim's HardwareData copy
	ViaProviderID            // the Node's spec.providerID names the claim
	ViaAnnotation            // the claim's hostfleet.io/node annotation
)

func (v Via) String() string {
	switch v {
	case ViaAnnotation:
		return "annotation " + hostfleetv1alpha1.AnnotationNode
	case ViaProviderID:
		return "providerID"
	default:
		return "HardwareData"
	}
}

// Match is what was found for one claim: the Node (Reason
// ReasonLabelsSynced, pending the apply), or why none (ReasonNodeNotFound,
// ReasonNodeAmbiguous) in Message.
type Match struct {
	Node    string
	Via     Via
	Reason  string
	Message string
}

// Claim is a claim with what finding its Node may use.
type Claim struct {
	*metal3api.HostClaim
	// Hardware is the claim's HardwareData copy, or nil.
	Hardware *metal3api.HardwareDetails
}

// ProviderIDMatches says whether a Node's providerID names the claim, in
// the forms Cluster API Provider Metal3 writes with a claim in the host's
// place: metal3://<UID of the bound host> (the claim's hostfleet.io/host-uid,
// what CAPM3 makes from a HostClaim), metal3://<claim UID>, or
// metal3://<namespace>/<claim name> followed by nothing or by /<machine>.
func ProviderIDMatches(providerID string, c *metal3api.HostClaim) bool {
	rest, ok := strings.CutPrefix(providerID, "metal3://")
	if !ok || rest == "" {
		return false
	}
	if c.UID != "" && rest == string(c.UID) {
		return true
	}
	if uid := c.Annotations[hostfleetv1alpha1.AnnotationHostUID]; uid != "" && rest == uid {
		return true
	}
	nsName := c.Namespace + "/" + c.Name
	return rest == nsName || strings.HasPrefix(rest, nsName+"/")
}

// hardwareMatches says whether the Node has an address of one of the
// host's NICs, or the host's hostname as its name or Hostname address,
// and which.
func hardwareMatches(n *corev1.Node, hw *metal3api.HardwareDetails) (string, bool) {
	if hw == nil {
		return "", false
	}
	for _, a := range n.Status.Addresses {
		switch a.Type {
		case corev1.NodeInternalIP, corev1.NodeExternalIP:
			for _, nic := range hw.NIC {
				if nic.IP != "" && nic.IP == a.Address {
					return "address " + a.Address, true
				}
			}
		case corev1.NodeHostName:
			if hw.Hostname != "" && strings.EqualFold(hw.Hostname, a.Address) {
				return "hostname " + a.Address, true
			}
		}
	}
	if hw.Hostname != "" && strings.EqualFold(hw.Hostname, n.Name) {
		return "hostname " + n.Name, true
	}
	return "", false
}

// lookedFor says what finding a Node by providerID and HardwareData looked
// for, for a claim no Node matches.
func lookedFor(c Claim) string {
	ids := []string{"metal3://" + string(c.UID), "metal3://" + c.Namespace + "/" + c.Name + "[/…]"}
	if uid := c.Annotations[hostfleetv1alpha1.AnnotationHostUID]; uid != "" {
		ids = append([]string{"metal3://" + uid}, ids...)
	}
	parts := []string{"a providerID " + strings.Join(ids, " or ")}
	if c.Hardware == nil {
		parts = append(parts, "no HardwareData copy to match addresses or hostname")
	} else {
		var ips []string
		for _, nic := range c.Hardware.NIC {
			if nic.IP != "" {
				ips = append(ips, nic.IP)
			}
		}
		if len(ips) > 0 {
			parts = append(parts, "an address in "+strings.Join(ips, ", "))
		}
		if c.Hardware.Hostname != "" {
			parts = append(parts, "hostname "+c.Hardware.Hostname)
		}
	}
	return strings.Join(parts, "; ")
}

type candidate struct {
	node string
	via  Via
	why  string
}

// candidates are the Nodes that match the claim by the strongest way any
// does: the annotation decides alone; else providerID; else HardwareData.
func candidates(c Claim, nodes []corev1.Node) []candidate {
	if name := c.Annotations[hostfleetv1alpha1.AnnotationNode]; name != "" {
		for i := range nodes {
			if nodes[i].Name == name {
				return []candidate{{node: name, via: ViaAnnotation}}
			}
		}
		return nil
	}
	var out []candidate
	for i := range nodes {
		if ProviderIDMatches(nodes[i].Spec.ProviderID, c.HostClaim) {
			out = append(out, candidate{node: nodes[i].Name, via: ViaProviderID, why: nodes[i].Spec.ProviderID})
		}
	}
	if len(out) > 0 {
		return out
	}
	for i := range nodes {
		if why, ok := hardwareMatches(&nodes[i], c.Hardware); ok {
			out = append(out, candidate{node: nodes[i].Name, via: ViaHardware, why: why})
		}
	}
	return out
}

// MatchAll finds the Node of each claim, keyed by namespace/name: by the
// claim's hostfleet.io/node annotation, else the Node whose providerID
// names the claim, else the Node with an address or the hostname of the
// claim's HardwareData copy. Nothing is guessed: a claim matching several
// Nodes, or a Node matching several claims by the same way, is reported
// ambiguous; a Node one claim names by a stronger way is that claim's.
func MatchAll(cluster string, claims []Claim, nodes []corev1.Node) map[string]Match {
	out := make(map[string]Match, len(claims))
	found := map[string]candidate{}
	byNode := map[string][]string{}
	for _, c := range claims {
		key := c.Namespace + "/" + c.Name
		cands := candidates(c, nodes)
		switch {
		case len(cands) == 0 && c.Annotations[hostfleetv1alpha1.AnnotationNode] != "":
			out[key] = Match{Reason: hostfleetv1alpha1.ReasonNodeNotFound, Message: fmt.Sprintf(
				"Node %s, named by %s, is not on cluster %s (yet: kubelet registers it once the host has booted)",
				c.Annotations[hostfleetv1alpha1.AnnotationNode], hostfleetv1alpha1.AnnotationNode, cluster)}
		case len(cands) == 0:
			out[key] = Match{Reason: hostfleetv1alpha1.ReasonNodeNotFound, Message: fmt.Sprintf(
				"no Node on cluster %s matches (yet: kubelet registers it once the host has booted); looked for %s; set %s to the Node's name to say which",
				cluster, lookedFor(c), hostfleetv1alpha1.AnnotationNode)}
		case len(cands) > 1:
			var names []string
			for _, cd := range cands {
				names = append(names, cd.node+" ("+cd.why+")")
			}
			out[key] = Match{Reason: hostfleetv1alpha1.ReasonNodeAmbiguous, Message: fmt.Sprintf(
				"%d Nodes on cluster %s match by %s: %s; set %s to the Node's name to say which",
				len(cands), cluster, cands[0].via, strings.Join(names, ", "), hostfleetv1alpha1.AnnotationNode)}
		default:
			found[key] = cands[0]
			byNode[cands[0].node] = append(byNode[cands[0].node], key)
		}
	}
	for node, keys := range byNode {
		strongest := ViaHardware
		for _, k := range keys {
			strongest = max(strongest, found[k].via)
		}
		var top []string
		for _, k := range keys {
			if found[k].via == strongest {
				top = append(top, k)
			}
		}
		slices.Sort(top)
		for _, k := range keys {
			cd := found[k]
			switch {
			case cd.via != strongest:
				out[k] = Match{Reason: hostfleetv1alpha1.ReasonNodeAmbiguous, Message: fmt.Sprintf(
					"Node %s on cluster %s matches by %s, but claim %s names it by %s; set %s to say which Node is this claim's",
					node, cluster, cd.via, strings.Join(top, ", "), strongest, hostfleetv1alpha1.AnnotationNode)}
			case len(top) > 1:
				out[k] = Match{Reason: hostfleetv1alpha1.ReasonNodeAmbiguous, Message: fmt.Sprintf(
					"Node %s on cluster %s matches claims %s alike by %s; set %s on the right claim",
					node, cluster, strings.Join(top, ", "), strongest, hostfleetv1alpha1.AnnotationNode)}
			default:
				out[k] = Match{Node: node, Via: cd.via, Reason: hostfleetv1alpha1.ReasonLabelsSynced}
			}
		}
	}
	return out
}
