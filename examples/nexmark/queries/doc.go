// Package queries holds the Nexmark queries written on Egret's public
// APIs: spouts and bolts (api), windows (api/window) and unbounded table
// operators (api/table). Each query adds its components, named
// "<query>-<part>", to a topology; docs/nexmark.md describes every plan.
//
// Every query reads the events of the source spout (package source) and
// ends in a task that hands each result row to a Results: with the
// setting nexmark.sink=print it writes the row as one tab-separated line
// "<query>\t<values...>" to standard output (the correctness tests read
// it), otherwise it only counts rows in the user counter
// "nexmark.results" (the benchmark). When a final task has seen the end
// of a bounded input it prints "<query>\tEND\t<task index>".
//
// Queries whose result is a table that changes (the unbounded
// aggregations, top-N, deduplication) print upserts: a row replaces the
// previous row of its key.
package queries
