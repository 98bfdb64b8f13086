package nodelabels

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/hostfleet/hostfleet/agent/labelsync"
	"github.com/hostfleet/hostfleet/agent/servedtenants"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/internal/claimstatus"
	"github.com/hostfleet/hostfleet/internal/conditions"
	"github.com/hostfleet/hostfleet/internal/resume"
	"github.com/hostfleet/hostfleet/internal/setup"
)

// all is the one key every event maps to: finding Nodes compares every
// claim with every Node, so each pass looks at the whole tenant, and a
// burst of events is one pass.
var all = reconcile.Request{NamespacedName: types.NamespacedName{Name: "all"}}

// Reconciler copies the tenant's claim labels to the Nodes of its
// workload cluster and reports NodeLabelsSynced on the claims.
type Reconciler struct {
	// Hub reads the cluster's ClusterTenancy, and the claims and
	// HardwareData copies in the tenant's namespaces (the manager's cache),
	// and writes claim status.
	Hub client.Client
	// Nodes reads the workload cluster's Nodes (cached, with their
	// managedFields); Kube applies and removes their labels.
	Nodes client.Reader
	Kube  kubernetes.Interface
	// Recorder records an Event on a claim when its NodeLabelsSynced
	// condition changes.
	Recorder events.EventRecorder
	// ClusterName is the workload cluster's name on the hub.
	ClusterName string
	// Interval is the full resync: Node labels edited or deleted by hand
	// are restored within it.
	Interval time.Duration
}

// SetupWithManager wires the controller: the ClusterTenancy, claims and
// HardwareData from the manager's (hub) cache, Nodes from the workload
// cluster's.
func (r *Reconciler) SetupWithManager(_ context.Context, mgr ctrl.Manager, o setup.Options) error {
	workload := o.Managed
	toAll := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{all}
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("nodelabels").
		Watches(&hostfleetv1alpha1.ClusterTenancy{}, toAll).
		Watches(&metal3api.HostClaim{}, toAll, builder.WithPredicates(predicate.Funcs{UpdateFunc: claimMoved})).
		Watches(&metal3api.HardwareData{}, toAll).
		WatchesRawSource(source.Kind(workload.GetCache(), &corev1.Node{},
			handler.TypedEnqueueRequestsFromMapFunc(func(context.Context, *corev1.Node) []reconcile.Request {
				return []reconcile.Request{all}
			}),
			predicate.TypedFuncs[*corev1.Node]{UpdateFunc: nodeMoved})).
		Complete(resume.Reconciler(r))
}

// claimMoved ignores status writes that change nothing label sync reads
// (conditions, power): labels, annotations, the bound host and its
// HardwareData reference, and deletion do.
func claimMoved(e event.UpdateEvent) bool {
	o, n := e.ObjectOld.(*metal3api.HostClaim), e.ObjectNew.(*metal3api.HostClaim)
	if o == nil || n == nil {
		return true
	}
	return !maps.Equal(o.Labels, n.Labels) || !maps.Equal(o.Annotations, n.Annotations) ||
		(o.Status.BareMetalHost == nil) != (n.Status.BareMetalHost == nil) ||
		(o.Status.HardwareData == nil) != (n.Status.HardwareData == nil) ||
		o.DeletionTimestamp.IsZero() != n.DeletionTimestamp.IsZero()
}

// nodeMoved ignores kubelet's heartbeats: labels, providerID, addresses
// and whether it is Ready matter.
func nodeMoved(e event.TypedUpdateEvent[*corev1.Node]) bool {
	o, n := e.ObjectOld, e.ObjectNew
	return !maps.Equal(o.Labels, n.Labels) || o.Spec.ProviderID != n.Spec.ProviderID ||
		!slices.Equal(o.Status.Addresses, n.Status.Addresses) || nodeReady(o).Status != nodeReady(n).Status
}

// nodeReady is a Node's Ready condition (a missing one: Unknown).
func nodeReady(n *corev1.Node) corev1.NodeCondition {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c
		}
	}
	return corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionUnknown, Reason: "NoReadyCondition"}
}

// readyCondition is the claim's NodeReady condition for its Node n.
func readyCondition(c *metal3api.HostClaim, n *corev1.Node, cluster string) metav1.Condition {
	rc := nodeReady(n)
	if rc.Status == corev1.ConditionTrue {
		return metav1.Condition{Type: hostfleetv1alpha1.ConditionNodeReady, Status: metav1.ConditionTrue, Reason: hostfleetv1alpha1.ReasonNodeReady,
			Message: fmt.Sprintf("Node %s on cluster %s is Ready", n.Name, cluster), ObservedGeneration: c.Generation}
	}
	return metav1.Condition{Type: hostfleetv1alpha1.ConditionNodeReady, Status: metav1.ConditionFalse, Reason: hostfleetv1alpha1.ReasonNodeNotReady,
		Message: fmt.Sprintf("Node %s on cluster %s is not Ready (Ready %s, %s)", n.Name, cluster, rc.Status, rc.Reason), ObservedGeneration: c.Generation}
}

