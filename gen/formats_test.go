package gen

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/bucketsink/sink/codec"
	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/mapper"
)

// sampleSchemas serves the sample schemas under fixed ids, as a registry would.
type sampleSchemas map[int]*codec.Schema

func (s sampleSchemas) Schema(_ context.Context, id int) (*codec.Schema, error) {
	if sc, ok := s[id]; ok {
		return sc, nil
	}
	return nil, fmt.Errorf("schema id %d: %w", id, codec.ErrUnknownSchema)
}

var sampleIDs = map[string]int{CodecAvro: 1, CodecProtobuf: 2, CodecJSONSchema: 3}

// sampleMapper maps the sample events' topic read with codecName, the way examples and the demo configure it.
func sampleMapper(t *testing.T, codecName string) *mapper.Mapper {
	t.Helper()
	c := &config.Config{
		Kafka:     config.Kafka{Brokers: []string{"127.0.0.1:9092"}},
		Cassandra: config.Cassandra{Hosts: []string{"127.0.0.1"}, Keyspace: "telemetry"},
		Topics: map[string]config.Topic{"readings": {
			Topic: "sensor-readings", Codec: codecName, ID: []string{"device_id"},
			Time:   config.EventTime{Source: "field", Field: "ts", Format: "rfc3339"},
			Bucket: config.Bucket{Width: "1d", Key: "text"},
			Table:  "readings",
			Columns: []config.Column{
				{Name: "device_id", Type: "text", Field: "device_id"},
				{Name: "reading_time", Type: "timestamp", Source: "event_time"},
				{Name: "temperature", Type: "double", Field: "temperature", Required: true},
				{Name: "humidity", Type: "double", Field: "humidity"},
				{Name: "battery", Type: "double", Field: "battery"},
				{Name: "site_id", Type: "text", Field: "site.id"},
			},
			Clustering: []config.Clustering{{Column: "reading_time", Order: "desc"}},
			Accept:     config.Accept{Before: math.MaxInt64, After: math.MaxInt64},
		}},
	}
	if codecName != CodecJSON {
		c.SchemaRegistry.URLs = []string{"http://registry.invalid"}
	}
	c.ApplyDefaults()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	reg := sampleSchemas{}
	for name, id := range sampleIDs {
		s, _ := Schema(name)
		reg[id] = &codec.Schema{ID: id, Type: s.Type.String(), Text: s.Schema}
	}
	m, err := mapper.New(c, mapper.WithRegistry(reg))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// Every format's record of an event maps to the row its JSON record maps to; a deliberately bad event is bad
// in every format.
func TestEncodedEventsMapToTheRowsOfTheirJSON(t *testing.T) {
	jm := sampleMapper(t, CodecJSON)
	for _, name := range []string{CodecAvro, CodecProtobuf, CodecJSONSchema} {
		t.Run(name, func(t *testing.T) {
			m := sampleMapper(t, name)
			enc, err := NewEncoder(name, sampleIDs[name])
			if err != nil {
				t.Fatal(err)
			}
			g := mustNew(t, Config{Seed: 3, Start: t0, BadFraction: 0.2, Entities: 50})
			bad := 0
			for i := range 2000 {
				ev := g.Next()
				value, err := enc.Append(nil, ev)
				if err != nil {
					t.Fatal(err)
				}
				rec := func(v []byte) mapper.Record {
					return mapper.Record{Topic: "sensor-readings", Partition: 1, Offset: int64(i), Key: ev.Key, Value: v, Timestamp: ev.Time}
				}
				want, wantErr := jm.Map(rec(ev.Value))
				got, gotErr := m.Map(rec(value))
				if ev.Defect != Good {
					bad++
					var re *mapper.RecordError
					if !errors.As(gotErr, &re) {
						t.Fatalf("record %d (%v): %v, want a bad record", i, ev.Defect, gotErr)
					}
					continue
				}
				if wantErr != nil || gotErr != nil {
					t.Fatalf("record %d: json %v, %s %v", i, wantErr, name, gotErr)
				}
				if string(got.Packed) != string(want.Packed) || got.Key != want.Key || !got.EventTime().Equal(want.EventTime()) {
					t.Fatalf("record %d: %s row %+v\n json row %+v", i, name, got, want)
				}
			}
			if bad == 0 {
				t.Fatal("no deliberately bad records were generated")
			}
		})
	}
}

func TestRoundedReadingsAreTheJSONNumbers(t *testing.T) {
	g := mustNew(t, Config{Seed: 9, Start: t0})
	for range 1000 {
		ev := g.Next()
		want := fmt.Sprintf(`"temperature":%.2f,"humidity":%.1f,"battery":%.2f`, ev.Temperature, ev.Humidity, ev.Battery)
		if !bytes.Contains(ev.Value, []byte(want)) {
			t.Fatalf("%s does not hold %s", ev.Value, want)
		}
	}
}
