// Package pipeline runs the Kafka consumer group and moves records to Cassandra at least once.
package pipeline
