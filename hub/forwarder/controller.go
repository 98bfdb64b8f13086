package forwarder

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/hostfleet/hostfleet/hub/addon"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/hub/tenant"
	"github.com/hostfleet/hostfleet/internal/claimstatus"
	"github.com/hostfleet/hostfleet/internal/conditions"
	"github.com/hostfleet/hostfleet/internal/requeue"
)

// Indexes on HostClaims.
const (
	// secretIndex: "<namespace>/<name>" of each secret a remote claim
	// references.
	secretIndex = "hostfleet.forwarded-secret"
	// clusterIndex: the cluster a remote claim is placed on.
	clusterIndex = "hostfleet.forwarded-to"
	// workIndex, on ManifestWorks: "<namespace>/<name>" of the claim a
	// work forwards (works of earlier claims of that name too: dropStale).
	workIndex = "hostfleet.forwards-claim-named"
)

// Reconciler forwards remote claims.
type Reconciler struct {
	Client client.Client
	// Reader reads the secrets claims reference, uncached (the hub caches
	// only their metadata); SetupWithManager uses the manager's API reader
	// if nil.
	Reader client.Reader
	// Recorder records Events on claims; SetupWithManager makes one if nil.
	Recorder events.EventRecorder
}

// remote reports whether the forwarder serves c: a remote claim, or one it
// holds a finalizer on (a claim re-kinded away from remote is withdrawn).
func remote(o client.Object) bool {
	return o.GetLabels()[hostfleetv1alpha1.LabelKind] == hostfleetv1alpha1.KindRemote ||
		controllerutil.ContainsFinalizer(o, hostfleetv1alpha1.ForwarderFinalizer)
}

// Reconcile forwards, updates or withdraws one claim. A write that lost a
// race (a conflict) is tried again soon (requeue.CacheLag), not reported as
// an error.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	res, err := r.reconcile(ctx, req)
	if apierrors.IsConflict(err) {
		return requeue.OnConflict(err)
	}
	return res, err
}

func (r *Reconciler) reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	c := &metal3api.HostClaim{}
	if err := r.Client.Get(ctx, req.NamespacedName, c); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, r.dropStale(ctx, req.NamespacedName, "")
		}
		return ctrl.Result{}, err
	}
	if err := r.dropStale(ctx, req.NamespacedName, c.UID); err != nil {
		return ctrl.Result{}, err
	}
	if !remote(c) {
		return ctrl.Result{}, nil
	}
	cluster := c.Labels[hostfleetv1alpha1.LabelCluster]
	if !c.DeletionTimestamp.IsZero() || c.Labels[hostfleetv1alpha1.LabelKind] != hostfleetv1alpha1.KindRemote {
		return r.withdraw(ctx, c, cluster)
	}
	work, err := r.work(ctx, c)
	if err != nil {
		return ctrl.Result{}, err
	}
	if cluster == "" || work == nil && !conditions.Admitted(c) {
		// Not placed, or pinned and not admitted by the scheduler (a host
		// class may hold it back): nothing is forwarded yet.
		return ctrl.Result{}, r.writeStatus(ctx, c, func(c *metal3api.HostClaim) {
			msg := "waiting for the scheduler to place the claim on a cluster (see the Scheduled condition)"
			for _, t := range []string{hostfleetv1alpha1.ConditionForwarded, hostfleetv1alpha1.ConditionReady} {
				conditions.Set(&c.Status.Conditions, metav1.Condition{Type: t, Status: metav1.ConditionFalse,
					Reason: hostfleetv1alpha1.ReasonNotPlaced, Message: msg, ObservedGeneration: c.Generation})
			}
			// A host class holding the claim back says so on Ready, as on
			// any unplaced claim.
			if s := meta.FindStatusCondition(c.Status.Conditions, hostfleetv1alpha1.ConditionScheduled); s != nil && s.Reason == hostfleetv1alpha1.ReasonClassQuotaExceeded {
				conditions.Set(&c.Status.Conditions, metav1.Condition{Type: hostfleetv1alpha1.ConditionReady, Status: metav1.ConditionFalse,
					Reason: s.Reason, Message: s.Message, ObservedGeneration: c.Generation})
			}
		})
	}
	if work != nil && work.Namespace != cluster {
		// Placed elsewhere since: the old target goes (its host is
		// released); the new one is made once it has.
		return r.withdraw(ctx, c, work.Namespace)
	}
	state := State{Cluster: cluster, Work: work}
	tenant, refused, err := r.tenant(ctx, c, cluster)
	if err != nil {
		return ctrl.Result{}, err
	}
	mca, err := r.agentAddon(ctx, cluster)
	if err != nil {
		return ctrl.Result{}, err
	}
	if refused == nil {
		state.Work, refused, err = r.forward(ctx, c, cluster, tenant, work, agentOf(mca))
		if err != nil {
			return ctrl.Result{}, err
		}
	}
	state.Refused = refused
	if state.ClusterAvailable, err = r.available(ctx, cluster); err != nil {
		return ctrl.Result{}, err
	}
	// A cluster without the add-on has no such signal.
	state.AgentUnavailable = mca != nil && !meta.IsStatusConditionTrue(mca.Status.Conditions, addonv1beta1.ManagedClusterAddOnConditionAvailable)
	if state.HardwareCopy, err = r.hardwareCopy(ctx, c); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, r.writeStatus(ctx, c, func(c *metal3api.HostClaim) { SetStatus(c, state) })
}

