// Package doccmd finds the egret command lines that Markdown documentation
// shows (code blocks and inline code spans) and cuts them into the
// argument lists the CLI would receive, so that tests can parse
// (cli/docs_test.go) and run (test/e2e) every one of them.
package doccmd
