package bucketer

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"
	"time"
)

// KeyType is the form of the bucket column.
type KeyType int

const (
	// KeyText is a string rendered with the policy's layout (CQL text).
	KeyText KeyType = iota + 1
	// KeyDate is the bucket start as a CQL date (widths of a day or more only).
	KeyDate
	// KeyTimestamp is the bucket start as a CQL timestamp.
	KeyTimestamp
	// KeyInt is the decimal calendar form, e.g. 2024011514 (CQL int when it fits, else bigint).
	KeyInt
	// KeyNumber is the bucket number since the epoch's bucket (CQL bigint).
	KeyNumber
)

func (k KeyType) String() string {
	switch k {
	case KeyText:
		return "text"
	case KeyDate:
		return "date"
	case KeyTimestamp:
		return "timestamp"
	case KeyInt:
		return "int"
	case KeyNumber:
		return "number"
	}
	return "KeyType(" + strconv.Itoa(int(k)) + ")"
}

// ParseKeyType parses a key type name; "" is text.
func ParseKeyType(s string) (KeyType, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "text":
		return KeyText, nil
	case "date":
		return KeyDate, nil
	case "timestamp":
		return KeyTimestamp, nil
	case "int":
		return KeyInt, nil
	case "number":
		return KeyNumber, nil
	}
	return 0, fmt.Errorf("%q is not a key type; use text, date, timestamp, int or number", s)
}

// Spec is a bucket policy as configuration holds it (see config.Bucket).
type Spec struct {
	Width  string // "10m", "1h", "1d", "week", "month", "year", ...
	Key    string // text (default), date, timestamp, int, number
	Layout string // text layout; default per width
	Slice  string // slice width; "" = not sliced
	// EventBuckets is the number of event buckets per (id, time bucket); 0 or 1 = none.
	EventBuckets int
	// Rolling > 0 makes the key the bucket number mod Rolling.
	Rolling int
}

// MaxEventBuckets bounds Spec.EventBuckets: every read of a time bucket fans out to all of them.
const MaxEventBuckets = 1024

// FieldError is one problem in a Spec. Field is the configuration key of the Spec field
// (width, key, layout, slice, event_buckets, rolling) so that config can prefix its key path.
type FieldError struct {
	Field string
	Err   error
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Err.Error() }
func (e *FieldError) Unwrap() error { return e.Err }

// Policy is a compiled, immutable bucket policy. It is safe for concurrent use.
type Policy struct {
	width        Width
	prec         precision
	key          KeyType
	layout       []element
	layoutText   string
	eventBuckets int
	sliced       bool
	slice        Width
	slicePrec    precision
	rolling      int64
	intKey32     bool // the int key fits a CQL int
	// perDay and recip speed up Index for fixed widths that divide a day (perDay > 0): the
	// second of the day fits 32 bits, so dividing it by the width is a multiply by recip.
	perDay int64
	recip  uint64
	minIdx int64
	maxIdx int64
}

// MinTime and MaxTime bound the instants whose keys are part of the contract: four-digit years.
// They are informational; the package itself uses private copies, so changing them changes nothing.
var (
	MinTime = minTime
	MaxTime = maxTime
)

var (
	minTime = time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC)
	maxTime = time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC)
)

