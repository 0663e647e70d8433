package queries

import (
	"slices"
	"time"

	"github.com/egret-stream/egret/api"
	"github.com/egret-stream/egret/api/table"
	"github.com/egret-stream/egret/api/window"
	"github.com/egret-stream/egret/examples/nexmark/generator"
	"github.com/egret-stream/egret/examples/nexmark/source"
)

// InWindow reports whether a bid counts for an auction: made between the
// auction's start and its expiry (both included), as q4, q6 and q9 join
// them.
func InWindow(a *generator.Auction, b *generator.Bid) bool {
	return b.DateTime >= a.DateTime && b.DateTime <= a.Expires
}

// winningJoin adds the interval join of auctions and their bids (a
// table.JoinBolt with InWindow as its condition), fields-grouped on the
// auction id, and returns its name. It forwards the end of the input.
func (p *Plan) winningJoin(out func(a *generator.Auction, b *generator.Bid) api.Values, fields []string) string {
	events := p.Name("events")
	spec := table.JoinSpec[int64, generator.Auction, generator.Bid]{
		IsLeft:       func(t api.Tuple) bool { return t.SourceStream() == source.AuctionStream },
		LeftKey:      func(t api.Tuple) int64 { return t.Int64(aID) },
		RightKey:     func(t api.Tuple) int64 { return t.Int64(bAuction) },
		Left:         source.Auction,
		Right:        source.Bid,
		Where:        InWindow,
		Output:       out,
		OutputFields: fields,
		End:          table.End{Component: events, Stream: source.EndStream, Forward: true},
	}
	name := p.Name("join")
	d := p.Topology().SetBolt(name, func() api.Bolt { b, _ := table.NewJoinBolt(spec); return b }, p.parallelism).
		Input(events, source.AuctionStream, api.Fields("id")).
		Input(events, source.BidStream, api.Fields("auction"))
	p.withEnd(d)
	return name
}

// groupOp adds a table.GroupBolt after component from, grouped on fields
// of its default stream, with its end of input from from's tasks; final
// makes it the query's last operator.
func groupOp[K comparable, IN, ACC, OUT any](p *Plan, name, from string, fields []string, last bool, spec table.GroupSpec[K, IN, ACC, OUT]) string {
	spec.End = table.End{Component: from, Stream: table.EndStream, Forward: !last}
	if last {
		spec.End.OnEnd = endRows
	}
	f := func() api.Bolt { b, _ := table.NewGroupBolt(spec); return b }
	if last {
		f = final(p.q.Name, f)
	}
	p.Topology().SetBolt(p.Name(name), f, p.parallelism).SetTickFrequency(100*time.Millisecond).
		Input(from, "default", api.Fields(fields...)).
		Input(from, table.EndStream, api.All())
	return p.Name(name)
}

// Q9Bid is a bid joined with its auction, ranked by q9.
type Q9Bid struct {
	Row         []any
	Price, Time int64
}

// q9Less ranks q9's bids: higher price first, then the earlier.
func q9Less(a, b Q9Bid) bool { return a.Price < b.Price || (a.Price == b.Price && a.Time > b.Time) }

// Q9Row is q9's row: the auction's columns, then the bid's.
func Q9Row(a *generator.Auction, b *generator.Bid) []any {
	return []any{a.ID, a.ItemName, a.Description, a.InitialBid, a.Reserve, a.DateTime, a.Expires, a.Seller, a.Category, a.Extra,
		b.Auction, b.Bidder, b.Price, b.DateTime, b.Extra}
}

// q4Final is an auction's final price so far, with an attribute of the
// auction (q4: its category, q6: its seller).
type q4Final struct{ Attr, Price int64 }

// finalPrices adds the interval join of auctions and bids and the group
// that keeps each auction's final (highest valid) price, emitted as
// upserts (id, attr, final) where attr is the named attribute of the
// auction; it returns the group's name.
func (p *Plan) finalPrices(attr string, of func(a *generator.Auction) int64) string {
	join := p.winningJoin(func(a *generator.Auction, b *generator.Bid) api.Values {
		return api.Values{a.ID, of(a), b.Price}
	}, []string{"id", attr, "price"})
	return groupOp(p, "final", join, []string{"id"}, false, table.GroupSpec[int64, q4Final, q4Final, q4Final]{
		Key:   func(t api.Tuple) int64 { return t.Int64(0) },
		Value: func(t api.Tuple) q4Final { return q4Final{t.Int64(1), t.Int64(2)} },
		Aggregate: window.Funcs[q4Final, q4Final, q4Final]{
			InitFn:   func() q4Final { return q4Final{} },
			AddFn:    func(acc, v q4Final) q4Final { return q4Final{v.Attr, max(acc.Price, v.Price)} },
			MergeFn:  func(a, _ q4Final) q4Final { return a },
			ResultFn: func(acc q4Final) q4Final { return acc },
		},
		Output:       func(id int64, f q4Final, emit func(api.Values)) { emit(api.Values{id, f.Attr, f.Price}) },
		OutputFields: []string{"id", attr, "final"},
	})
}

