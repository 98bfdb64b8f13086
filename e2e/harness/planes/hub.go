package planes

import (
	"context"
	"testing"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/hostfleet/hostfleet/hub/admission"
	"github.com/hostfleet/hostfleet/hub/clustertenancy"
	"github.com/hostfleet/hostfleet/hub/tenant"
	"github.com/hostfleet/hostfleet/internal/setup"
)

// HubForTest runs, on the named plane until the test ends, what every hub
// test needs under the controller it tests: the hub's admission policies
// (the tenant controller grants a tenant's RBAC only once its policy is in
// force), the tenant controller and the controller of the clusters'
// ClusterTenancies (all an agent reads of the tenants), plus the
// controllers extra sets up.
func (f *Fleet) HubForTest(t testing.TB, plane string, extra ...func(mgr ctrl.Manager) error) {
	t.Helper()
	f.ManagerForTest(t, plane, func(mgr ctrl.Manager) error {
		if err := mgr.Add(&admission.Installer{Client: mgr.GetClient()}); err != nil {
			return err
		}
		if err := (&tenant.Reconciler{Client: mgr.GetClient(), Scheme: f.Scheme}).SetupWithManager(context.Background(), mgr, setup.Options{}); err != nil {
			return err
		}
		if err := (&clustertenancy.Reconciler{Client: mgr.GetClient()}).SetupWithManager(context.Background(), mgr, setup.Options{}); err != nil {
			return err
		}
		for _, setup := range extra {
			if err := setup(mgr); err != nil {
				return err
			}
		}
		return nil
	})
}
