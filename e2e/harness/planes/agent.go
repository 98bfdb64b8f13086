package planes

import (
	"context"
	"net"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/hostfleet/hostfleet/agent/app"
)

// AgentForTest runs the Hostfleet agent for cluster in this process, with
// hubCfg and managedCfg, until the test ends, and returns what stops it
// sooner. Test defaults: no leader election (tests race agents on purpose),
// no health Lease (the planes have no add-on namespace), claims retried and
// resynced every 2 s; opts change any of them.
func AgentForTest(t testing.TB, hubCfg, managedCfg *rest.Config, cluster string, opts ...func(*app.Options)) context.CancelFunc {
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

// FreeAddr is a loopback address with a port nothing listens on now.
func FreeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}
