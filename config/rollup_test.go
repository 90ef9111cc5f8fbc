package config

import (
	"fmt"
	"strings"
	"testing"
)

// A record's parts (a row per entry, a pending marker per rollup of raw rows) are counted in one byte
// of the offset tracker: entries whose rollups would pass that are refused once, naming the count;
// rollups made from a finer one add no marker of their own and are not counted.
func TestRollupPartsOfARecordAreBounded(t *testing.T) {
	withEntries := func(entries int, from bool) *Config {
		return validConfig(t, func(c *Config) {
			base := c.Topics["readings"]
			for e := range entries {
				tc := base
				tc.Table = fmt.Sprintf("raw_%d", e)
				tc.Rollups = nil
				for r := range MaxRollups {
					ro := Rollup{Name: fmt.Sprintf("r%d", r), Width: "1h", Table: fmt.Sprintf("raw_%d_r%d", e, r),
						Bucket: Bucket{Width: "month", Column: "bucket", Key: "text"}, WindowColumn: DefaultWindowColumn,
						Aggregates: []Aggregate{{Column: "n", Fn: AggCount}}}
					if from && r > 0 {
						ro.Width, ro.Bucket.Width, ro.From = "1d", "year", "r0"
					}
					tc.Rollups = append(tc.Rollups, ro)
				}
				c.Topics[fmt.Sprintf("e%02d", e)] = tc
			}
		})
	}
	// 29 entries with 8 rollups each and the base entry: 30 + 232 = 262 parts.
	problems := Problems(withEntries(29, false).Validate())
	if len(problems) != 1 || !strings.Contains(problems[0], "make 262 parts of a record") {
		t.Fatalf("got %q, want one problem counting 262 parts", problems)
	}
	// The same entries with seven of their rollups made from the first: 30 + 29 parts.
	if err := withEntries(29, true).Validate(); err != nil {
		t.Fatalf("rollups made from a finer one add no parts, but: %v", err)
	}
}

// A pending window names its entity by the id values' bytes, which the worker turns back into values
// of the types it knows: an id of another type is refused where the rollups are declared.
func TestRollupsRefuseAnIDTheWorkerCannotName(t *testing.T) {
	c := validConfig(t, func(c *Config) {
		tc := c.Topics["readings"]
		tc.Columns[0].Type = "blob"
		tc.Rollups = []Rollup{{Name: "hourly", Width: "1h", Table: "readings_1h", WindowColumn: DefaultWindowColumn,
			Bucket: Bucket{Width: "month", Column: "bucket", Key: "text"}, Aggregates: []Aggregate{{Column: "n", Fn: AggCount}}}}
		c.Topics["readings"] = tc
	})
	problems := Problems(c.Validate())
	if len(problems) != 1 || !strings.Contains(problems[0], `topics.readings.id[0]: "device_id" is a blob; an entry with rollups names its entities by ids of type text`) {
		t.Fatalf("got %q", problems)
	}
}
