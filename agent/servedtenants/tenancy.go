// Package servedtenants reads the cluster's ClusterTenancy, which the hub writes
// in the cluster's namespace: all an agent knows of the tenants.
package servedtenants

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// NamespaceLabels are the labels of hub namespace ns as the ClusterTenancy
// gives them, and whether it names ns among the namespaces of a tenant the
// cluster serves as infrastructure. Agents read no Namespace on the hub. A
// ClusterTenancy written without labels for ns (by an earlier hub, or
// before the hub's cache had the namespace) gives the labels every tenant
// namespace has: its name and tenant.
func NamespaceLabels(ct *hostfleetv1alpha1.ClusterTenancy, ns string) (map[string]string, bool) {
	for _, t := range ct.Served(hostfleetv1alpha1.RoleInfrastructure) {
		if slices.Contains(t.Namespaces, ns) {
			return labelsOf(&t, ns), true
		}
	}
	return nil, false
}

// labelsOf are the labels t's ClusterTenancy entry gives its namespace ns,
// or its name and tenant when it gives none.
func labelsOf(t *hostfleetv1alpha1.ServedTenant, ns string) map[string]string {
	for _, l := range t.NamespaceLabels {
		if l.Name == ns && len(l.Labels) > 0 {
			return l.Labels
		}
	}
	return map[string]string{corev1.LabelMetadataName: ns, hostfleetv1alpha1.LabelTenant: t.Name}
}

// Namespaces are the hub namespaces of the tenants the cluster serves as
// infrastructure, with their labels (NamespaceLabels).
func Namespaces(ct *hostfleetv1alpha1.ClusterTenancy) []corev1.Namespace {
	var out []corev1.Namespace
	for _, t := range ct.Served(hostfleetv1alpha1.RoleInfrastructure) {
		for _, ns := range t.Namespaces {
			out = append(out, corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: labelsOf(&t, ns)}})
		}
	}
	return out
}
