// Package tmlocation is how an executor hands the topology manager's
// location to the container process of its container
// (topology.container.mode process-per-container). That process is the
// topology binary, which links no state-manager backend; the executor,
// which does, watches the topology manager's node and writes its location
// into a file of the container's working directory whenever it changes
// (Write, atomic), and the container process's stream manager reads and
// watches that file (File, a stmgr.TManagerFinder).
//
// The file holds the TManagerLocation protobuf (proto/egretpb) as the
// state manager's node does; no file means no topology manager is
// registered.
package tmlocation
