// Package launcher implements the topology operations of the egret CLI:
// submit, kill, activate, deactivate, restart, update and list. It drives
// the pluggable core — packing, uploader, state manager and scheduler,
// each built in or loaded as a plugin through Backends — and keeps the
// state manager consistent: a submit that fails half-way undoes what it did,
// and kill is idempotent and also cleans a half-dead topology.
//
// Names are untrusted input. Every operation checks the topology name (and
// container index) it is given with the rules of core/names before it
// resolves the config, loads a backend or touches anything; submit checks
// the name the topology binary defines the same way. An invalid one is bad
// input (IsBadInput), and nothing has happened.
package launcher
