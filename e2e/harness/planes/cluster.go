package planes

import (
	"context"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// Tenancy is cluster's ClusterTenancy serving tenants, as the hub's
// tenancy controller writes it, for tests that run agents without it.
func Tenancy(cluster string, tenants ...hostfleetv1alpha1.ServedTenant) *hostfleetv1alpha1.ClusterTenancy {
	return &hostfleetv1alpha1.ClusterTenancy{ObjectMeta: metav1.ObjectMeta{Namespace: cluster, Name: hostfleetv1alpha1.TenancyName},
		Spec: hostfleetv1alpha1.ClusterTenancySpec{ClusterName: cluster, Tenants: tenants}}
}

// SetClusterAvailable writes a ManagedCluster's Available condition on the
// hub, as its registration agent would keep it (on planes no registration
// agent runs).
func SetClusterAvailable(ctx context.Context, hub client.Client, name string, status metav1.ConditionStatus) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		mc := &clusterv1.ManagedCluster{}
		if err := hub.Get(ctx, client.ObjectKey{Name: name}, mc); err != nil {
			return err
		}
		meta.SetStatusCondition(&mc.Status.Conditions, metav1.Condition{Type: clusterv1.ManagedClusterConditionAvailable,
			Status: status, Reason: "ManagedClusterAvailable", Message: "set without a registration agent"})
		return hub.Status().Update(ctx, mc)
	})
}

// AcceptCluster accepts a ManagedCluster on the hub and marks it joined, as
// `clusteradm accept` and the cluster's registration agent would (on planes
// no registration agent runs). Only an accepted, joined cluster counts as a
// tenant's workload cluster.
func AcceptCluster(ctx context.Context, hub client.Client, name string) error {
	mc := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := hub.Patch(ctx, mc, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"hubAcceptsClient":true}}`))); err != nil {
		return err
	}
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := hub.Get(ctx, client.ObjectKey{Name: name}, mc); err != nil {
			return err
		}
		for _, c := range []string{clusterv1.ManagedClusterConditionHubAccepted, clusterv1.ManagedClusterConditionJoined} {
			meta.SetStatusCondition(&mc.Status.Conditions, metav1.Condition{Type: c, Status: metav1.ConditionTrue, Reason: c, Message: "set without a registration agent"})
		}
		return hub.Status().Update(ctx, mc)
	})
}

// PlacedBy are the annotations the hub's scheduler writes with a
// placement. An agent serves a claim that names its cluster only once the
// hub admitted it (conditions.Admitted): tests and programs that run
// agents without a scheduler create their claims as the scheduler would
// have placed them, with these and the cluster label.
func PlacedBy() map[string]string {
	return map[string]string{hostfleetv1alpha1.AnnotationPlacedBy: hostfleetv1alpha1.PlacedByScheduler}
}

// MarkAvailable makes a host available, as baremetal-operator would once
// it had inspected it (on planes where none runs): provisioning state
// available, operational status OK; read again and retried on a conflict
// (the host's required status fields rule out a merge patch from an empty
// status).
func MarkAvailable(ctx context.Context, c client.Client, h *metal3api.BareMetalHost) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(h), h); err != nil {
			return err
		}
		h.Status.Provisioning.State, h.Status.OperationalStatus = metal3api.StateAvailable, metal3api.OperationalStatusOK
		return c.Status().Update(ctx, h)
	})
}
