package config

import (
	"strings"
	"time"
)

// Split is a topic's hot-entity split policy. With Enabled, an (entity, time bucket) partition
// that is projected to outgrow the topic's budget (partition_budget bytes, MaxRows rows) by the
// end of its bucket is split from a moment T on into more event buckets, recorded in the routing
// table before any row uses them (docs/DESIGN.md, "Hot entities split at write time").
type Split struct {
	Enabled bool `koanf:"enabled"`
	// MaxEventBuckets caps the event buckets one split may use; a reader of a split entity's time
	// bucket reads that many partitions at most. Default 64; more than bucket.event_buckets and at
	// most MaxSplitEventBuckets.
	MaxEventBuckets int `koanf:"max_event_buckets"`
	// MaxRows is the row half of the budget (partition_budget is the byte half): a partition is
	// split before it is projected to hold more rows than this. Default and upper bound 100,000.
	MaxRows int64 `koanf:"max_rows"`
	// RefreshInterval is how often a worker reads again the routing records of a time bucket it is
	// writing, to learn of splits decided by workers of other Kafka partitions (an entity whose
	// records are spread over several). Default 5s (also when 0); from 100ms to 10m.
	RefreshInterval Duration `koanf:"refresh_interval"`
}

const (
	// DefaultSplitMaxEventBuckets keeps the read of a split entity's bucket to a bounded fan-out
	// while letting one entity run at 64 times the rate the width was chosen for.
	DefaultSplitMaxEventBuckets = 64
	// MaxSplitEventBuckets is the most event buckets a split may ever use.
	MaxSplitEventBuckets = 1024
	// DefaultSplitMaxRows is the time-series guidance's ceiling on rows per partition.
	DefaultSplitMaxRows = 100_000
	// MaxSplitBudget is the guidance's ceiling on a partition's bytes (decimal, as nodetool
	// reports): a split policy never aims above it.
	MaxSplitBudget = Bytes(100_000_000)
	// DefaultSplitRefreshInterval bounds how long a worker writes a split entity's rows to its old,
	// growing partition after another worker split it, at one query per open bucket and interval.
	DefaultSplitRefreshInterval = Duration(5 * time.Second)
	minSplitRefreshInterval     = Duration(100 * time.Millisecond)
	maxSplitRefreshInterval     = Duration(10 * time.Minute)
)

// UsesEventBucketColumn reports whether the topic's partition key carries the event bucket column:
// with configured event buckets, or with splits on (a split entity's rows then need it, so every
// row has it, 0 before any split when event_buckets is 1).
func (t Topic) UsesEventBucketColumn() bool {
	return t.Bucket.EventBuckets > 1 || t.Split.Enabled
}

func splitDefaults(p string, t *Topic, unset func(path string, zero bool) bool) {
	setDefault(unset, p+"split.max_event_buckets", &t.Split.MaxEventBuckets, DefaultSplitMaxEventBuckets)
	setDefault(unset, p+"split.max_rows", &t.Split.MaxRows, int64(DefaultSplitMaxRows))
	setDefault(unset, p+"split.refresh_interval", &t.Split.RefreshInterval, DefaultSplitRefreshInterval)
}

// validateSplit checks the split policy against the bucket policy. Only an enabled policy is
// judged: a disabled one changes nothing.
func validateSplit(v *validator, p string, t Topic, session Duration) {
	s := t.Split
	if !s.Enabled {
		return
	}
	p += ".split"
	base := max(t.Bucket.EventBuckets, 1)
	switch {
	case s.MaxEventBuckets <= base:
		v.add(p+".max_event_buckets", "%d is not more than bucket.event_buckets (%d), so no split could ever spread a hot entity; raise it (default %d) or disable split",
			s.MaxEventBuckets, base, DefaultSplitMaxEventBuckets)
	case s.MaxEventBuckets > MaxSplitEventBuckets:
		v.add(p+".max_event_buckets", "%d is over %d: a reader of a split entity would read that many partitions per time bucket; lower it, or use a finer bucket.width",
			s.MaxEventBuckets, MaxSplitEventBuckets)
	}
	if s.MaxRows <= 0 || s.MaxRows > DefaultSplitMaxRows {
		v.add(p+".max_rows", "%d is outside 1..%d: a partition should never hold more than %d rows; remove the key for the default",
			s.MaxRows, DefaultSplitMaxRows, DefaultSplitMaxRows)
	}
	r := s.RefreshInterval
	if r != 0 && (r < minSplitRefreshInterval || r > maxSplitRefreshInterval) {
		v.add(p+".refresh_interval", "%s is outside %s..%s; remove the key for the default (%s)",
			r, minSplitRefreshInterval, maxSplitRefreshInterval, DefaultSplitRefreshInterval)
	}
	if r == 0 {
		r = DefaultSplitRefreshInterval
	}
	if session > 0 && r >= session {
		// A process frozen past its session must find its routing records due for a read at its
		// first row after it resumes: a new owner may have split meanwhile (docs/DESIGN.md).
		v.add(p+".refresh_interval", "%s is not below kafka.session_timeout (%s): a member that lost its session could route rows before it read what the partition's next owner decided; lower it",
			r, session)
	}
	if t.PartitionBudget > MaxSplitBudget {
		v.add(strings.TrimSuffix(p, ".split")+".partition_budget", "%s is over %s, the most a split partition may aim for; lower it (aim for 10-100 MB)",
			t.PartitionBudget, MaxSplitBudget)
	}
	if len(t.Clustering) == 0 {
		v.add(p+".enabled", "needs clustering columns: a split chooses the moment T from the newest row in each old partition, and spreads rows by the hash of the clustering values; add clustering (the event time first)")
		return
	}
	if !clusteredByEventTime(t) {
		v.add(p+".enabled", "needs the first clustering column (%s) to hold the event time (a timestamp with source event_time or the time field, or a timeuuid with source timeuuid): a split starts at an event time, and the newest row of a partition must be its first or last row",
			t.Clustering[0].Column)
	}
}

// clusteredByEventTime reports whether the first clustering column holds the event time the
// buckets are cut by: the reader's rule (package reader, checkTimeColumn).
func clusteredByEventTime(t Topic) bool {
	first := t.Clustering[0].Column
	for _, c := range t.Columns {
		if !strings.EqualFold(c.Name, first) {
			continue
		}
		typ := strings.ToLower(strings.TrimSpace(c.Type))
		switch {
		case typ == "timestamp" && c.Source == SourceEventTime:
			return true
		case typ == "timestamp" && c.Source == "" && t.Time.Source != TimeSourceKafka && c.Field == t.Time.Field &&
			(t.Time.Format == "" || t.Time.Format == TimeFormatRFC3339 || t.Time.Format == TimeFormatUnixMS):
			return true
		case typ == "timeuuid" && c.Source == SourceTimeUUID:
			return true
		}
	}
	return false
}
