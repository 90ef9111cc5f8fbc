package mapper

import (
	"testing"

	"github.com/bucketsink/sink/codec"
	"github.com/bucketsink/sink/config"
)

// TestUUIDWithStrayHyphen guards against a panic FuzzScanMatchesParse found: a 36-byte string
// with the four hyphens in place and one more elsewhere made parseCanonicalUUID skip that hyphen
// and read past the end, so one such record crashed the mapper (on the fastjson path too).
func TestUUIDWithStrayHyphen(t *testing.T) {
	for _, s := range []string{
		"00000000-0000-0000-0000-0000-0000000",
		"00000000-0000-0000-0000-00000000000-",
		"00000000-0000-0000-0000--00000000000",
		"00000000-0000-0000-00000000-0000000-",
	} {
		if u, ok := codec.ParseUUID([]byte(s)); ok {
			t.Errorf("%s parsed as %v", s, u)
		}
	}
	m := newMapper(t, func(tp *config.Topic) {
		tp.Columns = append(tp.Columns, config.Column{Name: "u", Type: "uuid", Field: "u"})
	})
	_, err := m.Map(rec(`{"device_id":"d","ts":"2024-01-15T14:37:22Z","temperature":1,"u":"00000000-0000-0000-0000-0000-0000000"}`))
	const want = `topic sensor-readings partition 3 offset 1207: column u: field "u" is "00000000-0000-0000-0000-0000-0000000", not a UUID (8-4-4-4-12 hex digits) for CQL uuid`
	if err == nil || Quoted(err) != want {
		t.Errorf("error %v, want %s", Quoted(err), want)
	}
	if _, ok := codec.ParseUUID([]byte("0B6A1F6E-3F0C-4A53-9B8F-1F2A3B4C5D6E")); !ok {
		t.Error("the canonical form no longer parses")
	}
}
