package pipeline

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/bucketsink/sink/mapper"
)

// TestSchemaIDHeadersSeesTheValueAndTheKeyHeader: the header form of a value's and of a key's writer
// schema id are each reported on their own, in any order among other headers, so that the mapper can say
// which one it does not read.
func TestSchemaIDHeadersSeesTheValueAndTheKeyHeader(t *testing.T) {
	h := func(keys ...string) *kgo.Record {
		r := &kgo.Record{}
		for _, k := range keys {
			r.Headers = append(r.Headers, kgo.RecordHeader{Key: k, Value: []byte{1}})
		}
		return r
	}
	for _, tc := range []struct {
		r          *kgo.Record
		value, key bool
	}{
		{h(), false, false},
		{h("trace", mapper.HeaderValueSchemaID), true, false},
		{h(mapper.HeaderKeySchemaID, "trace"), false, true},
		{h(mapper.HeaderKeySchemaID, mapper.HeaderValueSchemaID), true, true},
		{h(mapper.HeaderValueSchemaID, mapper.HeaderKeySchemaID, "trace"), true, true},
	} {
		if v, k := SchemaIDHeaders(tc.r); v != tc.value || k != tc.key {
			t.Errorf("headers %v: value %v key %v, want %v %v", tc.r.Headers, v, k, tc.value, tc.key)
		}
	}
}
