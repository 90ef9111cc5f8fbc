package metrics

import (
	"encoding/hex"
	"hash/maphash"
	"sort"
	"strings"
	"time"
	"unicode/utf8"
)

// openPartitions tallies the rows and bytes written to each Cassandra partition whose time bucket is still
// open, per topic, so the daemon can show which partitions grow largest before they close. It is pure (time
// comes in as an argument) and not safe for concurrent use.
//
// Memory is bounded twice: entries whose bucket has closed are pruned, and a topic never holds more than
// max entries; past that the smallest half is evicted. Under heavy skew the largest partitions are the ones
// that matter and they survive eviction; a small partition evicted and seen again restarts from zero, which
// under-reports only partitions far from the top.
//
// A partition is found by a 64-bit hash of its table and key, so that the tally, on the path of every
// batch written, costs a hash and a look-up by integer rather than hashing and comparing two strings in
// a map of thousands: two partitions whose hashes collide (about one chance in 10^11 among 10,000) would
// share one tally, shown under the first one's key.
type openPartitions struct {
	max    int
	seed   maphash.Seed
	topics map[string]map[uint64]*openStat
}

type openStat struct {
	table, key  string
	rows, bytes int64
	closes      time.Time // end of the row's time bucket; the partition stops growing after it
}

// hash identifies the partition key of table among a topic's.
func (o *openPartitions) hash(table, key string) uint64 {
	return maphash.String(o.seed, key) ^ maphash.String(o.seed, table)*0x9e3779b97f4a7c15
}

// PartitionStat is one entry of /debug/partitions.
type PartitionStat struct {
	Rank   int       `json:"rank"`
	Table  string    `json:"table"`
	Key    string    `json:"key"` // the routing-key bytes: as text when printable UTF-8, else "0x" + hex
	Rows   int64     `json:"rows"`
	Bytes  int64     `json:"bytes"`
	Closes time.Time `json:"closes"`
}

func newOpenPartitions(max int) *openPartitions {
	return &openPartitions{max: max, seed: maphash.MakeSeed(), topics: make(map[string]map[uint64]*openStat)}
}

// add records rows and bytes written to one partition whose bucket ends at closes.
func (o *openPartitions) add(topic, table, key string, rows, bytes int64, closes, now time.Time) {
	if !closes.After(now) {
		return // a late event for a closed bucket: the partition no longer grows in the sense we track
	}
	m := o.topics[topic]
	if m == nil {
		m = make(map[uint64]*openStat)
		o.topics[topic] = m
	}
	h := o.hash(table, key)
	s := m[h]
	if s == nil {
		if len(m) >= o.max {
			o.shrink(m, now)
		}
		// The key is the batch's (batcher.Batch.Key points into the batch's own memory): a copy keeps
		// the tally from holding every batch it has seen.
		s = &openStat{table: table, key: strings.Clone(key), closes: closes}
		m[h] = s
	}
	s.rows += rows
	s.bytes += bytes
	if closes.After(s.closes) {
		s.closes = closes
	}
}

// shrink prunes closed buckets and, if that is not enough, evicts the smaller half by bytes.
func (o *openPartitions) shrink(m map[uint64]*openStat, now time.Time) {
	for k, s := range m {
		if !s.closes.After(now) {
			delete(m, k)
		}
	}
	if len(m) < o.max {
		return
	}
	sizes := make([]int64, 0, len(m))
	for _, s := range m {
		sizes = append(sizes, s.bytes)
	}
	sort.Slice(sizes, func(i, j int) bool { return sizes[i] > sizes[j] })
	cut := sizes[o.max/2]
	for k, s := range m {
		if s.bytes <= cut && len(m) > o.max/2 {
			delete(m, k)
		}
	}
}

// top returns the n largest open partitions of topic by bytes, pruning closed ones first. It keeps only
// the n best while it walks the tally (a topic holds up to max entries, a scrape wants a handful) and
// formats only those keys.
func (o *openPartitions) top(topic string, n int, now time.Time) []PartitionStat {
	m := o.topics[topic]
	type ranked struct {
		k uint64
		s *openStat
	}
	// better orders by bytes, larger first, then by key for a stable order among equals.
	better := func(a, b ranked) bool {
		if a.s.bytes != b.s.bytes {
			return a.s.bytes > b.s.bytes
		}
		return a.s.key < b.s.key
	}
	best := make([]ranked, 0, min(n, len(m))+1)
	for k, s := range m {
		if !s.closes.After(now) {
			delete(m, k)
			continue
		}
		r := ranked{k, s}
		if len(best) == n && (n == 0 || !better(r, best[n-1])) {
			continue
		}
		i := sort.Search(len(best), func(i int) bool { return better(r, best[i]) })
		best = append(best, ranked{})
		copy(best[i+1:], best[i:])
		best[i] = r
		if len(best) > n {
			best = best[:n]
		}
	}
	out := make([]PartitionStat, len(best))
	for i, r := range best {
		out[i] = PartitionStat{Rank: i + 1, Table: r.s.table, Key: printableKey(r.s.key), Rows: r.s.rows, Bytes: r.s.bytes, Closes: r.s.closes}
	}
	return out
}

// printableKey shows a routing key readably. A single-column key is the column's serialized value, text for
// a text id; a composite key is, per column, a 2-byte length, the bytes and a 0x00, shown as its columns
// joined by " | ". Columns that are not printable text (ints, timestamps) print as "0x" + hex.
func printableKey(k string) string {
	if parts, ok := splitComposite(k); ok {
		for i, p := range parts {
			parts[i] = printableComponent(p)
		}
		return strings.Join(parts, " | ")
	}
	return printableComponent(k)
}

func splitComposite(k string) ([]string, bool) {
	var parts []string
	for len(k) > 0 {
		if len(k) < 3 {
			return nil, false
		}
		n := int(k[0])<<8 | int(k[1])
		if len(k) < 2+n+1 || k[2+n] != 0 {
			return nil, false
		}
		parts = append(parts, k[2:2+n])
		k = k[2+n+1:]
	}
	return parts, len(parts) >= 2
}

func printableComponent(k string) string {
	if k != "" && utf8.ValidString(k) && !strings.ContainsFunc(k, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return k
	}
	return "0x" + hex.EncodeToString([]byte(k))
}
