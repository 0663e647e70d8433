// Package nodepath holds the path rules shared by Egret's state manager
// backends.
package nodepath
