package cassandra

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/bucketsink/sink/batcher"
	"github.com/bucketsink/sink/internal/testenv"
	"github.com/bucketsink/sink/packed"
)

// warnings counts the responses that carry server warnings (the frame header's warning flag). gocql
// v2.1.2 drops the text of a successful batch's warnings, but every frame header passes through the
// session's FrameHeaderObserver.
type warnings struct{ n atomic.Int64 }

func (w *warnings) ObserveFrameHeader(_ context.Context, h gocql.ObservedFrameHeader) {
	const opResult, flagWarning = 0x08, 0x08
	if uint8(h.Opcode) == opResult && h.Flags&flagWarning != 0 {
		w.n.Add(1)
	}
}

// serverWarnThreshold is batch_size_warn_threshold of the test node (Cassandra's default, 5 KiB):
// a batch of several partitions whose data size is above it draws a warning.
const serverWarnThreshold = 5 << 10

// sizedShape is one kind of row DataSize is checked against the server with.
type sizedShape struct {
	name    string
	columns string // the CREATE TABLE's column definitions and primary key
	options string // WITH ..., or ""
	insert  string // the columns and values of the INSERT, after "INSERT INTO ks.t "
	shape   batcher.RowShape
	types   []string
	// row is the values of row j of partition i, with filler (text or blob) somewhere among them, and
	// the partition key's components.
	row func(i, j int, filler string) (vals []any, key [][]byte)
	// slack is what the server counts of a row beyond DataSize's count: 0 where DataSize is exact.
	slack int
}

// packRow packs vals as the mapper does, with the row's Size as the mapper counts it.
func packRow(tgt *batcher.Target, types []string, vals []any, key []byte) batcher.Row {
	var w packed.Writer
	w.Reset()
	for i, v := range vals {
		if v == nil || v == gocql.UnsetValue {
			w.Absent(v)
			continue
		}
		if err := w.Value(packed.MustTypes(types[i])[0], v); err != nil {
			panic(err)
		}
	}
	size := batcher.RowOverhead + w.Size()
	p, k := w.Finish(key)
	return batcher.Row{Target: tgt, Key: k, Packed: p, Size: int32(size)}
}

// sizedRequest is parts partitions of rows rows each of shape sh, joined by the writer's Group into one
// request whose DataSize is exactly want: the last row's filler takes up what the others leave.
func sizedRequest(t *testing.T, w *Writer, tgt *batcher.Target, sh sizedShape, parts, rows, want int) *batcher.Batch {
	t.Helper()
	build := func(pad int) []*batcher.Batch {
		var due []*batcher.Batch
		for i := range parts {
			b := &batcher.Batch{Target: tgt, Partitions: 1}
			for j := range rows {
				n := 40
				if i == parts-1 && j == rows-1 {
					n += pad
				}
				vals, comps := sh.row(i, j, strings.Repeat("x", n))
				r := packRow(tgt, sh.types, vals, testenv.AppendRoutingKey(nil, comps...))
				r.Offset = int64(i*rows + j)
				b.Key = r.Key
				b.Rows = append(b.Rows, r)
				b.Bytes += int(r.Size)
			}
			due = append(due, b)
		}
		return due
	}
	probe := build(0)
	total := 0
	for _, b := range probe {
		total += batcher.DataSize(b)
	}
	if total > want {
		t.Fatalf("%s: %d partitions of %d rows count %d bytes already, more than %d", sh.name, parts, rows, total, want)
	}
	reqs := w.Group(build(want - total))
	if len(reqs) != 1 || reqs[0].Partitions != parts {
		t.Fatalf("%s: %d partitions went as %d requests; want them joined into one", sh.name, parts, len(reqs))
	}
	if got := batcher.DataSize(reqs[0]); got != want {
		t.Fatalf("%s: the joined request counts %d bytes, want %d", sh.name, got, want)
	}
	return reqs[0]
}

