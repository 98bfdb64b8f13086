package addon

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"open-cluster-management.io/addon-framework/pkg/addonfactory"
	"open-cluster-management.io/addon-framework/pkg/addonmanager/constants"
	"open-cluster-management.io/addon-framework/pkg/agent"
	"open-cluster-management.io/addon-framework/pkg/utils"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"

	"github.com/hostfleet/hostfleet/agent/hosted"
	"github.com/hostfleet/hostfleet/manifests"
)

// Names the add-on uses.
const (
	// Name is the add-on's name: the ClusterManagementAddOn, every
	// ManagedClusterAddOn, the agent's hub identity and its Lease.
	Name = "hostfleet-agent"
	// DefaultNamespace is the agent's namespace on the managed cluster
	// unless the ManagedClusterAddOn names another.
	DefaultNamespace = "hostfleet-agent"
	// ExternalManagedKubeconfig is the klusterlet's Secret (Hosted mode) that
	// reaches the managed cluster as cluster-admin, in the klusterlet's
	// namespace on the hosting cluster.
	ExternalManagedKubeconfig = "external-managed-kubeconfig"
)

// Options are what the hub decides about every agent it deploys.
type Options struct {
	// Image is the agent's container image.
	Image string
	// ImagePullPolicy is the agent container's pull policy.
	ImagePullPolicy corev1.PullPolicy
	// HubName identifies this hub on the hosts the agents bind.
	HubName string
	// Replicas of each agent; more than one wait on a leader Lease.
	Replicas int
}

// New is the hostfleet-agent add-on, ready for an addon-framework manager.
// kube is the hub client the permission callback writes RBAC with.
func New(kube kubernetes.Interface, o Options) (agent.AgentAddon, error) {
	return addonfactory.NewAgentAddonFactory(Name, manifests.Addon, manifests.AddonDir).
		WithGetValuesFuncs(o.values).
		WithAgentRegistrationOption(&agent.RegistrationOption{
			Configurations:   agent.KubeClientSignerConfigurations(Name, Name),
			CSRApproveCheck:  utils.DefaultCSRApprover(Name),
			PermissionConfig: Permissions(kube),
		}).
		WithAgentHostedModeEnabledOption().
		WithAgentInstallNamespace(func(_ context.Context, mca *addonv1beta1.ManagedClusterAddOn) (string, error) {
			return InstallNamespace(mca), nil
		}).
		WithAgentHealthProber(&agent.HealthProber{Type: agent.HealthProberTypeLease}).
		BuildTemplateAgentAddon()
}

// Hosted says whether the add-on runs in Hosted mode and on which cluster.
func Hosted(mca *addonv1beta1.ManagedClusterAddOn) (bool, string) {
	mode, hosting := constants.GetHostedModeInfo(mca, nil)
	return mode == constants.InstallModeHosted, hosting
}

// InstallNamespace is where the agent runs. Default mode: on the managed
// cluster, in the namespace the ManagedClusterAddOn asks for, else
// DefaultNamespace. Hosted mode: on the hosting cluster, in the klusterlet's
// namespace (klusterlet-<cluster>, or the one asked for), because that is
// where the klusterlet keeps external-managed-kubeconfig and writes the
// agent's hub kubeconfig.
func InstallNamespace(mca *addonv1beta1.ManagedClusterAddOn) string {
	if ns := mca.Annotations[addonv1beta1.InstallNamespaceAnnotation]; ns != "" {
		return ns
	}
	if hosted, _ := Hosted(mca); hosted {
		return "klusterlet-" + mca.Namespace
	}
	return DefaultNamespace
}

// AgentNamespace is the agent's namespace on the managed cluster (Leases,
// and in Hosted mode its ServiceAccount).
func AgentNamespace(mca *addonv1beta1.ManagedClusterAddOn) string {
	if hosted, _ := Hosted(mca); hosted {
		return DefaultNamespace
	}
	return InstallNamespace(mca)
}

// values are the template values beyond the framework's built-in ones
// (ClusterName, AddonInstallNamespace, InstallMode, HubKubeConfigSecret).
func (o Options) values(_ *clusterv1.ManagedCluster, mca *addonv1beta1.ManagedClusterAddOn) (addonfactory.Values, error) {
	clusterRules, err := json.Marshal(hosted.ClusterRules(false, true))
	if err != nil {
		return nil, err
	}
	nsRules, err := json.Marshal(hosted.NamespaceRules())
	if err != nil {
		return nil, err
	}
	pull := o.ImagePullPolicy
	if pull == "" {
		pull = corev1.PullIfNotPresent
	}
	replicas := o.Replicas
	if replicas < 1 {
		replicas = 1
	}
	return addonfactory.Values{
		"Image":                   o.Image,
		"ImagePullPolicy":         string(pull),
		"HubName":                 o.HubName,
		"Replicas":                replicas,
		"AgentNamespace":          AgentNamespace(mca),
		"SharedNamespace":         AgentNamespace(mca) != DefaultNamespace,
		"ManagedKubeConfigSecret": ExternalManagedKubeconfig,
		// JSON is YAML: the rules are the agent's own (agent/hosted), not a
		// second copy kept in the templates.
		"ClusterRules":   string(clusterRules),
		"NamespaceRules": string(nsRules),
	}, nil
}

// ValidateImage says what is wrong with an image reference, if anything
// obvious is.
func ValidateImage(image string) error {
	if image == "" || strings.ContainsAny(image, " \t\n") {
		return fmt.Errorf("agent image %q must be a container image reference", image)
	}
	return nil
}
