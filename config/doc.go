// Package config loads and validates the sink configuration: one YAML file plus SINK_
// environment overrides.
//
// # Loading
//
// Load reads the file once (so a pipe works), at most MaxFileBytes of it, as one YAML document,
// merges the environment over it, and decodes strictly: an unknown key anywhere (including inside
// topics.<name>) is an error naming its full key path and, when a known key is close, the one
// probably meant. Load then reads password files and fills defaults for keys left out; defaults
// live in Go (defaults.go) with the reasoning beside each. Validate checks values and their
// relations, each problem as "key.path: what is wrong; the fix". Check does both and reports every
// problem of both in one error; LoadContext and Check stop when their context ends.
//
// # Environment
//
// A variable SINK_<LEVEL>__<LEVEL>... overrides one key: the prefix SINK_, then the key path
// with "__" (two underscores) between levels, in any case. Single underscores belong to key
// names. Examples:
//
//	SINK_KAFKA__BROKERS=a:9092,b:9092          kafka.brokers (a list: comma-separated)
//	SINK_CASSANDRA__AUTH__PASSWORD=...         cassandra.auth.password
//	SINK_WRITER__MAX_IN_FLIGHT=32              writer.max_in_flight
//	SINK_TOPICS__READINGS__TTL=30d             topics.readings.ttl
//	SINK_TOPICS__SENSOR_READINGS__TTL=30d      topics.sensor-readings.ttl ("-" and "." in a file
//	                                           key are written "_")
//
// Lists of strings (kafka.brokers, cassandra.hosts, topics.<name>.id) take comma-separated
// values. Lists of mappings (columns, clustering) can only be set in the file. A variable may
// name a topic that the file does not have; that topic must then be complete from the
// environment alone. Only variables whose first level is a section (kafka, cassandra, writer,
// metrics, log, topics) are configuration; other SINK_ variables such as SINK_TEST_KAFKA are
// ignored, except a section name followed by a single underscore (SINK_KAFKA_BROKERS), which
// is reported as a likely typo.
//
// # Secrets
//
// Passwords are of type Secret, which never prints (fmt, slog, JSON and text marshalling all
// show "[redacted]"). They come from the file, from the environment
// (SINK_KAFKA__SASL__PASSWORD, SINK_CASSANDRA__AUTH__PASSWORD), or from password_file, read at
// load time (a trailing newline is dropped); the file wins over password. Relative paths are
// relative to the working directory.
package config
