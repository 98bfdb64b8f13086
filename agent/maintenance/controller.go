package maintenance

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/internal/fence"
	"github.com/hostfleet/hostfleet/internal/hostwrites"
	"github.com/hostfleet/hostfleet/internal/resume"
	"github.com/hostfleet/hostfleet/internal/setup"
)

// Reconciler keeps the cluster's hosts marked as its HostMaintenances say
// and writes their statuses. It works on the whole cluster at once (one
// key): maintenances are few, and a host may be selected by several.
type Reconciler struct {
	// Hub reads the cluster's HostMaintenances (cached, in the cluster's
	// namespace) and writes their statuses.
	Hub client.Client
	// Managed reads the hosts (cached) and the local claims that hold
	// some, and marks the hosts.
	Managed client.Client
	// Fence is the agent's write fence.
	Fence       *fence.Fence
	ClusterName string
	// LocalClaims: the agent serves claims local to the cluster (those
	// forwarded from the hub among them), cached: a host one holds is
	// listed with the hub claim it was forwarded from.
	LocalClaims bool

	// running ends with the agent: host events are filtered by reading the
	// hub cache, which must not block a stopping informer.
	running context.Context
}

var all = reconcile.Request{NamespacedName: types.NamespacedName{Name: "all"}}

// SetupWithManager watches the cluster's maintenances and, while there are
// any or a host carries a mark, the host changes a plan reads: labels,
// consumer, provisioning state and the mark.
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, o setup.Options) error {
	r.running = ctx
	toAll := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request { return []reconcile.Request{all} })
	hosts := predicate.TypedFuncs[*metal3api.BareMetalHost]{
		CreateFunc:  func(e event.TypedCreateEvent[*metal3api.BareMetalHost]) bool { return r.matters(e.Object) },
		DeleteFunc:  func(e event.TypedDeleteEvent[*metal3api.BareMetalHost]) bool { return marked(e.Object) },
		GenericFunc: func(event.TypedGenericEvent[*metal3api.BareMetalHost]) bool { return false },
		UpdateFunc: func(e event.TypedUpdateEvent[*metal3api.BareMetalHost]) bool {
			o, n := e.ObjectOld, e.ObjectNew
			moved := !maps.Equal(o.Labels, n.Labels) || (o.Spec.ConsumerRef == nil) != (n.Spec.ConsumerRef == nil) ||
				o.Status.Provisioning.State != n.Status.Provisioning.State ||
				o.Annotations[hostfleetv1alpha1.AnnotationMaintenance] != n.Annotations[hostfleetv1alpha1.AnnotationMaintenance]
			return moved && (r.matters(o) || r.matters(n))
		},
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("maintenance").
		Watches(&hostfleetv1alpha1.HostMaintenance{}, toAll).
		WatchesRawSource(source.Kind(o.Managed.GetCache(), &metal3api.BareMetalHost{},
			handler.TypedEnqueueRequestsFromMapFunc(func(context.Context, *metal3api.BareMetalHost) []reconcile.Request { return []reconcile.Request{all} }),
			hosts)).
		Complete(resume.Reconciler(r))
}

func marked(h *metal3api.BareMetalHost) bool {
	_, ok := h.Annotations[hostfleetv1alpha1.AnnotationMaintenance]
	return ok
}

// matters: a host event is looked at while the cluster has maintenances,
// or when the host carries a mark (to remove once they are gone).
func (r *Reconciler) matters(h *metal3api.BareMetalHost) bool {
	if marked(h) {
		return true
	}
	var ms hostfleetv1alpha1.HostMaintenanceList
	// Until the hub's cache has synced, a read waits: only while the agent
	// runs, and not past a manager's grace period (a read with no end held
	// the host informer's handler, and so the manager's stop, forever).
	ctx, cancel := context.WithTimeout(r.running, 10*time.Second)
	defer cancel()
	if err := r.Hub.List(ctx, &ms, client.InNamespace(r.ClusterName)); err != nil {
		return true
	}
	return len(ms.Items) > 0
}

