package placedclaim_test

import (
	"encoding/json"
	"testing"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/hub/placedclaim"
)

func claim(cluster, kind, rv string) *metal3api.HostClaim {
	c := &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "c", UID: "u1", ResourceVersion: rv,
		Labels: map[string]string{}}}
	if cluster != "" {
		c.Labels[hostfleetv1alpha1.LabelCluster] = cluster
	}
	if kind != "" {
		c.Labels[hostfleetv1alpha1.LabelKind] = kind
	}
	return c
}

func TestDecide(t *testing.T) {
	current := placedclaim.Existing{Namespace: "c1", Name: "u1", UID: "p1", ResourceVersion: "50", ClaimVersion: "7"}
	behind := current
	behind.ClaimVersion = "6"
	elsewhere := placedclaim.Existing{Namespace: "c2", Name: "u1", UID: "p2", ClaimVersion: "7"}
	earlier := placedclaim.Existing{Namespace: "c1", Name: "u0", UID: "p0", ClaimVersion: "3"}
	for _, tc := range []struct {
		name       string
		claim      *metal3api.HostClaim
		existing   []placedclaim.Existing
		wantDelete []placedclaim.Existing
		wantWrite  *placedclaim.Existing
		wantUpdate bool
	}{
		{name: "placed, no copy: create it", claim: claim("c1", "", "7"),
			wantWrite: &placedclaim.Existing{Namespace: "c1", Name: "u1", ClaimVersion: "7"}},
		{name: "copy current: nothing", claim: claim("c1", "", "7"), existing: []placedclaim.Existing{current}},
		{name: "copy behind: update it, at its resourceVersion", claim: claim("c1", "", "7"), existing: []placedclaim.Existing{behind},
			wantWrite: &placedclaim.Existing{Namespace: "c1", Name: "u1", UID: "p1", ResourceVersion: "50", ClaimVersion: "7"}, wantUpdate: true},
		{name: "moved to c1: delete c2's, create c1's", claim: claim("c1", "", "7"), existing: []placedclaim.Existing{elsewhere},
			wantDelete: []placedclaim.Existing{elsewhere}, wantWrite: &placedclaim.Existing{Namespace: "c1", Name: "u1", ClaimVersion: "7"}},
		{name: "recreated under its name: delete the earlier claim's", claim: claim("c1", "", "7"), existing: []placedclaim.Existing{earlier, current},
			wantDelete: []placedclaim.Existing{earlier}},
		{name: "claim gone: delete", existing: []placedclaim.Existing{current}, wantDelete: []placedclaim.Existing{current}},
		{name: "unplaced: delete", claim: claim("", "", "8"), existing: []placedclaim.Existing{current}, wantDelete: []placedclaim.Existing{current}},
		{name: "forwarded: none", claim: claim("c1", hostfleetv1alpha1.KindRemote, "7"), existing: []placedclaim.Existing{current},
			wantDelete: []placedclaim.Existing{current}},
		{name: "pull kind named: a copy", claim: claim("c1", hostfleetv1alpha1.KindBaremetal, "7"),
			wantWrite: &placedclaim.Existing{Namespace: "c1", Name: "u1", ClaimVersion: "7"}},
		{name: "gone, no copy: nothing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			p := placedclaim.Decide(tc.claim, tc.existing)
			g.Expect(p.Delete).To(Equal(tc.wantDelete))
			g.Expect(p.Write).To(Equal(tc.wantWrite))
			g.Expect(p.Update).To(Equal(tc.wantUpdate))
		})
	}
}

func TestCopy(t *testing.T) {
	g := NewWithT(t)
	c := claim("c1", "", "7")
	c.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "m"}}
	c.Spec.PoweredOn = true
	pc, err := placedclaim.Copy(c, "c1")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(pc.Namespace).To(Equal("c1"))
	g.Expect(pc.Name).To(Equal("u1"))
	g.Expect(pc.Labels).To(HaveKeyWithValue(hostfleetv1alpha1.LabelClaimNamespace, "tenant-a"))
	g.Expect(pc.Annotations).To(HaveKeyWithValue(hostfleetv1alpha1.AnnotationPlacedClaim, "tenant-a/c"))
	g.Expect(pc.Annotations).To(HaveKeyWithValue(hostfleetv1alpha1.AnnotationPlacedClaimResourceVersion, "7"))
	var back metal3api.HostClaim
	g.Expect(json.Unmarshal(pc.Claim.Raw, &back)).To(Succeed())
	g.Expect(back.ManagedFields).To(BeEmpty())
	g.Expect(back.ResourceVersion).To(Equal("7"))
	g.Expect(back.Spec.PoweredOn).To(BeTrue())
	g.Expect(back.Kind).To(Equal("HostClaim"))
	g.Expect(c.ManagedFields).To(HaveLen(1), "the claim itself is not changed")
}
