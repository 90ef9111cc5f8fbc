package consumer

import (
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Queue hands fetched records from the poll loop to the worker. Push never blocks: the poll loop
// must reach AllowRebalance promptly whatever the worker is doing (DRIVER-NOTES R5.2-3). Its size is
// bounded by the byte budget, at which the poll loop stops polling instead.
type Queue struct {
	mu     sync.Mutex // a leaf: the partition's lock may be held when it is taken, never the other way round
	chunks []Chunk
	notify chan struct{}
}

// Chunk is the records of one fetch of one partition, and when the poll loop handed them over.
type Chunk struct {
	Recs    []*kgo.Record
	Fetched time.Time
}

// NewQueue returns an empty queue.
func NewQueue() *Queue { return &Queue{notify: make(chan struct{}, 1)} }

// Push queues the records of one fetch, handed over at fetched; it never blocks.
func (q *Queue) Push(recs []*kgo.Record, fetched time.Time) {
	q.mu.Lock()
	q.chunks = append(q.chunks, Chunk{recs, fetched})
	q.mu.Unlock()
	select {
	case q.notify <- struct{}{}:
	default:
	}
}

// PushFront returns records the worker took but did not handle.
func (q *Queue) PushFront(recs []*kgo.Record, fetched time.Time) {
	if len(recs) == 0 {
		return
	}
	q.mu.Lock()
	q.chunks = append([]Chunk{{recs, fetched}}, q.chunks...)
	q.mu.Unlock()
}

// Next waits for records or for quit; false when quit is closed.
func (q *Queue) Next(quit <-chan struct{}) (Chunk, bool) {
	for {
		select {
		case <-quit:
			return Chunk{}, false
		default:
		}
		q.mu.Lock()
		if len(q.chunks) > 0 {
			c := q.chunks[0]
			q.chunks[0] = Chunk{}
			q.chunks = q.chunks[1:]
			q.mu.Unlock()
			return c, true
		}
		q.mu.Unlock()
		select {
		case <-q.notify:
		case <-quit:
			return Chunk{}, false
		}
	}
}

// FirstOffset is the offset and leader epoch of the first queued record.
func (q *Queue) FirstOffset() (int64, int32, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, c := range q.chunks {
		if len(c.Recs) > 0 {
			return c.Recs[0].Offset, c.Recs[0].LeaderEpoch, true
		}
	}
	return 0, 0, false
}

// Drain empties the queue and returns what its records cost (cost of each: budget.RecordCost).
func (q *Queue) Drain(cost func(*kgo.Record) int64) int64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	var n int64
	for _, c := range q.chunks {
		for _, r := range c.Recs {
			n += cost(r)
		}
	}
	q.chunks = nil
	return n
}
