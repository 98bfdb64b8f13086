package planes

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// SetClusterAvailable writes a ManagedCluster's Available condition on the
// hub, as its registration agent would keep it (on planes no registration
// agent runs).
func SetClusterAvailable(ctx context.Context, hub client.Client, name string, status metav1.ConditionStatus) error {
	mc := &clusterv1.ManagedCluster{}
	if err := hub.Get(ctx, client.ObjectKey{Name: name}, mc); err != nil {
		return err
	}
	meta.SetStatusCondition(&mc.Status.Conditions, metav1.Condition{Type: clusterv1.ManagedClusterConditionAvailable,
		Status: status, Reason: "ManagedClusterAvailable", Message: "set without a registration agent"})
	return hub.Status().Update(ctx, mc)
}
