// Package exclusion reads and writes a hub claim's
// hostfleet.io/excluded-hosts: the host selectors of the full host classes
// the scheduler keeps the claim off, which the agent honours when it binds.
package exclusion

import (
	"encoding/json"
	"fmt"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// Encode is the annotation's value for selectors; empty for none.
func Encode(sels []hostfleetv1alpha1.ClassSelector) (string, error) {
	if len(sels) == 0 {
		return "", nil
	}
	b, err := json.Marshal(sels)
	return string(b), err
}

// Of decodes a claim's annotation into selectors; none without it. A value
// that does not decode is an error: the agent then binds nothing rather
// than a host the hub kept the claim off.
func Of(c *metal3api.HostClaim) ([]labels.Selector, error) {
	v := c.Annotations[hostfleetv1alpha1.AnnotationExcludedHosts]
	if v == "" {
		return nil, nil
	}
	var sels []hostfleetv1alpha1.ClassSelector
	if err := json.Unmarshal([]byte(v), &sels); err != nil {
		return nil, fmt.Errorf("%s: %w", hostfleetv1alpha1.AnnotationExcludedHosts, err)
	}
	out, err := Compile(sels)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", hostfleetv1alpha1.AnnotationExcludedHosts, err)
	}
	return out, nil
}

// Compile makes label selectors of class selectors.
func Compile(sels []hostfleetv1alpha1.ClassSelector) ([]labels.Selector, error) {
	out := make([]labels.Selector, 0, len(sels))
	for _, s := range sels {
		sel, err := metav1.LabelSelectorAsSelector(s.LabelSelector())
		if err != nil {
			return nil, err
		}
		out = append(out, sel)
	}
	return out, nil
}

// Matches reports whether any of sels matches the labels.
func Matches(sels []labels.Selector, set labels.Set) bool {
	for _, s := range sels {
		if s.Matches(set) {
			return true
		}
	}
	return false
}