// tenant is the tenant owning the claim's namespace, or why the claim
// cannot be forwarded to cluster.
func (r *Reconciler) tenant(ctx context.Context, c *metal3api.HostClaim, cluster string) (*hostfleetv1alpha1.Tenant, *Refused, error) {
	t, err := tenant.Of(ctx, r.Client, c.Namespace)
	if err != nil {
		return nil, nil, err
	}
	if t == nil {
		return nil, &Refused{Reason: hostfleetv1alpha1.ReasonNoTenant, Message: fmt.Sprintf(
			"namespace %s belongs to no Tenant: claims are forwarded only from tenant namespaces", c.Namespace)}, nil
	}
	if !slices.Contains(t.Status.Clusters, cluster) {
		return nil, &Refused{Reason: hostfleetv1alpha1.ReasonPinnedOutsideSet, Message: fmt.Sprintf(
			"cluster %s is not among the clusters of tenant %s (%v): the claim is not forwarded there; pin one of them, or remove the %s label",
			cluster, t.Name, t.Status.Clusters, hostfleetv1alpha1.LabelCluster)}, nil
	}
	return t, nil, nil
}

// forward makes or updates the claim's work; it returns the work as the hub
// has it, or why the claim cannot be forwarded.
func (r *Reconciler) forward(ctx context.Context, c *metal3api.HostClaim, cluster string, t *hostfleetv1alpha1.Tenant, existing *workv1.ManifestWork,
	agent *rbacv1.Subject) (*workv1.ManifestWork, *Refused, error) {
	request, err := r.rebootRequest(ctx, c, existing)
	if err != nil {
		return existing, nil, err
	}
	secrets := map[string]*corev1.Secret{}
	for role, ref := range SecretRefs(c) {
		if (ref.Namespace != "" && ref.Namespace != c.Namespace) || !ValidSecretName(ref.Name) {
			continue // Render refuses it
		}
		s := &corev1.Secret{}
		if err := r.Reader.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: ref.Name}, s); err != nil {
			if apierrors.IsNotFound(err) {
				continue // Render says which
			}
			return existing, nil, fmt.Errorf("read secret %s/%s of claim %s: %w", c.Namespace, ref.Name, c.Name, err)
		}
		secrets[role] = s
	}
	w, err := Render(Input{Claim: c, Cluster: cluster, Tenant: t.Name, Erase: t.Spec.Erase, Healing: t.Spec.Healing, Secrets: secrets, RebootRequest: request, Agent: agent})
	if refused := (*Refused)(nil); errors.As(err, &refused) {
		return existing, refused, nil
	} else if err != nil {
		return existing, nil, err
	}
	if orig := c.DeepCopy(); controllerutil.AddFinalizer(c, hostfleetv1alpha1.ForwarderFinalizer) {
		// The finalizer first: a work is never made for a claim that
		// could go without withdrawing it. Patched with the claim's
		// resourceVersion, as the other controllers write it.
		if err := r.Client.Patch(ctx, c, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
			return existing, nil, fmt.Errorf("add finalizer to claim %s: %w", klog.KObj(c), err)
		}
	}
	log := ctrl.LoggerFrom(ctx)
	if existing == nil {
		if err := r.Client.Create(ctx, w); err != nil {
			if refused := refusedBy(err); refused != nil {
				return nil, refused, nil
			}
			return nil, nil, fmt.Errorf("create ManifestWork %s: %w", klog.KObj(w), err)
		}
		log.V(1).Info("claim forwarded", "cluster", cluster, "work", w.Name)
		r.Recorder.Eventf(c, nil, corev1.EventTypeNormal, "Forwarding", "Forward", "ManifestWork %s/%s created: the target claim is %s/%s on %s",
			cluster, w.Name, TargetNamespace(c.Namespace), c.Name, cluster)
		return w, nil, nil
	}
	if Unchanged(existing, w) {
		return existing, nil, nil
	}
	existing.Spec, existing.Labels = w.Spec, w.Labels
	if err := r.Client.Update(ctx, existing); err != nil {
		if refused := refusedBy(err); refused != nil {
			return existing, refused, nil
		}
		return existing, nil, fmt.Errorf("update ManifestWork %s: %w", klog.KObj(w), err)
	}
	log.V(1).Info("forwarded claim updated", "cluster", cluster, "work", w.Name)
	return existing, nil, nil
}

