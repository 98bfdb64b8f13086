package claim

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/hostfleet/hostfleet/agent/binder"
	"github.com/hostfleet/hostfleet/agent/hostspec"
	"github.com/hostfleet/hostfleet/agent/reflector"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// consumerIndex indexes BareMetalHosts held by hub claims by "<namespace>/<name>"
// of the claim.
const consumerIndex = "hostfleet.consumer"

// Reconciler binds hub claims placed on one cluster to that cluster's hosts.
type Reconciler struct {
	// Hub reads and writes claims on the hub (cached, label-filtered).
	Hub client.Client
	// HubReader reads hub objects that are not cached (claim namespaces).
	HubReader client.Reader
	// Managed reads and writes hosts on the infrastructure cluster.
	Managed client.Client
	// Recorder emits events on hub claims.
	Recorder events.EventRecorder

	// HubName is written on bound hosts (hostfleet.io/hub).
	HubName string
	// ClusterName is the managed cluster this agent serves.
	ClusterName string
	// RetryAfter is how long a claim with no host waits before it is looked at
	// again (host and policy events also wake it).
	RetryAfter time.Duration
	// Resync is how often a bound claim is looked at again, to pick up
	// changes of its hub secrets (which the agent reads but does not watch).
	Resync time.Duration
	// ManagedReader reads, uncached, objects the agent must not cache on the
	// managed cluster (Secrets: caching them would hold every BMC password).
	ManagedReader client.Reader
}

// SetupWithManager wires the controller: claims from the manager's (hub) cache,
// hosts and policies from the managed cluster's cache.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, managed cluster.Cluster, concurrency int) error {
	if err := managed.GetFieldIndexer().IndexField(context.Background(), &metal3api.BareMetalHost{}, consumerIndex,
		func(o client.Object) []string {
			ref := o.(*metal3api.BareMetalHost).Spec.ConsumerRef
			if !binder.IsHubConsumer(ref) {
				return nil
			}
			return []string{ref.Namespace + "/" + ref.Name}
		}); err != nil {
		return fmt.Errorf("index hosts by consumer: %w", err)
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("hostclaim").
		For(&metal3api.HostClaim{}).
		WatchesRawSource(source.Kind(managed.GetCache(), &metal3api.BareMetalHost{},
			handler.TypedEnqueueRequestsFromMapFunc(r.claimsForHost))).
		WatchesRawSource(source.Kind(managed.GetCache(), &metal3api.HardwareData{},
			handler.TypedEnqueueRequestsFromMapFunc(r.claimsForHardware))).
		WatchesRawSource(source.Kind(managed.GetCache(), &metal3api.HostDeployPolicy{},
			handler.TypedEnqueueRequestsFromMapFunc(func(ctx context.Context, _ *metal3api.HostDeployPolicy) []reconcile.Request {
				return r.waitingClaims(ctx)
			}))).
		WithOptions(controller.Options{MaxConcurrentReconciles: concurrency}).
		Complete(r)
}

// claimsForHost maps a host event to the claim that holds it, or, for a free
// host, to every claim still waiting for one.
func (r *Reconciler) claimsForHost(ctx context.Context, h *metal3api.BareMetalHost) []reconcile.Request {
	if ref := h.Spec.ConsumerRef; binder.IsHubConsumer(ref) {
		if h.Annotations[hostfleetv1alpha1.AnnotationHub] != r.HubName {
			return nil
		}
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}}}
	}
	if binder.Free(h) {
		return r.waitingClaims(ctx)
	}
	return nil
}

// claimsForHardware maps a HardwareData event to the claim holding the host of
// the same name.
func (r *Reconciler) claimsForHardware(ctx context.Context, hw *metal3api.HardwareData) []reconcile.Request {
	h := &metal3api.BareMetalHost{}
	if err := r.Managed.Get(ctx, client.ObjectKeyFromObject(hw), h); err != nil {
		return nil
	}
	if !binder.IsHubConsumer(h.Spec.ConsumerRef) {
		return nil
	}
	return r.claimsForHost(ctx, h)
}

