package bench

import (
	"fmt"
	"math"
	"time"

	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/mapper"
)

// The machine's speed, recorded beside the results.
//
// The targets are absolute rates, and the same code measured 458,716 to 549,450 pipeline events
// per CPU-second on one day and 247,525 to 395,257 on the next, on a machine of the same kind whose
// cores turned out to be half as fast. So every result records how fast one core of its machine
// maps a backlog record (Machine.MapNanos): comparing two result files then starts by comparing
// their machines. It is recorded, never used: every rate and every target is judged as measured.

// calibrationRound is how long one timed round maps records; the fastest of calibrationRounds
// counts, since other work on the machine only ever slows a round down.
const (
	calibrationRound  = 200 * time.Millisecond
	calibrationRounds = 5
	calibrationSample = 1000
)

// calibrate maps the first records of the backlog with the sink's mapper, on one goroutine, and
// returns the nanoseconds per record of the fastest round.
func calibrate(cfg *config.Config, topic string, records []record) (float64, error) {
	m, err := newMapper(cfg)
	if err != nil {
		return 0, fmt.Errorf("compiling the mapper for the calibration: %w", err)
	}
	sample := make([]mapper.Record, min(len(records), calibrationSample))
	for i := range sample {
		sample[i] = records[i].mapperRecord(topic)
	}
	if len(sample) == 0 {
		return 0, fmt.Errorf("calibration: no records")
	}
	best := math.Inf(1)
	for range calibrationRounds {
		n := 0
		start := time.Now()
		for time.Since(start) < calibrationRound {
			for _, r := range sample {
				if _, err := m.Map(r); err != nil {
					return 0, fmt.Errorf("calibration: mapping a backlog record: %w", err)
				}
			}
			n += len(sample)
		}
		best = min(best, float64(time.Since(start).Nanoseconds())/float64(n))
	}
	return best, nil
}
