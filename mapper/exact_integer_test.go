package mapper

import (
	"strings"
	"testing"

	"github.com/bucketsink/sink/config"
)

// A whole number written with a fraction or an exponent reaches a bigint column exactly: through a float64,
// 1234567890123456789.0 was written as 1234567890123456768. A fraction is still refused.
func TestJSONWholeNumberWithFractionOrExponentIsExact(t *testing.T) {
	m := newMapper(t, func(tp *config.Topic) {
		tp.Columns = append(tp.Columns, config.Column{Name: "seq", Type: "bigint", Field: "seq"})
	})
	for text, want := range map[string]int64{
		"1234567890123456789.0": 1234567890123456789, `"1234567890123456789.0"`: 1234567890123456789,
		"1.0e3": 1000, "12e0": 12, "-9.223372036854775808e18": -9223372036854775808,
	} {
		row, err := m.Map(rec(strings.TrimSuffix(sensorJSON, "}") + `,"seq":` + text + "}"))
		if err != nil {
			t.Errorf("%s: %v", text, err)
			continue
		}
		vals := decoded(t, Values(row))
		if got := vals[len(vals)-4]; got != want {
			t.Errorf("%s: seq %v, want %d (values %v)", text, got, want, vals)
		}
	}
	if _, err := m.Map(rec(strings.TrimSuffix(sensorJSON, "}") + `,"seq":1.5}`)); err == nil || !strings.Contains(err.Error(), "whole number") {
		t.Errorf("1.5: %v, want refused as not a whole number", err)
	}
}
