package claim

import (
	"context"
	"fmt"
	"sync"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/hostfleet/hostfleet/agent/binder"
	"github.com/hostfleet/hostfleet/internal/fence"
	"github.com/hostfleet/hostfleet/internal/hostwrites"
	"github.com/hostfleet/hostfleet/internal/resume"
	"github.com/hostfleet/hostfleet/internal/setup"
)

// consumerIndex indexes BareMetalHosts by the claim their consumerRef
// names, whoever bound them: "<namespace>/<name>".
const consumerIndex = "hostfleet.consumer"

// IndexHosts registers the host index the controllers use; call it once per
// managed cluster, before setting controllers up.
func IndexHosts(ctx context.Context, managed cluster.Cluster) error {
	if err := managed.GetFieldIndexer().IndexField(ctx, &metal3api.BareMetalHost{}, consumerIndex,
		func(o client.Object) []string {
			ref := o.(*metal3api.BareMetalHost).Spec.ConsumerRef
			if ref == nil {
				return nil
			}
			return []string{consumerKey(ref.Namespace, ref.Name)}
		}); err != nil {
		return fmt.Errorf("index hosts by consumer: %w", err)
	}
	if err := managed.GetFieldIndexer().IndexField(ctx, &metal3api.BareMetalHost{}, freeIndex,
		func(o client.Object) []string {
			if binder.Free(o.(*metal3api.BareMetalHost)) {
				return []string{"true"}
			}
			return nil
		}); err != nil {
		return fmt.Errorf("index free hosts: %w", err)
	}
	return nil
}

// freeIndex marks ("true") the hosts that could be bound now (binder.Free).
const freeIndex = "hostfleet.free"

func consumerKey(namespace, name string) string {
	return namespace + "/" + name
}

// SetupWithManager wires the controller: claims from the manager's (hub)
// cache, or from the managed cluster's in local mode; hosts, HardwareData and
// policies from the managed cluster's cache. IndexHosts must have been called.
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, o setup.Options) error {
	managed := o.Managed
	if r.Fence == nil {
		r.Fence = &fence.Fence{}
	}
	r.hosts = hostwrites.Writer{Client: r.Managed, Fence: r.Fence, Owner: hostwrites.Claims, Name: string(hostwrites.Claims) + "/" + r.Serving()}
	r.wake = make(chan event.TypedGenericEvent[*metal3api.HostClaim], 1)
	r.warned = &sync.Map{}
	claimIndexer := mgr.GetFieldIndexer()
	if r.local() {
		claimIndexer = managed.GetFieldIndexer()
	}
	if err := indexWaiting(ctx, claimIndexer); err != nil {
		return fmt.Errorf("index waiting and reserving claims: %w", err)
	}
	// The agent's own writes come back as watch events: the claim's (the
	// reservation, the status) and the bind's are not reconciled again.
	// Everything else is.
	b := ctrl.NewControllerManagedBy(mgr)
	if r.local() {
		served := predicate.NewTypedPredicateFuncs(func(c *metal3api.HostClaim) bool { return r.serves(c) })
		b = b.Named("local-hostclaim").WatchesRawSource(source.Kind(managed.GetCache(), &metal3api.HostClaim{},
			&handler.TypedEnqueueRequestForObject[*metal3api.HostClaim]{}, served, fence.EchoFilter[*metal3api.HostClaim](r.Fence, r.hosts.Name, fence.Claims)))
	} else {
		b = b.Named("hostclaim").For(&metal3api.HostClaim{}, builder.WithPredicates(fence.EchoFilter[client.Object](r.Fence, r.hosts.Name, fence.Claims)))
	}
	return b.
		WatchesRawSource(source.Kind(managed.GetCache(), &metal3api.BareMetalHost{},
			handler.TypedEnqueueRequestsFromMapFunc(r.claimsForHost), fence.EchoFilter[*metal3api.BareMetalHost](r.Fence, r.hosts.Name, fence.Hosts))).
		WatchesRawSource(source.Kind(managed.GetCache(), &metal3api.HardwareData{},
			handler.TypedEnqueueRequestsFromMapFunc(r.claimsForHardware))).
		WatchesRawSource(source.Kind(managed.GetCache(), &metal3api.HostDeployPolicy{},
			handler.TypedEnqueueRequestsFromMapFunc(func(context.Context, *metal3api.HostDeployPolicy) []reconcile.Request {
				r.wakeWaiting()
				return nil
			}))).
		WatchesRawSource(source.Channel(r.wake, handler.TypedEnqueueRequestsFromMapFunc(
			func(ctx context.Context, _ *metal3api.HostClaim) []reconcile.Request { return r.waitingClaims(ctx) }))).
		WithOptions(o.Controller(1)).
		Complete(resume.Reconciler(r))
}

