// Package source is the Nexmark generator as an Egret spout, and the
// tuple layout of its three streams.
//
// The spout emits persons, auctions and bids on the streams "person",
// "auction" and "bid", one tuple field per event field, of basic types
// (int64 and string; times are Unix milliseconds), so the tuple codec
// encodes them without reflection or JSON; Person, Auction and Bid read
// them back. Task i of n generates positions i, i+n, i+2n, ... of the
// stream (generator.SplitOf), so the tasks together emit every event once.
//
// Delivery: in at-least-once mode every tuple is tracked with its event
// position as message id and a failed one is generated again and
// replayed; in effectively-once mode the spout's position is its
// checkpointed state, so a rollback rewinds it. When a task has emitted
// its share (nexmark.events), it emits one tuple on EndStream carrying
// EndOfInput as its time, which moves the watermark of event-time
// consumers past every window (Flink's end-of-input watermark).
//
// The spout reads its settings from the topology configuration, so the
// same topology binary runs it in a container: see the Key constants.
package source
