// Package servedtenants reads the cluster's ClusterTenancy, which the hub writes
// in the cluster's namespace: all an agent knows of the tenants.
package servedtenants

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// Get is cluster's ClusterTenancy, or nil if the hub has not written it
// yet. Read only: from a cache it shares the cache's slices (no copy: the
// inventory writers of 1 000 agents in one process read it 100 times a
// second).
func Get(ctx context.Context, hub client.Reader, cluster string) (*hostfleetv1alpha1.ClusterTenancy, error) {
	ct := &hostfleetv1alpha1.ClusterTenancy{}
	err := hub.Get(ctx, client.ObjectKey{Namespace: cluster, Name: hostfleetv1alpha1.TenancyName}, ct, client.UnsafeDisableDeepCopy)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get the ClusterTenancy of cluster %s (the tenants it serves): %w", cluster, err)
	}
	return ct, nil
}
