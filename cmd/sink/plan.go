package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/bucketsink/sink/bucketer"
	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/sizing"
)

// planUsage is the help of `sink plan` above its flags.
const planUsage = "Usage: sink plan --rate R --row-bytes B [--entities E] [--config FILE [--topic T]] [--json]\n" +
	"\n" +
	"Sizes one Cassandra partition per bucket granularity (1m, 10m, 1h, 1d, week, month) and\n" +
	"judges it: aim for 10-100 MB, never over 100 MB or 100,000 rows, not under 1 MB (decimal MB).\n" +
	"R is the write rate of ONE entity (one partition key without its bucket: one device, one\n" +
	"tenant) in rows per second: 10, 10/s, 600/m, 2/h or 5/d. B is the average row size:\n" +
	"100, 1KB (1000 bytes), 1KiB (1024 bytes).\n" +
	"With --config and --topic it judges that topic's bucket width and event buckets against\n" +
	"its partition_budget. Exit codes: 0 a fitting policy exists (or the topic's fits); 5 none\n" +
	"fits without event buckets (or the topic's policy is over budget); 3 invalid config; 2 usage.\n"

// runPlan tabulates partition sizes per bucket granularity for a write rate and row size,
// recommends a granularity (and event buckets when none fits), and optionally judges a
// configured topic's policy.
func runPlan(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("plan", planUsage, stdout, stderr)
	var (
		rateText  = fs.String("rate", "", "rows per second per entity, e.g. 10, 10/s, 600/m (required)")
		rowText   = fs.String("row-bytes", "", "average bytes per row, e.g. 100, 1KB (required)")
		entities  = fs.Int64("entities", 0, "number of entities, for totals (optional)")
		cfgPath   = fs.String("config", "", "config file whose topic policy to judge")
		topicName = fs.String("topic", "", "topic of --config to judge: a key under topics:, or the Kafka topic of one (default: the only one)")
		asJSON    = fs.Bool("json", false, "print JSON instead of a table")
	)
	if code, ok := fs.parse(args); !ok {
		return code
	}
	usageErr := fs.usageError
	if *rateText == "" || *rowText == "" {
		return usageErr("--rate and --row-bytes are required")
	}
	rate, err := parseRate(*rateText)
	if err != nil {
		return usageErr("--rate: %v", err)
	}
	rowBytes, err := config.ParseBytes(*rowText)
	if err != nil || rowBytes <= 0 {
		if err == nil {
			err = errors.New("must be positive")
		}
		return usageErr("--row-bytes: %v", err)
	}
	if *entities < 0 {
		return usageErr("--entities: %d is negative", *entities)
	}
	if *topicName != "" && *cfgPath == "" {
		return usageErr("--topic needs --config")
	}

	in := sizing.Input{Rate: rate, RowBytes: float64(rowBytes)}
	gd := sizing.Default
	var judged *topicJudgement
	if *cfgPath != "" {
		cfg, code := loadConfig(ctx, *cfgPath, stderr)
		if cfg == nil {
			return code
		}
		name := *topicName
		if name == "" {
			names := cfg.TopicNames()
			if len(names) != 1 {
				return usageErr("--config has %d topics (%s); choose one with --topic", len(names), strings.Join(names, ", "))
			}
			name = names[0]
		}
		if _, ok := cfg.Topics[name]; !ok && len(cfg.EntriesOf(name)) == 0 {
			return usageErr("--topic %q is not in %s; configured: %s", name, *cfgPath, strings.Join(cfg.TopicNames(), ", "))
		}
		// An entry's rate is its entity's (a device, a site): entries of one Kafka topic are judged one by one.
		name, err := cfg.Entry(name)
		if err != nil {
			return usageErr("--topic: %v", err)
		}
		t := cfg.Topics[name]
		gd = sizing.ForBudget(float64(t.PartitionBudget))
		if t.Latest() {
			judged = &topicJudgement{Name: name, Topic: t.Topic, Width: t.Bucket.Width, Latest: true,
				Clustered: len(t.Clustering) > 0, Estimate: in.Latest(gd)}
		} else {
			g, err := granularityOf(t.Bucket.Width)
			if err != nil {
				fmt.Fprintf(stderr, "topics.%s.bucket.width: %v\n", name, err)
				return exitConfig
			}
			judged = &topicJudgement{Name: name, Topic: t.Topic, Width: t.Bucket.Width, Estimate: in.Estimate(g, t.Bucket.EventBuckets, gd)}
			if t.Split.Enabled {
				judged.judgeSplit(in, t.Split, gd)
			}
			judged.Rollups = judgeRollups(t, gd)
		}
	}

	rep := planReport{Input: in, Entities: *entities, Guidance: gd, Table: in.Table(sizing.Candidates, gd),
		Recommendation: recommend(in, gd), Topic: judged}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep.toJSON()); err != nil {
			fmt.Fprintf(stderr, "sink plan: writing JSON: %v\n", err)
			return exitFailure
		}
	} else {
		rep.writeText(stdout)
	}
	switch {
	case judged != nil && judged.Estimate.Verdict == sizing.TooBig && !judged.SplitFits:
		return exitNoFit
	case judged != nil && slices.ContainsFunc(judged.Rollups, func(r rollupJudgement) bool { return r.TooBig }):
		return exitNoFit
	case judged == nil && !rep.Recommendation.Fits:
		return exitNoFit
	}
	return exitOK
}

