package codec

import (
	"errors"

	"github.com/twmb/franz-go/pkg/sr"
)

// Magic is the first byte of a value in the Confluent wire format.
const Magic = 0

// header reads and writes the Confluent wire format.
var header sr.ConfluentHeader

// Frame splits a value in the Confluent wire format into its schema id and the bytes after the
// 5-byte prefix. Its errors are *Error with ReasonDecode, saying what is wrong.
func Frame(value []byte) (id int, body []byte, err error) {
	switch {
	case value == nil:
		return 0, nil, Decodef("the record value is null (a tombstone), not a schema-registry framed value")
	case len(value) == 0:
		return 0, nil, Decodef("the record value is empty (0 bytes); the wire format starts with magic byte 0 and a 4-byte schema id")
	case value[0] != Magic:
		return 0, nil, Decodef("wrong magic byte 0x%02x; the wire format starts with 0x00 (is the topic's codec right?)", value[0])
	case len(value) < 5:
		return 0, nil, Decodef("framing cut short: %d bytes, the magic byte and 4-byte schema id need 5", len(value))
	}
	id, body, err = header.DecodeID(value)
	if err != nil { // the checks above leave none; kept for a future change of the library
		return 0, nil, Decodef("framing: %v", err)
	}
	return id, body, nil
}

// maxIndexes bounds the message-index array: a message nested deeper than this is not a real one.
const maxIndexes = 64

// MessageIndexes reads the Protobuf message-index array at the start of body (the bytes after
// Frame): the path of the message in the schema's file, [0] for its first message. It returns
// the rest of body. Its errors are *Error with ReasonDecode.
func MessageIndexes(body []byte) (idx []int, rest []byte, err error) {
	idx, rest, err = header.DecodeIndex(body, maxIndexes)
	switch {
	case errors.Is(err, sr.ErrNotRegistered):
		return nil, nil, Decodef("protobuf message indexes: more than %d", maxIndexes)
	case err != nil:
		return nil, nil, Decodef("protobuf message indexes cut short or malformed: %v", err)
	}
	for _, i := range idx {
		if i < 0 {
			return nil, nil, Decodef("protobuf message indexes: negative index %d", i)
		}
	}
	return idx, rest, nil
}

// AppendFrame appends the Confluent wire-format prefix of schema id, and for Protobuf the message
// indexes (nil for the other formats), to b: what producers and tests write.
func AppendFrame(b []byte, id int, indexes []int) []byte {
	b, _ = header.AppendEncode(b, id, indexes) // its error is always nil
	return b
}
