package generator

import (
	"errors"
	"fmt"
)

// Fixed rules of the generator (Beam's GeneratorConfig and the event
// generators' constants).
const (
	FirstPersonID   = 1000
	FirstAuctionID  = 1000
	FirstCategoryID = 10
	NumCategories   = 5

	personIDLead     = 10
	auctionIDLead    = 10
	hotSellerRatio   = 100
	hotAuctionRatio  = 100
	hotBidderRatio   = 100
	hotChannelsRatio = 2
	channelsNumber   = 10_000
	minStringLength  = 3
)

// Config is what the events depend on besides their id. The zero value is
// not valid; start from Default.
type Config struct {
	// Seed selects one of many deterministic event streams.
	Seed uint64
	// Rate is the event-time rate: events per second of event time
	// (timestamps advance by 1/Rate s per event). It is not the rate at
	// which a source emits.
	Rate float64
	// BaseTime is the event time of event 0, in Unix milliseconds.
	BaseTime int64

	PersonProportion, AuctionProportion, BidProportion int64

	AvgPersonByteSize, AvgAuctionByteSize, AvgBidByteSize int

	// HotAuctionRatio, HotSellersRatio and HotBiddersRatio: a bid's
	// auction, an auction's seller and a bid's bidder are hot with
	// probability 1 - 1/ratio.
	HotAuctionRatio, HotSellersRatio, HotBiddersRatio int64
	// NumInFlightAuctions is how many recent auctions cold bids choose
	// from; NumActivePeople how many recent persons cold sellers and
	// bidders choose from.
	NumInFlightAuctions, NumActivePeople int64
	// OutOfOrderGroupSize permutes the ids of every group of that many
	// consecutive positions (1: in order).
	OutOfOrderGroupSize int64
}

// Default is the configuration of Beam's and the nexmark project's
// defaults, at an event-time rate of 10 M events/s (the nexmark project's
// 100 M-event suite), seed 1 and a fixed base time (2026-01-01 UTC).
func Default() Config {
	return Config{
		Seed:                1,
		Rate:                10_000_000,
		BaseTime:            1_767_225_600_000,
		PersonProportion:    1,
		AuctionProportion:   3,
		BidProportion:       46,
		AvgPersonByteSize:   200,
		AvgAuctionByteSize:  500,
		AvgBidByteSize:      100,
		HotAuctionRatio:     2,
		HotSellersRatio:     4,
		HotBiddersRatio:     4,
		NumInFlightAuctions: 100,
		NumActivePeople:     1000,
		OutOfOrderGroupSize: 1,
	}
}

// Validate reports every setting out of range.
func (c Config) Validate() error {
	var errs []error
	check := func(ok bool, format string, args ...any) {
		if !ok {
			errs = append(errs, fmt.Errorf(format, args...))
		}
	}
	check(c.Rate > 0, "generator: Rate %v must be > 0 events per second of event time", c.Rate)
	check(c.PersonProportion > 0 && c.AuctionProportion > 0 && c.BidProportion > 0,
		"generator: the proportions %d:%d:%d must all be > 0", c.PersonProportion, c.AuctionProportion, c.BidProportion)
	check(c.AvgPersonByteSize >= 0 && c.AvgAuctionByteSize >= 0 && c.AvgBidByteSize >= 0, "generator: average sizes must be >= 0")
	check(c.HotAuctionRatio > 0 && c.HotSellersRatio > 0 && c.HotBiddersRatio > 0, "generator: hot ratios must be > 0")
	check(c.NumInFlightAuctions > 0 && c.NumActivePeople > 0, "generator: NumInFlightAuctions and NumActivePeople must be > 0")
	check(c.OutOfOrderGroupSize > 0 && c.OutOfOrderGroupSize%953 != 0,
		"generator: OutOfOrderGroupSize %d must be > 0 and not a multiple of 953", c.OutOfOrderGroupSize)
	return errors.Join(errs...)
}

func (c *Config) total() int64 { return c.PersonProportion + c.AuctionProportion + c.BidProportion }

// ID returns the event id at position n of the stream (Beam's adjusted
// event number): n itself unless OutOfOrderGroupSize permutes it.
func (c *Config) ID(n int64) int64 {
	g := c.OutOfOrderGroupSize
	if g <= 1 {
		return n
	}
	return n/g*g + (n*953)%g
}

// Timestamp returns the event time (Unix ms) of the event with id id.
func (c *Config) Timestamp(id int64) int64 {
	return c.BaseTime + int64(float64(id)*1000/c.Rate)
}

// Kind returns the kind of the event with id id.
func (c *Config) Kind(id int64) Kind {
	rem := id % c.total()
	switch {
	case rem < c.PersonProportion:
		return KindPerson
	case rem < c.PersonProportion+c.AuctionProportion:
		return KindAuction
	}
	return KindBid
}

// lastPerson is the base-0 id of the last person generated at or before
// event id.
func (c *Config) lastPerson(id int64) int64 {
	epoch, off := id/c.total(), id%c.total()
	if off >= c.PersonProportion {
		off = c.PersonProportion - 1
	}
	return epoch*c.PersonProportion + off
}

// lastAuction is the base-0 id of the last auction generated at or before
// event id.
func (c *Config) lastAuction(id int64) int64 {
	epoch, off := id/c.total(), id%c.total()
	switch {
	case off < c.PersonProportion:
		epoch--
		off = c.AuctionProportion - 1
	case off >= c.PersonProportion+c.AuctionProportion:
		off = c.AuctionProportion - 1
	default:
		off -= c.PersonProportion
	}
	return epoch*c.AuctionProportion + off
}

// nextPerson picks a recent person (base 0) for event id: one of the last
// NumActivePeople, or up to personIDLead beyond the last.
func (c *Config) nextPerson(id int64, r *rng) int64 {
	n := c.lastPerson(id) + 1
	active := min(n, c.NumActivePeople)
	return n - active + r.intn(active+personIDLead)
}

// nextAuction picks an in-flight auction (base 0) for event id.
func (c *Config) nextAuction(id int64, r *rng) int64 {
	last := c.lastAuction(id)
	lo := max(last-c.NumInFlightAuctions, 0)
	return lo + r.intn(last-lo+1+auctionIDLead)
}

// auctionLength draws how long an auction of event id runs (ms): up to
// twice the event time NumInFlightAuctions auctions take.
func (c *Config) auctionLength(id int64, ts int64, r *rng) int64 {
	events := c.NumInFlightAuctions * c.total() / c.AuctionProportion
	horizon := c.Timestamp(id+events) - ts
	return 1 + r.intn(max(horizon*2, 1))
}