func (r *Reconciler) waitingClaims(ctx context.Context) []reconcile.Request {
	var claims metal3api.HostClaimList
	if err := r.Hub.List(ctx, &claims); err != nil {
		logr.FromContextOrDiscard(ctx).Error(err, "list waiting claims")
		return nil
	}
	var out []reconcile.Request
	for i := range claims.Items {
		c := &claims.Items[i]
		if c.Status.BareMetalHost == nil && c.DeletionTimestamp == nil {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(c)})
		}
	}
	return out
}

// Reconcile binds, keeps or releases the host of one claim.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	c := &metal3api.HostClaim{}
	if err := r.Hub.Get(ctx, req.NamespacedName, c); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	// The cache only holds claims placed on this cluster; a claim relabelled
	// away is no longer ours and disappears from it.
	if c.Labels[hostfleetv1alpha1.LabelCluster] != r.ClusterName || c.Labels[hostfleetv1alpha1.LabelKind] == hostfleetv1alpha1.KindRemote {
		return ctrl.Result{}, nil
	}
	if !c.DeletionTimestamp.IsZero() {
		return r.release(ctx, c)
	}
	if !controllerutil.ContainsFinalizer(c, hostfleetv1alpha1.AgentFinalizer) {
		orig := c.DeepCopy()
		controllerutil.AddFinalizer(c, hostfleetv1alpha1.AgentFinalizer)
		if err := r.Hub.Patch(ctx, c, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
			return ctrl.Result{}, fmt.Errorf("add finalizer to %s: %w", req, err)
		}
	}

	in, err := r.inputs(ctx, c)
	if err != nil {
		return ctrl.Result{}, err
	}
	d := binder.Decide(in)
	log.V(1).Info("decided", "action", d.Action.String(), "reason", d.Reason)

	switch d.Action {
	case binder.Bind:
		if err := r.bind(ctx, c, d.Host); err != nil {
			if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
				// Someone else changed the host first (possibly another claim
				// bound it). Decide again from fresher data.
				log.Info("host changed while binding; trying again", "host", d.Host.Name)
				return ctrl.Result{RequeueAfter: time.Second}, r.setStatus(ctx, c, nil, nil, associatedCondition(c, metav1.ConditionFalse,
					hostfleetv1alpha1.ReasonBindConflict, fmt.Sprintf("host %s/%s was taken while binding; choosing again", d.Host.Namespace, d.Host.Name)), nil)
			}
			return ctrl.Result{}, err
		}
		r.Recorder.Eventf(c, nil, corev1.EventTypeNormal, hostfleetv1alpha1.ReasonHostAssociated, "Bind",
			"bound to BareMetalHost %s/%s on cluster %s", d.Host.Namespace, d.Host.Name, r.ClusterName)
		log.Info("bound", "host", d.Host.Namespace+"/"+d.Host.Name)
		fallthrough
	case binder.Keep:
		sync, err := r.syncHost(ctx, c, d.Host)
		if err != nil {
			return ctrl.Result{}, err
		}
		if err := r.forwardReboot(ctx, c, d.Host); err != nil {
			return ctrl.Result{}, err
		}
		prefixes, err := r.tenantPrefixes(ctx, in.NamespaceLabels)
		if err != nil {
			return ctrl.Result{}, err
		}
		if err := r.syncLabels(ctx, c, d.Host, prefixes); err != nil {
			return ctrl.Result{}, err
		}
		hw, err := r.syncHardware(ctx, c, d.Host)
		if err != nil {
			return ctrl.Result{}, err
		}
		assoc := associatedCondition(c, metav1.ConditionTrue, hostfleetv1alpha1.ReasonHostAssociated,
			fmt.Sprintf("bound to BareMetalHost %s/%s on cluster %s", d.Host.Namespace, d.Host.Name, r.ClusterName))
		if err := r.setStatus(ctx, c, d.Host, hw, assoc, reflector.Conditions(c, d.Host, sync)); err != nil {
			return ctrl.Result{}, err
		}
		// Hub secrets are read, not watched: look again now and then.
		return ctrl.Result{RequeueAfter: r.Resync}, nil
	default:
		if err := r.syncLabels(ctx, c, nil, nil); err != nil {
			return ctrl.Result{}, err
		}
		assoc := associatedCondition(c, metav1.ConditionFalse, d.Reason, d.Message)
		return ctrl.Result{RequeueAfter: r.RetryAfter}, r.setStatus(ctx, c, nil, nil, assoc, nil)
	}
}

