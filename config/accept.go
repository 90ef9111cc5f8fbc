package config

import "time"

// Accept is a topic's accept window: how far the event time of a record may lie before or after the
// record's Kafka timestamp. A record outside it is bad input, dead-lettered with reason "late" or
// "future" and a message naming both times. It catches what no parser can: an epoch in seconds
// configured as unix_ms lands in January 1970, a producer clock a day ahead fills tomorrow's bucket.
// With time.source kafka the event time is the Kafka timestamp, and the window never refuses.
type Accept struct {
	// Before is how far the event time may lie before the Kafka timestamp: late data, backfills,
	// replays into a new topic. Default DefaultAcceptBefore.
	Before Duration `koanf:"before"`
	// After is how far the event time may lie after the Kafka timestamp: the skew between the
	// producer's clock and the one that stamped the record. Default DefaultAcceptAfter.
	After Duration `koanf:"after"`
}

const (
	// DefaultAcceptBefore: ten years takes any realistic backfill, while an epoch-unit mistake
	// (seconds read as milliseconds: 1970) lies more than fifty years back.
	DefaultAcceptBefore = Duration(3650 * Day)
	// DefaultAcceptAfter: an hour is far more than the clock skew of a healthy producer, and less
	// than a time-zone offset written as UTC, the common way a producer dates records ahead.
	DefaultAcceptAfter = Duration(time.Hour)
)

func (t Topic) validateAccept(v *validator, p string) {
	if t.Accept.Before <= 0 {
		v.add(p+".accept.before", "%s is not positive: nearly every event happens before its record is produced, so every record would be refused; use e.g. %s", t.Accept.Before, DefaultAcceptBefore)
	}
	if t.Accept.After < 0 {
		v.add(p+".accept.after", "negative (%s); use 0 to refuse any event time after the Kafka timestamp, or e.g. %s", t.Accept.After, DefaultAcceptAfter)
	}
}
