package mapper_test

import (
	"context"
	"errors"
	"math/big"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
	"gopkg.in/inf.v0"

	"github.com/bucketsink/sink/cassandra"
	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/internal/testenv"
	"github.com/bucketsink/sink/mapper"
	"github.com/bucketsink/sink/packed"
)

// TestRowsOnCassandra writes mapped rows of every column type through the INSERT the mapper
// built, into the table `sink schema` created, and reads them back: every bound value must be one
// gocql marshals and Cassandra stores, Row.Key must hash to the partition's real token, and the
// write timestamp and TTL must be the ones the mapper chose.
func TestRowsOnCassandra(t *testing.T) {
	ks, m, s, ctx := onCassandra(t, map[string]config.Topic{
		"all": {
			Topic:  "all-types",
			ID:     []string{"tenant", "device"},
			Time:   config.EventTime{Source: "field", Field: "ts", Format: "unix_ms"},
			Bucket: config.Bucket{Width: "1h", Key: "timestamp", EventBuckets: 4},
			Table:  "all_types",
			Columns: []config.Column{
				{Name: "tenant", Type: "text", Field: "tenant"},
				{Name: "device", Type: "int", Field: "device"},
				{Name: "id", Type: "timeuuid", Source: "timeuuid"},
				{Name: "at", Type: "timestamp", Source: "event_time"},
				{Name: "a", Type: "ascii", Field: "a"},
				{Name: "bi", Type: "bigint", Field: "bi"},
				{Name: "si", Type: "smallint", Field: "si"},
				{Name: "ti", Type: "tinyint", Field: "ti"},
				{Name: "f", Type: "float", Field: "f"},
				{Name: "d", Type: "double", Field: "d"},
				{Name: "b", Type: "boolean", Field: "b"},
				{Name: "day", Type: "date", Field: "day"},
				{Name: "u", Type: "uuid", Field: "u"},
				{Name: "bl", Type: "blob", Field: "bl"},
				{Name: "ip", Type: "inet", Field: "ip"},
				{Name: "dec", Type: "decimal", Field: "dec"},
				{Name: "vi", Type: "varint", Field: "vi"},
				{Name: "tags", Type: "set<text>", Field: "tags"},
				{Name: "vals", Type: "list<double>", Field: "vals"},
				{Name: "attrs", Type: "map<text, int>", Field: "attrs"},
				{Name: "missing", Type: "text", Field: "nope"},
				{Name: "k", Type: "text", Source: "kafka_key"},
				{Name: "off", Type: "bigint", Source: "kafka_offset"},
			},
			Clustering: []config.Clustering{{Column: "id", Order: "desc"}},
			TTL:        config.Duration(24 * time.Hour),
		},
	})

	const value = `{"tenant":"acme","device":7,"ts":1705329442123,"a":"plain","bi":-9000000000,"si":-300,` +
		`"ti":12,"f":1.5,"d":-2.25e-3,"b":true,"day":"2024-01-15","u":"0b6a1f6e-3f0c-4a53-9b8f-1f2a3b4c5d6e",` +
		`"bl":"AAEC/w==","ip":"2001:db8::1","dec":"-12345678901234567890.0100","vi":-123456789012345678901234567890,` +
		`"tags":["x","y"],"vals":[1,2.5],"attrs":{"p":1,"q":-2}}`
	kafkaTS := time.Now().Truncate(time.Millisecond)
	for offset := int64(41); offset <= 42; offset++ {
		rec := mapper.Record{Topic: "all-types", Partition: 5, Offset: offset, Key: []byte("k1"), Value: []byte(value), Timestamp: kafkaTS}
		row, err := m.Map(rec)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Driver().Query(row.Target.Insert, packed.Values(row.Packed)...).ExecContext(ctx); err != nil {
			t.Fatalf("insert: %v", err)
		}
		n := len(row.Target.Columns)
		bucket, shard := packed.Values(row.Packed)[n-2], packed.Values(row.Packed)[n-1]

		var (
			token, wt int64
			ttl       int
			id        gocql.UUID
			a, k      string
			bi, off   int64
			si        int16
			ti        int8
			f         float32
			d         float64
			b         bool
			day       time.Time
			u         gocql.UUID
			bl        []byte
			ip        net.IP
			dec       *inf.Dec
			vi        *big.Int
			tags      []string
			vals      []float64
			attrs     map[string]int
			missing   *string
		)
		err = s.Driver().Query(`SELECT token(tenant, device, bucket, event_bucket), writetime(a), ttl(a), id, a, k, bi, off, si, ti, f, d, b, day, u, bl, ip, dec, vi, tags, vals, attrs, missing `+
			`FROM `+ks+`.all_types WHERE tenant = ? AND device = ? AND bucket = ? AND event_bucket = ? AND id = ?`,
			"acme", int32(7), bucket, shard, packed.Values(row.Packed)[2]).
			ScanContext(ctx, &token, &wt, &ttl, &id, &a, &k, &bi, &off, &si, &ti, &f, &d, &b, &day, &u, &bl, &ip, &dec, &vi, &tags, &vals, &attrs, &missing)
		if err != nil {
			t.Fatalf("offset %d: reading the row back: %v", offset, err)
		}
		if want := testenv.Token([]byte(row.Key)); token != want {
			t.Errorf("token(pk) = %d, Token(Row.Key) = %d: Row.Key is not the routing key", token, want)
		}
		if want := kafkaTS.UnixMicro() + offset%1000; wt != want {
			t.Errorf("writetime %d, want %d", wt, want)
		}
		if ttl <= 0 || ttl > 24*3600 {
			t.Errorf("ttl %d", ttl)
		}
		if id != packed.GoValue(packed.Values(row.Packed)[2]).(gocql.UUID) || off != offset || k != "k1" {
			t.Errorf("id %v off %d key %q", id, off, k)
		}
		if a != "plain" || bi != -9000000000 || si != -300 || ti != 12 || f != 1.5 || d != -2.25e-3 || !b ||
			!day.Equal(time.Date(2024, 1, 15, 0, 0, 0, 0, time.UTC)) || u.String() != "0b6a1f6e-3f0c-4a53-9b8f-1f2a3b4c5d6e" ||
			string(bl) != "\x00\x01\x02\xff" || !ip.Equal(net.ParseIP("2001:db8::1")) {
			t.Errorf("scalars read back wrong: %v %v %v %v %v %v %v %v %v %x %v", a, bi, si, ti, f, d, b, day, u, bl, ip)
		}
		if dec.String() != "-12345678901234567890.0100" || vi.String() != "-123456789012345678901234567890" {
			t.Errorf("decimal %s varint %s", dec, vi)
		}
		if len(tags) != 2 || tags[0] != "x" || len(vals) != 2 || vals[1] != 2.5 || attrs["q"] != -2 {
			t.Errorf("collections %v %v %v", tags, vals, attrs)
		}
		if missing != nil {
			t.Errorf("unset column reads %q, want null", *missing)
		}
	}
}

