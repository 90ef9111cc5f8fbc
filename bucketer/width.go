package bucketer

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Unit is the kind of a bucket width.
type Unit int

const (
	// Fixed is a whole number of seconds, aligned to the Unix epoch.
	Fixed Unit = iota + 1
	// Week is the ISO 8601 week: Monday 00:00 UTC to the next Monday, numbered within its
	// ISO week-year (the year of its Thursday).
	Week
	// Month is the UTC calendar month.
	Month
	// Year is the UTC calendar year.
	Year
)

func (u Unit) String() string {
	switch u {
	case Fixed:
		return "fixed"
	case Week:
		return "week"
	case Month:
		return "month"
	case Year:
		return "year"
	}
	return "Unit(" + strconv.Itoa(int(u)) + ")"
}

// maxFixedDays bounds fixed widths so that bucket arithmetic can never overflow int64 for any
// instant time.Time can hold; a bucket of more than ten thousand days is no bucket at all.
const maxFixedDays = 10000

// Width is a parsed bucket or slice width.
type Width struct {
	Unit    Unit
	Seconds int64 // the width in seconds when Unit is Fixed; 0 otherwise
}

// fixedFits is the rule a fixed width of secs seconds must follow: it divides a day, so that buckets
// tile every day the same way, or it is a whole number of days.
func fixedFits(secs int64) bool {
	return secs > 0 && (secs <= secondsPerDay && secondsPerDay%secs == 0 || secs%secondsPerDay == 0)
}

// DayWidths returns every fixed width of at most a day that ParseWidth accepts, finest first: the
// divisors of a day, 1s to 1d.
func DayWidths() []Width {
	var out []Width
	for s := int64(1); s <= secondsPerDay; s++ {
		if fixedFits(s) {
			out = append(out, Width{Unit: Fixed, Seconds: s})
		}
	}
	return out
}

// acceptedWidths lists every width ParseWidth accepts, for the messages that refuse one; it is built
// from fixedFits, so it cannot name a width that is refused or leave out one that is accepted.
var acceptedWidths = func() string {
	var b strings.Builder
	for _, w := range DayWidths() {
		b.WriteString(w.String())
		b.WriteString(", ")
	}
	return b.String() + "whole days up to " + strconv.Itoa(maxFixedDays) + "d (2d, 3d, ...), week, month or year"
}()

