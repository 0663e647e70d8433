package wire

import (
	"fmt"

	"github.com/egret-stream/egret/core/topology"
)

// StreamInfo describes one stream of a topology.
type StreamInfo struct {
	Component string
	ID        string
	Fields    []string
	Direct    bool
}

// TickStreamIndex is the index of the system tick stream in every table.
const TickStreamIndex = 0

// StreamTable numbers the streams of a topology: index 0 is the system tick
// stream, then every component's output streams in definition order. Every
// process derives the same table from the same topology.
type StreamTable struct {
	streams []StreamInfo
	index   map[[2]string]uint32
}

// NewStreamTable builds the table of t.
func NewStreamTable(t *topology.Topology) *StreamTable {
	st := &StreamTable{index: map[[2]string]uint32{}}
	st.add(StreamInfo{Component: "__system", ID: "__tick"})
	for _, c := range t.Components {
		for _, s := range c.Outputs {
			st.add(StreamInfo{Component: c.Name, ID: s.ID, Fields: s.Fields, Direct: s.Direct})
		}
	}
	return st
}

func (st *StreamTable) add(s StreamInfo) {
	st.index[[2]string{s.Component, s.ID}] = uint32(len(st.streams))
	st.streams = append(st.streams, s)
}

// Index returns the index of a component's stream.
func (st *StreamTable) Index(component, stream string) (uint32, bool) {
	i, ok := st.index[[2]string{component, stream}]
	return i, ok
}

// Stream returns the stream with index i.
func (st *StreamTable) Stream(i uint32) (*StreamInfo, error) {
	if int(i) >= len(st.streams) {
		return nil, fmt.Errorf("%w: unknown stream index %d", ErrCorrupt, i)
	}
	return &st.streams[i], nil
}
