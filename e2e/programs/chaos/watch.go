package chaos

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/e2e/emulators/redfish"
	"github.com/hostfleet/hostfleet/e2e/harness/planes"
	"github.com/hostfleet/hostfleet/hub/api/healing"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// hostWatch follows every change of one plane's hosts, in the order its
// etcd wrote them, and records what no moment may show:
//   - a host passing from one claim straight to another;
//   - a claim held by two hosts;
//   - a host quarantined unfenced, or while its BMC has it on;
//   - a claim bound to another host, on any plane watched with the same
//     quarantines, while the host quarantined for it is on;
//   - a host bound while its restore to its firmware baselines is pending
//     or failed, or with a BMC account another claim's tenant added.
//
// A watch that ends (as one does when etcd is restored) lists again, and
// judges from there.
type hostWatch struct {
	plane  string
	cancel context.CancelFunc
	done   chan struct{}
	// following is closed once the first watch follows the hosts: every
	// change after it is seen.
	following chan struct{}
	once      sync.Once
	// power, if set, is a host's power as its BMC has it now ("" for a
	// host without an emulated BMC).
	power func(host string) string
	// quarantines are those seen on every plane watched together.
	quarantines *quarantines
	// accounts, if set, are a host's BMC accounts as its BMC has them now,
	// but the agent's own.
	accounts func(host string) []string

	mu    sync.Mutex
	found []string
	seen  map[string]bool
	// quarantined and rebound count the quarantines seen, and the claims
	// seen bound to another host after one.
	quarantined, rebound int
}

// quarantines are the hosts seen quarantined, on every plane watched
// together, by the UID of the claim they failed under: a claim moved to
// another cluster after a replacement is judged against them too.
type quarantines struct {
	mu sync.Mutex
	of map[string][]quarantined
}

type quarantined struct {
	w           *hostWatch
	host, claim string
}

func newQuarantines() *quarantines { return &quarantines{of: map[string][]quarantined{}} }

func (q *quarantines) add(uid string, x quarantined) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.of[uid] = append(q.of[uid], x)
}

func (q *quarantines) get(uid string) []quarantined {
	q.mu.Lock()
	defer q.mu.Unlock()
	return slices.Clone(q.of[uid])
}

func watchHosts(ctx context.Context, plane string, cfg *rest.Config, power func(host string) string, qs *quarantines,
	accounts func(host string) []string) (*hostWatch, error) {
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: planes.Scheme()})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	w := &hostWatch{plane: plane, cancel: cancel, done: make(chan struct{}), following: make(chan struct{}), power: power, quarantines: qs, accounts: accounts,
		seen: map[string]bool{}}
	go func() {
		defer close(w.done)
		for ctx.Err() == nil {
			w.follow(ctx, c)
		}
	}()
	return w, nil
}

// follow lists the hosts and follows their changes until the watch ends.
func (w *hostWatch) follow(ctx context.Context, c client.WithWatch) {
	var list metal3api.BareMetalHostList
	if err := c.List(ctx, &list, client.InNamespace("hosts")); err != nil {
		time.Sleep(250 * time.Millisecond)
		return
	}
	hosts := map[string]*metal3api.BareMetalHost{}
	for i := range list.Items {
		hosts[list.Items[i].Name] = &list.Items[i]
	}
	wi, err := c.Watch(ctx, &metal3api.BareMetalHostList{}, client.InNamespace("hosts"), &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: list.ResourceVersion}})
	if err != nil {
		return
	}
	defer wi.Stop()
	w.once.Do(func() { close(w.following) })
	for {
		var e watch.Event
		select {
		case <-ctx.Done():
			return
		case e = <-wi.ResultChan():
		}
		h, ok := e.Object.(*metal3api.BareMetalHost)
		if !ok || e.Type == watch.Error {
			return
		}
		if e.Type == watch.Deleted {
			delete(hosts, h.Name)
			continue
		}
		w.judge(hosts, hosts[h.Name], h)
		hosts[h.Name] = h
	}
}

// holder is the UID of the claim a host holds, if any.
func holder(h *metal3api.BareMetalHost) string {
	if h == nil {
		return ""
	}
	return h.Annotations[hostfleetv1alpha1.AnnotationClaimUID]
}