// claimsForHost maps a host event to the claim that holds it (in local
// mode, also the claim another HostClaim controller bound it to: the agent
// leaves that claim), or, for a free host, to the claims reserving it and
// (coalesced) every claim still waiting for one.
func (r *Reconciler) claimsForHost(ctx context.Context, h *metal3api.BareMetalHost) []reconcile.Request {
	if ref := h.Spec.ConsumerRef; r.Consumer.Bound(h) || r.local() && binder.Upstream(ref) {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}}}
	}
	if !binder.Free(h) {
		return nil
	}
	r.wakeWaiting()
	// A claim waiting with its reservation on this host (held by a claim
	// that was gone, and just released) binds it now.
	return setup.ListRequests(ctx, r.Claims, &metal3api.HostClaimList{}, "the claims reserving a freed host",
		client.MatchingFields{reservedIndex: binder.ReservationValue(h)}, client.UnsafeDisableDeepCopy)
}

// wakeWaiting has every waiting claim looked at again, soon: a host became
// free, or a policy changed. Wake-ups coalesce: a burst of them (every host
// listed at start) enqueues the waiting claims once or twice, not once per
// host.
func (r *Reconciler) wakeWaiting() {
	select {
	case r.wake <- event.TypedGenericEvent[*metal3api.HostClaim]{Object: &metal3api.HostClaim{}}:
	default: // a wake-up is pending already
	}
}

// claimsForHardware maps a HardwareData event to the claim holding the host of
// the same name.
func (r *Reconciler) claimsForHardware(ctx context.Context, hw *metal3api.HardwareData) []reconcile.Request {
	h := &metal3api.BareMetalHost{}
	if err := r.Managed.Get(ctx, client.ObjectKeyFromObject(hw), h); err != nil {
		return nil
	}
	if !r.Consumer.Bound(h) {
		return nil
	}
	return r.claimsForHost(ctx, h)
}

func (r *Reconciler) waitingClaims(ctx context.Context) []reconcile.Request {
	return setup.ListRequests(ctx, r.Claims, &metal3api.HostClaimList{}, "the waiting claims",
		client.MatchingFields{waitingIndex: "true"}, client.UnsafeDisableDeepCopy)
}

// waitingIndex marks ("true") the claims that reserve no host and
// are not being deleted: those a freed host or a policy change may serve.
const waitingIndex = "hostfleet.waiting"

// reservedIndex indexes the claims by the host they reserve
// ("<namespace>/<name>").
const reservedIndex = "hostfleet.reserved"

func indexWaiting(ctx context.Context, indexer client.FieldIndexer) error {
	if err := indexer.IndexField(ctx, &metal3api.HostClaim{}, waitingIndex, func(o client.Object) []string {
		c := o.(*metal3api.HostClaim)
		// A claim another controller serves waits for nothing of this agent's.
		if binder.Reservation(c) == nil && c.DeletionTimestamp == nil && binder.OtherController(c) == "" {
			return []string{"true"}
		}
		return nil
	}); err != nil {
		return err
	}
	return indexer.IndexField(ctx, &metal3api.HostClaim{}, reservedIndex, func(o client.Object) []string {
		if ref := binder.Reservation(o.(*metal3api.HostClaim)); ref != nil {
			return []string{ref.Namespace + "/" + ref.Name}
		}
		return nil
	})
}

// HostWritesSeen reports whether the cache shows every host write the
// agent's writers made through its fence (bindings and releases among
// them).
func (r *Reconciler) HostWritesSeen(ctx context.Context) bool {
	return !r.Fence.Unseen(r.hosts.Name, fence.Hosts, func(key types.NamespacedName) (string, bool) {
		// The cached host (a metadata-only read would start a second watch).
		h := &metal3api.BareMetalHost{}
		if err := r.Managed.Get(ctx, key, h); err != nil {
			return "", false
		}
		return h.ResourceVersion, true
	})
}
