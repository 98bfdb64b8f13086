package scheduler

import (
	"sync"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	"k8s.io/apimachinery/pkg/types"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// expectations are placements written but maybe not yet in the cache.
type expectations struct {
	mu sync.Mutex
	m  map[types.UID]expected
}

type expected struct {
	claim *metal3api.HostClaim
	at    time.Time
}

// remove forgets the placement of c on cluster, and only that one: a
// later placement of the same claim is not forgotten by an earlier write's
// failure.
func (e *expectations) remove(c *metal3api.HostClaim, cluster string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if x, ok := e.m[c.UID]; ok && x.claim.Labels[hostfleetv1alpha1.LabelCluster] == cluster {
		delete(e.m, c.UID)
	}
}

// has reports whether a placement of c is expected: written, or being
// written, and not yet shown by the cache (after missing).
func (e *expectations) has(c *metal3api.HostClaim) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	_, ok := e.m[c.UID]
	return ok
}

// add remembers the placement of c on cluster (a copy of c, labelled).
func (e *expectations) add(c *metal3api.HostClaim, cluster string) {
	placed := c.DeepCopy()
	if placed.Labels == nil {
		placed.Labels = map[string]string{}
	}
	placed.Labels[hostfleetv1alpha1.LabelCluster] = cluster
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.m == nil {
		e.m = map[types.UID]expected{}
	}
	e.m[c.UID] = expected{claim: placed, at: time.Now()}
}

// missing are, by cluster, the claims placed there that the cache does not
// show placed yet; those it shows (or older than a minute) are forgotten.
func (e *expectations) missing(placed func(*metal3api.HostClaim) bool) map[string][]*metal3api.HostClaim {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := map[string][]*metal3api.HostClaim{}
	for uid, x := range e.m {
		if placed(x.claim) || time.Since(x.at) > time.Minute {
			delete(e.m, uid)
			continue
		}
		cl := x.claim.Labels[hostfleetv1alpha1.LabelCluster]
		out[cl] = append(out[cl], x.claim)
	}
	return out
}

// said are the claims whose Scheduled condition this scheduler wrote
// Placed and the cache may not show yet: a reconcile of the label's own
// event, which can come first, does not write the condition again (two
// writes per placement, not three).
type said struct {
	mu sync.Mutex
	m  map[types.UID]time.Time
}

// saidFor is how long a written condition is waited for in the cache; a
// claim whose cache never shows it gets it written again.
const saidFor = time.Minute

func (s *said) add(uid types.UID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[types.UID]time.Time{}
	}
	if len(s.m) >= 1024 {
		// Claims deleted before the cache showed their condition.
		for u, at := range s.m {
			if time.Since(at) > saidFor {
				delete(s.m, u)
			}
		}
	}
	s.m[uid] = time.Now()
}

// pending reports whether the condition of the claim was written a moment
// ago; false once the cache shows it (forget) or after saidFor.
func (s *said) pending(uid types.UID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	at, ok := s.m[uid]
	return ok && time.Since(at) < saidFor
}

func (s *said) forget(uid types.UID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, uid)
}
