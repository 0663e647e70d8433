package queries

import (
	"regexp"
	"strings"
	"time"

	"github.com/egret-stream/egret/api"
	"github.com/egret-stream/egret/examples/nexmark/source"
)

// Bid tuple fields.
const (
	bAuction = iota
	bBidder
	bPrice
	bChannel
	bURL
	bDateTime
	bExtra
)

// bidQuery adds a stateless query over bids: one bolt, local-or-shuffle
// from the source, that calls fn for every bid.
func (p *Plan) bidQuery(fn func(t api.Tuple, res *Results)) {
	p.bidQueryWith(func(api.Context) (func(api.Tuple, *Results), error) { return fn, nil })
}

// bidQueryWith is bidQuery with a function made per task.
func (p *Plan) bidQueryWith(newFn func(ctx api.Context) (func(api.Tuple, *Results), error)) {
	events := p.Events(false, 0)
	d := p.Topology().SetBolt(p.Name("bids"), p.stateless(newFn), p.parallelism).
		Input(events, source.BidStream, api.LocalOrShuffle())
	p.withEnd(d)
}

func init() {
	register(&Query{Name: "q0", Title: "pass-through: every bid", build: func(p *Plan) {
		p.bidQuery(func(t api.Tuple, res *Results) {
			res.Row(t.Int64(bAuction), t.Int64(bBidder), t.Int64(bPrice), t.Int64(bDateTime), t.String(bExtra))
		})
	}})
	register(&Query{Name: "q1", Title: "currency conversion: bid prices in euros", build: func(p *Plan) {
		p.bidQuery(func(t api.Tuple, res *Results) {
			res.Row(t.Int64(bAuction), t.Int64(bBidder), Euros(t.Int64(bPrice)), t.Int64(bDateTime), t.String(bExtra))
		})
	}})
	register(&Query{Name: "q2", Title: "selection: the bids of every 123rd auction", build: func(p *Plan) {
		p.bidQuery(func(t api.Tuple, res *Results) {
			if a := t.Int64(bAuction); a%123 == 0 {
				res.Row(a, t.Int64(bPrice))
			}
		})
	}})
	register(&Query{Name: "q14", Title: "calculation: converted prices in a range, time of day, 'c' count", build: func(p *Plan) {
		p.bidQuery(func(t api.Tuple, res *Results) {
			price := Euros(t.Int64(bPrice))
			if price > 1_000_000 && price < 50_000_000 {
				extra := t.String(bExtra)
				res.Row(t.Int64(bAuction), t.Int64(bBidder), price, BidTimeType(t.Int64(bDateTime)), t.Int64(bDateTime), extra, int64(strings.Count(extra, "c")))
			}
		})
	}})
	register(&Query{Name: "q21", Title: "add channel id: a channel's id from its name or url", build: func(p *Plan) {
		p.bidQuery(func(t api.Tuple, res *Results) {
			if id, ok := ChannelID(t.String(bChannel), t.String(bURL)); ok {
				res.Row(t.Int64(bAuction), t.Int64(bBidder), t.Int64(bPrice), t.String(bChannel), id)
			}
		})
	}})
	register(&Query{Name: "q22", Title: "get URL directories: split a bid's url", build: func(p *Plan) {
		p.bidQuery(func(t api.Tuple, res *Results) {
			u := t.String(bURL)
			res.Row(t.Int64(bAuction), t.Int64(bBidder), t.Int64(bPrice), t.String(bChannel), SplitIndex(u, '/', 3), SplitIndex(u, '/', 4), SplitIndex(u, '/', 5))
		})
	}})
}

// Euros converts a price in dollar cents: 0.908 × price.
func Euros(price int64) float64 { return 0.908 * float64(price) }

// BidTimeType classifies a bid's hour of day (UTC), as q14 does.
func BidTimeType(ms int64) string {
	h := time.UnixMilli(ms).UTC().Hour()
	switch {
	case h >= 8 && h <= 18:
		return "dayTime"
	case h <= 6 || h >= 20:
		return "nightTime"
	}
	return "otherTime"
}

var channelIDs = map[string]string{"apple": "0", "google": "1", "facebook": "2", "baidu": "3"}

// ChannelID is q21's channel id: a hot channel's number, else the
// channel_id parameter of the url; false when neither exists.
func ChannelID(channel, url string) (string, bool) {
	if id, ok := channelIDs[strings.ToLower(channel)]; ok {
		return id, true
	}
	m := channelIDParam.FindStringSubmatch(url)
	if m == nil {
		return "", false
	}
	return m[2], true
}

var channelIDParam = regexp.MustCompile(`(&|^)channel_id=([^&]*)`)

// SplitIndex is SQL's SPLIT_INDEX(s, sep, i): the i-th field of s split
// at sep, or nil when there is none.
func SplitIndex(s string, sep byte, i int) any {
	for ; i > 0; i-- {
		j := strings.IndexByte(s, sep)
		if j < 0 {
			return nil
		}
		s = s[j+1:]
	}
	if j := strings.IndexByte(s, sep); j >= 0 {
		s = s[:j]
	}
	return s
}
