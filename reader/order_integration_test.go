package reader

import (
	"fmt"
	"math/big"
	"math/rand/v2"
	"net"
	"testing"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
	"gopkg.in/inf.v0"

	"github.com/bucketsink/sink/internal/testenv"
)

// TestIntegrationMergeOrderIsCassandrasOrder: the merge of event buckets orders rows with
// compareValues, so for every key type it must agree with the order Cassandra itself keeps in a
// clustering column. Values go into one partition per type; Cassandra returns them sorted, and
// compareValues must find each one before the next. (Only here does a test insert rows: it checks
// the server's order, not where the sink puts rows.)
func TestIntegrationMergeOrderIsCassandrasOrder(t *testing.T) {
	hosts := testenv.Cassandra(t)
	ks := testenv.Keyspace(t, hosts)
	s := testenv.Session(t, hosts, ks)
	rng := rand.New(rand.NewPCG(7, 15))
	at := time.Date(2024, 1, 15, 10, 0, 0, 0, time.UTC)
	gen := map[string]func() any{
		"text":   func() any { return string([]rune{rune(32 + rng.IntN(300)), rune(32 + rng.IntN(95))}) },
		"bigint": func() any { return rng.Int64() - rng.Int64() },
		"int":    func() any { return int(int32(rng.Uint32())) },
		"double": func() any { return rng.NormFloat64() * 1e6 },
		"float":  func() any { return float32(rng.NormFloat64()) },
		"varint": func() any { return big.NewInt(rng.Int64() - rng.Int64()) },
		"decimal": func() any {
			return inf.NewDec(rng.Int64N(2000)-1000, inf.Scale(rng.IntN(4)))
		},
		"boolean":   func() any { return rng.IntN(2) == 0 },
		"blob":      func() any { return []byte{byte(rng.IntN(256)), byte(rng.IntN(256))} },
		"inet":      func() any { return net.IPv4(10, byte(rng.IntN(256)), byte(rng.IntN(256)), byte(rng.IntN(256))) },
		"timestamp": func() any { return at.Add(time.Duration(rng.Int64N(1e6)-5e5) * time.Second) },
		"date":      func() any { return at.AddDate(0, 0, rng.IntN(2000)-1000).Truncate(24 * time.Hour) },
		// Same instants with different clock sequence and node bytes: the signed-byte tie-break.
		"timeuuid": func() any {
			u := gocql.UUIDFromTime(at.Add(time.Duration(rng.IntN(3)) * time.Millisecond))
			for i := 8; i < 16; i++ {
				u[i] = byte(rng.IntN(256))
			}
			u[8] = u[8]&0x3f | 0x80 // variant
			return u
		},
		"uuid": func() any {
			if rng.IntN(2) == 0 {
				return gocql.UUIDFromTime(at.Add(time.Duration(rng.IntN(1000)) * time.Second))
			}
			u, _ := gocql.RandomUUID()
			return u
		},
	}
	for typ, g := range gen {
		table := "o_" + typ
		if err := s.Query(fmt.Sprintf("CREATE TABLE %s (k int, c %s, PRIMARY KEY (k, c))", table, typ)).ExecContext(t.Context()); err != nil {
			t.Fatal(err)
		}
		for range 40 {
			if err := s.Query(fmt.Sprintf("INSERT INTO %s (k, c) VALUES (0, ?)", table), g()).ExecContext(t.Context()); err != nil {
				t.Fatalf("%s: %v", typ, err)
			}
		}
		iter := s.Query(fmt.Sprintf("SELECT c FROM %s WHERE k = 0", table)).IterContext(t.Context())
		var prev any
		for n := 0; ; n++ {
			m := map[string]any{}
			if !iter.MapScan(m) {
				break
			}
			if n > 0 && compareValues(typ, prev, m["c"]) >= 0 {
				t.Errorf("%s: Cassandra puts %v before %v, compareValues does not", typ, prev, m["c"])
			}
			prev = m["c"]
		}
		if err := iter.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
