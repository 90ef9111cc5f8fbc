package deadletter

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Re-reading the source records of rows Cassandra refused.
//
// A refused row is dead-lettered with its original key, value and headers, but the pipeline does not keep
// a record once it is mapped: a *kgo.Record pins its struct, its franz-go record slab (every record of
// its batch), the decompressed batch and the fetch response, about 900 bytes per buffered record for a
// ~150-byte JSON event, which is what limited how many rows the byte budget let the write stage hold
// (docs/PERFORMANCE.md, "Memory"). Keeping a compact copy instead would still cost an allocation and
// the payload's bytes for every record, to serve a path that is rare (Cassandra refuses values, not
// records, and the mapper has already checked them). So the dead-letter sender reads the few records it
// needs back from Kafka by their coordinates, with a direct (non-group) consumer of its own.
//
// Kafka keeps a record at its offset until retention or compaction removes it, and the group's
// committed offset never passes a refused row before its dead letter is acknowledged, so the record is
// there unless the topic's retention or compaction removed it first (or the log was truncated). Then
// the record cannot be dead-lettered as it was: the refused row, which the write stage hands to the
// sender with its offset, is dead-lettered in its place (FromRow), so the partition goes on and
// what was refused is still on record. A re-read that merely fails (a broker unreachable, a timeout) is
// retried like a failed dead-letter produce.

// RereadTimeout is how long one re-read may go without finding a wanted record before it gives up (the
// sender then retries with backoff). A local fetch takes milliseconds; this allows for a leader
// election.
const RereadTimeout = 15 * time.Second

// rereadSeek is how far ahead of the last record read the next wanted offset must be for the re-read to
// seek to it rather than read through: reading a few thousand small records is cheaper than a seek,
// which costs a new fetch session.
const rereadSeek = 4096

// ErrRecordGone marks a wanted offset that the partition's log no longer holds.
var ErrRecordGone = errors.New("the record is no longer in the partition's log (removed by retention or compaction, or the log was truncated)")

// rereadSweep is the pure core of a re-read: it resolves wanted offsets, ascending, from the records of
// one partition read in offset order from at or below the first unresolved one. A record past a wanted
// offset that was not seen proves the log no longer holds it: offsets only ever leave a log.
type rereadSweep struct {
	want  []int64       // ascending, distinct
	recs  []*kgo.Record // recs[i] is the record at want[i], once found
	gone  []bool        // gone[i]: the log no longer holds want[i]
	next  int           // want[:next] are resolved
	after int64         // offset of the last record read, -1 before the first
}

func newRereadSweep(want []int64) *rereadSweep {
	return &rereadSweep{want: want, recs: make([]*kgo.Record, len(want)), gone: make([]bool, len(want)), after: -1}
}

// add takes the next record read. Records below the first unresolved offset are skipped (the read starts
// at the beginning of the record batch holding it).
func (s *rereadSweep) add(r *kgo.Record) {
	s.after = max(s.after, r.Offset)
	for s.next < len(s.want) && s.want[s.next] < r.Offset {
		s.gone[s.next] = true
		s.next++
	}
	if s.next < len(s.want) && s.want[s.next] == r.Offset {
		s.recs[s.next] = r
		s.next++
	}
}

// skip resolves the first unresolved offset as gone: the broker said it is out of the log's range.
func (s *rereadSweep) skip() {
	if s.next < len(s.want) {
		s.gone[s.next] = true
		s.next++
	}
}

// pending returns the first unresolved offset.
func (s *rereadSweep) pending() (int64, bool) {
	if s.next == len(s.want) {
		return 0, false
	}
	return s.want[s.next], true
}

// seek reports whether the re-read should jump to the first unresolved offset instead of reading on.
func (s *rereadSweep) seek() (int64, bool) {
	o, ok := s.pending()
	return o, ok && s.after >= 0 && o-s.after > rereadSeek
}

