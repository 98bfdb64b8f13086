package addon_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"net"
	"testing"

	. "github.com/onsi/gomega"
	certificatesv1 "k8s.io/api/certificates/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"

	"github.com/hostfleet/hostfleet/hub/addon"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// request is a PEM certificate request for tmpl.
func request(t *testing.T, tmpl x509.CertificateRequest) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &tmpl, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

func TestCheckCSR(t *testing.T) {
	user := hostfleetv1alpha1.AgentHubUser("c1")
	orgs := []string{hostfleetv1alpha1.AgentHubGroup("c1"), hostfleetv1alpha1.AgentSharedGroup}
	good := x509.CertificateRequest{Subject: pkix.Name{CommonName: user, Organization: orgs}}
	with := func(f func(*x509.CertificateRequest)) x509.CertificateRequest {
		r := good
		r.Subject.Organization = append([]string(nil), orgs...)
		f(&r)
		return r
	}
	type spec = certificatesv1.CertificateSigningRequestSpec
	base := func(req x509.CertificateRequest, f func(*spec)) *certificatesv1.CertificateSigningRequest {
		s := spec{
			Request:    request(t, req),
			SignerName: certificatesv1.KubeAPIServerClientSignerName,
			Usages:     []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageClientAuth},
			Username:   "system:open-cluster-management:c1:4xkq2",
			Groups:     []string{"system:open-cluster-management:c1", "system:open-cluster-management:managed-clusters", "system:authenticated"},
		}
		if f != nil {
			f(&s)
		}
		return &certificatesv1.CertificateSigningRequest{Spec: s}
	}
	for _, tc := range []struct {
		name string
		csr  *certificatesv1.CertificateSigningRequest
		want string // "" approves
	}{
		{"the registration agent asks for its agent", base(good, nil), ""},
		{"as OCM's registration agent does: with the add-on's DNS name", base(with(func(r *x509.CertificateRequest) {
			r.DNSNames = []string{"hostfleet-agent.addon.open-cluster-management.io"}
		}), nil), ""},
		{"another add-on's DNS name", base(with(func(r *x509.CertificateRequest) {
			r.DNSNames = []string{"other.addon.open-cluster-management.io"}
		}), nil), "names hosts"},
		{"a second DNS name", base(with(func(r *x509.CertificateRequest) {
			r.DNSNames = []string{"hostfleet-agent.addon.open-cluster-management.io", "kubernetes.default"}
		}), nil), "names hosts"},
		{"digital signature and client auth only", base(good, func(s *spec) {
			s.Usages = []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}
		}), ""},
		{"another cluster's registration agent whose name starts the same (c10)", base(good, func(s *spec) {
			s.Username, s.Groups = "system:open-cluster-management:c10:abc", []string{"system:open-cluster-management:c10"}
		}), "is not cluster c1's registration agent"},
		{"a prefix-only requester", base(good, func(s *spec) { s.Username = "system:open-cluster-management:c1" }), "is not cluster c1's registration agent"},
		{"a requester one level deeper", base(good, func(s *spec) { s.Username = "system:open-cluster-management:c1:a:b" }), "is not cluster c1's registration agent"},
		{"an administrator", base(good, func(s *spec) { s.Username, s.Groups = "system:admin", []string{"system:masters"} }), "is not cluster c1's registration agent"},
		{"the right name without the cluster's group", base(good, func(s *spec) { s.Groups = []string{"system:authenticated"} }), "is not in group system:open-cluster-management:c1"},
		{"another signer", base(good, func(s *spec) { s.SignerName = "example.com/signer" }), "signer"},
		{"a kubelet signer", base(good, func(s *spec) { s.SignerName = certificatesv1.KubeAPIServerClientKubeletSignerName }), "signer"},
		{"server auth", base(good, func(s *spec) { s.Usages = append(s.Usages, certificatesv1.UsageServerAuth) }), `usage "server auth"`},
		{"no client auth", base(good, func(s *spec) { s.Usages = []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature} }), "lack client auth"},
		{"another user's common name", base(with(func(r *x509.CertificateRequest) { r.Subject.CommonName = "system:admin" }), nil), "common name"},
		{"another cluster's agent name", base(with(func(r *x509.CertificateRequest) { r.Subject.CommonName = hostfleetv1alpha1.AgentHubUser("c2") }), nil), "common name"},
		{"another cluster's agent group added", base(with(func(r *x509.CertificateRequest) {
			r.Subject.Organization = append(r.Subject.Organization, hostfleetv1alpha1.AgentHubGroup("c2"))
		}), nil), "are not exactly"},
		{"another cluster's agent group instead", base(with(func(r *x509.CertificateRequest) {
			r.Subject.Organization = []string{hostfleetv1alpha1.AgentHubGroup("c2"), hostfleetv1alpha1.AgentSharedGroup}
		}), nil), "are not exactly"},
		{"system:masters added", base(with(func(r *x509.CertificateRequest) {
			r.Subject.Organization = append(r.Subject.Organization, "system:masters")
		}), nil), "are not exactly"},
		{"system:authenticated added", base(with(func(r *x509.CertificateRequest) {
			r.Subject.Organization = append(r.Subject.Organization, "system:authenticated")
		}), nil), "are not exactly"},
		{"the cluster's group missing", base(with(func(r *x509.CertificateRequest) {
			r.Subject.Organization = []string{hostfleetv1alpha1.AgentSharedGroup}
		}), nil), "are not exactly"},
		{"no organization", base(with(func(r *x509.CertificateRequest) { r.Subject.Organization = nil }), nil), "are not exactly"},
		{"a DNS name", base(with(func(r *x509.CertificateRequest) { r.DNSNames = []string{"kubernetes.default"} }), nil), "names hosts"},
		{"an IP address", base(with(func(r *x509.CertificateRequest) { r.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1)} }), nil), "names hosts"},
		{"an organizational unit", base(with(func(r *x509.CertificateRequest) { r.Subject.OrganizationalUnit = []string{"x"} }), nil), "subject has fields"},
		{"not PEM", base(good, func(s *spec) { s.Request = []byte("hello") }), "not a PEM CERTIFICATE REQUEST"},
		{"a PEM certificate, not a request", base(good, func(s *spec) {
			s.Request = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte{1}})
		}), "not a PEM CERTIFICATE REQUEST"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			err := addon.CheckCSR("c1", tc.csr)
			if tc.want == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(err).To(MatchError(ContainSubstring(tc.want)))
		})
	}
}

