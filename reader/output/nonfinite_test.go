package output

import (
	"encoding/csv"
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"

	"gopkg.in/inf.v0"

	"github.com/bucketsink/sink/reader"
	"github.com/bucketsink/sink/schema"
)

// TestJSONPrintsNaNAndInfinitiesAndEndsWithTheCursor guards against the JSON format stopping at the first
// float JSON cannot hold (encoding/json refuses NaN and the infinities, which Avro and Protobuf records can
// carry): such a value is printed as the string "NaN", "Infinity" or "-Infinity", in a collection too, and
// the document goes on to the page's cursor. A decimal is a number, also in a collection; a null one null.
func TestJSONPrintsNaNAndInfinitiesAndEndsWithTheCursor(t *testing.T) {
	cols := []schema.Column{{Name: "d", Type: "double"}, {Name: "f", Type: "float"}, {Name: "l", Type: "list<double>"},
		{Name: "m", Type: "map<text, float>"}, {Name: "dl", Type: "list<decimal>"}, {Name: "de", Type: "decimal"}}
	rows := []map[string]any{
		{"d": math.NaN(), "f": float32(math.Inf(1)), "l": []float64{1.5, math.Inf(-1), math.NaN()},
			"m": map[string]float32{"a": float32(math.NaN()), "b": 0.25}, "dl": []*inf.Dec{inf.NewDec(15, 1)}, "de": (*inf.Dec)(nil)},
		{"d": math.Inf(-1), "f": float32(2.5), "l": []float64{}, "m": map[string]float32{}, "dl": nil, "de": inf.NewDec(-7, 3)},
	}
	scan := func(fn func(reader.Row) error) (reader.Page, error) {
		for _, r := range rows {
			if err := fn(reader.Row{Values: r}); err != nil {
				return reader.Page{}, err
			}
		}
		return reader.Page{Cursor: "next-page"}, nil
	}
	var out strings.Builder
	if _, n, err := Print(&out, "json", cols, scan); err != nil || n != 2 {
		t.Fatalf("%d rows printed, %v; want 2 and no error\n%s", n, err, out.String())
	}
	var doc struct {
		Rows []struct {
			Values map[string]any `json:"values"`
		} `json:"rows"`
		Cursor string `json:"cursor"`
	}
	dec := json.NewDecoder(strings.NewReader(out.String()))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("%v in\n%s", err, out.String())
	}
	if doc.Cursor != "next-page" || len(doc.Rows) != 2 {
		t.Fatalf("%d rows, cursor %q; want 2 and the page's cursor", len(doc.Rows), doc.Cursor)
	}
	want := []map[string]any{
		{"d": "NaN", "f": "Infinity", "l": []any{json.Number("1.5"), "-Infinity", "NaN"},
			"m": map[string]any{"a": "NaN", "b": json.Number("0.25")}, "dl": []any{json.Number("1.5")}, "de": nil},
		{"d": "-Infinity", "f": json.Number("2.5"), "l": []any{}, "m": map[string]any{}, "dl": nil, "de": json.Number("-0.007")},
	}
	for i, r := range doc.Rows {
		if !reflect.DeepEqual(r.Values, want[i]) {
			t.Errorf("row %d: %#v\nwant %#v", i, r.Values, want[i])
		}
	}

	// The table and CSV print the same names, and a collection as JSON.
	for _, format := range []string{"csv", "table"} {
		var out strings.Builder
		if _, _, err := Print(&out, format, cols, scan); err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		if format == "csv" {
			recs, err := csv.NewReader(strings.NewReader(out.String())).ReadAll()
			if err != nil || len(recs) != 3 {
				t.Fatalf("csv: %v\n%s", err, out.String())
			}
			if got, want := recs[1], []string{"NaN", "Infinity", `[1.5,"-Infinity","NaN"]`, `{"a":"NaN","b":0.25}`, "[1.5]", ""}; !reflect.DeepEqual(got, want) {
				t.Errorf("csv row: %q, want %q", got, want)
			}
		} else if !strings.Contains(out.String(), "NaN        Infinity  [1.5,\"-Infinity\",\"NaN\"]  {\"a\":\"NaN\",\"b\":0.25}  [1.5]") {
			t.Errorf("table:\n%s", out.String())
		}
	}
}
