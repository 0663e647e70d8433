package main

import (
	"strings"

	"github.com/egret-stream/egret/examples/nexmark/generator"
	"github.com/egret-stream/egret/examples/nexmark/queries"
)

// The brute-force references: each computes a query's result from the
// whole list of events, the plain way, following the query's SQL.
var references = map[string]reference{
	"q0": {rows: eachBid("q0", func(b *generator.Bid) []any { return []any{b.Auction, b.Bidder, b.Price, b.DateTime, b.Extra} }), final: 2},
	"q1": {rows: eachBid("q1", func(b *generator.Bid) []any {
		return []any{b.Auction, b.Bidder, 0.908 * float64(b.Price), b.DateTime, b.Extra}
	}), final: 2},
	"q2":  {rows: eachBid("q2", q2), final: 2},
	"q14": {rows: eachBid("q14", q14), final: 2},
	"q21": {rows: eachBid("q21", q21), final: 2},
	"q22": {rows: eachBid("q22", q22), final: 2},
}

func eachBid(q string, fn func(b *generator.Bid) []any) func([]generator.Event) []string {
	return func(evs []generator.Event) []string {
		var out []string
		for _, e := range evs {
			if e.Kind != generator.KindBid {
				continue
			}
			if row := fn(e.Bid); row != nil {
				out = append(out, queries.FormatRow(q, row...))
			}
		}
		return out
	}
}

func q2(b *generator.Bid) []any {
	if b.Auction%123 != 0 {
		return nil
	}
	return []any{b.Auction, b.Price}
}

func q14(b *generator.Bid) []any {
	p := 0.908 * float64(b.Price)
	if !(p > 1_000_000 && p < 50_000_000) {
		return nil
	}
	return []any{b.Auction, b.Bidder, p, queries.BidTimeType(b.DateTime), b.DateTime, b.Extra, int64(strings.Count(b.Extra, "c"))}
}

func q21(b *generator.Bid) []any {
	var id string
	switch strings.ToLower(b.Channel) {
	case "apple":
		id = "0"
	case "google":
		id = "1"
	case "facebook":
		id = "2"
	case "baidu":
		id = "3"
	default:
		i := strings.Index(b.URL, "&channel_id=")
		if i < 0 {
			return nil
		}
		id = b.URL[i+len("&channel_id="):]
		if j := strings.IndexByte(id, '&'); j >= 0 {
			id = id[:j]
		}
	}
	return []any{b.Auction, b.Bidder, b.Price, b.Channel, id}
}

func q22(b *generator.Bid) []any {
	parts := strings.Split(b.URL, "/")
	dir := func(i int) any {
		if i < len(parts) {
			return parts[i]
		}
		return nil
	}
	return []any{b.Auction, b.Bidder, b.Price, b.Channel, dir(3), dir(4), dir(5)}
}