// New validates and compiles a spec. The error lists every problem found, each a *FieldError
// (joined with errors.Join when there are several), saying what is wrong and what would be right.
func New(s Spec) (*Policy, error) {
	var errs []error
	fail := func(field string, err error) { errs = append(errs, &FieldError{Field: field, Err: err}) }
	p := &Policy{}

	w, err := ParseWidth(s.Width)
	widthOK := err == nil
	if !widthOK {
		fail("width", err)
		w = Width{Unit: Fixed, Seconds: secondsPerDay} // keep checking what does not depend on the width
	}
	p.width, p.prec = w, w.precision()

	key, err := ParseKeyType(s.Key)
	if err != nil {
		fail("key", err)
		key = KeyText
	}
	p.key = key
	if widthOK && key == KeyDate && p.prec < precDay {
		fail("key", fmt.Errorf("date needs a width of a day or more, not %s; use timestamp, int or text", w))
	}

	if s.Layout != "" && key != KeyText {
		fail("layout", fmt.Errorf("only applies to key text, not %s; remove it", key))
	}
	if key == KeyText {
		p.layoutText = s.Layout
		if p.layoutText == "" {
			p.layoutText = defaultLayout(p.prec)
		}
		elems, err := compileLayout(p.layoutText, p.prec)
		if err != nil && (widthOK || s.Layout != "") {
			fail("layout", err)
		}
		p.layout = elems
	} else {
		// Other key types still render text for logs and `sink explain`; the default always compiles.
		p.layout, _ = compileLayout(defaultLayout(p.prec), p.prec)
	}

	switch {
	case s.EventBuckets < 0:
		fail("event_buckets", fmt.Errorf("%d is negative; use 0 (none) or a count such as 4", s.EventBuckets))
	case s.EventBuckets > MaxEventBuckets:
		fail("event_buckets", fmt.Errorf("%d is more than %d; every read of a time bucket touches them all", s.EventBuckets, MaxEventBuckets))
	case s.EventBuckets > 1:
		p.eventBuckets = s.EventBuckets
	}

	switch {
	case s.Rolling < 0:
		fail("rolling", fmt.Errorf("%d is negative; use 0 (none) or the number of buckets to keep", s.Rolling))
	case s.Rolling > 0 && key != KeyInt && key != KeyNumber:
		fail("rolling", fmt.Errorf("needs key int or number, not %s", key))
	case s.Rolling > 0:
		p.rolling = int64(s.Rolling)
	}

	switch {
	case p.rolling > 0:
		p.intKey32 = key == KeyInt && p.rolling-1 <= math.MaxInt32
	case key == KeyInt:
		p.intKey32 = p.prec >= precDay
	}

	if strings.TrimSpace(s.Slice) != "" {
		sw, err := ParseWidth(s.Slice)
		switch {
		case err != nil:
			fail("slice", err)
		case !widthOK:
			// Whether the slice holds whole buckets cannot be judged without a valid width.
		default:
			if err := checkSlice(w, sw); err != nil {
				fail("slice", err)
			} else {
				p.sliced, p.slice, p.slicePrec = true, sw, sw.precision()
			}
		}
	}

	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if w.Unit == Fixed && w.Seconds > 1 && w.Seconds <= secondsPerDay {
		p.perDay = secondsPerDay / w.Seconds
		p.recip = ^uint64(0)/uint64(w.Seconds) + 1
	}
	p.bounds()
	return p, nil
}

// checkSlice requires every bucket to lie inside one slice.
func checkSlice(bucket, slice Width) error {
	subDay := bucket.Unit == Fixed && bucket.Seconds <= secondsPerDay // divides a day
	switch slice.Unit {
	case Fixed:
		if slice.Seconds%3600 != 0 {
			return fmt.Errorf("%s: a slice is a table, so it must be whole hours or more, e.g. 1d", slice)
		}
		if bucket.Unit != Fixed {
			return fmt.Errorf("%s cannot hold %s buckets; use a slice of %s or coarser", slice, bucket, bucket.Unit)
		}
		if slice.Seconds%bucket.Seconds != 0 {
			return fmt.Errorf("%s is not a whole multiple of the bucket width %s", slice, bucket)
		}
	case Week:
		if !subDay && bucket.Unit != Week {
			return fmt.Errorf("week slices hold buckets of a day or less, or week buckets, not %s", bucket)
		}
	case Month:
		if !subDay && bucket.Unit != Month {
			return fmt.Errorf("month slices hold buckets of a day or less, or month buckets, not %s (it would straddle months)", bucket)
		}
	case Year:
		if !subDay && bucket.Unit != Month && bucket.Unit != Year {
			return fmt.Errorf("year slices hold buckets of a day or less, month or year buckets, not %s (it would straddle years)", bucket)
		}
	}
	return nil
}

// bounds computes the first and last bucket whose keys are in the contract: the bucket and its
// slice start in year 0000 or later, and the bucket holds an instant up to MaxTime.
func (p *Policy) bounds() {
	lo := p.width.index(minTime.Unix())
	if floorDiv(p.width.start(lo), secondsPerDay) < daysFromCivil(0, 1, 1) {
		lo++
	}
	if p.sliced {
		s := p.slice.index(minTime.Unix())
		if floorDiv(p.slice.start(s), secondsPerDay) < daysFromCivil(0, 1, 1) {
			s++
		}
		lo = max(lo, p.width.index(p.slice.start(s)))
	}
	p.minIdx = lo
	p.maxIdx = p.width.index(maxTime.Unix())
}

// Width is the bucket width.
func (p *Policy) Width() Width { return p.width }

// KeyType is the form of the bucket column.
func (p *Policy) KeyType() KeyType { return p.key }

// Layout is the text layout in use ("" unless the key is text).
func (p *Policy) Layout() string { return p.layoutText }

