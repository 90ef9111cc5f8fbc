package registry

import (
	"errors"
	"testing"
	"time"

	"github.com/bucketsink/sink/codec"
)

// TestUnknownIDsAreBounded: a flood of distinct unknown ids (random bytes after the magic byte) keeps at
// most maxUnknown of them; once full, an expired answer makes room and a live one is never dropped.
func TestUnknownIDsAreBounded(t *testing.T) {
	c := &Client{unknown: map[int]unknownID{}}
	t0 := time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)
	u := func(at time.Time) unknownID { return unknownID{err: codec.ErrUnknownSchema, until: at.Add(UnknownTTL)} }
	for id := range maxUnknown {
		c.rememberUnknown(id, u(t0), t0)
	}
	c.rememberUnknown(maxUnknown, u(t0), t0)
	if len(c.unknown) != maxUnknown {
		t.Fatalf("%d ids kept, want at most %d", len(c.unknown), maxUnknown)
	}
	if _, ok := c.unknown[maxUnknown]; ok {
		t.Error("a new id displaced a live answer")
	}
	// A known id's answer is renewed in place even when full.
	later := t0.Add(UnknownTTL / 2)
	c.rememberUnknown(7, u(later), later)
	if got := c.unknown[7].until; !got.Equal(later.Add(UnknownTTL)) {
		t.Errorf("id 7 kept until %v, want renewed to %v", got, later.Add(UnknownTTL))
	}
	// Past the first answers' TTL they make room; id 7's renewed answer stays.
	after := t0.Add(UnknownTTL)
	c.rememberUnknown(maxUnknown, u(after), after)
	if _, ok := c.unknown[maxUnknown]; !ok || len(c.unknown) != 2 {
		t.Errorf("%d ids kept after expiry (new one kept: %v), want 2: id 7 and the new one", len(c.unknown), ok)
	}
	if !errors.Is(c.unknown[7].err, codec.ErrUnknownSchema) {
		t.Error("id 7's live answer was dropped")
	}
}