// refusedBy is the refusal an API error on a work is, if the work itself
// was refused (invalid, too large, denied by a policy or webhook).
func refusedBy(err error) *Refused {
	if apierrors.IsInvalid(err) || apierrors.IsRequestEntityTooLargeError(err) || apierrors.IsForbidden(err) || apierrors.IsBadRequest(err) {
		return &Refused{Reason: hostfleetv1alpha1.ReasonWorkRefused, Message: fmt.Sprintf(
			"the hub refused the claim's ManifestWork: %v", err)}
	}
	return nil
}

// rebootRequest carries a one-shot reboot.metal3.io to the target exactly
// once: the request gets an identifier (an annotation on the claim) that
// goes down with it; once the target's agent reports it handled, the
// request leaves the claim, and so the work. It returns the identifier of
// the pending request, or "".
func (r *Reconciler) rebootRequest(ctx context.Context, c *metal3api.HostClaim, existing *workv1.ManifestWork) (string, error) {
	_, asked := c.Annotations[metal3api.RebootAnnotationPrefix]
	id := c.Annotations[hostfleetv1alpha1.AnnotationRebootRequest]
	handled := ""
	if existing != nil {
		fb, _ := ReadFeedback(existing)
		handled = fb.RebootHandled
	}
	orig := c.DeepCopy()
	switch {
	case asked && id == "":
		id = strconv.FormatInt(time.Now().UnixNano(), 36)
		c.Annotations[hostfleetv1alpha1.AnnotationRebootRequest] = id
	case id != "" && (id == handled || !asked):
		delete(c.Annotations, metal3api.RebootAnnotationPrefix)
		delete(c.Annotations, hostfleetv1alpha1.AnnotationRebootRequest)
		id = ""
	default:
		return id, nil
	}
	if err := r.Client.Patch(ctx, c, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
		return "", fmt.Errorf("record the reboot request of claim %s/%s: %w", c.Namespace, c.Name, err)
	}
	return id, nil
}

