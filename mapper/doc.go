// Package mapper turns one Kafka record into one Cassandra row for its topic's policy.
package mapper