// TestIntegrationJoinedRequestAtTheCapDrawsNoBatchSizeWarning checks batcher.DataSize against what
// Cassandra counts, on the real node, for rows of several kinds: a request of ten partitions joined by
// the writer's Group and sent by its Write draws no warning when it counts the server's
// batch_size_warn_threshold, and one that counts a byte more draws one. So the count is the server's to
// the byte, not merely below it (where it is not exact, slack says by how much, and the same holds with
// it). The sink's former count (the values with their lengths, plus 24, capped at 2 KiB) was about a
// fifth under the server's for the benchmark's reading, not half of it, and cut requests at half of
// what the server takes without a warning.
func TestIntegrationJoinedRequestAtTheCapDrawsNoBatchSizeWarning(t *testing.T) {
	seen := &warnings{}
	f := setupProto(t, 0, func(c *gocql.ClusterConfig) { c.FrameHeaderObserver = seen })
	day := []byte("2024-01-15")
	shapes := []sizedShape{{
		name:    "the benchmark's readings: composite key, clustering time, TTL and write timestamp bound",
		columns: "device_id text, bucket text, reading_time timestamp, site_id text, temperature double, humidity double, battery double, PRIMARY KEY ((device_id, bucket), reading_time)",
		insert:  "(device_id, reading_time, site_id, temperature, humidity, battery, bucket) VALUES (?, ?, ?, ?, ?, ?, ?) USING TTL ? AND TIMESTAMP ?",
		shape:   batcher.RowShape{KeyColumns: 2, Clustering: 1, Regular: 4, TTL: true, Timestamp: true},
		types:   []string{"text", "timestamp", "text", "double", "double", "double", "text", "int", "bigint"},
		row: func(i, j int, filler string) ([]any, [][]byte) {
			id := fmt.Sprintf("dev-%03d", i)
			ts := base.Add(time.Duration(j) * time.Second)
			return []any{id, ts, filler, 21.5, 40.0, 3.7, string(day), int32(86400), ts.UnixMicro()}, [][]byte{[]byte(id), day}
		},
	}, {
		name:    "a blob, nulls, no TTL nor timestamp bound, two clustering columns",
		columns: "id text, seq int, tag text, payload blob, note text, flag boolean, PRIMARY KEY (id, seq, tag)",
		insert:  "(id, seq, tag, payload, note, flag) VALUES (?, ?, ?, ?, ?, ?)",
		shape:   batcher.RowShape{KeyColumns: 1, Clustering: 2, Regular: 3},
		types:   []string{"text", "int", "text", "blob", "text", "boolean"},
		row: func(i, j int, filler string) ([]any, [][]byte) {
			id := fmt.Sprintf("blob-%d", i)
			return []any{id, int32(j), "t", []byte(filler), nil, nil}, [][]byte{[]byte(id)}
		},
	}, {
		name:    "unset values: counted as the null cells they are not, 20 bytes each",
		columns: "id text, seq int, payload blob, note text, flag boolean, PRIMARY KEY (id, seq)",
		insert:  "(id, seq, payload, note, flag) VALUES (?, ?, ?, ?, ?)",
		shape:   batcher.RowShape{KeyColumns: 1, Clustering: 1, Regular: 3},
		types:   []string{"text", "int", "blob", "text", "boolean"},
		row: func(i, j int, filler string) ([]any, [][]byte) {
			id := fmt.Sprintf("unset-%d", i)
			return []any{id, int32(j), []byte(filler), gocql.UnsetValue, gocql.UnsetValue}, [][]byte{[]byte(id)}
		},
		slack: -2 * 20,
	}, {
		name:    "frozen collections and a single-column int key",
		columns: "id int, seq int, m frozen<map<text, int>>, l frozen<list<text>>, s frozen<set<int>>, PRIMARY KEY (id, seq)",
		insert:  "(id, seq, m, l, s) VALUES (?, ?, ?, ?, ?) USING TIMESTAMP ?",
		shape:   batcher.RowShape{KeyColumns: 1, Clustering: 1, Regular: 3, Timestamp: true},
		types:   []string{"int", "int", "map<text, int>", "list<text>", "set<int>", "bigint"},
		row: func(i, j int, filler string) ([]any, [][]byte) {
			return []any{int32(i), int32(j), map[string]any{"a": int32(1), "bb": int32(2)}, []any{filler, "y"}, []any{int32(1), int32(2), int32(3)}, int64(1000 + j)},
				[][]byte{packed.AppendInt(nil, int32(i))}
		},
	}, {
		name:    "a non-frozen set of three: 16 bytes an element more, 12 less for the column",
		columns: "id text, seq int, v text, s set<int>, PRIMARY KEY (id, seq)",
		insert:  "(id, seq, v, s) VALUES (?, ?, ?, ?)",
		shape:   batcher.RowShape{KeyColumns: 1, Clustering: 1, Regular: 2},
		types:   []string{"text", "int", "text", "set<int>"},
		row: func(i, j int, filler string) ([]any, [][]byte) {
			id := fmt.Sprintf("set-%d", i)
			return []any{id, int32(j), filler, []any{int32(1), int32(2), int32(3)}}, [][]byte{[]byte(id)}
		},
		slack: 3*16 - 12,
	}, {
		name:    "a table that expires rows by its default_time_to_live, no TTL bound: 12 bytes a row more",
		columns: "id text, bucket text, ts timestamp, v text, PRIMARY KEY ((id, bucket), ts)",
		options: " WITH default_time_to_live = 86400",
		insert:  "(id, bucket, ts, v) VALUES (?, ?, ?, ?)",
		shape:   batcher.RowShape{KeyColumns: 2, Clustering: 1, Regular: 1},
		types:   []string{"text", "text", "timestamp", "text"},
		row: func(i, j int, filler string) ([]any, [][]byte) {
			id := fmt.Sprintf("ttl-%d", i)
			return []any{id, string(day), base.Add(time.Duration(j) * time.Second), filler}, [][]byte{[]byte(id), day}
		},
		slack: 12,
	}}
	const parts, rows = 10, 2
	w := NewWriter(f.s, WriterConfig{Group: GroupConfig{MaxPartitions: parts, MaxBytes: 1 << 20}}, nil)
	for n, sh := range shapes {
		table := fmt.Sprintf("sized%d", n)
		f.exec(t, fmt.Sprintf("CREATE TABLE %s.%s (%s)%s", f.ks, table, sh.columns, sh.options))
		tgt := &batcher.Target{Keyspace: f.ks, Table: table, Insert: fmt.Sprintf("INSERT INTO %s.%s %s", f.ks, table, sh.insert), Shape: sh.shape}
		// The server counts the request's DataSize plus slack per row: at the threshold it is quiet, a
		// byte above it warns.
		at := serverWarnThreshold - sh.slack*parts*rows
		for _, tc := range []struct {
			want int
			warn bool
		}{{at, false}, {at + 1, true}} {
			req := sizedRequest(t, w, tgt, sh, parts, rows, tc.want)
			before := seen.n.Load()
			if failed, err := w.Write(t.Context(), req); err != nil || len(failed) > 0 {
				t.Fatalf("%s: Write = %v, %v", sh.name, failed, err)
			}
			t.Logf("%s: %d bytes counted: warnings %d", sh.name, tc.want, seen.n.Load()-before)
			if got := seen.n.Load() > before; got != tc.warn {
				t.Errorf("%s: a request that counts %d bytes (the server: %d) drew a warning: %v, want %v",
					sh.name, tc.want, tc.want+sh.slack*parts*rows, got, tc.warn)
			}
		}
	}
}
