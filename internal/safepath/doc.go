// Package safepath builds file paths from values that may be hostile: names
// an operator typed (topology, role, cluster, ...), names read from a state
// manager, a journal or a URL. Join is the one constructor every such path
// goes through: it refuses any element that is not a single plain file
// name, so the path it returns always lies below its root, whatever the
// elements hold.
//
// It is defence in depth. Names are validated with their rules
// (core/names) where they enter Egret; safepath makes sure that a value
// which slipped past a check, or came from somewhere unchecked, still
// cannot reach a file outside the directory it was meant for. It works on
// the lexical path: it does not resolve symbolic links, so callers use it
// on directories that they own.
package safepath
