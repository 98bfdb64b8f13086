package placedcache

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// claimVersion carries, on a claim read from a PlacedClaim, the claim's
// own resourceVersion until Transform puts it in place.
const claimVersion = hostfleetv1alpha1.AnnotationPlacedClaimResourceVersion

// Source is where an agent reads its claims: the PlacedClaims of namespace
// Cluster, of the claims in Namespaces (all when empty).
type Source struct {
	Client     client.WithWatch
	Cluster    string
	Namespaces []string
}

// NewInformer is a cache.Options.NewInformer: for HostClaims, an informer
// over the Source; for any other kind, client-go's.
func (s *Source) NewInformer(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers toolscache.Indexers) toolscache.SharedIndexInformer {
	if _, ok := obj.(*metal3api.HostClaim); ok {
		lw = &listWatch{s: s}
	}
	return toolscache.NewSharedIndexInformer(lw, obj, resync, indexers)
}

// selector selects the PlacedClaims of the served namespaces.
func (s *Source) selector() (labels.Selector, error) {
	if len(s.Namespaces) == 0 {
		return labels.Everything(), nil
	}
	return metav1.LabelSelectorAsSelector(&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
		Key: hostfleetv1alpha1.LabelClaimNamespace, Operator: metav1.LabelSelectorOpIn, Values: s.Namespaces}}})
}

// Transform gives a claim read from a PlacedClaim its own resourceVersion;
// any other object, and a claim already given it, is left as is. It then
// applies next (nil: nothing more).
func Transform(next toolscache.TransformFunc) toolscache.TransformFunc {
	return func(in any) (any, error) {
		if c, ok := in.(*metal3api.HostClaim); ok {
			if v, ok := c.Annotations[claimVersion]; ok {
				c.ResourceVersion = v
				delete(c.Annotations, claimVersion)
				if len(c.Annotations) == 0 {
					c.Annotations = nil
				}
			}
		}
		if next == nil {
			return in, nil
		}
		return next(in)
	}
}

// Claim is the claim a PlacedClaim copies, with the PlacedClaim's
// resourceVersion and its own under claimVersion.
func Claim(pc *hostfleetv1alpha1.PlacedClaim) (*metal3api.HostClaim, error) {
	c := &metal3api.HostClaim{}
	if err := json.Unmarshal(pc.Claim.Raw, c); err != nil {
		return nil, fmt.Errorf("PlacedClaim %s/%s: decode its claim: %w", pc.Namespace, pc.Name, err)
	}
	if c.Annotations == nil {
		c.Annotations = map[string]string{}
	}
	c.Annotations[claimVersion] = c.ResourceVersion
	c.ResourceVersion = pc.ResourceVersion
	return c, nil
}

// listWatch lists and watches the Source's PlacedClaims as claims.
type listWatch struct{ s *Source }

var (
	_ toolscache.ListerWatcherWithContext = &listWatch{}
	_ toolscache.ListerWatcher            = &listWatch{}
)

// IsWatchListSemanticsUnSupported: the reflector lists, then watches.
func (l *listWatch) IsWatchListSemanticsUnSupported() bool { return true }

func (l *listWatch) options(opts metav1.ListOptions) (*client.ListOptions, error) {
	sel, err := l.s.selector()
	if err != nil {
		return nil, err
	}
	return &client.ListOptions{Raw: &opts, Namespace: l.s.Cluster, LabelSelector: sel}, nil
}

func (l *listWatch) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	o, err := l.options(opts)
	if err != nil {
		return nil, err
	}
	list := &hostfleetv1alpha1.PlacedClaimList{}
	if err := l.s.Client.List(ctx, list, o); err != nil {
		return nil, err
	}
	out := &metal3api.HostClaimList{ListMeta: list.ListMeta, Items: make([]metal3api.HostClaim, 0, len(list.Items))}
	for i := range list.Items {
		if c, ok := decoded(ctx, &list.Items[i]); ok {
			out.Items = append(out.Items, *c)
		}
	}
	return out, nil
}

func (l *listWatch) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	o, err := l.options(opts)
	if err != nil {
		return nil, err
	}
	w, err := l.s.Client.Watch(ctx, &hostfleetv1alpha1.PlacedClaimList{}, o)
	if err != nil {
		return nil, err
	}
	return watch.Filter(w, func(e watch.Event) (watch.Event, bool) { return convert(ctx, e) }), nil
}

func (l *listWatch) List(opts metav1.ListOptions) (runtime.Object, error) {
	return l.ListWithContext(context.Background(), opts)
}

func (l *listWatch) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return l.WatchWithContext(context.Background(), opts)
}

// convert turns a PlacedClaim event into its claim's. A bookmark keeps
// only its resourceVersion and annotations; an error event is passed on;
// a copy that does not decode is dropped (decoded).
func convert(ctx context.Context, e watch.Event) (watch.Event, bool) {
	pc, ok := e.Object.(*hostfleetv1alpha1.PlacedClaim)
	if !ok {
		return e, true
	}
	if e.Type == watch.Bookmark {
		c := &metal3api.HostClaim{}
		c.ResourceVersion, c.Annotations = pc.ResourceVersion, pc.Annotations
		return watch.Event{Type: e.Type, Object: c}, true
	}
	c, ok := decoded(ctx, pc)
	return watch.Event{Type: e.Type, Object: c}, ok
}

// decoded is Claim, or false with the error logged: a copy that does not
// decode (only the hub writes them) must not stop the agent serving its
// other claims.
func decoded(ctx context.Context, pc *hostfleetv1alpha1.PlacedClaim) (*metal3api.HostClaim, bool) {
	c, err := Claim(pc)
	if err != nil {
		klog.FromContext(ctx).Error(err, "skipping a PlacedClaim", "placedClaim", klog.KObj(pc))
		return nil, false
	}
	return c, true
}
