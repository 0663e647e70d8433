// Package generator is a deterministic Nexmark event generator: the
// online-auction stream of persons, auctions and bids that the Nexmark
// benchmark's queries read, following the rules of Apache Beam's Nexmark
// generator (and of the nexmark/nexmark project, which adds a bid's
// channel and url).
//
// Every event is a pure function of (Config.Seed, event id): Event(id)
// builds it without any state, so a source can start anywhere, replay any
// event and split the stream across tasks (Split gives each task a
// disjoint, strided set of event numbers). Out of every 50 consecutive
// ids, 1 is a person, 3 are auctions and 46 are bids (the proportions are
// configurable). Ids, prices, categories, sellers, bidders and timestamps
// follow Beam's rules:
//
//   - person ids and auction ids count up from 1000 in event-id order;
//   - an auction's seller is, 3 times out of 4, a "hot" seller (the first
//     person of the last block of 100 persons), else one of the last 1000
//     active persons (plus a lead of 10 ids that may not exist yet);
//   - a bid's auction is, 1 time out of 2, a hot auction (the first of the
//     last block of 100 auctions), else one of the last 100 in-flight
//     auctions (plus a lead of 10); its bidder is hot 3 times out of 4 (the
//     second person of the last block of 100);
//   - prices are 100 × 10^(6u) cents for u uniform in [0, 1): log-uniform
//     between $1 and $1,000,000;
//   - categories are 10..14; an auction expires uniformly within twice the
//     event time that 100 auctions take to be generated;
//   - a bid's channel is, 1 time out of 2, one of four hot channels with a
//     fixed url, else "channel-N" for N < 10,000 with a url fixed per N;
//   - the event at position n has event time BaseTime + n × 1e6/Rate µs;
//     with OutOfOrderGroupSize g > 1 the ids (and so the timestamps) of
//     every g consecutive positions are permuted (position n carries id
//     n - n mod g + (953 n) mod g), Beam's deterministic disorder.
//
// Strings (names, emails, descriptions, the "extra" padding that brings
// each event to its average size of 200, 500 and 100 bytes) are drawn from
// the same per-event random stream. The random stream is SplitMix64 seeded
// from the seed and the event id, not Java's Random: the events have
// Beam's distributions, not its exact values.
package generator