func (r *Reconciler) inputs(ctx context.Context, c *metal3api.HostClaim) (binder.Input, error) {
	ns := &corev1.Namespace{}
	if err := r.HubReader.Get(ctx, client.ObjectKey{Name: c.Namespace}, ns); err != nil {
		return binder.Input{}, fmt.Errorf("get hub namespace %s: %w", c.Namespace, err)
	}
	var policies metal3api.HostDeployPolicyList
	if err := r.Managed.List(ctx, &policies); err != nil {
		return binder.Input{}, fmt.Errorf("list HostDeployPolicies: %w", err)
	}
	var hosts metal3api.BareMetalHostList
	if err := r.Managed.List(ctx, &hosts); err != nil {
		return binder.Input{}, fmt.Errorf("list BareMetalHosts: %w", err)
	}
	return binder.Input{Hub: r.HubName, Claim: c, NamespaceLabels: ns.Labels, Policies: policies.Items, Hosts: hosts.Items}, nil
}

// bind writes the claim's consumerRef on the host. The patch carries the
// resourceVersion the decision was made on, so it fails with a conflict if
// anyone changed the host since: two claims can never both win one host.
func (r *Reconciler) bind(ctx context.Context, c *metal3api.HostClaim, h *metal3api.BareMetalHost) error {
	orig := h.DeepCopy()
	h.Spec.ConsumerRef = binder.ConsumerRef(c)
	if h.Annotations == nil {
		h.Annotations = map[string]string{}
	}
	h.Annotations[hostfleetv1alpha1.AnnotationHub] = r.HubName
	h.Annotations[hostfleetv1alpha1.AnnotationClaimUID] = string(c.UID)
	if err := r.Managed.Patch(ctx, h, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("bind %s/%s to host %s/%s: %w", c.Namespace, c.Name, h.Namespace, h.Name, err)
	}
	return nil
}

// release frees every host the claim holds: it powers the host off and
// removes the image (baremetal-operator deprovisions), waits until the host has
// settled, then clears the consumerRef and deletes the secret copies. Only then
// does the finalizer go.
func (r *Reconciler) release(ctx context.Context, c *metal3api.HostClaim) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(c, hostfleetv1alpha1.AgentFinalizer) {
		return ctrl.Result{}, nil
	}
	var hosts metal3api.BareMetalHostList
	if err := r.Managed.List(ctx, &hosts, client.MatchingFields{consumerIndex: c.Namespace + "/" + c.Name}); err != nil {
		return ctrl.Result{}, fmt.Errorf("list hosts of %s/%s: %w", c.Namespace, c.Name, err)
	}
	for i := range hosts.Items {
		h := &hosts.Items[i]
		if !binder.HeldBy(h, r.HubName, c) {
			continue
		}
		if err := r.Managed.Apply(ctx, client.ApplyConfigurationFromUnstructured(hostspec.Released(h)),
			client.FieldOwner(hostspec.FieldManager), client.ForceOwnership); err != nil {
			return ctrl.Result{}, fmt.Errorf("deprovision host %s/%s of %s/%s: %w", h.Namespace, h.Name, c.Namespace, c.Name, err)
		}
		if !hostspec.Settled(h) {
			// The host's status changes wake this claim up again.
			if err := r.setStatus(ctx, c, h, c.Status.HardwareData, associatedCondition(c, metav1.ConditionTrue, hostfleetv1alpha1.ReasonReleasing,
				fmt.Sprintf("releasing BareMetalHost %s/%s: waiting for it to deprovision (%s)", h.Namespace, h.Name, h.Status.Provisioning.State)),
				reflector.Conditions(c, h, reflector.Sync{OK: true})); err != nil {
				return ctrl.Result{}, err
			}
			return ctrl.Result{RequeueAfter: r.RetryAfter}, nil
		}
		orig := h.DeepCopy()
		h.Spec.ConsumerRef = nil
		delete(h.Annotations, hostfleetv1alpha1.AnnotationHub)
		delete(h.Annotations, hostfleetv1alpha1.AnnotationClaimUID)
		if err := r.Managed.Patch(ctx, h, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
			return ctrl.Result{}, fmt.Errorf("release host %s/%s of %s/%s: %w", h.Namespace, h.Name, c.Namespace, c.Name, err)
		}
		r.Recorder.Eventf(c, nil, corev1.EventTypeNormal, hostfleetv1alpha1.ReasonReleasing, "Release",
			"released BareMetalHost %s/%s on cluster %s", h.Namespace, h.Name, r.ClusterName)
		ctrl.LoggerFrom(ctx).Info("released", "host", h.Namespace+"/"+h.Name)
	}
	if err := r.deleteCopies(ctx, c, nil); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.deleteHardwareCopy(ctx, c); err != nil {
		return ctrl.Result{}, err
	}
	orig := c.DeepCopy()
	controllerutil.RemoveFinalizer(c, hostfleetv1alpha1.AgentFinalizer)
	if err := r.Hub.Patch(ctx, c, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
		return ctrl.Result{}, fmt.Errorf("remove finalizer from %s/%s: %w", c.Namespace, c.Name, err)
	}
	return ctrl.Result{}, nil
}

