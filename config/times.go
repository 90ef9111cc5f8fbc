package config

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	_ "time/tzdata" // zone names resolve the same on every host, also in an image without zoneinfo
)

// TimeFormatUnixDays is the format of a date column given as days since the Unix epoch.
const TimeFormatUnixDays = "unix_days"

// TimeFormat is a parsed time format of a column or of the event time (ParseTimeFormat): exactly one
// of Named, Unit (with Named a unix_* name) and Layout says what it reads.
type TimeFormat struct {
	// Named is rfc3339 or a unix_* name; "" for the column default and for a layout.
	Named  string
	Unit   time.Duration // unix_*: what one unit is (24h for unix_days)
	Layout string        // a Go layout
	Zone   *time.Location
}

// namedFormats are the formats with a name, and the types each feeds ("event" for the event time).
var namedFormats = []struct {
	name  string
	unit  time.Duration
	types []string
}{
	{TimeFormatRFC3339, 0, []string{"event", "timestamp"}},
	{TimeFormatUnixS, time.Second, []string{"event", "timestamp"}},
	{TimeFormatUnixMS, time.Millisecond, []string{"event", "timestamp"}},
	{TimeFormatUnixUS, time.Microsecond, []string{"event", "timestamp"}},
	{TimeFormatUnixNS, time.Nanosecond, []string{"event", "timestamp"}},
	{TimeFormatUnixDays, Day, []string{"date"}},
}

// NamedTimeFormat returns the name of format s when it is one (in any case), else "".
func NamedTimeFormat(s string) string {
	for _, f := range namedFormats {
		if strings.EqualFold(s, f.name) {
			return f.name
		}
	}
	return ""
}

// layoutProbe is the instant a layout is tried on: every field differs from every other, and the
// offset is not a whole hour, so that a layout that drops or mistakes a field is caught.
var layoutProbe = time.Date(2024, 3, 15, 13, 45, 56, 123456789, time.FixedZone("", 5*3600+30*60))

// ParseTimeFormat checks format and zone for what they feed: typ is "timestamp" or "date" for a
// column, "event" for the event time; format "" is a column's default. A layout is a Go layout
// (reference time Mon Jan 2 15:04:05 MST 2006) with at least a year, a month and a day; without an
// offset it needs zone, an IANA zone name, which no other format takes.
func ParseTimeFormat(format, zone, typ string) (TimeFormat, error) {
	var f TimeFormat
	if format == "" {
		if zone != "" {
			return f, zoneError("zone without a format layout; remove zone, or give a layout without an offset")
		}
		return f, nil
	}
	if named := NamedTimeFormat(format); named != "" {
		for _, n := range namedFormats {
			if n.name != named {
				continue
			}
			if !slices.Contains(n.types, typ) {
				return f, fmt.Errorf("%s is not a format for %s; use %s", named, what(typ), formatsFor(typ))
			}
			if zone != "" {
				return f, zoneError(fmt.Sprintf("zone with format %s, which names its instant without one; remove zone", named))
			}
			return TimeFormat{Named: named, Unit: n.unit}, nil
		}
	}
	if strings.Contains(format, "MST") {
		return f, fmt.Errorf("layout %q has a zone abbreviation (MST), which names no offset reliably; use an offset (-0700, Z07:00) or zone", format)
	}
	text := layoutProbe.Format(format)
	got, err := time.Parse(format, text)
	if err != nil || got.Year() != layoutProbe.Year() || got.Month() != layoutProbe.Month() || got.Day() != layoutProbe.Day() {
		return f, fmt.Errorf("%q is not a format: use %s, or a Go layout with a year, a month and a day (reference time 2006-01-02 15:04:05, e.g. \"02/01/2006 15:04\")", format, formatsFor(typ))
	}
	_, off := got.Zone()
	hasOffset := off == 5*3600+30*60
	f.Layout = format
	if typ == "date" {
		switch {
		case got.Hour() != 0 || got.Minute() != 0 || got.Second() != 0 || got.Nanosecond() != 0 || hasOffset:
			return f, fmt.Errorf("layout %q holds a time of day or an offset, and a date holds neither; use a layout of the date alone", format)
		case zone != "":
			return f, zoneError("zone with a date, which has none; remove zone")
		}
		return f, nil
	}
	switch {
	case hasOffset && zone != "":
		return f, zoneError(fmt.Sprintf("zone with layout %q, which has its offset; remove zone", format))
	case !hasOffset && zone == "":
		return f, fmt.Errorf("layout %q has no offset, so a time in it names no instant; add zone (an IANA name such as Europe/Paris, or UTC)", format)
	case zone != "":
		if f.Zone, err = LoadZone(zone); err != nil {
			return f, zoneError(err.Error())
		}
	}
	return f, nil
}

// ZoneError is a problem of a format's zone rather than of the format itself: its key is the zone's.
type ZoneError struct{ msg string }

func (e *ZoneError) Error() string { return e.msg }

func zoneError(msg string) error { return &ZoneError{msg} }

// formatKey is the key of err, a ParseTimeFormat error of the format at key format (..., a.format):
// the zone beside it (a.zone) for a *ZoneError.
func formatKey(format string, err error) string {
	var ze *ZoneError
	if errors.As(err, &ze) {
		return strings.TrimSuffix(format, "format") + "zone"
	}
	return format
}

// LoadZone loads an IANA time zone by name; Local (the host's) is refused, as a config means the same
// on every host.
func LoadZone(name string) (*time.Location, error) {
	if strings.EqualFold(name, "local") {
		return nil, fmt.Errorf("zone %q is the host's, which differs between hosts; name the IANA zone (e.g. Europe/Paris)", name)
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Errorf("zone %q is not an IANA time zone (e.g. Europe/Paris, America/New_York, UTC)", name)
	}
	return loc, nil
}

func what(typ string) string {
	if typ == "event" {
		return "the event time"
	}
	return "a " + typ + " column"
}

// formatsFor lists the named formats of typ.
func formatsFor(typ string) string {
	var names []string
	for _, n := range namedFormats {
		if slices.Contains(n.types, typ) {
			names = append(names, n.name)
		}
	}
	return strings.Join(names, ", ")
}

// validateTimeFormats checks the time formats of topic t at p: the event time's and each column's.
func validateTimeFormats(v *validator, p string, t Topic) {
	if t.Time.Source == TimeSourceField && t.Time.Format != "" {
		if _, err := ParseTimeFormat(t.Time.Format, t.Time.Zone, "event"); err != nil {
			v.add(formatKey(p+".time.format", err), "%v", err)
		}
	} else if t.Time.Zone != "" {
		v.add(p+".time.zone", "set without a time.format layout; remove it")
	}
	for i, col := range t.Columns {
		if col.Format == "" && col.Zone == "" {
			continue
		}
		cp := fmt.Sprintf("%s.columns[%d]", p, i)
		typ, err := ParseCQLType(col.Type)
		if err != nil {
			continue // reported with the type
		}
		switch {
		case typ.String() != "timestamp" && typ.String() != "date":
			v.add(cp+".format", "set on a %s column; a format is for timestamp and date columns", typ)
		case col.Source != "" && col.Source != SourceHeader && col.Source != SourceKey:
			v.add(cp+".format", "set on a column of source %s, which is a time already; a format is for values read from a field, a header or the key", col.Source)
		default:
			if _, err := ParseTimeFormat(col.Format, col.Zone, typ.String()); err != nil {
				v.add(formatKey(cp+".format", err), "%v", err)
			}
		}
	}
}
