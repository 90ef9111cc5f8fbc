// Package secured holds the integration tests of the sink against a secured Kafka and Cassandra (`scripts/stack
// up --secure`): `sink run` end to end through SASL_SSL and mTLS into a TLS, password-protected Cassandra, and
// each way a connection can be refused at start. It has no code of its own.
package secured
