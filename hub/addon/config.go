package addon

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/klog/v2"
	"open-cluster-management.io/addon-framework/pkg/addonfactory"
	"open-cluster-management.io/addon-framework/pkg/utils"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/internal/permissions"
)

// AgentContainer names the agent's container; an AddOnDeploymentConfig's
// resourceRequirements match it as "deployments:hostfleet-agent:agent".
const AgentContainer = "agent"

// variable is a customized variable an AddOnDeploymentConfig may set for
// the agents of the clusters it applies to.
type variable struct {
	// flag is the agent flag it sets.
	flag string
	// check says what is wrong with a value, if anything.
	check func(string) error
	help  string
}

// Variables are the customized variables the add-on reads from an
// AddOnDeploymentConfig, by name. Any other name is refused, so a typo is
// reported instead of silently ignored.
var Variables = map[string]variable{
	"bmcNamespaces": {flag: "bmc-namespaces", check: namespaces,
		help: "comma-separated namespaces whose hosts the BMC driver drives (turns the driver on, --bmh-driver=annotated)"},
	"bmhDriver":   {flag: "bmh-driver", check: oneOf("annotated", "all", "none"), help: "annotated, all or none"},
	"localClaims": {flag: "local-claims", check: boolean, help: "true: the agent also serves the HostClaims the hub forwards to its cluster"},
	"localClaimNamespaces": {flag: "local-claim-namespaces", check: namespaces,
		help: "with localClaims: comma-separated namespaces whose own HostClaims the agent serves too, reading their secrets there"},
	"bmcWorkers":   {flag: "bmc-workers", check: positive, help: "hosts driven at once"},
	"bmcTimeout":   {flag: "bmc-timeout", check: duration, help: "bound on each BMC call, e.g. 30s"},
	"bmcPoll":      {flag: "bmc-poll", check: duration, help: "how often a settled host's power is read again"},
	"bmcPowerWait": {flag: "bmc-power-wait", check: duration, help: "how long a power command has to land before it is sent again"},
	"bmcSoftPowerOffTimeout": {flag: "bmc-soft-power-off-timeout", check: duration,
		help: "how long a soft power-off has before the host is forced off"},
	"claimWatch": {flag: "claim-watch", check: oneOf("label", "placed"),
		help: "label (a watch woken by every claim of the fleet) or placed (the PlacedClaims of the cluster's namespace; the hub default when it writes them)"},
	"erase": {flag: "erase", check: oneOf("None", "Metadata", "Full"),
		help: "the cluster's erase policy: what every released host erases at least (None, Metadata or Full), whatever tenants ask"},
	"eraseImage":        {flag: "erase-image", check: httpURL, help: "http(s) URL of the erase image the BMC driver boots by Redfish virtual media on released hosts"},
	"erasePXE":          {flag: "erase-pxe", check: boolean, help: "true: IPMI hosts erase by booting once from the network, where the PXE server serves the erase image"},
	"eraseTimeout":      {flag: "erase-timeout", check: duration, help: "how long an erase image has to power the host off"},
	"concurrency":       {flag: "concurrency", check: positive, help: "claims reconciled at once"},
	"orphanGrace":       {flag: "orphan-grace", check: duration, help: "how long a host whose claim is gone stays bound"},
	"inventoryInterval": {flag: "inventory-interval", check: duration, help: "how often the cluster's HostInventory is recomputed"},
	"labelSyncInterval": {flag: "label-sync-interval", check: duration,
		help: "workload clusters: how often every Node's synced labels are compared again (labels edited on a Node are restored within it)"},
}

