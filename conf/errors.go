package conf

import (
	"errors"
	"strconv"
	"strings"
)

var (
	// ErrUnknownCluster: the cluster is neither embedded nor a directory in
	// the config path.
	ErrUnknownCluster = errors.New("unknown cluster")
	// ErrInvalidConfig is matched (errors.Is) by every *ValidationError.
	ErrInvalidConfig = errors.New("invalid configuration")
)

// Origins of values that do not come from a YAML file.
const (
	OriginDefault  = "default"           // the schema default
	OriginProperty = "--config-property" // a command-line override
)

// Problem is one thing wrong with a cluster's configuration.
type Problem struct {
	File    string // embedded:clusters/nomad/scheduler.yaml, /home/x/.egret/conf/nomad/scheduler.yaml, --config-property, or ""
	Line    int    // 1-based line in File, 0 when unknown
	Key     string // the key concerned, or ""
	Message string
}

// String formats the problem as "file:line: key: message", leaving out the
// parts that are empty.
func (p Problem) String() string {
	var b strings.Builder
	if p.File != "" {
		b.WriteString(p.File)
		if p.Line > 0 {
			b.WriteString(":" + strconv.Itoa(p.Line))
		}
		b.WriteString(": ")
	}
	if p.Key != "" {
		b.WriteString(p.Key + ": ")
	}
	b.WriteString(p.Message)
	return b.String()
}

// ValidationError lists every problem found while loading a cluster's
// configuration.
type ValidationError struct {
	Cluster  string
	Problems []Problem
}

// Error prints one line per problem.
func (e *ValidationError) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

// Unwrap makes errors.Is(err, ErrInvalidConfig) true.
func (e *ValidationError) Unwrap() error { return ErrInvalidConfig }
