package claim

import (
	"context"
	"fmt"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/agent/hostspec"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// forwardReboot hands a one-shot reboot.metal3.io request to the host, then
// removes it from the claim. The host annotation is not an owned field:
// baremetal-operator removes it when the reboot is done. A request forwarded
// from the hub carries an identifier (hostfleet.io/reboot-request): the
// claim records the one carried out (hostfleet.io/reboot-handled), so that
// the work agent re-applying the request does not reboot the host again.
func (r *Reconciler) forwardReboot(ctx context.Context, c *metal3api.HostClaim, h *metal3api.BareMetalHost) error {
	v, _ := hostspec.OneShotReboot(c)
	request := c.Annotations[hostfleetv1alpha1.AnnotationRebootRequest]
	orig := h.DeepCopy()
	if h.Annotations == nil {
		h.Annotations = map[string]string{}
	}
	h.Annotations[metal3api.RebootAnnotationPrefix] = v
	if err := r.hosts.Patch(ctx, h, orig); err != nil {
		return fmt.Errorf("reboot host %s: %w", klog.KObj(h), err)
	}
	origClaim := c.DeepCopy()
	delete(c.Annotations, metal3api.RebootAnnotationPrefix)
	if request != "" {
		c.Annotations[hostfleetv1alpha1.AnnotationRebootHandled] = request
	}
	if err := r.Claims.Patch(ctx, c, client.MergeFrom(origClaim)); err != nil {
		return fmt.Errorf("clear reboot request on %s: %w", klog.KObj(c), err)
	}
	r.Recorder.Eventf(c, nil, "Normal", "RebootRequested", "Reboot", "reboot requested on BareMetalHost %s/%s", h.Namespace, h.Name)
	return nil
}