func associatedCondition(c *metal3api.HostClaim, status metav1.ConditionStatus, reason, msg string) metav1.Condition {
	return metav1.Condition{Type: hostfleetv1alpha1.ConditionAssociated, Status: status, Reason: reason, Message: msg,
		ObservedGeneration: c.Generation}
}

// setStatus writes status.bareMetalHost, hardwareData, poweredOn and the conditions, and
// only when something changed: one status write per change, not per
// reconcile.
func (r *Reconciler) setStatus(ctx context.Context, c *metal3api.HostClaim, h *metal3api.BareMetalHost, hw *metal3api.ObjectReference,
	assoc metav1.Condition, conds []metav1.Condition) error {
	orig := c.DeepCopy()
	c.Status.BareMetalHost = nil
	c.Status.PoweredOn = false
	c.Status.HardwareData = hw
	if h != nil {
		c.Status.BareMetalHost = &metal3api.ObjectReference{Namespace: h.Namespace, Name: h.Name}
		c.Status.PoweredOn = h.Status.PoweredOn
	}
	meta.SetStatusCondition(&c.Status.Conditions, assoc)
	if conds == nil {
		conds = reflector.Conditions(c, nil, reflector.Sync{})
	}
	for _, cond := range conds {
		meta.SetStatusCondition(&c.Status.Conditions, cond)
	}
	if equalStatus(orig.Status, c.Status) {
		return nil
	}
	now := metav1.Now()
	c.Status.LastUpdated = &now
	if err := r.Hub.Status().Patch(ctx, c, client.MergeFrom(orig)); err != nil {
		return fmt.Errorf("write status of %s/%s: %w", c.Namespace, c.Name, err)
	}
	return nil
}

func equalStatus(a, b metal3api.HostClaimStatus) bool {
	if (a.BareMetalHost == nil) != (b.BareMetalHost == nil) || a.PoweredOn != b.PoweredOn {
		return false
	}
	if !equalRef(a.HardwareData, b.HardwareData) {
		return false
	}
	if a.BareMetalHost != nil && *a.BareMetalHost != *b.BareMetalHost {
		return false
	}
	if len(a.Conditions) != len(b.Conditions) {
		return false
	}
	for i := range a.Conditions {
		x, y := a.Conditions[i], b.Conditions[i]
		if x.Type != y.Type || x.Status != y.Status || x.Reason != y.Reason || x.Message != y.Message || x.ObservedGeneration != y.ObservedGeneration {
			return false
		}
	}
	return true
}

func equalRef(a, b *metal3api.ObjectReference) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}
