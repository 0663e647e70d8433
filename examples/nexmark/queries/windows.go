package queries

import (
	"time"

	"github.com/egret-stream/egret/api"
	"github.com/egret-stream/egret/api/window"
	"github.com/egret-stream/egret/examples/nexmark/generator"
	"github.com/egret-stream/egret/examples/nexmark/source"
)

// finalWindow adds a window bolt of spec as the query's final component
// and returns its declarer; subscribe it with the returned function,
// which also subscribes it to the input's watermarks.
func finalWindow[K comparable, IN, ACC, OUT any](p *Plan, name string, parallelism int, spec window.Spec[K, IN, ACC, OUT]) func(component, stream string, g api.GroupingSpec) {
	d := p.Topology().SetBolt(p.Name(name), final(p.q.Name, func() api.Bolt { b, _ := window.NewBolt(spec); return b }), parallelism).
		SetTickFrequency(50 * time.Millisecond)
	subscribed := map[string]bool{}
	return func(component, stream string, g api.GroupingSpec) {
		d.Input(component, stream, g)
		if !subscribed[component] {
			subscribed[component] = true
			d.Input(component, window.WatermarkStream, api.All())
		}
	}
}

// Q5Count is one auction's bids in one sliding window (q5's first stage).
type Q5Count struct {
	Auction, Count int64
}

// q8Side is what q8's window knows of one person id: the name, whether
// the person was created and whether they opened an auction.
type q8Side struct {
	Name             string
	Person, Auctions bool
}

