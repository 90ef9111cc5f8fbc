// Package cassandra owns the Cassandra session, the batch writer and the schema DDL.
package cassandra
