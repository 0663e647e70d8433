package main

import (
	"fmt"
	"sort"
	"strconv"
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
	"q3":  {rows: q3, final: 2},
	"q20": {rows: q20, final: 2},
	"q15": {rows: q15, keyCols: 1, final: 2},
	"q16": {rows: q16, keyCols: 2, final: 2},
	"q17": {rows: q17, keyCols: 2, final: 2},
	"q18": {rows: q18, keyCols: 2, final: 2},
	"q19": {rows: q19, keyCols: 2, final: 2},
	"q5":  {rows: q5, final: 1},
	"q7":  {rows: q7, final: 1},
	"q8":  {rows: q8, final: 2},
	"q11": {rows: q11, final: 2},
	"q9":  {rows: q9, keyCols: 1, final: 2},
	"q4":  {rows: q4, keyCols: 1, final: 2},
	"q6":  {rows: q6, keyCols: 1, final: 2},
	"q10": {rows: q10, files: true, final: 2},
	"q12": {rows: q12, transform: q12Sum, final: 2},
	"q13": {seeded: q13, final: 2},
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

func q3(evs []generator.Event) []string {
	persons := map[int64]*generator.Person{}
	for _, e := range evs {
		if e.Kind == generator.KindPerson {
			persons[e.Person.ID] = e.Person
		}
	}
	var out []string
	for _, e := range evs {
		if e.Kind != generator.KindAuction || e.Auction.Category != 10 {
			continue
		}
		if p, ok := persons[e.Auction.Seller]; ok && (p.State == "OR" || p.State == "ID" || p.State == "CA") {
			out = append(out, queries.FormatRow("q3", p.Name, p.City, p.State, e.Auction.ID))
		}
	}
	return out
}

func q20(evs []generator.Event) []string {
	auctions := map[int64]*generator.Auction{}
	for _, e := range evs {
		if e.Kind == generator.KindAuction && e.Auction.Category == 10 {
			auctions[e.Auction.ID] = e.Auction
		}
	}
	var out []string
	for _, e := range evs {
		if e.Kind == generator.KindBid {
			if a, ok := auctions[e.Bid.Auction]; ok {
				out = append(out, queries.FormatRow("q20", queries.Q20Row(a, e.Bid)...))
			}
		}
	}
	return out
}

func bids(evs []generator.Event) []*generator.Bid {
	var out []*generator.Bid
	for _, e := range evs {
		if e.Kind == generator.KindBid {
			out = append(out, e.Bid)
		}
	}
	return out
}

// stats is the plain count of q15 and q16: bids, distinct bidders and
// auctions, in total and per price rank.
type stats struct {
	bids              [4]int64
	bidders, auctions [4]map[int64]bool
	minute            string
}

func (s *stats) add(b *generator.Bid) {
	for i := range s.bidders {
		if s.bidders[i] == nil {
			s.bidders[i], s.auctions[i] = map[int64]bool{}, map[int64]bool{}
		}
	}
	rank := 3
	if b.Price < 10_000 {
		rank = 1
	} else if b.Price < 1_000_000 {
		rank = 2
	}
	for _, r := range []int{0, rank} {
		s.bids[r]++
		s.bidders[r][b.Bidder] = true
		s.auctions[r][b.Auction] = true
	}
	if m := queries.Minute(b.DateTime); m > s.minute {
		s.minute = m
	}
}

func (s *stats) row() []any {
	var out []any
	for _, n := range s.bids {
		out = append(out, n)
	}
	for _, m := range s.bidders {
		out = append(out, int64(len(m)))
	}
	for _, m := range s.auctions {
		out = append(out, int64(len(m)))
	}
	return out
}

func q15(evs []generator.Event) []string {
	days := map[string]*stats{}
	for _, b := range bids(evs) {
		d := queries.Day(b.DateTime)
		if days[d] == nil {
			days[d] = &stats{}
		}
		days[d].add(b)
	}
	var out []string
	for d, s := range days {
		out = append(out, queries.FormatRow("q15", append([]any{d}, s.row()...)...))
	}
	return out
}

func q16(evs []generator.Event) []string {
	type key struct{ channel, day string }
	groups := map[key]*stats{}
	for _, b := range bids(evs) {
		k := key{b.Channel, queries.Day(b.DateTime)}
		if groups[k] == nil {
			groups[k] = &stats{}
		}
		groups[k].add(b)
	}
	var out []string
	for k, s := range groups {
		out = append(out, queries.FormatRow("q16", append([]any{k.channel, k.day, s.minute}, s.row()...)...))
	}
	return out
}

func q17(evs []generator.Event) []string {
	type key struct {
		auction int64
		day     string
	}
	groups := map[key][]int64{}
	for _, b := range bids(evs) {
		k := key{b.Auction, queries.Day(b.DateTime)}
		groups[k] = append(groups[k], b.Price)
	}
	var out []string
	for k, prices := range groups {
		var n [4]int64
		lo, hi, sum := prices[0], prices[0], int64(0)
		for _, p := range prices {
			n[0]++
			switch {
			case p < 10_000:
				n[1]++
			case p < 1_000_000:
				n[2]++
			default:
				n[3]++
			}
			lo, hi, sum = min(lo, p), max(hi, p), sum+p
		}
		out = append(out, queries.FormatRow("q17", k.auction, k.day, n[0], n[1], n[2], n[3], lo, hi, sum/n[0], sum))
	}
	return out
}

func q18(evs []generator.Event) []string {
	type key struct{ bidder, auction int64 }
	last := map[key]*generator.Bid{}
	for _, b := range bids(evs) {
		k := key{b.Bidder, b.Auction}
		if l := last[k]; l == nil || b.DateTime >= l.DateTime {
			last[k] = b
		}
	}
	var out []string
	for _, b := range last {
		out = append(out, queries.FormatRow("q18", b.Auction, b.Bidder, b.Price, b.Channel, b.URL, b.DateTime, b.Extra))
	}
	return out
}

func q19(evs []generator.Event) []string {
	per := map[int64][]*generator.Bid{}
	for _, b := range bids(evs) {
		per[b.Auction] = append(per[b.Auction], b)
	}
	var out []string
	for _, bs := range per {
		sort.SliceStable(bs, func(i, j int) bool {
			if bs[i].Price != bs[j].Price {
				return bs[i].Price > bs[j].Price
			}
			return bs[i].DateTime < bs[j].DateTime
		})
		for i, b := range bs[:min(10, len(bs))] {
			out = append(out, queries.FormatRow("q19", b.Auction, int64(i+1), b.Bidder, b.Price, b.Channel, b.URL, b.DateTime, b.Extra))
		}
	}
	return out
}

func floorTo(ts, size int64) int64 {
	s := ts - ts%size
	if ts%size < 0 {
		s -= size
	}
	return s
}

// q5: per 10 s window sliding by 2 s, the auctions with the most bids.
func q5(evs []generator.Event) []string {
	type key struct{ start, auction int64 }
	counts := map[key]int64{}
	for _, b := range bids(evs) {
		for s := floorTo(b.DateTime, 2000); s > b.DateTime-10_000; s -= 2000 {
			counts[key{s, b.Auction}]++
		}
	}
	best := map[int64]int64{}
	for k, n := range counts {
		best[k.start] = max(best[k.start], n)
	}
	var out []string
	for k, n := range counts {
		if n == best[k.start] {
			out = append(out, queries.FormatRow("q5", k.auction, n))
		}
	}
	return out
}

// q7: per 10 s tumbling window, the bids with the highest price.
func q7(evs []generator.Event) []string {
	per := map[int64][]*generator.Bid{}
	for _, b := range bids(evs) {
		s := floorTo(b.DateTime, 10_000)
		switch l := per[s]; {
		case len(l) == 0 || l[0].Price == b.Price:
			per[s] = append(l, b)
		case b.Price > l[0].Price:
			per[s] = []*generator.Bid{b}
		}
	}
	var out []string
	for _, l := range per {
		for _, b := range l {
			out = append(out, queries.FormatRow("q7", b.Auction, b.Price, b.Bidder, b.DateTime, b.Extra))
		}
	}
	return out
}

// q8: persons who opened an auction in the 10 s tumbling window in which
// they were created.
func q8(evs []generator.Event) []string {
	type key struct{ id, start int64 }
	names := map[key]string{}
	sellers := map[key]bool{}
	for _, e := range evs {
		switch e.Kind {
		case generator.KindPerson:
			names[key{e.Person.ID, floorTo(e.Person.DateTime, 10_000)}] = e.Person.Name
		case generator.KindAuction:
			sellers[key{e.Auction.Seller, floorTo(e.Auction.DateTime, 10_000)}] = true
		}
	}
	var out []string
	for k, name := range names {
		if sellers[k] {
			out = append(out, queries.FormatRow("q8", k.id, name, k.start))
		}
	}
	return out
}

// q11: per bidder, sessions of bids less than 10 s apart.
func q11(evs []generator.Event) []string {
	per := map[int64][]int64{}
	for _, b := range bids(evs) {
		per[b.Bidder] = append(per[b.Bidder], b.DateTime)
	}
	var out []string
	for bidder, ts := range per {
		sort.Slice(ts, func(i, j int) bool { return ts[i] < ts[j] })
		start, n := ts[0], int64(0)
		for i, t := range ts {
			if i > 0 && t >= ts[i-1]+10_000 {
				out = append(out, queries.FormatRow("q11", bidder, n, start, ts[i-1]+10_000))
				start, n = t, 0
			}
			n++
		}
		out = append(out, queries.FormatRow("q11", bidder, n, start, ts[len(ts)-1]+10_000))
	}
	return out
}

// winning returns every auction's winning bid: the highest-priced bid made
// between its start and expiry, the earliest of equal prices.
func winning(evs []generator.Event) map[*generator.Auction]*generator.Bid {
	auctions := map[int64]*generator.Auction{}
	for _, e := range evs {
		if e.Kind == generator.KindAuction {
			auctions[e.Auction.ID] = e.Auction
		}
	}
	out := map[*generator.Auction]*generator.Bid{}
	for _, b := range bids(evs) {
		a := auctions[b.Auction]
		if a == nil || b.DateTime < a.DateTime || b.DateTime > a.Expires {
			continue
		}
		if w := out[a]; w == nil || b.Price > w.Price || (b.Price == w.Price && b.DateTime < w.DateTime) {
			out[a] = b
		}
	}
	return out
}

func q9(evs []generator.Event) []string {
	var out []string
	for a, b := range winning(evs) {
		out = append(out, queries.FormatRow("q9", queries.Q9Row(a, b)...))
	}
	return out
}

func q4(evs []generator.Event) []string {
	sum, n := map[int64]int64{}, map[int64]int64{}
	for a, b := range winning(evs) {
		sum[a.Category] += b.Price
		n[a.Category]++
	}
	var out []string
	for c := range sum {
		out = append(out, queries.FormatRow("q4", c, sum[c]/n[c]))
	}
	return out
}

func q10(evs []generator.Event) []string {
	var out []string
	for _, b := range bids(evs) {
		out = append(out, fmt.Sprintf("q10\tdt=%s\thm=%s\t%d\t%d\t%d\t%d\t%s",
			queries.Day(b.DateTime), queries.Minute(b.DateTime), b.Auction, b.Bidder, b.Price, b.DateTime, b.Extra))
	}
	return out
}

// q12 is checked as bids per bidder: how processing time cuts them into
// windows differs from run to run, their sum per bidder does not.
func q12(evs []generator.Event) []string {
	n := map[int64]int64{}
	for _, b := range bids(evs) {
		n[b.Bidder]++
	}
	var out []string
	for bidder, c := range n {
		out = append(out, queries.FormatRow("q12", bidder, c))
	}
	return out
}

// q12Sum sums the printed windows' counts per bidder.
func q12Sum(rows []string) []string {
	n := map[string]int64{}
	for _, r := range rows {
		cols := strings.Split(r, "\t")
		c, _ := strconv.ParseInt(cols[2], 10, 64)
		n[cols[1]] += c
	}
	var out []string
	for bidder, c := range n {
		out = append(out, "q12\t"+bidder+"\t"+strconv.FormatInt(c, 10))
	}
	return out
}

func q13(evs []generator.Event, seed uint64) []string {
	side := queries.SideInput(seed)
	var out []string
	for _, b := range bids(evs) {
		if v, ok := side[b.Auction%queries.SideInputRows]; ok {
			out = append(out, queries.FormatRow("q13", b.Auction, b.Bidder, b.Price, b.DateTime, v))
		}
	}
	return out
}

func q6(evs []generator.Event) []string {
	per := map[int64]map[int64]int64{}
	for a, b := range winning(evs) {
		if per[a.Seller] == nil {
			per[a.Seller] = map[int64]int64{}
		}
		per[a.Seller][a.ID] = b.Price
	}
	var out []string
	for seller, finals := range per {
		ids := make([]int64, 0, len(finals))
		for id := range finals {
			ids = append(ids, id)
		}
		sort.Slice(ids, func(i, j int) bool { return ids[i] > ids[j] })
		ids = ids[:min(10, len(ids))]
		var sum int64
		for _, id := range ids {
			sum += finals[id]
		}
		out = append(out, queries.FormatRow("q6", seller, sum/int64(len(ids))))
	}
	return out
}
