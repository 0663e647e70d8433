package generator

import (
	"encoding/json"
	"reflect"
	"testing"
)

func gen(t testing.TB, mod func(*Config)) *Generator {
	t.Helper()
	c := Default()
	if mod != nil {
		mod(&c)
	}
	g, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestDeterministicFromSeedAndID(t *testing.T) {
	a, b := gen(t, nil), gen(t, nil)
	other := gen(t, func(c *Config) { c.Seed = 2 })
	differ := 0
	for id := int64(0); id < 5000; id++ {
		ea, eb := a.Event(id), b.Event(id)
		if !reflect.DeepEqual(ea, eb) {
			t.Fatalf("event %d differs between two generators of one config:\n%+v\n%+v", id, ea, eb)
		}
		// Out of order: asking again, after other events, gives the same.
		if again := a.Event(id / 2); !reflect.DeepEqual(again, b.Event(id/2)) {
			t.Fatalf("event %d differs when generated again", id/2)
		}
		if !reflect.DeepEqual(ea, other.Event(id)) {
			differ++
		}
	}
	if differ < 4900 {
		t.Errorf("seed 2 changed only %d of 5000 events", differ)
	}
}

func TestProportionsAndIDs(t *testing.T) {
	g := gen(t, nil)
	const n = 50_000
	counts := map[Kind]int{}
	var persons, auctions int64
	for id := int64(0); id < n; id++ {
		e := g.Event(id)
		counts[e.Kind]++
		switch e.Kind {
		case KindPerson:
			if e.Person.ID != FirstPersonID+persons {
				t.Fatalf("person %d of event %d: id %d, want %d", persons, id, e.Person.ID, FirstPersonID+persons)
			}
			persons++
		case KindAuction:
			a := e.Auction
			if a.ID != FirstAuctionID+auctions {
				t.Fatalf("auction of event %d: id %d, want %d", id, a.ID, FirstAuctionID+auctions)
			}
			auctions++
			if a.Seller < FirstPersonID || a.Seller >= FirstPersonID+persons+personIDLead {
				t.Fatalf("auction %d: seller %d outside [1000, %d)", a.ID, a.Seller, FirstPersonID+persons+personIDLead)
			}
			if a.Category < FirstCategoryID || a.Category >= FirstCategoryID+NumCategories {
				t.Fatalf("auction %d: category %d", a.ID, a.Category)
			}
			if a.Reserve <= a.InitialBid || a.Expires <= a.DateTime {
				t.Fatalf("auction %d: reserve %d initial %d expires %d at %d", a.ID, a.Reserve, a.InitialBid, a.Expires, a.DateTime)
			}
		case KindBid:
			b := e.Bid
			if b.Auction < FirstAuctionID || b.Auction >= FirstAuctionID+auctions+auctionIDLead {
				t.Fatalf("bid of event %d: auction %d outside [1000, %d)", id, b.Auction, FirstAuctionID+auctions+auctionIDLead)
			}
			if b.Price < 100 || b.Price > 100_000_000 {
				t.Fatalf("bid of event %d: price %d", id, b.Price)
			}
			if b.Channel == "" || b.URL == "" {
				t.Fatalf("bid of event %d: no channel or url", id)
			}
		}
	}
	want := map[Kind]int{KindPerson: n / 50, KindAuction: 3 * n / 50, KindBid: 46 * n / 50}
	if !reflect.DeepEqual(counts, want) {
		t.Errorf("kinds over %d events: %v, want %v", n, counts, want)
	}
}

func TestHotKeysAndSizes(t *testing.T) {
	g := gen(t, nil)
	hotChannel, hotAuction, bids := 0, 0, 0
	size := 0
	for id := int64(0); id < 50_000; id++ {
		e := g.Event(id)
		if e.Kind != KindBid {
			continue
		}
		bids++
		b := e.Bid
		for _, c := range HotChannels {
			if b.Channel == c {
				hotChannel++
			}
		}
		if (b.Auction-FirstAuctionID)%hotAuctionRatio == 0 {
			hotAuction++
		}
		size += 32 + len(b.Extra)
	}
	frac := func(n int) float64 { return float64(n) / float64(bids) }
	if f := frac(hotChannel); f < 0.47 || f > 0.53 {
		t.Errorf("hot channels carry %.3f of the bids, want about 0.5", f)
	}
	if f := frac(hotAuction); f < 0.48 || f > 0.6 {
		t.Errorf("hot auctions get %.3f of the bids, want a little over 0.5", f)
	}
	if avg := float64(size) / float64(bids); avg < 95 || avg > 105 {
		t.Errorf("bids average %.1f bytes, want about 100", avg)
	}
}

func TestTimestampsAndDisorder(t *testing.T) {
	g := gen(t, func(c *Config) { c.Rate = 1000; c.OutOfOrderGroupSize = 10 })
	c := g.Config()
	seen := map[int64]bool{}
	late := 0
	var maxTS int64
	for n := int64(0); n < 1000; n++ {
		e := g.At(n)
		if seen[e.ID] {
			t.Fatalf("id %d at two positions", e.ID)
		}
		seen[e.ID] = true
		if e.ID/10 != n/10 {
			t.Fatalf("position %d carries id %d outside its group", n, e.ID)
		}
		if want := c.BaseTime + e.ID; e.Time() != want {
			t.Fatalf("event %d: time %d, want %d (1 ms per event at 1000/s)", e.ID, e.Time(), want)
		}
		if e.Time() < maxTS {
			late++
		}
		maxTS = max(maxTS, e.Time())
	}
	if late == 0 {
		t.Error("an out-of-order group size of 10 gave events in order")
	}
}

func TestSplitsAreDisjointAndCover(t *testing.T) {
	for _, tasks := range []int{1, 2, 3, 7} {
		seen := map[int64]int{}
		var total int64
		for i := 0; i < tasks; i++ {
			s := SplitOf(i, tasks, 1000)
			total += s.Count()
			for k := int64(0); k < s.Count(); k++ {
				seen[s.Position(k)]++
			}
		}
		if total != 1000 || len(seen) != 1000 {
			t.Fatalf("%d tasks: %d positions in the splits, %d distinct, want 1000", tasks, total, len(seen))
		}
		for p, n := range seen {
			if n != 1 || p < 0 || p >= 1000 {
				t.Fatalf("%d tasks: position %d in %d splits", tasks, p, n)
			}
		}
	}
}

func TestConfigValidation(t *testing.T) {
	c := Default()
	c.Rate, c.OutOfOrderGroupSize = 0, 953
	err := c.Validate()
	if err == nil {
		t.Fatal("a zero rate and a group size of 953 passed validation")
	}
	if _, err := New(c); err == nil {
		t.Fatal("New accepted an invalid config")
	}
}

func BenchmarkEvent(b *testing.B) {
	g := gen(b, nil)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		_ = g.Event(int64(i))
	}
}

func BenchmarkEventJSON(b *testing.B) {
	g := gen(b, nil)
	b.ReportAllocs()
	n := 0
	for i := 0; i < b.N; i++ {
		e := g.Event(int64(i))
		out, _ := json.Marshal(e)
		n += len(out)
	}
	b.ReportMetric(float64(n)/float64(b.N), "bytes/event")
}
