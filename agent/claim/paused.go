package claim

import (
	"context"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/hostfleet/hostfleet/agent/binder"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/internal/conditions"
	"github.com/hostfleet/hostfleet/internal/requeue"
)

// paused serves a claim that carries baremetalhost.metal3.io/paused, as
// baremetal-operator treats a paused host: nothing is written on any host
// (no bind, no spec, no secret copy, no reboot, no release), and a deletion
// waits for the pause to end. The claim's own metadata (the host's labels,
// its identity) and status keep following the host it holds: the plan of
// a bound claim (keep), with its host writes off.
func (r *Reconciler) paused(ctx context.Context, c *metal3api.HostClaim, by string) (ctrl.Result, error) {
	in, err := r.inputs(ctx, c)
	if err != nil {
		return ctrl.Result{}, err
	}
	h := heldHost(in)
	if h == nil {
		msg := conditions.PausedMessage(by) + ": no host is bound to a paused claim; remove the annotation to bind one"
		assoc := associatedCondition(c, metav1.ConditionFalse, hostfleetv1alpha1.ReasonPaused, msg)
		return requeue.OnConflict(r.setStatus(ctx, c, nil, c.Status.HardwareData, assoc, nil))
	}
	prefixes, err := r.tenantPrefixes(ctx, in.NamespaceLabels)
	if err != nil {
		return ctrl.Result{}, err
	}
	return r.keep(ctx, c, h, in, prefixes)
}

// heldHost is the host the claim holds (its reserved one, when it names
// one), copied; nil when it holds none.
func heldHost(in binder.Input) *metal3api.BareMetalHost {
	for _, h := range in.Hosts {
		if !in.Consumer.Holds(h, in.Claim) {
			continue
		}
		if r := in.Reserved; r == nil || (r.Namespace == h.Namespace && r.Name == h.Name) {
			return h.DeepCopy()
		}
	}
	return nil
}
