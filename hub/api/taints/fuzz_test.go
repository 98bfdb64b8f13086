package taints

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// FuzzParse: a list that parses is sorted label keys without duplicates,
// and a claim tolerating it tolerates a host tainted with it; one that
// does not taints its host for nobody.
func FuzzParse(f *testing.F) {
	f.Add("gpu, example.com/reserved,gpu")
	f.Add("a b,,")
	f.Fuzz(func(t *testing.T, v string) {
		keys, err := Parse(v)
		host := map[string]string{hostfleetv1alpha1.AnnotationTaints: v}
		claim := map[string]string{hostfleetv1alpha1.AnnotationTolerations: v}
		if err != nil {
			if Tolerated(claim, Of(host)) {
				t.Fatalf("a host tainted %q, which does not parse, is tolerated", v)
			}
			return
		}
		if !slices.IsSorted(keys) || len(slices.Compact(slices.Clone(keys))) != len(keys) {
			t.Fatalf("%q parsed as %v: not sorted and unique", v, keys)
		}
		for _, k := range keys {
			if len(validation.IsQualifiedName(k)) > 0 {
				t.Fatalf("%q parsed as key %q, which is no label key", v, k)
			}
		}
		if !Tolerated(claim, Of(host)) {
			t.Fatalf("a claim tolerating %q does not tolerate a host tainted %q", v, v)
		}
	})
}
