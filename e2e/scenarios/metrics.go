package scenarios

import (
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"time"

	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// agentMetrics: the agent's metrics, on its pod's port 8080, answer over
// HTTPS a caller that the API server of the cluster the pod runs on (the
// managed cluster in Default mode, the hosting cluster in Hosted mode)
// authenticates and allows to get /metrics, as a Prometheus there would
// scrape them; without a token they answer 401.
func (e *fleet) agentMetrics(plane, namespace string) {
	e.t.Helper()
	g := NewWithT(e.t)
	ctx := context.Background()
	c := e.Client(plane)
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "monitoring"}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "monitoring", Name: "prometheus"}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "monitoring:metrics"},
			Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "monitoring:metrics"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "monitoring:metrics"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "monitoring", Name: "prometheus"}}},
	} {
		g.Expect(client.IgnoreAlreadyExists(c.Create(ctx, o))).To(Succeed())
	}
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}
	g.Expect(c.SubResource("token").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "monitoring", Name: "prometheus"}}, tr)).To(Succeed())

	pods := e.Running(plane, namespace, hostfleetv1alpha1.AddonName)
	g.Expect(pods).NotTo(BeEmpty())
	addr, stop, err := e.PodAddress(plane, namespace, pods[0], 8080)
	g.Expect(err).NotTo(HaveOccurred())
	defer stop()
	scrape := func(token string, code int) func(g Gomega) {
		return func(g Gomega) {
			req, err := http.NewRequest(http.MethodGet, "https://"+addr+"/metrics", nil)
			g.Expect(err).NotTo(HaveOccurred())
			if token != "" {
				req.Header.Set("Authorization", "Bearer "+token)
			}
			// The agent's serving certificate is self-signed.
			hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec
			resp, err := hc.Do(req)
			g.Expect(err).NotTo(HaveOccurred())
			defer func() { _ = resp.Body.Close() }()
			body, err := io.ReadAll(resp.Body)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(resp.StatusCode).To(Equal(code), "%s", body)
			if code == http.StatusOK {
				g.Expect(string(body)).To(ContainSubstring("hostfleet_agent_claims"))
			}
		}
	}
	g.Eventually(scrape("", http.StatusUnauthorized)).WithTimeout(30*time.Second).WithPolling(time.Second).Should(Succeed(), "no token")
	g.Eventually(scrape(tr.Status.Token, http.StatusOK)).WithTimeout(30*time.Second).WithPolling(time.Second).Should(Succeed(),
		"a metrics reader of %s, where the agent's pod runs", plane)
	e.t.Logf("the agent's metrics on %s answer %s's metrics readers only", plane, plane)
}
