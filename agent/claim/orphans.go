package claim

import (
	"context"
	"fmt"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/hostfleet/hostfleet/agent/hostspec"
	"github.com/hostfleet/hostfleet/agent/metrics"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/internal/hostwrites"
	"github.com/hostfleet/hostfleet/internal/requeue"
	"github.com/hostfleet/hostfleet/internal/resume"
	"github.com/hostfleet/hostfleet/internal/setup"
)

// Orphans releases the hosts held by claims that no longer exist: deleted
// with their finalizer forced off, lost with a hub restore, or replaced by a
// claim of the same name. A host is released only once its claim has been
// gone for Grace (the host says since when, so a restart does not reset
// it), or at once when its claim was deleted as it was bound (crossed),
// never on an error reading the claim, and never when the claim cannot
// be read because its tenant no longer counts this cluster in: that is
// reported on the host instead.
type Orphans struct {
	*Reconciler
	// Grace is how long a host's claim must be gone before it is released.
	Grace time.Duration
	// HostRecorder records Events on the hosts, on the managed cluster.
	HostRecorder events.EventRecorder
}

// writer writes hosts as the orphaned-host controller, its writes news to
// the claim controller.
func (o *Orphans) writer() hostwrites.Writer {
	return hostwrites.Writer{Client: o.Managed, Fence: o.Fence, Owner: hostwrites.Orphans, Name: string(hostwrites.Orphans) + "/" + o.Serving()}
}

// Orphan Event reasons on hosts.
const (
	ReasonClaimGone        = "ClaimGone"
	ReasonOrphanReleased   = "OrphanReleased"
	ReasonClaimUnreachable = "ClaimUnreachable"
)

// SetupWithManager watches the hosts this agent's consumer holds, and the
// claims' deletions: a claim that vanishes without a release (its
// finalizer forced off, a hub restored from an older backup) changes no
// host, so its hosts are looked at when the claim cache drops it.
func (o *Orphans) SetupWithManager(_ context.Context, mgr ctrl.Manager, so setup.Options) error {
	managed := so.Managed
	name := "orphaned-hosts"
	claims := mgr.GetCache()
	if o.local() {
		name, claims = "local-orphaned-hosts", managed.GetCache()
	}
	held := predicate.NewTypedPredicateFuncs(func(h *metal3api.BareMetalHost) bool { return o.Consumer.Bound(h) })
	return ctrl.NewControllerManagedBy(mgr).
		Named(name).
		WatchesRawSource(source.Kind(managed.GetCache(), &metal3api.BareMetalHost{},
			&handler.TypedEnqueueRequestForObject[*metal3api.BareMetalHost]{}, held)).
		WatchesRawSource(source.Kind(claims, &metal3api.HostClaim{}, handler.TypedFuncs[*metal3api.HostClaim, reconcile.Request]{
			DeleteFunc: func(ctx context.Context, e event.TypedDeleteEvent[*metal3api.HostClaim], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
				for _, r := range o.hostsOf(ctx, e.Object) {
					q.Add(r)
				}
			}})).
		Complete(resume.Reconciler(o))
}

// hostsOf are the hosts whose consumerRef names the claim.
func (o *Orphans) hostsOf(ctx context.Context, c *metal3api.HostClaim) []reconcile.Request {
	return setup.ListRequests(ctx, o.Managed, &metal3api.BareMetalHostList{}, "the hosts of a deleted claim",
		client.MatchingFields{consumerIndex: consumerKey(c.Namespace, c.Name)})
}

