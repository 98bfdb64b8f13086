package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/internal/conditions"
	"github.com/hostfleet/hostfleet/internal/resume"
	"github.com/hostfleet/hostfleet/internal/setup"
	operatorv1alpha1 "github.com/hostfleet/hostfleet/operator/api/v1alpha1"
)

// Reconciler installs the hub a HostfleetHub describes.
type Reconciler struct {
	// Client reaches the cluster the HostfleetHubs are on: the hub in
	// Default mode, the hosting cluster in Hosted mode.
	Client  client.Client
	Scheme  *runtime.Scheme
	Release Release
	// Recorder records an Event whenever a condition changes.
	Recorder events.EventRecorder
	// TokenTTL is the lifetime of the Hosted hub controllers' token on the
	// hub; it is renewed at 80%.
	TokenTTL time.Duration
	// HubClient reaches the hub of a Hosted HostfleetHub from its external
	// kubeconfig; nil means NewHubClient.
	HubClient func(kubeconfig []byte, scheme *runtime.Scheme) (client.Client, error)
	// APIReader reads, uncached, what the operator does not watch on its
	// own cluster (the hub's leader Lease); nil means the manager's.
	APIReader client.Reader
}

// SetupWithManager wires the controller.
func (r *Reconciler) SetupWithManager(_ context.Context, mgr ctrl.Manager, o setup.Options) error {
	if r.Recorder == nil {
		r.Recorder = mgr.GetEventRecorder("hostfleet-operator")
	}
	if r.HubClient == nil {
		r.HubClient = NewHubClient
	}
	if r.TokenTTL == 0 {
		r.TokenTTL = time.Hour
	}
	if r.APIReader == nil {
		r.APIReader = mgr.GetAPIReader()
	}
	byLabel := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		if name := o.GetLabels()[operatorv1alpha1.LabelHub]; name != "" {
			return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: name}}}
		}
		return nil
	})
	bySecret := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		if o.GetName() == operatorv1alpha1.ExternalHubKubeconfig {
			return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: o.GetNamespace()}}}
		}
		return nil
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("hostfleethub").
		For(&operatorv1alpha1.HostfleetHub{}).
		Watches(&appsv1.Deployment{}, byLabel).
		Watches(&corev1.Secret{}, bySecret).
		Complete(resume.Reconciler(r))
}

// Reconcile applies a HostfleetHub's hub, or removes it: reach the hub;
// deleting, uninstall; else the finalizer, one hub per cluster, install,
// availability. The status is written once, at the end, whatever the exit;
// its Events only once it is written.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, retErr error) {
	h := &operatorv1alpha1.HostfleetHub{}
	if err := r.Client.Get(ctx, req.NamespacedName, h); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	orig := h.DeepCopy()
	defer func() {
		if err := r.status(ctx, orig, h); err != nil {
			retErr = errors.Join(retErr, err)
		}
	}()
	hub, hubErr := r.hub(ctx, h)
	if !h.DeletionTimestamp.IsZero() {
		if hubErr != nil {
			// Nothing can be removed from a hub the operator cannot reach.
			r.degraded(h, operatorv1alpha1.ReasonExternalKubeconfig, hubErr.Error())
			return ctrl.Result{RequeueAfter: 30 * time.Second}, nil
		}
		return r.uninstall(ctx, h, hub)
	}
	if err := r.addFinalizer(ctx, h); err != nil {
		return ctrl.Result{}, err
	}
	orig.Finalizers = h.Finalizers
	if hubErr != nil {
		r.notApplied(h, operatorv1alpha1.ReasonExternalKubeconfig, hubErr.Error())
		return ctrl.Result{}, nil
	}
	if other, err := r.otherHub(ctx, h); err != nil || other != "" {
		if other != "" {
			r.notApplied(h, operatorv1alpha1.ReasonSecondHub, fmt.Sprintf("HostfleetHub %s already installs the hub on this cluster; delete this one", other))
		}
		return ctrl.Result{}, err
	}
	requeue, err := r.install(ctx, h, hub)
	if err != nil {
		r.notApplied(h, operatorv1alpha1.ReasonApplyFailed, err.Error())
		return ctrl.Result{}, err
	}
	setCondition(h, operatorv1alpha1.ConditionApplied, metav1.ConditionTrue, operatorv1alpha1.ReasonApplied,
		fmt.Sprintf("%s mode: the hub's CRDs, RBAC and controllers are applied (release %s)", h.Spec.DeployOption.Mode, r.Release.Version))
	h.Status.Version = r.Release.Version
	h.Status.HubImage, h.Status.AgentImage = images(h, r.Release)
	h.Status.Namespace = Namespace(h)
	// The leader changes without an event the operator watches: looked at
	// again every leaderCheck.
	if requeue <= 0 || requeue > leaderCheck {
		requeue = leaderCheck
	}
	return ctrl.Result{RequeueAfter: requeue}, r.available(ctx, h, hub)
}