// ParseWidth parses a width: a fixed duration ("30s", "10m", "1h", "6h", "90m", "1d", "2d"; any Go
// duration of whole seconds, or an integer followed by d for days) that divides a day or is a
// whole number of days; the aliases "minute", "hour" and "day"; or a calendar unit "week" (ISO
// 8601), "month" or "year". Case and surrounding spaces are ignored.
func ParseWidth(s string) (Width, error) {
	v := strings.ToLower(strings.TrimSpace(s))
	switch v {
	case "":
		return Width{}, fmt.Errorf("empty; use a fixed width such as 1h or 1d, or week, month or year")
	case "minute":
		return Width{Unit: Fixed, Seconds: 60}, nil
	case "hour":
		return Width{Unit: Fixed, Seconds: 3600}, nil
	case "day":
		return Width{Unit: Fixed, Seconds: secondsPerDay}, nil
	case "week":
		return Width{Unit: Week}, nil
	case "month":
		return Width{Unit: Month}, nil
	case "year":
		return Width{Unit: Year}, nil
	}
	var secs int64
	if days, ok := strings.CutSuffix(v, "d"); ok && days != "" && allDigits(days) {
		n, err := strconv.ParseInt(days, 10, 64)
		if err != nil || n > maxFixedDays {
			return Width{}, fmt.Errorf("%q is too wide; use at most %dd", s, maxFixedDays)
		}
		secs = n * secondsPerDay
	} else {
		if strings.HasSuffix(v, "w") {
			return Width{}, fmt.Errorf("%q: use week for ISO weeks (Monday start) or 7d for 7-day buckets aligned to the Unix epoch", s)
		}
		d, err := time.ParseDuration(v)
		if err != nil {
			return Width{}, fmt.Errorf("%q is not a width; use a duration such as 10m, 1h or 1d, or week, month or year", s)
		}
		if d%time.Second != 0 {
			return Width{}, fmt.Errorf("%q is not a whole number of seconds; use one of %s", s, acceptedWidths)
		}
		secs = int64(d / time.Second)
	}
	if secs <= 0 {
		return Width{}, fmt.Errorf("%q is not positive; use one of %s", s, acceptedWidths)
	}
	if !fixedFits(secs) {
		return Width{}, fmt.Errorf("%q does not divide a day and is not whole days; use one of %s", s, acceptedWidths)
	}
	if secs > maxFixedDays*secondsPerDay {
		return Width{}, fmt.Errorf("%q is too wide; use at most %dd", s, maxFixedDays)
	}
	return Width{Unit: Fixed, Seconds: secs}, nil
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// String renders the width the way ParseWidth accepts it: "10m", "1h", "2d", "week".
func (w Width) String() string {
	switch w.Unit {
	case Fixed:
		switch s := w.Seconds; {
		case s%secondsPerDay == 0:
			return strconv.FormatInt(s/secondsPerDay, 10) + "d"
		case s%3600 == 0:
			return strconv.FormatInt(s/3600, 10) + "h"
		case s%60 == 0:
			return strconv.FormatInt(s/60, 10) + "m"
		default:
			return strconv.FormatInt(s, 10) + "s"
		}
	case Week, Month, Year:
		return w.Unit.String()
	}
	return "invalid width"
}

// precision is the finest calendar field that varies between bucket starts; it picks the
// integer key form, the default text layout and the slice suffix.
type precision int

const (
	precSecond precision = iota
	precMinute
	precHour
	precDay
	precWeek
	precMonth
	precYear
)

func (w Width) precision() precision {
	switch w.Unit {
	case Week:
		return precWeek
	case Month:
		return precMonth
	case Year:
		return precYear
	}
	switch s := w.Seconds; {
	case s%secondsPerDay == 0:
		return precDay
	case s%3600 == 0:
		return precHour
	case s%60 == 0:
		return precMinute
	}
	return precSecond
}

// index is the number of the bucket holding the instant unix (seconds since the epoch),
// counted from the bucket that holds 1970-01-01T00:00:00Z.
func (w Width) index(unix int64) int64 {
	switch w.Unit {
	case Fixed:
		return floorDiv(unix, w.Seconds)
	case Week:
		return floorDiv(floorDiv(unix, secondsPerDay)+epochMondayOffset, 7)
	case Month:
		y, m, _ := civilFromDays(floorDiv(unix, secondsPerDay))
		return (y-1970)*12 + int64(m) - 1
	default: // Year
		y, _, _ := civilFromDays(floorDiv(unix, secondsPerDay))
		return y - 1970
	}
}

// start is the first second of bucket i, in seconds since the epoch.
func (w Width) start(i int64) int64 {
	switch w.Unit {
	case Fixed:
		return i * w.Seconds
	case Week:
		return (7*i - epochMondayOffset) * secondsPerDay
	case Month:
		return daysFromCivil(1970+floorDiv(i, 12), int(floorMod(i, 12))+1, 1) * secondsPerDay
	default: // Year
		return daysFromCivil(1970+i, 1, 1) * secondsPerDay
	}
}

// stamp holds the calendar fields of a bucket's start. For week buckets year is the ISO
// week-year and week the ISO week; the other fields describe the Monday.
type stamp struct {
	year                             int64
	month, day, hour, min, sec, week int
}

func (w Width) stamp(i int64) stamp {
	if w.Unit == Week {
		monday := 7*i - epochMondayOffset
		y, wk := isoWeekOfMonday(monday)
		_, m, d := civilFromDays(monday)
		return stamp{year: y, month: m, day: d, week: wk}
	}
	unix := w.start(i)
	days := floorDiv(unix, secondsPerDay)
	sod := int(unix - days*secondsPerDay)
	y, m, d := civilFromDays(days)
	return stamp{year: y, month: m, day: d, hour: sod / 3600, min: sod / 60 % 60, sec: sod % 60}
}

// intForm is the decimal integer key of a stamp at a precision: yyyymmddHHMMSS, yyyymmddHHMM,
// yyyymmddHH, yyyymmdd, yyyyww (ISO), yyyymm or yyyy.
func (s stamp) intForm(p precision) int64 {
	switch p {
	case precYear:
		return s.year
	case precMonth:
		return s.year*100 + int64(s.month)
	case precWeek:
		return s.year*100 + int64(s.week)
	}
	v := s.year*10000 + int64(s.month)*100 + int64(s.day)
	if p <= precHour {
		v = v*100 + int64(s.hour)
	}
	if p <= precMinute {
		v = v*100 + int64(s.min)
	}
	if p <= precSecond {
		v = v*100 + int64(s.sec)
	}
	return v
}

// Within reports whether every bucket of w lies inside one bucket of coarse: every boundary of
// coarse is a boundary of w. Fixed widths are aligned to the epoch, so a fixed coarse width holds
// fixed buckets that divide it; a week, a month or a year holds buckets that divide a day (a day
// boundary is a boundary of each), a month or a year holds months, and each width holds itself.
func (w Width) Within(coarse Width) bool {
	subDay := w.Unit == Fixed && w.Seconds <= secondsPerDay
	switch coarse.Unit {
	case Fixed:
		return w.Unit == Fixed && coarse.Seconds%w.Seconds == 0
	case Week:
		return subDay || w.Unit == Week
	case Month:
		return subDay || w.Unit == Month
	case Year:
		return subDay || w.Unit == Month || w.Unit == Year
	}
	return false
}