// VariableNames are the names of Variables, sorted.
func VariableNames() []string {
	names := make([]string, 0, len(Variables))
	for n := range Variables {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// settings are what one cluster's agent is given: the hub's Options, then
// what the AddOnDeploymentConfig OCM resolved for the cluster's
// ManagedClusterAddOn says.
type settings struct {
	Options
	// Role is the agent's: workload on a cluster labelled
	// hostfleet.io/tenant, else infrastructure.
	Role        string
	BMHDriver   string
	LocalClaims bool
	// LocalClaimNamespaces are where the agent serves local claims beside
	// forwarded ones (with LocalClaims).
	LocalClaimNamespaces []string
	Args                 []string
	NodeSelector         map[string]string
	Tolerations          []corev1.Toleration
	Resources            *corev1.ResourceRequirements
	Env                  []corev1.EnvVar
	// Namespace is where the agent runs; AgentNamespace its namespace on
	// the managed cluster (the same in Default mode).
	Namespace, AgentNamespace string
}

// namespaceGrants are the agent's Roles outside its own namespace.
func (s settings) namespaceGrants() []permissions.NamespaceGrant {
	f := s.features()
	var bmc, local []string
	if f.BMCDriver {
		bmc = s.BMCNamespaces
	}
	if f.LocalClaims {
		local = s.LocalClaimNamespaces
	}
	return permissions.AgentNamespaceGrants(bmc, local)
}

func (s settings) features() permissions.Features {
	if s.Role == hostfleetv1alpha1.RoleWorkload {
		return permissions.Features{Workload: true}
	}
	return permissions.Features{BMCDriver: len(s.BMCNamespaces) > 0 && s.BMHDriver != "none", LocalClaims: s.LocalClaims}
}

// resolve overlays an AddOnDeploymentConfig (nil: none) on the hub's
// Options. It says everything wrong with the config at once, naming it.
func (o Options) resolve(cluster *clusterv1.ManagedCluster, adc *addonv1beta1.AddOnDeploymentConfig) (settings, error) {
	s := settings{Options: o, BMHDriver: "none", Role: hostfleetv1alpha1.RoleInfrastructure, Resources: DefaultResources()}
	if cluster != nil && cluster.Labels[hostfleetv1alpha1.LabelTenant] != "" {
		s.Role = hostfleetv1alpha1.RoleWorkload
	}
	s.BMCNamespaces = slices.Clone(o.BMCNamespaces)
	if len(s.BMCNamespaces) > 0 {
		s.BMHDriver = "annotated"
	}
	if adc == nil {
		return s, nil
	}
	var errs []string
	driver := ""
	for _, v := range adc.Spec.CustomizedVariables {
		def, ok := Variables[v.Name]
		if !ok {
			errs = append(errs, fmt.Sprintf("customized variable %q is not one the agent reads (%s)", v.Name, strings.Join(VariableNames(), ", ")))
			continue
		}
		if err := def.check(v.Value); err != nil {
			errs = append(errs, fmt.Sprintf("customized variable %s=%q: %v (%s)", v.Name, v.Value, err, def.help))
			continue
		}
		switch v.Name {
		case "bmcNamespaces":
			s.BMCNamespaces = split(v.Value)
		case "bmhDriver":
			driver = v.Value
		case "localClaims":
			s.LocalClaims, _ = strconv.ParseBool(v.Value)
		case "localClaimNamespaces":
			s.LocalClaimNamespaces = split(v.Value)
		default:
			s.Args = append(s.Args, "--"+def.flag+"="+v.Value)
		}
	}
	switch {
	case driver != "":
		s.BMHDriver = driver
	case len(s.BMCNamespaces) > 0:
		s.BMHDriver = "annotated"
	default:
		s.BMHDriver = "none"
	}
	if len(s.LocalClaimNamespaces) > 0 && !s.LocalClaims {
		errs = append(errs, "customized variable localClaimNamespaces needs localClaims=true: the namespaces are where the agent serves local claims")
	}
	if s.BMHDriver != "none" && len(s.BMCNamespaces) == 0 {
		errs = append(errs, fmt.Sprintf("customized variable bmhDriver=%s needs bmcNamespaces: the agent reads BMC credentials only in the namespaces it drives", s.BMHDriver))
	}
	errs = append(errs, s.deployment(adc)...)
	if len(errs) > 0 {
		return s, fmt.Errorf("AddOnDeploymentConfig %s for cluster %s: %s", klog.KObj(adc), cluster.Name, strings.Join(errs, "; "))
	}
	return s, nil
}

// DefaultResources are the agent container's requests and limits unless an
// AddOnDeploymentConfig names others: room for a cluster of a few thousand
// hosts (the agent caches them), within limits a node enforces.
func DefaultResources() *corev1.ResourceRequirements {
	return &corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("20m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("512Mi")},
	}
}

// deployment overlays the config's node placement, resources, proxy and
// registries on the agent's Deployment; it says what is wrong with them.
func (s *settings) deployment(adc *addonv1beta1.AddOnDeploymentConfig) []string {
	var errs []string
	if np := adc.Spec.NodePlacement; np != nil {
		s.NodeSelector, s.Tolerations = np.NodeSelector, np.Tolerations
	}
	reqs, err := addonfactory.GetRegexResourceRequirements(adc.Spec.ResourceRequirements)
	if err != nil {
		errs = append(errs, fmt.Sprintf("resourceRequirements: %v (containerID is type:name:container, e.g. deployments:%s:%s)", err, hostfleetv1alpha1.AddonName, AgentContainer))
	}
	id := "deployments:" + hostfleetv1alpha1.AddonName + ":" + AgentContainer
	for _, r := range reqs {
		// The last match wins, as OCM documents; each request and limit
		// it names replaces the default's, the others stay.
		if ok, _ := regexp.MatchString(r.ContainerIDRegex, id); ok {
			s.Resources = DefaultResources()
			maps.Copy(s.Resources.Requests, r.ResourcesRaw.Requests)
			maps.Copy(s.Resources.Limits, r.ResourcesRaw.Limits)
		}
	}
	p := adc.Spec.ProxyConfig
	for _, kv := range [][2]string{{"HTTP_PROXY", p.HTTPProxy}, {"HTTPS_PROXY", p.HTTPSProxy}, {"NO_PROXY", p.NoProxy}} {
		if kv[1] != "" {
			s.Env = append(s.Env, corev1.EnvVar{Name: kv[0], Value: kv[1]})
		}
	}
	if len(adc.Spec.Registries) > 0 {
		img, err := addonfactory.ToImageOverrideValuesFunc("Image", s.Image)(*adc)
		if err != nil {
			errs = append(errs, fmt.Sprintf("registries: %v", err))
		} else if v, ok := img["Image"].(string); ok {
			s.Image = v
		}
	}
	return errs
}

// config is the AddOnDeploymentConfig OCM resolved for mca (its
// status.configReferences), or nil when none applies.
func (o Options) config(getter utils.AddOnDeploymentConfigGetter, mca *addonv1beta1.ManagedClusterAddOn) (*addonv1beta1.AddOnDeploymentConfig, error) {
	if getter == nil || mca == nil {
		return nil, nil
	}
	adc, err := utils.GetDesiredAddOnDeploymentConfig(mca, getter)
	if err != nil {
		return nil, fmt.Errorf("AddOnDeploymentConfig of %s: %w", klog.KObj(mca), err)
	}
	return adc, nil
}

func split(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func namespaces(v string) error {
	ns := split(v)
	if len(ns) == 0 {
		return fmt.Errorf("no namespace")
	}
	for _, n := range ns {
		if len(validation.IsDNS1123Label(n)) > 0 {
			return fmt.Errorf("%q is not a namespace name", n)
		}
	}
	return nil
}

func oneOf(values ...string) func(string) error {
	return func(v string) error {
		if !slices.Contains(values, v) {
			return fmt.Errorf("must be one of %s", strings.Join(values, ", "))
		}
		return nil
	}
}

func boolean(v string) error {
	_, err := strconv.ParseBool(v)
	if err != nil {
		return fmt.Errorf("must be true or false")
	}
	return nil
}

func httpURL(v string) error {
	if u, err := url.Parse(v); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("must be an http:// or https:// URL")
	}
	return nil
}

func positive(v string) error {
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return fmt.Errorf("must be a whole number of at least 1")
	}
	return nil
}

func duration(v string) error {
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return fmt.Errorf("must be a positive duration such as 30s or 5m")
	}
	return nil
}

