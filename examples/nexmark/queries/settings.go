package queries

// Settings of individual queries.
const (
	// KeySideInput is q13's side input: a file of "key<TAB>value" lines
	// (default: a table generated from the seed, see SideInput).
	KeySideInput = "nexmark.side.input"
	// KeyQ10Dir is the directory q10 writes to: a local path, or
	// hdfs://namenode:port/path (default: nexmark-q10 in the temporary
	// directory).
	KeyQ10Dir = "nexmark.q10.dir"
)