// withdraw deletes the claim's work (from cluster) and, once it is gone,
// removes the finalizer if the claim is being deleted or no longer remote.
func (r *Reconciler) withdraw(ctx context.Context, c *metal3api.HostClaim, cluster string) (ctrl.Result, error) {
	w, err := r.work(ctx, c)
	if err != nil {
		return ctrl.Result{}, err
	}
	if by, paused := conditions.PausedBy(c.Annotations); paused && w != nil && w.DeletionTimestamp.IsZero() {
		// As baremetal-operator keeps a paused host: the target (paused
		// too) is not released until the pause ends; its removal wakes
		// the claim.
		return ctrl.Result{}, r.writeStatus(ctx, c, func(c *metal3api.HostClaim) {
			SetStatus(c, State{Cluster: cluster, Deleting: true, PausedBy: &by})
		})
	}
	if w != nil && w.DeletionTimestamp.IsZero() {
		if done, err := r.unpauseTarget(ctx, w); err != nil || !done {
			// The work's update, or its status, brings the claim back.
			return ctrl.Result{RequeueAfter: time.Second}, err
		}
	}
	if w != nil {
		if w.DeletionTimestamp.IsZero() {
			// The work has no dependents on the hub; its deleteOption
			// makes the work agent delete the target claim and secrets
			// in the foreground, and the work goes once they have.
			if err := r.Client.Delete(ctx, w, client.Preconditions{UID: &w.UID}); client.IgnoreNotFound(err) != nil {
				return ctrl.Result{}, fmt.Errorf("delete ManifestWork %s: %w", klog.KObj(w), err)
			}
			r.Recorder.Eventf(c, nil, corev1.EventTypeNormal, hostfleetv1alpha1.ReasonWithdrawing, "Withdraw",
				"ManifestWork %s deleted: the target claim goes once its host is released", klog.KObj(w))
		}
		// The work's deletion is watched: the claim comes back when it is gone.
		return ctrl.Result{}, r.writeStatus(ctx, c, func(c *metal3api.HostClaim) {
			SetStatus(c, State{Cluster: cluster, Deleting: true})
		})
	}
	if orig := c.DeepCopy(); controllerutil.RemoveFinalizer(c, hostfleetv1alpha1.ForwarderFinalizer) {
		if err := r.Client.Patch(ctx, c, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); client.IgnoreNotFound(err) != nil {
			return ctrl.Result{}, fmt.Errorf("remove finalizer from claim %s: %w", klog.KObj(c), err)
		}
	}
	if !c.DeletionTimestamp.IsZero() || c.Labels[hostfleetv1alpha1.LabelKind] != hostfleetv1alpha1.KindRemote {
		return ctrl.Result{}, nil
	}
	// Moved to another cluster: forward it there.
	return ctrl.Result{RequeueAfter: time.Second}, nil
}

// work is the claim's ManifestWork, wherever it is, or nil.
func (r *Reconciler) work(ctx context.Context, c *metal3api.HostClaim) (*workv1.ManifestWork, error) {
	var list workv1.ManifestWorkList
	if err := r.Client.List(ctx, &list, client.MatchingFields{workIndex: client.ObjectKeyFromObject(c).String()}); err != nil {
		return nil, fmt.Errorf("list the ManifestWorks of claim %s: %w", klog.KObj(c), err)
	}
	for i := range list.Items {
		if list.Items[i].Name == WorkName(c.UID) {
			return &list.Items[i], nil
		}
	}
	return nil, nil
}

// available reports whether the cluster's agents report.
func (r *Reconciler) available(ctx context.Context, cluster string) (bool, error) {
	mc := &clusterv1.ManagedCluster{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: cluster}, mc); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("get ManagedCluster %s: %w", cluster, err)
	}
	return meta.IsStatusConditionTrue(mc.Status.Conditions, clusterv1.ManagedClusterConditionAvailable), nil
}

