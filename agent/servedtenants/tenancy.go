// Package servedtenants reads the cluster's ClusterTenancy, which the hub writes
// in the cluster's namespace: all an agent knows of the tenants.
package servedtenants

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/agent/labelsync"
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

// Prefixes are the valid label sync prefixes of the tenants cluster serves
// as infrastructure: the host labels its HostInventory and HostUsage show.
func Prefixes(ctx context.Context, hub client.Reader, cluster string) ([]string, error) {
	ct, err := Get(ctx, hub, cluster)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, t := range ct.Served(hostfleetv1alpha1.RoleInfrastructure) {
		valid, _ := labelsync.Prefixes(t.LabelSyncPrefixes)
		out = append(out, valid...)
	}
	return out, nil
}
