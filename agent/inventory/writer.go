package inventory

import (
	"context"
	"fmt"
	"reflect"
	"sync/atomic"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/agent/metrics"
	"github.com/hostfleet/hostfleet/agent/servedtenants"
	"github.com/hostfleet/hostfleet/hub/api/hardware"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// Writer publishes the cluster's HostInventory on the hub, in the cluster's
// namespace, named after the cluster. It recomputes the inventory every
// Interval from cached hosts and policies and writes only when it changed: at
// most one write per Interval, however many host events happen. The one
// exception settles a claim bound in the second of a write (see unsettled):
// the inventory is written again as soon as that second is over, not a whole
// Interval later, so that the scheduler does not hold the host back.
//
// The first write of a run is a server-side apply (it creates the inventory
// and takes its fields over); the later ones are merge patches from the
// inventory that write returned, which the API server applies for a fraction
// of an apply's cost.
type Writer struct {
	// Hub writes the inventory and reads tenant namespaces, the cluster's
	// ClusterTenancy and the claims placed on the cluster (the agent's is
	// cached: no hub request per tick).
	Hub client.Client
	// Managed reads hosts and policies (cached), and with LocalClaims the
	// cluster's own claims.
	Managed client.Reader
	// LocalClaims: the agent binds claims of the managed cluster too
	// (--local-claims), among them the claims the hub forwards here, whose
	// Associated transition the hub copies from theirs.
	LocalClaims bool
	ClusterName string
	Interval    time.Duration
	// HostWritesSeen, if set, reports whether the cache shows every host
	// write the agent made. The inventory is computed only when it does:
	// its lastUpdated, taken before, must not be later than a binding the
	// cache does not show yet (the scheduler counts a claim bound before
	// lastUpdated as counted here). Waited for up to a second; then the
	// tick is skipped.
	HostWritesSeen func(context.Context) bool

	// written is the inventory as the last write returned it; nil until
	// the first write of this run.
	written *hostfleetv1alpha1.HostInventory
	// views are the hosts' hardware as last computed, by HardwareData and
	// its resourceVersion: a view is computed once per change, not per
	// tick.
	views  map[types.NamespacedName]view
	writes atomic.Int64
	skips  atomic.Int64
}

// Writes is the number of inventory writes so far, a write in flight
// included: a write the hub shows is counted.
func (w *Writer) Writes() int64 { return w.writes.Load() }

// Skips is the number of ticks skipped because the cache did not show the
// agent's own host writes.
func (w *Writer) Skips() int64 { return w.skips.Load() }

// Start runs until ctx is done. Errors are logged and retried next interval.
func (w *Writer) Start(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithName("inventory")
	t := time.NewTicker(w.Interval)
	defer t.Stop()
	for {
		before := w.writes.Load()
		if err := w.Once(ctx); err != nil {
			log.Error(err, "write HostInventory", "cluster", w.ClusterName)
		}
		settle := w.settleAfter(before)
		for waiting := true; waiting; {
			select {
			case <-ctx.Done():
				return nil
			case <-t.C:
				waiting = false
			case <-settle:
				settle = nil
				if unsettled, err := w.unsettled(ctx); err == nil && unsettled {
					waiting = false
				}
			}
		}
	}
}

// settleMargin is how long after the second of a write the writer looks for
// claims bound in that second: their status writes are in the cache by then.
const settleMargin = 100 * time.Millisecond

// settleAfter fires just after the second of the last write, when the round
// that began at writesBefore wrote; nil (never) otherwise. A claim bound in
// that second is then settled by one more write, rather than at the next
// tick: near a full fleet, the scheduler holds its host back until then.
func (w *Writer) settleAfter(writesBefore int64) <-chan time.Time {
	if w.writes.Load() == writesBefore || w.written == nil || w.written.Status.LastUpdated == nil {
		return nil
	}
	return time.After(time.Until(w.written.Status.LastUpdated.Add(time.Second)) + settleMargin)
}

// Once computes the inventory and writes it if it changed, or if the hub
// scheduler would count a bound claim twice (see unsettled). Everything it
// lists is only read: no copies (1 000 agents in one process tick 100 times
// a second).
func (w *Writer) Once(ctx context.Context) error {
	at, ok := w.settled(ctx)
	if !ok {
		w.skips.Add(1)
		ctrl.LoggerFrom(ctx).V(1).Info("the cache does not show the agent's latest host writes yet: inventory left for the next tick", "cluster", w.ClusterName)
		return nil
	}
	var hosts metal3api.BareMetalHostList
	if err := w.Managed.List(ctx, &hosts, client.UnsafeDisableDeepCopy); err != nil {
		return fmt.Errorf("list hosts: %w", err)
	}
	var policies metal3api.HostDeployPolicyList
	if err := w.Managed.List(ctx, &policies, client.UnsafeDisableDeepCopy); err != nil {
		return fmt.Errorf("list HostDeployPolicies: %w", err)
	}
	ct, err := servedtenants.Get(ctx, w.Hub, w.ClusterName)
	if err != nil {
		return err
	}
	prefixes, err := servedtenants.Prefixes(ctx, w.Hub, w.ClusterName)
	if err != nil {
		return err
	}
	hw, err := w.hardware(ctx)
	if err != nil {
		return err
	}
	st := Build(Input{Hosts: hosts.Items, Policies: policies.Items, Namespaces: servedtenants.Namespaces(ct), Prefixes: prefixes, Hardware: hw, Baselines: ct.Baselines()})
	metrics.Heartbeat.WithLabelValues(w.ClusterName).SetToCurrentTime()
	if w.written != nil {
		last := w.written.Status
		last.LastUpdated = nil
		if reflect.DeepEqual(last, st) {
			unsettled, err := w.unsettled(ctx)
			if err != nil || !unsettled {
				return err
			}
		}
	}
	return w.write(ctx, st, at)
}

type view struct {
	resourceVersion string
	Profiled
}

// hardware is each inspected host's view and profile, from the cached
// HardwareData (named after their hosts).
func (w *Writer) hardware(ctx context.Context) (map[types.NamespacedName]Profiled, error) {
	var list metal3api.HardwareDataList
	if err := w.Managed.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("list HardwareData: %w", err)
	}
	views := make(map[types.NamespacedName]view, len(list.Items))
	out := make(map[types.NamespacedName]Profiled, len(list.Items))
	for i := range list.Items {
		hd := &list.Items[i]
		key := client.ObjectKeyFromObject(hd)
		v, ok := w.views[key]
		if !ok || v.resourceVersion != hd.ResourceVersion {
			v = view{resourceVersion: hd.ResourceVersion}
			if v.View = hardware.OfData(hd); v.View != nil {
				v.Profile = hardware.Profile(v.View)
			}
		}
		views[key] = v
		if v.View != nil {
			out[key] = v.Profiled
		}
	}
	w.views = views
	return out, nil
}

