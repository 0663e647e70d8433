package source

import (
	"math"
	"time"

	"github.com/egret-stream/egret/api"
	"github.com/egret-stream/egret/examples/nexmark/generator"
)

// The spout's streams.
const (
	PersonStream  = "person"
	AuctionStream = "auction"
	BidStream     = "bid"
	// EndStream carries one tuple per spout task when its share of a
	// bounded run is emitted: fields EndFields, the time EndOfInput.
	EndStream = "end"
)

// EndOfInput is the event time of the end-of-input tuple (Unix ms): far
// past any event, so the watermark derived from it closes every window.
const EndOfInput int64 = math.MaxInt64 / 4

// Field names of the streams, in tuple order.
var (
	PersonFields  = []string{"id", "name", "email_address", "credit_card", "city", "state", "date_time", "extra"}
	AuctionFields = []string{"id", "item_name", "description", "initial_bid", "reserve", "date_time", "expires", "seller", "category", "extra"}
	BidFields     = []string{"auction", "bidder", "price", "channel", "url", "date_time", "extra"}
	EndFields     = []string{"date_time"}
)

// The index of the date_time field in each stream.
const (
	PersonTime  = 6
	AuctionTime = 5
	BidTime     = 5
)

// AppendValues appends the tuple values of e to dst.
func AppendValues(dst api.Values, e *generator.Event) api.Values {
	switch e.Kind {
	case generator.KindPerson:
		p := e.Person
		return append(dst, p.ID, p.Name, p.EmailAddress, p.CreditCard, p.City, p.State, p.DateTime, p.Extra)
	case generator.KindAuction:
		a := e.Auction
		return append(dst, a.ID, a.ItemName, a.Description, a.InitialBid, a.Reserve, a.DateTime, a.Expires, a.Seller, a.Category, a.Extra)
	}
	b := e.Bid
	return append(dst, b.Auction, b.Bidder, b.Price, b.Channel, b.URL, b.DateTime, b.Extra)
}

// StreamOf returns the stream of an event kind.
func StreamOf(k generator.Kind) string {
	switch k {
	case generator.KindPerson:
		return PersonStream
	case generator.KindAuction:
		return AuctionStream
	}
	return BidStream
}

// Person reads a person tuple.
func Person(t api.Tuple) generator.Person {
	return generator.Person{ID: t.Int64(0), Name: t.String(1), EmailAddress: t.String(2), CreditCard: t.String(3),
		City: t.String(4), State: t.String(5), DateTime: t.Int64(6), Extra: t.String(7)}
}

// Auction reads an auction tuple.
func Auction(t api.Tuple) generator.Auction {
	return generator.Auction{ID: t.Int64(0), ItemName: t.String(1), Description: t.String(2), InitialBid: t.Int64(3),
		Reserve: t.Int64(4), DateTime: t.Int64(5), Expires: t.Int64(6), Seller: t.Int64(7), Category: t.Int64(8), Extra: t.String(9)}
}

// Bid reads a bid tuple.
func Bid(t api.Tuple) generator.Bid {
	return generator.Bid{Auction: t.Int64(0), Bidder: t.Int64(1), Price: t.Int64(2), Channel: t.String(3),
		URL: t.String(4), DateTime: t.Int64(5), Extra: t.String(6)}
}

// Timestamp returns the event time of a tuple the spout emits, for
// window.SpoutWatermarks.
func Timestamp(stream string, v api.Values) time.Time {
	switch stream {
	case PersonStream:
		return time.UnixMilli(v[PersonTime].(int64))
	case AuctionStream:
		return time.UnixMilli(v[AuctionTime].(int64))
	case BidStream:
		return time.UnixMilli(v[BidTime].(int64))
	case EndStream:
		return time.UnixMilli(v[0].(int64))
	}
	return time.Time{}
}

// TupleTime returns the event time of a received tuple of any of the
// spout's streams (Unix ms).
func TupleTime(t api.Tuple) int64 {
	switch t.SourceStream() {
	case PersonStream:
		return t.Int64(PersonTime)
	case AuctionStream:
		return t.Int64(AuctionTime)
	case EndStream:
		return t.Int64(0)
	}
	return t.Int64(BidTime)
}
