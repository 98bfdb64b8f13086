package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/e2e/harness/planes"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// links are one agent's ways to the hub's API server and to its own
// infrastructure plane's, each through a proxy that a partition cuts: the
// agent's connections dropped, new ones refused, until the heal. Nothing
// else goes through them: the churn, the hub and the check keep their own.
type links struct {
	hub, infra *planes.Proxy
	// One partition at a time per proxy.
	hubMu, infraMu sync.Mutex
}

func newLinks(f *planes.Fleet, infra string) (*links, error) {
	h, err := f.Proxy("hub")
	if err != nil {
		return nil, err
	}
	i, err := f.Proxy(infra)
	if err != nil {
		return nil, err
	}
	return &links{hub: h, infra: i}, nil
}

// The kinds of partition, in the order a run makes them.
const (
	// The agent cut from the hub's API server: the claims placed on its
	// cluster are created, changed and deleted without it.
	cutFromHub = "from the hub API server"
	// The agent cut from its infrastructure API server: it sees its claims
	// and cannot touch its hosts.
	cutFromInfra = "from its infrastructure API server"
	// Cut from its infrastructure API server as a claim placed on its
	// cluster is deleted: healed with the release under way.
	cutMidRelease = "from its infrastructure API server as a claim placed there is deleted"
)

var partitionKinds = []string{cutFromHub, cutFromInfra, cutMidRelease}

// partition is one agent cut from one API server, at a moment of the run.
type partition struct {
	agent, kind string
	at          time.Duration
}

// planPartitions spreads n partitions over the agents and the kinds in
// turn, each starting at a random moment such that it heals within span
// when span is long enough.
func planPartitions(n int, infras []string, span, hold time.Duration, r *rand.Rand) []partition {
	latest := max(span-hold, time.Second)
	plan := make([]partition, n)
	for i := range plan {
		plan[i] = partition{agent: infras[i%len(infras)], kind: partitionKinds[i%len(partitionKinds)],
			at: time.Duration(r.Int64N(int64(latest)))}
	}
	return plan
}

// partitions makes the planned partitions, each held for hold, and returns
// once every one healed.
func partitions(ctx context.Context, fl *fleet, ch *churn, plan []partition, hold time.Duration, rep *Report, say func(string, ...any)) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	for _, p := range plan {
		wg.Add(1)
		go func() {
			defer wg.Done()
			healed, line := fl.partition(ctx, ch, p, hold)
			if line == "" {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			rep.Partitions = append(rep.Partitions, line)
			if healed.After(rep.LastHeal) {
				rep.LastHeal = healed
			}
			say("  partition healed: %s", line)
		}()
	}
	wg.Wait()
}

// partition cuts p.agent from one API server at p.at for hold, then heals
// it; it says what it did, and when it healed. A mid-release partition
// deletes a claim bound on the agent's cluster first.
func (fl *fleet) partition(ctx context.Context, ch *churn, p partition, hold time.Duration) (time.Time, string) {
	hub := ch.hub
	if !sleep(ctx, p.at) {
		return time.Time{}, ""
	}
	l := fl.links[p.agent]
	px, mu := l.infra, &l.infraMu
	if p.kind == cutFromHub {
		px, mu = l.hub, &l.hubMu
	}
	mu.Lock()
	defer mu.Unlock()
	released := ""
	if p.kind == cutMidRelease {
		if released = release(ctx, ch, p.agent); released == "" {
			return time.Time{}, fmt.Sprintf("the agent on %s not cut %s: no claim bound there for a minute", p.agent, p.kind)
		}
		sleep(ctx, 100*time.Millisecond) // the agent begins the release
	}
	px.Cut()
	sleep(ctx, hold)
	deleting := releasing(ctx, hub, p.agent)
	px.Restore()
	if released != "" {
		released = " (" + released + ")"
	}
	return time.Now(), fmt.Sprintf("the agent on %s cut %s%s for %s; at the heal, %s", p.agent, p.kind, released, hold, deleting)
}

// release deletes a claim bound on cluster that the churn lets go of (not
// one it keeps), as its tenant would, and names it; it waits up to a minute
// for one.
func release(ctx context.Context, ch *churn, cluster string) string {
	hub := ch.hub
	for range 300 {
		var claims metal3api.HostClaimList
		if err := hub.List(ctx, &claims, client.InNamespace(tenantNS), client.MatchingLabels{hostfleetv1alpha1.LabelCluster: cluster}); err == nil {
			for i := range claims.Items {
				c := &claims.Items[i]
				if c.DeletionTimestamp == nil && c.Status.BareMetalHost != nil && ch.drop(c.Name) && hub.Delete(ctx, c) == nil {
					return c.Name + " deleted"
				}
			}
		}
		if !sleep(ctx, 200*time.Millisecond) {
			return ""
		}
	}
	return ""
}

// releasing says how many claims placed on cluster are being deleted.
func releasing(ctx context.Context, hub client.Client, cluster string) string {
	lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var claims metal3api.HostClaimList
	if err := hub.List(lctx, &claims, client.InNamespace(tenantNS), client.MatchingLabels{hostfleetv1alpha1.LabelCluster: cluster}); err != nil {
		return "the claims placed there not counted (the hub API server did not answer)"
	}
	n := 0
	for _, c := range claims.Items {
		if c.DeletionTimestamp != nil {
			n++
		}
	}
	return fmt.Sprintf("%d claims placed there being deleted", n)
}

// sleep waits d, or until ctx ends (false).
func sleep(ctx context.Context, d time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}