// TestEncodedValueRefusesAlteredColumn binds pre-encoded values to a table whose column types are
// not the configured ones, as after an ALTER TABLE or a hand-made table: the statement's real
// bind metadata must make MarshalCQL refuse with a *BindTypeError, one the writer does not retry,
// instead of sending 4 bytes of int into a bigint or text into an ascii column.
func TestEncodedValueRefusesAlteredColumn(t *testing.T) {
	ks, m, s, ctx := onCassandra(t, map[string]config.Topic{
		"t": {
			Topic:  "t",
			ID:     []string{"k"},
			Time:   config.EventTime{Source: "kafka"},
			Bucket: config.Bucket{Width: "1d", Key: "date"},
			Table:  "configured",
			Columns: []config.Column{
				{Name: "k", Type: "text", Field: "k"},
				{Name: "n", Type: "int", Field: "n"},
				{Name: "at", Type: "timestamp", Source: "event_time"},
			},
			Clustering: []config.Clustering{{Column: "at", Order: "desc"}},
		},
	})
	if err := s.Driver().Query("CREATE TABLE " + ks + ".altered (k ascii PRIMARY KEY, n bigint)").ExecContext(ctx); err != nil {
		t.Fatal(err)
	}
	row, err := m.Map(mapper.Record{Topic: "t", Value: []byte(`{"k":"a","n":7}`), Timestamp: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	// The configured table takes the values.
	if err := s.Driver().Query(row.Target.Insert, packed.Values(row.Packed)...).ExecContext(ctx); err != nil {
		t.Fatalf("insert into the configured table: %v", err)
	}
	for _, tc := range []struct {
		insert string
		values []any
		want   string
	}{
		{"INSERT INTO " + ks + ".altered (k, n) VALUES ('a', ?)", packed.Values(row.Packed)[1:2], "int to a bind marker of CQL type bigint"},
		{"INSERT INTO " + ks + ".altered (k, n) VALUES (?, 1)", packed.Values(row.Packed)[0:1], "text to a bind marker of CQL type ascii"},
	} {
		err := s.Driver().Query(tc.insert, tc.values...).ExecContext(ctx)
		var bte *packed.BindTypeError
		if !errors.As(err, &bte) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want a *packed.BindTypeError (%s)", tc.insert, err, tc.want)
		}
		if cassandra.IsRetryable(err) {
			t.Errorf("%s: %v is retryable; the same bytes would fail again", tc.insert, err)
		}
	}
	var n int64
	if err := s.Driver().Query("SELECT count(*) FROM "+ks+".altered").ScanContext(ctx, &n); err != nil || n != 0 {
		t.Errorf("the altered table holds %d rows (%v), want none", n, err)
	}
}

// onCassandra compiles a config of topics (which name no keyspace) whose keyspace is the test's own
// on the test Cassandra, and applies its schema there. It returns the keyspace, the mapper, a session
// closed at the end of the test and a context bounding the test.
func onCassandra(t *testing.T, topics map[string]config.Topic) (string, *mapper.Mapper, *cassandra.Session, context.Context) {
	t.Helper()
	hosts := testenv.Cassandra(t)
	ks := testenv.Name(t, "mapper")
	cfg := &config.Config{
		Kafka: config.Kafka{Brokers: []string{"127.0.0.1:9092"}},
		Cassandra: config.Cassandra{Hosts: hosts, Keyspace: ks,
			Replication: map[string]string{"class": "SimpleStrategy", "replication_factor": "1"}},
		Topics: topics,
	}
	cfg.ApplyDefaults()
	m, err := mapper.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	s, err := cassandra.Connect(ctx, cfg.Cassandra)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = s.Driver().Query("DROP KEYSPACE IF EXISTS " + ks).Exec()
		s.Close()
	})
	if err := cassandra.ApplySchema(ctx, s, cfg, nil, time.Now()); err != nil {
		t.Fatal(err)
	}
	return ks, m, s, ctx
}