// judge records what the change of a host from prev (nil: not seen yet)
// to h breaks, with hosts the plane's other hosts as last seen.
func (w *hostWatch) judge(hosts map[string]*metal3api.BareMetalHost, prev, h *metal3api.BareMetalHost) {
	w.mu.Lock()
	defer w.mu.Unlock()
	was, uid := holder(prev), holder(h)
	if was != "" && uid != "" && was != uid {
		w.find("%s passed from claim %s to claim %s at resourceVersion %s", h.Name, was, uid, h.ResourceVersion)
	}
	_, wasQuarantined, _ := healing.QuarantineOf(prevAnnotations(prev))
	if q, ok, _ := healing.QuarantineOf(h.Annotations); ok && !wasQuarantined {
		w.quarantined++
		w.quarantines.add(q.ClaimUID, quarantined{w: w, host: h.Name, claim: q.Claim})
		if !q.Fenced {
			w.find("%s/%s quarantined for claim %s without being fenced", w.plane, h.Name, q.Claim)
		}
		if p := w.powerOf(h.Name); p != "" && p != "Off" {
			w.find("%s/%s quarantined for claim %s while its BMC has it %s", w.plane, h.Name, q.Claim, p)
		}
	}
	if uid == "" || uid == was {
		return
	}
	if _, ok := h.Annotations[hostfleetv1alpha1.AnnotationRestore]; ok {
		w.find("%s/%s bound to claim %s while its restore to its firmware baselines is pending or held (%s)", w.plane, h.Name, uid,
			h.Annotations[hostfleetv1alpha1.AnnotationRestore])
	}
	if w.accounts != nil {
		for _, a := range w.accounts(h.Name) {
			if a != tenantAccount(uid) {
				w.find("%s/%s bound to claim %s with BMC account %s, which another claim's tenant added", w.plane, h.Name, uid, a)
			}
		}
	}
	for name, o := range hosts {
		if name == h.Name {
			continue
		}
		if holder(o) == uid {
			w.find("claim %s held by %s/%s and %s/%s at resourceVersion %s", uid, w.plane, name, w.plane, h.Name, h.ResourceVersion)
		}
	}
	for _, q := range w.quarantines.get(uid) {
		if q.w == w && q.host == h.Name {
			continue
		}
		w.rebound++
		if p := q.w.powerOf(q.host); p != "" && p != "Off" {
			w.find("claim %s bound to %s/%s while %s/%s, quarantined for it, is %s", q.claim, w.plane, h.Name, q.w.plane, q.host, p)
		}
	}
}

func prevAnnotations(h *metal3api.BareMetalHost) map[string]string {
	if h == nil {
		return nil
	}
	return h.Annotations
}

func (w *hostWatch) powerOf(host string) string {
	if w.power == nil {
		return ""
	}
	return w.power(host)
}

// find records a finding once. The caller holds w.mu.
func (w *hostWatch) find(format string, a ...any) {
	f := fmt.Sprintf(format, a...)
	if !w.seen[f] {
		w.seen[f] = true
		w.found = append(w.found, f)
	}
}

// counts are the quarantines seen, and the claims bound again after one.
func (w *hostWatch) counts() (quarantined, rebound int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.quarantined, w.rebound
}

// stop ends the watch and returns what it found; it may be called again.
func (w *hostWatch) stop() []string {
	w.cancel()
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.found)
}

// power is each host's power as its emulated BMC has it (host-N's is
// bmcs[N]), "" for another host; when not "Off", with the BMC's last
// actions, so that a finding says how the host came to be on.
func power(bmcs []*redfish.BMC) func(host string) string {
	return func(host string) string {
		var n int
		if _, err := fmt.Sscanf(host, "host-%d", &n); err != nil || n >= len(bmcs) {
			return ""
		}
		p := bmcs[n].Power()
		if p != "Off" {
			a := bmcs[n].Actions()
			p += " (its last actions: " + strings.Join(a[max(0, len(a)-8):], ", ") + ")"
		}
		return p
	}
}

// extraAccounts are a host's BMC accounts (host-N's is bmcs[N]) but the
// agent's own (admin).
func extraAccounts(bmcs []*redfish.BMC) func(host string) []string {
	return func(host string) []string {
		var n int
		if _, err := fmt.Sscanf(host, "host-%d", &n); err != nil || n >= len(bmcs) {
			return nil
		}
		return slices.DeleteFunc(bmcs[n].Accounts(), func(a string) bool { return a == "admin" })
	}
}

// tenantAccount is the BMC account the tenant of claim uid adds in-band
// on its host before it lets it go.
func tenantAccount(uid string) string {
	return "t-" + uid[:min(len(uid), 8)]
}
