package erase

import (
	"testing"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// FuzzOf: any annotation asks a mode at least as much as it parses to, and
// an unreadable one asks the most; Max never asks less than any input.
func FuzzOf(f *testing.F) {
	f.Add("Metadata", "Full")
	f.Add("wipe", "")
	f.Fuzz(func(t *testing.T, a, b string) {
		ma, mb := Of(map[string]string{hostfleetv1alpha1.AnnotationErase: a}), Of(map[string]string{hostfleetv1alpha1.AnnotationErase: b})
		if _, err := Parse(a); err != nil && ma != hostfleetv1alpha1.EraseFull {
			t.Fatalf("unreadable %q asks %s, not Full", a, ma)
		}
		m := Max(ma, mb)
		if Level(m) < Level(ma) || Level(m) < Level(mb) {
			t.Fatalf("Max(%s, %s) = %s", ma, mb, m)
		}
	})
}
