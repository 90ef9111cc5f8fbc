package avro

import (
	"errors"
	"strings"
	"testing"

	"github.com/bucketsink/sink/codec"
)

// TestAsTextReadsEveryScalarAsAFilterComparesIt guards codec.Field.AsText: a string, an enum's symbol, an
// int, a long, a boolean, a float and a double each read as their text; a type with no scalar text is a
// SchemaError naming the field.
func TestAsTextReadsEveryScalarAsAFilterComparesIt(t *testing.T) {
	const schema = `{"type": "record", "name": "E", "fields": [
		{"name": "s", "type": "string"}, {"name": "e", "type": {"type": "enum", "name": "K", "symbols": ["A", "B"]}},
		{"name": "i", "type": "int"}, {"name": "l", "type": "long"}, {"name": "b", "type": "boolean"},
		{"name": "f", "type": "float"}, {"name": "d", "type": "double"}, {"name": "raw", "type": "bytes"}]}`
	names := []string{"s", "e", "i", "l", "b", "f", "d"}
	fields := make([]codec.Field, len(names))
	for i, n := range names {
		fields[i] = fieldOf(n, "where", "text")
		fields[i].AsText = true
	}
	p := compile(t, schema, fields)
	body := encode(t, schema, map[string]any{"s": "x y", "e": "B", "i": int32(-7), "l": int64(1) << 40, "b": true,
		"f": float32(0.1), "d": 7.0, "raw": []byte{1}})
	out := make([]codec.Value, len(fields))
	if _, err := p.Decode(body, out, nil); err != nil {
		t.Fatal(err)
	}
	want := []string{"x y", "B", "-7", "1099511627776", "true", "0.1", "7"}
	for i := range want {
		if out[i].State != codec.Set || string(out[i].B) != want[i] {
			t.Errorf("field %s: %v %q, want %q", names[i], out[i].State, out[i].B, want[i])
		}
	}
	raw := fieldOf("raw", "where", "text")
	raw.AsText = true
	_, err := Codec{}.Compile(&codec.Schema{ID: 3, Type: "AVRO", Text: schema}, []codec.Field{raw})
	var se *codec.SchemaError
	if !errors.As(err, &se) || se.Field != "raw" || !strings.Contains(err.Error(), "cannot compare as text") {
		t.Errorf("a bytes field read as text: %v, want a SchemaError naming it", err)
	}
}
