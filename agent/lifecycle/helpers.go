package lifecycle

import (
	"reflect"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
)

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if bv, ok := b[k]; !ok || bv != v {
			return false
		}
	}
	return true
}

func equalStatus(a, b *metal3api.BareMetalHost) bool {
	x, y := a.Status.DeepCopy(), b.Status.DeepCopy()
	x.LastUpdated, y.LastUpdated = nil, nil
	return reflect.DeepEqual(x, y)
}
