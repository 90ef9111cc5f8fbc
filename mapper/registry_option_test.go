package mapper

import (
	"strings"
	"testing"

	"github.com/bucketsink/sink/config"
)

// TestNewBuildsNoRegistryClient guards the mapper's boundary: it builds no network client. A topic whose
// codec or key_codec reads writer schemas needs the client the caller gives (WithRegistry); without
// one New refuses, naming the entry, where it used to build a client of schema_registry itself.
func TestNewBuildsNoRegistryClient(t *testing.T) {
	for _, tc := range []struct {
		name, want string
		mutate     func(*config.Topic)
	}{
		{"codec", "topics.readings: codec avro reads writer schemas from a schema registry", func(tp *config.Topic) { tp.Codec = config.CodecAvro }},
		{"key_codec", "topics.readings: key_codec protobuf reads writer schemas from a schema registry", func(tp *config.Topic) {
			tp.Bucket, tp.Clustering = config.Bucket{Width: config.BucketNone}, nil
			tp.OnTombstone, tp.KeyCodec = config.OnTombstoneDelete, config.CodecProtobuf
		}},
	} {
		c := baseConfig()
		tp := c.Topics["readings"]
		tc.mutate(&tp)
		c.Topics["readings"] = tp
		c.SchemaRegistry.URLs = []string{"http://registry.invalid"}
		c.ApplyDefaults()
		if err := c.Validate(); err != nil {
			t.Fatal(err)
		}
		if _, err := New(c); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: New without a registry client: %v, want %q", tc.name, err, tc.want)
		}
		if _, err := New(c, WithRegistry(keyRegistry())); err != nil {
			t.Errorf("%s: New with a registry client: %v", tc.name, err)
		}
	}
}
