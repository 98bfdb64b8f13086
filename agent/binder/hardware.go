package binder

import (
	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/hostfleet/hostfleet/hub/api/exclusion"

	"github.com/hostfleet/hostfleet/hub/api/hardware"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// meets reports whether h has the hardware the claim asks, with its view.
func (in Input) meets(h *metal3api.BareMetalHost) (bool, *hostfleetv1alpha1.HardwareView) {
	if in.Hardware == nil {
		return true, nil
	}
	v := in.view(h)
	ok, err := in.Hardware.Meets(v)
	return err == nil && ok, v
}

// view is h's hardware; nil when not inspected or not known.
func (in Input) view(h *metal3api.BareMetalHost) *hostfleetv1alpha1.HardwareView {
	if in.View == nil {
		return nil
	}
	return in.View(h)
}

// kept reports whether the hub keeps the claim off h: a full host class
// the claim does not ask for selects it (excluded-hosts), by labels and
// hardware.
func (in Input) kept(excluded []exclusion.Selector, h *metal3api.BareMetalHost) bool {
	return len(excluded) > 0 && exclusion.Matches(excluded, labels.Set(h.Labels), "", "", in.view(h))
}

// least keeps the hosts of the least hardware (hardware.Compare).
func least(hosts []*metal3api.BareMetalHost, views map[*metal3api.BareMetalHost]*hostfleetv1alpha1.HardwareView) []*metal3api.BareMetalHost {
	var out []*metal3api.BareMetalHost
	var min *hostfleetv1alpha1.HardwareView
	for _, h := range hosts {
		v := views[h]
		if min == nil {
			out, min = []*metal3api.BareMetalHost{h}, v
			continue
		}
		switch c := hardware.Compare(v, min); {
		case c < 0:
			out, min = []*metal3api.BareMetalHost{h}, v
		case c == 0:
			out = append(out, h)
		}
	}
	return out
}
