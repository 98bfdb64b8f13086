package app

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
)

// ready is the hub's readiness: its caches have synced and the hub's API
// server answers, each within two seconds.
func ready(mgr ctrl.Manager, cfg *rest.Config) (healthz.Checker, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return func(req *http.Request) error {
		ctx, cancel := context.WithTimeout(req.Context(), 2*time.Second)
		defer cancel()
		if !mgr.GetCache().WaitForCacheSync(ctx) {
			return errors.New("the hub's caches have not synced yet")
		}
		if err := dc.RESTClient().Get().AbsPath("/version").Do(ctx).Error(); err != nil {
			return fmt.Errorf("the hub's API server does not answer: %w", err)
		}
		return nil
	}, nil
}
