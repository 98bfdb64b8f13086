package inventory

import (
	"context"
	"fmt"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/agent/servedtenants"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/internal/usage"
)

// UsageWriter publishes the cluster's HostUsage on the hub, in the cluster's
// namespace, named after the cluster: the record its hosts keep
// (internal/usage.Record). Every Interval it compares the record with the
// hub's copy, as the cache shows it, and writes only when they differ: after
// a release, and after anything that changed the hub's copy, a restore from
// an older snapshot among them.
type UsageWriter struct {
	// Hub reads the HostUsage (cached), the ClusterTenancy and writes.
	Hub client.Client
	// Managed reads hosts (cached).
	Managed     client.Reader
	ClusterName string
	Interval    time.Duration
}

// Start runs until ctx is done. Errors are logged and retried next interval.
func (w *UsageWriter) Start(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithName("usage")
	t := time.NewTicker(w.Interval)
	defer t.Stop()
	for {
		if err := w.Once(ctx); err != nil {
			log.Error(err, "write HostUsage", "cluster", w.ClusterName)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Once computes the record and writes it if the hub's copy differs. A host
// whose record does not parse is left out and reported.
func (w *UsageWriter) Once(ctx context.Context) error {
	var hosts metal3api.BareMetalHostList
	if err := w.Managed.List(ctx, &hosts, client.UnsafeDisableDeepCopy); err != nil {
		return fmt.Errorf("list hosts: %w", err)
	}
	prefixes, err := servedtenants.Prefixes(ctx, w.Hub, w.ClusterName)
	if err != nil {
		return err
	}
	st, recErr := usage.Record(hosts.Items, prefixes, time.Now())
	cur := &hostfleetv1alpha1.HostUsage{}
	switch err := w.Hub.Get(ctx, client.ObjectKey{Namespace: w.ClusterName, Name: w.ClusterName}, cur); {
	case apierrors.IsNotFound(err):
		cur = &hostfleetv1alpha1.HostUsage{ObjectMeta: metav1.ObjectMeta{Namespace: w.ClusterName, Name: w.ClusterName},
			Spec: hostfleetv1alpha1.HostUsageSpec{ClusterName: w.ClusterName}}
		if err := w.Hub.Create(ctx, cur); err != nil {
			return fmt.Errorf("create HostUsage %s/%s: %w", w.ClusterName, w.ClusterName, err)
		}
	case err != nil:
		return fmt.Errorf("read HostUsage %s/%s: %w", w.ClusterName, w.ClusterName, err)
	case equality.Semantic.DeepEqual(cur.Status, st):
		// Semantic: nil and empty lists alike, times by instant.
		return recErr
	}
	cur = cur.DeepCopy()
	cur.Status = st
	if err := w.Hub.Status().Update(ctx, cur); err != nil {
		return fmt.Errorf("write HostUsage %s/%s: %w", w.ClusterName, w.ClusterName, err)
	}
	return recErr
}
