package forwarder

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"k8s.io/apimachinery/pkg/types"
)

// NamespacePrefix starts the name of every namespace the forwarder makes on
// target clusters.
const NamespacePrefix = "hf-"

// TargetNamespace is the namespace, on every target cluster, of the claims
// forwarded from one hub namespace: "hf-<hub namespace>". Hub namespaces are
// unique on the hub and each belongs to one tenant, so two tenants never
// share one. A name over the 63-character limit is cut and ends with a hash
// of the whole hub namespace name, so that it stays unique.
func TargetNamespace(hubNamespace string) string {
	return fit(NamespacePrefix+hubNamespace, 63, hubNamespace)
}

// WorkName is the name of a claim's ManifestWork: its UID, so that a claim
// deleted and recreated under the same name never meets its predecessor's
// work.
func WorkName(uid types.UID) string { return "hostclaim-" + string(uid) }

// SecretName is the name of the copy of a claim's secret for one role
// (userdata, networkdata, metadata) in the target namespace: one copy per
// claim and role, so that claims sharing a hub secret never share a copy.
func SecretName(claim, role string) string {
	return fit(claim+"-"+role, 253, claim+"/"+role)
}

// SecretReaderName names the Role (and RoleBinding) letting the agent read
// a forwarded claim's secret copies.
func SecretReaderName(claim string) string {
	return fit(claim+"-secrets-reader", 253, claim+"/secrets-reader")
}

// fit returns name if it is at most max long, else a prefix of it followed
// by "-" and a hash of key.
func fit(name string, max int, key string) string {
	if len(name) <= max {
		return name
	}
	sum := sha256.Sum256([]byte(key))
	h := hex.EncodeToString(sum[:])[:10]
	return strings.TrimRight(name[:max-len(h)-1], "-.") + "-" + h
}
