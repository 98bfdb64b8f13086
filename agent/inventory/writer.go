package inventory

import (
	"context"
	"fmt"
	"reflect"
	"sync/atomic"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/agent/labelsync"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// Writer publishes the cluster's HostInventory on the hub, in the cluster's
// namespace, named after the cluster. It recomputes the inventory every
// Interval from cached hosts and policies and writes only when it changed: at
// most one write per Interval, however many host events happen.
type Writer struct {
	// Hub writes the inventory and lists tenant namespaces and Tenants
	// (the agent's is cached: no hub request per tick).
	Hub client.Client
	// Managed reads hosts and policies (cached).
	Managed     client.Reader
	ClusterName string
	Interval    time.Duration

	last   *hostfleetv1alpha1.HostInventoryStatus
	settle bool
	// created: the inventory's spec was applied.
	created bool
	writes  atomic.Int64
}

// Writes is the number of inventory writes so far.
func (w *Writer) Writes() int64 { return w.writes.Load() }

// Start runs until ctx is done. Errors are logged and retried next interval.
func (w *Writer) Start(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithName("inventory")
	t := time.NewTicker(w.Interval)
	defer t.Stop()
	for {
		if err := w.Once(ctx); err != nil {
			log.Error(err, "write HostInventory", "cluster", w.ClusterName)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Once computes the inventory and writes it if it changed.
func (w *Writer) Once(ctx context.Context) error {
	var hosts metal3api.BareMetalHostList
	if err := w.Managed.List(ctx, &hosts); err != nil {
		return fmt.Errorf("list hosts: %w", err)
	}
	var policies metal3api.HostDeployPolicyList
	if err := w.Managed.List(ctx, &policies); err != nil {
		return fmt.Errorf("list HostDeployPolicies: %w", err)
	}
	var nss corev1.NamespaceList
	if err := w.Hub.List(ctx, &nss, client.HasLabels{hostfleetv1alpha1.LabelTenant}); err != nil {
		return fmt.Errorf("list tenant namespaces on the hub: %w", err)
	}
	var tenants hostfleetv1alpha1.TenantList
	if err := w.Hub.List(ctx, &tenants); err != nil {
		return fmt.Errorf("list tenants on the hub: %w", err)
	}
	var prefixes []string
	for _, t := range tenants.Items {
		valid, _ := labelsync.Prefixes(t.Spec.LabelSyncPrefixes)
		prefixes = append(prefixes, valid...)
	}
	st := Build(Input{Hosts: hosts.Items, Policies: policies.Items, Namespaces: nss.Items, Prefixes: prefixes})
	unchanged := w.last != nil && reflect.DeepEqual(*w.last, st)
	if unchanged && !w.settle {
		return nil
	}
	if err := w.write(ctx, st); err != nil {
		return err
	}
	// A change is written once more, unchanged, at the next tick: the hub
	// scheduler counts a claim bound in the second of the last write as
	// not counted yet (lastUpdated has whole seconds), and the later time
	// settles it.
	w.settle = !unchanged
	w.last = &st
	return nil
}

func (w *Writer) write(ctx context.Context, st hostfleetv1alpha1.HostInventoryStatus) error {
	inv := &hostfleetv1alpha1.HostInventory{
		TypeMeta:   metav1.TypeMeta{APIVersion: hostfleetv1alpha1.GroupVersion.String(), Kind: "HostInventory"},
		ObjectMeta: metav1.ObjectMeta{Namespace: w.ClusterName, Name: w.ClusterName},
		Spec:       hostfleetv1alpha1.HostInventorySpec{ClusterName: w.ClusterName},
	}
	if !w.created {
		// The spec never changes: applied once per start.
		spec, err := applyObject(inv)
		if err != nil {
			return err
		}
		delete(spec.Object, "status")
		if err := w.Hub.Apply(ctx, client.ApplyConfigurationFromUnstructured(spec), client.FieldOwner(hostfleetv1alpha1.FieldManagerAgent), client.ForceOwnership); err != nil {
			return fmt.Errorf("apply HostInventory %s/%s (is the cluster's namespace on the hub?): %w", w.ClusterName, w.ClusterName, err)
		}
	}
	now := metav1.Now()
	inv.Status = st
	inv.Status.LastUpdated = &now
	status, err := applyObject(inv)
	if err != nil {
		return err
	}
	delete(status.Object, "spec")
	if err := w.Hub.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(status), client.FieldOwner(hostfleetv1alpha1.FieldManagerAgent), client.ForceOwnership); err != nil {
		// Deleted meanwhile: made again at the next write.
		w.created = false
		return fmt.Errorf("apply HostInventory status %s/%s: %w", w.ClusterName, w.ClusterName, err)
	}
	w.created = true
	w.writes.Add(1)
	return nil
}

// applyObject converts a typed object (with TypeMeta set) to an apply
// object, dropping the null creationTimestamp that typed objects carry.
func applyObject(obj runtime.Object) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: m}
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	return u, nil
}
