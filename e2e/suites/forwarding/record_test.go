package forwarding

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/e2e/harness/planes"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/hub/forwarder"
)

// binding is what a host's consumerRef and hostfleet.io/claim-uid say.
type binding struct {
	// APIVersion and Name are the consumerRef's ("" when the host is free).
	APIVersion, Name string
	// UID is the host's hostfleet.io/claim-uid ("" when none).
	UID string
}

func bindingOf(h *metal3api.BareMetalHost) binding {
	b := binding{UID: h.Annotations[hostfleetv1alpha1.AnnotationClaimUID]}
	if ref := h.Spec.ConsumerRef; ref != nil {
		b.APIVersion, b.Name = ref.APIVersion, ref.Name
	}
	return b
}

// byOther reports whether the binding is the other controller's (the
// upstream consumerRef that baremetal-operator writes).
func (b binding) byOther() bool { return b.APIVersion == metal3api.GroupVersion.String() }

func (b binding) String() string {
	if b.Name == "" {
		return "free"
	}
	return fmt.Sprintf("%s %s uid %q", b.APIVersion, b.Name, b.UID)
}

// change is a host's binding changing, seen at a moment.
type change struct {
	at       time.Time
	host     string
	from, to binding
}

// incarnation is one target claim: a name's life between its creation and
// its deletion (zero while alive), by the API server's clock.
type incarnation struct {
	uid               types.UID
	created, deleting time.Time
}

// record watches the target cluster's hosts and forwarded claims: every
// host's binding changes, every claim incarnation, and (while counting)
// each claim's writes.
type record struct {
	mu       sync.Mutex
	changes  []change
	claims   map[string][]*incarnation
	counting bool
	writes   map[string]int
}

func startRecord(t *testing.T, g Gomega, cfg *rest.Config) *record {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	c, err := cache.New(cfg, cache.Options{Scheme: planes.Scheme(), DefaultNamespaces: map[string]cache.Config{
		hostsNS: {}, forwarder.TargetNamespace(tenantNS): {}}})
	g.Expect(err).NotTo(HaveOccurred())
	r := &record{claims: map[string][]*incarnation{}, writes: map[string]int{}}
	hosts, err := c.GetInformer(ctx, &metal3api.BareMetalHost{})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = hosts.AddEventHandler(toolscache.ResourceEventHandlerFuncs{UpdateFunc: func(o, n any) {
		from, to := bindingOf(o.(*metal3api.BareMetalHost)), bindingOf(n.(*metal3api.BareMetalHost))
		if from != to {
			r.mu.Lock()
			r.changes = append(r.changes, change{at: time.Now(), host: n.(*metal3api.BareMetalHost).Name, from: from, to: to})
			r.mu.Unlock()
		}
	}})
	g.Expect(err).NotTo(HaveOccurred())
	claims, err := c.GetInformer(ctx, &metal3api.HostClaim{})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = claims.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(o any) { r.claim(o.(*metal3api.HostClaim)) },
		UpdateFunc: func(o, n any) {
			r.claim(n.(*metal3api.HostClaim))
			if o.(client.Object).GetResourceVersion() != n.(client.Object).GetResourceVersion() {
				r.wrote(n.(*metal3api.HostClaim).Name)
			}
		},
	})
	g.Expect(err).NotTo(HaveOccurred())
	go func() { _ = c.Start(ctx) }()
	g.Expect(c.WaitForCacheSync(ctx)).To(BeTrue())
	return r
}

// claim notes a claim incarnation and when its deletion started.
func (r *record) claim(c *metal3api.HostClaim) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var in *incarnation
	for _, x := range r.claims[c.Name] {
		if x.uid == c.UID {
			in = x
		}
	}
	if in == nil {
		in = &incarnation{uid: c.UID, created: c.CreationTimestamp.Time}
		r.claims[c.Name] = append(r.claims[c.Name], in)
	}
	if c.DeletionTimestamp != nil && in.deleting.IsZero() {
		in.deleting = c.DeletionTimestamp.Time
	}
}

func (r *record) wrote(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.counting {
		r.writes[name]++
	}
}

