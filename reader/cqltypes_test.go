package reader

import (
	"testing"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
)

func TestFormatTimeAndDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "00:00:00", 15*time.Hour + 4*time.Minute + 5*time.Second + 120*time.Millisecond: "15:04:05.12",
		24*time.Hour - 1: "23:59:59.999999999",
	} {
		if got := FormatTimeOfDay(d); got != want {
			t.Errorf("%d: %s, want %s", d, got, want)
		}
	}
	for d, want := range map[gocql.Duration]string{
		{}: "0s", {Months: 14, Days: 3, Nanoseconds: int64(4*time.Hour + 5*time.Minute + 6*time.Second + 7)}: "1y2mo3d4h5m6s7ns",
		{Nanoseconds: -int64(90 * time.Minute)}: "-1h30m", {Days: -2}: "-2d", {Nanoseconds: 1500}: "1us500ns",
	} {
		if got := FormatDuration(d); got != want {
			t.Errorf("%+v: %s, want %s", d, got, want)
		}
	}
}

// A tuple's elements, scanned as columns of their own, come back as one value; all null is a null.
func TestFoldTuples(t *testing.T) {
	m := map[string]any{"a": 1, "p[0]": nil, "p[1]": "y", "q[0]": nil, "q[1]": nil}
	foldTuples(m, []tupleColumn{{"p", 2}, {"q", 2}})
	if len(m) != 3 || m["q"] != nil || len(m["p"].([]any)) != 2 || m["p"].([]any)[0] != nil || m["p"].([]any)[1] != "y" {
		t.Errorf("folded %#v", m)
	}
}