// leaderCheck is how often the operator reads who leads the hub.
const leaderCheck = 30 * time.Second

// addFinalizer puts the operator's finalizer on the HostfleetHub, so that
// deleting it uninstalls the hub first.
func (r *Reconciler) addFinalizer(ctx context.Context, h *operatorv1alpha1.HostfleetHub) error {
	orig := h.DeepCopy()
	if !controllerutil.AddFinalizer(h, operatorv1alpha1.Finalizer) {
		return nil
	}
	if err := r.Client.Patch(ctx, h, client.MergeFrom(orig)); err != nil {
		return fmt.Errorf("add finalizer to HostfleetHub %s: %w", h.Name, err)
	}
	return nil
}

// notApplied says, in Applied and Degraded, why the hub is not applied.
func (r *Reconciler) notApplied(h *operatorv1alpha1.HostfleetHub, reason, msg string) {
	setCondition(h, operatorv1alpha1.ConditionApplied, metav1.ConditionFalse, reason, msg)
	r.degraded(h, reason, msg)
}

// install applies everything, on the hub and, in Hosted mode, on the
// hosting cluster. It returns when to come back (the Hosted token's renewal).
func (r *Reconciler) install(ctx context.Context, h *operatorv1alpha1.HostfleetHub, hub client.Client) (time.Duration, error) {
	objs, err := HubObjects(h, r.Release)
	if err != nil {
		return 0, err
	}
	policies, err := Policies(h)
	if err != nil {
		return 0, err
	}
	if err := apply(ctx, hub, r.Scheme, append(objs, policies...)...); err != nil {
		return 0, fmt.Errorf("on the hub: %w", err)
	}
	if h.Spec.DeployOption.Mode != operatorv1alpha1.ModeHosted {
		return 0, nil
	}
	requeue, err := r.hostedToken(ctx, h, hub)
	if err != nil {
		return 0, err
	}
	if err := apply(ctx, r.Client, r.Scheme, Workload(h, r.Release, HubKubeconfigSecret)...); err != nil {
		return 0, fmt.Errorf("on the hosting cluster: %w", err)
	}
	return requeue, nil
}

// otherHub names another HostfleetHub installing a hub on the same cluster
// (Default mode: one per cluster), if any.
func (r *Reconciler) otherHub(ctx context.Context, h *operatorv1alpha1.HostfleetHub) (string, error) {
	if h.Spec.DeployOption.Mode == operatorv1alpha1.ModeHosted {
		return "", nil
	}
	list := &operatorv1alpha1.HostfleetHubList{}
	if err := r.Client.List(ctx, list); err != nil {
		return "", fmt.Errorf("list HostfleetHubs: %w", err)
	}
	for _, o := range list.Items {
		if o.Name != h.Name && o.Spec.DeployOption.Mode != operatorv1alpha1.ModeHosted &&
			(o.CreationTimestamp.Before(&h.CreationTimestamp) || (o.CreationTimestamp.Equal(&h.CreationTimestamp) && o.Name < h.Name)) {
			return o.Name, nil
		}
	}
	return "", nil
}

// available reports whether the hub's controllers run and are ready, and
// which replica leads; when it cannot tell, Available is Unknown and says
// why (Applied stands).
func (r *Reconciler) available(ctx context.Context, h *operatorv1alpha1.HostfleetHub, hub client.Client) error {
	h.Status.Leader = ""
	d := &appsv1.Deployment{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: Namespace(h), Name: HubName}, d); err != nil {
		err = fmt.Errorf("hub Deployment %s/%s: %w", Namespace(h), HubName, err)
		setCondition(h, operatorv1alpha1.ConditionAvailable, metav1.ConditionUnknown, operatorv1alpha1.ReasonDeploymentNotReady, err.Error())
		return err
	}
	want := ptr.Deref(d.Spec.Replicas, 1)
	if d.Status.ObservedGeneration >= d.Generation && d.Status.AvailableReplicas > 0 && d.Status.UpdatedReplicas >= want {
		// Read, not watched: Leases change every few seconds.
		var leases client.Reader = hub
		if hub == r.Client {
			leases = r.APIReader
		}
		lease := &coordinationv1.Lease{}
		err := leases.Get(ctx, client.ObjectKey{Namespace: hubSideNamespace(h), Name: hostfleetv1alpha1.HubLease}, lease)
		if apierrors.IsNotFound(err) {
			lease, err = nil, nil
		}
		leads := ""
		if err != nil {
			leads = fmt.Sprintf("the leader Lease %s/%s cannot be read: %v", hubSideNamespace(h), hostfleetv1alpha1.HubLease, err)
		} else {
			h.Status.Leader, leads = LeaderOf(lease, time.Now())
		}
		setCondition(h, operatorv1alpha1.ConditionAvailable, metav1.ConditionTrue, operatorv1alpha1.ReasonDeploymentAvailable,
			fmt.Sprintf("%d of %d hub replicas available in %s; %s", d.Status.AvailableReplicas, want, Namespace(h), leads))
	} else {
		setCondition(h, operatorv1alpha1.ConditionAvailable, metav1.ConditionFalse, operatorv1alpha1.ReasonDeploymentNotReady,
			fmt.Sprintf("Deployment %s/%s: %d of %d replicas available, %d updated; see its pods' events and logs",
				Namespace(h), HubName, d.Status.AvailableReplicas, want, d.Status.UpdatedReplicas))
	}
	setCondition(h, operatorv1alpha1.ConditionDegraded, metav1.ConditionFalse, operatorv1alpha1.ReasonAsExpected, "")
	return nil
}

