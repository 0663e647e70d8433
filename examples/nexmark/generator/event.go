package generator

import (
	"math/bits"
	"strconv"
)

// Kind is the kind of an event.
type Kind uint8

// The kinds of events.
const (
	KindPerson Kind = iota + 1
	KindAuction
	KindBid
)

func (k Kind) String() string {
	switch k {
	case KindPerson:
		return "person"
	case KindAuction:
		return "auction"
	case KindBid:
		return "bid"
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Person is a new person (a user who may sell and bid).
type Person struct {
	ID           int64
	Name         string
	EmailAddress string
	CreditCard   string
	City         string
	State        string
	DateTime     int64 // Unix ms
	Extra        string
}

// Auction is a new auction.
type Auction struct {
	ID          int64
	ItemName    string
	Description string
	InitialBid  int64 // cents
	Reserve     int64 // cents
	DateTime    int64 // Unix ms
	Expires     int64 // Unix ms
	Seller      int64 // a person id
	Category    int64
	Extra       string
}

// Bid is a bid on an auction.
type Bid struct {
	Auction  int64
	Bidder   int64 // a person id
	Price    int64 // cents
	Channel  string
	URL      string
	DateTime int64 // Unix ms
	Extra    string
}

// Event is one event of the stream: exactly one of Person, Auction and
// Bid is set, as Kind says.
type Event struct {
	ID      int64
	Kind    Kind
	Person  *Person
	Auction *Auction
	Bid     *Bid
}

// Time returns the event time of the event (Unix ms).
func (e *Event) Time() int64 {
	switch e.Kind {
	case KindPerson:
		return e.Person.DateTime
	case KindAuction:
		return e.Auction.DateTime
	}
	return e.Bid.DateTime
}

var (
	firstNames = []string{"Peter", "Paul", "Luke", "John", "Saul", "Vicky", "Kate", "Julie", "Sarah", "Deiter", "Walter"}
	lastNames  = []string{"Shultz", "Abrams", "Spencer", "White", "Bartels", "Walton", "Smith", "Jones", "Noris"}
	usCities   = []string{"Phoenix", "Los Angeles", "San Francisco", "Boise", "Portland", "Bend", "Redmond", "Seattle", "Kent", "Cheyenne"}
	usStates   = []string{"AZ", "CA", "ID", "OR", "WA", "WY"}
	// HotChannels are the four channels half of the bids come through.
	HotChannels = []string{"Google", "Facebook", "Baidu", "Apple"}
)

// Generator makes the events of one Config. It keeps a scratch buffer, so
// one Generator must not be used from two goroutines at once.
type Generator struct {
	cfg     Config
	buf     []byte
	hotURLs [4]string
}

// New returns a generator; it fails on an invalid Config.
func New(cfg Config) (*Generator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	g := &Generator{cfg: cfg, buf: make([]byte, 0, 1024)}
	for i := range g.hotURLs {
		r := newRNG(cfg.Seed, -1-int64(i))
		g.hotURLs[i] = string(baseURL(nil, &r))
	}
	return g, nil
}

// Config returns the generator's configuration.
func (g *Generator) Config() Config { return g.cfg }

// At returns the event at position n of the stream (the event with id
// Config.ID(n)).
func (g *Generator) At(n int64) Event { return g.Event(g.cfg.ID(n)) }

// Event returns the event with id id.
func (g *Generator) Event(id int64) Event {
	c := &g.cfg
	r := newRNG(c.Seed, id)
	ts := c.Timestamp(id)
	e := Event{ID: id, Kind: c.Kind(id)}
	switch e.Kind {
	case KindPerson:
		e.Person = g.person(id, ts, &r)
	case KindAuction:
		e.Auction = g.auction(id, ts, &r)
	default:
		e.Bid = g.bid(id, ts, &r)
	}
	return e
}

func (g *Generator) str(r *rng, maxLen int64, special byte) string {
	g.buf = r.str(g.buf[:0], maxLen, special)
	return string(g.buf)
}

func (g *Generator) extra(r *rng, have, avg int) string {
	g.buf = r.extra(g.buf[:0], have, avg)
	return string(g.buf)
}

func (g *Generator) person(id, ts int64, r *rng) *Person {
	p := &Person{ID: g.cfg.lastPerson(id) + FirstPersonID, DateTime: ts}
	p.Name = firstNames[r.intn(int64(len(firstNames)))] + " " + lastNames[r.intn(int64(len(lastNames)))]
	g.buf = r.str(g.buf[:0], 7, ' ')
	g.buf = append(g.buf, '@')
	g.buf = r.str(g.buf, 5, ' ')
	g.buf = append(g.buf, ".com"...)
	p.EmailAddress = string(g.buf)
	g.buf = g.buf[:0]
	for i := 0; i < 4; i++ {
		if i > 0 {
			g.buf = append(g.buf, ' ')
		}
		n := r.intn(10000)
		g.buf = append(g.buf, byte('0'+n/1000), byte('0'+n/100%10), byte('0'+n/10%10), byte('0'+n%10))
	}
	p.CreditCard = string(g.buf)
	p.City = usCities[r.intn(int64(len(usCities)))]
	p.State = usStates[r.intn(int64(len(usStates)))]
	size := 8 + len(p.Name) + len(p.EmailAddress) + len(p.CreditCard) + len(p.City) + len(p.State)
	p.Extra = g.extra(r, size, g.cfg.AvgPersonByteSize)
	return p
}

func (g *Generator) auction(id, ts int64, r *rng) *Auction {
	c := &g.cfg
	a := &Auction{ID: c.lastAuction(id) + FirstAuctionID, DateTime: ts}
	if r.intn(c.HotSellersRatio) > 0 {
		a.Seller = c.lastPerson(id) / hotSellerRatio * hotSellerRatio
	} else {
		a.Seller = c.nextPerson(id, r)
	}
	a.Seller += FirstPersonID
	a.Category = FirstCategoryID + r.intn(NumCategories)
	a.InitialBid = r.price()
	a.Expires = ts + c.auctionLength(id, ts, r)
	a.ItemName = g.str(r, 20, ' ')
	a.Description = g.str(r, 100, ' ')
	a.Reserve = a.InitialBid + r.price()
	size := 8 + len(a.ItemName) + len(a.Description) + 8 + 8 + 8 + 8 + 8
	a.Extra = g.extra(r, size, c.AvgAuctionByteSize)
	return a
}

func (g *Generator) bid(id, ts int64, r *rng) *Bid {
	c := &g.cfg
	b := &Bid{DateTime: ts}
	if r.intn(c.HotAuctionRatio) > 0 {
		b.Auction = c.lastAuction(id) / hotAuctionRatio * hotAuctionRatio
	} else {
		b.Auction = c.nextAuction(id, r)
	}
	b.Auction += FirstAuctionID
	if r.intn(c.HotBiddersRatio) > 0 {
		b.Bidder = c.lastPerson(id)/hotBidderRatio*hotBidderRatio + 1
	} else {
		b.Bidder = c.nextPerson(id, r)
	}
	b.Bidder += FirstPersonID
	b.Price = r.price()
	if r.intn(hotChannelsRatio) > 0 {
		i := r.intn(int64(len(HotChannels)))
		b.Channel, b.URL = HotChannels[i], g.hotURLs[i]
	} else {
		b.Channel, b.URL = g.channel(r.intn(channelsNumber))
	}
	b.Extra = g.extra(r, 8+8+8+8, c.AvgBidByteSize)
	return b
}

// channel returns the name and url of cold channel n: both fixed per
// (seed, n); 9 channels in 10 carry their id in the url.
func (g *Generator) channel(n int64) (string, string) {
	r := newRNG(g.cfg.Seed, -100-n)
	g.buf = baseURL(g.buf[:0], &r)
	if r.intn(10) > 0 {
		g.buf = append(g.buf, "&channel_id="...)
		g.buf = strconv.AppendInt(g.buf, reverse32(uint32(n)), 10)
	}
	return "channel-" + strconv.FormatInt(n, 10), string(g.buf)
}

// reverse32 is |the 32-bit integer with v's bits reversed|.
func reverse32(v uint32) int64 {
	r := int64(int32(bits.Reverse32(v)))
	if r < 0 {
		r = -r
	}
	return r
}

func baseURL(dst []byte, r *rng) []byte {
	dst = append(dst, "https://www.nexmark.com/"...)
	for i := 0; i < 3; i++ {
		dst = r.str(dst, 5, '_')
		dst = append(dst, '/')
	}
	return append(dst, "item.htm?query=1"...)
}

// Split describes the event positions one of several tasks generates:
// First, First+Stride, First+2*Stride, ... below End.
type Split struct {
	First, Stride, End int64
}

// SplitOf returns task index's share of positions [0, total) among tasks
// tasks (total < 0: unbounded). The shares are disjoint and cover every
// position.
func SplitOf(index, tasks int, total int64) Split {
	if total < 0 {
		total = 1<<63 - 1
	}
	return Split{First: int64(index), Stride: int64(tasks), End: total}
}

// Count is the number of positions in the split.
func (s Split) Count() int64 {
	if s.First >= s.End {
		return 0
	}
	return (s.End-s.First-1)/s.Stride + 1
}

// Position returns the k-th position of the split.
func (s Split) Position(k int64) int64 { return s.First + k*s.Stride }