// writesDuring counts the claims' writes for d: their total, and the
// claim written most with its count.
func (r *record) writesDuring(d time.Duration) (total int, most string, top int) {
	r.mu.Lock()
	r.counting, r.writes = true, map[string]int{}
	r.mu.Unlock()
	<-time.After(d) // a measurement window: nothing is awaited
	r.mu.Lock()
	defer r.mu.Unlock()
	r.counting = false
	for name, n := range r.writes {
		total += n
		if n > top || n == top && name < most {
			most, top = name, n
		}
	}
	return total, most, top
}

// owner is the incarnation of a claim name alive at t, or nil. The API
// server's timestamps are whole seconds, cut down: a host change seen at t
// after a claim's deletion started is never counted before it.
func (r *record) owner(name string, t time.Time) *incarnation {
	for _, in := range r.claims[name] {
		if !in.created.After(t) && (in.deleting.IsZero() || t.Before(in.deleting)) {
			return in
		}
	}
	return nil
}

// audit checks the host changes seen since from: no host taken from a
// claim the other controller serves while that claim lives, and no host
// freed twice from one deleted claim. It returns what went wrong, and how
// many hosts deleted claims freed. (That none is left held by a claim that
// is gone, the final count says.)
func (r *record) audit(from time.Time) (violations []string, freed int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	type freeing struct {
		in   *incarnation
		host string
	}
	frees := map[freeing]int{}
	for _, ch := range r.changes {
		if ch.from.Name == "" || ch.at.Before(from) || ch.from.Name == ch.to.Name && ch.from.UID == ch.to.UID {
			continue
		}
		if in := r.owner(ch.from.Name, ch.at); in != nil {
			if ch.from.byOther() {
				violations = append(violations, fmt.Sprintf("%s taken from %s, which the other controller serves and which lives: %s → %s at %s",
					ch.host, ch.from.Name, ch.from, ch.to, ch.at.Format(time.RFC3339Nano)))
			}
			continue
		}
		freed++
		gone := r.lastDeleted(ch.from.Name, ch.at)
		if frees[freeing{gone, ch.host}]++; frees[freeing{gone, ch.host}] == 2 {
			violations = append(violations, fmt.Sprintf("%s freed twice from deleted claim %s: %s → %s at %s",
				ch.host, ch.from.Name, ch.from, ch.to, ch.at.Format(time.RFC3339Nano)))
		}
	}
	sort.Strings(violations)
	return violations, freed
}

// lastDeleted is the incarnation of name whose deletion started last,
// before t.
func (r *record) lastDeleted(name string, t time.Time) *incarnation {
	var last *incarnation
	for _, in := range r.claims[name] {
		if !in.deleting.IsZero() && !in.deleting.After(t) && (last == nil || in.deleting.After(last.deleting)) {
			last = in
		}
	}
	return last
}

// hostsWrong lists the hosts of the target cluster that break what a
// release must leave: a host with an image or powered on that no live
// claim the agent serves holds (provisioned without a claim), and a host
// carrying the agent's hostfleet.io/claim-uid under a consumerRef that is
// not the agent's (a binding someone else made over the agent's leftovers).
func hostsWrong(ctx context.Context, infra client.Client) ([]string, error) {
	var hosts metal3api.BareMetalHostList
	if err := infra.List(ctx, &hosts, client.InNamespace(hostsNS)); err != nil {
		return nil, err
	}
	var claims metal3api.HostClaimList
	if err := infra.List(ctx, &claims, client.InNamespace(forwarder.TargetNamespace(tenantNS))); err != nil {
		return nil, err
	}
	live := map[string]bool{}
	for _, c := range claims.Items {
		if c.DeletionTimestamp == nil {
			live[string(c.UID)] = true
		}
	}
	var out []string
	for _, h := range hosts.Items {
		b := bindingOf(&h)
		agents := b.APIVersion == hostfleetv1alpha1.GroupVersion.String() && live[b.UID]
		if (h.Spec.Image != nil || h.Spec.Online) && !agents {
			out = append(out, fmt.Sprintf("%s has image %v, online %t, held by %s: no live claim the agent serves", h.Name, h.Spec.Image != nil, h.Spec.Online, b))
		}
		if b.UID != "" && b.APIVersion != hostfleetv1alpha1.GroupVersion.String() {
			out = append(out, fmt.Sprintf("%s carries the agent's claim-uid under %s", h.Name, b))
		}
	}
	return out, nil
}