func TestSubjects(t *testing.T) {
	reg := func(driver, user string, groups ...string) *addonv1beta1.ManagedClusterAddOn {
		return &addonv1beta1.ManagedClusterAddOn{Status: addonv1beta1.ManagedClusterAddOnStatus{Registrations: []addonv1beta1.RegistrationConfig{{
			Type: addonv1beta1.KubeClient, KubeClient: &addonv1beta1.KubeClientConfig{Driver: driver,
				Subject: addonv1beta1.KubeClientSubject{BaseSubject: addonv1beta1.BaseSubject{User: user, Groups: groups}}}}}}}
	}
	userSubject := func(n string) rbacv1.Subject {
		return rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: n}
	}
	for _, tc := range []struct {
		name string
		mca  *addonv1beta1.ManagedClusterAddOn
		want []rbacv1.Subject
		err  string
	}{
		{"not registered yet", &addonv1beta1.ManagedClusterAddOn{}, nil, ""},
		{"CSR driver: the user and the cluster's group, not the shared group",
			reg("csr", hostfleetv1alpha1.AgentHubUser("c1"), hostfleetv1alpha1.AgentHubGroup("c1"), hostfleetv1alpha1.AgentSharedGroup),
			[]rbacv1.Subject{userSubject(hostfleetv1alpha1.AgentHubUser("c1")),
				{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: hostfleetv1alpha1.AgentHubGroup("c1")}}, ""},
		{"token driver: the cluster's ServiceAccount", reg("token", hostfleetv1alpha1.AgentTokenUser("c1")),
			[]rbacv1.Subject{userSubject(hostfleetv1alpha1.AgentTokenUser("c1"))}, ""},
		{"another cluster's ServiceAccount", reg("token", hostfleetv1alpha1.AgentTokenUser("c2")), nil, "may be only"},
		{"all ServiceAccounts", reg("token", "", "system:serviceaccounts"), nil, "may be only"},
		{"a plain user", reg("token", "alice"), nil, "may be only"},
		{"the token user with a group", reg("token", hostfleetv1alpha1.AgentTokenUser("c1"), "system:serviceaccounts"), nil, "may be only"},
		{"another cluster's agent", reg("csr", hostfleetv1alpha1.AgentHubUser("c2"), hostfleetv1alpha1.AgentHubGroup("c2")), nil, "may be only"},
		{"the agent with another cluster's group", reg("csr", hostfleetv1alpha1.AgentHubUser("c1"), hostfleetv1alpha1.AgentHubGroup("c2")), nil, `names group "system:open-cluster-management:cluster:c2`},
		{"the agent with system:masters", reg("csr", hostfleetv1alpha1.AgentHubUser("c1"), "system:masters"), nil, `names group "system:masters"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := addon.Subjects("c1", tc.mca)
			if tc.err != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tc.err)))
				g.Expect(got).To(BeNil())
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tc.want))
		})
	}
}
