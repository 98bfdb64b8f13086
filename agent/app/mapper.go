package app

import (
	"net/http"
	"strings"
	"sync"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// Mapped is a kind the agent maps to its resource without asking the API
// server.
type Mapped struct {
	Kind     schema.GroupVersionKind
	Resource string // plural
	Cluster  bool   // cluster-scoped
}

// MappedKinds are the kinds the agent reads and writes on the hub and the
// managed cluster. A controller-runtime client otherwise learns them from
// the API server's discovery, which returns every resource the server
// serves: twice per agent (hub, managed cluster), about 0.7 MB each on a
// hub with OCM's and Hostfleet's APIs, more on one serving more.
var MappedKinds = []Mapped{
	{Kind: metal3api.GroupVersion.WithKind("HostClaim"), Resource: "hostclaims"},
	{Kind: metal3api.GroupVersion.WithKind("BareMetalHost"), Resource: "baremetalhosts"},
	{Kind: metal3api.GroupVersion.WithKind("HardwareData"), Resource: "hardwaredata"},
	{Kind: metal3api.GroupVersion.WithKind("HostDeployPolicy"), Resource: "hostdeploypolicies"},
	{Kind: metal3api.GroupVersion.WithKind("HostFirmwareComponents"), Resource: "hostfirmwarecomponents"},
	{Kind: metal3api.GroupVersion.WithKind("HostFirmwareSettings"), Resource: "hostfirmwaresettings"},
	{Kind: hostfleetv1alpha1.GroupVersion.WithKind("ClusterTenancy"), Resource: "clustertenancies"},
	{Kind: hostfleetv1alpha1.GroupVersion.WithKind("HostInventory"), Resource: "hostinventories"},
	{Kind: hostfleetv1alpha1.GroupVersion.WithKind("HostUsage"), Resource: "hostusages"},
	{Kind: hostfleetv1alpha1.GroupVersion.WithKind("HostMaintenance"), Resource: "hostmaintenances"},
	{Kind: hostfleetv1alpha1.GroupVersion.WithKind("PlacedClaim"), Resource: "placedclaims"},
	{Kind: hostfleetv1alpha1.GroupVersion.WithKind("Tenant"), Resource: "tenants", Cluster: true},
	{Kind: corev1.SchemeGroupVersion.WithKind("Secret"), Resource: "secrets"},
	{Kind: corev1.SchemeGroupVersion.WithKind("Namespace"), Resource: "namespaces", Cluster: true},
	{Kind: corev1.SchemeGroupVersion.WithKind("Node"), Resource: "nodes", Cluster: true},
	{Kind: coordinationv1.SchemeGroupVersion.WithKind("Lease"), Resource: "leases"},
}

// staticMapper maps MappedKinds itself and asks the API server, through
// controller-runtime's discovery mapper made on first need, only about
// another kind.
type staticMapper struct {
	static  meta.RESTMapper
	dynamic func() (meta.RESTMapper, error)
}

// NewRESTMapper is the agent's mapper provider (ctrl.Options.MapperProvider):
// MappedKinds without a request, any other kind through discovery.
func NewRESTMapper(cfg *rest.Config, hc *http.Client) (meta.RESTMapper, error) {
	static := meta.NewDefaultRESTMapper(nil)
	for _, m := range MappedKinds {
		scope := meta.RESTScopeNamespace
		if m.Cluster {
			scope = meta.RESTScopeRoot
		}
		gv := m.Kind.GroupVersion()
		static.AddSpecific(m.Kind, gv.WithResource(m.Resource), gv.WithResource(strings.ToLower(m.Kind.Kind)), scope)
		// As discovery's mapper: controller-runtime's caches ask the scope
		// of a list by its kind.
		static.Add(gv.WithKind(m.Kind.Kind+"List"), scope)
	}
	return &staticMapper{static: static, dynamic: sync.OnceValues(func() (meta.RESTMapper, error) {
		return apiutil.NewDynamicRESTMapper(cfg, hc)
	})}, nil
}

// either answers from the static mapper, or from the dynamic one when the
// static mapper knows no such kind or resource.
func either[T any](m *staticMapper, ask func(meta.RESTMapper) (T, error)) (T, error) {
	v, err := ask(m.static)
	if err == nil || !meta.IsNoMatchError(err) {
		return v, err
	}
	dynamic, err := m.dynamic()
	if err != nil {
		var zero T
		return zero, err
	}
	return ask(dynamic)
}

func (m *staticMapper) KindFor(r schema.GroupVersionResource) (schema.GroupVersionKind, error) {
	return either(m, func(x meta.RESTMapper) (schema.GroupVersionKind, error) { return x.KindFor(r) })
}

func (m *staticMapper) KindsFor(r schema.GroupVersionResource) ([]schema.GroupVersionKind, error) {
	return either(m, func(x meta.RESTMapper) ([]schema.GroupVersionKind, error) { return x.KindsFor(r) })
}

func (m *staticMapper) ResourceFor(r schema.GroupVersionResource) (schema.GroupVersionResource, error) {
	return either(m, func(x meta.RESTMapper) (schema.GroupVersionResource, error) { return x.ResourceFor(r) })
}

func (m *staticMapper) ResourcesFor(r schema.GroupVersionResource) ([]schema.GroupVersionResource, error) {
	return either(m, func(x meta.RESTMapper) ([]schema.GroupVersionResource, error) { return x.ResourcesFor(r) })
}

func (m *staticMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	return either(m, func(x meta.RESTMapper) (*meta.RESTMapping, error) { return x.RESTMapping(gk, versions...) })
}

func (m *staticMapper) RESTMappings(gk schema.GroupKind, versions ...string) ([]*meta.RESTMapping, error) {
	return either(m, func(x meta.RESTMapper) ([]*meta.RESTMapping, error) { return x.RESTMappings(gk, versions...) })
}

func (m *staticMapper) ResourceSingularizer(resource string) (string, error) {
	return either(m, func(x meta.RESTMapper) (string, error) { return x.ResourceSingularizer(resource) })
}

// newClient is a direct client with the agent's scheme and mapper.
func newClient(cfg *rest.Config) (client.Client, error) {
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	mapper, err := NewRESTMapper(cfg, hc)
	if err != nil {
		return nil, err
	}
	return client.New(cfg, client.Options{Scheme: Scheme(), HTTPClient: hc, Mapper: mapper})
}
