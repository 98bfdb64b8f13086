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

	"github.com/hostfleet/hostfleet/hub/api/hardware"
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

// Selector is one excluded class's selector, compiled: its labels, and its
// hardware (nil: any).
type Selector struct {
	Labels   labels.Selector
	Hardware *hardware.Requirement
}

// Of decodes a claim's annotation into selectors; none without it. A value
// that does not decode is an error: the agent then binds nothing rather
// than a host the hub kept the claim off.
func Of(c *metal3api.HostClaim) ([]Selector, error) {
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

// Compile compiles class selectors.
func Compile(sels []hostfleetv1alpha1.ClassSelector) ([]Selector, error) {
	out := make([]Selector, 0, len(sels))
	for _, s := range sels {
		sel, err := metav1.LabelSelectorAsSelector(s.LabelSelector())
		if err != nil {
			return nil, err
		}
		x := Selector{Labels: sel}
		if s.Hardware != "" {
			if x.Hardware, err = hardware.Cached(s.Hardware); err != nil {
				return nil, err
			}
		}
		out = append(out, x)
	}
	return out, nil
}

// Matches reports whether any of sels selects a host with these labels
// and hardware: its view, and, when known, the view's profile name as
// cluster reports it (a verdict remembered per cluster and name); no view
// for a host not inspected, which no selector by hardware selects.
func Matches(sels []Selector, set labels.Set, cluster, profile string, view *hardware.View) bool {
	for _, s := range sels {
		if s.Labels.Matches(set) && (s.Hardware == nil || meets(s.Hardware, cluster, profile, view)) {
			return true
		}
	}
	return false
}

func meets(r *hardware.Requirement, cluster, profile string, view *hardware.View) bool {
	if profile != "" {
		return r.MeetsProfile(cluster, profile, view)
	}
	ok, err := r.Meets(view)
	return ok && err == nil
}
