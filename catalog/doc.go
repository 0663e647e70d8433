// Package catalog links Egret's built-in backends into a binary: it
// blank-imports every scheduler, state manager, uploader, packing
// algorithm, checkpoint storage and metrics sink, each of which registers
// its factory and its config keys with core/spi.
//
// Package conf derives the config schema, conf/REFERENCE.md and the
// built-in name lists from that registry, so it never imports a backend;
// the egret CLI (package cli) imports this package, and so do the tests
// that load cluster configs. Adding a backend touches its own folder and
// one import line here.
package catalog
