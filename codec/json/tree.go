package json

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/valyala/fastjson"

	"github.com/bucketsink/sink/codec"
	"github.com/bucketsink/sink/packed"
)

// The parsed tree: the path of every record the scan does not map (decode.go). fastjson parses the
// record into a tree of its values, each field is looked up in it along its path (fastjson's Get:
// the first of duplicate keys, an array indexed by a number), and converted (convert.go). A value
// that does not fit its column is a Value of State Bad, its words in Err; a document that is not a
// JSON object is Decode's error. Every JSON row and error message is this path's: the scan maps a
// record only when it would give the same row.

// tree is the working memory of one parse, pooled: a fastjson parser is not safe for concurrent use.
type tree struct {
	parser  fastjson.Parser
	arena   fastjson.Arena
	num     numbers
	entries []mapEntry
}

var trees = sync.Pool{New: func() any { return new(tree) }}

// maxKept bounds the buffers a pooled tree keeps, so one huge record does not pin its size.
const maxKept = 64 << 10

func putTree(t *tree) {
	if cap(t.num.text) > maxKept {
		t.num.text = nil
	}
	if cap(t.entries) > maxKept/32 {
		t.entries = nil
	}
	trees.Put(t)
}

// ErrNotObject is the error of a Kafka key that a key plan (Codec.Key) reads as JSON and that is not
// a JSON object while it must name several fields: the caller says what the key should be.
var ErrNotObject = &codec.Error{Reason: codec.ReasonDecode, Err: errors.New("the key is not a JSON object")}

// decodeTree decodes body through the parsed tree into out; its errors are *codec.Error of reason decode
// about the whole document.
func (p *plan) decodeTree(body []byte, out []codec.Value, buf []byte) ([]byte, error) {
	t := trees.Get().(*tree)
	buf, err := p.readTree(t, body, out, buf)
	putTree(t) // not deferred: a defer costs every record, and a tree a panic loses is only garbage
	return buf, err
}

// readTree is decodeTree with the tree t to parse into.
func (p *plan) readTree(t *tree, body []byte, out []codec.Value, buf []byte) ([]byte, error) {
	root, err := p.parse(body, t)
	if err != nil {
		return buf, err
	}
	if root.Type() != fastjson.TypeObject {
		// A key plan: a scalar is the value of its lone whole field (a Kafka key as a JSON string or number).
		if len(p.fields) != 1 || !p.fields[0].Whole {
			return buf, ErrNotObject
		}
		return t.convert(&p.fields[0], root, &out[0], buf), nil
	}
	fields := p.fields
	out = out[:len(fields)]
	for i := range fields {
		f := &fields[i]
		buf = t.convert(f, root.Get(f.Path...), &out[i], buf)
	}
	return buf, nil
}

// parse parses body into its tree; a value plan also checks that it is an object holding no number
// outside JSON's grammar.
func (p *plan) parse(body []byte, t *tree) (*fastjson.Value, error) {
	if !p.key {
		if body == nil {
			// Kafka's null value: a tombstone, which compacted topics use to delete a key.
			return nil, codec.Decodef("decoding JSON: the record value is null (a tombstone), not a JSON object")
		}
		if len(body) == 0 {
			return nil, codec.Decodef("decoding JSON: the record value is empty (0 bytes), not a JSON object")
		}
	}
	t.num.checked = false
	root, err := t.parser.ParseBytes(body)
	if err != nil {
		return nil, &codec.Error{Reason: codec.ReasonDecode, Err: notJSON(err)}
	}
	if p.key {
		return root, nil
	}
	if root.Type() != fastjson.TypeObject {
		return nil, codec.Decodef("decoding JSON: the value is a JSON %s, not an object", root.Type())
	}
	if bad, path := lenientNumber(root, t); bad != nil {
		const why = "a number outside JSON's grammar (NaN, Infinity, +1, 1-2 and the like), refused in any field"
		return nil, &codec.Error{Reason: codec.ReasonDecode, Err: &codec.ValueError{Plain: "decoding JSON: the value holds " + why,
			Quoted: fmt.Sprintf("decoding JSON: field %q is %s, %s", path, show(bad), why)}}
	}
	t.num.checked = true
	return root, nil
}

