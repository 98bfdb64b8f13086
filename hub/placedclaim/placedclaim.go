package placedclaim

import (
	"encoding/json"
	"fmt"
	"strings"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// ClusterOf is the namespace of the PlacedClaim claim should have (its
// cluster's), or "" for none: the claim is gone, not placed, or forwarded
// (a forwarded claim reaches its cluster as a ManifestWork).
func ClusterOf(claim *metal3api.HostClaim) string {
	if claim == nil || claim.Labels[hostfleetv1alpha1.LabelKind] == hostfleetv1alpha1.KindRemote {
		return ""
	}
	return claim.Labels[hostfleetv1alpha1.LabelCluster]
}

// Key is the value of AnnotationPlacedClaim for a claim.
func Key(namespace, name string) string { return namespace + "/" + name }

// Copy is the PlacedClaim of claim in namespace cluster: named after the
// claim's UID, which is unique where "namespace.name" could exceed a
// name's length.
func Copy(claim *metal3api.HostClaim, cluster string) (*hostfleetv1alpha1.PlacedClaim, error) {
	c := claim.DeepCopy()
	c.ManagedFields = nil
	c.APIVersion, c.Kind = metal3api.GroupVersion.String(), "HostClaim"
	raw, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("encode claim %s/%s: %w", claim.Namespace, claim.Name, err)
	}
	return &hostfleetv1alpha1.PlacedClaim{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: cluster,
			Name:      string(claim.UID),
			Labels:    map[string]string{hostfleetv1alpha1.LabelClaimNamespace: claim.Namespace},
			Annotations: map[string]string{
				hostfleetv1alpha1.AnnotationPlacedClaim:                Key(claim.Namespace, claim.Name),
				hostfleetv1alpha1.AnnotationPlacedClaimResourceVersion: claim.ResourceVersion,
			},
		},
		Claim: runtime.RawExtension{Raw: raw},
	}, nil
}

// Existing is what the hub's cache holds of one PlacedClaim: its metadata.
type Existing struct {
	Namespace, Name string
	UID             types.UID
	ResourceVersion string
	// ClaimVersion is the claim's resourceVersion in the copy.
	ClaimVersion string
}

// Plan is what to do for one claim: delete the stale copies, then write
// the one it should have (nil: none, or it is current). Update says
// whether Write replaces an existing copy (with its resourceVersion).
type Plan struct {
	Delete []Existing
	Write  *Existing
	Update bool
}

// Decide plans the copies of a claim (nil when it is gone) from the
// copies that exist of it. A copy is current when it is in the claim's
// cluster, named after its UID, and holds its resourceVersion.
func Decide(claim *metal3api.HostClaim, existing []Existing) Plan {
	var p Plan
	cluster := ClusterOf(claim)
	var want *Existing
	if cluster != "" {
		want = &Existing{Namespace: cluster, Name: string(claim.UID), ClaimVersion: claim.ResourceVersion}
	}
	for _, e := range existing {
		if want == nil || e.Namespace != want.Namespace || e.Name != want.Name {
			p.Delete = append(p.Delete, e)
			continue
		}
		if e.ClaimVersion == want.ClaimVersion {
			want = nil
			continue
		}
		want.UID, want.ResourceVersion = e.UID, e.ResourceVersion
		p.Update = true
	}
	p.Write = want
	return p
}

// splitKey splits an AnnotationPlacedClaim value.
func splitKey(k string) (namespace, name string, ok bool) {
	namespace, name, ok = strings.Cut(k, "/")
	return namespace, name, ok && namespace != "" && name != ""
}
