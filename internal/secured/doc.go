// Package secured holds the integration tests of the sink against production-shaped servers: a secured Kafka
// and Cassandra (`scripts/stack up --secure`), with `sink run` end to end through SASL_SSL and mTLS into a TLS,
// password-protected Cassandra and each way a connection can be refused at start; and a three-node Cassandra
// ring (`scripts/stack up --cassandra-nodes 3`), with replicas going down under a running sink. It has no code
// of its own.
package secured
