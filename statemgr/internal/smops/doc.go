// Package smops checks and describes the operations of a state manager
// Multi, shared by Egret's backends so that they report errors alike.
package smops
