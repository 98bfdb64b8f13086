package main_test

import (
	"net/http"
	"sync/atomic"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/hostfleet/hostfleet/agent/app"
	"github.com/hostfleet/hostfleet/e2e/harness/planes"
)

// countingTransport counts the requests sent through it.
type countingTransport struct {
	next http.RoundTripper
	n    atomic.Int32
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.next.RoundTrip(r)
}

// TestMapperAgreesWithDiscovery: the agent maps each of its MappedKinds,
// and its list kind, without a request, to what the API server that serves
// it says (resource, scope); every kind is served by the hub or the managed cluster; and
// another kind is still mapped, through discovery.
func TestMapperAgreesWithDiscovery(t *testing.T) {
	g := NewWithT(t)
	f := planes.ForTest(t, "hub", "infra-1")
	served := map[string]bool{}
	for _, name := range []string{"hub", "infra-1"} {
		cfg := f.Plane(name).Config
		groups, err := restmapper.GetAPIGroupResources(discovery.NewDiscoveryClientForConfigOrDie(cfg))
		g.Expect(err).NotTo(HaveOccurred())
		truth := restmapper.NewDiscoveryRESTMapper(groups)
		rt, err := rest.TransportFor(cfg)
		g.Expect(err).NotTo(HaveOccurred())
		counted := &countingTransport{next: rt}
		mapper, err := app.NewRESTMapper(cfg, &http.Client{Transport: counted})
		g.Expect(err).NotTo(HaveOccurred())
		for _, m := range app.MappedKinds {
			want, err := truth.RESTMapping(m.Kind.GroupKind(), m.Kind.Version)
			if meta.IsNoMatchError(err) {
				continue // served by the other cluster
			}
			g.Expect(err).NotTo(HaveOccurred())
			served[m.Kind.String()] = true
			got, err := mapper.RESTMapping(m.Kind.GroupKind(), m.Kind.Version)
			g.Expect(err).NotTo(HaveOccurred(), "%s on %s", m.Kind, name)
			g.Expect(got.Resource).To(Equal(want.Resource), "%s on %s", m.Kind, name)
			g.Expect(got.Scope.Name()).To(Equal(want.Scope.Name()), "%s on %s", m.Kind, name)
			list := m.Kind.GroupKind()
			list.Kind += "List"
			want, err = truth.RESTMapping(list, m.Kind.Version)
			g.Expect(err).NotTo(HaveOccurred())
			got, err = mapper.RESTMapping(list, m.Kind.Version)
			g.Expect(err).NotTo(HaveOccurred(), "%s on %s", list, name)
			g.Expect(got.Scope.Name()).To(Equal(want.Scope.Name()), "%s on %s", list, name)
		}
		g.Expect(counted.n.Load()).To(BeZero(), "requests to map the agent's own kinds on %s", name)
		cm := corev1.SchemeGroupVersion.WithKind("ConfigMap")
		got, err := mapper.RESTMapping(cm.GroupKind(), cm.Version)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got.Resource.Resource).To(Equal("configmaps"))
		g.Expect(counted.n.Load()).NotTo(BeZero(), "another kind is mapped through discovery")
	}
	for _, m := range app.MappedKinds {
		g.Expect(served).To(HaveKey(m.Kind.String()), "no cluster serves %s", m.Kind)
	}
}
