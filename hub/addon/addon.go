package addon

import (
	"context"
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
	"open-cluster-management.io/addon-framework/pkg/utils"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	addonclient "open-cluster-management.io/api/client/addon/clientset/versioned"
	clusterv1 "open-cluster-management.io/api/cluster/v1"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/internal/permissions"
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
	// PlacedClaims: the hub writes PlacedClaims, and infrastructure agents
	// read their claims from them (--claim-watch=placed) unless a cluster's
	// AddOnDeploymentConfig sets claimWatch.
	PlacedClaims bool
}

// New is the hostfleet-agent add-on, ready for an addon-framework manager.
// kube is the hub client the permission callback writes RBAC with; addons
// reads the AddOnDeploymentConfigs OCM resolves for each cluster (nil: the
// hub's Options alone).
func New(kube kubernetes.Interface, addons addonclient.Interface, o Options) (agent.AgentAddon, error) {
	var getter utils.AddOnDeploymentConfigGetter
	if addons != nil {
		getter = utils.NewAddOnDeploymentConfigGetter(addons)
	}
	r := renderer{options: o, configs: getter}
	a, err := addonfactory.NewAgentAddonFactory(hostfleetv1alpha1.AddonName, manifests.Addon, manifests.AddonDir).
		WithConfigGVRs(utils.AddOnDeploymentConfigGVR).
		WithGetValuesFuncs(r.values).
		WithAgentRegistrationOption(&agent.RegistrationOption{
			Configurations:   agent.KubeClientSignerConfigurations(hostfleetv1alpha1.AddonName, hostfleetv1alpha1.AddonName),
			CSRApproveCheck:  approveCSR,
			PermissionConfig: Permissions(kube),
		}).
		WithAgentHostedModeEnabledOption().
		WithAgentInstallNamespace(r.installNamespace).
		WithAgentHealthProber(&agent.HealthProber{Type: agent.HealthProberTypeLease}).
		BuildTemplateAgentAddon()
	if err != nil {
		return nil, err
	}
	return namespaceRoles{AgentAddon: a, renderer: r}, nil
}

// renderer resolves, for one cluster, the hub's Options and the cluster's
// AddOnDeploymentConfig into what its agent is given.
type renderer struct {
	options Options
	configs utils.AddOnDeploymentConfigGetter
}

// settings reads the cluster's AddOnDeploymentConfig once and resolves
// everything its agent is given, namespaces included.
func (r renderer) settings(cluster *clusterv1.ManagedCluster, mca *addonv1beta1.ManagedClusterAddOn) (settings, error) {
	adc, err := r.options.config(r.configs, mca)
	if err != nil {
		return settings{}, err
	}
	s, err := r.options.resolve(cluster, adc)
	s.Namespace = installNamespace(mca, adc)
	s.AgentNamespace = s.Namespace
	if hosted, _ := Hosted(mca); hosted {
		s.AgentNamespace = hostfleetv1alpha1.AgentNamespace
	}
	return s, err
}

// installNamespace is the framework's callback for where the agent runs.
func (r renderer) installNamespace(_ context.Context, mca *addonv1beta1.ManagedClusterAddOn) (string, error) {
	adc, err := r.options.config(r.configs, mca)
	if err != nil {
		return "", err
	}
	return installNamespace(mca, adc), nil
}

// installNamespace is where the agent runs: the namespace the cluster's
// AddOnDeploymentConfig names (agentInstallNamespace), else InstallNamespace.
// OCM's default for that field, which every config has when it names none,
// does not move the agent.
func installNamespace(mca *addonv1beta1.ManagedClusterAddOn, adc *addonv1beta1.AddOnDeploymentConfig) string {
	if adc != nil && adc.Spec.AgentInstallNamespace != "" && adc.Spec.AgentInstallNamespace != addonfactory.AddonDefaultInstallNamespace {
		return adc.Spec.AgentInstallNamespace
	}
	return InstallNamespace(mca)
}

// namespaceRoles adds to the templates' objects, in Default mode, the
// agent's Role and RoleBinding in each namespace where it reads secrets:
// BMC credentials where its driver drives hosts, data secrets where it
// serves local claims (permissions.AgentNamespaceGrants; their number
// varies: one template makes one object). In Hosted mode the agent makes
// them itself, with the external managed kubeconfig, as it makes its other
// rights.
type namespaceRoles struct {
	agent.AgentAddon
	renderer
}