// agentAddon is the cluster's hostfleet-agent ManagedClusterAddOn, nil if
// the add-on is not enabled there.
func (r *Reconciler) agentAddon(ctx context.Context, cluster string) (*addonv1beta1.ManagedClusterAddOn, error) {
	mca := &addonv1beta1.ManagedClusterAddOn{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: cluster, Name: hostfleetv1alpha1.AddonName}, mca); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("get ManagedClusterAddOn %s/%s: %w", cluster, hostfleetv1alpha1.AddonName, err)
	}
	return mca, nil
}

// agentOf is the ServiceAccount the cluster's agent works as there, if the
// add-on runs (and OCM has recorded where).
func agentOf(mca *addonv1beta1.ManagedClusterAddOn) *rbacv1.Subject {
	if mca == nil {
		return nil
	}
	sa, ok := addon.AgentServiceAccount(mca)
	if !ok {
		return nil
	}
	return &sa
}

// hardwareCopy references the claim's HardwareData copy on the hub, if the
// agent serving the target made one for this claim.
func (r *Reconciler) hardwareCopy(ctx context.Context, c *metal3api.HostClaim) (*metal3api.ObjectReference, error) {
	hw := &metal3api.HardwareData{}
	if err := r.Client.Get(ctx, client.ObjectKeyFromObject(c), hw); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("get HardwareData copy %s: %w", klog.KObj(c), err)
	}
	if hw.Labels[hostfleetv1alpha1.LabelClaimUID] != string(c.UID) || !hw.DeletionTimestamp.IsZero() {
		return nil, nil
	}
	return &metal3api.ObjectReference{Namespace: hw.Namespace, Name: hw.Name}, nil
}

// writeStatus writes what mutate does to the claim's status, as the
// forwarder (the fields of a remote claim it owns: claimstatus), if that
// changes anything, under optimistic locking (the scheduler writes the
// same status). A conflict is retried on the next event.
func (r *Reconciler) writeStatus(ctx context.Context, c *metal3api.HostClaim, mutate func(*metal3api.HostClaim)) error {
	orig := c.DeepCopy()
	written, err := claimstatus.Write(ctx, r.Client, claimstatus.Forwarder, claimstatus.HubRemote, c, func(*metal3api.HostClaimStatus) { mutate(c) })
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) || !written && err == nil {
		return nil // the claim changed: its event brings it back
	}
	if err != nil {
		return err
	}
	before, after := meta.FindStatusCondition(orig.Status.Conditions, hostfleetv1alpha1.ConditionForwarded),
		meta.FindStatusCondition(c.Status.Conditions, hostfleetv1alpha1.ConditionForwarded)
	if recorded(before, after) {
		kind := corev1.EventTypeNormal
		if after.Status != metav1.ConditionTrue {
			kind = corev1.EventTypeWarning
		}
		r.Recorder.Eventf(c, nil, kind, after.Reason, "Forward", "%s", after.Message)
	}
	return nil
}

// recorded says whether a change of the Forwarded condition is an Event:
// a change of reason, but not to a step every forwarded claim passes on
// its way (placed, its work created and applied, its feedback awaited),
// which would give every claim a Warning, nor to Withdrawing (its own
// Normal Event says the work was deleted). The work not applied once it
// had been is one.
func recorded(before, after *metav1.Condition) bool {
	if after == nil || before != nil && before.Reason == after.Reason {
		return false
	}
	switch after.Reason {
	case hostfleetv1alpha1.ReasonNotPlaced, hostfleetv1alpha1.ReasonFeedbackPending, hostfleetv1alpha1.ReasonWithdrawing:
		return false
	case hostfleetv1alpha1.ReasonWorkNotApplied:
		return before != nil && before.Reason != hostfleetv1alpha1.ReasonNotPlaced
	}
	return true
}
