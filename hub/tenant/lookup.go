package tenant

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// Of is the Tenant owning a namespace (its hostfleet.io/tenant label), or
// nil when none does (no label, or a Tenant that is gone).
func Of(ctx context.Context, r client.Reader, namespace string) (*hostfleetv1alpha1.Tenant, error) {
	ns := &corev1.Namespace{}
	if err := r.Get(ctx, client.ObjectKey{Name: namespace}, ns); err != nil {
		if client.IgnoreNotFound(err) == nil {
			return nil, nil
		}
		return nil, fmt.Errorf("get namespace %s: %w", namespace, err)
	}
	name := ns.Labels[hostfleetv1alpha1.LabelTenant]
	if name == "" {
		return nil, nil
	}
	t := &hostfleetv1alpha1.Tenant{}
	if err := r.Get(ctx, client.ObjectKey{Name: name}, t); err != nil {
		if client.IgnoreNotFound(err) == nil {
			return nil, nil
		}
		return nil, fmt.Errorf("get tenant %s: %w", name, err)
	}
	return t, nil
}
