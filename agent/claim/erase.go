package claim

import (
	"context"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"

	"github.com/hostfleet/hostfleet/agent/servedtenants"
	"github.com/hostfleet/hostfleet/hub/api/erase"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// Erase is how the agent has hosts erased when their claims let them go.
type Erase struct {
	// Min is the cluster's own policy (--erase): the least any claim gets.
	Min hostfleetv1alpha1.EraseMode
	// Driven says whether the agent's BMC driver drives a host (nil:
	// none); baremetal-operator serves the others.
	Driven func(*metal3api.BareMetalHost) bool
	// Support is the most a driven host can erase (its BMC protocol and
	// the agent's erase image).
	Support func(*metal3api.BareMetalHost) hostfleetv1alpha1.EraseMode
}

// support is the most h can erase: a driven host what the driver can do;
// one baremetal-operator serves, Metadata (automatedCleaningMode).
func (e Erase) support(h *metal3api.BareMetalHost) hostfleetv1alpha1.EraseMode {
	if e.Driven != nil && e.Driven(h) {
		if e.Support == nil {
			return hostfleetv1alpha1.EraseNone
		}
		return e.Support(h)
	}
	return hostfleetv1alpha1.EraseMetadata
}

// eraseOf is what the claim's host must erase at release: the most its
// tenant (spec.erase, through the ClusterTenancy), the cluster (--erase)
// and the claim (hostfleet.io/erase) ask. A local claim forwarded from the
// hub carries its tenant's in its annotation (the forwarder writes it).
func (r *Reconciler) eraseOf(ctx context.Context, c *metal3api.HostClaim, nsLabels map[string]string) (hostfleetv1alpha1.EraseMode, error) {
	modes := []hostfleetv1alpha1.EraseMode{r.Erase.Min, erase.Of(c.Annotations)}
	if name := nsLabels[hostfleetv1alpha1.LabelTenant]; name != "" && !r.local() {
		ct, err := servedtenants.Get(ctx, r.Claims, r.ClusterName)
		if err != nil {
			return "", err
		}
		if t := ct.Tenant(hostfleetv1alpha1.RoleInfrastructure, name); t != nil {
			modes = append(modes, t.Erase)
		}
	}
	return erase.Max(modes...), nil
}

// markErase makes h erase at release what mode asks: a driven host carries
// it for the driver (hostfleet.io/erase); a host baremetal-operator serves
// gets automatedCleaningMode metadata (never less than it had).
func (r *Reconciler) markErase(h *metal3api.BareMetalHost, mode hostfleetv1alpha1.EraseMode) {
	if erase.Level(mode) == 0 {
		return
	}
	if r.Erase.Driven != nil && r.Erase.Driven(h) {
		h.Annotations[hostfleetv1alpha1.AnnotationErase] = string(mode)
		return
	}
	h.Spec.AutomatedCleaningMode = metal3api.CleaningModeMetadata
}