// settled waits (up to a second) until HostWritesSeen, and returns the time
// taken just before it held: every host write completed before that time is
// in the cache.
func (w *Writer) settled(ctx context.Context) (time.Time, bool) {
	deadline := time.Now().Add(time.Second)
	for {
		at := time.Now()
		if w.HostWritesSeen == nil || w.HostWritesSeen(ctx) {
			return at, true
		}
		if at.After(deadline) {
			return at, false
		}
		select {
		case <-ctx.Done():
			return at, false
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// unsettled reports whether a claim bound on this cluster (placed here by
// the hub, or forwarded here) has its Associated transition in or after
// the second of the last write. The hub scheduler counts such a claim as
// pending while the inventory may already count its host as taken:
// written again, unchanged, with a later time, the inventory settles it.
// Claims bound in earlier seconds need no write, so that most changes cost
// one write, not two.
func (w *Writer) unsettled(ctx context.Context) (bool, error) {
	at := w.written.Status.LastUpdated
	if at == nil {
		return true, nil
	}
	var claims metal3api.HostClaimList
	if err := w.Hub.List(ctx, &claims, client.MatchingLabels{hostfleetv1alpha1.LabelCluster: w.ClusterName}, client.UnsafeDisableDeepCopy); err != nil {
		return false, fmt.Errorf("list the claims placed on %s: %w", w.ClusterName, err)
	}
	if boundSince(claims.Items, at) {
		return true, nil
	}
	if !w.LocalClaims {
		return false, nil
	}
	// A forwarded claim is not among the agent's hub claims: the hub gives
	// it the Associated transition of its copy here, which the agent bound.
	var local metal3api.HostClaimList
	if err := w.Managed.List(ctx, &local, client.UnsafeDisableDeepCopy); err != nil {
		return false, fmt.Errorf("list the claims of %s: %w", w.ClusterName, err)
	}
	return boundSince(local.Items, at), nil
}

// boundSince reports whether one of claims has been Associated since at
// (to the second, as stored).
func boundSince(claims []metal3api.HostClaim, at *metav1.Time) bool {
	for i := range claims {
		cond := meta.FindStatusCondition(claims[i].Status.Conditions, hostfleetv1alpha1.ConditionAssociated)
		if cond != nil && cond.Status == metav1.ConditionTrue && !cond.LastTransitionTime.Before(at) {
			return true
		}
	}
	return false
}

func (w *Writer) write(ctx context.Context, st hostfleetv1alpha1.HostInventoryStatus, at time.Time) error {
	// When the hosts were read, not when written: a claim bound between the
	// two has its Associated time after lastUpdated, and the scheduler
	// counts it as pending. To the second, as it is stored: the comparison
	// in unsettled is the scheduler's.
	now := metav1.NewTime(at.Truncate(time.Second))
	st.LastUpdated = &now
	if w.written != nil {
		inv := w.written.DeepCopy()
		inv.Status = st
		if err := w.counted(func() error {
			return w.Hub.Status().Patch(ctx, inv, client.MergeFrom(w.written), client.FieldOwner(hostfleetv1alpha1.FieldManagerAgent))
		}); err != nil {
			// Deleted, or changed by someone else: applied whole next time.
			w.written = nil
			return fmt.Errorf("patch HostInventory status %s/%s: %w", w.ClusterName, w.ClusterName, err)
		}
		w.written = inv
		return nil
	}
	inv := &hostfleetv1alpha1.HostInventory{
		TypeMeta:   metav1.TypeMeta{APIVersion: hostfleetv1alpha1.GroupVersion.String(), Kind: "HostInventory"},
		ObjectMeta: metav1.ObjectMeta{Namespace: w.ClusterName, Name: w.ClusterName},
		Spec:       hostfleetv1alpha1.HostInventorySpec{ClusterName: w.ClusterName},
	}
	spec, err := applyObject(inv)
	if err != nil {
		return err
	}
	delete(spec.Object, "status")
	if err := w.Hub.Apply(ctx, client.ApplyConfigurationFromUnstructured(spec), client.FieldOwner(hostfleetv1alpha1.FieldManagerAgent), client.ForceOwnership); err != nil {
		return fmt.Errorf("apply HostInventory %s/%s (is the cluster's namespace on the hub?): %w", w.ClusterName, w.ClusterName, err)
	}
	inv.Status = st
	status, err := applyObject(inv)
	if err != nil {
		return err
	}
	delete(status.Object, "spec")
	ac := client.ApplyConfigurationFromUnstructured(status)
	if err := w.counted(func() error {
		return w.Hub.Status().Apply(ctx, ac, client.FieldOwner(hostfleetv1alpha1.FieldManagerAgent), client.ForceOwnership)
	}); err != nil {
		return fmt.Errorf("apply HostInventory status %s/%s: %w", w.ClusterName, w.ClusterName, err)
	}
	out := &hostfleetv1alpha1.HostInventory{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(status.Object, out); err != nil {
		return err
	}
	w.written = out
	return nil
}

// counted sends one inventory write, counted before it is sent (and
// uncounted if it fails): whoever sees a write on the hub sees it counted.
func (w *Writer) counted(send func() error) error {
	w.writes.Add(1)
	err := send()
	if err != nil {
		w.writes.Add(-1)
	}
	return err
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
