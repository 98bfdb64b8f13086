package bmcdriver

import (
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	"k8s.io/apimachinery/pkg/types"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// Driven says whether the agent drives host: it asks for it, or the agent
// drives every host (--bmh-driver=bmclib). Paused and detached hosts are
// left alone, as baremetal-operator leaves them.
func Driven(host *metal3api.BareMetalHost, all bool) bool {
	if _, ok := host.Annotations[metal3api.PausedAnnotation]; ok {
		return false
	}
	if _, ok := host.Annotations[metal3api.DetachedAnnotation]; ok {
		return false
	}
	return all || host.Annotations[hostfleetv1alpha1.AnnotationDriver] == hostfleetv1alpha1.DriverBMCLib
}

// DrivenIn is Driven, limited to the hosts of namespaces when any are
// given: the agent reads BMC credentials nowhere else.
func DrivenIn(host *metal3api.BareMetalHost, all bool, namespaces []string) bool {
	return (len(namespaces) == 0 || slices.Contains(namespaces, host.Namespace)) && Driven(host, all)
}

// Backoff is the wait before retrying after the n-th consecutive error:
// 2 s doubling, at most 5 minutes.
func Backoff(n int) time.Duration {
	if n < 1 {
		n = 1
	}
	d := 2 * time.Second
	for i := 1; i < n && d < 5*time.Minute; i++ {
		d *= 2
	}
	return min(d, 5*time.Minute)
}

// FenceRetry bounds the wait before trying again a host asked to be off
// that may still be on: a claim's fence (agent/heal) waits on it, and a BMC
// that answers again after an outage is obeyed within it, whatever the
// errors before.
const FenceRetry = 10 * time.Second

// Retry is the wait before trying the host again after an error: Backoff
// of its consecutive errors, at most FenceRetry while it is asked to be off
// and was last seen on.
func Retry(h *metal3api.BareMetalHost) time.Duration {
	d := Backoff(h.Status.ErrorCount)
	if !h.Spec.Online && h.Status.PoweredOn {
		d = min(d, FenceRetry)
	}
	return d
}

// Reboot is what the reboot annotations ask for.
type Reboot struct {
	// Requested: at least one reboot annotation is present.
	Requested bool
	// Hard: a "hard" mode was asked for.
	Hard bool
	// HoldOff: a keyed annotation (reboot.metal3.io/<key>) keeps the host
	// off until it is removed.
	HoldOff bool
	// Keys are the annotations to remove once a plain reboot is done.
	Keys []string
}

// RebootRequest reads reboot.metal3.io and reboot.metal3.io/<key>.
func RebootRequest(annotations map[string]string) Reboot {
	var r Reboot
	for k, v := range annotations {
		if k != metal3api.RebootAnnotationPrefix && !strings.HasPrefix(k, metal3api.RebootAnnotationPrefix+"/") {
			continue
		}
		r.Requested = true
		r.Hard = r.Hard || strings.Contains(v, `"hard"`)
		if k == metal3api.RebootAnnotationPrefix {
			r.Keys = append(r.Keys, k)
		} else {
			r.HoldOff = true
		}
	}
	return r
}

// ValidateImage says what the bmclib driver cannot provision.
func ValidateImage(img *metal3api.Image) error {
	if img == nil || img.URL == "" {
		return nil
	}
	if !img.IsLiveISO() {
		format := "(none)"
		if img.DiskFormat != nil {
			format = *img.DiskFormat
		}
		return fmt.Errorf("image %s has format %s: hosts driven by the agent's BMC driver boot live-ISO images only (set spec.image.format: live-iso)", img.URL, format)
	}
	return nil
}

// Deprovision says whether a provisioned host must be deprovisioned: its
// image was removed or changed (the agent removes the image when it
// releases a host).
func Deprovision(host *metal3api.BareMetalHost) bool {
	img := host.Spec.Image
	if img == nil || img.URL == "" {
		return true
	}
	return img.URL != host.Status.Provisioning.Image.URL
}

// inspectDisabled is the inspect.metal3.io value older clients set.
const inspectDisabled = "disabled"

// InspectionDisabled: spec.inspectionMode is disabled, or the older
// inspect.metal3.io: disabled annotation says so.
func InspectionDisabled(host *metal3api.BareMetalHost) bool {
	return host.Spec.InspectionMode == metal3api.InspectionModeDisabled ||
		host.Annotations[metal3api.InspectAnnotationPrefix] == inspectDisabled
}

// NextPoll is the wait, from now, until a settled host's next poll: at
// its own offset within every interval (a hash of its UID), so that the
// polls of a site spread evenly over the interval whenever they began (at
// the agent's start every host settles at once), and each host is polled
// once per interval. The wait is in (0, every].
func NextPoll(uid types.UID, now time.Time, every time.Duration) time.Duration {
	if every <= 0 {
		return every
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(uid))
	offset := time.Duration(h.Sum64() % uint64(every))
	wait := (offset - time.Duration(now.UnixNano()%int64(every)) + every) % every
	if wait == 0 {
		wait = every
	}
	return wait
}