// recommend is sizing's recommendation among the tabulated widths or, when even the finest of them needs
// more event buckets than a policy accepts, among the narrower widths that divide a minute. Whatever it
// proposes, `sink validate` accepts.
func recommend(in sizing.Input, gd sizing.Guidance) sizing.Recommendation {
	rec := in.Recommend(sizing.Candidates, gd)
	if rec.Fits || len(rec.Options) > 0 {
		return rec
	}
	finest := sizing.Candidates[0]
	var finer []sizing.Granularity
	for _, w := range bucketer.DayWidths() {
		// Widths that tile a minute (30s, 20s, ... 1s) keep bucket starts on whole minutes' seconds,
		// easy to compute in a reader; every one of them is also a width validate accepts.
		if float64(w.Seconds) < finest.Seconds && 60%w.Seconds == 0 {
			finer = append(finer, sizing.Fixed(w.String(), float64(w.Seconds)))
		}
	}
	if r, ok := in.Narrower(finer, gd, finest); ok {
		return r
	}
	if len(finer) > 0 {
		rec.Reason = fmt.Sprintf("even %s buckets would need %d event buckets, more than the %d a policy accepts; reduce the rate per entity (a finer entity id) or the row size",
			finer[0].Name, in.EventBucketsNeeded(finer[0], gd), sizing.MaxEventBuckets)
	}
	return rec
}

// parseRate reads "10", "10/s", "600/m", "2/h" or "5/d" as rows per second.
func parseRate(s string) (float64, error) {
	num, unit, _ := strings.Cut(strings.TrimSpace(s), "/")
	v, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
	// The upper bound keeps every product (rows a month, bytes) finite; no entity writes 10^12 rows/s.
	if err != nil || math.IsNaN(v) || v <= 0 || v > 1e12 {
		return 0, fmt.Errorf("%q is not a positive rate; use rows per second, e.g. 10 or 10/s, or 600/m, 2/h, 5/d", s)
	}
	switch strings.ToLower(strings.TrimSpace(unit)) {
	case "", "s", "sec", "second":
		return v, nil
	case "m", "min", "minute":
		return v / 60, nil
	case "h", "hour":
		return v / 3600, nil
	case "d", "day":
		return v / sizing.Day, nil
	}
	return 0, fmt.Errorf("%q has unknown unit %q; use /s, /m, /h or /d", s, unit)
}

// granularityOf turns a configured bucket width into its span.
func granularityOf(width string) (sizing.Granularity, error) {
	w, err := bucketer.ParseWidth(width)
	if err != nil {
		return sizing.Granularity{}, err
	}
	switch w.Unit {
	case bucketer.Week:
		return sizing.Week, nil
	case bucketer.Month:
		return sizing.Month, nil
	case bucketer.Year:
		return sizing.Year, nil
	}
	return sizing.Fixed(w.String(), float64(w.Seconds)), nil
}

type topicJudgement struct {
	Name, Topic, Width string
	Estimate           sizing.Estimate
	// Latest: a latest-value entry, whose partition is one row per entity (sizing.Input.Latest); with
	// Clustered, one row per entity and clustering value.
	Latest, Clustered bool
	// With split on and a partition over budget at this rate: the event buckets a split of such an
	// entity reaches by the end of its bucket (SplitBuckets), the cap (SplitMax), and whether the
	// cap is enough (SplitFits). A split aims each new partition at half the budget.
	Split                  bool
	SplitBuckets, SplitMax int
	SplitFits              bool
	// Rollups judges the partitions of each rollup table of the entry (judgeRollups).
	Rollups []rollupJudgement
}

