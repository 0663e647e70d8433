// Package ffd is first-fit-decreasing packing: the instances, sorted by ram
// then cpu descending (components in definition order on ties, then index),
// each go to the lowest-numbered container they fit, and a container is
// opened when none fits. The number of containers is an output:
// topology.containers is not read (the submitter should record
// len(plan.Containers)).
//
// A container's capacity in each dimension is topology.container.max.* when
// set, else binpack.DefaultMaxInstances (10) default instances
// (egret.packing.default.instance.*). Its padding is the larger of the fixed
// padding (egret.packing.padding.cpu/ram/disk) and
// egret.packing.padding.percentage of the capacity; instances may use the
// capacity minus the padding.
//
// Importing the package registers it as "ffd".
package ffd
