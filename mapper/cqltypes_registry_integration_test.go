package mapper

import (
	"testing"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/bucketsink/sink/internal/testenv"
)

// Through the real registry: an Avro record and a Protobuf message registered there, read by the
// writer schemas it hands back, feed the UDT, vector, time, duration (and for Avro tuple, for
// Protobuf integer-keyed map) columns with the same packed row as the JSON record of the same event.
func TestIntegrationNewerCQLTypesThroughTheRegistry(t *testing.T) {
	reg := realRegistry(t)
	prefix := testenv.Name(t, "newer")

	avroID := registerAs(t, reg, prefix+"-avro-value", sr.TypeAvro, avroNewerSchema).ID
	jm, am := newMapper(t, withNewerColumns), newAvroMapper(t, reg, withNewerColumns)
	want, err := jm.Map(rec(`{"device_id":"d","ts":"2024-01-15T14:37:22Z","temperature":1,"site":{"id":"s"},` +
		`"home":{"street":"Main","zip":3,"tags":["a","b"]},"pair":[7,null],"emb":[0.5,1],` +
		`"at":"00:00:01.5","atext":"15:04:05.123456789","dur":"P1DT2H"}`))
	if err != nil {
		t.Fatal(err)
	}
	r := rec("")
	r.Value = avroValue(t, avroNewerSchema, avroID, avroNewerNative())
	got, err := am.Map(r)
	if err != nil {
		t.Fatal(err)
	}
	if string(got.Packed) != string(want.Packed) {
		t.Errorf("avro row %x\n json row %x", got.Packed, want.Packed)
	}

	protoID := registerAs(t, reg, prefix+"-proto-value", sr.TypeProtobuf, protoNewer).ID
	pj := newMapper(t, withProtoNewerColumnsJSON)
	want, err = pj.Map(rec(protoNewerFullJSON))
	if err != nil {
		t.Fatal(err)
	}
	r = rec("")
	r.Value = protoNewerValueOf(t, protoID, protoNewerFull)
	if got, err = protoNewerMapperOf(t, reg).Map(r); err != nil {
		t.Fatal(err)
	}
	if string(got.Packed) != string(want.Packed) {
		t.Errorf("protobuf row %x\n     json row %x", got.Packed, want.Packed)
	}
}
