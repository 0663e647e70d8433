package k8stest

import (
	"net/netip"
	"slices"
	"testing"

	"golang.org/x/net/dns/dnsmessage"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// dnsFixture: a headless Service "wc" publishing not-ready addresses
// (pods wc-0 ready, wc-1 not), a headless Service "strict" that does not
// (the same endpoints), and a ClusterIP Service "api", in namespace ns.
func dnsFixture() *clusterDNS {
	ready, notReady := true, false
	eps := func(svc string) *discoveryv1.EndpointSlice {
		return &discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Name: svc + "-x", Namespace: "ns", Labels: map[string]string{discoveryv1.LabelServiceName: svc}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints: []discoveryv1.Endpoint{
				{Addresses: []string{"10.244.0.5"}, Hostname: ptr("wc-0"), Conditions: discoveryv1.EndpointConditions{Ready: &ready}},
				{Addresses: []string{"10.244.0.6"}, Hostname: ptr("wc-1"), Conditions: discoveryv1.EndpointConditions{Ready: &notReady}},
			},
		}
	}
	return &clusterDNS{client: fake.NewClientset(
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "wc", Namespace: "ns"}, Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, PublishNotReadyAddresses: true}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "strict", Namespace: "ns"}, Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "api", Namespace: "ns"}, Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.10"}},
		eps("wc"), eps("strict"),
	)}
}

func query(t testing.TB, name string, typ dnsmessage.Type) []byte {
	b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: 7, RecursionDesired: true})
	if err := b.StartQuestions(); err != nil {
		t.Fatal(err)
	}
	if err := b.Question(dnsmessage.Question{Name: dnsmessage.MustNewName(name), Type: typ, Class: dnsmessage.ClassINET}); err != nil {
		t.Fatal(err)
	}
	out, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestDNSAnswers: the records CoreDNS's kubernetes plugin gives for the
// names Egret's pods look up.
func TestDNSAnswers(t *testing.T) {
	d := dnsFixture()
	for _, tc := range []struct {
		name  string
		typ   dnsmessage.Type
		rcode dnsmessage.RCode
		want  []string
	}{
		{"wc-1.wc.ns.svc.cluster.local.", dnsmessage.TypeA, dnsmessage.RCodeSuccess, []string{"10.244.0.6"}}, // not ready, published
		{"wc-0.wc.ns.svc.cluster.local.", dnsmessage.TypeA, dnsmessage.RCodeSuccess, []string{"10.244.0.5"}},
		{"WC-0.wc.ns.svc.cluster.local.", dnsmessage.TypeA, dnsmessage.RCodeSuccess, []string{"10.244.0.5"}},
		{"wc.ns.svc.cluster.local.", dnsmessage.TypeA, dnsmessage.RCodeSuccess, []string{"10.244.0.5", "10.244.0.6"}},
		{"wc-0.wc.ns.svc.cluster.local.", dnsmessage.TypeAAAA, dnsmessage.RCodeSuccess, nil},
		{"wc-1.strict.ns.svc.cluster.local.", dnsmessage.TypeA, dnsmessage.RCodeNameError, nil}, // not ready, not published
		{"strict.ns.svc.cluster.local.", dnsmessage.TypeA, dnsmessage.RCodeSuccess, []string{"10.244.0.5"}},
		{"api.ns.svc.cluster.local.", dnsmessage.TypeA, dnsmessage.RCodeSuccess, []string{"10.96.0.10"}},
		{"wc-2.wc.ns.svc.cluster.local.", dnsmessage.TypeA, dnsmessage.RCodeNameError, nil},
		{"wc.other.svc.cluster.local.", dnsmessage.TypeA, dnsmessage.RCodeNameError, nil},
		{"wc-0.wc.ns.svc.ns.svc.cluster.local.", dnsmessage.TypeA, dnsmessage.RCodeNameError, nil}, // a search-list try
		{"example.com.", dnsmessage.TypeA, dnsmessage.RCodeNameError, nil},
	} {
		resp := d.answer(query(t, tc.name, tc.typ))
		var p dnsmessage.Parser
		h, err := p.Start(resp)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if !h.Response || h.ID != 7 || h.RCode != tc.rcode {
			t.Errorf("%s %v: header %+v, want rcode %v", tc.name, tc.typ, h, tc.rcode)
		}
		if err := p.SkipAllQuestions(); err != nil {
			t.Fatal(err)
		}
		answers, err := p.AllAnswers()
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, a := range answers {
			if r, ok := a.Body.(*dnsmessage.AResource); ok {
				got = append(got, netip.AddrFrom4(r.A).String())
			}
		}
		slices.Sort(got)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s %v: %v, want %v", tc.name, tc.typ, got, tc.want)
		}
	}
}

// FuzzDNSAnswer: any datagram gets an answer that parses, or none; never a panic.
func FuzzDNSAnswer(f *testing.F) {
	d := dnsFixture()
	f.Add(query(f, "wc-0.wc.ns.svc.cluster.local.", dnsmessage.TypeA))
	f.Add(query(f, "example.com.", dnsmessage.TypeAAAA))
	f.Add([]byte{0, 1, 2})
	f.Fuzz(func(t *testing.T, b []byte) {
		if resp := d.answer(b); resp != nil {
			var p dnsmessage.Parser
			if _, err := p.Start(resp); err != nil {
				t.Fatalf("unparsable answer to %x: %v", b, err)
			}
		}
	})
}
