package mapper

import (
	"github.com/bucketsink/sink/codec"
	"github.com/bucketsink/sink/codec/avro"
	"github.com/bucketsink/sink/codec/protobuf"
	"github.com/bucketsink/sink/config"
)

// codecs are the decoders of the schema-registry codecs (topics.<name>.codec) that compile a plan
// per writer schema. json and json_schema are read by the JSON codec (codec/json, decoder.setCodec);
// a new format is one package
// under codec and one entry here.
var codecs = map[string]codec.Codec{
	config.CodecAvro:     avro.Codec{},
	config.CodecProtobuf: protobuf.Codec{},
}
