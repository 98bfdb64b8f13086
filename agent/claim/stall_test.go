package claim_test

import (
	"context"
	"maps"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// requestCounter counts an agent's hub requests: lists (a GET that is not
// a watch, or a watch that begins with every object) and watches, by the
// last element of their path (a resource, or an object's name); writes by
// method and resource ("PATCH hostclaims/status").
type requestCounter struct {
	mu                     sync.Mutex
	lists, watches, writes map[string]int
}

func (rc *requestCounter) wrap(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	// A dialer of its own: a transport of its own, made after the test
	// set the HTTP/2 health check's timeouts, not client-go's cached one.
	cfg.Dial = (&net.Dialer{}).DialContext
	rc.lists, rc.watches, rc.writes = map[string]int{}, map[string]int{}, map[string]int{}
	cfg.Wrap(func(next http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
			if r.Method != http.MethodGet {
				rc.mu.Lock()
				rc.writes[r.Method+" "+writtenResource(r.URL.Path)]++
				rc.mu.Unlock()
			}
			if r.Method == http.MethodGet {
				parts := strings.Split(r.URL.Path, "/")
				resource := parts[len(parts)-1]
				q := r.URL.Query()
				rc.mu.Lock()
				if q.Get("watch") == "true" && q.Get("sendInitialEvents") != "true" {
					rc.watches[resource]++
				} else {
					rc.lists[resource]++
				}
				rc.mu.Unlock()
			}
			return next.RoundTrip(r)
		})
	})
	return cfg
}

func (rc *requestCounter) counts() (lists, watches map[string]int) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return maps.Clone(rc.lists), maps.Clone(rc.watches)
}

// written is how many writes of this method and resource the agent made.
func (rc *requestCounter) written(key string) int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.writes[key]
}

// writtenResource is a namespaced write's resource, and its subresource
// ("hostclaims/status"); the path itself for another.
func writtenResource(path string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	i := slices.Index(parts, "namespaces")
	switch {
	case i < 0 || len(parts) < i+3:
		return path
	case len(parts) > i+4:
		return parts[i+2] + "/" + parts[i+4]
	}
	return parts[i+2]
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestHubStall: the hub API server stops answering (SIGSTOP) long enough
// for the agent's HTTP/2 health checks to drop its connections (2 s + 2 s
// here; 30 s + 15 s by default), then runs again. The agent watches again
// from the versions it had seen: it lists nothing again, and a claim made
// after the stall binds.
func TestHubStall(t *testing.T) {
	t.Setenv("HTTP2_READ_IDLE_TIMEOUT_SECONDS", "2")
	t.Setenv("HTTP2_PING_TIMEOUT_SECONDS", "2")
	g := NewWithT(t)
	ctx := context.Background()
	s := newScene(t, g, false, "h0", "h1")
	rc := &requestCounter{}
	// The managed client also gets a transport of its own: one cached with
	// these timeouts would outlive the test.
	managed := rest.CopyConfig(s.f.Plane("infra-1").Config)
	managed.Dial = (&net.Dialer{}).DialContext
	servesTenantA(t, s.hub, "infra-1")
	startAgentWith(t, rc.wrap(s.f.Plane("hub").Config), managed, "infra-1", 2)

	bound := func(c *metal3api.HostClaim) {
		g.Eventually(func(g Gomega) {
			g.Expect(s.hub.Get(ctx, client.ObjectKeyFromObject(c), c)).To(Succeed())
			g.Expect(associated(c)).NotTo(BeNil())
			g.Expect(associated(c).Status).To(Equal(metav1.ConditionTrue))
		}).WithTimeout(60*time.Second).WithPolling(200*time.Millisecond).Should(Succeed(), "claim %s bound", c.Name)
	}
	// Once its HostInventory is written, every hub informer of the agent
	// has listed.
	before := hubClaim("before", "infra-1", nil)
	mustCreate(t, s.hub, before)
	bound(before)
	g.Eventually(func() error {
		return s.hub.Get(ctx, client.ObjectKey{Namespace: "infra-1", Name: "infra-1"}, &hostfleetv1alpha1.HostInventory{})
	}).WithTimeout(60 * time.Second).Should(Succeed())
	lists, watches := rc.counts()
	t.Logf("before the stall: lists %v, watches %v", lists, watches)

	hubPlane := s.f.Plane("hub")
	g.Expect(hubPlane.PauseAPIServer()).To(Succeed())
	t.Cleanup(func() { _ = hubPlane.ResumeAPIServer() })
	g.Eventually(func() int {
		l, w := rc.counts()
		return l["hostclaims"] + w["hostclaims"]
	}).WithTimeout(30*time.Second).WithPolling(100*time.Millisecond).Should(BeNumerically(">", lists["hostclaims"]+watches["hostclaims"]),
		"the agent's client dropped its connection and asked again")
	g.Expect(hubPlane.ResumeAPIServer()).To(Succeed())

	after := hubClaim("after", "infra-1", nil)
	mustCreate(t, s.hub, after)
	bound(after)
	listsAfter, watchesAfter := rc.counts()
	t.Logf("after the stall: lists %v, watches %v", listsAfter, watchesAfter)
	for _, resource := range []string{"hostclaims", "namespaces", "clustertenancies"} {
		g.Expect(listsAfter[resource]).To(Equal(lists[resource]), "%s not listed again", resource)
	}
}
