package controller

import (
	"fmt"
	"maps"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/internal/permissions"
	"github.com/hostfleet/hostfleet/manifests"
	operatorv1alpha1 "github.com/hostfleet/hostfleet/operator/api/v1alpha1"
)

// Names of what the operator makes.
const (
	// DefaultNamespace is where the hub's controllers run in Default mode.
	DefaultNamespace = "hostfleet-system"
	// HubName names the hub's Deployment, ServiceAccount, ClusterRole and
	// ClusterRoleBinding.
	HubName = "hostfleet-hub"
	// HubRole names the hub's ClusterRole and its binding.
	HubRole = "hostfleet:hub"
	// MetricsReaderRole may read the hub's metrics: bind it to whatever
	// scrapes them.
	MetricsReaderRole = "hostfleet:metrics-reader"
)

// Release is what the operator's own release brings: its version and the
// images of the hub and agent built with it.
type Release struct {
	Version    string
	HubImage   string
	AgentImage string
}

// Namespace is where the hub's controllers run: hostfleet-system on the hub
// in Default mode, the namespace named after the HostfleetHub on the hosting
// cluster in Hosted mode.
func Namespace(h *operatorv1alpha1.HostfleetHub) string {
	if h.Spec.DeployOption.Mode == operatorv1alpha1.ModeHosted {
		return h.Name
	}
	return DefaultNamespace
}

func labels(h *operatorv1alpha1.HostfleetHub, rel Release) map[string]string {
	return map[string]string{
		operatorv1alpha1.LabelHub:      h.Name,
		"app.kubernetes.io/name":       HubName,
		"app.kubernetes.io/part-of":    "hostfleet",
		"app.kubernetes.io/managed-by": operatorv1alpha1.FieldManager,
		"app.kubernetes.io/version":    rel.Version,
	}
}

// images are the hub and agent images a HostfleetHub runs.
func images(h *operatorv1alpha1.HostfleetHub, rel Release) (hub, agent string) {
	hub, agent = rel.HubImage, rel.AgentImage
	if h.Spec.Image != "" {
		hub = h.Spec.Image
	}
	if h.Spec.Agent.Image != "" {
		agent = h.Spec.Agent.Image
	}
	return hub, agent
}

// HubObjects are what the hub cluster gets: the CRDs the hub needs, the
// hub's namespace, ServiceAccount and RBAC (permissions.Hub(), exactly), the
// ClusterRoles it binds for tenants and agents (permissions.GrantedClusterRoles),
// the agents' and the hub's FlowSchemas (manifests.FlowControl), and in
// Default mode the hub's Deployment and metrics Service.
func HubObjects(h *operatorv1alpha1.HostfleetHub, rel Release) ([]client.Object, error) {
	l := labels(h, rel)
	crds, err := manifests.HubCRDs()
	if err != nil {
		return nil, err
	}
	var out []client.Object
	for _, crd := range crds {
		crd.Labels = l
		out = append(out, crd)
	}
	ns := hubSideNamespace(h)
	out = append(out,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: l}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: HubName, Labels: l}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: HubRole, Labels: l}, Rules: permissions.Hub()},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: MetricsReaderRole, Labels: l}, Rules: permissions.MetricsReader()},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: HubRole, Labels: l},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: HubRole},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: HubName}}},
	)
	// What the hub grants, by binding (it holds bind on these, not their rights).
	for _, role := range permissions.GrantedClusterRoles() {
		role.Labels = l
		out = append(out, &role)
	}
	// The agents' priority and fairness, and the hub controller's.
	docs, err := manifests.FlowControl()
	if err != nil {
		return nil, err
	}
	flow, err := objects(docs, l)
	if err != nil {
		return nil, err
	}
	out = append(out, flow...)
	if h.Spec.DeployOption.Mode != operatorv1alpha1.ModeHosted {
		out = append(out, Workload(h, rel, "")...)
	}
	return out, nil
}

// HubUser is the user name the hub's controllers have on the hub: the
// admission policies exempt it where the hub acts for everyone.
func HubUser(h *operatorv1alpha1.HostfleetHub) string {
	return "system:serviceaccount:" + hubSideNamespace(h) + ":" + HubName
}

// Policies are the hub's admission policies and cluster-wide bindings, for
// the hub's user. The hub applies the same ones itself when it starts.
func Policies(h *operatorv1alpha1.HostfleetHub) ([]client.Object, error) {
	docs, err := manifests.PoliciesFor(HubUser(h))
	if err != nil {
		return nil, err
	}
	return objects(docs, nil)
}

// objects parses YAML documents, with labels l if any.
func objects(docs [][]byte, l map[string]string) ([]client.Object, error) {
	var out []client.Object
	for _, doc := range docs {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(doc, &u.Object); err != nil {
			return nil, fmt.Errorf("parse manifest: %w", err)
		}
		if l != nil {
			u.SetLabels(l)
		}
		out = append(out, u)
	}
	return out, nil
}

// hubSideNamespace holds the hub's ServiceAccount on the hub cluster: its
// controllers' namespace in Default mode; in Hosted mode, where nothing of
// the hub runs on the hub cluster, DefaultNamespace there too.
func hubSideNamespace(_ *operatorv1alpha1.HostfleetHub) string { return DefaultNamespace }

