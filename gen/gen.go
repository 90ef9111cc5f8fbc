// Package gen generates sample sensor events for demos, the compose stack and benchmarks.
//
// The generator is pure: it appends JSON records into a reused buffer and never touches the network,
// so the same seed always yields the same sequence of records, event times included. Producing the
// records to Kafka lives in produce.go, apart from the generation. A Generator is not safe for
// concurrent use; give each goroutine its own (with its own seed).
package gen

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"time"
)

// Defaults of Config.
const (
	DefaultEntities = 10_000
	DefaultSkew     = 1.1
	DefaultRate     = 100.0
	DefaultSites    = 8
)

// Config describes the event stream. The zero value of a field means its default.
type Config struct {
	// Entities is how many distinct devices exist; device ids are dev-00000 .. dev-<Entities-1>.
	Entities int
	// Skew is the Zipf exponent s (> 1) of device popularity: with s = 1.1 over 10,000 devices the
	// busiest device sends about 15% of all events and the top 25 devices half of them,
	// the shape that exposes hot partitions. dev-00000 is the busiest, then dev-00001, and so on.
	Skew float64
	// Seed makes the sequence reproducible.
	Seed uint64
	// Start is the event time of the first record. The zero value means time.Now() at New.
	Start time.Time
	// Rate is how many events happen per second of event time: record i has the event time
	// Start + i/Rate seconds. Default 100.
	Rate float64
	// BadFraction in [0, 1] is the share of records made deliberately bad for dead-letter demos:
	// unparsable JSON, a missing device_id, or a temperature that is not a number, in equal parts.
	BadFraction float64
	// Sites is how many sites (plant-0 ..) the devices are spread over. Default 8.
	Sites int
}

// Validate reports every problem of c at once.
func (c Config) Validate() error {
	var errs []error
	if c.Entities < 0 {
		errs = append(errs, fmt.Errorf("entities: %d is negative; use at least 1 (default %d)", c.Entities, DefaultEntities))
	}
	if c.Skew != 0 && !(c.Skew > 1) {
		errs = append(errs, fmt.Errorf("skew: %g must be greater than 1 (Zipf exponent; default %g)", c.Skew, DefaultSkew))
	}
	if c.Rate < 0 || math.IsNaN(c.Rate) || math.IsInf(c.Rate, 0) {
		errs = append(errs, fmt.Errorf("rate: %g must be a positive number of events per second", c.Rate))
	}
	if !(c.BadFraction >= 0 && c.BadFraction <= 1) {
		errs = append(errs, fmt.Errorf("bad fraction: %g must be within [0, 1]", c.BadFraction))
	}
	if c.Sites < 0 {
		errs = append(errs, fmt.Errorf("sites: %d is negative", c.Sites))
	}
	return errors.Join(errs...)
}

// Defect says how a record was made bad on purpose.
type Defect uint8

const (
	Good           Defect = iota
	Unparsable            // the JSON is cut off mid-record
	MissingID             // the device_id field is absent
	BadTemperature        // temperature is a string, not a number
	numDefects
)

func (d Defect) String() string {
	switch d {
	case Good:
		return "good"
	case Unparsable:
		return "unparsable"
	case MissingID:
		return "missing_device_id"
	case BadTemperature:
		return "bad_temperature"
	}
	return "defect(" + strconv.Itoa(int(d)) + ")"
}

// Event is one generated record. Key and Value alias the generator's buffer: they are valid until
// the next call to Next; copy them to keep them.
type Event struct {
	Key    []byte // the device id, the Kafka record key
	Value  []byte // the JSON record
	Time   time.Time
	Device int
	Defect Defect
	// The readings as the JSON record writes them (temperature and battery rounded to 2 decimals,
	// humidity to 1), and the site number (site.id is "plant-<Site>"), for the other formats' encoders.
	Temperature, Humidity, Battery float64
	Site                           int
}

// Generator produces a deterministic stream of events.
type Generator struct {
	cfg    Config
	rng    *rand.Rand
	zipf   *rand.Zipf
	digits int
	start  time.Time
	n      int64 // records generated so far
	buf    []byte

	tsSecond int64  // the Unix second tsPrefix formats
	tsPrefix []byte // "2024-01-15T14:37:22."
}

// New validates cfg, applies its defaults and returns a generator positioned at the first record.
func New(cfg Config) (*Generator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("configuring the event generator: %w", err)
	}
	if cfg.Entities == 0 {
		cfg.Entities = DefaultEntities
	}
	if cfg.Skew == 0 {
		cfg.Skew = DefaultSkew
	}
	if cfg.Rate == 0 {
		cfg.Rate = DefaultRate
	}
	if cfg.Sites == 0 {
		cfg.Sites = DefaultSites
	}
	if cfg.Start.IsZero() {
		cfg.Start = time.Now()
	}
	// Millisecond precision is what the records carry; truncating here keeps Event.Time equal to
	// the time written in the JSON.
	cfg.Start = cfg.Start.UTC().Truncate(time.Millisecond)
	rng := rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15))
	return &Generator{
		cfg:    cfg,
		rng:    rng,
		zipf:   rand.NewZipf(rng, cfg.Skew, 1, uint64(cfg.Entities-1)),
		digits: max(5, len(strconv.Itoa(cfg.Entities-1))),
		start:  cfg.Start,
		buf:    make([]byte, 0, 256),
	}, nil
}