// Reread reads the records at offsets (ascending, distinct) of one partition, with clients built from
// opts (the connection options: brokers, TLS, SASL) and closed before it returns. recs[i] is the record
// at offsets[i]; gone[i] says the log no longer holds it. A non-nil error means the offsets neither found
// nor gone could not be read now (ctx ended, the client reported an error, or timeout passed without
// progress); what was resolved is returned all the same.
func Reread(ctx context.Context, opts []kgo.Opt, topic string, partition int32, offsets []int64, timeout time.Duration) (recs []*kgo.Record, gone []bool, err error) {
	s := newRereadSweep(offsets)
	for {
		from, ok := s.pending()
		if !ok {
			return s.recs, s.gone, nil
		}
		if err := s.readFrom(ctx, opts, topic, partition, from, timeout); err != nil {
			return s.recs, s.gone, err
		}
	}
}

// readFrom reads the partition from offset `from` with a client of its own until every offset is
// resolved, or the broker reports the position out of the log's range (the offset is gone; the caller
// starts again at the next one), or the client reports an error, or nothing was found for timeout.
func (s *rereadSweep) readFrom(ctx context.Context, opts []kgo.Opt, topic string, partition int32, from int64, timeout time.Duration) error {
	cl, err := kgo.NewClient(append(opts[:len(opts):len(opts)],
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {partition: kgo.NewOffset().At(from)}}),
		// Out of range is an answer (the record is gone), not something to recover from by jumping
		// elsewhere in the log.
		kgo.ConsumeResetOffset(kgo.NoResetOffset()),
		// One partition, a few records wanted: small fetches, answered quickly.
		kgo.FetchMaxBytes(1<<20),
		kgo.FetchMaxPartitionBytes(1<<20),
		kgo.FetchMaxWait(250*time.Millisecond),
	)...)
	if err != nil {
		return fmt.Errorf("creating a client to re-read %s/%d at offset %d: %w", topic, partition, from, err)
	}
	defer cl.Close()
	// pos is where the client fetches: from, the last seek, or one past the last record read. An out of
	// range answer says the offset at pos is gone only when pos is the wanted offset itself; otherwise
	// the log changed while it was read, and a new client starts again at the wanted offset.
	pos, sought := from, from
	deadline := time.Now().Add(timeout)
	var last error
	for {
		pctx, cancel := context.WithDeadline(ctx, deadline)
		fs := cl.PollFetches(pctx)
		cancel()
		if err := ctx.Err(); err != nil {
			return err
		}
		outOfRange := false
		fs.EachError(func(_ string, _ int32, err error) {
			switch {
			case errors.Is(err, kerr.OffsetOutOfRange):
				outOfRange = true
			case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
			default:
				last = err
			}
		})
		before := s.next
		fs.EachRecord(func(r *kgo.Record) {
			if r.Topic == topic && r.Partition == partition {
				s.add(r)
				pos = max(pos, r.Offset+1)
			}
		})
		if outOfRange {
			if o, ok := s.pending(); ok && o == pos {
				s.skip()
			}
			return nil
		}
		if s.next > before {
			deadline = time.Now().Add(timeout)
		}
		o, ok := s.pending()
		if !ok {
			return nil
		}
		if last != nil {
			// The client retries what it can by itself; an error it hands back (authorization, a
			// deleted topic) will not go away within this read. The sender retries after backoff.
			return fmt.Errorf("re-reading %s/%d at offset %d: %w", topic, partition, o, last)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("re-reading %s/%d: offset %d not read within %s: %w", topic, partition, o, timeout,
				context.DeadlineExceeded)
		}
		if o, ok := s.seek(); ok && o != sought {
			// Buffered fetches from before the seek are dropped by the client; any that still arrive
			// are below o and skipped.
			cl.SetOffsets(map[string]map[int32]kgo.EpochOffset{topic: {partition: {Epoch: -1, Offset: o}}})
			pos, sought = o, o
		}
	}
}
