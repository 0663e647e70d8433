// Package rcrr is resource-compliant round-robin packing. Pack starts with
// topology.containers containers and deals the instances (ram then cpu
// descending, definition order on ties, then index) in strict circular
// order; when an instance does not fit the container whose turn it is, it
// adds one container and deals again from the start. The result is the
// round-robin placement over the smallest container count, at least
// topology.containers, in which every container fits, so containers stay
// balanced. Repack places new instances with flexible round robin instead:
// a container that cannot fit is skipped, and one is added when none fits.
//
// Capacity and padding are those of ffd: topology.container.max.* when set,
// else 10 default instances per dimension, and padding the larger of the
// fixed egret.packing.padding.* and egret.packing.padding.percentage of the
// capacity.
//
// Importing the package registers it as "rcrr".
package rcrr
