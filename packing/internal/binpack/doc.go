// Package binpack holds what Egret's packing algorithms share: the packing
// config keys and their defaults, per-component instance resources,
// container capacity and padding, the fit checks with their error messages,
// and the repacking engine. Each algorithm package (roundrobin, ffd, rcrr)
// only chooses the order and the container of each instance.
package binpack