// rollupJudgement is the size of one rollup table's partition: one row per window of its bucket,
// whatever the entity's rate.
type rollupJudgement struct {
	Name, Width, Bucket string
	Rows                int64   // windows in the longest bucket
	Bytes               float64 // Rows × rollupRowBytes
	TooBig              bool    // over the budget's bytes or rows
}

// rollupRowBytes estimates a rollup row: 8 bytes per value (a bigint, a double, a timestamp) and
// 48 for the key, the window and the cells' overhead.
func rollupRowBytes(aggregates int) float64 { return float64(48 + 8*(aggregates+1)) }

// judgeRollups sizes each rollup table's partition: the windows of its longest bucket (a fixed
// bucket holds bucket ÷ window of them; a calendar one is counted over the buckets of a leap year).
func judgeRollups(t config.Topic, gd sizing.Guidance) []rollupJudgement {
	var out []rollupJudgement
	for _, rc := range t.Rollups {
		window, err1 := rc.WindowPolicy()
		bucket, err2 := bucketer.New(rc.Spec())
		if err1 != nil || err2 != nil {
			continue // validated before: cannot happen
		}
		from := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
		var rows int64
		if w := bucket.Width(); w.Unit == bucketer.Fixed {
			rows = w.Seconds / window.Width().Seconds
		} else {
			for i := bucket.Index(from); bucket.Start(i).Year() == 2024; i++ {
				rows = max(rows, window.Index(bucket.End(i).Add(-time.Nanosecond))-window.Index(bucket.Start(i))+1)
			}
		}
		j := rollupJudgement{Name: rc.Name, Width: rc.Width, Bucket: rc.Bucket.Width, Rows: rows,
			Bytes: float64(rows) * rollupRowBytes(len(rc.Aggregates))}
		j.TooBig = j.Bytes > gd.Max || float64(rows) > gd.MaxRows
		out = append(out, j)
	}
	return out
}

// judgeSplit works out what the split policy does with an entity writing at in's rate: splits are
// needed when one partition of the topic's width would outgrow the budget (bytes, or the split's
// row cap), and fit when the event buckets that keep each partition at half the budget are within
// max_event_buckets.
func (j *topicJudgement) judgeSplit(in sizing.Input, sp config.Split, gd sizing.Guidance) {
	gd.MaxRows = float64(sp.MaxRows)
	e := in.Estimate(j.Estimate.Granularity, j.Estimate.EventBuckets, gd)
	if e.Verdict != sizing.TooBig {
		return
	}
	half := gd
	half.Max, half.MaxRows = gd.Max/2, gd.MaxRows/2
	j.Split, j.SplitMax = true, sp.MaxEventBuckets
	j.SplitBuckets = in.EventBucketsNeeded(j.Estimate.Granularity, half)
	j.SplitFits = j.SplitBuckets <= sp.MaxEventBuckets
}

type planReport struct {
	Input          sizing.Input
	Entities       int64
	Guidance       sizing.Guidance
	Table          []sizing.Estimate
	Recommendation sizing.Recommendation
	Topic          *topicJudgement
}

// verdictText explains a verdict with the numbers behind it.
func verdictText(e sizing.Estimate, gd sizing.Guidance) string {
	switch e.Verdict {
	case sizing.InTarget:
		return "✓ in target"
	case sizing.Small:
		return fmt.Sprintf("acceptable: under the %s target", sizing.FormatBytes(gd.TargetMin))
	case sizing.TooSmall:
		return fmt.Sprintf("too small: under %s", sizing.FormatBytes(gd.Min))
	}
	var why []string
	if e.WorstBytes > gd.Max {
		why = append(why, "over "+sizing.FormatBytes(gd.Max))
	}
	if e.RowsOver {
		why = append(why, "over "+sizing.FormatCount(gd.MaxRows)+" rows")
	}
	return "too big: " + strings.Join(why, " and ")
}

func policyName(e sizing.Estimate) string {
	if e.EventBuckets > 1 {
		return fmt.Sprintf("%s buckets × %d event buckets", e.Granularity.Name, e.EventBuckets)
	}
	return e.Granularity.Name + " buckets"
}

