package inventory

import (
	"context"
	"errors"
	"fmt"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/agent/servedtenants"
	"github.com/hostfleet/hostfleet/hub/api/usage"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/internal/fence"
	"github.com/hostfleet/hostfleet/internal/hostwrites"
)

// UsageWriter reports the cluster's host use to the hub: its HostUsage, in
// the cluster's namespace, named after the cluster, whose intervals and
// open hosts are its hosts' records (hub/api/usage.Report). Every Interval
// it first drops from its hosts the intervals the hub has settled (the
// HostUsage's status.settled, the hub's), then applies the report if the
// hub's copy differs: after a bind or a release, and after anything that
// changed the hub's copy. The hub counts what it accepts into its
// UsageLedger, which the agent never writes.
type UsageWriter struct {
	// Hub reads the HostUsage (cached), the ClusterTenancy and writes.
	Hub client.Client
	// Managed reads hosts (cached) and drops settled intervals from them.
	Managed client.Client
	// Fence is the agent's write fence.
	Fence       *fence.Fence
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
			log.Error(err, "report host use", "cluster", w.ClusterName)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Once drops what the hub settled, computes the report and applies it if
// the hub's copy differs. A host whose record does not parse is left out
// and reported.
func (w *UsageWriter) Once(ctx context.Context) error {
	cur := &hostfleetv1alpha1.HostUsage{}
	switch err := w.Hub.Get(ctx, client.ObjectKey{Namespace: w.ClusterName, Name: w.ClusterName}, cur); {
	case apierrors.IsNotFound(err):
		cur = nil
	case err != nil:
		return fmt.Errorf("read HostUsage %s/%s: %w", w.ClusterName, w.ClusterName, err)
	}
	var hosts metal3api.BareMetalHostList
	if err := w.Managed.List(ctx, &hosts, client.UnsafeDisableDeepCopy); err != nil {
		return fmt.Errorf("list hosts: %w", err)
	}
	dropErr := w.dropSettled(ctx, cur, hosts.Items)
	prefixes, err := servedtenants.Prefixes(ctx, w.Hub, w.ClusterName)
	if err != nil {
		return err
	}
	intervals, open, recErr := usage.Report(hosts.Items, prefixes)
	if cur != nil && equality.Semantic.DeepEqual(cur.Status.Intervals, intervals) && equality.Semantic.DeepEqual(cur.Status.Open, open) {
		// Semantic: nil and empty lists alike, times by instant.
		return errors.Join(dropErr, recErr)
	}
	if err := w.apply(ctx, cur == nil, intervals, open); err != nil {
		return err
	}
	return errors.Join(dropErr, recErr)
}

// dropSettled removes from each host's record the intervals the hub has
// settled, one write per host with its resourceVersion (a release adding
// an interval meanwhile is never lost): the next report no longer holds
// them, and the hub stops listing them. hosts are the cache's: each one
// written is copied first.
func (w *UsageWriter) dropSettled(ctx context.Context, cur *hostfleetv1alpha1.HostUsage, hosts []metal3api.BareMetalHost) error {
	if cur == nil || len(cur.Status.Settled) == 0 {
		return nil
	}
	settled := make(map[string]bool, len(cur.Status.Settled))
	for _, k := range cur.Status.Settled {
		settled[k] = true
	}
	var errs []error
	for i := range hosts {
		if hosts[i].Annotations[hostfleetv1alpha1.AnnotationUsage] == "" {
			continue
		}
		h := hosts[i].DeepCopy()
		orig := h.DeepCopy()
		changed, err := usage.Drop(h, settled)
		if err != nil || !changed {
			continue // a record that does not parse is Report's to say
		}
		if err := (hostwrites.Writer{Client: w.Managed, Fence: w.Fence, Owner: hostwrites.Usage}).Patch(ctx, h, orig); err != nil {
			errs = append(errs, fmt.Errorf("drop the settled intervals of host %s: %w", klog.KObj(h), err))
			continue
		}
		hosts[i] = *h
	}
	return errors.Join(errs...)
}

// apply writes the agent's part of the report, by server-side apply under
// the agent's field manager: the hub's part (settled, conditions) is the
// hub's field manager's, and neither write undoes the other.
func (w *UsageWriter) apply(ctx context.Context, create bool, intervals []hostfleetv1alpha1.UsageInterval, open []hostfleetv1alpha1.OpenUsage) error {
	rec := &hostfleetv1alpha1.HostUsage{
		TypeMeta:   metav1.TypeMeta{APIVersion: hostfleetv1alpha1.GroupVersion.String(), Kind: "HostUsage"},
		ObjectMeta: metav1.ObjectMeta{Namespace: w.ClusterName, Name: w.ClusterName},
		Spec:       hostfleetv1alpha1.HostUsageSpec{ClusterName: w.ClusterName},
	}
	if create {
		spec, err := applyObject(rec)
		if err != nil {
			return err
		}
		delete(spec.Object, "status")
		if err := w.Hub.Apply(ctx, client.ApplyConfigurationFromUnstructured(spec), client.FieldOwner(hostfleetv1alpha1.FieldManagerAgent), client.ForceOwnership); err != nil {
			return fmt.Errorf("apply HostUsage %s/%s: %w", w.ClusterName, w.ClusterName, err)
		}
	}
	rec.Status = hostfleetv1alpha1.HostUsageStatus{Intervals: intervals, Open: open}
	status, err := applyObject(rec)
	if err != nil {
		return err
	}
	delete(status.Object, "spec")
	if err := w.Hub.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(status), client.FieldOwner(hostfleetv1alpha1.FieldManagerAgent), client.ForceOwnership); err != nil {
		return fmt.Errorf("apply HostUsage status %s/%s: %w", w.ClusterName, w.ClusterName, err)
	}
	return nil
}
