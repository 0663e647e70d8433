// Package conf loads, substitutes and validates Egret's per-cluster operator
// configuration and hands the result to backends as a flat spi.Config.
//
// # Files and load order
//
// A cluster's configuration is a set of YAML files named client.yaml,
// scheduler.yaml, packing.yaml, statemgr.yaml, uploader.yaml, internals.yaml
// and metrics_sinks.yaml. They are read in three layers; a later layer wins
// key by key:
//
//  1. the defaults embedded in the egret binary (conf/clusters/<cluster>/),
//     on top of the schema defaults of the core keys and of the selected
//     backends' keys;
//  2. the operator's files in <ConfigPath>/<cluster>/ (default
//     ~/.egret/conf/<cluster>/); only the files present are read, and a
//     cluster that exists only there is a new, user-defined cluster;
//  3. --config-property key=value overrides.
//
// Keys are flat dotted names ("egret.statemgr.root.path: /egret"); nested YAML
// maps are accepted and flattened with dots. Keys are case-insensitive (they
// are lower-cased, as viper does); values keep their case.
//
// # Substitution
//
// Values may reference ${EGRET_HOME}, ${CLUSTER}, ${ROLE}, ${ENVIRON},
// ${TOPOLOGY}, ${HOME} and any environment variable; ${NAME:-fallback} uses
// the fallback when NAME is not set, and $$ is a literal $. A variable's own
// value is expanded in turn (a cycle is an error). ${TOPOLOGY} stays as it is
// until a topology name is known (see Cluster.WithTopology). An unknown
// variable is an error naming the key and the variable.
//
// # Validation
//
// Every key of the schema (see Schema and REFERENCE.md, generated from it by
// TestReferenceUpToDate) has a type that is checked, and the value stored in
// the resolved config is canonical: sizes are plain byte counts, booleans are
// true or false, lists are comma-separated. Keys of backends that are not
// built in (egret.<kind>.<plugin>.* and egret.<plugin>.*) pass through
// unchecked; any other unknown key is an error, with a "did you mean"
// suggestion when a schema key is close. Load reports every problem at once
// in a *ValidationError, each with the file (and line, when known) and key.
package conf
