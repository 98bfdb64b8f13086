package bmcdriver

import (
	"slices"
	"sync"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// versions remembers, by host, the resourceVersions a host went
// through in the driver's last reconcile of it, before its last write: a
// host read from the cache at one of them is older than what the driver
// wrote, and acting on it would do again what was done (an inspection, a
// media insert). Comparing with versions the driver saw itself needs no
// order between resourceVersions.
type versions struct{ m sync.Map }

// behind: the cached host is at a version the driver's own writes left.
func (v *versions) behind(host *metal3api.BareMetalHost) bool {
	old, ok := v.m.Load(client.ObjectKeyFromObject(host))
	if !ok {
		return false
	}
	if slices.Contains(old.([]string), host.ResourceVersion) {
		return true
	}
	v.m.Delete(client.ObjectKeyFromObject(host)) // caught up, or changed by someone else since
	return false
}

// passed records the versions a reconcile left (all but the host's last).
func (v *versions) passed(key types.NamespacedName, seen []string, last string) {
	var old []string
	for _, rv := range seen {
		if rv != last && rv != "" {
			old = append(old, rv)
		}
	}
	if len(old) == 0 {
		return
	}
	v.m.Store(key, old)
}

// forget drops a host that is gone or going.
func (v *versions) forget(key types.NamespacedName) { v.m.Delete(key) }
