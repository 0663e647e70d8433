// Package wire is the data plane's binary format shared by instances and
// stream managers: tuple records, batches of records for one destination
// task, and the stream table that numbers a topology's streams.
//
// A stream manager routes batches by destination task id and never decodes
// records; instances encode and decode them. docs/protocol.md describes the
// format byte by byte.
package wire