// Reconcile checks that one held host's claim exists, and releases the
// host once it has been gone for Grace (at once when the claim was deleted
// as the host was bound: crossed).
func (o *Orphans) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	h := &metal3api.BareMetalHost{}
	if err := o.Managed.Get(ctx, req.NamespacedName, h); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !o.Consumer.Bound(h) || !h.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	ref := h.Spec.ConsumerRef
	uid := h.Annotations[hostfleetv1alpha1.AnnotationClaimUID]
	c := &metal3api.HostClaim{}
	key := client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}
	// The cache answers for a claim that is there (every host the agent
	// binds comes back here); only a claim it lacks is asked of the API
	// server.
	if err := o.Claims.Get(ctx, key, c); err == nil && string(c.UID) == uid {
		return ctrl.Result{}, o.setOrphanedSince(ctx, h, "")
	}
	err := o.ClaimReader.Get(ctx, key, c)
	switch {
	case err == nil && string(c.UID) == uid:
		return ctrl.Result{}, o.setOrphanedSince(ctx, h, "") // alive (again)
	case apierrors.IsForbidden(err):
		o.HostRecorder.Eventf(h, nil, corev1.EventTypeWarning, ReasonClaimUnreachable, "CheckClaim",
			"the claim %s/%s that holds this host cannot be read: its tenant may no longer count cluster %s in its set; the host is kept until the claim is deleted or readable again",
			ref.Namespace, ref.Name, o.ClusterName)
		return ctrl.Result{RequeueAfter: o.Grace}, nil
	case err != nil && !apierrors.IsNotFound(err):
		return ctrl.Result{}, fmt.Errorf("check the claim %s of host %s: %w", klog.KRef(ref.Namespace, ref.Name), req, err)
	case err == nil && o.Consumer.IsLegacy(h):
		// A host bound with the upstream consumerRef (by an older agent)
		// that names a live claim of another UID: baremetal-operator's
		// HostClaim controller may have taken it over. Not this agent's.
		return ctrl.Result{}, nil
	}
	if crossed(h, time.Now()) {
		return o.releaseOrphan(ctx, h, "the claim %s was deleted as the host was bound to it, and nothing was deployed on the host", klog.KRef(ref.Namespace, ref.Name))
	}
	since, perr := time.Parse(time.RFC3339, h.Annotations[hostfleetv1alpha1.AnnotationOrphanedSince])
	if perr != nil {
		now := time.Now().UTC().Truncate(time.Second)
		if err := o.setOrphanedSince(ctx, h, now.Format(time.RFC3339)); err != nil {
			return ctrl.Result{}, err
		}
		o.HostRecorder.Eventf(h, nil, corev1.EventTypeWarning, ReasonClaimGone, "CheckClaim",
			"the claim %s/%s (uid %s) that holds this host no longer exists; the host is released after %s unless it comes back",
			ref.Namespace, ref.Name, uid, o.Grace)
		return ctrl.Result{RequeueAfter: o.Grace}, nil
	}
	if left := o.Grace - time.Since(since); left > 0 {
		return ctrl.Result{RequeueAfter: left}, nil
	}
	return o.releaseOrphan(ctx, h, "the claim %s that held this host was gone for %s", klog.KRef(ref.Namespace, ref.Name), time.Since(since).Round(time.Second))
}

// crossedWithin is how recent a binding crossed by its claim's deletion is.
const crossedWithin = time.Minute

// crossed reports whether a host whose claim is gone was bound moments ago
// and has nothing deployed: the claim was deleted as the agent bound it.
// kube-apiserver can let a DELETE that read the claim before the agent's
// finalizer was added remove it after (kubernetes/kubernetes#77988), so
// the release the finalizer guards never runs. Such a host is released at
// once: a claim that came back would lose nothing on it. (A host already
// marked orphaned is on the grace's path, to its end.)
func crossed(h *metal3api.BareMetalHost, now time.Time) bool {
	at, err := time.Parse(time.RFC3339, h.Annotations[hostfleetv1alpha1.AnnotationBoundAt])
	_, marked := h.Annotations[hostfleetv1alpha1.AnnotationOrphanedSince]
	return err == nil && now.Sub(at) < crossedWithin && !marked && hostspec.Settled(h)
}

// releaseOrphan releases a host whose claim is gone and says why on it
// (format and args).
func (o *Orphans) releaseOrphan(ctx context.Context, h *metal3api.BareMetalHost, format string, args ...any) (ctrl.Result, error) {
	ref := h.Spec.ConsumerRef
	gone := &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ref.Namespace, Name: ref.Name,
		UID: types.UID(h.Annotations[hostfleetv1alpha1.AnnotationClaimUID])}}
	done, err := o.releaseHost(ctx, o.writer(), gone, h)
	if err != nil {
		return requeue.OnConflict(err)
	}
	if err := o.deleteCopies(ctx, gone, h.Namespace, nil); err != nil {
		return ctrl.Result{}, err
	}
	if !done {
		return ctrl.Result{RequeueAfter: o.RetryAfter}, nil
	}
	metrics.OrphansReleased.Inc()
	o.HostRecorder.Eventf(h, nil, corev1.EventTypeNormal, ReasonOrphanReleased, "Release", "released: "+format, args...)
	return ctrl.Result{}, nil
}

// setOrphanedSince sets (or, with "", removes) the host's orphaned-since
// annotation, if it changes.
func (o *Orphans) setOrphanedSince(ctx context.Context, h *metal3api.BareMetalHost, since string) error {
	if h.Annotations[hostfleetv1alpha1.AnnotationOrphanedSince] == since {
		return nil
	}
	orig := h.DeepCopy()
	if since == "" {
		delete(h.Annotations, hostfleetv1alpha1.AnnotationOrphanedSince)
	} else {
		if h.Annotations == nil {
			h.Annotations = map[string]string{}
		}
		h.Annotations[hostfleetv1alpha1.AnnotationOrphanedSince] = since
	}
	if err := o.writer().Patch(ctx, h, orig); err != nil {
		return fmt.Errorf("mark host %s orphaned since %q: %w", klog.KObj(h), since, err)
	}
	return nil
}
