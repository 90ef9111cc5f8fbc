package bucketer

import (
	"testing"
	"time"
)

// Sinks keep the compiler from discarding the work being measured.
var (
	sinkInt   int64
	sinkTime  time.Time
	sinkStr   string
	sinkBytes []byte
	sinkAny   any
	sinkEB    int
)

var benchTime = time.Date(2024, 1, 15, 9, 7, 12, 123456789, time.FixedZone("IST", 5*3600+1800))

// BenchmarkKeyInt is the per-event work for an integer key: bucket of the event time, then the
// bound integer.
func BenchmarkKeyInt(b *testing.B) {
	for _, spec := range []Spec{
		{Width: "1h", Key: "int"}, {Width: "10m", Key: "int"}, {Width: "1d", Key: "int"},
		{Width: "1h", Key: "number"}, {Width: "1h", Key: "number", Rolling: 24},
		{Width: "week", Key: "int"}, {Width: "month", Key: "int"},
	} {
		p := mustPolicy(b, spec)
		b.Run(spec.Width+"/"+spec.Key, func(b *testing.B) {
			b.ReportAllocs()
			t := benchTime
			for b.Loop() {
				sinkInt = p.IntValue(p.Index(t))
				t = t.Add(time.Second)
			}
		})
	}
}

// BenchmarkKeyTimestamp is the per-event work for timestamp and date keys.
func BenchmarkKeyTimestamp(b *testing.B) {
	for _, spec := range []Spec{{Width: "1h", Key: "timestamp"}, {Width: "1d", Key: "date"}, {Width: "month", Key: "timestamp"}} {
		p := mustPolicy(b, spec)
		b.Run(spec.Width+"/"+spec.Key, func(b *testing.B) {
			b.ReportAllocs()
			t := benchTime
			for b.Loop() {
				sinkTime = p.Start(p.Index(t))
				t = t.Add(time.Second)
			}
		})
	}
}

// BenchmarkKeyText: Text allocates only its string; AppendText into a reused buffer allocates nothing.
func BenchmarkKeyText(b *testing.B) {
	for _, spec := range []Spec{{Width: "1h"}, {Width: "week"}, {Width: "10m", Layout: "2006-01-02T15:04"}} {
		p := mustPolicy(b, spec)
		b.Run(spec.Width+"/Text", func(b *testing.B) {
			b.ReportAllocs()
			t := benchTime
			for b.Loop() {
				sinkStr = p.Text(p.Index(t))
				t = t.Add(time.Second)
			}
		})
		b.Run(spec.Width+"/AppendText", func(b *testing.B) {
			b.ReportAllocs()
			t := benchTime
			buf := make([]byte, 0, 32)
			for b.Loop() {
				buf = p.AppendText(buf[:0], p.Index(t))
				t = t.Add(time.Second)
			}
			sinkBytes = buf
		})
	}
}

// BenchmarkValue measures the boxed bucket value a policy returns; boxing an int64 or a
// time.Time into an interface allocates (Go keeps only values 0-255 preallocated).
func BenchmarkValue(b *testing.B) {
	for _, spec := range []Spec{{Width: "1h", Key: "int"}, {Width: "1h", Key: "timestamp"}, {Width: "1h"}} {
		p := mustPolicy(b, spec)
		b.Run(spec.Width+"/"+p.KeyType().String(), func(b *testing.B) {
			b.ReportAllocs()
			t := benchTime
			for b.Loop() {
				sinkAny = p.Value(p.Index(t))
				t = t.Add(time.Second)
			}
		})
	}
}

func BenchmarkEventBucket(b *testing.B) {
	id := []byte("sensor-000042")
	b.Run("bytes", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sinkEB = EventBucket(id, 8)
		}
	})
	b.Run("composite", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			h := NewIDHash()
			h.PartString("site-7")
			h.Part(id)
			sinkEB = h.Bucket(8)
		}
	})
}

func BenchmarkSlice(b *testing.B) {
	p := mustPolicy(b, Spec{Width: "1h", Slice: "1d"})
	b.Run("SliceIndex", func(b *testing.B) {
		b.ReportAllocs()
		t := benchTime
		for b.Loop() {
			sinkInt = p.SliceIndex(t)
			t = t.Add(time.Second)
		}
	})
	b.Run("SliceSuffix", func(b *testing.B) {
		b.ReportAllocs()
		t := benchTime
		for b.Loop() {
			sinkStr = p.SliceSuffix(t)
			t = t.Add(time.Second)
		}
	})
}

func BenchmarkEnumerate(b *testing.B) {
	p := mustPolicy(b, Spec{Width: "1h", Slice: "1d", EventBuckets: 4})
	// Newest first over a week on whole hours: (from, to] holds the instant to itself, so the
	// bucket starting at to is the 169th.
	from := p.Start(p.Index(benchTime))
	to := from.Add(7 * 24 * time.Hour)
	b.ReportAllocs()
	for b.Loop() {
		parts, err := p.Enumerate(to, from, 10000)
		if err != nil || len(parts) != 169*4 {
			b.Fatalf("Enumerate = %d, %v", len(parts), err)
		}
	}
}

// TestAllocs enforces the allocation budget in ordinary test runs, not only when someone reads
// benchmark output.
func TestAllocs(t *testing.T) {
	intP := mustPolicy(t, Spec{Width: "1h", Key: "int"})
	tsP := mustPolicy(t, Spec{Width: "1h", Key: "timestamp"})
	textP := mustPolicy(t, Spec{Width: "1h"})
	sliced := mustPolicy(t, Spec{Width: "1h", Slice: "1d"})
	buf := make([]byte, 0, 64)
	id := []byte("sensor-42")
	checks := []struct {
		name string
		max  float64
		fn   func()
	}{
		{"Index+IntValue", 0, func() { sinkInt = intP.IntValue(intP.Index(benchTime)) }},
		{"Index+Start", 0, func() { sinkTime = tsP.Start(tsP.Index(benchTime)) }},
		{"AppendText", 0, func() { buf = textP.AppendText(buf[:0], textP.Index(benchTime)) }},
		{"Text", 1, func() { sinkStr = textP.Text(textP.Index(benchTime)) }},
		{"EventBucket", 0, func() { sinkEB = EventBucket(id, 4) }},
		{"SliceIndex", 0, func() { sinkInt = sliced.SliceIndex(benchTime) }},
		{"AppendSliceSuffix", 0, func() { buf = sliced.AppendSliceSuffix(buf[:0], sliced.SliceIndex(benchTime)) }},
		{"SliceSuffix", 1, func() { sinkStr = sliced.SliceSuffix(benchTime) }},
	}
	for _, c := range checks {
		if got := testing.AllocsPerRun(100, c.fn); got > c.max {
			t.Errorf("%s: %v allocs per run, want at most %v", c.name, got, c.max)
		}
	}
}
