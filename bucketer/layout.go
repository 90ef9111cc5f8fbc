package bucketer

import (
	"fmt"
	"strings"
)

// A text layout is compiled once into elements; rendering walks them and appends digits.

type field uint8

const (
	fieldLiteral field = iota
	fieldYear          // 2006: four-digit year (ISO week-year for week buckets)
	fieldMonth         // 01: two-digit month
	fieldWeek          // 01 with width week: two-digit ISO week
	fieldDay           // 02
	fieldHour          // 15
	fieldMinute        // 04
	fieldSecond        // 05
)

type element struct {
	field   field
	literal string
}

// literalBytes are the separators a layout may contain besides its fields. Letters and digits
// other than these are refused so that a Go layout element we do not implement ("Jan", "06",
// "_2", "MST") is an error instead of being printed literally.
const literalBytes = "-_/:. TWw"

const layoutHelp = "use 2006 (year; ISO week-year with width week), 01 (month; ISO week with width week), " +
	"02 (day), 15 (hour), 04 (minute), 05 (second) and the separators - _ / : . T W w and space"

// defaultLayout is the layout used when the spec names none.
func defaultLayout(p precision) string {
	switch p {
	case precSecond:
		return "2006-01-02-15-04-05"
	case precMinute:
		return "2006-01-02-15-04"
	case precHour:
		return "2006-01-02-15"
	case precDay:
		return "2006-01-02"
	case precWeek:
		return "2006-W01"
	case precMonth:
		return "2006-01"
	default:
		return "2006"
	}
}

// compileLayout parses layout for buckets of precision p. Every field that varies between
// buckets must appear, or two buckets would share a key; finer fields are allowed (they print
// the bucket start, e.g. 00 minutes) except with week buckets, where only the ISO week-year and
// week mean anything.
func compileLayout(layout string, p precision) ([]element, error) {
	var elems []element
	var seen [fieldSecond + 1]bool
	for i := 0; i < len(layout); {
		rest := layout[i:]
		var f field
		n := 2
		switch {
		case strings.HasPrefix(rest, "2006"):
			f, n = fieldYear, 4
		case strings.HasPrefix(rest, "01"):
			f = fieldMonth
			if p == precWeek {
				f = fieldWeek
			}
		case strings.HasPrefix(rest, "02"):
			f = fieldDay
		case strings.HasPrefix(rest, "15"):
			f = fieldHour
		case strings.HasPrefix(rest, "04"):
			f = fieldMinute
		case strings.HasPrefix(rest, "05"):
			f = fieldSecond
		case strings.IndexByte(literalBytes, layout[i]) >= 0:
			if k := len(elems) - 1; k >= 0 && elems[k].field == fieldLiteral {
				elems[k].literal += layout[i : i+1]
			} else {
				elems = append(elems, element{literal: layout[i : i+1]})
			}
			i++
			continue
		default:
			return nil, fmt.Errorf("%q: unsupported element at %q; %s", layout, abbreviate(rest), layoutHelp)
		}
		if p == precWeek && f != fieldYear && f != fieldWeek {
			return nil, fmt.Errorf("%q: with width week only 2006 (ISO week-year) and 01 (ISO week) are allowed, e.g. 2006-W01", layout)
		}
		seen[f] = true
		elems = append(elems, element{field: f})
		i += n
	}
	var need []field
	switch p {
	case precYear:
		need = []field{fieldYear}
	case precMonth:
		need = []field{fieldYear, fieldMonth}
	case precWeek:
		need = []field{fieldYear, fieldWeek}
	case precDay:
		need = []field{fieldYear, fieldMonth, fieldDay}
	case precHour:
		need = []field{fieldYear, fieldMonth, fieldDay, fieldHour}
	case precMinute:
		need = []field{fieldYear, fieldMonth, fieldDay, fieldHour, fieldMinute}
	default:
		need = []field{fieldYear, fieldMonth, fieldDay, fieldHour, fieldMinute, fieldSecond}
	}
	for _, f := range need {
		if !seen[f] {
			return nil, fmt.Errorf("%q lacks %s, so different buckets would get the same key; e.g. %s",
				layout, fieldName(f), defaultLayout(p))
		}
	}
	return elems, nil
}

func fieldName(f field) string {
	switch f {
	case fieldYear:
		return "the year (2006)"
	case fieldMonth:
		return "the month (01)"
	case fieldWeek:
		return "the ISO week (01)"
	case fieldDay:
		return "the day (02)"
	case fieldHour:
		return "the hour (15)"
	case fieldMinute:
		return "the minute (04)"
	}
	return "the second (05)"
}

func abbreviate(s string) string {
	if len(s) > 8 {
		return s[:8] + "..."
	}
	return s
}

// appendStamp renders s with the compiled elements.
func appendStamp(dst []byte, elems []element, s stamp) []byte {
	for _, e := range elems {
		switch e.field {
		case fieldLiteral:
			dst = append(dst, e.literal...)
		case fieldYear:
			dst = appendYear(dst, s.year)
		case fieldMonth:
			dst = append2(dst, s.month)
		case fieldWeek:
			dst = append2(dst, s.week)
		case fieldDay:
			dst = append2(dst, s.day)
		case fieldHour:
			dst = append2(dst, s.hour)
		case fieldMinute:
			dst = append2(dst, s.min)
		case fieldSecond:
			dst = append2(dst, s.sec)
		}
	}
	return dst
}

func append2(dst []byte, v int) []byte {
	return append(dst, byte('0'+v/10), byte('0'+v%10))
}

// appendYear writes years 0000-9999 as four digits. Years outside that range are not part of
// the key contract (see Policy.Check); they are still written deterministically, with a minus
// sign or more digits, so that a bad input never panics.
func appendYear(dst []byte, y int64) []byte {
	if y < 0 {
		dst = append(dst, '-')
		y = -y
	}
	if y > 9999 {
		var buf [20]byte
		n := len(buf)
		for y > 0 {
			n--
			buf[n] = byte('0' + y%10)
			y /= 10
		}
		return append(dst, buf[n:]...)
	}
	v := int(y)
	return append(dst, byte('0'+v/1000), byte('0'+v/100%10), byte('0'+v/10%10), byte('0'+v%10))
}
