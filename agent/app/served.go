package app

import (
	"context"
	"slices"
	"sync/atomic"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/agent/servedtenants"
)

// WaitForServedNamespaces is ServedNamespaces, asked again every 2 s
// while the hub does not answer (an agent started during a hub outage
// waits rather than exits), until ctx ends; it logs while it waits.
func WaitForServedNamespaces(ctx context.Context, hub client.Reader, cluster, role string) ([]string, error) {
	var logged time.Time
	for {
		ns, err := ServedNamespaces(ctx, hub, cluster, role)
		if err == nil {
			return ns, nil
		}
		if time.Since(logged) > 30*time.Second {
			ctrl.Log.Info("waiting for the hub", "error", err.Error())
			logged = time.Now()
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(2 * time.Second):
		}
	}
}

// ServedNamespaces are the hub namespaces whose claims the agent of cluster
// watches: those of the tenants its ClusterTenancy lists for role (the
// tenants whose cluster set holds it, or, in the workload role, whose
// workload cluster it is), which are where the hub grants its identity to
// read claims, and the cluster's own namespace, which holds no claims but
// keeps the set from ever being empty (an empty set would mean every
// namespace). Without a ClusterTenancy (the hub has not written it yet),
// only that one. Sorted.
func ServedNamespaces(ctx context.Context, hub client.Reader, cluster, role string) ([]string, error) {
	ct, err := servedtenants.Get(ctx, hub, cluster)
	if err != nil {
		return nil, err
	}
	out := []string{cluster}
	for _, t := range ct.Served(role) {
		out = append(out, t.Namespaces...)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// namespaceConfigs is the claim cache's namespaces: nil (every namespace)
// for nil.
func namespaceConfigs(namespaces []string) map[string]cache.Config {
	if namespaces == nil {
		return nil
	}
	out := make(map[string]cache.Config, len(namespaces))
	for _, ns := range namespaces {
		out[ns] = cache.Config{}
	}
	return out
}

// servedWatcher calls changed, once, when the namespaces the cluster serves
// differ from served.
type servedWatcher struct {
	reader  client.Reader
	cluster string
	role    string
	served  []string
	every   time.Duration
	changed func()
	fired   atomic.Bool
}

// NeedLeaderElection is false: every replica watches the claims.
func (w *servedWatcher) NeedLeaderElection() bool { return false }

// Start compares every w.every until ctx is done or the set changed.
func (w *servedWatcher) Start(ctx context.Context) error {
	t := time.NewTicker(w.every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		now, err := ServedNamespaces(ctx, w.reader, w.cluster, w.role)
		if err != nil || slices.Equal(now, w.served) {
			continue // a failed read is tried again at the next tick
		}
		w.fired.Store(true)
		w.changed()
		return nil
	}
}
