package mapper

import (
	"fmt"
	"strings"
	"time"

	"github.com/bucketsink/sink/codec"
	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/packed"
)

// A TTL per record (config.TTLField): the row's TTL from a field of its record's value, an expiry
// instant or a duration, at most the field's max. A record without the field falls back to the
// entry's ttl (complete), or to no TTL, which the INSERT binds as 0.

// ttlField is a compiled ttl_field.
type ttlField struct {
	name      string        // the field's dot path, for messages
	field     codec.Field   // what the codec decodes: a timestamp (instant) or a bigint (duration)
	instant   bool          // as: instant
	unit      time.Duration // as: duration: what one unit counts
	fromEvent bool          // a duration counts from the event time (ttl_from event_time)
	max       time.Duration
}

func compileTTLField(t config.Topic) (*ttlField, error) {
	f := t.TTLField
	tf := &ttlField{name: f.Field, max: time.Duration(f.Max), fromEvent: t.TTLFrom == config.TTLFromEventTime}
	tf.field = codec.Field{Path: strings.Split(f.Field, "."), Column: "ttl_field"}
	switch f.As {
	case config.TTLAsInstant:
		tf.instant = true
		tf.field.Type = packed.Scalar(kTimestamp)
		var err error
		if tf.field.Time, err = timeFormat(f.Format, f.Zone, "timestamp"); err != nil {
			return nil, fmt.Errorf("format: %w", err)
		}
	case config.TTLAsDuration:
		tf.field.Type = packed.Scalar(kBigint)
		var ok bool
		if tf.unit, ok = config.TTLUnit(f.Unit); !ok {
			return nil, fmt.Errorf("unit: %q is not a unit", f.Unit)
		}
	default:
		return nil, fmt.Errorf("as: %q is not instant or duration", f.As)
	}
	return tf, nil
}

// expired is the errExpired of a record whose ttl_field value v (a duration d) leaves less than a second.
func (f *ttlField) expired(v *codec.Value, d, left time.Duration, event time.Time) error {
	expiry := "expiry " + v.T.Format(time.RFC3339Nano)
	if !f.instant {
		expiry = "duration " + config.Duration(d).String()
		if f.fromEvent {
			expiry += " from event time " + event.Format(time.RFC3339Nano)
		}
	}
	ends := "ends in under a second, and a TTL counts whole seconds (0 would mean never)"
	if left <= 0 {
		ends = "has passed"
	}
	return fmt.Errorf("%w: ttl_field %q: the %s %s; the row would be born expired", errExpired, f.name, expiry, ends)
}
