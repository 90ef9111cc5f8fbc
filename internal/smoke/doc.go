// Package smoke holds the first integration tests: they prove that the Kafka broker and the Cassandra node the
// tests run against are real servers that keep what they are given. It has no code of its own.
package smoke