// Reconcile makes one pass over the tenant's claims and the cluster's
// Nodes, then asks to be called again after Interval.
func (r *Reconciler) Reconcile(ctx context.Context, _ ctrl.Request) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	tenant, err := r.tenant(ctx)
	if err != nil {
		return ctrl.Result{}, err
	}
	if tenant == nil {
		log.V(1).Info("no Tenant names this cluster a workload cluster (ManagedCluster label hostfleet.io/tenant): nothing to sync")
		return ctrl.Result{RequeueAfter: r.Interval}, nil
	}
	claims, unbound, err := r.claims(ctx, tenant)
	if err != nil {
		return ctrl.Result{}, err
	}
	for _, c := range unbound {
		if err := r.report(ctx, c, Match{}, nil); err != nil { // no host: nothing to say
			return ctrl.Result{}, err
		}
	}
	var nodes corev1.NodeList
	if err := r.Nodes.List(ctx, &nodes); err != nil {
		return ctrl.Result{}, fmt.Errorf("list the Nodes of cluster %s: %w", r.ClusterName, err)
	}
	byName := make(map[string]*corev1.Node, len(nodes.Items))
	for i := range nodes.Items {
		byName[nodes.Items[i].Name] = &nodes.Items[i]
	}
	prefixes, _ := labelsync.Prefixes(tenant.LabelSyncPrefixes)
	matches := MatchAll(r.ClusterName, claims, nodes.Items)
	var errs []error
	for _, c := range claims {
		m := matches[c.Namespace+"/"+c.Name]
		node := byName[m.Node]
		if m.Node != "" {
			if err := r.sync(ctx, node, Wanted(c.Labels, prefixes), prefixes); err != nil {
				errs = append(errs, err)
				m = Match{Reason: hostfleetv1alpha1.ReasonLabelSyncFailed, Message: fmt.Sprintf("labels not applied to Node %s on cluster %s: %v", m.Node, r.ClusterName, err)}
			} else {
				m.Message = syncedMessage(m, r.ClusterName, prefixes)
			}
		}
		if err := r.report(ctx, c.HostClaim, m, node); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return ctrl.Result{}, fmt.Errorf("%d of %d claims: %w", len(errs), len(claims), errs[0])
	}
	return ctrl.Result{RequeueAfter: r.Interval}, nil
}

func syncedMessage(m Match, cluster string, prefixes []string) string {
	if len(prefixes) == 0 {
		return fmt.Sprintf("Node %s on cluster %s (found by %s); the tenant syncs no label prefixes", m.Node, cluster, m.Via)
	}
	return fmt.Sprintf("labels under %s are on Node %s on cluster %s (found by %s)", strings.Join(prefixes, ", "), m.Node, cluster, m.Via)
}

// tenant is the tenant whose workload cluster this is, as the cluster's
// ClusterTenancy says, or nil. A ManagedCluster carries one
// hostfleet.io/tenant label: there is at most one.
func (r *Reconciler) tenant(ctx context.Context) (*hostfleetv1alpha1.ServedTenant, error) {
	ct, err := servedtenants.Get(ctx, r.Hub, r.ClusterName)
	if err != nil {
		return nil, err
	}
	if served := ct.Served(hostfleetv1alpha1.RoleWorkload); len(served) > 0 {
		return &served[0], nil
	}
	return nil, nil
}

// claims are the tenant's claims whose Node is on this cluster: the claims
// whose hostfleet.io/workload-cluster names it, and, when it is the
// tenant's only workload cluster, those that name none. The bound ones
// come with their HardwareData copy, if any; the others (no host, or being
// deleted) apart.
func (r *Reconciler) claims(ctx context.Context, t *hostfleetv1alpha1.ServedTenant) (bound []Claim, unbound []*metal3api.HostClaim, _ error) {
	for _, ns := range t.Namespaces {
		var list metal3api.HostClaimList
		if err := r.Hub.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return nil, nil, fmt.Errorf("list the claims in %s: %w", ns, err)
		}
		for i := range list.Items {
			c := &list.Items[i]
			wc := c.Annotations[hostfleetv1alpha1.AnnotationWorkloadCluster]
			if wc != r.ClusterName && (wc != "" || !t.OnlyWorkloadCluster) {
				continue
			}
			if c.Status.BareMetalHost == nil || !c.DeletionTimestamp.IsZero() {
				unbound = append(unbound, c)
				continue
			}
			bound = append(bound, Claim{HostClaim: c, Hardware: r.hardware(ctx, c)})
		}
	}
	return bound, unbound, nil
}

// hardware is the inventory in the claim's HardwareData copy on the hub
// (named after the claim, labelled with its UID), or nil.
func (r *Reconciler) hardware(ctx context.Context, c *metal3api.HostClaim) *metal3api.HardwareDetails {
	hw := &metal3api.HardwareData{}
	if err := r.Hub.Get(ctx, client.ObjectKeyFromObject(c), hw); err != nil {
		return nil
	}
	if hw.Labels[hostfleetv1alpha1.LabelClaimUID] != string(c.UID) {
		return nil
	}
	return hw.Spec.HardwareDetails
}

