package reader

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/reader/readertest"
)

// TestIntegrationLatestReadsTheNewestRowOfEachIDInOneRequestEach: on a latest-value table written by the
// pipeline, Latest returns each entity's newest event (whatever order its events were written in), in the
// order of the ids asked, none for an entity never written, with one request per entity; a time-range
// read of such a table is refused with ErrLatest.
func TestIntegrationLatestReadsTheNewestRowOfEachIDInOneRequestEach(t *testing.T) {
	cfg := readertest.Config(t, map[string]config.Topic{"latest": readertest.LatestTopic("device_id")})
	base := time.Now().UTC().Add(-time.Hour).Truncate(time.Millisecond)
	ev := func(id string, sec int, seq int64) readertest.Event {
		return readertest.At("latest", id, base, sec, seq)
	}
	f := readertest.NewFixture(t, cfg, []readertest.Event{ev("d1", 3, 13), ev("d1", 1, 11), ev("d2", 5, 25), ev("d1", 2, 12)}, []time.Time{base})

	var n atomic.Int64
	r := reader(t, f, "latest", countQueries{&n})
	rows, err := r.Latest(context.Background(), [][]any{{"d2"}, {"d3"}, {"d1"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := seqs(rows); len(got) != 2 || got[0] != 25 || got[1] != 13 {
		t.Errorf("rows %v, want d2's newest (25) then d1's (13), nothing for d3", got)
	}
	if n.Load() != 3 {
		t.Errorf("%d requests for 3 ids, want one each", n.Load())
	}
	if _, err := r.Read(context.Background(), Query{ID: []any{"d1"}, From: base, To: base.Add(time.Hour)}); !errors.Is(err, ErrLatest) {
		t.Errorf("a time-range read of a latest-value table: %v, want ErrLatest", err)
	}
	if _, err := r.Latest(context.Background(), [][]any{{"d1", "extra"}}); err == nil {
		t.Error("an id with too many values was read")
	}
}
