// Package launcher implements the topology operations of the egret CLI:
// submit, kill, activate, deactivate, restart, update and list. It drives
// the pluggable core — packing, uploader, state manager and scheduler,
// each built in or loaded as a plugin through Backends — and keeps the
// state manager consistent: a submit that fails half-way undoes what it did,
// and kill is idempotent and also cleans a half-dead topology.
package launcher
