package codec

import (
	"strconv"
	"time"
	"unsafe"

	"github.com/bucketsink/sink/packed"
)

// TimeForm is the kind of a TimeFormat.
type TimeForm uint8

const (
	// TimeDefault is a column's format when it names none: a timestamp from RFC 3339 text or from a
	// number of epoch milliseconds, a date from YYYY-MM-DD text.
	TimeDefault TimeForm = iota
	// TimeRFC3339 is RFC 3339 text with an offset, and nothing else (the event time's default).
	TimeRFC3339
	// TimeUnix is a number of Unit since the Unix epoch, or a string holding one, and nothing else:
	// unix_s, unix_ms, unix_us, unix_ns for a timestamp, unix_days (Unit 24h) for a date.
	TimeUnix
	// TimeLayout is text in Layout (a Go layout), read in Zone when the layout has no offset, and
	// nothing else.
	TimeLayout
)

// Day is the Unit of unix_days.
const Day = 24 * time.Hour

// TimeFormat is how a value spells a time when its writer schema does not say it is one (a string, or
// an integer that is no timestamp logical type): the format of a column or of the event time. Every
// codec reads a layout and an integer count through its methods, so one format means the same in
// every codec. The zero value is TimeDefault.
type TimeFormat struct {
	Form   TimeForm
	Unit   time.Duration  // TimeUnix (and TimeDefault's milliseconds: Unit is ignored there)
	Layout string         // TimeLayout
	Zone   *time.Location // TimeLayout: where a time without an offset is; UTC when nil
	Name   string         // as configured (a unix_* name, rfc3339, the layout), for messages
}

// unitNames are the configured names of the units.
var unitNames = map[time.Duration]string{
	time.Second: "unix_s", time.Millisecond: "unix_ms", time.Microsecond: "unix_us", time.Nanosecond: "unix_ns",
	Day: "unix_days",
}

// UnitName is the configured name of a TimeUnix unit ("unix_ms").
func UnitName(u time.Duration) string { return unitNames[u] }

// Numbers reports whether a number feeds a column of kind k (timestamp or date) in format f.
func (f *TimeFormat) Numbers(k packed.Kind) bool {
	return f.Form == TimeUnix || f.Form == TimeDefault && k == packed.KTimestamp
}

// IntegerUnit is what one unit of an integer counts in format f for kind k; 0 when integers do not
// feed it. A column's default counts milliseconds for a timestamp.
func (f *TimeFormat) IntegerUnit(k packed.Kind) time.Duration {
	switch {
	case f.Form == TimeUnix:
		return f.Unit
	case f.Form == TimeDefault && k == packed.KTimestamp:
		return time.Millisecond
	}
	return 0
}

// Integer is the time x units of f's unit since the epoch, for kind k (timestamp or date), or why it is
// none (out of the years 0000 to 9999), in words that follow "is". what ends the reason ("for CQL
// timestamp"; "" for the event time).
func (f *TimeFormat) Integer(k packed.Kind, x int64, what string) (time.Time, string) {
	t, ok := UnixTime(x, f.IntegerUnit(k))
	if !ok {
		return t, f.outOfRange(what)
	}
	return t, ""
}

// outOfRange is the reason of a time outside the years 0000 to 9999.
func (f *TimeFormat) outOfRange(what string) string {
	switch {
	case what != "":
		return "out of range " + what + " (years 0000 to 9999)"
	case f.Form == TimeUnix:
		return "out of range for " + UnitName(f.Unit) + " (years 0000 to 9999)"
	}
	return "out of range (years 0000 to 9999)"
}

// Text converts text s in f's layout (TimeLayout), or a decimal integer of f's unit (TimeUnix), into
// a time for kind k: a timestamp, or a date, which must then be a midnight. Its reason is as
// Integer's. It is the one reader of a layout, for every codec; RFC 3339 and YYYY-MM-DD (TimeRFC3339,
// TimeDefault) are each codec's own, as they were before formats.
func (f *TimeFormat) Text(k packed.Kind, s []byte, what string) (time.Time, string) {
	if f.Form == TimeUnix {
		x, err := strconv.ParseInt(view(s), 10, 64)
		if err != nil {
			return time.Time{}, "not a whole " + UnitName(f.Unit) + " number" + prefixed(what)
		}
		return f.Integer(k, x, what)
	}
	zone := f.Zone
	if zone == nil {
		zone = time.UTC
	}
	t, err := time.ParseInLocation(f.Layout, view(s), zone)
	if err != nil {
		return time.Time{}, "not in the layout " + strconv.Quote(f.Layout) + prefixed(what)
	}
	if k == packed.KDate {
		if t.Hour() != 0 || t.Minute() != 0 || t.Second() != 0 || t.Nanosecond() != 0 {
			return time.Time{}, "not a midnight, and CQL date holds no time of day"
		}
		// The date as written, whatever zone the layout's offset names.
		t = time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
	}
	if t = t.UTC(); !InRange(t) {
		return time.Time{}, f.outOfRange(what)
	}
	return t, ""
}

// TextError is the error of text s that Text refuses for reason why.
func TextError(s []byte, why string) *ValueError { return BadValue(Shown(s), why) }

// view is b as a string without a copy, for parsers that keep nothing of it (their errors, which
// copy what they quote, are dropped).
func view(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

func prefixed(s string) string {
	if s == "" {
		return ""
	}
	return " " + s
}