// convert sets v to value x of field f (nil: the record has none), its bytes appended to buf, which it
// returns. A value that does not fit is State Bad.
func (t *tree) convert(f *codec.Field, x *fastjson.Value, v *codec.Value, buf []byte) []byte {
	switch {
	case x == nil:
		v.State = codec.Absent
		return buf
	case x.Type() == fastjson.TypeNull:
		v.State = codec.Null
		return buf
	}
	v.State = codec.Set
	var pr *problem
	switch k := f.Type.Kind; {
	case k == packed.KTimestamp || k == packed.KDate: // a column, or the event time
		v.T, pr = instantOf(f, x, &t.num)
	case codec.Wire(f.Type):
		at := len(buf)
		if buf, pr = appendConverted(buf, f.Type, x, &t.num, &t.entries); pr.ok() {
			v.B = buf[at:]
		} else {
			buf = buf[:at]
		}
	case k == packed.KText || k == packed.KASCII:
		var b []byte
		if b, pr = textOf(k, x, &t.num); pr.ok() {
			at := len(buf)
			buf = append(buf, b...) // b is the parser's or t.num: the Value keeps a copy
			v.B = buf[at:]
		}
	case k == packed.KDouble || k == packed.KFloat:
		v.F, pr = floatOf(k, x, &t.num)
	case k == packed.KUUID || k == packed.KTimeUUID:
		v.U, pr = uuidOf(k, x)
	default: // tinyint to bigint: codec.Wire takes every other kind
		v.N, pr = intOf(k, x, &t.num)
	}
	if !pr.ok() {
		v.State, v.Err = codec.Bad, pr.valueError()
	}
	return buf
}

// DecodeString sets v to the value of field f as if the record held string s (valid or not as UTF-8)
// as a JSON string at its path: a Kafka key read as text (key_codec text) names its entity this way.
// Its bytes are appended to buf, which it returns.
func DecodeString(f *codec.Field, s []byte, v *codec.Value, buf []byte) []byte {
	t := trees.Get().(*tree)
	defer putTree(t)
	t.arena.Reset()
	t.num.checked = false
	return t.convert(f, t.arena.NewStringBytes(s), v, buf)
}

// lenientNumber finds a number fastjson takes but JSON does not have (fastjson's number token is any run
// of digits, signs, dots and e, or inf and nan: NaN, Infinity, +1, 1-2) anywhere in the document, read
// by a column or not. The scan refuses such a document wherever the number is, so this path does too: a
// record is JSON or it is not, whichever fields a topic reads. It returns the number and its path
// (a.b[2].c; in quoted messages only, as keys can be data), or nil.
func lenientNumber(v *fastjson.Value, t *tree) (*fastjson.Value, string) {
	switch v.Type() {
	case fastjson.TypeNumber:
		t.num.text = v.MarshalTo(t.num.text[:0])
		if !IsNumber(bstr(t.num.text)) {
			return v, ""
		}
	case fastjson.TypeArray:
		a, _ := v.Array()
		for i, e := range a {
			if bad, path := lenientNumber(e, t); bad != nil {
				return bad, "[" + strconv.Itoa(i) + "]" + dotted(path)
			}
		}
	case fastjson.TypeObject:
		o, _ := v.Object()
		var bad *fastjson.Value
		var path string
		o.Visit(func(key []byte, e *fastjson.Value) {
			if bad == nil {
				if bad, path = lenientNumber(e, t); bad != nil {
					path = string(key) + dotted(path)
				}
			}
		})
		return bad, path
	}
	return nil, ""
}

// dotted joins the rest of a path to its key: "" stays "", "[2]" is an index, anything else a key.
func dotted(rest string) string {
	if rest == "" || rest[0] == '[' {
		return rest
	}
	return "." + rest
}

// notJSON is the error of a value fastjson cannot parse. fastjson's messages quote the document (the
// unexpected value, the unparsed tail); the plain message keeps what is wrong and not the text.
func notJSON(err error) *codec.ValueError {
	quoted := "decoding JSON: " + err.Error()
	plain, _, _ := strings.Cut(quoted, "; unparsed tail: ")
	plain, _, _ = strings.Cut(plain, `: "`)
	return &codec.ValueError{Plain: plain, Quoted: quoted}
}
