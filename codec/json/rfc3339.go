package json

import (
	"errors"
	"time"
)

// ParseRFC3339's errors; callers name the field and show the value themselves. ErrRFC3339Offset is
// a date-time that is RFC 3339 but for its UTC offset, hours past 23 or minutes past 59 (+24:00).
var (
	ErrRFC3339       = errors.New("not an RFC 3339 date-time")
	ErrRFC3339Offset = errors.New("an RFC 3339 date-time with an offset out of range")
)

// OffsetProblem says what is wrong with a value of ErrRFC3339Offset.
const OffsetProblem = "RFC 3339 but for its UTC offset, which must be -23:59 to +23:59"

// ParseRFC3339 parses an RFC 3339 date-time (section 5.6) into UTC:
//
//	YYYY-MM-DD ("T" | "t") hh:mm:ss [("." | ",") 1*DIGIT] ("Z" | "z" | ("+" | "-") hh:mm)
//
// The grammar is the RFC's, checked here by hand rather than by time.Parse, which is both slower
// (about 80 ns of a sensor record's mapping profile against about 25 ns here) and more lenient
// than the RFC: it takes offsets of +24:00 and beyond, and minutes of 60 in an offset. Where this
// function and the RFC differ, on purpose:
//   - a comma before the fraction is accepted, as ISO 8601 allows and time.Parse does;
//   - fraction digits past the ninth are accepted and dropped (time has nanoseconds);
//   - a leap second (ss = 60) is refused: Go's time and CQL's timestamp have no such instant.
//
// The year is four digits, 0000 to 9999; whether the instant is one the sink writes is the caller's
// (codec.InRange, say). The mapper's TestRFC3339Boundaries holds every boundary of this grammar.
func ParseRFC3339(s string) (time.Time, error) {
	// Shortest: 2006-01-02T15:04:05Z (20 bytes).
	if len(s) < 20 || s[4] != '-' || s[7] != '-' || (s[10] != 'T' && s[10] != 't') || s[13] != ':' || s[16] != ':' {
		return time.Time{}, ErrRFC3339
	}
	year, ok1 := digits(s[0:4])
	month, ok2 := digits(s[5:7])
	day, ok3 := digits(s[8:10])
	hour, ok4 := digits(s[11:13])
	minute, ok5 := digits(s[14:16])
	sec, ok6 := digits(s[17:19])
	if !ok1 || !ok2 || !ok3 || !ok4 || !ok5 || !ok6 ||
		month < 1 || month > 12 || day < 1 || day > daysIn(month, year) ||
		hour > 23 || minute > 59 || sec > 59 {
		return time.Time{}, ErrRFC3339
	}
	rest := s[19:]
	nsec := 0
	if rest[0] == '.' || rest[0] == ',' {
		i := 1
		scale := 100_000_000
		for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
			nsec += int(rest[i]-'0') * scale
			scale /= 10 // 0 past the ninth digit: the rest are dropped
			i++
		}
		if i == 1 {
			return time.Time{}, ErrRFC3339
		}
		rest = rest[i:]
	}
	offset := 0
	switch {
	case rest == "Z" || rest == "z":
	case len(rest) == 6 && (rest[0] == '+' || rest[0] == '-') && rest[3] == ':':
		oh, ok1 := digits(rest[1:3])
		om, ok2 := digits(rest[4:6])
		if !ok1 || !ok2 {
			return time.Time{}, ErrRFC3339
		}
		if oh > 23 || om > 59 {
			return time.Time{}, ErrRFC3339Offset
		}
		offset = (oh*60 + om) * 60
		if rest[0] == '-' {
			offset = -offset
		}
	default:
		return time.Time{}, ErrRFC3339
	}
	unix := daysSinceEpoch(year, month, day)*86400 + int64(hour*3600+minute*60+sec) - int64(offset)
	return time.Unix(unix, int64(nsec)).UTC(), nil
}

// digits parses a short run of ASCII digits.
func digits(s string) (int, bool) {
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

func daysIn(month, year int) int {
	switch month {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// daysSinceEpoch counts the days from 1970-01-01 to a proleptic Gregorian date of a year from
// 0 to 9999 (Howard Hinnant's days_from_civil).
func daysSinceEpoch(y, m, d int) int64 {
	if m <= 2 {
		y--
	}
	era := y
	if era < 0 {
		era -= 399
	}
	era /= 400
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return int64(era)*146097 + int64(doe) - 719468
}
