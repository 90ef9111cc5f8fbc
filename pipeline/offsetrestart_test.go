package pipeline

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/bucketsink/sink/config"
)

// lines returns the logged lines that contain containing.
func (b *lockedBuffer) lines(containing string) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for _, l := range strings.Split(b.buf.String(), "\n") {
		if strings.Contains(l, containing) {
			out = append(out, l)
		}
	}
	return out
}

// TestOffsetRestartIsWarnedAtAssignmentUnderOffsetWriteTimestamps guards the start-up warning of a
// partition whose offsets went back under the group (a truncated log, a topic replaced while the group's
// offsets were kept): with write_timestamp offset the new rows lose to the old rows of the same keys,
// silently. The group's committed offset above the partition's end offset is what that looks like; the
// member says so once per such partition when it is assigned, and only for topics with write_timestamp
// offset, which a latest-value entry with an envelope has by default. kfake shows it faithfully: the signal is the group's committed offset and the partition's end
// offset, both read through the Kafka protocol, and a commit above the end is what the group holds then.
func TestOffsetRestartIsWarnedAtAssignmentUnderOffsetWriteTimestamps(t *testing.T) {
	const warning = "committed offset is above the partition's end offset"
	// "": a latest-value entry with an envelope and no write_timestamp, whose default is offset.
	for _, ts := range []string{config.WriteTimestampOffset, config.WriteTimestampKafka, ""} {
		t.Run("write_timestamp="+ts, func(t *testing.T) {
			f := newFixture(t, 30, 0)
			logs := &lockedBuffer{}
			f.logs = logs
			// Partition 1 has 30 records; the group last committed 500 there, before its log went back.
			var commit kadm.Offsets
			commit.Add(kadm.Offset{Topic: testTopic, Partition: 1, At: 500, LeaderEpoch: -1})
			if _, err := f.adm.CommitOffsets(context.Background(), f.group, commit); err != nil {
				t.Fatal(err)
			}
			cfg := f.config(func(c *config.Config) {
				tc := c.Topics["events"]
				tc.WriteTimestamp = ts
				if ts == "" {
					tc.Bucket, tc.Envelope = config.Bucket{Width: config.BucketNone}, config.EnvelopeDebezium
				}
				c.Topics["events"] = tc
				c.ApplyDefaults()
			})
			m := f.start(cfg, newMemWriter())
			f.waitFor(20*time.Second, "every partition committed to its end", f.allCommitted)
			if err := m.stop(); err != nil {
				t.Fatal(err)
			}
			got := logs.lines(warning)
			if ts != config.WriteTimestampOffset && ts != "" {
				if len(got) != 0 {
					t.Errorf("warned under write_timestamp %s, which offsets do not order:\n%s", ts, strings.Join(got, "\n"))
				}
				return
			}
			if len(got) != 1 || !strings.Contains(got[0], "level=WARN") || !strings.Contains(got[0], "partition=1 ") ||
				!strings.Contains(got[0], "committed=500") || !strings.Contains(got[0], "end_offset=30") {
				t.Errorf("want one WARN for partition 1 (committed 500, end 30), got:\n%s", strings.Join(got, "\n"))
			}
		})
	}
}
