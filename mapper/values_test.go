package mapper

import (
	"github.com/bucketsink/sink/batcher"
	"github.com/bucketsink/sink/packed"
)

// Values is the bound values of r (packed.Values of its packed bytes), for the tests.
func Values(r batcher.Row) []any { return packed.Values(r.Packed) }

// GoValue is packed.GoValue, for the tests.
func GoValue(v any) any { return packed.GoValue(v) }
