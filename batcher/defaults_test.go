package batcher_test

import (
	"testing"

	"github.com/bucketsink/sink/batcher"
	"github.com/bucketsink/sink/config"
)

// TestZeroLimitsMeanConfigDefaults: the batcher is used without config (tests, benchmarks), so a
// zero limit has a meaning of its own; it must be config's writer.batch_max_rows and
// writer.batch_max_bytes, which the daemon always passes set (validated positive).
func TestZeroLimitsMeanConfigDefaults(t *testing.T) {
	if batcher.DefaultMaxRows != config.DefaultBatchMaxRows || batcher.DefaultMaxBytes != int(config.DefaultBatchMaxBytes) {
		t.Errorf("batcher defaults %d rows, %d bytes; config's are %d rows, %d bytes",
			batcher.DefaultMaxRows, batcher.DefaultMaxBytes, config.DefaultBatchMaxRows, config.DefaultBatchMaxBytes)
	}
}