// sync applies the plan for one Node: the wanted labels under the field
// manager hostfleet-labelsync (server-side apply, forced: an edit by hand
// is taken back), then removes what must go.
func (r *Reconciler) sync(ctx context.Context, n *corev1.Node, wanted map[string]string, prefixes []string) error {
	// Only the metadata: a Node's status may hold what its typed schema
	// refuses (two InternalIP addresses on a dual-stack Node, which the
	// address list's merge key cannot tell apart).
	extracted, err := corev1ac.ExtractNode(&corev1.Node{ObjectMeta: n.ObjectMeta}, hostfleetv1alpha1.FieldManagerLabelSync)
	if err != nil {
		return fmt.Errorf("read the labels hostfleet-labelsync owns on Node %s: %w", n.Name, err)
	}
	var owned []string
	if extracted.ObjectMetaApplyConfiguration != nil {
		owned = slices.Collect(maps.Keys(extracted.Labels))
	}
	p := PlanNode(n.Labels, owned, wanted, prefixes)
	if p.Empty() {
		return nil
	}
	log := ctrl.LoggerFrom(ctx)
	if p.Apply != nil {
		_, err := r.Kube.CoreV1().Nodes().Apply(ctx, corev1ac.Node(n.Name).WithLabels(p.Apply),
			metav1.ApplyOptions{FieldManager: hostfleetv1alpha1.FieldManagerLabelSync, Force: true})
		if err != nil {
			return fmt.Errorf("apply: %w", err)
		}
		log.V(1).Info("Node labels applied", "node", n.Name, "labels", p.Apply)
	}
	if len(p.Remove) > 0 {
		gone := map[string]any{}
		for _, k := range p.Remove {
			gone[k] = nil
		}
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": gone}})
		if _, err := r.Kube.CoreV1().Nodes().Patch(ctx, n.Name, types.MergePatchType, patch,
			metav1.PatchOptions{FieldManager: hostfleetv1alpha1.FieldManagerLabelSync}); err != nil {
			return fmt.Errorf("remove labels %s: %w", strings.Join(p.Remove, ", "), err)
		}
		log.V(1).Info("Node labels removed", "node", n.Name, "labels", p.Remove)
	}
	return nil
}

// report sets the claim's NodeLabelsSynced condition from m (an empty m
// removes it) and its NodeReady from its Node n (nil: none found, removed),
// writing only a change, and records an Event when either's status or
// reason changes.
func (r *Reconciler) report(ctx context.Context, c *metal3api.HostClaim, m Match, n *corev1.Node) error {
	prev := meta.FindStatusCondition(c.Status.Conditions, hostfleetv1alpha1.ConditionNodeLabelsSynced)
	prevReady := meta.FindStatusCondition(c.Status.Conditions, hostfleetv1alpha1.ConditionNodeReady)
	status := metav1.ConditionFalse
	if m.Reason == hostfleetv1alpha1.ReasonLabelsSynced {
		status = metav1.ConditionTrue
	}
	var ready *metav1.Condition
	if n != nil {
		rc := readyCondition(c, n, r.ClusterName)
		ready = &rc
	}
	written, err := claimstatus.Write(ctx, r.Hub, claimstatus.WorkloadAgent, claimstatus.HubKind(c), c, func(st *metal3api.HostClaimStatus) {
		if ready == nil {
			meta.RemoveStatusCondition(&st.Conditions, hostfleetv1alpha1.ConditionNodeReady)
		} else {
			conditions.Set(&st.Conditions, *ready) // its transition time kept while its status is
		}
		if m.Reason == "" {
			meta.RemoveStatusCondition(&st.Conditions, hostfleetv1alpha1.ConditionNodeLabelsSynced)
			return
		}
		conditions.Set(&st.Conditions, metav1.Condition{Type: hostfleetv1alpha1.ConditionNodeLabelsSynced,
			Status: status, Reason: m.Reason, Message: m.Message, ObservedGeneration: c.Generation})
	})
	if apierrors.IsNotFound(err) || !written && err == nil {
		return nil
	}
	if err != nil {
		return fmt.Errorf("report %s on claim %s: %w", hostfleetv1alpha1.ConditionNodeLabelsSynced, klog.KObj(c), err)
	}
	if m.Reason != "" && (prev == nil || prev.Status != status || prev.Reason != m.Reason) {
		kind := corev1.EventTypeNormal
		if status == metav1.ConditionFalse {
			kind = corev1.EventTypeWarning
		}
		r.Recorder.Eventf(c, nil, kind, m.Reason, "SyncNodeLabels", "%s", m.Message)
	}
	if ready != nil && (prevReady == nil || prevReady.Status != ready.Status) {
		kind := corev1.EventTypeNormal
		if ready.Status == metav1.ConditionFalse {
			kind = corev1.EventTypeWarning
		}
		r.Recorder.Eventf(c, nil, kind, ready.Reason, "WatchNode", "%s", ready.Message)
	}
	return nil
}
