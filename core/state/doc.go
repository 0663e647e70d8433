// Package state is Egret's node tree in the state manager, typed: the
// topology definition, packing plan, physical plan, execution state,
// topology-manager location (ephemeral), scheduler location and locks of
// every topology, and the atomic submit and kill that change them together.
//
//	/topologies/<name>      topology definition      submitter
//	/packingplans/<name>    packing plan             submitter, update
//	/executionstate/<name>  execution state          submitter
//	/pplans/<name>          physical plan            topology manager
//	/tmanagers/<name>       topology manager address topology manager (ephemeral)
//	/schedulers/<name>      scheduler location       scheduler
//	/locks/<name>           update lock              launcher
//	/checkpoints/<name>     checkpoints              topology manager (effectively-once)
//	/secrets/<name>         topology secret          submitter (the shells read it)
//	/shells/<name>.<c>      shell of container c     shell (ephemeral)
//
// Every node holds protobuf bytes (proto/egretpb).
package state
