package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// The curve is the steady phase at several rates, one after another (Options.Curve): what a row costs
// the sink and Cassandra, how many rows a request carries and how fresh rows are, as the rate goes from
// a trickle to what the machine cannot carry (a rate past the backlog speed is a backlog: the achieved
// rate says so). Each point runs on a topic, table and group of its own, dropped once it is measured.

// curve runs the steady phase at each rate of Options.Curve into Result.Curve.
func (h *harness) curve(ctx context.Context) error {
	for i, rate := range h.o.Curve {
		if err := h.settle(ctx, fmt.Sprintf("curve %s events/s", num(rate))); err != nil {
			return err
		}
		h.live = fmt.Sprintf("_live%d", i)
		h.res.Latency = Latency{}
		if err := h.latency(ctx, rate); err != nil {
			return fmt.Errorf("curve at %s events/s: %w", num(rate), err)
		}
		h.res.Curve = append(h.res.Curve, h.res.Latency)
		h.drop(ctx, h.o.Prefix+h.live)
	}
	h.res.Latency = Latency{}
	return nil
}

// CurveSeries is one build's curve, as the plot draws it.
type CurveSeries struct {
	Name   string
	Points []Latency
}

// curvePanel is one of the plot's charts: a figure of each point against the rate.
type curvePanel struct {
	title string
	lines []curveLine
}

// curveLine is one figure of a panel (freshness has two: p50 and p99).
type curveLine struct {
	label  string
	value  func(Latency) float64
	dashed bool
}

var curvePanels = []curvePanel{
	{"sink CPU per row (µs)", []curveLine{{"", func(l Latency) float64 { return l.SinkCPUMicrosPerRow }, false}}},
	{"Cassandra CPU per row (µs)", []curveLine{{"", func(l Latency) float64 { return l.CassandraCPUMicrosPerRow }, false}}},
	{"rows per request", []curveLine{{"", func(l Latency) float64 { return l.RowsPerRequest }, false}}},
	{"produce → readable (ms)", []curveLine{
		{"p50", func(l Latency) float64 { return l.FreshP50Millis }, true},
		{"p99", func(l Latency) float64 { return l.FreshP99Millis }, false},
	}},
}

// seriesColors are the lines' colours, one per series, in order.
var seriesColors = []string{"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e"}

// Plot geometry: four panels side by side in two rows.
const (
	panelW, panelH    = 360, 240
	marginL, marginR  = 56, 16
	marginT, marginB  = 28, 40
	plotCols          = 2
	legendH           = 28
	ticksY, ticksX    = 4, 4
	svgFont           = "font-family=\"sans-serif\" font-size=\"11\""
	pointRadius       = 2.5
	svgTitleBaselineY = 18
)

// WriteCurveSVG draws the series as an SVG of four line plots against the produced rate (events/s):
// the sink's CPU per row, Cassandra's, rows per request, and freshness p50 (dashed) and p99. A figure
// that is 0 (not measured, as freshness with --no-probes) is left out of its line.
func WriteCurveSVG(w io.Writer, title string, series []CurveSeries) error {
	if len(series) == 0 {
		return errors.New("drawing the curve: no series")
	}
	rows := (len(curvePanels) + plotCols - 1) / plotCols
	width, height := plotCols*panelW, rows*panelH+legendH+svgTitleBaselineY
	var b strings.Builder
	fmt.Fprintf(&b, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\">\n", width, height, width, height)
	fmt.Fprintf(&b, "<rect width=\"%d\" height=\"%d\" fill=\"white\"/>\n", width, height)
	fmt.Fprintf(&b, "<text x=\"%d\" y=\"%d\" %s font-weight=\"bold\">%s</text>\n", marginL, svgTitleBaselineY, svgFont, html.EscapeString(title))
	// The rate axis is shared by every panel.
	xmax := 0.0
	for _, s := range series {
		for _, p := range s.Points {
			xmax = max(xmax, rateOf(p))
		}
	}
	xmax = niceCeil(xmax)
	for i, pn := range curvePanels {
		ox, oy := (i%plotCols)*panelW, svgTitleBaselineY+(i/plotCols)*panelH
		ymax := 0.0
		for _, s := range series {
			for _, p := range s.Points {
				for _, ln := range pn.lines {
					if v := ln.value(p); isDrawn(v) {
						ymax = max(ymax, v)
					}
				}
			}
		}
		ymax = niceCeil(ymax)
		drawAxes(&b, ox, oy, pn.title, xmax, ymax)
		for si, s := range series {
			color := seriesColors[si%len(seriesColors)]
			for _, ln := range pn.lines {
				drawLine(&b, ox, oy, s.Points, ln, xmax, ymax, color)
			}
		}
	}
	// The legend: one swatch per series, then what a dashed line means.
	ly := height - legendH/2
	x := marginL
	for si, s := range series {
		color := seriesColors[si%len(seriesColors)]
		fmt.Fprintf(&b, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"%s\" stroke-width=\"2\"/>\n", x, ly, x+20, ly, color)
		fmt.Fprintf(&b, "<text x=\"%d\" y=\"%d\" %s>%s</text>\n", x+24, ly+4, svgFont, html.EscapeString(s.Name))
		x += 40 + 7*len([]rune(s.Name))
	}
	fmt.Fprintf(&b, "<text x=\"%d\" y=\"%d\" %s>x: events/s produced; dashed: p50</text>\n", x, ly+4, svgFont)
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// rateOf is a point's x: the rate the producer achieved (the rate asked when that is unknown).
func rateOf(l Latency) float64 {
	if l.AchievedRate > 0 {
		return l.AchievedRate
	}
	return l.Rate
}

// isDrawn says whether a figure is plotted: measured (0 means not), and finite.
func isDrawn(v float64) bool { return v > 0 && !math.IsInf(v, 0) && !math.IsNaN(v) }

// niceCeil rounds v up to 1, 2 or 5 times a power of ten, so the ticks are round; 1 for nothing.
func niceCeil(v float64) float64 {
	if !(v > 0) || math.IsInf(v, 0) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*p*(1+1e-9) {
			return m * p
		}
	}
	return 10 * p
}