func (n namespaceRoles) Manifests(ctx context.Context, cluster *clusterv1.ManagedCluster, mca *addonv1beta1.ManagedClusterAddOn) ([]runtime.Object, error) {
	objs, err := n.AgentAddon.Manifests(ctx, cluster, mca)
	if err != nil {
		return nil, err
	}
	if hosted, _ := Hosted(mca); hosted {
		return objs, nil
	}
	s, err := n.settings(cluster, mca)
	if err != nil {
		return nil, err
	}
	for _, g := range s.namespaceGrants() {
		meta := metav1.ObjectMeta{Name: g.Role, Namespace: g.Namespace,
			Annotations: map[string]string{addonv1beta1.HostedManifestLocationAnnotationKey: addonv1beta1.HostedManifestLocationManagedValue}}
		objs = append(objs,
			&rbacv1.Role{TypeMeta: metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "Role"},
				ObjectMeta: meta, Rules: g.Rules},
			&rbacv1.RoleBinding{TypeMeta: metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "RoleBinding"},
				ObjectMeta: meta,
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: g.Role},
				Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: hostfleetv1alpha1.AgentServiceAccount,
					Namespace: s.Namespace}}})
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

// AgentServiceAccount is the ServiceAccount the cluster's agent works as on
// its managed cluster: in Default mode the pod's, in the install namespace
// OCM recorded on the ManagedClusterAddOn (status.namespace, which follows an
// AddOnDeploymentConfig's agentInstallNamespace); in Hosted mode the one the
// agent makes for itself in hostfleetv1alpha1.AgentNamespace. False while
// OCM has not recorded the namespace yet.
func AgentServiceAccount(mca *addonv1beta1.ManagedClusterAddOn) (rbacv1.Subject, bool) {
	ns := mca.Status.Namespace
	if hosted, _ := Hosted(mca); hosted {
		ns = hostfleetv1alpha1.AgentNamespace
	}
	return rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: hostfleetv1alpha1.AgentServiceAccount}, ns != ""
}

// values are the template values beyond the framework's built-in ones
// (ClusterName, AddonInstallNamespace, InstallMode, HubKubeConfigSecret).
// Lists and objects are JSON, which is YAML: the templates render the rule
// sets of internal/permissions, the same ones the Hosted agent gives itself,
// not a second copy.
func (r renderer) values(cluster *clusterv1.ManagedCluster, mca *addonv1beta1.ManagedClusterAddOn) (addonfactory.Values, error) {
	s, err := r.settings(cluster, mca)
	if err != nil {
		return nil, err
	}
	f := s.features()
	pull := s.ImagePullPolicy
	if pull == "" {
		pull = corev1.PullIfNotPresent
	}
	replicas := s.Replicas
	if replicas < 1 {
		replicas = 1
	}
	args, bmhDriver := s.agentArgs()
	values := addonfactory.Values{
		"AgentName":               hostfleetv1alpha1.AddonName,
		"ContainerName":           AgentContainer,
		"ServiceAccount":          hostfleetv1alpha1.AgentServiceAccount,
		"ManagedRole":             hostfleetv1alpha1.AgentManagedRole,
		"HostingRole":             hostfleetv1alpha1.AgentHostingRole,
		"WorkAgentRole":           hostfleetv1alpha1.WorkAgentRole,
		"Image":                   s.Image,
		"ImagePullPolicy":         string(pull),
		"HubName":                 s.HubName,
		"Replicas":                replicas,
		"AgentNamespace":          s.AgentNamespace,
		"SharedNamespace":         s.AgentNamespace != hostfleetv1alpha1.AgentNamespace,
		"ManagedKubeConfigSecret": ExternalManagedKubeconfig,
		"BMHDriver":               bmhDriver,
	}
	// Lists the templates range over: one JSON (so YAML-safe) item each.
	for name, items := range map[string][]any{"ExtraArgs": anys(args), "Env": anys(s.agentEnv())} {
		var out []string
		for _, item := range items {
			v, err := jsonValue(item)
			if err != nil {
				return nil, fmt.Errorf("render %s: %w", name, err)
			}
			out = append(out, v)
		}
		if len(out) > 0 {
			values[name] = out
		}
	}
	for name, v := range map[string]any{
		"ClusterRules":   permissions.AgentManagedClusterDefault(f),
		"NamespaceRules": permissions.AgentOwnNamespace(),
		"HostingRules":   permissions.AgentHostingNamespace(),
		"WorkAgentRules": permissions.WorkAgent(),
		"NodeSelector":   s.NodeSelector,
		"Tolerations":    s.Tolerations,
		"Resources":      s.Resources,
	} {
		if v, err := jsonValue(v); err != nil {
			return nil, fmt.Errorf("render %s: %w", name, err)
		} else if v != "null" && v != "[]" && v != "{}" {
			values[name] = v
		}
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