func init() {
	register(&Query{Name: "q5", Title: "hot items: the auctions with the most bids per sliding window", Stateful: true, build: func(p *Plan) {
		events := p.Events(true, 0)
		window.SetBolt(p.wb, p.Name("count"), p.parallelism, window.Spec[int64, int64, int64, int64]{
			Assigner:     window.Sliding(10*time.Second, 2*time.Second),
			Key:          func(t api.Tuple) int64 { return t.Int64(bAuction) },
			Value:        func(api.Tuple) int64 { return 1 },
			Timestamp:    func(t api.Tuple) time.Time { return time.UnixMilli(t.Int64(bDateTime)) },
			Aggregate:    window.Count[int64](),
			Guarantee:    window.AckOnAdd,
			Output:       func(r window.Result[int64, int64]) api.Values { return api.Values{r.Key, r.Window.End, r.Value} },
			OutputFields: []string{"auction", "window_end", "num"},
		}).Input(events, source.BidStream, api.Fields("auction"))
		// Each 2 s tumbling window of the counts' window ends holds the
		// counts of exactly one sliding window.
		in := finalWindow(p, "max", 1, window.Spec[struct{}, Q5Count, []Q5Count, []Q5Count]{
			Assigner:  window.Tumbling(2 * time.Second),
			Value:     func(t api.Tuple) Q5Count { return Q5Count{t.Int64(0), t.Int64(2)} },
			Timestamp: func(t api.Tuple) time.Time { return time.UnixMilli(t.Int64(1) - 1) },
			Aggregate: window.Funcs[Q5Count, []Q5Count, []Q5Count]{
				InitFn: func() []Q5Count { return nil },
				AddFn: func(acc []Q5Count, c Q5Count) []Q5Count {
					switch {
					case len(acc) == 0 || c.Count == acc[0].Count:
						return append(acc, c)
					case c.Count > acc[0].Count:
						return append(acc[:0], c)
					}
					return acc
				},
				MergeFn:  func(a, b []Q5Count) []Q5Count { return append(a, b...) },
				ResultFn: func(acc []Q5Count) []Q5Count { return acc },
			},
			Guarantee: window.AckOnAdd,
			Output: func(r window.Result[struct{}, []Q5Count]) api.Values {
				var m multiRows
				for _, c := range r.Value {
					m = append(m, []any{c.Auction, c.Count})
				}
				return api.Values{m}
			},
			OutputFields: []string{"hot"},
		})
		in(p.Name("count"), "default", api.Global())
	}})
	register(&Query{Name: "q7", Title: "highest bid: the bids with the highest price per 10 s window", Stateful: true, build: func(p *Plan) {
		events := p.Events(true, 0)
		in := finalWindow(p, "max", 1, window.Spec[struct{}, generator.Bid, []generator.Bid, []generator.Bid]{
			Assigner:  window.Tumbling(10 * time.Second),
			Value:     source.Bid,
			Timestamp: func(t api.Tuple) time.Time { return time.UnixMilli(t.Int64(bDateTime)) },
			Aggregate: window.Funcs[generator.Bid, []generator.Bid, []generator.Bid]{
				InitFn: func() []generator.Bid { return nil },
				AddFn: func(acc []generator.Bid, b generator.Bid) []generator.Bid {
					switch {
					case len(acc) == 0 || b.Price == acc[0].Price:
						return append(acc, b)
					case b.Price > acc[0].Price:
						return append(acc[:0], b)
					}
					return acc
				},
				MergeFn:  func(a, b []generator.Bid) []generator.Bid { return append(a, b...) },
				ResultFn: func(acc []generator.Bid) []generator.Bid { return acc },
			},
			Guarantee: window.AckOnAdd,
			Output: func(r window.Result[struct{}, []generator.Bid]) api.Values {
				var m multiRows
				for _, b := range r.Value {
					m = append(m, []any{b.Auction, b.Price, b.Bidder, b.DateTime, b.Extra})
				}
				return api.Values{m}
			},
			OutputFields: []string{"bids"},
		})
		in(events, source.BidStream, api.Global())
	}})
	register(&Query{Name: "q8", Title: "monitor new users: persons who opened an auction in the 10 s window they joined", Stateful: true, build: func(p *Plan) {
		events := p.Events(true, 0)
		in := finalWindow(p, "join", p.parallelism, window.Spec[int64, q8Side, q8Side, q8Side]{
			Assigner: window.Tumbling(10 * time.Second),
			Key: func(t api.Tuple) int64 {
				if t.SourceStream() == source.PersonStream {
					return t.Int64(pID)
				}
				return t.Int64(aSeller)
			},
			Value: func(t api.Tuple) q8Side {
				if t.SourceStream() == source.PersonStream {
					return q8Side{Name: t.String(pName), Person: true}
				}
				return q8Side{Auctions: true}
			},
			Timestamp: func(t api.Tuple) time.Time { return time.UnixMilli(source.TupleTime(t)) },
			Aggregate: window.Funcs[q8Side, q8Side, q8Side]{
				InitFn: func() q8Side { return q8Side{} },
				AddFn: func(acc, v q8Side) q8Side {
					if v.Person {
						acc.Name, acc.Person = v.Name, true
					}
					acc.Auctions = acc.Auctions || v.Auctions
					return acc
				},
				MergeFn:  func(a, b q8Side) q8Side { return a },
				ResultFn: func(acc q8Side) q8Side { return acc },
			},
			Guarantee: window.AckOnAdd,
			Output: func(r window.Result[int64, q8Side]) api.Values {
				if !r.Value.Person || !r.Value.Auctions {
					return nil
				}
				return api.Values{r.Key, r.Value.Name, r.Window.Start}
			},
			OutputFields: []string{"id", "name", "starttime"},
		})
		in(events, source.PersonStream, api.Fields("id"))
		in(events, source.AuctionStream, api.Fields("seller"))
	}})
	register(&Query{Name: "q11", Title: "user sessions: bids per bidder session (10 s gap)", Stateful: true, build: func(p *Plan) {
		events := p.Events(true, 0)
		in := finalWindow(p, "sessions", p.parallelism, window.Spec[int64, int64, int64, int64]{
			Assigner:  window.Session(10 * time.Second),
			Key:       func(t api.Tuple) int64 { return t.Int64(bBidder) },
			Value:     func(api.Tuple) int64 { return 1 },
			Timestamp: func(t api.Tuple) time.Time { return time.UnixMilli(t.Int64(bDateTime)) },
			Aggregate: window.Count[int64](),
			Guarantee: window.AckOnAdd,
			Output: func(r window.Result[int64, int64]) api.Values {
				return api.Values{r.Key, r.Value, r.Window.Start, r.Window.End}
			},
			OutputFields: []string{"bidder", "bid_count", "starttime", "endtime"},
		})
		in(events, source.BidStream, api.Fields("bidder"))
	}})
}

func init() {
	register(&Query{Name: "q12", Title: "processing-time windows: bids per bidder per 10 s of processing time", Stateful: true, build: func(p *Plan) {
		events := p.Events(false, 0)
		spec := window.Spec[int64, int64, int64, int64]{
			Assigner:  window.Tumbling(10 * time.Second),
			Time:      window.ProcessingTime,
			Key:       func(t api.Tuple) int64 { return t.Int64(bBidder) },
			Value:     func(api.Tuple) int64 { return 1 },
			Aggregate: window.Count[int64](),
			Guarantee: window.AckOnAdd,
			Output: func(r window.Result[int64, int64]) api.Values {
				return api.Values{r.Key, r.Value, r.Window.Start, r.Window.End}
			},
			OutputFields: []string{"bidder", "bid_count", "starttime", "endtime"},
		}
		q := p.q.Name
		d := p.Topology().SetBolt(p.Name("windows"), func() api.Bolt {
			b, _ := window.NewBolt(spec)
			return &terminal{Bolt: b, query: q, procWindow: 10_000}
		}, p.parallelism).SetTickFrequency(50*time.Millisecond).
			Input(events, source.BidStream, api.Fields("bidder"))
		p.withEnd(d)
	}})
}