// Next generates the next record into the generator's reused buffer.
func (g *Generator) Next() Event {
	var ev Event
	g.buf, ev = g.Append(g.buf[:0])
	return ev
}

// Append generates the next record, appending its key and then its value to dst, and returns the
// extended buffer. Event.Key and Event.Value are subslices of it.
func (g *Generator) Append(dst []byte) ([]byte, Event) {
	device := int(g.zipf.Uint64())
	// The event time is computed from the record number rather than accumulated, so a rate that
	// is not a whole number of nanoseconds per event does not drift.
	t := g.start.Add(time.Duration(float64(g.n) * float64(time.Second) / g.cfg.Rate)).Truncate(time.Millisecond)
	g.n++

	defect := Good
	if g.cfg.BadFraction > 0 && g.rng.Float64() < g.cfg.BadFraction {
		defect = Defect(1 + g.rng.IntN(int(numDefects)-1))
	}

	// The readings vary around a base that depends on the device only, so a device's series looks
	// like one sensor rather than noise.
	base := float64(device%17) * 0.7
	temperature := 15 + base + g.rng.NormFloat64()*0.8
	humidity := 35 + float64(device%23) + g.rng.Float64()*5
	battery := 3.3 + g.rng.Float64()*0.9

	start := len(dst)
	dst = g.appendID(dst, device)
	keyEnd, valStart := len(dst), len(dst)

	dst = append(dst, '{')
	if defect != MissingID {
		dst = append(dst, `"device_id":"`...)
		dst = g.appendID(dst, device)
		dst = append(dst, `",`...)
	}
	dst = append(dst, `"ts":"`...)
	dst = g.appendTime(dst, t)
	dst = append(dst, `","temperature":`...)
	if defect == BadTemperature {
		dst = append(dst, `"n/a"`...)
	} else {
		dst = appendFixed(dst, temperature, 2)
	}
	dst = append(dst, `,"humidity":`...)
	dst = appendFixed(dst, humidity, 1)
	dst = append(dst, `,"battery":`...)
	dst = appendFixed(dst, battery, 2)
	dst = append(dst, `,"site":{"id":"plant-`...)
	dst = strconv.AppendInt(dst, int64(device%g.cfg.Sites), 10)
	dst = append(dst, `"}}`...)
	if defect == Unparsable {
		// Cut the record in the middle of a value: no JSON decoder accepts it.
		dst = dst[:valStart+(len(dst)-valStart)/2]
	}

	return dst, Event{
		Key:         dst[start:keyEnd:keyEnd],
		Value:       dst[valStart:],
		Time:        t,
		Device:      device,
		Defect:      defect,
		Temperature: rounded(temperature, 2),
		Humidity:    rounded(humidity, 1),
		Battery:     rounded(battery, 2),
		Site:        device % g.cfg.Sites,
	}
}

// appendID appends "dev-" and the zero-padded device number.
func (g *Generator) appendID(dst []byte, device int) []byte {
	dst = append(dst, "dev-"...)
	var num [20]byte
	digits := strconv.AppendInt(num[:0], int64(device), 10)
	for range g.digits - len(digits) {
		dst = append(dst, '0')
	}
	return append(dst, digits...)
}

// DeviceID returns the id of device number i as it appears in this generator's records.
func (g *Generator) DeviceID(i int) string { return string(g.appendID(nil, i)) }

// appendTime appends t as RFC 3339 UTC with milliseconds. Consecutive events mostly share their
// second, so the text up to the seconds is formatted once per second and reused.
func (g *Generator) appendTime(dst []byte, t time.Time) []byte {
	if sec := t.Unix(); sec != g.tsSecond || g.tsPrefix == nil {
		g.tsSecond = sec
		g.tsPrefix = t.Truncate(time.Second).AppendFormat(g.tsPrefix[:0], "2006-01-02T15:04:05.")
	}
	dst = append(dst, g.tsPrefix...)
	ms := t.Nanosecond() / int(time.Millisecond)
	return append(dst, byte('0'+ms/100), byte('0'+ms/10%10), byte('0'+ms%10), 'Z')
}

// rounded is v rounded as appendFixed writes it: the float64 nearest that decimal, which is what
// parsing the JSON text gives.
func rounded(v float64, decimals int) float64 {
	scale := 10.0
	if decimals == 2 {
		scale = 100
	}
	return math.Round(v*scale) / scale
}

// appendFixed appends v rounded to the given number of decimals (1 or 2), always with that
// many digits after the point: integer arithmetic, much cheaper than formatting a float.
func appendFixed(dst []byte, v float64, decimals int) []byte {
	scale := int64(10)
	if decimals == 2 {
		scale = 100
	}
	n := int64(math.Round(v * float64(scale)))
	if n < 0 {
		dst = append(dst, '-')
		n = -n
	}
	dst = strconv.AppendInt(dst, n/scale, 10)
	dst = append(dst, '.')
	frac := n % scale
	if decimals == 2 && frac < 10 {
		dst = append(dst, '0')
	}
	return strconv.AppendInt(dst, frac, 10)
}
