package planes

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"sync"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// clientCA authenticates users by client certificates signed by a CA whose
// key the plane keeps (envtest's own keeps it private), so that
// kube-controller-manager can sign CertificateSigningRequests for
// kubernetes.io/kube-apiserver-client with it, as a real cluster does.
type clientCA struct {
	cert    *x509.Certificate
	key     *ecdsa.PrivateKey
	certPEM []byte
	keyPEM  []byte
	dir     string

	mu     sync.Mutex
	serial int64
}

// issue makes a key and a certificate from tmpl, signed by parent (itself
// when parent is nil), both PEM-encoded.
func issue(tmpl, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) (cert *x509.Certificate, key *ecdsa.PrivateKey, certPEM, keyPEM []byte, err error) {
	key, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-time.Hour), time.Now().Add(7*24*time.Hour)
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	if cert, err = x509.ParseCertificate(der); err != nil {
		return nil, nil, nil, nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	return cert, key, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), nil
}

func newClientCA() (*clientCA, error) {
	cert, key, certPEM, keyPEM, err := issue(&x509.Certificate{SerialNumber: big.NewInt(1),
		Subject:  pkix.Name{CommonName: "hostfleet-planes-client-ca"},
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature, BasicConstraintsValid: true, IsCA: true}, nil, nil)
	if err != nil {
		return nil, err
	}
	return &clientCA{cert: cert, key: key, serial: 1, certPEM: certPEM, keyPEM: keyPEM}, nil
}

func (c *clientCA) certFile() string { return filepath.Join(c.dir, "client-ca.crt") }
func (c *clientCA) keyFile() string  { return filepath.Join(c.dir, "client-ca.key") }

// Configure implements envtest.Authn.
func (c *clientCA) Configure(workDir string, args *envtest.Arguments) error {
	c.dir = workDir
	args.Set("client-ca-file", c.certFile())
	return nil
}

// Start implements envtest.Authn: the CA's certificate and key go to files.
func (c *clientCA) Start() error {
	if c.dir == "" {
		return fmt.Errorf("client CA started before it was configured")
	}
	if err := os.WriteFile(c.certFile(), c.certPEM, 0o644); err != nil {
		return err
	}
	return os.WriteFile(c.keyFile(), c.keyPEM, 0o600)
}

// AddUser implements envtest.Authn: a client certificate for the user.
func (c *clientCA) AddUser(user envtest.User, base *rest.Config) (*rest.Config, error) {
	c.mu.Lock()
	c.serial++
	serial := c.serial
	c.mu.Unlock()
	_, _, certPEM, keyPEM, err := issue(&x509.Certificate{SerialNumber: big.NewInt(serial),
		Subject:  pkix.Name{CommonName: user.Name, Organization: user.Groups},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}, c.cert, c.key)
	if err != nil {
		return nil, fmt.Errorf("client certificate for %s: %w", user.Name, err)
	}
	cfg := rest.CopyConfig(base)
	cfg.CertData, cfg.KeyData = certPEM, keyPEM
	return cfg, nil
}

// Stop implements envtest.Authn.
func (c *clientCA) Stop() error { return nil }
