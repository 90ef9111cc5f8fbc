package bench

import (
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// svgDoc is what the test reads back from the plot: every polyline and circle, and the texts.
type svgDoc struct {
	XMLName   xml.Name `xml:"svg"`
	Polylines []struct {
		Points string `xml:"points,attr"`
		Stroke string `xml:"stroke,attr"`
		Dash   string `xml:"stroke-dasharray,attr"`
	} `xml:"polyline"`
	Circles []struct {
		CX string `xml:"cx,attr"`
		CY string `xml:"cy,attr"`
	} `xml:"circle"`
	Texts []string `xml:"text"`
}

func parseSVG(t *testing.T, s string) svgDoc {
	t.Helper()
	var d svgDoc
	if err := xml.Unmarshal([]byte(s), &d); err != nil {
		t.Fatalf("the plot is not well-formed XML: %v\n%s", err, s)
	}
	return d
}

// points parses a polyline's "x,y x,y" into pairs.
func points(t *testing.T, s string) [][2]float64 {
	t.Helper()
	var out [][2]float64
	for _, p := range strings.Fields(s) {
		x, y, ok := strings.Cut(p, ",")
		if !ok {
			t.Fatalf("point %q is not x,y", p)
		}
		fx, err1 := strconv.ParseFloat(x, 64)
		fy, err2 := strconv.ParseFloat(y, 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("point %q is not numeric", p)
		}
		out = append(out, [2]float64{fx, fy})
	}
	return out
}

func curvePoint(rate, sink, cass, rows, p50, p99 float64) Latency {
	l := Latency{Rate: rate, AchievedRate: rate, SinkCPUMicrosPerRow: sink, CassandraCPUMicrosPerRow: cass, RowsPerRequest: rows}
	l.FreshP50Millis, l.FreshP99Millis = p50, p99
	return l
}

func TestWriteCurveSVG(t *testing.T) {
	old := CurveSeries{Name: "old & main", Points: []Latency{
		// Measured out of order on purpose: the line must still go left to right.
		curvePoint(15000, 20, 50, 11, 150, 490),
		curvePoint(5000, 40, 100, 8, 100, 300),
		curvePoint(30000, 10, 40, 30, 200, 900),
	}}
	fresh := CurveSeries{Name: "new", Points: []Latency{
		curvePoint(5000, 20, 60, 20, 0, 0), // freshness not measured: left out of those lines
		curvePoint(15000, 10, 45, 25, 0, 0),
	}}
	var b strings.Builder
	if err := WriteCurveSVG(&b, "a <title>", []CurveSeries{old, fresh}); err != nil {
		t.Fatal(err)
	}
	d := parseSVG(t, b.String())

	// Lines are the four axis frames, then per panel per series per figure: sink, Cassandra and rows
	// per request have one figure, freshness two; the new series has no freshness line at all.
	var lines []struct{ points, stroke, dash string }
	for _, p := range d.Polylines {
		if p.Stroke == "black" {
			continue
		}
		lines = append(lines, struct{ points, stroke, dash string }{p.Points, p.Stroke, p.Dash})
	}
	if len(lines) != 3*2+2 {
		t.Fatalf("%d data lines, want 8 (3 panels × 2 series, freshness p50 and p99 of the old)", len(lines))
	}
	for i, ln := range lines {
		pts := points(t, ln.points)
		for j := 1; j < len(pts); j++ {
			if pts[j][0] <= pts[j-1][0] {
				t.Errorf("line %d does not run left to right: %v", i, pts)
			}
		}
	}
	// The first panel's old line: three points, the x axis shared (0 to 50k, niceCeil of 30k), y from
	// 0 at the bottom to 50 (niceCeil of 40) at the top.
	sink := points(t, lines[0].points)
	if len(sink) != 3 {
		t.Fatalf("sink line of the old series has %d points, want 3", len(sink))
	}
	x0, x1 := float64(marginL), float64(panelW-marginR)
	wantX := x0 + (x1-x0)*5000/50000
	if got := sink[0][0]; got < wantX-0.1 || got > wantX+0.1 {
		t.Errorf("5,000 events/s drawn at x %.1f, want %.1f", got, wantX)
	}
	bottom, top := float64(svgTitleBaselineY+panelH-marginB), float64(svgTitleBaselineY+marginT)
	wantY := bottom - (bottom-top)*40/50
	if got := sink[0][1]; got < wantY-0.1 || got > wantY+0.1 {
		t.Errorf("40 µs drawn at y %.1f, want %.1f", got, wantY)
	}
	if lines[0].stroke == lines[1].stroke {
		t.Errorf("both series drawn in %s", lines[0].stroke)
	}
	var dashed int
	for _, ln := range lines {
		if ln.dash != "" {
			dashed++
		}
	}
	if dashed != 1 {
		t.Errorf("%d dashed lines, want 1 (the old series' p50)", dashed)
	}
	if want := 3*3 + 2*3 + 3*2; len(d.Circles) != want {
		t.Errorf("%d points drawn, want %d", len(d.Circles), want)
	}
	joined := strings.Join(d.Texts, "|")
	for _, want := range []string{"a <title>", "old & main", "new", "sink CPU per row (µs)", "50k", "rows per request"} {
		if !strings.Contains(joined, want) {
			t.Errorf("plot texts %q lack %q", joined, want)
		}
	}
}

func TestWriteCurveSVGNothing(t *testing.T) {
	if err := WriteCurveSVG(&strings.Builder{}, "x", nil); err == nil {
		t.Error("a plot of no series was drawn")
	}
	// A series whose every figure is unmeasured still gives a valid, empty plot.
	var b strings.Builder
	if err := WriteCurveSVG(&b, "x", []CurveSeries{{Name: "empty", Points: []Latency{{Rate: 100}}}}); err != nil {
		t.Fatal(err)
	}
	if d := parseSVG(t, b.String()); len(d.Circles) != 0 {
		t.Errorf("%d points drawn for unmeasured figures", len(d.Circles))
	}
}

func TestNiceCeil(t *testing.T) {
	for _, c := range []struct{ in, want float64 }{
		{0, 1}, {0.3, 0.5}, {1, 1}, {1.2, 2}, {4.9, 5}, {7, 10}, {30000, 50000}, {15000, 20000}, {100, 100},
	} {
		if got := niceCeil(c.in); got != c.want {
			t.Errorf("niceCeil(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}

// TestCurveResultWritesSVG: a curve result is written as JSON with its plot beside it, and --plot
// draws two such files as two series.
func TestCurveResultWritesSVG(t *testing.T) {
	dir := t.TempDir()
	r := &Result{Date: time.Date(2026, 12, 2, 1, 0, 0, 0, time.UTC), Params: Params{Curve: []float64{5000, 15000}},
		Curve: []Latency{curvePoint(5000, 20, 60, 20, 90, 300), curvePoint(15000, 10, 45, 25, 120, 400)}}
	r.Curve[0].Events, r.Curve[1].Events = 100000, 300000
	path, err := r.WriteJSON(dir)
	if err != nil {
		t.Fatal(err)
	}
	if base := filepath.Base(path); base != "20261202T010000Z-curve-400000.json" {
		t.Errorf("result named %s", base)
	}
	svg, err := os.ReadFile(svgPath(path))
	if err != nil {
		t.Fatalf("no plot beside the result: %v", err)
	}
	parseSVG(t, string(svg))
	var back Result
	raw, _ := os.ReadFile(path)
	if err := json.Unmarshal(raw, &back); err != nil || len(back.Curve) != 2 {
		t.Fatalf("result read back: %v, %d points", err, len(back.Curve))
	}

	out := filepath.Join(dir, "both.svg")
	if err := PlotCurves(out, []string{path, path}, []string{"old", "new"}); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(out)
	d := parseSVG(t, string(b))
	joined := strings.Join(d.Texts, "|")
	if !strings.Contains(joined, "old") || !strings.Contains(joined, "new") {
		t.Errorf("the legend lacks the names: %q", joined)
	}
	if err := PlotCurves(out, []string{filepath.Join(dir, "none.json")}, nil); err == nil {
		t.Error("a missing file was plotted")
	}
}

// TestCurveOptionsAreChecked: a curve of unusable rates, or one mixed with a phase run alone, is refused
// before anything runs.
func TestCurveOptionsAreChecked(t *testing.T) {
	for _, c := range []struct {
		name string
		o    Options
		want string
	}{
		{"zero rate", Options{Curve: []float64{5000, 0}}, "curve: rate 0"},
		{"with steady-only", Options{Curve: []float64{5000}, SteadyOnly: true, LatencyRate: 5000}, "leave out --steady-only"},
		{"no length", Options{Curve: []float64{5000}, LatencyFor: -time.Second}, "needs a length"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.o.defaults()
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("defaults() = %v, want an error containing %q", err, c.want)
			}
		})
	}
	ok := Options{Curve: []float64{2000, 5000}}
	if err := ok.defaults(); err != nil {
		t.Fatalf("a curve of two rates is refused: %v", err)
	}
}
