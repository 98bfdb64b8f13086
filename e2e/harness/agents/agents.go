// Package agents runs Hostfleet agents in a test's process, against the
// planes of e2e/harness/planes. (Apart from planes: the agent's own
// packages test with planes, and the agent imports them.)
package agents

import (
	"context"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/hostfleet/hostfleet/agent/app"
)

// ForTest runs the Hostfleet agent for cluster in this process, with
// hubCfg and managedCfg, until the test ends, and returns what stops it
// sooner. Test defaults: no leader election (tests race agents on purpose),
// no health Lease (the planes have no add-on namespace), claims retried and
// resynced every 2 s; opts change any of them.
func ForTest(t testing.TB, hubCfg, managedCfg *rest.Config, cluster string, opts ...func(*app.Options)) context.CancelFunc {
	t.Helper()
	o := app.NewOptions()
	o.ClusterName, o.InProcess, o.LeaderElect, o.HealthLease = cluster, true, false, false
	o.RetryAfter, o.Resync = 2*time.Second, 2*time.Second
	for _, opt := range opts {
		opt(o)
	}
	ctx, cancel := context.WithCancel(context.Background())
	a, err := app.New(ctx, hubCfg, managedCfg, o)
	if err != nil {
		cancel()
		t.Fatalf("agent %s: %v", cluster, err)
	}
	done := make(chan error, 1)
	go func() { done <- a.Manager.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("agent %s: %v", cluster, err)
		}
	})
	return cancel
}
