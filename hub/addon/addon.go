package addon

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"open-cluster-management.io/addon-framework/pkg/addonfactory"
	"open-cluster-management.io/addon-framework/pkg/addonmanager/constants"
	"open-cluster-management.io/addon-framework/pkg/agent"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"

	"github.com/hostfleet/hostfleet/hub/api/permissions"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/manifests"
)

// Names the add-on uses.
const (
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
	// BMCNamespaces are the namespaces, on every managed cluster, whose
	// hosts the agent's BMC driver drives (--bmc-namespaces): it reads BMC
	// credentials there and nowhere else. Empty: the driver is off
	// (--bmh-driver=none) and the agent reads no Secret on the cluster.
	BMCNamespaces []string
}

// features are the optional rights every agent gets on its managed cluster:
// the BMC driver's when it drives some namespaces; never local claims'.
func (o Options) features() permissions.Features {
	return permissions.Features{BMCDriver: len(o.BMCNamespaces) > 0}
}

// New is the hostfleet-agent add-on, ready for an addon-framework manager.
// kube is the hub client the permission callback writes RBAC with.
func New(kube kubernetes.Interface, o Options) (agent.AgentAddon, error) {
	a, err := addonfactory.NewAgentAddonFactory(hostfleetv1alpha1.AddonName, manifests.Addon, manifests.AddonDir).
		WithGetValuesFuncs(o.values).
		WithAgentRegistrationOption(&agent.RegistrationOption{
			Configurations:   agent.KubeClientSignerConfigurations(hostfleetv1alpha1.AddonName, hostfleetv1alpha1.AddonName),
			CSRApproveCheck:  approveCSR,
			PermissionConfig: Permissions(kube),
		}).
		WithAgentHostedModeEnabledOption().
		WithAgentInstallNamespace(func(_ context.Context, mca *addonv1beta1.ManagedClusterAddOn) (string, error) {
			return InstallNamespace(mca), nil
		}).
		WithAgentHealthProber(&agent.HealthProber{Type: agent.HealthProberTypeLease}).
		BuildTemplateAgentAddon()
	if err != nil {
		return nil, err
	}
	return bmcRoles{AgentAddon: a, namespaces: o.BMCNamespaces}, nil
}

// bmcRoles adds to the templates' objects, in Default mode, a Role and
// RoleBinding in each namespace whose hosts the agent drives, reading BMC
// credentials there (their number varies: one template makes one object).
// In Hosted mode the agent makes them itself, with the external managed
// kubeconfig, as it makes its other rights.
type bmcRoles struct {
	agent.AgentAddon
	namespaces []string
}

func (b bmcRoles) Manifests(ctx context.Context, cluster *clusterv1.ManagedCluster, mca *addonv1beta1.ManagedClusterAddOn) ([]runtime.Object, error) {
	objs, err := b.AgentAddon.Manifests(ctx, cluster, mca)
	if err != nil {
		return nil, err
	}
	if hosted, _ := Hosted(mca); hosted {
		return objs, nil
	}
	for _, ns := range b.namespaces {
		meta := metav1.ObjectMeta{Name: hostfleetv1alpha1.AgentBMCRole, Namespace: ns,
			Annotations: map[string]string{addonv1beta1.HostedManifestLocationAnnotationKey: addonv1beta1.HostedManifestLocationManagedValue}}
		objs = append(objs,
			&rbacv1.Role{TypeMeta: metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "Role"},
				ObjectMeta: meta, Rules: permissions.AgentBMCNamespace()},
			&rbacv1.RoleBinding{TypeMeta: metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "RoleBinding"},
				ObjectMeta: meta,
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: hostfleetv1alpha1.AgentBMCRole},
				Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: hostfleetv1alpha1.AgentServiceAccount,
					Namespace: InstallNamespace(mca)}}})
	}
	return objs, nil
}

// Hosted says whether the add-on runs in Hosted mode and on which cluster.
func Hosted(mca *addonv1beta1.ManagedClusterAddOn) (bool, string) {
	mode, hosting := constants.GetHostedModeInfo(mca, nil)
	return mode == constants.InstallModeHosted, hosting
}

// InstallNamespace is where the agent runs. Default mode: on the managed
// cluster, in the namespace the ManagedClusterAddOn asks for, else
// hostfleetv1alpha1.AgentNamespace. Hosted mode: on the hosting cluster, in the klusterlet's
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
	return hostfleetv1alpha1.AgentNamespace
}

// AgentNamespace is the agent's namespace on the managed cluster (Leases,
// and in Hosted mode its ServiceAccount).
func AgentNamespace(mca *addonv1beta1.ManagedClusterAddOn) string {
	if hosted, _ := Hosted(mca); hosted {
		return hostfleetv1alpha1.AgentNamespace
	}
	return InstallNamespace(mca)
}

// values are the template values beyond the framework's built-in ones
// (ClusterName, AddonInstallNamespace, InstallMode, HubKubeConfigSecret).
func (o Options) values(_ *clusterv1.ManagedCluster, mca *addonv1beta1.ManagedClusterAddOn) (addonfactory.Values, error) {
	// JSON is YAML: the templates render the rule sets of hub/api/permissions,
	// the same ones the Hosted agent gives itself, not a second copy.
	rules := map[string][]rbacv1.PolicyRule{
		"ClusterRules":   permissions.AgentManagedCluster(o.features()),
		"NamespaceRules": permissions.AgentOwnNamespace(),
		"HostingRules":   permissions.AgentHostingNamespace(),
		"WorkAgentRules": permissions.WorkAgent(),
	}
	pull := o.ImagePullPolicy
	if pull == "" {
		pull = corev1.PullIfNotPresent
	}
	replicas := o.Replicas
	if replicas < 1 {
		replicas = 1
	}
	values := addonfactory.Values{
		"AgentName":               hostfleetv1alpha1.AddonName,
		"ServiceAccount":          hostfleetv1alpha1.AgentServiceAccount,
		"ManagedRole":             hostfleetv1alpha1.AgentManagedRole,
		"HostingRole":             hostfleetv1alpha1.AgentHostingRole,
		"WorkAgentRole":           hostfleetv1alpha1.WorkAgentRole,
		"Image":                   o.Image,
		"ImagePullPolicy":         string(pull),
		"HubName":                 o.HubName,
		"Replicas":                replicas,
		"AgentNamespace":          AgentNamespace(mca),
		"SharedNamespace":         AgentNamespace(mca) != hostfleetv1alpha1.AgentNamespace,
		"ManagedKubeConfigSecret": ExternalManagedKubeconfig,
		"BMHDriver":               "none",
		"BMCNamespaces":           strings.Join(o.BMCNamespaces, ","),
	}
	if len(o.BMCNamespaces) > 0 {
		values["BMHDriver"] = "annotated"
	}
	for name, set := range rules {
		data, err := json.Marshal(set)
		if err != nil {
			return nil, fmt.Errorf("render %s: %w", name, err)
		}
		values[name] = string(data)
	}
	return values, nil
}

// ValidateImage says what is wrong with an image reference, if anything
// obvious is.
func ValidateImage(image string) error {
	if image == "" || strings.ContainsAny(image, " \t\n") {
		return fmt.Errorf("agent image %q must be a container image reference", image)
	}
	return nil
}
