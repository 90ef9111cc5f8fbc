package cassandra

import (
	"context"
	"go/parser"
	"go/token"
	"strconv"
	"testing"
)

// TestSchemaCheckBuildsNoMapper: the DDL, the schema check (`sink schema`, the start check of
// `sink run`), the session and the error classification take a table's shape from package schema,
// never from the mapper, so storage does not depend on decoding.
func TestSchemaCheckBuildsNoMapper(t *testing.T) {
	for _, f := range []string{"schema.go", "session.go", "errors.go", "doc.go"} {
		parsed, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range parsed.Imports {
			if path, _ := strconv.Unquote(imp.Path.Value); path == "github.com/bucketsink/sink/mapper" {
				t.Errorf("%s imports the mapper; take the table from package schema", f)
			}
		}
	}
}

// TestCheckSchemaNamesAnUnknownTopic: a topic that is not configured is an error naming the ones
// that are, found before any table is read.
func TestCheckSchemaNamesAnUnknownTopic(t *testing.T) {
	cfg := loadExample(t, "../examples/iot-sensors.yaml")
	_, err := CheckSchema(context.Background(), nil, cfg, []string{"nope"}, schemaNow)
	if err == nil || err.Error() != "topics.nope: no such topic; configured: readings" {
		t.Fatalf("CheckSchema of an unknown topic: %v", err)
	}
}
