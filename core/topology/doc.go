// Package topology is Egret's logical plan: the components of a topology
// (spouts and bolts), the streams they declare, how each bolt subscribes to
// streams (groupings), and the topology and component configuration.
//
// A Topology is what a topology binary writes in define mode and what the
// launcher submits. It converts to and from the protobuf definition in
// proto/ (Marshal, Unmarshal) and Validate reports every problem of a
// topology at once, naming the component, stream or field involved.
package topology
