package batcher

import "testing"

// sizedBatch is a batch of one partition with routing key key whose rows have the given Sizes.
func sizedBatch(t *Target, key string, sizes ...int) *Batch {
	b := &Batch{Target: t, Key: key, Partitions: 1}
	for _, s := range sizes {
		b.Rows = append(b.Rows, Row{Target: t, Key: key, Size: int32(s)})
		b.Bytes += s
	}
	return b
}

// TestDataSizeIsWhatCassandraCounts checks DataSize against sizes worked out by hand from Cassandra
// 5.0's PartitionUpdate.dataSize (the integration test TestIntegrationJoinedRequestAtTheCapDrawsNoBatchSizeWarning
// checks it against the server's own warning).
func TestDataSizeIsWhatCassandraCounts(t *testing.T) {
	// The benchmark's reading: device_id (7 bytes) and day (10) the partition key, reading_time the
	// clustering, site_id (7 bytes) and three doubles cells, a TTL and the write timestamp bound. Size:
	// 24 and, each with 4 bytes of length, 7 + 8 + 7 + 8 + 8 + 8 + 10 + 4 (TTL) + 8 (timestamp).
	readings := &Target{Shape: RowShape{KeyColumns: 2, Clustering: 1, Regular: 4, TTL: true, Timestamp: true}}
	readingSize := 24 + 9*4 + 7 + 8 + 7 + 8 + 8 + 8 + 10 + 4 + 8
	// The server: liveness with TTL 8 + 4 + 8, row deletion 13, clustering 8, cells 20 + value.
	readingData := 20 + 13 + 8 + (20 + 7) + 3*(20+8)
	key := "\x00\x07dev-042\x00\x00\x0a2024-01-15\x00" // composite: 2-byte length, bytes, 0
	// A latest-value table's delete by its one-column key: the write timestamp, then the id.
	deletes := &Target{Delete: true, Shape: RowShape{KeyColumns: 1, Timestamp: true}}
	// A table the sink knows nothing of.
	unknown := &Target{}
	for _, tc := range []struct {
		name string
		b    *Batch
		want int
	}{
		{"one reading", sizedBatch(readings, key, readingSize), readingData + 29},
		{"three readings of a partition", sizedBatch(readings, key, readingSize, readingSize, readingSize), 3*readingData + 29},
		{"a reading with a longer site_id", sizedBatch(readings, key, readingSize+5), readingData + 5 + 29},
		// Every delete of a partition is its partition deletion, in the 29 every partition counts.
		{"deletes", sizedBatch(deletes, "dev-042", 24+4+8+4+7, 24+4+8+4+7), 29},
		{"a target without a shape: five times its size", sizedBatch(unknown, "k", 100, 50), 5*150 + 29},
		{"no rows", &Batch{Target: readings}, 0},
	} {
		if got := DataSize(tc.b); got != tc.want {
			t.Errorf("%s: DataSize = %d, want %d", tc.name, got, tc.want)
		}
	}
	// Joined: each partition counted with its own key.
	other := "\x00\x0adevice-777\x00\x00\x0a2024-01-15\x00" // 3 bytes more of partition key
	j := Join([]*Batch{sizedBatch(readings, key, readingSize, readingSize), sizedBatch(readings, other, readingSize+3)})
	if got, want := DataSize(j), 3*readingData+2*29; got != want {
		t.Errorf("joined: DataSize = %d, want %d", got, want)
	}
}

// BenchmarkDataSize is what Group pays per due batch to count it.
func BenchmarkDataSize(b *testing.B) {
	t := &Target{Shape: RowShape{KeyColumns: 2, Clustering: 1, Regular: 4, TTL: true, Timestamp: true}}
	bt := sizedBatch(t, "\x00\x07dev-042\x00\x00\x0a2024-01-15\x00", 122, 122)
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		n += DataSize(bt)
	}
	_ = n
}