func (r planReport) writeText(w io.Writer) {
	gd := r.Guidance
	fmt.Fprintf(w, "Partition sizes at %s rows/s per entity and %s per row\n", formatRate(r.Input.Rate), sizing.FormatBytes(r.Input.RowBytes))
	fmt.Fprintf(w, "Guidance: aim for %s-%s per partition, never over %s or %s rows, not under %s\n\n",
		sizing.FormatBytes(gd.TargetMin), sizing.FormatBytes(gd.Max), sizing.FormatBytes(gd.Max), sizing.FormatCount(gd.MaxRows), sizing.FormatBytes(gd.Min))
	t := table{header: []string{"BUCKET", "ROWS/PARTITION", "SIZE/PARTITION", "SIZE", "ROWS", "VERDICT"}, right: []bool{false, true, true, false, false, false}}
	for _, e := range r.Table {
		g := e.Granularity
		if g.WorstSeconds != g.Seconds {
			avgDays := strconv.FormatFloat(g.Seconds/sizing.Day, 'f', 2, 64)
			t.add(fmt.Sprintf("%s (%sd avg)", g.Name, avgDays), sizing.FormatCount(e.Rows), sizing.FormatBytes(e.Bytes),
				sizing.MarkOf(e.Bytes, gd).String(), boolMark(e.Rows > gd.MaxRows), "(judged on the longest month)")
			t.add(fmt.Sprintf("%s (%sd)", g.Name, strconv.FormatFloat(g.WorstSeconds/sizing.Day, 'f', -1, 64)),
				sizing.FormatCount(e.WorstRows), sizing.FormatBytes(e.WorstBytes), e.Mark.String(), boolMark(e.RowsOver), verdictText(e, gd))
			continue
		}
		t.add(g.Name, sizing.FormatCount(e.Rows), sizing.FormatBytes(e.Bytes), e.Mark.String(), boolMark(e.RowsOver), verdictText(e, gd))
	}
	t.write(w)
	fmt.Fprintln(w)

	rec := r.Recommendation
	c := rec.Choice
	if rec.Fits {
		fmt.Fprintf(w, "Recommended: %s: %s rows and %s per partition (%s).\n", policyName(c),
			sizing.FormatCount(c.WorstRows), sizing.FormatBytes(c.WorstBytes), rec.Reason)
	} else if len(rec.Options) == 0 {
		fmt.Fprintf(w, "No policy fits: %s.\n", rec.Reason)
	} else {
		// A choice finer than every tabulated width comes from the narrower widths (recommend).
		narrower := c.Granularity.Seconds < r.Table[0].Granularity.Seconds
		if narrower {
			fmt.Fprintf(w, "No tabulated width fits within %d event buckets. A narrower width does (rows spread by a per-row hash):\n", sizing.MaxEventBuckets)
		} else {
			fmt.Fprintln(w, "No bucket width fits alone. Event buckets needed at each width (rows spread by a per-row hash):")
		}
		opts := table{header: []string{"POLICY", "ROWS/PARTITION", "SIZE/PARTITION"}, right: []bool{false, true, true}}
		for _, o := range rec.Options {
			opts.add(policyName(o), sizing.FormatCount(o.WorstRows), sizing.FormatBytes(o.WorstBytes))
		}
		opts.write(w)
		tail := "; the finest width needs the fewest, and each read of a time bucket fans out to all of them"
		if narrower {
			tail = "; each read of a time bucket fans out to all of them, so consider a finer entity id first"
		}
		fmt.Fprintf(w, "Recommended: %s: %s rows and %s per partition (%s%s).\n",
			policyName(c), sizing.FormatCount(c.WorstRows), sizing.FormatBytes(c.WorstBytes), rec.Reason, tail)
	}
	// With no fitting policy there is none to count partitions for, nor to point a topic to.
	some := rec.Fits || len(rec.Options) > 0
	if r.Entities > 0 && c.Granularity.Seconds > 0 {
		total := r.Input.Rate * float64(r.Entities)
		fmt.Fprintf(w, "%s entities: %s rows/s in total, %s and %s rows a day", sizing.FormatCount(float64(r.Entities)),
			formatRate(total), sizing.FormatBytes(total*r.Input.RowBytes*sizing.Day), sizing.FormatCount(total*sizing.Day))
		if some {
			perDay := float64(r.Entities) * float64(c.EventBuckets) * sizing.Day / c.Granularity.Seconds
			fmt.Fprintf(w, "; %s partitions started a day with %s", sizing.FormatCount(perDay), policyName(c))
		}
		fmt.Fprintln(w, ".")
	}
	if t := r.Topic; t != nil && t.Latest {
		e, per := t.Estimate, "entity"
		if t.Clustered {
			per = "entity and clustering value"
		}
		fmt.Fprintf(w, "\nTopic %s (Kafka %s): latest-value table (bucket width none), budget %s\n", t.Name, t.Topic, sizing.FormatBytes(gd.Max))
		fmt.Fprintf(w, "  per partition: 1 row per %s, %s, whatever the rate (each newer event overwrites it): %s\n",
			per, sizing.FormatBytes(e.WorstBytes), verdictText(e, gd))
	} else if t != nil {
		e := t.Estimate
		fmt.Fprintf(w, "\nTopic %s (Kafka %s): bucket width %s, %d event %s, budget %s\n", t.Name, t.Topic, t.Width,
			e.EventBuckets, plural(e.EventBuckets, "bucket", "buckets"), sizing.FormatBytes(gd.Max))
		fmt.Fprintf(w, "  per partition: %s rows, %s: %s\n", sizing.FormatCount(e.WorstRows), sizing.FormatBytes(e.WorstBytes), verdictText(e, gd))
		switch {
		case t.Split && t.SplitFits:
			fmt.Fprintf(w, "  needs splits: such an entity is split at write time into up to %d event buckets (max_event_buckets %d); its readers read that many partitions per bucket\n",
				t.SplitBuckets, t.SplitMax)
		case t.Split:
			fmt.Fprintf(w, "  over budget even split: such an entity would need %d event buckets, over max_event_buckets %d; raise it, or use %s\n",
				t.SplitBuckets, t.SplitMax, policyName(c))
		case e.Verdict == sizing.TooBig:
			if n := r.Input.EventBucketsNeeded(e.Granularity, gd); n <= sizing.MaxEventBuckets {
				fmt.Fprintf(w, "  over budget: use %s, or %d event buckets at width %s\n", policyName(c), n, t.Width)
			} else if some {
				fmt.Fprintf(w, "  over budget: width %s would need %d event buckets, more than the %d a policy accepts; use %s\n",
					t.Width, n, sizing.MaxEventBuckets, policyName(c))
			} else {
				fmt.Fprintf(w, "  over budget: width %s would need %d event buckets, more than the %d a policy accepts, and no policy fits (see above)\n",
					t.Width, n, sizing.MaxEventBuckets)
			}
		}
		for _, ro := range t.Rollups {
			verdict := "within budget"
			if ro.TooBig {
				verdict = fmt.Sprintf("over budget (%s rows or %s): use a finer bucket for the rollup table", sizing.FormatCount(gd.MaxRows), sizing.FormatBytes(gd.Max))
			}
			fmt.Fprintf(w, "  rollup %s: %s windows in %s partitions: %s rows, about %s per partition at any rate: %s\n",
				ro.Name, ro.Width, ro.Bucket, sizing.FormatCount(float64(ro.Rows)), sizing.FormatBytes(ro.Bytes), verdict)
		}
	}
}

