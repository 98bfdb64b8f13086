package tenant

import (
	"context"
	"fmt"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/hub/classes"
)

// tally is what the tenant's status says of its claims.
type tally struct {
	// names are the claims, namespace/name.
	names []string
	// ready counts those whose Ready condition is True.
	ready int32
	// classes are the claims per host class, counted as the scheduler
	// counts them: the claims placed or bound.
	classes []hostfleetv1alpha1.ClassUsage
	// invalidClass: a class's selector does not compile.
	invalidClass error
}

// claims tallies the claims in the tenant's namespaces.
func (r *Reconciler) claims(ctx context.Context, t *hostfleetv1alpha1.Tenant, namespaces []string) (tally, error) {
	var out tally
	cls, err := classes.Of(t)
	out.invalidClass = err
	var placed []*metal3api.HostClaim
	for _, ns := range namespaces {
		var list metal3api.HostClaimList
		// Read only: no copies of what may be thousands of claims.
		if err := r.Client.List(ctx, &list, client.InNamespace(ns), client.UnsafeDisableDeepCopy); err != nil {
			return tally{}, fmt.Errorf("list the claims in %s: %w", ns, err)
		}
		for i := range list.Items {
			c := &list.Items[i]
			out.names = append(out.names, c.Namespace+"/"+c.Name)
			if meta.IsStatusConditionTrue(c.Status.Conditions, hostfleetv1alpha1.ConditionReady) {
				out.ready++
			}
			if len(cls) > 0 && classes.Counted(c) {
				placed = append(placed, c)
			}
		}
	}
	if len(cls) > 0 {
		f, err := classes.Read(ctx, r.Client, cls)
		if err != nil {
			return tally{}, err
		}
		out.classes = classes.Usage(cls, classes.Counts(cls, placed, t.Spec.LabelSyncPrefixes, f))
	}
	return out, nil
}
