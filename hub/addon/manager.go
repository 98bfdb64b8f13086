package addon

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"open-cluster-management.io/addon-framework/pkg/addonmanager"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	addonclient "open-cluster-management.io/api/client/addon/clientset/versioned"
	ctrl "sigs.k8s.io/controller-runtime"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// ClusterManagementAddOn registers the add-on on the hub. Clusters get the
// agent when a ManagedClusterAddOn is made for them (`clusteradm addon
// enable --names hostfleet-agent`, or an install strategy an operator sets).
func ClusterManagementAddOn() *addonv1beta1.ClusterManagementAddOn {
	return &addonv1beta1.ClusterManagementAddOn{
		ObjectMeta: metav1.ObjectMeta{Name: hostfleetv1alpha1.AddonName},
		Spec: addonv1beta1.ClusterManagementAddOnSpec{
			AddOnMeta: addonv1beta1.AddOnMeta{
				DisplayName: "Hostfleet agent",
				Description: "Binds the hub's HostClaims placed on this cluster to its BareMetalHosts and reflects their status back.",
			},
			InstallStrategy: addonv1beta1.InstallStrategy{Type: addonv1beta1.AddonInstallStrategyManual},
		},
	}
}

// Manager runs the addon-framework manager for hostfleet-agent inside the
// hub's controller manager, on the elected leader only.
type Manager struct {
	Config  *rest.Config
	Options Options
}

// Start registers the ClusterManagementAddOn (keeping an install strategy an
// operator set) and runs the add-on controllers until ctx is done.
func (m *Manager) Start(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithName("addon")
	addons, err := addonclient.NewForConfig(m.Config)
	if err != nil {
		return fmt.Errorf("add-on client: %w", err)
	}
	if err := ensureClusterManagementAddOn(ctx, addons); err != nil {
		return fmt.Errorf("register ClusterManagementAddOn %s: %w", hostfleetv1alpha1.AddonName, err)
	}
	kube, err := kubernetes.NewForConfig(m.Config)
	if err != nil {
		return fmt.Errorf("kubernetes client: %w", err)
	}
	am, err := addonmanager.New(m.Config)
	if err != nil {
		return fmt.Errorf("add-on manager: %w", err)
	}
	a, err := New(kube, m.Options)
	if err != nil {
		return fmt.Errorf("add-on %s: %w", hostfleetv1alpha1.AddonName, err)
	}
	if err := am.AddAgent(a); err != nil {
		return fmt.Errorf("add the %s agent to the add-on manager: %w", hostfleetv1alpha1.AddonName, err)
	}
	if err := am.Start(ctx); err != nil {
		return fmt.Errorf("start the add-on manager: %w", err)
	}
	log.Info("add-on manager started", "addon", hostfleetv1alpha1.AddonName, "image", m.Options.Image)
	<-ctx.Done()
	return nil
}

func ensureClusterManagementAddOn(ctx context.Context, addons addonclient.Interface) error {
	want := ClusterManagementAddOn()
	cmas := addons.AddonV1beta1().ClusterManagementAddOns()
	have, err := cmas.Get(ctx, hostfleetv1alpha1.AddonName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = cmas.Create(ctx, want, metav1.CreateOptions{})
		return err
	}
	if err != nil {
		return err
	}
	// The install strategy belongs to the operator once set.
	want.Spec.InstallStrategy = have.Spec.InstallStrategy
	if want.Spec.InstallStrategy.Type == "" {
		want.Spec.InstallStrategy.Type = addonv1beta1.AddonInstallStrategyManual
	}
	if equality.Semantic.DeepEqual(have.Spec, want.Spec) {
		return nil
	}
	have.Spec = want.Spec
	_, err = cmas.Update(ctx, have, metav1.UpdateOptions{})
	return err
}
