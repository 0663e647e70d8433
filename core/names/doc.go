// Package names holds the one rule for each kind of name an operator or a
// topology author gives Egret: topology, component and stream names,
// cluster names, roles, environments, and container indices.
//
// These values end up in file paths (working directories, package
// repositories, state directories), state-manager node paths, package file
// names and resource-manager job ids. They are untrusted input: the CLI and
// the launcher check every one with Check (or ParseContainer) before they do
// anything else, and an invalid one is a usage error naming the rule.
// Daemons check the names they are handed again, and the code that builds a
// file path from a name also goes through internal/safepath (defence in
// depth).
//
// The rules:
//
//   - Topology, component and stream names: an ASCII letter, then ASCII
//     letters, digits, '-' and '_'; at most 63 characters. They are usable
//     unchanged as a file name, a ZooKeeper node name and a Nomad job id,
//     and (lowercased) as a Kubernetes name.
//   - Cluster names, roles and environments: an ASCII letter or digit, then
//     ASCII letters, digits, '.', '-' and '_'; at most 63 characters. Roles
//     default to the user name, which may hold dots.
//   - Container indices: decimal digits only, at most 9 of them (0 is the
//     topology manager's container).
//
// Neither rule admits a path separator, "." or "..", a NUL byte,
// whitespace or any non-ASCII character (so no Unicode look-alike of '/'
// or '.').
package names