// jsonValue renders v as JSON, which is YAML, for a template.
func jsonValue(v any) (string, error) {
	data, err := json.Marshal(v)
	return string(data), err
}

func anys[T any](in []T) []any {
	out := make([]any, len(in))
	for i, v := range in {
		out[i] = v
	}
	return out
}

// agentArgs are the agent's flags beyond the template's, and its
// --bmh-driver.
func (s settings) agentArgs() (args []string, bmhDriver string) {
	f := s.features()
	args = append(args, s.Args...)
	bmhDriver = s.BMHDriver
	if f.Workload {
		// A workload cluster: Nodes, no host.
		args, bmhDriver = append(args, "--role="+hostfleetv1alpha1.RoleWorkload), "none"
	}
	if f.LocalClaims {
		args = append(args, "--local-claims=true")
		if len(s.LocalClaimNamespaces) > 0 {
			args = append(args, "--local-claim-namespaces="+strings.Join(s.LocalClaimNamespaces, ","))
		}
	}
	if f.BMCDriver {
		args = append(args, "--bmc-namespaces="+strings.Join(s.BMCNamespaces, ","))
	}
	return args, bmhDriver
}

// agentEnv is the agent's environment: the config's (proxies), and with
// PlacedClaims on an infrastructure cluster, EnvClaimWatch=placed (a
// variable, not a flag, so that an agent older than the flag still runs;
// a config's claimWatch, a flag, overrides it).
func (s settings) agentEnv() []corev1.EnvVar {
	env := slices.Clone(s.Env)
	if s.PlacedClaims && !s.features().Workload {
		env = append(env, corev1.EnvVar{Name: hostfleetv1alpha1.EnvClaimWatch, Value: "placed"})
	}
	return env
}
