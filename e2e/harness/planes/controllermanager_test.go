package planes_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	authv1 "k8s.io/api/authentication/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/e2e/harness/planes"
)

// TestControllerManager: with kube-controller-manager, a plane garbage
// collects owned objects, deletes namespaces to the end, gives new
// namespaces their default ServiceAccount, and signs approved client CSRs
// with a certificate the API server accepts.
func TestControllerManager(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := planes.ForTest(t, "solo")
	f.StartControllerManagerForTest(t, "solo")
	c := f.Plane("solo").Client

	g.Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "gc"}})).To(Succeed())
	g.Eventually(func() error {
		return c.Get(ctx, client.ObjectKey{Namespace: "gc", Name: "default"}, &corev1.ServiceAccount{})
	}).WithTimeout(30*time.Second).Should(Succeed(), "the default ServiceAccount")

	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "gc", Name: "owner"}}
	g.Expect(c.Create(ctx, owner)).To(Succeed())
	owned := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "gc", Name: "owned",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID, BlockOwnerDeletion: ptr.To(true)}}}}
	g.Expect(c.Create(ctx, owned)).To(Succeed())
	g.Expect(c.Delete(ctx, owner)).To(Succeed())
	g.Eventually(func() error { return c.Get(ctx, client.ObjectKeyFromObject(owned), owned) }).WithTimeout(30*time.Second).
		Should(Satisfy(apierrors.IsNotFound), "garbage collected")

	t.Log("an approved client CSR is signed, and the certificate authenticates")
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	g.Expect(err).NotTo(HaveOccurred())
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject: pkix.Name{CommonName: "agent-by-csr", Organization: []string{"csr-group"}}}, key)
	g.Expect(err).NotTo(HaveOccurred())
	cs := kubernetes.NewForConfigOrDie(f.Plane("solo").Config)
	csr, err := cs.CertificatesV1().CertificateSigningRequests().Create(ctx, &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: "agent"},
		Spec: certificatesv1.CertificateSigningRequestSpec{Request: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
			SignerName: certificatesv1.KubeAPIServerClientSignerName,
			Usages:     []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}}}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
		Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "Test", Message: "approved by the test"})
	_, err = cs.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, "agent", csr, metav1.UpdateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func(g Gomega) {
		csr, err = cs.CertificatesV1().CertificateSigningRequests().Get(ctx, "agent", metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(csr.Status.Certificate).NotTo(BeEmpty())
	}).WithTimeout(30 * time.Second).Should(Succeed())
	keyDER, err := x509.MarshalECPrivateKey(key)
	g.Expect(err).NotTo(HaveOccurred())
	agentCfg := rest.AnonymousClientConfig(f.Plane("solo").Config)
	agentCfg.CertData = csr.Status.Certificate
	agentCfg.KeyData = pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
	review, err := kubernetes.NewForConfigOrDie(agentCfg).AuthenticationV1().SelfSubjectReviews().Create(ctx, &authv1.SelfSubjectReview{}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(review.Status.UserInfo.Username).To(Equal("agent-by-csr"))
	g.Expect(review.Status.UserInfo.Groups).To(ContainElement("csr-group"))

	ns := &corev1.Namespace{}
	g.Expect(c.Get(ctx, client.ObjectKey{Name: "gc"}, ns)).To(Succeed())
	g.Expect(c.Delete(ctx, ns)).To(Succeed())
	g.Eventually(func() error { return c.Get(ctx, client.ObjectKey{Name: "gc"}, ns) }).WithTimeout(60*time.Second).
		Should(Satisfy(apierrors.IsNotFound), "the namespace is deleted to the end")
}
