package k8stest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/dns/dnsmessage"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// ClusterDomain is the real node's cluster domain: the kubelet writes
// "search <ns>.svc.cluster.local svc.cluster.local cluster.local" into the
// pods' resolv.conf, with the cluster DNS at PodGateway.
const ClusterDomain = "cluster.local"

// dnsTTL is the records' time to live (CoreDNS's kubernetes plugin's default).
const dnsTTL = 5

// clusterDNS answers the pods' DNS queries for Services as CoreDNS's
// kubernetes plugin does, for the names Egret needs (a real cluster runs
// CoreDNS; no image of it can be pulled here):
//
//	<svc>.<ns>.svc.cluster.local             A: the ClusterIP, or a headless
//	                                          Service's endpoint addresses
//	<host>.<svc>.<ns>.svc.cluster.local      A: the endpoint whose hostname is
//	                                          <host> (a StatefulSet's pod)
//
// from the Services and their EndpointSlices, read from the API server at
// each query. Every other name is NXDOMAIN; AAAA of a known name is empty.
type clusterDNS struct {
	conn    net.PacketConn
	client  kubernetes.Interface
	done    chan struct{}
	pending sync.WaitGroup // queries being answered
}

func startDNS(addr string, client kubernetes.Interface) (*clusterDNS, error) {
	conn, err := net.ListenPacket("udp4", addr)
	if err != nil {
		return nil, err
	}
	d := &clusterDNS{conn: conn, client: client, done: make(chan struct{})}
	go d.serve()
	return d, nil
}

func (d *clusterDNS) close() {
	d.conn.Close()
	<-d.done
	d.pending.Wait()
}

func (d *clusterDNS) serve() {
	defer close(d.done)
	buf := make([]byte, 512)
	for {
		n, from, err := d.conn.ReadFrom(buf)
		if err != nil {
			return
		}
		query := append([]byte(nil), buf[:n]...)
		d.pending.Add(1)
		go func() {
			defer d.pending.Done()
			if resp := d.answer(query); resp != nil {
				_, _ = d.conn.WriteTo(resp, from)
			}
		}()
	}
}

// answer builds the response to one query (nil: not a query, dropped).
func (d *clusterDNS) answer(query []byte) []byte {
	var p dnsmessage.Parser
	h, err := p.Start(query)
	if err != nil || h.Response {
		return nil
	}
	q, err := p.Question()
	if err != nil {
		return nil
	}
	resp := dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true, RecursionDesired: h.RecursionDesired}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	addrs, err := d.lookup(ctx, strings.ToLower(strings.TrimSuffix(q.Name.String(), ".")))
	switch {
	case errors.Is(err, errNoName):
		resp.RCode = dnsmessage.RCodeNameError
	case err != nil:
		resp.RCode = dnsmessage.RCodeServerFailure
	}
	b := dnsmessage.NewBuilder(nil, resp)
	b.EnableCompression()
	if b.StartQuestions() != nil || b.Question(q) != nil || b.StartAnswers() != nil {
		return nil
	}
	if q.Type == dnsmessage.TypeA {
		for _, a := range addrs {
			rh := dnsmessage.ResourceHeader{Name: q.Name, Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET, TTL: dnsTTL}
			if b.AResource(rh, dnsmessage.AResource{A: a.As4()}) != nil {
				return nil
			}
		}
	}
	out, err := b.Finish()
	if err != nil {
		return nil
	}
	return out
}

var errNoName = errors.New("no such name")

// lookup returns the IPv4 addresses of a cluster name.
func (d *clusterDNS) lookup(ctx context.Context, name string) ([]netip.Addr, error) {
	rest, ok := strings.CutSuffix(name, ".svc."+ClusterDomain)
	if !ok {
		return nil, errNoName
	}
	parts := strings.Split(rest, ".")
	var host, svcName, ns string
	switch len(parts) {
	case 2:
		svcName, ns = parts[0], parts[1]
	case 3:
		host, svcName, ns = parts[0], parts[1], parts[2]
	default:
		return nil, errNoName
	}
	svc, err := d.client.CoreV1().Services(ns).Get(ctx, svcName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, errNoName
	}
	if err != nil {
		return nil, err
	}
	if host == "" && svc.Spec.ClusterIP != corev1.ClusterIPNone {
		a, err := netip.ParseAddr(svc.Spec.ClusterIP)
		if err != nil || !a.Is4() {
			return nil, nil
		}
		return []netip.Addr{a}, nil
	}
	slices, err := d.client.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + svcName})
	if err != nil {
		return nil, err
	}
	var out []netip.Addr
	for _, s := range slices.Items {
		if s.AddressType != discoveryv1.AddressTypeIPv4 {
			continue
		}
		for _, e := range s.Endpoints {
			ready := e.Conditions.Ready == nil || *e.Conditions.Ready
			if !ready && !svc.Spec.PublishNotReadyAddresses {
				continue
			}
			if host != "" && (e.Hostname == nil || *e.Hostname != host) {
				continue
			}
			for _, a := range e.Addresses {
				if ip, err := netip.ParseAddr(a); err == nil {
					out = append(out, ip)
				}
			}
		}
	}
	if host != "" && len(out) == 0 {
		return nil, errNoName
	}
	return out, nil
}

// ResolvConf writes a resolv.conf that resolves names as the pods of
// namespace ns do (the cluster DNS, its search list) and returns its path:
// a process that reads it (in a mount namespace where it is bind-mounted
// on /etc/resolv.conf) is like a machine on the cluster's network. The
// host routes to the pods through the bridge.
func (c *Cluster) ResolvConf(ns string) (string, error) {
	if c.node == nil {
		return "", errors.New("k8stest: ResolvConf needs the kubelet tier")
	}
	p := filepath.Join(c.Dir, "resolv-"+ns+".conf")
	body := fmt.Sprintf("nameserver %s\nsearch %s.svc.%s svc.%s %s\noptions ndots:5\n", PodGateway, ns, ClusterDomain, ClusterDomain, ClusterDomain)
	return p, os.WriteFile(p, []byte(body), 0o644)
}
