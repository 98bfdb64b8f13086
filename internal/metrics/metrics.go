// Package metrics registers the hub's and the agent's metrics with
// controller-runtime's registry, which their managers serve.
package metrics

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Register adds the static collectors once, and the cached ones (they read
// a manager's cache), each replacing one of the same description left by
// an earlier manager of this process (controllers started again over new
// namespaces, or tests).
func Register(static []prometheus.Collector, cached ...prometheus.Collector) error {
	for _, col := range static {
		var dup prometheus.AlreadyRegisteredError
		if err := crmetrics.Registry.Register(col); err != nil && !errors.As(err, &dup) {
			return err
		}
	}
	for _, col := range cached {
		var dup prometheus.AlreadyRegisteredError
		err := crmetrics.Registry.Register(col)
		if errors.As(err, &dup) {
			crmetrics.Registry.Unregister(dup.ExistingCollector)
			err = crmetrics.Registry.Register(col)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
