package tuple

import "errors"

// Sentinel errors, returned wrapped with context; test them with errors.Is.
var (
	// ErrCorrupt: the encoded input is truncated, malformed, non-canonical or
	// nested too deeply.
	ErrCorrupt = errors.New("corrupt tuple encoding")
	// ErrUnsupportedType: a value has a Go type that is neither a built-in
	// kind nor registered in the Registry.
	ErrUnsupportedType = errors.New("unsupported tuple value type")
	// ErrNoCodec: an encoded user value has an id with no codec in the
	// Registry.
	ErrNoCodec = errors.New("no codec registered for user type id")
	// ErrWrongKind: a typed Reader method found a value of another kind, or
	// one out of the method's range.
	ErrWrongKind = errors.New("tuple value has another kind")
	// ErrTooDeep: lists and maps are nested more than MaxDepth levels (when
	// decoding, the error also wraps ErrCorrupt).
	ErrTooDeep = errors.New("tuple value nested too deeply")
	// ErrRegistry: a Register call was invalid (duplicate id or type, nil
	// codec, built-in type).
	ErrRegistry = errors.New("invalid codec registration")
)