// TestTTLFieldOnCassandra writes rows whose TTL comes from their records (an expiry instant, a
// duration, one past the max, one without the field) through the mapper's INSERT and reads each TTL
// back with TTL(col): Cassandra counts it from the write, so each is at most the bound value and
// within the seconds the test took of it; the row without the field has none (null).
func TestTTLFieldOnCassandra(t *testing.T) {
	topic := func(kafkaTopic string, ttl time.Duration, f config.TTLField) config.Topic {
		return config.Topic{
			Topic:  kafkaTopic,
			ID:     []string{"id"},
			Time:   config.EventTime{Source: "kafka"},
			Bucket: config.Bucket{Width: "1d"},
			Table:  kafkaTopic,
			Columns: []config.Column{
				{Name: "id", Type: "text", Field: "id"},
				{Name: "at", Type: "timestamp", Source: "event_time"},
				{Name: "v", Type: "text", Field: "v"},
			},
			Clustering: []config.Clustering{{Column: "at"}},
			TTL:        config.Duration(ttl),
			TTLField:   &f,
		}
	}
	ks, m, s, ctx := onCassandra(t, map[string]config.Topic{
		"exp": topic("expiring", 0, config.TTLField{Field: "expires_at", As: "instant", Format: "unix_s", Max: config.Duration(7 * config.Day)}),
		"dur": topic("lasting", time.Hour, config.TTLField{Field: "ttl_ms", As: "duration", Unit: "ms", Max: config.Duration(2 * config.Day)}),
	})
	start := time.Now()
	in := func(d time.Duration) string { return strconv.FormatInt(start.Add(d).Unix(), 10) }
	cases := []struct {
		topic, table, id, value string
		want                    int // the TTL when written; 0: none
	}{
		{"expiring", "expiring", "in-an-hour", `{"id":"in-an-hour","v":"x","expires_at":` + in(time.Hour+time.Minute) + `}`, 3600 + 60},
		{"expiring", "expiring", "past-max", `{"id":"past-max","v":"x","expires_at":` + in(30*24*time.Hour) + `}`, 7 * 86400},
		{"expiring", "expiring", "no-field", `{"id":"no-field","v":"x"}`, 0},
		{"lasting", "lasting", "ten-minutes", `{"id":"ten-minutes","v":"x","ttl_ms":600000}`, 600},
		{"lasting", "lasting", "past-max", `{"id":"past-max","v":"x","ttl_ms":"604800000"}`, 2 * 86400},
		{"lasting", "lasting", "no-field", `{"id":"no-field","v":"x"}`, 3600}, // the entry's ttl
	}
	for i, tc := range cases {
		row, err := m.Map(mapper.Record{Topic: tc.topic, Offset: int64(i), Value: []byte(tc.value), Timestamp: start})
		if err != nil {
			t.Fatalf("%s %s: %v", tc.table, tc.id, err)
		}
		if err := s.Driver().Query(row.Target.Insert, packed.Values(row.Packed)...).ExecContext(ctx); err != nil {
			t.Fatalf("%s %s: insert: %v", tc.table, tc.id, err)
		}
	}
	for _, tc := range cases {
		var ttl *int
		err := s.Driver().Query(`SELECT TTL(v) FROM `+ks+`.`+tc.table+` WHERE id = ? AND bucket = ?`, tc.id, start.UTC().Format("2006-01-02")).
			ScanContext(ctx, &ttl)
		if err != nil {
			t.Fatalf("%s %s: reading the TTL back: %v", tc.table, tc.id, err)
		}
		elapsed := int(time.Since(start)/time.Second) + 2 // the seconds since start, and the rounding down of both ends
		switch {
		case tc.want == 0 && ttl != nil:
			t.Errorf("%s %s: TTL %d, want none", tc.table, tc.id, *ttl)
		case tc.want != 0 && (ttl == nil || *ttl > tc.want || *ttl < tc.want-elapsed):
			t.Errorf("%s %s: TTL %v, want %d less the %d s the test took at most", tc.table, tc.id, ttl, tc.want, elapsed)
		}
	}
}
