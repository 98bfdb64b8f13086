package classes

import (
	"context"
	"fmt"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/hub/api/hardware"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// Read gathers what classes by hardware are judged on, from the hub (its
// cache, read without copies): the profiles of every HostInventory, and
// for a bound claim the HardwareData its agent copied beside it. Nothing
// is read when no class of classes selects by hardware (a zero Fleet). The
// one function of this package that reads.
func Read(ctx context.Context, c client.Reader, classes []Class) (Fleet, error) {
	if !byHardware(classes) {
		return Fleet{}, nil
	}
	var invs hostfleetv1alpha1.HostInventoryList
	if err := c.List(ctx, &invs, client.UnsafeDisableDeepCopy); err != nil {
		return Fleet{}, fmt.Errorf("list HostInventories for the classes by hardware: %w", err)
	}
	f := Fleet{Profiles: map[Profile]*hardware.View{}}
	for i := range invs.Items {
		inv := &invs.Items[i]
		for j := range inv.Status.Profiles {
			p := &inv.Status.Profiles[j]
			f.Profiles[Profile{Cluster: inv.Namespace, Name: p.Name}] = &p.Hardware
		}
	}
	f.Host = func(claim *metal3api.HostClaim) *hardware.View {
		ref := claim.Status.HardwareData
		if ref == nil {
			return nil
		}
		hd := &metal3api.HardwareData{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: claim.Namespace, Name: ref.Name}, hd, client.UnsafeDisableDeepCopy); err != nil ||
			hd.Labels[hostfleetv1alpha1.LabelClaimUID] != string(claim.UID) {
			return nil // not copied yet, or another claim's: judged by what the claim asks
		}
		return hardware.OfData(hd)
	}
	return f, nil
}
