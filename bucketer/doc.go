// Package bucketer computes the time buckets, event buckets and slices that decide which Cassandra partition an event lands in.
package bucketer
