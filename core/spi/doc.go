// Package spi defines the service-provider interfaces of Egret's pluggable
// core: Packing, Repacking, Launcher, Scheduler (with the optional Scalable
// capability; JobRenderer), Uploader (optional URIPreviewer) and
// StateManager, the registries that map a backend
// name to its built-in factory, and the sentinel errors shared by every
// implementation.
//
// The interfaces take and return plain Go structs; no protobuf type crosses
// them. Every built-in backend registers itself from an init function:
//
//	func init() { spi.RegisterStateManager("localfs", New, configKeys...) }
//
// with the config keys the backend reads (Key: name, type, default, doc),
// from which package conf derives the schema and its reference.
//
// and the same interface can be served by an external plugin binary through
// package plugins.
package spi
