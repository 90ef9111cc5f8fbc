package codec

import (
	"testing"
	"time"

	"github.com/bucketsink/sink/packed"
)

// TestTimeFormatIntegerAndText holds the one conversion of a count and of a layout that every codec
// calls: each unit at the edges of the years 0000 to 9999, days for a date, a layout in its zone, and
// the reason of each refusal.
func TestTimeFormatIntegerAndText(t *testing.T) {
	unix := func(u time.Duration) *TimeFormat { return &TimeFormat{Form: TimeUnix, Unit: u, Name: UnitName(u)} }
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Fatal(err)
	}
	layout := &TimeFormat{Form: TimeLayout, Layout: "02/01/2006 15:04", Zone: paris}
	date := &TimeFormat{Form: TimeLayout, Layout: "02/01/2006"}
	ts, dt := packed.KTimestamp, packed.KDate
	for _, tc := range []struct {
		f    *TimeFormat
		k    packed.Kind
		x    int64  // Integer's input when s is ""
		s    string // Text's input
		want time.Time
		why  string
	}{
		{unix(time.Second), ts, MinTime.Unix(), "", MinTime, ""},
		{unix(time.Second), ts, MinTime.Unix() - 1, "", time.Time{}, "out of range for CQL timestamp (years 0000 to 9999)"},
		{unix(time.Second), ts, MaxTime.Unix(), "", MaxTime.Truncate(time.Second), ""},
		{unix(time.Second), ts, MaxTime.Unix() + 1, "", time.Time{}, "out of range for CQL timestamp (years 0000 to 9999)"},
		{unix(time.Millisecond), ts, -1, "", time.Unix(0, -1e6).UTC(), ""},
		{unix(time.Microsecond), ts, 1705329442123456, "", time.Unix(1705329442, 123456000).UTC(), ""},
		{unix(time.Nanosecond), ts, -1 << 63, "", time.Unix(0, -1<<63).UTC(), ""}, // 1677: every int64 of ns is in range
		{unix(Day), dt, 19737, "", time.Date(2024, 1, 15, 0, 0, 0, 0, time.UTC), ""},
		{unix(Day), dt, -719528, "", MinTime, ""},
		{unix(Day), dt, -719529, "", time.Time{}, "out of range for CQL timestamp (years 0000 to 9999)"},
		{unix(Day), dt, 1 << 62, "", time.Time{}, "out of range for CQL timestamp (years 0000 to 9999)"},
		{&TimeFormat{}, ts, 1705329442123, "", time.Unix(1705329442, 123e6).UTC(), ""}, // a column's default: ms
		{unix(time.Second), ts, 0, "1705329442", time.Unix(1705329442, 0).UTC(), ""},
		{unix(time.Second), ts, 0, "1705329442.5", time.Time{}, "not a whole unix_s number for CQL timestamp"},
		{unix(Day), dt, 0, "19737", time.Date(2024, 1, 15, 0, 0, 0, 0, time.UTC), ""},
		{layout, ts, 0, "15/01/2024 15:37", time.Date(2024, 1, 15, 14, 37, 0, 0, time.UTC), ""},
		{layout, ts, 0, "15/07/2024 16:37", time.Date(2024, 7, 15, 14, 37, 0, 0, time.UTC), ""},
		{layout, ts, 0, "15/01/2024", time.Time{}, `not in the layout "02/01/2006 15:04" for CQL timestamp`},
		{layout, ts, 0, "01/01/0000 00:00", time.Time{}, "out of range for CQL timestamp (years 0000 to 9999)"},
		{date, dt, 0, "15/01/2024", time.Date(2024, 1, 15, 0, 0, 0, 0, time.UTC), ""},
		{&TimeFormat{Form: TimeLayout, Layout: "02/01/2006 15:04"}, dt, 0, "15/01/2024 10:00", time.Time{}, "not a midnight, and CQL date holds no time of day"},
	} {
		var got time.Time
		var why string
		if tc.s == "" {
			got, why = tc.f.Integer(tc.k, tc.x, "for CQL timestamp")
		} else {
			got, why = tc.f.Text(tc.k, []byte(tc.s), "for CQL "+tc.k.String())
		}
		if why != tc.why || !got.Equal(tc.want) {
			t.Errorf("%s %q %d %q: %v %q, want %v %q", tc.f.Name, tc.f.Layout, tc.x, tc.s, got, why, tc.want, tc.why)
		}
	}
}
