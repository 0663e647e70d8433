// Package tuple is Egret's tuple value codec: a deterministic, documented
// binary encoding of tuple values (a tuple is an ordered list of values) and
// the fixed hash used by fields grouping.
//
// The encoding is used on every process boundary of the data plane and in
// memory by the in-process runner, so the hot paths are allocation-free:
//
//   - AppendValue and AppendValues encode into a caller-provided buffer and do
//     not allocate for the basic kinds when the buffer has capacity.
//   - Reader reads typed fields (Int, Uint, Float, StringBytes, ...) straight
//     from encoded bytes without boxing them into interfaces.
//   - ValueBounds finds the byte range of every value of an encoded tuple, for
//     lazy field access, into a caller-provided slice.
//   - HashValues, FieldsHash and HashEncodedFields compute the fields-grouping
//     hash of the logical key, from Go values or straight from encoded bytes;
//     both give the same result. TaskIndex maps a hash to a task.
//
// DecodeValue and DecodeValues are the convenient, allocating way back to Go
// values. Each decoded value has exactly the Go type it was encoded from
// (an int32 stays an int32); see docs/tuple-format.md for the few normalisations (times
// decode in UTC, nil slices decode as empty ones).
//
// Supported kinds are nil, bool, int, int8..int64, uint, uint8..uint64,
// float32, float64, string, []byte, time.Time, time.Duration, []any and
// map[string]any (nested to at most MaxDepth levels). Any other type is
// encoded through a Codec registered in a Registry under a numeric id; there
// is no global registry, and a nil *Registry means "no user types". A
// process without the codec of a user value can still skip, bound and hash
// it, because its payload is length-prefixed.
//
// Decoding never panics and never trusts a length prefix beyond the input
// that remains: corrupt, truncated or hostile input returns an error that
// wraps ErrCorrupt. The encoding is canonical: a valid input has exactly one
// encoding, and the decoder rejects every other (over-long varints,
// out-of-range narrow integers, unsorted or duplicate map keys), so
// encode(decode(b)) == b for every b that decodes.
//
// The exact byte format and the hash definition are in docs/tuple-format.md
// of the repository, precise enough to implement the codec in another
// language.
package tuple
