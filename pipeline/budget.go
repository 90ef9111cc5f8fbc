package pipeline

// topicPartition names one Kafka partition.
type topicPartition struct {
	topic     string
	partition int32
}

// pauseReason says why fetching of a partition is paused; a partition resumes only when it has none.
type pauseReason uint8

const (
	pausedOverBudget pauseReason = 1 << iota // the process holds more buffered bytes than writer.max_buffered_bytes
	pausedStuck                              // a record of the partition cannot be written or dead-lettered
)

// budget is the pure backpressure state: how many bytes of records and rows each partition holds in
// memory, and which partitions are paused for what reason. Charging bytes past the high-water mark pauses
// the charged partition (a partition holding nothing is never paused for the budget: it is not the cause);
// releasing bytes down to the low-water mark resumes every partition paused for the budget. The gap
// between the marks stops pause/resume flapping on every record.
//
// It is not safe for concurrent use and makes no calls: methods return the partitions whose fetch state
// must change, and the caller applies that to the Kafka client under the same lock.
type budget struct {
	high, low int64
	total     int64
	held      map[topicPartition]int64
	paused    map[topicPartition]pauseReason
}

func newBudget(high int64) *budget {
	return &budget{
		high:   high,
		low:    high / 2,
		held:   make(map[topicPartition]int64),
		paused: make(map[topicPartition]pauseReason),
	}
}

// charge adds n bytes held for tp and reports whether tp must now be paused.
func (b *budget) charge(tp topicPartition, n int64) (pause bool) {
	b.total += n
	b.held[tp] += n
	if b.total > b.high && b.held[tp] > 0 {
		return b.addReason(tp, pausedOverBudget)
	}
	return false
}

// release returns n bytes held for tp and lists the partitions to resume, if the total fell to the
// low-water mark.
func (b *budget) release(tp topicPartition, n int64) (resume []topicPartition) {
	b.total -= n
	if h := b.held[tp] - n; h > 0 {
		b.held[tp] = h
	} else {
		delete(b.held, tp)
	}
	if b.total > b.low {
		return nil
	}
	for p, r := range b.paused {
		if r&pausedOverBudget == 0 {
			continue
		}
		if b.removeReason(p, pausedOverBudget) {
			resume = append(resume, p)
		}
	}
	return resume
}

// setStuck pauses or unpauses tp because one of its records cannot make progress. It reports whether the
// fetch state of tp changes.
func (b *budget) setStuck(tp topicPartition, stuck bool) (pause, resume bool) {
	if stuck {
		return b.addReason(tp, pausedStuck), false
	}
	return false, b.removeReason(tp, pausedStuck)
}

// forget drops every byte and pause of tp, when the partition is revoked or lost. It reports whether tp
// was paused (the caller clears the client's pause so a later reassignment starts fetching) and lists
// other partitions that may resume because the total fell.
func (b *budget) forget(tp topicPartition) (wasPaused bool, resume []topicPartition) {
	_, wasPaused = b.paused[tp]
	delete(b.paused, tp)
	return wasPaused, b.release(tp, b.held[tp])
}

func (b *budget) addReason(tp topicPartition, r pauseReason) (changed bool) {
	old := b.paused[tp]
	b.paused[tp] = old | r
	return old == 0
}

func (b *budget) removeReason(tp topicPartition, r pauseReason) (changed bool) {
	old, ok := b.paused[tp]
	if !ok || old&r == 0 {
		return false
	}
	if n := old &^ r; n != 0 {
		b.paused[tp] = n
		return false
	}
	delete(b.paused, tp)
	return true
}

// pausedCount is the number of partitions whose fetching is paused.
func (b *budget) pausedCount() int { return len(b.paused) }
