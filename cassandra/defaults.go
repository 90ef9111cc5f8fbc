package cassandra

import (
	"time"

	"github.com/bucketsink/sink/config"
)

// Defaults are config's, applied once, by config.Load (or Config.ApplyDefaults), and validated
// there: `sink run` hands the session and the writer every value already set, so nothing here
// changes what the daemon does. What follows is only what a zero field means to a caller that
// builds a config.Cassandra or a WriterConfig in Go (tests, tools, benchmarks): the same config
// default, never a number of this package's own, so the two cannot drift apart.
const (
	defaultTimeout        = time.Duration(config.DefaultTimeout)
	defaultConnectTimeout = time.Duration(config.DefaultConnectTimeout)
	defaultNumConns       = config.DefaultNumConns
)

// withDefaults gives the zero fields of c config's writer.* defaults. RetryMax is at least
// RetryInitial, so a hand-built config with only a long RetryInitial still backs off sensibly.
func (c WriterConfig) withDefaults() WriterConfig {
	if c.MaxInFlight == 0 {
		c.MaxInFlight = config.DefaultMaxInFlight
	}
	if c.RetryInitial == 0 {
		c.RetryInitial = config.DefaultRetryInitial.Std()
	}
	if c.RetryMax == 0 {
		c.RetryMax = max(config.DefaultRetryMax.Std(), c.RetryInitial)
	}
	if c.Group.MaxPartitions == 0 {
		c.Group.MaxPartitions = config.DefaultGroupMaxPartitions
	}
	if c.Group.MaxBytes == 0 {
		c.Group.MaxBytes = int(config.DefaultGroupMaxBytes)
	}
	return c
}