// Workload is the hub's Deployment and metrics Service (HTTPS on 8443, for
// callers allowed MetricsReaderRole), in Namespace(h).
// kubeconfigSecret, when set (Hosted mode), is the Secret whose "kubeconfig"
// key reaches the hub; empty, the hub uses its in-cluster ServiceAccount.
func Workload(h *operatorv1alpha1.HostfleetHub, rel Release, kubeconfigSecret string) []client.Object {
	l := labels(h, rel)
	ns := Namespace(h)
	hubImage, agentImage := images(h, rel)
	replicas := ptr.Deref(h.Spec.Replicas, 1)
	args := []string{
		"--leader-elect=true",
		// The Lease is on the hub, in the hub's namespace there, in both modes.
		"--leader-election-namespace=" + hubSideNamespace(h),
		"--metrics-bind-address=:8443",
		"--health-probe-bind-address=:8081",
		"--agent-image=" + agentImage,
		"--addon-manager=" + strconv.FormatBool(ptr.Deref(h.Spec.AddonManager, true)),
	}
	if h.Spec.BindDeadline != nil {
		args = append(args, "--bind-deadline="+h.Spec.BindDeadline.Duration.String())
	}
	if len(h.Spec.Agent.BMCNamespaces) > 0 {
		args = append(args, "--agent-bmc-namespaces="+strings.Join(h.Spec.Agent.BMCNamespaces, ","))
	}
	selector := map[string]string{"app.kubernetes.io/name": HubName, operatorv1alpha1.LabelHub: h.Name}
	pod := corev1.PodSpec{
		SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
		Containers: []corev1.Container{{
			Name:  "hub",
			Image: hubImage,
			Args:  args,
			Env: []corev1.EnvVar{{Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{
				FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}},
			Ports: []corev1.ContainerPort{{Name: "metrics", ContainerPort: 8443, Protocol: corev1.ProtocolTCP},
				{Name: "health", ContainerPort: 8081, Protocol: corev1.ProtocolTCP}},
			LivenessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
				Path: "/healthz", Port: intstr.FromString("health")}}},
			ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
				Path: "/readyz", Port: intstr.FromString("health")}}},
			SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true),
				Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
			Resources: hubResources(h),
		}},
	}
	var webhook []client.Object
	if kubeconfigSecret == "" {
		pod.ServiceAccountName = HubName
		webhook = webhookObjects(&pod, ns, l, selector)
	} else {
		pod.AutomountServiceAccountToken = ptr.To(false)
		pod.Containers[0].Args = append(pod.Containers[0].Args, "--kubeconfig=/var/run/hub/kubeconfig")
		pod.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "hub-kubeconfig", MountPath: "/var/run/hub", ReadOnly: true}}
		pod.Volumes = []corev1.Volume{{Name: "hub-kubeconfig", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: kubeconfigSecret}}}}
	}
	return append([]client.Object{
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: HubName, Labels: l},
			Spec: appsv1.DeploymentSpec{
				Replicas: &replicas,
				Selector: &metav1.LabelSelector{MatchLabels: selector},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: l}, Spec: pod},
			}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: HubName + "-metrics", Labels: l},
			Spec: corev1.ServiceSpec{Selector: selector, Ports: []corev1.ServicePort{{Name: "metrics", Port: 8443,
				TargetPort: intstr.FromString("metrics"), Protocol: corev1.ProtocolTCP}}}},
	}, webhook...)
}

// webhookObjects turn on the hub's validating webhook (Default mode only: in
// Hosted mode the hub's API server cannot reach the hub's pods): the pod
// serves it on 9443 behind Service hostfleet-hub-webhook, and the Secret
// the hub keeps its certificate in is made empty here, so that the hub
// needs no right to create secrets.
func webhookObjects(pod *corev1.PodSpec, ns string, l, selector map[string]string) []client.Object {
	name := HubName + "-webhook"
	c := &pod.Containers[0]
	c.Args = append(c.Args, "--webhook-bind-address=:9443", "--webhook-service="+ns+"/"+name)
	c.Ports = append(c.Ports, corev1.ContainerPort{Name: "webhook", ContainerPort: 9443, Protocol: corev1.ProtocolTCP})
	return []client.Object{
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: l},
			Spec: corev1.ServiceSpec{Selector: selector, Ports: []corev1.ServicePort{{Name: "webhook", Port: 443,
				TargetPort: intstr.FromString("webhook"), Protocol: corev1.ProtocolTCP}}}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: hostfleetv1alpha1.HubWebhookSecret, Labels: l}},
	}
}

// hubResources are the hub container's requests and limits: the defaults,
// each one the HostfleetHub names replaced.
func hubResources(h *operatorv1alpha1.HostfleetHub) corev1.ResourceRequirements {
	r := corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("1Gi")},
	}
	if o := h.Spec.Resources; o != nil {
		maps.Copy(r.Requests, o.Requests)
		maps.Copy(r.Limits, o.Limits)
	}
	return r
}
