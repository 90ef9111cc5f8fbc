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

// civilFromDays converts a day count since 1970-01-01 to year, month (1-12) and day (1-31).
// The method shifts the year to start on March 1 so the leap day is the last day of a year,
// then works in 400-year eras of 146097 days.
func civilFromDays(z int64) (year int64, month, day int) {
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
