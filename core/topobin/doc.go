// Package topobin is the contract between Egret and a topology binary:
// the exit codes a topology binary returns, the environment variable with
// which egret submit runs it in define mode, and the layout of the
// topology package it runs from. The launcher and the executor depend on
// this contract, not on the runtime that implements it (api/runner), so the
// submit path links no stream manager or instance runtime.
package topobin