// q4Avg is the average of a category's final prices, each auction's
// latest final price replacing its previous one (an upsert stream in).
type q4Avg struct {
	Finals   map[int64]int64
	Sum, Num int64
}

func init() {
	register(&Query{Name: "q9", Title: "winning bids: the highest valid bid of each auction", Stateful: true, Upserts: true, build: func(p *Plan) {
		p.Events(false, 0)
		fields := []string{"id", "item_name", "description", "initial_bid", "reserve", "date_time", "expires", "seller", "category", "extra",
			"auction", "bidder", "price", "bid_date_time", "bid_extra"}
		join := p.winningJoin(func(a *generator.Auction, b *generator.Bid) api.Values { return api.Values(Q9Row(a, b)) }, fields)
		groupOp(p, "top1", join, []string{"id"}, true, table.GroupSpec[int64, Q9Bid, []Q9Bid, []Q9Bid]{
			Key: func(t api.Tuple) int64 { return t.Int64(0) },
			Value: func(t api.Tuple) Q9Bid {
				return Q9Bid{Row: append([]any(nil), t.Values()...), Price: t.Int64(12), Time: t.Int64(13)}
			},
			Aggregate: table.TopN(1, q9Less),
			Output: func(_ int64, top []Q9Bid, emit func(api.Values)) {
				emit(api.Values(top[0].Row))
			},
			OutputFields: fields,
		})
	}})
	register(&Query{Name: "q4", Title: "average price per category: the mean of the auctions' winning prices", Stateful: true, Upserts: true, build: func(p *Plan) {
		p.Events(false, 0)
		finals := p.finalPrices("category", func(a *generator.Auction) int64 { return a.Category })
		groupOp(p, "avg", finals, []string{"category"}, true, table.GroupSpec[int64, [2]int64, *q4Avg, *q4Avg]{
			Key:   func(t api.Tuple) int64 { return t.Int64(1) },
			Value: func(t api.Tuple) [2]int64 { return [2]int64{t.Int64(0), t.Int64(2)} },
			Aggregate: window.Funcs[[2]int64, *q4Avg, *q4Avg]{
				InitFn: func() *q4Avg { return &q4Avg{Finals: map[int64]int64{}} },
				AddFn: func(acc *q4Avg, v [2]int64) *q4Avg {
					if old, ok := acc.Finals[v[0]]; ok {
						acc.Sum -= old // the upsert retracts the auction's previous final price
					} else {
						acc.Num++
					}
					acc.Finals[v[0]] = v[1]
					acc.Sum += v[1]
					return acc
				},
				MergeFn:  func(a, _ *q4Avg) *q4Avg { return a },
				ResultFn: func(acc *q4Avg) *q4Avg { return acc },
			},
			Output:       func(category int64, a *q4Avg, emit func(api.Values)) { emit(api.Values{category, a.Sum / a.Num}) },
			OutputFields: []string{"category", "avg_price"},
		})
	}})
}

// q6Recent is the number of a seller's latest auctions q6 averages.
const q6Recent = 10

// q6Seller holds a seller's auctions' final prices by auction id.
type q6Seller map[int64]int64

// Q6Average is the mean final price of the q6Recent auctions with the
// highest ids (the latest) among finals.
func Q6Average(finals map[int64]int64) int64 {
	ids := make([]int64, 0, len(finals))
	for id := range finals {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	ids = ids[max(0, len(ids)-q6Recent):]
	var sum int64
	for _, id := range ids {
		sum += finals[id]
	}
	return sum / int64(len(ids))
}

func init() {
	register(&Query{Name: "q6", Title: "average selling price per seller over their 10 latest auctions", Stateful: true, Upserts: true, build: func(p *Plan) {
		p.Events(false, 0)
		finals := p.finalPrices("seller", func(a *generator.Auction) int64 { return a.Seller })
		groupOp(p, "avg", finals, []string{"seller"}, true, table.GroupSpec[int64, [2]int64, q6Seller, q6Seller]{
			Key:   func(t api.Tuple) int64 { return t.Int64(1) },
			Value: func(t api.Tuple) [2]int64 { return [2]int64{t.Int64(0), t.Int64(2)} },
			Aggregate: window.Funcs[[2]int64, q6Seller, q6Seller]{
				InitFn:   func() q6Seller { return q6Seller{} },
				AddFn:    func(acc q6Seller, v [2]int64) q6Seller { acc[v[0]] = v[1]; return acc },
				MergeFn:  func(a, _ q6Seller) q6Seller { return a },
				ResultFn: func(acc q6Seller) q6Seller { return acc },
			},
			Output:       func(seller int64, s q6Seller, emit func(api.Values)) { emit(api.Values{seller, Q6Average(s)}) },
			OutputFields: []string{"seller", "avg_price"},
		})
	}})
}
