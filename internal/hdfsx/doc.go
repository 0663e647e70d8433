// Package hdfsx is the HDFS plumbing shared by the hdfs uploader and the
// fetch side (containers fetching hdfs:// packages): parsing hdfs:// URIs,
// connecting to a NameNode as a given user with bounded dial times, and
// mapping the client's errors to the SPI's sentinels. It wraps
// github.com/colinmarc/hdfs/v2 (simple authentication only).
package hdfsx
