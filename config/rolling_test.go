package config

import (
	"strings"
	"testing"
	"time"
)

// TestRollingTTLExpiresBeforeTheKeyIsReused: with rolling N of width w, a bucket's key is reused N×w
// after the bucket starts, and its last rows have event times just short of w after the start, so the
// ttl must be at most (N-1)×w for them to be gone when the key comes round. A ttl of a whole cycle,
// which the old rule accepted, left them there for up to one more bucket.
func TestRollingTTLExpiresBeforeTheKeyIsReused(t *testing.T) {
	for _, tc := range []struct {
		width   string
		rolling int
		ttl     time.Duration
		ok      bool
	}{
		{"1h", 24, 23 * time.Hour, true},
		{"1h", 24, 23*time.Hour + time.Second, false},
		{"1h", 24, 24 * time.Hour, false},
		{"1d", 7, 6 * Day, true},
		{"1d", 7, 7 * Day, false},
		{"week", 4, 3 * Week, true},
		{"week", 4, 4 * Week, false},
		{"1h", 2, time.Hour, true},
		{"1h", 1, time.Hour, false},
	} {
		c := &Config{
			Kafka:     Kafka{Brokers: []string{"127.0.0.1:9092"}},
			Cassandra: Cassandra{Hosts: []string{"127.0.0.1"}, Keyspace: "telemetry"},
			Topics: map[string]Topic{"readings": {
				ID:     []string{"device_id"},
				Time:   EventTime{Field: "ts"},
				Bucket: Bucket{Width: tc.width, Key: "int", Rolling: tc.rolling},
				Table:  "readings",
				Columns: []Column{
					{Name: "device_id", Type: "text", Field: "device_id"},
					{Name: "reading_time", Type: "timestamp", Source: "event_time"},
				},
				Clustering: []Clustering{{Column: "reading_time"}},
				TTL:        Duration(tc.ttl),
			}},
		}
		c.ApplyDefaults()
		err := c.Validate()
		if tc.ok && err != nil {
			t.Errorf("rolling %d of %s, ttl %s: %v", tc.rolling, tc.width, Duration(tc.ttl), err)
		}
		if !tc.ok && (err == nil || !strings.Contains(err.Error(), "rolling")) {
			t.Errorf("rolling %d of %s, ttl %s: accepted (%v); the previous cycle's last rows would still be there when the key comes round", tc.rolling, tc.width, Duration(tc.ttl), err)
		}
	}
}
