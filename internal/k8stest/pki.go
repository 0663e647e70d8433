package k8stest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// pki is the cluster's credentials: a CA, the API server's serving
// certificate, the service-account signing key and the admin's bearer
// token (in the static token file, group system:masters).
type pki struct {
	dir   string
	token string
}

func (p *pki) path(name string) string { return filepath.Join(p.dir, name) }

func newPKI(dir string) (*pki, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	p := &pki{dir: dir}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "egret-k8stest-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(7 * 24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	srvKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	srvTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "kube-apiserver"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(7 * 24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:    []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv4(10, 96, 0, 1)},
	}
	srvDER, err := x509.CreateCertificate(rand.Reader, srvTmpl, ca, &srvKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tok := make([]byte, 16)
	if _, err := rand.Read(tok); err != nil {
		return nil, err
	}
	p.token = hex.EncodeToString(tok)
	files := map[string][]byte{
		"ca.crt":        pemBlock("CERTIFICATE", caDER),
		"ca.key":        keyPEM(caKey),
		"apiserver.crt": pemBlock("CERTIFICATE", srvDER),
		"apiserver.key": keyPEM(srvKey),
		"sa.key":        keyPEM(saKey),
		"sa.pub":        pubPEM(&saKey.PublicKey),
		"tokens.csv":    []byte(p.token + ",admin,admin-uid,system:masters\n"),
		"admin.token":   []byte(p.token),
	}
	for name, data := range files {
		if err := os.WriteFile(p.path(name), data, 0o600); err != nil {
			return nil, err
		}
	}
	return p, nil
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

// keyPEM and pubPEM encode P-256 keys, which cannot fail.
func keyPEM(k *ecdsa.PrivateKey) []byte {
	der, _ := x509.MarshalECPrivateKey(k)
	return pemBlock("EC PRIVATE KEY", der)
}

func pubPEM(k *ecdsa.PublicKey) []byte {
	der, _ := x509.MarshalPKIXPublicKey(k)
	return pemBlock("PUBLIC KEY", der)
}

// kubeconfig returns a kubeconfig for server with the admin's token.
func (p *pki) kubeconfig(server string) []byte {
	return []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: egret-k8stest
  cluster:
    server: %s
    certificate-authority: %s
users:
- name: admin
  user:
    token: %s
contexts:
- name: egret-k8stest
  context: {cluster: egret-k8stest, user: admin, namespace: default}
current-context: egret-k8stest
`, server, p.path("ca.crt"), p.token))
}