// EventBuckets is the number of event buckets per (id, time bucket); 1 when there are none.
func (p *Policy) EventBuckets() int { return max(p.eventBuckets, 1) }

// Rolling is the rolling modulus; 0 when keys do not roll.
func (p *Policy) Rolling() int64 { return p.rolling }

// Sliced reports whether the policy puts slices of time in separate tables, and their width.
func (p *Policy) Sliced() (Width, bool) {
	if p == nil { // a table without time buckets (a latest-value table) has none
		return Width{}, false
	}
	return p.slice, p.sliced
}

// Index is the number of the bucket holding t, counted from the bucket that holds the Unix
// epoch (negative before it). Only the instant matters, never t's location.
func (p *Policy) Index(t time.Time) int64 {
	if p.perDay == 0 {
		return p.width.index(t.Unix())
	}
	// A 64-bit division by a width known only at run time costs more than everything else on
	// this path; split the instant into days (a constant divisor) and the second of the day, and
	// divide the latter with Lemire's method: for n, d < 2^32, n/d is the high word of
	// n * (floor((2^64-1)/d) + 1).
	unix := t.Unix()
	days := floorDiv(unix, secondsPerDay)
	q, _ := bits.Mul64(p.recip, uint64(unix-days*secondsPerDay))
	return days*p.perDay + int64(q)
}

// Start is the UTC start of bucket i; the bucket ends where bucket i+1 starts.
func (p *Policy) Start(i int64) time.Time { return time.Unix(p.width.start(i), 0).UTC() }

// End is the UTC end (exclusive) of bucket i.
func (p *Policy) End(i int64) time.Time { return p.Start(i + 1) }

// Check reports whether bucket i has keys inside the contract (see MinTime); outside it the
// text and integer forms are still deterministic but no longer four-digit years.
func (p *Policy) Check(i int64) error {
	if i < p.minIdx || i > p.maxIdx {
		return fmt.Errorf("bucket %d starts at %s, outside the supported years 0000-9999", i, p.Start(i).Format(time.RFC3339))
	}
	return nil
}

// KeyInt is the decimal calendar form of bucket i: yyyymmddHHMMSS, yyyymmddHHMM, yyyymmddHH or
// yyyymmdd for fixed widths (the finest field that varies), yyyyww for weeks (ISO week-year and
// week), yyyymm for months and yyyy for years. It ignores Rolling; Value applies it.
func (p *Policy) KeyInt(i int64) int64 { return p.width.stamp(i).intForm(p.prec) }

// AppendText appends the text form of bucket i, rendered with the layout, to dst. Policies with
// other key types render with the default layout of their width (for logs and diagnostics).
func (p *Policy) AppendText(dst []byte, i int64) []byte {
	return appendStamp(dst, p.layout, p.width.stamp(i))
}

// Text is the text form of bucket i; it allocates only the returned string (for keys of up to
// 48 bytes, which every layout without long runs of separators gives).
func (p *Policy) Text(i int64) string {
	var buf [48]byte
	return string(p.AppendText(buf[:0], i))
}

// Value is the value to bind for the bucket column of bucket i: string for text, time.Time
// (UTC bucket start) for date and timestamp, int32 or int64 for int and number (matching
// CQLType), with Rolling applied.
func (p *Policy) Value(i int64) any {
	switch p.key {
	case KeyText:
		return p.Text(i)
	case KeyDate, KeyTimestamp:
		return p.Start(i)
	}
	v := p.IntValue(i)
	if p.intKey32 {
		return int32(v)
	}
	return v
}

// IntValue is the integer bound for key int or number, with Rolling applied: the calendar form
// (KeyInt) or the bucket number, or that number mod Rolling. It does not allocate.
func (p *Policy) IntValue(i int64) int64 {
	switch {
	case p.rolling > 0:
		return p.RollingKey(i)
	case p.key == KeyInt:
		return p.KeyInt(i)
	}
	return i
}

// RollingKey is i mod Rolling, never negative (i itself when Rolling is 0).
func (p *Policy) RollingKey(i int64) int64 {
	if p.rolling <= 0 {
		return i
	}
	return floorMod(i, p.rolling)
}

// CQLType is the CQL type of the bucket column: text, date, timestamp, int or bigint.
func (p *Policy) CQLType() string {
	switch p.key {
	case KeyText:
		return "text"
	case KeyDate:
		return "date"
	case KeyTimestamp:
		return "timestamp"
	}
	if p.intKey32 {
		return "int"
	}
	return "bigint"
}
