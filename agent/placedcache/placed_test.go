package placedcache

import (
	"context"
	"encoding/json"
	"testing"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

func copyOf(g Gomega, c *metal3api.HostClaim, rv string) *hostfleetv1alpha1.PlacedClaim {
	raw, err := json.Marshal(c)
	g.Expect(err).NotTo(HaveOccurred())
	return &hostfleetv1alpha1.PlacedClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "c1", Name: string(c.UID), ResourceVersion: rv},
		Claim: runtime.RawExtension{Raw: raw}}
}

// TestClaimThenTransform: the informer sees the copy's resourceVersion (it
// resumes its watch from it); the cache, after Transform, the claim's.
func TestClaimThenTransform(t *testing.T) {
	g := NewWithT(t)
	c := &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "web", UID: "u1", ResourceVersion: "7",
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m"}}}}
	got, err := Claim(copyOf(g, c, "90"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.ResourceVersion).To(Equal("90"))
	g.Expect(got.Namespace + "/" + got.Name).To(Equal("tenant-a/web"))

	stripped := 0
	tr := Transform(func(in any) (any, error) { stripped++; in.(*metal3api.HostClaim).ManagedFields = nil; return in, nil })
	out, err := tr(got)
	g.Expect(err).NotTo(HaveOccurred())
	cached := out.(*metal3api.HostClaim)
	g.Expect(cached.ResourceVersion).To(Equal("7"))
	g.Expect(cached.Annotations).To(BeNil(), "the carried version is removed")
	g.Expect(cached.ManagedFields).To(BeNil())
	g.Expect(stripped).To(Equal(1), "next applied")

	again, err := Transform(nil)(cached)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again.(*metal3api.HostClaim).ResourceVersion).To(Equal("7"), "idempotent")

	c.Annotations = map[string]string{"a": "b"}
	got, err = Claim(copyOf(g, c, "91"))
	g.Expect(err).NotTo(HaveOccurred())
	out, _ = Transform(nil)(got)
	g.Expect(out.(*metal3api.HostClaim).Annotations).To(Equal(map[string]string{"a": "b"}), "the claim's own annotations kept")
}

func TestConvert(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	c := &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "web", UID: "u1", ResourceVersion: "7"}}
	e, ok := convert(ctx, watch.Event{Type: watch.Modified, Object: copyOf(g, c, "90")})
	g.Expect(ok).To(BeTrue())
	g.Expect(e.Type).To(Equal(watch.Modified))
	g.Expect(e.Object).To(BeAssignableToTypeOf(&metal3api.HostClaim{}))
	g.Expect(e.Object.(*metal3api.HostClaim).ResourceVersion).To(Equal("90"))

	bm := &hostfleetv1alpha1.PlacedClaim{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "95"}}
	e, ok = convert(ctx, watch.Event{Type: watch.Bookmark, Object: bm})
	g.Expect(ok).To(BeTrue())
	g.Expect(e.Object.(*metal3api.HostClaim).ResourceVersion).To(Equal("95"), "a bookmark keeps its version")

	bad := &hostfleetv1alpha1.PlacedClaim{ObjectMeta: metav1.ObjectMeta{Name: "x"}, Claim: runtime.RawExtension{Raw: []byte(`{"spec": 3}`)}}
	_, ok = convert(ctx, watch.Event{Type: watch.Added, Object: bad})
	g.Expect(ok).To(BeFalse(), "a copy that does not decode is dropped")

	status := &metav1.Status{Message: "too old"}
	e, ok = convert(ctx, watch.Event{Type: watch.Error, Object: status})
	g.Expect(ok).To(BeTrue())
	g.Expect(e.Object).To(BeIdenticalTo(status), "errors passed on")
}