// Reconcile plans (Plan), marks the hosts, then writes the statuses: a
// host is out of the pool before a status says so.
func (r *Reconciler) Reconcile(ctx context.Context, _ ctrl.Request) (ctrl.Result, error) {
	var ms hostfleetv1alpha1.HostMaintenanceList
	if err := r.Hub.List(ctx, &ms, client.InNamespace(r.ClusterName)); err != nil {
		return ctrl.Result{}, err
	}
	var hl metal3api.BareMetalHostList
	if err := r.Managed.List(ctx, &hl); err != nil {
		return ctrl.Result{}, err
	}
	hosts := make([]*metal3api.BareMetalHost, 0, len(hl.Items))
	for i := range hl.Items {
		if len(ms.Items) > 0 || marked(&hl.Items[i]) {
			hosts = append(hosts, &hl.Items[i])
		}
	}
	p := Plan(Input{Maintenances: ms.Items, Hosts: hosts, HolderOf: func(h *metal3api.BareMetalHost) Holder { return r.holder(ctx, h) }})
	if err := r.mark(ctx, p.Marks); err != nil {
		return ctrl.Result{}, err
	}
	for i := range ms.Items {
		m := &ms.Items[i]
		st := p.Statuses[m.Name]
		if equality.Semantic.DeepEqual(m.Status, st) {
			continue
		}
		m.Status = st
		if err := r.Hub.Status().Update(ctx, m); err != nil {
			return ctrl.Result{}, fmt.Errorf("write the status of HostMaintenance %s: %w", klog.KObj(m), client.IgnoreNotFound(err))
		}
	}
	return ctrl.Result{}, nil
}

// mark writes each host's hostfleet.io/maintenance, as the maintenance
// controller, with the host's resourceVersion (a host changed meanwhile is
// marked at the next reconcile, from fresher data).
func (r *Reconciler) mark(ctx context.Context, marks map[string]string) error {
	w := hostwrites.Writer{Client: r.Managed, Fence: r.Fence, Owner: hostwrites.Maintenance}
	for k, v := range marks {
		ns, name, _ := strings.Cut(k, "/")
		h := &metal3api.BareMetalHost{}
		if err := r.Managed.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, h); err != nil {
			if client.IgnoreNotFound(err) != nil {
				return fmt.Errorf("read BareMetalHost %s to mark it for maintenance: %w", k, err)
			}
			continue
		}
		orig := h.DeepCopy()
		if v == "" {
			delete(h.Annotations, hostfleetv1alpha1.AnnotationMaintenance)
		} else {
			if h.Annotations == nil {
				h.Annotations = map[string]string{}
			}
			h.Annotations[hostfleetv1alpha1.AnnotationMaintenance] = v
		}
		if err := w.Patch(ctx, h, orig); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("mark BareMetalHost %s for maintenance %q: %w", k, v, err)
		}
		ctrl.LoggerFrom(ctx).Info("maintenance mark", "host", k, "maintenance", v)
	}
	return nil
}

// holder names what holds a bound host: a hub claim (hostfleet.io/hub),
// the hub claim a local claim was forwarded from, or else the consumer.
func (r *Reconciler) holder(ctx context.Context, h *metal3api.BareMetalHost) Holder {
	ref := h.Spec.ConsumerRef
	if h.Annotations[hostfleetv1alpha1.AnnotationHub] != "" && ref.Kind == hostfleetv1alpha1.ConsumerKind {
		return Holder{Claim: ref.Namespace + "/" + ref.Name}
	}
	desc := fmt.Sprintf("%s %s/%s", ref.Kind, ref.Namespace, ref.Name)
	if r.LocalClaims && ref.Kind == hostfleetv1alpha1.ConsumerKind {
		local := &metal3api.HostClaim{}
		if err := r.Managed.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, local); err == nil {
			if src := local.Annotations[hostfleetv1alpha1.AnnotationSourceClaim]; src != "" {
				return Holder{Claim: src, Consumer: "forwarded as " + desc}
			}
		}
	}
	return Holder{Consumer: desc}
}