// plotX and plotY map a value to the panel at (ox, oy).
func plotX(ox int, v, xmax float64) float64 {
	return float64(ox+marginL) + v/xmax*float64(panelW-marginL-marginR)
}

func plotY(oy int, v, ymax float64) float64 {
	return float64(oy+panelH-marginB) - v/ymax*float64(panelH-marginT-marginB)
}

// drawAxes draws a panel's frame, title, ticks and grid.
func drawAxes(b *strings.Builder, ox, oy int, title string, xmax, ymax float64) {
	x0, x1 := float64(ox+marginL), float64(ox+panelW-marginR)
	y0, y1 := float64(oy+panelH-marginB), float64(oy+marginT)
	fmt.Fprintf(b, "<text x=\"%.1f\" y=\"%.1f\" %s>%s</text>\n", x0, y1-8, svgFont, html.EscapeString(title))
	for i := 0; i <= ticksY; i++ {
		v := ymax * float64(i) / ticksY
		y := plotY(oy, v, ymax)
		fmt.Fprintf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", x0, y, x1, y)
		fmt.Fprintf(b, "<text x=\"%.1f\" y=\"%.1f\" %s text-anchor=\"end\">%s</text>\n", x0-4, y+4, svgFont, tickLabel(v))
	}
	for i := 0; i <= ticksX; i++ {
		v := xmax * float64(i) / ticksX
		x := plotX(ox, v, xmax)
		fmt.Fprintf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#999\"/>\n", x, y0, x, y0+4)
		fmt.Fprintf(b, "<text x=\"%.1f\" y=\"%.1f\" %s text-anchor=\"middle\">%s</text>\n", x, y0+16, svgFont, tickLabel(v))
	}
	fmt.Fprintf(b, "<polyline points=\"%.1f,%.1f %.1f,%.1f %.1f,%.1f\" fill=\"none\" stroke=\"black\"/>\n", x0, y1, x0, y0, x1, y0)
}

// drawLine draws one figure of one series: a polyline through its measured points in rate order, and
// a dot on each.
func drawLine(b *strings.Builder, ox, oy int, points []Latency, ln curveLine, xmax, ymax float64, color string) {
	type xy struct{ x, y float64 }
	var pts []xy
	for _, p := range points {
		if v := ln.value(p); isDrawn(v) && rateOf(p) > 0 {
			pts = append(pts, xy{plotX(ox, rateOf(p), xmax), plotY(oy, v, ymax)})
		}
	}
	if len(pts) == 0 {
		return
	}
	// Points were measured in the order asked; the line goes left to right.
	for i := 1; i < len(pts); i++ {
		for j := i; j > 0 && pts[j].x < pts[j-1].x; j-- {
			pts[j], pts[j-1] = pts[j-1], pts[j]
		}
	}
	var coords []string
	for _, p := range pts {
		coords = append(coords, fmt.Sprintf("%.1f,%.1f", p.x, p.y))
	}
	dash := ""
	if ln.dashed {
		dash = " stroke-dasharray=\"4 3\""
	}
	fmt.Fprintf(b, "<polyline points=\"%s\" fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\"%s/>\n", strings.Join(coords, " "), color, dash)
	for _, p := range pts {
		fmt.Fprintf(b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%.1f\" fill=\"%s\"/>\n", p.x, p.y, pointRadius, color)
	}
}

// tickLabel prints a tick value briefly: 15k for 15,000, 2.5 for 2.5.
func tickLabel(v float64) string {
	switch {
	case v >= 1000 && math.Mod(v, 1000) == 0:
		return strconv.FormatFloat(v/1000, 'f', -1, 64) + "k"
	case v >= 1000:
		return strconv.FormatFloat(v/1000, 'f', 1, 64) + "k"
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

// svgPath is where the plot of the result at jsonPath goes: beside it, .svg for .json.
func svgPath(jsonPath string) string {
	return strings.TrimSuffix(jsonPath, filepath.Ext(jsonPath)) + ".svg"
}

// PlotCurves draws the curves of the result files (each written by a --curve run) into one SVG at out,
// a series per file named by names (the file's name without its extension when names is short).
func PlotCurves(out string, files, names []string) error {
	var series []CurveSeries
	for i, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return fmt.Errorf("reading curve result: %w", err)
		}
		var r Result
		if err := json.Unmarshal(raw, &r); err != nil {
			return fmt.Errorf("decoding curve result %s: %w", f, err)
		}
		if len(r.Curve) == 0 {
			return fmt.Errorf("curve result %s has no curve (written by a run without --curve)", f)
		}
		name := strings.TrimSuffix(filepath.Base(f), filepath.Ext(f))
		if i < len(names) && names[i] != "" {
			name = names[i]
		}
		series = append(series, CurveSeries{Name: name, Points: r.Curve})
	}
	return writeSVGFile(out, "steady rates: cost per row, rows per request, freshness", series)
}

// writeSVGFile writes WriteCurveSVG's plot to path.
func writeSVGFile(path, title string, series []CurveSeries) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("writing the curve's plot: %w", err)
	}
	if err := WriteCurveSVG(f, title, series); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
