package gen

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2024, 1, 15, 14, 37, 22, 123_000_000, time.UTC)

func mustNew(t testing.TB, cfg Config) *Generator {
	t.Helper()
	g, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

type reading struct {
	DeviceID    *string  `json:"device_id"`
	TS          string   `json:"ts"`
	Temperature *float64 `json:"temperature"`
	Humidity    float64  `json:"humidity"`
	Battery     float64  `json:"battery"`
	Site        struct {
		ID string `json:"id"`
	} `json:"site"`
}

func TestGoodRecordsAreCompleteJSON(t *testing.T) {
	g := mustNew(t, Config{Seed: 1, Start: t0, Rate: 200})
	total := 0
	for i := range 5000 {
		ev := g.Next()
		if ev.Defect != Good {
			t.Fatalf("record %d: defect %v with BadFraction 0", i, ev.Defect)
		}
		var r reading
		if err := json.Unmarshal(ev.Value, &r); err != nil {
			t.Fatalf("record %d: %v: %s", i, err, ev.Value)
		}
		if r.DeviceID == nil || *r.DeviceID != string(ev.Key) || *r.DeviceID != g.DeviceID(ev.Device) {
			t.Fatalf("record %d: device_id %v, key %q, device %d", i, r.DeviceID, ev.Key, ev.Device)
		}
		ts, err := time.Parse(time.RFC3339Nano, r.TS)
		if err != nil || !ts.Equal(ev.Time) {
			t.Fatalf("record %d: ts %q parses to %v (%v), event time %v", i, r.TS, ts, err, ev.Time)
		}
		if r.Temperature == nil || *r.Temperature < 0 || *r.Temperature > 45 {
			t.Fatalf("record %d: temperature %v out of the plausible range", i, r.Temperature)
		}
		if r.Battery < 3.3 || r.Battery > 4.2 || r.Humidity < 35 || r.Humidity > 63 {
			t.Fatalf("record %d: battery %v humidity %v out of range", i, r.Battery, r.Humidity)
		}
		if !strings.HasPrefix(r.Site.ID, "plant-") {
			t.Fatalf("record %d: site %q", i, r.Site.ID)
		}
		total += len(ev.Value)
	}
	// The record size is part of what benchmarks and capacity examples assume.
	if avg := total / 5000; avg < 120 || avg > 170 {
		t.Errorf("average record is %d bytes, want about 150", avg)
	}
}

func TestExampleRecordShape(t *testing.T) {
	g := mustNew(t, Config{Seed: 7, Start: t0})
	ev := g.Next()
	want := `{"device_id":"` + string(ev.Key) + `","ts":"2024-01-15T14:37:22.123Z","temperature":`
	if !bytes.HasPrefix(ev.Value, []byte(want)) {
		t.Errorf("record\n%s\ndoes not start with\n%s", ev.Value, want)
	}
	if len(ev.Key) != len("dev-00042") {
		t.Errorf("key %q: want dev- and five digits for 10,000 devices", ev.Key)
	}
	if id := mustNew(t, Config{Entities: 250_000}).DeviceID(42); id != "dev-000042" {
		t.Errorf("device 42 of 250,000 is %q, want dev-000042 (padding follows the largest id)", id)
	}
}

func TestSameSeedSameStream(t *testing.T) {
	cfg := Config{Seed: 42, Start: t0, BadFraction: 0.05}
	a, b := mustNew(t, cfg), mustNew(t, cfg)
	cfg.Seed = 43
	c := mustNew(t, cfg)
	differs := 0
	for i := range 2000 {
		ea, eb, ec := a.Next(), b.Next(), c.Next()
		if !bytes.Equal(ea.Key, eb.Key) || !bytes.Equal(ea.Value, eb.Value) || !ea.Time.Equal(eb.Time) {
			t.Fatalf("record %d differs for the same seed:\n%s\n%s", i, ea.Value, eb.Value)
		}
		if !bytes.Equal(ea.Value, ec.Value) {
			differs++
		}
	}
	if differs < 1900 {
		t.Errorf("only %d of 2000 records differ between seeds 42 and 43", differs)
	}
}

func TestAppendMatchesNext(t *testing.T) {
	cfg := Config{Seed: 3, Start: t0, BadFraction: 0.2}
	a, b := mustNew(t, cfg), mustNew(t, cfg)
	var buf []byte
	for i := range 500 {
		prefix := len(buf)
		var ev Event
		buf, ev = b.Append(buf)
		want := a.Next()
		if !bytes.Equal(ev.Key, want.Key) || !bytes.Equal(ev.Value, want.Value) {
			t.Fatalf("record %d: Append gave %q/%q, Next %q/%q", i, ev.Key, ev.Value, want.Key, want.Value)
		}
		if got := buf[prefix:]; !bytes.Equal(got, append(append([]byte{}, want.Key...), want.Value...)) {
			t.Fatalf("record %d: Append wrote %q after the existing bytes", i, got)
		}
	}
}

func TestEventTimeAdvancesAtRate(t *testing.T) {
	g := mustNew(t, Config{Seed: 1, Start: t0, Rate: 3})
	for i := range 10 {
		ev := g.Next()
		want := t0.Add(time.Duration(i) * time.Second / 3).Truncate(time.Millisecond)
		if !ev.Time.Equal(want) {
			t.Fatalf("record %d: time %v, want %v", i, ev.Time, want)
		}
	}
	// Computed from the record number, not accumulated: after a million records at 3/s the
	// stream is exactly a million thirds of a second later.
	for range 1_000_000 - 10 {
		g.Next()
	}
	if got, want := g.Next().Time, t0.Add(time.Duration(1_000_000)*time.Second/3).Truncate(time.Millisecond); !got.Equal(want) {
		t.Errorf("record 1,000,000: %v, want %v", got, want)
	}
}

func TestStartDefaultsToNow(t *testing.T) {
	before := time.Now().Add(-time.Millisecond)
	g := mustNew(t, Config{})
	if got := g.Next().Time; got.Before(before) || got.After(time.Now()) {
		t.Errorf("first event time %v is not now", got)
	}
}

func TestZipfSkew(t *testing.T) {
	g := mustNew(t, Config{Seed: 9, Start: t0, Entities: 1000})
	counts := make([]int, 1000)
	const n = 200_000
	for range n {
		ev := g.Next()
		if ev.Device < 0 || ev.Device >= 1000 {
			t.Fatalf("device %d outside 0..999", ev.Device)
		}
		counts[ev.Device]++
	}
	if share := float64(counts[0]) / n; share < 0.10 || share > 0.30 {
		t.Errorf("the busiest device has %.1f%% of the events, want a hot key near 17%%", share*100)
	}
	if counts[0] <= counts[1] || counts[1] <= counts[10] || counts[10] <= counts[500] {
		t.Errorf("popularity is not decreasing with the device number: %d %d %d %d",
			counts[0], counts[1], counts[10], counts[500])
	}
	seen := 0
	for _, c := range counts {
		if c > 0 {
			seen++
		}
	}
	if seen < 900 {
		t.Errorf("only %d of 1000 devices appeared; the tail must still be reached", seen)
	}
}

func TestBadRecords(t *testing.T) {
	g := mustNew(t, Config{Seed: 5, Start: t0, BadFraction: 0.01})
	const n = 100_000
	kinds := map[Defect]int{}
	for i := range n {
		ev := g.Next()
		kinds[ev.Defect]++
		var r reading
		err := json.Unmarshal(ev.Value, &r)
		switch ev.Defect {
		case Good:
			if err != nil {
				t.Fatalf("record %d is good but does not decode: %v", i, err)
			}
		case Unparsable:
			if json.Valid(ev.Value) {
				t.Fatalf("record %d is meant to be unparsable but is valid JSON: %s", i, ev.Value)
			}
		case MissingID:
			if err != nil || r.DeviceID != nil {
				t.Fatalf("record %d should decode without device_id: %v %s", i, err, ev.Value)
			}
		case BadTemperature:
			var raw map[string]any
			if err := json.Unmarshal(ev.Value, &raw); err != nil {
				t.Fatalf("record %d: %v", i, err)
			}
			if _, isNum := raw["temperature"].(float64); isNum {
				t.Fatalf("record %d: temperature is a number: %s", i, ev.Value)
			}
		}
	}
	bad := n - kinds[Good]
	if bad < 800 || bad > 1200 {
		t.Errorf("%d bad records of %d, want about 1%%", bad, n)
	}
	for _, d := range []Defect{Unparsable, MissingID, BadTemperature} {
		if kinds[d] < 200 {
			t.Errorf("only %d records with defect %v", kinds[d], d)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	err := Config{Entities: -1, Skew: 1, Rate: -2, BadFraction: 1.5, Sites: -1}.Validate()
	if err == nil {
		t.Fatal("no error for an invalid config")
	}
	for _, want := range []string{"entities", "skew", "rate", "bad fraction", "sites"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %s", err, want)
		}
	}
	if _, err := New(Config{Skew: 0.5}); err == nil {
		t.Error("New accepted skew 0.5")
	}
	if err := (Config{}).Validate(); err != nil {
		t.Errorf("the zero config must be valid (all defaults): %v", err)
	}
}

func BenchmarkNext(b *testing.B) {
	g := mustNew(b, Config{Seed: 1, Start: t0, BadFraction: 0.001})
	b.ReportAllocs()
	var bytes int64
	for b.Loop() {
		bytes += int64(len(g.Next().Value))
	}
	b.SetBytes(bytes / int64(b.N))
}

func TestAppendFixed(t *testing.T) {
	for _, tc := range []struct {
		v        float64
		decimals int
		want     string
	}{
		{21.534, 2, "21.53"}, {21.5, 2, "21.50"}, {3.705, 2, "3.71"}, {0.04, 2, "0.04"},
		{40.25, 1, "40.3"}, {40, 1, "40.0"}, {-1.234, 2, "-1.23"}, {-0.001, 2, "0.00"},
	} {
		if got := string(appendFixed(nil, tc.v, tc.decimals)); got != tc.want {
			t.Errorf("appendFixed(%v, %d) = %s, want %s", tc.v, tc.decimals, got, tc.want)
		}
	}
}
