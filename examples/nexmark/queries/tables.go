package queries

import (
	"time"

	"github.com/egret-stream/egret/api"
	"github.com/egret-stream/egret/api/table"
	"github.com/egret-stream/egret/api/window"
	"github.com/egret-stream/egret/examples/nexmark/generator"
	"github.com/egret-stream/egret/examples/nexmark/source"
)

// Person and auction tuple fields used by the queries.
const (
	pID    = 0
	pName  = 1
	pCity  = 4
	pState = 5

	aID       = 0
	aSeller   = 7
	aCategory = 8
)

// Day formats an event time as q15–q17 group it: yyyy-MM-dd (UTC).
func Day(ms int64) string { return time.UnixMilli(ms).UTC().Format("2006-01-02") }

// Minute formats an event time as HH:mm (UTC).
func Minute(ms int64) string { return time.UnixMilli(ms).UTC().Format("15:04") }

// tableOp adds a table operator as the query's final component,
// subscribed to each input stream of the source with its grouping.
func (p *Plan) tableOp(f func() api.Bolt, inputs map[string]api.GroupingSpec) {
	events := p.Name("events")
	d := p.Topology().SetBolt(p.Name("table"), final(p.q.Name, f), p.parallelism).SetTickFrequency(100 * time.Millisecond)
	for stream, g := range inputs {
		d.Input(events, stream, g)
	}
	p.withEnd(d)
}

func by(stream string, fields ...string) map[string]api.GroupingSpec {
	return map[string]api.GroupingSpec{stream: api.Fields(fields...)}
}

// PriceRanks are q15–q17's price ranks: below $100, below $10,000, and
// above.
func PriceRank(price int64) int {
	switch {
	case price < 10_000:
		return 1
	case price < 1_000_000:
		return 2
	}
	return 3
}

// Stats is the accumulator of q15 and q16: bids, bidders and auctions,
// in total and per price rank.
type Stats struct {
	Bids     [4]int64
	Bidders  [4]table.Distinct[int64]
	Auctions [4]table.Distinct[int64]
	Minute   string // the latest HH:mm (q16)
}

func newStats() *Stats {
	s := &Stats{}
	for i := range s.Bidders {
		s.Bidders[i], s.Auctions[i] = table.Distinct[int64]{}, table.Distinct[int64]{}
	}
	return s
}

func (s *Stats) add(b *generator.Bid) *Stats {
	for _, r := range [2]int{0, PriceRank(b.Price)} {
		s.Bids[r]++
		s.Bidders[r].Add(b.Bidder)
		s.Auctions[r].Add(b.Auction)
	}
	if m := Minute(b.DateTime); m > s.Minute {
		s.Minute = m
	}
	return s
}

// Row returns the statistics as columns: bids, bidders, auctions, each
// in total and per rank.
func (s *Stats) Row() []any {
	out := make([]any, 0, 12)
	for _, r := range s.Bids {
		out = append(out, r)
	}
	for _, d := range s.Bidders {
		out = append(out, int64(len(d)))
	}
	for _, d := range s.Auctions {
		out = append(out, int64(len(d)))
	}
	return out
}

var statsAgg = window.Funcs[generator.Bid, *Stats, *Stats]{
	InitFn:   newStats,
	AddFn:    func(s *Stats, b generator.Bid) *Stats { return s.add(&b) },
	MergeFn:  func(a, _ *Stats) *Stats { return a },
	ResultFn: func(s *Stats) *Stats { return s },
}

// Q17 is q17's per auction and day accumulator.
type Q17 struct {
	Bids          [4]int64
	Min, Max, Sum int64
}

type channelDay struct{ Channel, Day string }

type auctionDay struct {
	Auction int64
	Day     string
}

type bidderAuction struct{ Bidder, Auction int64 }

