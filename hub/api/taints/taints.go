// Package taints reads a BareMetalHost's hostfleet.io/taints and a claim's
// hostfleet.io/tolerations: a tainted host is placed and bound only for
// claims that tolerate every one of its taints.
package taints

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// Parse reads a comma-separated list of taint keys (qualified names, as
// label keys): sorted, without duplicates or blanks.
func Parse(v string) ([]string, error) {
	var out []string
	for _, k := range strings.Split(v, ",") {
		k = strings.TrimSpace(k)
		if k == "" {
			continue
		}
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return nil, fmt.Errorf("%q is not a taint key (%s)", k, strings.Join(errs, "; "))
		}
		out = append(out, k)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// Of is a host's taints. A value that does not parse taints the host with
// itself: it is then placed for no claim until its administrator fixes it.
func Of(annotations map[string]string) []string {
	v, ok := annotations[hostfleetv1alpha1.AnnotationTaints]
	if !ok {
		return nil
	}
	t, err := Parse(v)
	if err != nil {
		return []string{v}
	}
	return t
}

// Tolerated reports whether a claim with these annotations tolerates
// every taint. A tolerations value that does not parse tolerates nothing
// (admission refuses it on the hub).
func Tolerated(claimAnnotations map[string]string, taints []string) bool {
	if len(taints) == 0 {
		return true
	}
	tol, err := Parse(claimAnnotations[hostfleetv1alpha1.AnnotationTolerations])
	if err != nil {
		return false
	}
	for _, t := range taints {
		if _, found := slices.BinarySearch(tol, t); !found {
			return false
		}
	}
	return true
}
