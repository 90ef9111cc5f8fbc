package bucketer

// Calendar arithmetic on the proleptic Gregorian calendar in UTC, done on integers so that no
// time.Location is ever consulted and nothing allocates. Days are counted from 1970-01-01.

const (
	secondsPerDay = 86400
	// 1969-12-29 is the Monday of ISO week 1970-W01; it is day -3 since the epoch.
	epochMondayOffset = 3
)

// floorDiv is a/b rounded toward negative infinity (b > 0), so pre-epoch instants land in the
// bucket that starts before them rather than the one after.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// floorMod is the non-negative remainder matching floorDiv (b > 0).
func floorMod(a, b int64) int64 {
	m := a % b
	if m != 0 && (m < 0) != (b < 0) {
		m += b
	}
	return m
}

// Bounds of the fast path in civilFromDays: days+neriShift must stay within what its 32-bit
// arithmetic handles (4*n+3 < 2^32). That covers roughly years -30800 to 2.9 million.
const (
	neriCycles = 82                         // 400-year cycles added so that the arithmetic stays unsigned
	neriShift  = 719468 + 146097*neriCycles // days from (-32800)-03-01 to 1970-01-01
	neriMax    = (1<<32-4)/4 - neriShift
)

// civilFromDays converts a day count since 1970-01-01 to year, month (1-12) and day (1-31).
// It runs on every event with an int or text key, so the common range uses the 32-bit method of
// Neri and Schneider ("Euclidean affine functions and their application to calendar
// algorithms", 2022): a March-based year, then multiplications and shifts instead of divisions
// by non-powers of two. Other day counts take civilFromDaysSlow. Tests compare the two across
// more than ten thousand years.
func civilFromDays(z int64) (year int64, month, day int) {
	if z < -neriShift || z > neriMax {
		return civilFromDaysSlow(z)
	}
	n := uint32(z + neriShift)
	n1 := 4*n + 3
	c := n1 / 146097      // century of the shifted calendar
	nc := n1 % 146097 / 4 // day of the century
	n2 := 4*nc + 3
	p2 := uint64(2939745) * uint64(n2) // year of century in the high word, day of year in the low
	z2 := uint32(p2 >> 32)
	ny := uint32(p2) / 2939745 / 4 // day of the March-based year
	y := 100*c + z2
	n3 := 2141*ny + 197913 // month in the high half, day in the low
	m := n3 >> 16
	d := n3 & 0xffff / 2141
	year = int64(y) - 400*neriCycles
	month, day = int(m), int(d)+1
	if ny >= 306 { // January and February belong to the next civil year
		year++
		month -= 12
	}
	return year, month, day
}

// civilFromDaysSlow converts a day count since 1970-01-01 to year, month (1-12) and day (1-31)
// for any day count. It shifts the year to start on March 1 so the leap day is the last day of
// a year, then works in 400-year eras of 146097 days.
func civilFromDaysSlow(z int64) (year int64, month, day int) {
	z += 719468 // days from 0000-03-01 to 1970-01-01
	era := floorDiv(z, 146097)
	doe := z - era*146097                                  // day of era [0, 146096]
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365 // year of era [0, 399]
	doy := doe - (365*yoe + yoe/4 - yoe/100)               // day of March-based year [0, 365]
	mp := (5*doy + 2) / 153                                // March-based month [0, 11]
	day = int(doy - (153*mp+2)/5 + 1)
	if mp < 10 {
		month = int(mp + 3)
	} else {
		month = int(mp - 9)
	}
	year = yoe + era*400
	if month <= 2 {
		year++
	}
	return year, month, day
}

// daysFromCivil is the inverse of civilFromDays.
func daysFromCivil(year int64, month, day int) int64 {
	if month <= 2 {
		year--
	}
	era := floorDiv(year, 400)
	yoe := year - era*400
	var mp int64
	if month > 2 {
		mp = int64(month - 3)
	} else {
		mp = int64(month + 9)
	}
	doy := (153*mp+2)/5 + int64(day) - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}

// isoWeekOfMonday returns the ISO week-year and week number of the week starting on the given
// Monday (a day count). The week belongs to the year of its Thursday.
func isoWeekOfMonday(monday int64) (year int64, week int) {
	thursday := monday + 3
	year, _, _ = civilFromDays(thursday)
	jan1 := daysFromCivil(year, 1, 1)
	return year, int((thursday-jan1)/7) + 1
}