func init() {
	register(&Query{Name: "q3", Title: "local item suggestion: sellers in OR, ID, CA of category-10 auctions", Stateful: true, build: func(p *Plan) {
		p.Events(false, 0)
		spec := table.JoinSpec[int64, [3]string, int64]{
			IsLeft:      func(t api.Tuple) bool { return t.SourceStream() == source.PersonStream },
			LeftKey:     func(t api.Tuple) int64 { return t.Int64(pID) },
			RightKey:    func(t api.Tuple) int64 { return t.Int64(aSeller) },
			Left:        func(t api.Tuple) [3]string { return [3]string{t.String(pName), t.String(pCity), t.String(pState)} },
			Right:       func(t api.Tuple) int64 { return t.Int64(aID) },
			AcceptLeft:  func(t api.Tuple) bool { s := t.String(pState); return s == "OR" || s == "ID" || s == "CA" },
			AcceptRight: func(t api.Tuple) bool { return t.Int64(aCategory) == 10 },
			Output: func(l *[3]string, r *int64) api.Values {
				return api.Values{l[0], l[1], l[2], *r}
			},
			OutputFields: []string{"name", "city", "state", "id"},
			End:          p.End(endRows),
		}
		p.tableOp(func() api.Bolt { b, _ := table.NewJoinBolt(spec); return b },
			map[string]api.GroupingSpec{source.PersonStream: api.Fields("id"), source.AuctionStream: api.Fields("seller")})
	}})
	register(&Query{Name: "q20", Title: "expanding bids with their category-10 auctions", Stateful: true, build: func(p *Plan) {
		p.Events(false, 0)
		spec := table.JoinSpec[int64, generator.Auction, generator.Bid]{
			IsLeft:     func(t api.Tuple) bool { return t.SourceStream() == source.AuctionStream },
			LeftKey:    func(t api.Tuple) int64 { return t.Int64(aID) },
			RightKey:   func(t api.Tuple) int64 { return t.Int64(bAuction) },
			Left:       source.Auction,
			Right:      source.Bid,
			AcceptLeft: func(t api.Tuple) bool { return t.Int64(aCategory) == 10 },
			Output:     func(a *generator.Auction, b *generator.Bid) api.Values { return api.Values(Q20Row(a, b)) },
			OutputFields: []string{"auction", "bidder", "price", "channel", "url", "b_date_time", "b_extra",
				"item_name", "description", "initial_bid", "reserve", "a_date_time", "expires", "seller", "category", "a_extra"},
			End: p.End(endRows),
		}
		p.tableOp(func() api.Bolt { b, _ := table.NewJoinBolt(spec); return b },
			map[string]api.GroupingSpec{source.AuctionStream: api.Fields("id"), source.BidStream: api.Fields("auction")})
	}})
	register(&Query{Name: "q15", Title: "bidding statistics per day", Stateful: true, Upserts: true, build: func(p *Plan) {
		p.Events(false, 0)
		spec := table.GroupSpec[string, generator.Bid, *Stats, *Stats]{
			Key:       func(t api.Tuple) string { return Day(t.Int64(bDateTime)) },
			Value:     source.Bid,
			Aggregate: statsAgg,
			Output: func(day string, s *Stats, emit func(api.Values)) {
				emit(append(api.Values{day}, s.Row()...))
			},
			OutputFields: []string{"day", "total_bids", "rank1_bids", "rank2_bids", "rank3_bids", "total_bidders", "rank1_bidders", "rank2_bidders", "rank3_bidders",
				"total_auctions", "rank1_auctions", "rank2_auctions", "rank3_auctions"},
			End: p.End(endRows),
		}
		p.tableOp(func() api.Bolt { b, _ := table.NewGroupBolt(spec); return b }, map[string]api.GroupingSpec{source.BidStream: api.Global()} /* one group per day */)
	}})
	register(&Query{Name: "q16", Title: "channel statistics per day", Stateful: true, Upserts: true, build: func(p *Plan) {
		p.Events(false, 0)
		spec := table.GroupSpec[channelDay, generator.Bid, *Stats, *Stats]{
			Key:       func(t api.Tuple) channelDay { return channelDay{t.String(bChannel), Day(t.Int64(bDateTime))} },
			Value:     source.Bid,
			Aggregate: statsAgg,
			Output: func(k channelDay, s *Stats, emit func(api.Values)) {
				emit(append(api.Values{k.Channel, k.Day, s.Minute}, s.Row()...))
			},
			OutputFields: []string{"channel", "day", "minute", "total_bids", "rank1_bids", "rank2_bids", "rank3_bids", "total_bidders", "rank1_bidders", "rank2_bidders", "rank3_bidders",
				"total_auctions", "rank1_auctions", "rank2_auctions", "rank3_auctions"},
			End: p.End(endRows),
		}
		p.tableOp(func() api.Bolt { b, _ := table.NewGroupBolt(spec); return b }, by(source.BidStream, "channel"))
	}})
	register(&Query{Name: "q17", Title: "auction statistics per day", Stateful: true, Upserts: true, build: func(p *Plan) {
		p.Events(false, 0)
		spec := table.GroupSpec[auctionDay, int64, *Q17, *Q17]{
			Key:   func(t api.Tuple) auctionDay { return auctionDay{t.Int64(bAuction), Day(t.Int64(bDateTime))} },
			Value: func(t api.Tuple) int64 { return t.Int64(bPrice) },
			Aggregate: window.Funcs[int64, *Q17, *Q17]{
				InitFn: func() *Q17 { return &Q17{} },
				AddFn: func(s *Q17, price int64) *Q17 {
					if s.Bids[0] == 0 || price < s.Min {
						s.Min = price
					}
					s.Max = max(s.Max, price)
					s.Bids[0]++
					s.Bids[PriceRank(price)]++
					s.Sum += price
					return s
				},
				MergeFn:  func(a, _ *Q17) *Q17 { return a },
				ResultFn: func(s *Q17) *Q17 { return s },
			},
			Output: func(k auctionDay, s *Q17, emit func(api.Values)) {
				emit(api.Values{k.Auction, k.Day, s.Bids[0], s.Bids[1], s.Bids[2], s.Bids[3], s.Min, s.Max, s.Sum / s.Bids[0], s.Sum})
			},
			OutputFields: []string{"auction", "day", "total_bids", "rank1_bids", "rank2_bids", "rank3_bids", "min_price", "max_price", "avg_price", "sum_price"},
			End:          p.End(endRows),
		}
		p.tableOp(func() api.Bolt { b, _ := table.NewGroupBolt(spec); return b }, by(source.BidStream, "auction"))
	}})
	register(&Query{Name: "q18", Title: "find last bid: the latest bid of each bidder on each auction", Stateful: true, Upserts: true, build: func(p *Plan) {
		p.Events(false, 0)
		spec := table.GroupSpec[bidderAuction, generator.Bid, *generator.Bid, generator.Bid]{
			Key:       func(t api.Tuple) bidderAuction { return bidderAuction{t.Int64(bBidder), t.Int64(bAuction)} },
			Value:     source.Bid,
			Aggregate: table.Latest(func(b generator.Bid) int64 { return b.DateTime }),
			Output: func(_ bidderAuction, b generator.Bid, emit func(api.Values)) {
				emit(api.Values{b.Auction, b.Bidder, b.Price, b.Channel, b.URL, b.DateTime, b.Extra})
			},
			OutputFields: source.BidFields,
			End:          p.End(endRows),
		}
		p.tableOp(func() api.Bolt { b, _ := table.NewGroupBolt(spec); return b }, by(source.BidStream, "bidder", "auction"))
	}})
	register(&Query{Name: "q19", Title: "auction top-10 prices", Stateful: true, Upserts: true, build: func(p *Plan) {
		p.Events(false, 0)
		spec := table.GroupSpec[int64, generator.Bid, []generator.Bid, []generator.Bid]{
			Key:       func(t api.Tuple) int64 { return t.Int64(bAuction) },
			Value:     source.Bid,
			Aggregate: table.TopN(10, Q19Less),
			Output: func(_ int64, top []generator.Bid, emit func(api.Values)) {
				for i, b := range top {
					emit(api.Values{b.Auction, int64(i + 1), b.Bidder, b.Price, b.Channel, b.URL, b.DateTime, b.Extra})
				}
			},
			OutputFields: []string{"auction", "rank_number", "bidder", "price", "channel", "url", "date_time", "extra"},
			End:          p.End(endRows),
		}
		p.tableOp(func() api.Bolt { b, _ := table.NewGroupBolt(spec); return b }, by(source.BidStream, "auction"))
	}})
}

// Q19Less orders q19's bids: by price, and of equal prices the later one
// ranks lower.
func Q19Less(a, b generator.Bid) bool {
	return a.Price < b.Price || (a.Price == b.Price && a.DateTime > b.DateTime)
}

// Q20Row is q20's row of a bid and its auction.
func Q20Row(a *generator.Auction, b *generator.Bid) []any {
	return []any{b.Auction, b.Bidder, b.Price, b.Channel, b.URL, b.DateTime, b.Extra,
		a.ItemName, a.Description, a.InitialBid, a.Reserve, a.DateTime, a.Expires, a.Seller, a.Category, a.Extra}
}
