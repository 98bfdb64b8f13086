// Package erase orders the erase modes (None < Metadata < Full) and reads
// the hostfleet.io/erase annotation: a host is erased at release at least
// as its tenant, its cluster and its claim ask, whichever asks most.
package erase

import (
	"fmt"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// Level orders the modes: None (or unset) 0, Metadata 1, Full 2.
func Level(m hostfleetv1alpha1.EraseMode) int {
	switch m {
	case hostfleetv1alpha1.EraseMetadata:
		return 1
	case hostfleetv1alpha1.EraseFull:
		return 2
	}
	return 0
}

// Max is the most any of modes asks; None when none asks anything.
func Max(modes ...hostfleetv1alpha1.EraseMode) hostfleetv1alpha1.EraseMode {
	out := hostfleetv1alpha1.EraseNone
	for _, m := range modes {
		if Level(m) > Level(out) {
			out = m
		}
	}
	return out
}

// Parse reads a mode; "" is None.
func Parse(v string) (hostfleetv1alpha1.EraseMode, error) {
	switch m := hostfleetv1alpha1.EraseMode(v); m {
	case "", hostfleetv1alpha1.EraseNone:
		return hostfleetv1alpha1.EraseNone, nil
	case hostfleetv1alpha1.EraseMetadata, hostfleetv1alpha1.EraseFull:
		return m, nil
	}
	return "", fmt.Errorf("%s %q is not one of None, Metadata, Full", hostfleetv1alpha1.AnnotationErase, v)
}

// Of is what the annotations ask; a value that does not parse asks Full
// (admission refuses it on the hub; a local claim's is taken at its most).
func Of(annotations map[string]string) hostfleetv1alpha1.EraseMode {
	m, err := Parse(annotations[hostfleetv1alpha1.AnnotationErase])
	if err != nil {
		return hostfleetv1alpha1.EraseFull
	}
	return m
}
