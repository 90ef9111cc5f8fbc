package config

import (
	"strings"
	"time"
)

// TTLField takes each row's TTL from a field of the record's value (topics.<name>.ttl_field): an
// expiry instant, or a duration. The TTL a row is written with is at most Max: a longer one is
// clamped to Max (the record is good data; its producer's expiry is only bounded). A record whose
// expiry has passed is skipped, committed and counted in sink_records_skipped_total{reason="expired"};
// one without the field (missing or null) gets the entry's ttl, counted as ttl_from says, or no TTL
// when the entry has none. A negative duration, or a value that is no instant or duration, is bad
// input naming the field.
type TTLField struct {
	Field string `koanf:"field"` // dot path into the record's value
	// As is what the field holds: "instant" (the expiry itself) or "duration" (how long the row
	// lives, counted as ttl_from says: from the write, or from the event time).
	As string `koanf:"as"`
	// Format and Zone are an instant's format, as a timestamp column's (times.go): unset, RFC 3339
	// or epoch milliseconds.
	Format string `koanf:"format"`
	Zone   string `koanf:"zone"`
	// Unit is what one unit of a duration counts: ns, us, ms, s (default), m, h or d.
	Unit string `koanf:"unit"`
	// Max bounds the TTL a row is written with; required, whole seconds, at most 20 years.
	Max Duration `koanf:"max"`
}

// What ttl_field.as takes.
const (
	TTLAsInstant  = "instant"
	TTLAsDuration = "duration"
)

// DefaultTTLUnit is the unit of a duration field without one.
const DefaultTTLUnit = "s"

// TTLUnit is the duration of one unit of u (a ttl_field.unit); "" is DefaultTTLUnit. False for
// a name that is no unit.
func TTLUnit(u string) (time.Duration, bool) {
	if u == "" {
		u = DefaultTTLUnit
	}
	for _, d := range durationUnits {
		if d.name == strings.ToLower(u) && d.d != Week {
			return d.d, true
		}
	}
	return 0, false
}

// validateTTLField checks topics.<name>.ttl_field of t at p.
func validateTTLField(v *validator, p string, t Topic) {
	f, fp := t.TTLField, p+".ttl_field"
	switch {
	case f.Field == "":
		v.add(fp+".field", "empty; name the field of the value holding the expiry or the duration, e.g. expires_at")
	case !fieldPathRE.MatchString(f.Field):
		v.add(fp+".field", "%q is not a field path; use names separated by dots, e.g. meta.expires_at", f.Field)
	}
	switch f.As {
	case TTLAsInstant:
		if f.Unit != "" {
			v.add(fp+".unit", "set with as: instant; an instant's numbers are read by format (e.g. unix_s), a unit is for as: duration")
		}
		if _, err := ParseTimeFormat(f.Format, f.Zone, "timestamp"); err != nil {
			v.add(formatKey(fp+".format", err), "%v", err)
		}
	case TTLAsDuration:
		if f.Format != "" || f.Zone != "" {
			v.add(fp+".format", "set with as: duration; a duration's numbers count ttl_field.unit")
		}
		if _, ok := TTLUnit(f.Unit); !ok {
			v.add(fp+".unit", "%q is not a unit; use ns, us, ms, s, m, h or d", f.Unit)
		}
	case "":
		v.add(fp+".as", "empty; say what the field holds: instant (the expiry) or duration (how long the row lives)")
	default:
		v.add(fp+".as", "%q is not valid; use instant or duration", f.As)
	}
	switch {
	case f.Max <= 0:
		v.add(fp+".max", "required and positive: the longest TTL a record may ask for, e.g. 30d (a longer one is cut to it)")
	case f.Max.Seconds() > maxTTLSeconds:
		v.add(fp+".max", "%s exceeds Cassandra's maximum TTL of 20 years; lower it", f.Max)
	case time.Duration(f.Max)%time.Second != 0:
		v.add(fp+".max", "%s is not whole seconds; CQL TTLs are", f.Max)
	case t.TTL > f.Max:
		v.add(p+".ttl", "%s exceeds ttl_field.max %s; a record without the field would outlive every record with it", t.TTL, f.Max)
	}
}