// LeaderOf is the hub replica that holds the leader Lease (the pod name its
// identity starts with) and a sentence saying so, or "" and why none does.
func LeaderOf(lease *coordinationv1.Lease, now time.Time) (string, string) {
	if lease == nil {
		return "", "no replica has led yet (no leader Lease): nothing is placed until one does"
	}
	holder := ptr.Deref(lease.Spec.HolderIdentity, "")
	if holder == "" {
		return "", "no replica holds the leader Lease: nothing is placed until one does"
	}
	name, _, _ := strings.Cut(holder, "_")
	if renew, d := lease.Spec.RenewTime, lease.Spec.LeaseDurationSeconds; renew != nil && d != nil {
		if expiry := renew.Add(time.Duration(*d) * time.Second); now.After(expiry) {
			return "", fmt.Sprintf("%s stopped renewing the leader Lease, which expired at %s: a standby takes it over, or none runs",
				name, expiry.UTC().Format(time.RFC3339))
		}
	}
	return name, name + " leads"
}

func (r *Reconciler) degraded(h *operatorv1alpha1.HostfleetHub, reason, msg string) {
	setCondition(h, operatorv1alpha1.ConditionDegraded, metav1.ConditionTrue, reason, msg)
}

// setCondition sets one condition (its message cut, on a character
// boundary, to what the API takes).
func setCondition(h *operatorv1alpha1.HostfleetHub, typ string, status metav1.ConditionStatus, reason, msg string) {
	conditions.Set(&h.Status.Conditions, metav1.Condition{Type: typ, Status: status, Reason: reason, Message: msg,
		ObservedGeneration: h.Generation})
}

// status writes the status if it changed and, once it is written, an Event
// for each condition whose status or reason changed (a failed write records
// none: the next attempt will).
func (r *Reconciler) status(ctx context.Context, orig, h *operatorv1alpha1.HostfleetHub) error {
	h.Status.ObservedGeneration = h.Generation
	if equality.Semantic.DeepEqual(orig.Status, h.Status) {
		return nil
	}
	if err := r.Client.Status().Patch(ctx, h, client.MergeFrom(orig)); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("status of HostfleetHub %s: %w", h.Name, err)
	}
	for _, c := range h.Status.Conditions {
		old := meta.FindStatusCondition(orig.Status.Conditions, c.Type)
		if r.Recorder != nil && (old == nil || old.Status != c.Status || old.Reason != c.Reason) {
			// Bad news is Degraded True, or any other condition False.
			typ := corev1.EventTypeNormal
			if (c.Type == operatorv1alpha1.ConditionDegraded) == (c.Status == metav1.ConditionTrue) {
				typ = corev1.EventTypeWarning
			}
			r.Recorder.Eventf(h, nil, typ, c.Reason, c.Type, "%s=%s: %s", c.Type, c.Status, c.Message)
		}
	}
	return nil
}

// apply applies objs server-side as the operator, in order.
func apply(ctx context.Context, c client.Client, scheme *runtime.Scheme, objs ...client.Object) error {
	for _, obj := range objs {
		gvk, err := apiutil.GVKForObject(obj, scheme)
		if err != nil {
			return err
		}
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			return err
		}
		u["apiVersion"], u["kind"] = gvk.GroupVersion().String(), gvk.Kind
		delete(u, "status")
		if m, ok := u["metadata"].(map[string]any); ok {
			delete(m, "creationTimestamp")
		}
		ac := client.ApplyConfigurationFromUnstructured(&unstructured.Unstructured{Object: u})
		if err := c.Apply(ctx, ac, client.FieldOwner(operatorv1alpha1.FieldManager), client.ForceOwnership); err != nil {
			return fmt.Errorf("apply %s %s: %w", gvk.Kind, client.ObjectKeyFromObject(obj), err)
		}
	}
	return nil
}
