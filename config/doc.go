// Package config loads and validates the sink configuration: YAML plus SINK_ environment overrides.
package config
