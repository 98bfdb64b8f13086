package clustertenancy

import (
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// Desired is the spec of cluster's ClusterTenancy, from the Tenants'
// status: the tenants whose cluster set holds the cluster, and those whose
// workload cluster it is, in name order, with their namespaces' labels
// (nsLabels, by namespace; a namespace missing there has none). It shares
// no slice or map with its arguments. It carries every FirmwareBaseline,
// by name: the agent judges its hosts against those that select them.
func Desired(cluster string, tenants []hostfleetv1alpha1.Tenant, nsLabels map[string]map[string]string,
	baselines []hostfleetv1alpha1.FirmwareBaseline) hostfleetv1alpha1.ClusterTenancySpec {
	spec := hostfleetv1alpha1.ClusterTenancySpec{ClusterName: cluster}
	for i := range baselines {
		spec.FirmwareBaselines = append(spec.FirmwareBaselines, hostfleetv1alpha1.ServedBaseline{Name: baselines[i].Name, Spec: *baselines[i].Spec.DeepCopy()})
	}
	slices.SortFunc(spec.FirmwareBaselines, func(a, b hostfleetv1alpha1.ServedBaseline) int { return strings.Compare(a.Name, b.Name) })
	for i := range tenants {
		t := &tenants[i]
		if slices.Contains(t.Status.Clusters, cluster) {
			spec.Tenants = append(spec.Tenants, served(t, false, nsLabels))
		}
		if slices.Contains(t.Status.WorkloadClusters, cluster) {
			spec.WorkloadTenants = append(spec.WorkloadTenants, served(t, len(t.Status.WorkloadClusters) == 1, nsLabels))
		}
	}
	byName := func(a, b hostfleetv1alpha1.ServedTenant) int { return strings.Compare(a.Name, b.Name) }
	slices.SortFunc(spec.Tenants, byName)
	slices.SortFunc(spec.WorkloadTenants, byName)
	return spec
}

func served(t *hostfleetv1alpha1.Tenant, only bool, nsLabels map[string]map[string]string) hostfleetv1alpha1.ServedTenant {
	st := hostfleetv1alpha1.ServedTenant{Name: t.Name, Namespaces: slices.Clone(t.Status.Namespaces),
		LabelSyncPrefixes: slices.Clone(t.Spec.LabelSyncPrefixes), Erase: t.Spec.Erase, Healing: t.Spec.Healing.DeepCopy(), OnlyWorkloadCluster: only}
	for _, ns := range slices.Sorted(slices.Values(t.Status.Namespaces)) {
		st.NamespaceLabels = append(st.NamespaceLabels, hostfleetv1alpha1.NamespaceLabels{Name: ns, Labels: maps.Clone(nsLabels[ns])})
	}
	return st
}

// affected are the clusters whose ClusterTenancy a change of a Tenant from
// old to new (either nil: created or deleted) may change. A change of what
// every cluster reads of the tenant touches all its clusters, before and
// after; a change of its cluster set only the clusters that came or went.
// Its claim counts and conditions touch none.
func affected(old, new *hostfleetv1alpha1.Tenant) []string {
	if old == nil || new == nil {
		t := old
		if t == nil {
			t = new
		}
		return union(t.Status.Clusters, t.Status.WorkloadClusters)
	}
	if !slices.Equal(old.Status.Namespaces, new.Status.Namespaces) ||
		!slices.Equal(old.Spec.LabelSyncPrefixes, new.Spec.LabelSyncPrefixes) || old.Spec.Erase != new.Spec.Erase ||
		!equality.Semantic.DeepEqual(old.Spec.Healing, new.Spec.Healing) {
		return union(old.Status.Clusters, old.Status.WorkloadClusters, new.Status.Clusters, new.Status.WorkloadClusters)
	}
	out := symmetricDifference(old.Status.Clusters, new.Status.Clusters)
	if !slices.Equal(old.Status.WorkloadClusters, new.Status.WorkloadClusters) {
		// Whether a cluster is the only one can change for those that stay.
		out = append(out, old.Status.WorkloadClusters...)
		out = append(out, new.Status.WorkloadClusters...)
	}
	return union(out)
}

// union is the sorted set of the lists' names.
func union(lists ...[]string) []string {
	var out []string
	for _, l := range lists {
		out = append(out, l...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// symmetricDifference is the names in exactly one of a and b.
func symmetricDifference(a, b []string) []string {
	in := make(map[string]int, len(a)+len(b))
	for _, n := range a {
		in[n] |= 1
	}
	for _, n := range b {
		in[n] |= 2
	}
	var out []string
	for n, where := range in {
		if where != 3 {
			out = append(out, n)
		}
	}
	return out
}
