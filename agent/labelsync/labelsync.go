package labelsync

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/hostfleet/hostfleet/hub/api/labelkeys"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// OwnPrefix is Hostfleet's label prefix; it and its sub-domains are never synced.
const OwnPrefix = "hostfleet.io"

// ValidPrefix says why a sync prefix is refused, or nil. Reserved Kubernetes
// prefixes and the Node-steering ones (and their sub-domains) are refused;
// other sub-domains of kubernetes.io are allowed. The CRD refuses the same at
// admission; this keeps a Tenant stored before that rule from syncing them.
func ValidPrefix(p string) error {
	for _, r := range hostfleetv1alpha1.ReservedLabelPrefixes {
		if p == r {
			return fmt.Errorf("label prefix %q is reserved for Kubernetes", p)
		}
	}
	for _, r := range hostfleetv1alpha1.NodeSteeringLabelPrefixes {
		if p == r || strings.HasSuffix(p, "."+r) {
			return fmt.Errorf("label prefix %q steers Nodes (role, NodeRestriction labels, scheduling): host labels there are never synced", p)
		}
	}
	if p == OwnPrefix || strings.HasSuffix(p, "."+OwnPrefix) {
		return fmt.Errorf("label prefix %q is Hostfleet's own: host labels there could move or forge a claim", p)
	}
	if msgs := validation.IsDNS1123Subdomain(p); len(msgs) > 0 {
		return fmt.Errorf("label prefix %q: %s", p, strings.Join(msgs, "; "))
	}
	return nil
}

// Prefixes keeps the valid prefixes and reports the refused ones.
func Prefixes(configured []string) (valid []string, refused []error) {
	for _, p := range configured {
		if err := ValidPrefix(p); err != nil {
			refused = append(refused, err)
			continue
		}
		valid = append(valid, p)
	}
	return valid, refused
}

// Under reports whether a label key lives under one of the prefixes.
func Under(key string, prefixes []string) bool {
	return labelkeys.UnderPrefixes(key, prefixes)
}

// Desired returns the claim's labels after sync: claim labels outside the
// prefixes as they are, host labels under the prefixes, and
// hostfleet.io/bound-host set to boundHost ("" erases it).
func Desired(claim, host map[string]string, prefixes []string, boundHost string) map[string]string {
	out := make(map[string]string, len(claim))
	for k, v := range claim {
		if !Under(k, prefixes) && k != hostfleetv1alpha1.LabelBoundHost {
			out[k] = v
		}
	}
	for k, v := range host {
		if Under(k, prefixes) {
			out[k] = v
		}
	}
	if boundHost != "" {
		out[hostfleetv1alpha1.LabelBoundHost] = boundHost
	}
	return out
}

// BoundHostValue is the bound-host label value for a host name, or "" when
// the name is not a valid label value (too long): the label is only a hint.
func BoundHostValue(hostName string) string {
	if len(validation.IsValidLabelValue(hostName)) > 0 {
		return ""
	}
	return hostName
}
