package addon

import (
	"context"
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"open-cluster-management.io/addon-framework/pkg/addonmanager"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	addonclient "open-cluster-management.io/api/client/addon/clientset/versioned"
	ctrl "sigs.k8s.io/controller-runtime"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// ClusterManagementAddOn registers the add-on on the hub. Clusters get the
// agent when a ManagedClusterAddOn is made for them (`clusteradm addon
// enable --names hostfleet-agent`, or an install strategy an administrator
// sets). It holds only the fields the hub owns: the install strategy and
// default configs (an AddOnDeploymentConfig for every cluster) are the
// administrator's and survive every hub restart.
func ClusterManagementAddOn() *addonv1beta1.ClusterManagementAddOn {
	return &addonv1beta1.ClusterManagementAddOn{
		TypeMeta:   metav1.TypeMeta{APIVersion: addonv1beta1.GroupVersion.String(), Kind: "ClusterManagementAddOn"},
		ObjectMeta: metav1.ObjectMeta{Name: hostfleetv1alpha1.AddonName},
		Spec: addonv1beta1.ClusterManagementAddOnSpec{
			AddOnMeta: addonv1beta1.AddOnMeta{
				DisplayName: "Hostfleet agent",
				Description: "Binds the hub's HostClaims placed on this cluster to its BareMetalHosts and reflects their status back.",
			},
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
	if err := Register(ctx, addons); err != nil {
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
	a, err := New(kube, addons, m.Options)
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

// Register applies, server-side, only the hub's fields
// of the ClusterManagementAddOn: a new one gets the CRD's default install
// strategy (Manual), an existing one keeps what an administrator set.
func Register(ctx context.Context, addons addonclient.Interface) error {
	want := ClusterManagementAddOn()
	data, err := json.Marshal(map[string]any{"apiVersion": want.APIVersion, "kind": want.Kind,
		"metadata": map[string]any{"name": want.Name}, "spec": map[string]any{"addOnMeta": want.Spec.AddOnMeta}})
	if err != nil {
		return err
	}
	_, err = addons.AddonV1beta1().ClusterManagementAddOns().Patch(ctx, want.Name, types.ApplyPatchType, data,
		metav1.PatchOptions{FieldManager: hostfleetv1alpha1.FieldManagerHub, Force: ptr.To(true)})
	return err
}
