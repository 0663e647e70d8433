// Package roundrobin is Egret's default packing algorithm: the instances are
// dealt one by one to a fixed number of containers (topology.containers) in
// circular order, components by ram then cpu descending (definition order on
// ties), each component's instances by index. A container needs the sum of
// its instances plus the fixed padding (egret.packing.padding.cpu/ram/disk;
// the percentage does not apply). When a topology.container.max.* limit is
// set and a container exceeds it, packing fails with an error wrapping
// spi.ErrCannotFit; containers are never added.
//
// Importing the package registers it as "roundrobin".
package roundrobin