// table aligns columns by rune count (the marks ✓ and ✗ are one column wide but three bytes,
// which text/tabwriter would count right but cannot mix left- and right-aligned columns).
type table struct {
	header []string
	right  []bool
	rows   [][]string
}

func (t *table) add(cells ...string) { t.rows = append(t.rows, cells) }

func (t *table) write(w io.Writer) {
	widths := make([]int, len(t.header))
	for _, row := range append([][]string{t.header}, t.rows...) {
		for i, c := range row {
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	for _, row := range append([][]string{t.header}, t.rows...) {
		var b strings.Builder
		for i, c := range row {
			pad := strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c))
			if i > 0 {
				b.WriteString("  ")
			}
			if t.right[i] {
				b.WriteString(pad + c)
			} else {
				b.WriteString(c + pad)
			}
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
}

func boolMark(over bool) string {
	if over {
		return "✗"
	}
	return ""
}

// formatRate prints a rate without float noise: 10, 0.0167, 1,000.
func formatRate(r float64) string {
	if r >= 100 && r == math.Trunc(r) {
		return sizing.FormatCount(r)
	}
	return strconv.FormatFloat(r, 'g', 4, 64)
}

type estimateJSON struct {
	Bucket       string  `json:"bucket"`
	Seconds      float64 `json:"seconds"`
	WorstSeconds float64 `json:"worst_seconds"`
	EventBuckets int     `json:"event_buckets"`
	Rows         float64 `json:"rows"`
	Bytes        float64 `json:"bytes"`
	WorstRows    float64 `json:"worst_rows"`
	WorstBytes   float64 `json:"worst_bytes"`
	Size         string  `json:"size"`
	SizeMark     string  `json:"size_mark"`
	RowsOver     bool    `json:"rows_over"`
	Verdict      string  `json:"verdict"`
}

func toEstimateJSON(e sizing.Estimate) estimateJSON {
	return estimateJSON{
		Bucket: e.Granularity.Name, Seconds: e.Granularity.Seconds, WorstSeconds: e.Granularity.WorstSeconds,
		EventBuckets: e.EventBuckets, Rows: e.Rows, Bytes: e.Bytes, WorstRows: e.WorstRows, WorstBytes: e.WorstBytes,
		Size: sizing.FormatBytes(e.Bytes), SizeMark: e.Mark.String(), RowsOver: e.RowsOver, Verdict: e.Verdict.String(),
	}
}

// rollupJSON is a rollupJudgement in `sink plan --json`.
type rollupJSON struct {
	Name       string  `json:"name"`
	Width      string  `json:"width"`
	Bucket     string  `json:"bucket"`
	Rows       int64   `json:"rows_per_partition"`
	Bytes      float64 `json:"bytes_per_partition"`
	OverBudget bool    `json:"over_budget"`
}

func (r planReport) toJSON() any {
	type guidance struct {
		MinBytes       float64 `json:"min_bytes"`
		TargetMinBytes float64 `json:"target_min_bytes"`
		MaxBytes       float64 `json:"max_bytes"`
		MaxRows        float64 `json:"max_rows"`
	}
	type recommendation struct {
		Policy   string         `json:"policy"`
		Fits     bool           `json:"fits"`
		Reason   string         `json:"reason"`
		Estimate estimateJSON   `json:"estimate"`
		Options  []estimateJSON `json:"options,omitempty"`
	}
	type topic struct {
		Name       string       `json:"name"`
		KafkaTopic string       `json:"kafka_topic"`
		Width      string       `json:"width"`
		Latest     bool         `json:"latest,omitempty"` // one row per entity: estimate is that row
		Estimate   estimateJSON `json:"estimate"`
		OverBudget bool         `json:"over_budget"`
		// Present when split is on and the rate needs splits.
		SplitEventBuckets int          `json:"split_event_buckets,omitempty"`
		SplitFits         *bool        `json:"split_fits,omitempty"`
		Rollups           []rollupJSON `json:"rollups,omitempty"`
	}
	out := struct {
		RatePerEntity  float64        `json:"rate_per_entity"`
		RowBytes       float64        `json:"row_bytes"`
		Entities       int64          `json:"entities,omitempty"`
		Guidance       guidance       `json:"guidance"`
		Candidates     []estimateJSON `json:"candidates"`
		Recommendation recommendation `json:"recommendation"`
		Topic          *topic         `json:"topic,omitempty"`
	}{
		RatePerEntity: r.Input.Rate, RowBytes: r.Input.RowBytes, Entities: r.Entities,
		Guidance: guidance{r.Guidance.Min, r.Guidance.TargetMin, r.Guidance.Max, r.Guidance.MaxRows},
	}
	for _, e := range r.Table {
		out.Candidates = append(out.Candidates, toEstimateJSON(e))
	}
	rec := r.Recommendation
	out.Recommendation = recommendation{Policy: policyName(rec.Choice), Fits: rec.Fits, Reason: rec.Reason, Estimate: toEstimateJSON(rec.Choice)}
	for _, o := range rec.Options {
		out.Recommendation.Options = append(out.Recommendation.Options, toEstimateJSON(o))
	}
	if t := r.Topic; t != nil {
		out.Topic = &topic{Name: t.Name, KafkaTopic: t.Topic, Width: t.Width, Latest: t.Latest, Estimate: toEstimateJSON(t.Estimate),
			OverBudget: t.Estimate.Verdict == sizing.TooBig && !t.SplitFits}
		if t.Split {
			out.Topic.SplitEventBuckets, out.Topic.SplitFits = t.SplitBuckets, &t.SplitFits
		}
		for _, ro := range t.Rollups {
			out.Topic.Rollups = append(out.Topic.Rollups, rollupJSON{ro.Name, ro.Width, ro.Bucket, ro.Rows, ro.Bytes, ro.TooBig})
		}
	}
	return out
}
