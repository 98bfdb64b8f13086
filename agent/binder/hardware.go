package binder

import (
	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"

	"github.com/hostfleet/hostfleet/hub/api/hardware"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// meets reports whether h has the hardware the claim asks, with its view.
func (in Input) meets(h *metal3api.BareMetalHost) (bool, *hostfleetv1alpha1.HardwareView) {
	if in.Hardware == nil {
		return true, nil
	}
	var v *hostfleetv1alpha1.HardwareView
	if in.View != nil {
		v = in.View(h)
	}
	ok, err := in.Hardware.Meets(v)
	return err == nil && ok, v
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
