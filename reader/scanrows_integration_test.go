package reader

import (
	"bytes"
	"reflect"
	"slices"
	"testing"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/bucketsink/sink/internal/testenv"
)

// TestIntegrationScanRowsGivesTheValuesOfMapScan: the reader scans a page through one set of typed
// destinations instead of MapScan's new ones per row, and decodes the partition key once per page. Every
// column type must come out as MapScan gives it, but a null as nil where MapScan gives its type's zero
// value, and no row may share a slice, map or pointer with another.
func TestIntegrationScanRowsGivesTheValuesOfMapScan(t *testing.T) {
	hosts := testenv.Cassandra(t)
	ks := testenv.Keyspace(t, hosts)
	s := testenv.Session(t, hosts, ks)
	for _, stmt := range []string{
		`CREATE TABLE scanned (id text, n int, s text, b bigint, i int, sm smallint, ti tinyint, d double, f float,
			bo boolean, ts timestamp, u uuid, tu timeuuid, bl blob, de decimal, vi varint, da date, tm time,
			l list<text>, st set<int>, m map<text, double>, fl frozen<list<bigint>>, PRIMARY KEY (id, n))`,
		`INSERT INTO scanned (id, n, s, b, i, sm, ti, d, f, bo, ts, u, tu, bl, de, vi, da, tm, l, st, m, fl) VALUES ('e', 1,
			'one', 9000000000, 7, 3, 2, 1.5, 2.25, true, '2024-01-15T10:00:00.123Z', 5fc03087-d265-11e7-b8c6-83e29cd24f4c,
			now(), 0xcafe, 12.345, 123456789012345678901234567890, '2024-01-15', '10:00:00.000000001',
			['a', 'b'], {1, 2}, {'x': 1.5}, [4, 5])`,
		`INSERT INTO scanned (id, n) VALUES ('e', 2)`, // every other column null
		`INSERT INTO scanned (id, n, s, l, m, bl, de, vi) VALUES ('e', 3, 'three', ['c'], {'y': 2.5}, 0xbeef, 0.5, 7)`,
	} {
		if err := s.Query(stmt).Exec(); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	// One page of three rows, scanned one after the other into the same destinations: a row that shared
	// memory with the next would have changed by the end. The partition key id is decoded once; the blob,
	// collections, decimal and varint, named as constant too, differ from row to row and must still be
	// decoded for each: a value a caller can change is never shared.
	const sel = `SELECT * FROM scanned WHERE id = 'e'`
	iter := s.Query(sel).Iter()
	got := scanRows(iter, []string{"id", "bl", "l", "m", "de", "vi"})
	if err := iter.Close(); err != nil {
		t.Fatal(err)
	}
	var want []map[string]any
	it := s.Query(sel).Iter()
	for {
		m := map[string]any{}
		if !it.MapScan(m) {
			break
		}
		want = append(want, m)
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	// The rows' columns that were given; the others are null.
	for r, given := range [][]string{{"id", "n"}, {"id", "n", "s", "l", "m", "bl", "de", "vi"}} {
		for name := range want[r+1] {
			if !slices.Contains(given, name) {
				want[r+1][name] = nil
			}
		}
	}
	if len(want) != 3 || !reflect.DeepEqual(got, want) {
		t.Fatalf("scanRows gave\n%#v\nMapScan gives\n%#v", got, want)
	}
}

// TestIntegrationDenseReadAllocatesLessThanMapScan guards what made the reader slower than a loop over
// the driver on a dense entity (issue 25): it spent most of its CPU making MapScan's destinations anew
// for every row. Reading one partition of 2,000 rows, the reader must allocate well under what scanning
// the same rows with MapScan does (about half since the change; as much or more before).
func TestIntegrationDenseReadAllocatesLessThanMapScan(t *testing.T) {
	hosts := testenv.Cassandra(t)
	ks := testenv.Keyspace(t, hosts)
	s := testenv.Session(t, hosts, ks)
	if err := s.Query(`CREATE TABLE dense (id text, n int, s text, d double, PRIMARY KEY (id, n))`).Exec(); err != nil {
		t.Fatal(err)
	}
	const rows = 2000
	b := s.Batch(gocql.UnloggedBatch)
	for n := range rows {
		b.Query(`INSERT INTO dense (id, n, s, d) VALUES ('e', ?, 'text', 1.5)`, n)
		if len(b.Entries) == 200 {
			if err := b.Exec(); err != nil {
				t.Fatal(err)
			}
			b = s.Batch(gocql.UnloggedBatch)
		}
	}
	const sel = `SELECT id, n, s, d FROM dense WHERE id = 'e'`
	count := func(scan func() int) float64 {
		var n int
		a := testing.AllocsPerRun(3, func() { n = scan() })
		if n != rows {
			t.Fatalf("%d rows read, want %d", n, rows)
		}
		return a
	}
	mine := count(func() int {
		it := s.Query(sel).PageSize(rows).Iter()
		defer it.Close()
		return len(scanRows(it, []string{"id"}))
	})
	theirs := count(func() int {
		it := s.Query(sel).PageSize(rows).Iter()
		defer it.Close()
		var out []map[string]any
		for {
			m := make(map[string]any, 4)
			if !it.MapScan(m) {
				break
			}
			out = append(out, m)
		}
		return len(out)
	})
	if mine > 0.75*theirs {
		t.Errorf("scanRows made %.0f allocations for %d rows, MapScan %.0f: want at most 3/4 of MapScan's", mine, rows, theirs)
	}
	t.Logf("allocations per row: scanRows %.1f, MapScan %.1f", mine/rows, theirs/rows)
}

// TestIntegrationScanRowsKeepsEachRowsBlob guards against a blob destination reused for a whole page: the
// driver appends a blob into the slice its destination holds, so rows with blobs one after the other (no
// null between them) read back as the last row's bytes cut to each length. Every row must keep its own
// blob, an empty blob must stay apart from a null, and changing one row's blob must not change another's.
func TestIntegrationScanRowsKeepsEachRowsBlob(t *testing.T) {
	hosts := testenv.Cassandra(t)
	ks := testenv.Keyspace(t, hosts)
	s := testenv.Session(t, hosts, ks)
	if err := s.Query(`CREATE TABLE blobs (id text, n int, bl blob, lb list<blob>, PRIMARY KEY (id, n))`).Exec(); err != nil {
		t.Fatal(err)
	}
	long := make([]byte, 3000)
	for i := range long {
		long[i] = byte(i)
	}
	want := [][]byte{{0xca, 0xfe, 0x01}, {0xbe, 0xef}, {0x00, 0x11, 0x22}, {}, nil, long, {0x7f}}
	for n, b := range want {
		// A collection cannot hold a null: a null row's list holds an empty blob.
		if err := s.Query(`INSERT INTO blobs (id, n, bl, lb) VALUES ('e', ?, ?, ?)`, n, b, [][]byte{append([]byte{}, b...), {byte(n)}}).Exec(); err != nil {
			t.Fatal(err)
		}
	}
	iter := s.Query(`SELECT n, bl, lb FROM blobs WHERE id = 'e'`).PageSize(len(want)).Iter()
	rows := scanRows(iter, []string{"id"})
	if err := iter.Close(); err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(want) {
		t.Fatalf("%d rows, want %d", len(rows), len(want))
	}
	for n, row := range rows {
		got, _ := row["bl"].([]byte)
		if !bytes.Equal(got, want[n]) || (got == nil) != (want[n] == nil) {
			t.Errorf("row %d: blob %.16x (nil %v), want %.16x (nil %v)", n, got, got == nil, want[n], want[n] == nil)
		}
		// An empty element is an empty blob, not a nil one (which the JSON format would print as null).
		if lb, _ := row["lb"].([][]byte); len(lb) != 2 || lb[0] == nil || !bytes.Equal(lb[0], want[n]) || !bytes.Equal(lb[1], []byte{byte(n)}) {
			t.Errorf("row %d: list<blob> %#v, want [%x %x]", n, lb, want[n], []byte{byte(n)})
		}
	}
	// Writing into a row's blob, up to its capacity, changes no other row.
	b := rows[1]["bl"].([]byte)
	b = b[:cap(b)]
	for i := range b {
		b[i] = 0xff
	}
	for n, row := range rows {
		if b, _ := row["bl"].([]byte); n != 1 && !bytes.Equal(b, want[n]) {
			t.Errorf("row %d: blob %.16x after row 1's was written over, want %.16x", n, row["bl"], want[n])
		}
	}
}
