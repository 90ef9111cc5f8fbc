package json

import (
	"fmt"

	"github.com/valyala/fastjson"
)

// ConnectSchema is a Kafka Connect schema as Kafka Connect's JsonConverter writes it beside a payload
// (schemas.enable): {"type": "struct", "fields": [{"field": "id", "type": "int64"}, ...], "name": ...}.
// Debezium's change events carry one in every record of a topic written with that converter; package
// mapper reads from it what each field of a change is (a Debezium temporal or decimal type) and so how
// to convert it exactly.
type ConnectSchema struct{ root *fastjson.Value }

// ConnectField is the schema of one field: its Connect type (int32, int64, string, bytes, struct, ...),
// its logical name (io.debezium.time.MicroTimestamp, org.apache.kafka.connect.data.Decimal, ...; "" for
// none) and its parameters (a Decimal's "scale").
type ConnectField struct {
	Type, Name string
	Parameters map[string]string
}

// ParseConnectSchema parses a Kafka Connect schema in JsonConverter's JSON form.
func ParseConnectSchema(b []byte) (*ConnectSchema, error) {
	var p fastjson.Parser
	v, err := p.ParseBytes(b)
	if err != nil {
		return nil, err
	}
	if v.Type() != fastjson.TypeObject {
		return nil, fmt.Errorf("a JSON %s, not a schema object", v.Type())
	}
	return &ConnectSchema{root: v}, nil
}

// Field is the schema of the field at path, walked through struct schemas by their fields' names;
// false when the schema has no such field.
func (s *ConnectSchema) Field(path []string) (ConnectField, bool) {
	v := s.root
	for _, name := range path {
		var next *fastjson.Value
		for _, f := range v.GetArray("fields") {
			if string(f.GetStringBytes("field")) == name {
				next = f
				break
			}
		}
		if next == nil {
			return ConnectField{}, false
		}
		v = next
	}
	f := ConnectField{Type: string(v.GetStringBytes("type")), Name: string(v.GetStringBytes("name"))}
	if o := v.GetObject("parameters"); o != nil {
		f.Parameters = map[string]string{}
		o.Visit(func(k []byte, x *fastjson.Value) {
			if b, err := x.StringBytes(); err == nil {
				f.Parameters[string(k)] = string(b)
			} else {
				f.Parameters[string(k)] = x.String()
			}
		})
	}
	return f, true
}
