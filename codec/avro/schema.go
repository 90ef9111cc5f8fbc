package avro

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/bucketsink/sink/codec"
)

// kind is an Avro type.
type kind uint8

const (
	tNull kind = iota
	tBoolean
	tInt
	tLong
	tFloat
	tDouble
	tBytes
	tString
	tRecord
	tEnum
	tArray
	tMap
	tUnion
	tFixed
)

var kindNames = [...]string{"null", "boolean", "int", "long", "float", "double", "bytes", "string", "record", "enum", "array", "map", "union", "fixed"}

func (k kind) String() string { return kindNames[k] }

var primitives = map[string]kind{
	"null": tNull, "boolean": tBoolean, "int": tInt, "long": tLong, "float": tFloat, "double": tDouble,
	"bytes": tBytes, "string": tString,
}

// node is one Avro type of a parsed writer schema. Named types are shared: a recursive record
// points at itself.
type node struct {
	kind     kind
	logical  string // the logical type when valid for kind ("decimal", "timestamp-micros", ...); "" otherwise
	scale    int    // decimal
	size     int    // fixed
	name     string // full name of a record, enum or fixed
	fields   []field
	symbols  [][]byte // enum symbols, as the bytes a text column takes
	items    *node    // array items, map values
	branches []*node  // union
	width    width    // whether a value takes any bytes (markWidths)
	// connect is the Kafka Connect logical type Confluent's AvroConverter records beside a type
	// ("connect.name": io.debezium.time.MicroTimestamp, ...), which ConnectName reads.
	connect string
}

// width says whether a value of a type takes bytes of the body.
type width uint8

const (
	widthUnknown width = iota
	widthMarking       // markWidths is inside it (a record that holds itself)
	widthZero          // null, a fixed of size 0, a record of only such fields: nothing to read
	widthSome
)

type field struct {
	name string
	typ  *node
}

// describe names n for messages: "long (timestamp-millis)", "record sensors.Site".
func (n *node) describe() string {
	s := n.kind.String()
	if n.name != "" {
		s += " " + n.name
	}
	if n.logical != "" {
		s += " (" + n.logical + ")"
	}
	return s
}

// parser parses one writer schema and the schemas it references into nodes.
type parser struct {
	names map[string]*node // full name -> named type
	// refs is the state of each referenced schema, by its text: refParsing while its own references
	// are walked, refParsed once it is parsed. A schema referenced along many paths (a diamond: two
	// references that both reference a third) is parsed once, not once per path, which would be
	// exponential in the depth of the graph.
	refs   map[string]refState
	parsed int // texts parsed, for tests
}

type refState uint8

const (
	refParsing refState = iota + 1
	refParsed
)

// maxRefDepth bounds how deep references nest.
const maxRefDepth = 32

// parseSchema parses s, after the schemas it references (which define named types it may use).
func parseSchema(s *codec.Schema) (*node, error) {
	return newParser().schema(s)
}

func newParser() *parser {
	return &parser{names: map[string]*node{}, refs: map[string]refState{}}
}

// schema parses s after its references.
func (p *parser) schema(s *codec.Schema) (*node, error) {
	if err := p.references(s, 0); err != nil {
		return nil, err
	}
	root, err := p.parseText(s.Text)
	if err != nil {
		return nil, err
	}
	markWidths(root)
	return root, nil
}

// markWidths sets the width of n and of every type under it, each named type once. A record that
// holds itself other than through an array, a map or a union has no finite value; it is taken as
// taking bytes, so that skipping it still recurses (and meets maxDepth).
func markWidths(n *node) width {
	switch n.width {
	case widthUnknown:
	case widthMarking:
		return widthSome
	default:
		return n.width
	}
	n.width = widthMarking
	w := widthSome
	switch n.kind {
	case tNull:
		w = widthZero
	case tFixed:
		if n.size == 0 {
			w = widthZero
		}
	case tRecord:
		w = widthZero
		for _, f := range n.fields {
			if markWidths(f.typ) != widthZero {
				w = widthSome
			}
		}
	case tArray, tMap:
		markWidths(n.items)
	case tUnion:
		for _, b := range n.branches {
			markWidths(b)
		}
	}
	n.width = w
	return w
}

// references parses the schemas s references, each after its own references, each once.
func (p *parser) references(s *codec.Schema, depth int) error {
	if depth > maxRefDepth {
		return fmt.Errorf("references nest deeper than %d", maxRefDepth)
	}
	for _, r := range s.References {
		if r.Schema == nil {
			return fmt.Errorf("reference %q has no schema", r.Name)
		}
		switch p.refs[r.Schema.Text] {
		case refParsed:
			continue
		case refParsing:
			return fmt.Errorf("reference %q refers back to a schema that references it", r.Name)
		}
		p.refs[r.Schema.Text] = refParsing
		if err := p.references(r.Schema, depth+1); err != nil {
			return err
		}
		if _, err := p.parseText(r.Schema.Text); err != nil {
			return fmt.Errorf("reference %q: %w", r.Name, err)
		}
		p.refs[r.Schema.Text] = refParsed
	}
	return nil
}

func (p *parser) parseText(text string) (*node, error) {
	p.parsed++
	var v any
	if err := json.Unmarshal([]byte(text), &v); err != nil {
		return nil, fmt.Errorf("not an Avro schema (JSON): %w", err)
	}
	return p.parse(v, "")
}

// fullName is name in namespace ns, unless it has a dot of its own.
func fullName(name, ns string) string {
	if strings.Contains(name, ".") || ns == "" {
		return name
	}
	return ns + "." + name
}

func (p *parser) parse(v any, ns string) (*node, error) {
	switch t := v.(type) {
	case string:
		if k, ok := primitives[t]; ok {
			return &node{kind: k}, nil
		}
		if n, ok := p.names[fullName(t, ns)]; ok {
			return n, nil
		}
		if n, ok := p.names[t]; ok {
			return n, nil
		}
		return nil, fmt.Errorf("unknown type %q", t)
	case []any:
		n := &node{kind: tUnion}
		for _, b := range t {
			bn, err := p.parse(b, ns)
			if err != nil {
				return nil, err
			}
			n.branches = append(n.branches, bn)
		}
		if len(n.branches) == 0 {
			return nil, fmt.Errorf("an empty union")
		}
		return n, nil
	case map[string]any:
		return p.parseObject(t, ns)
	}
	return nil, fmt.Errorf("not a type: %v", v)
}

func (p *parser) parseObject(o map[string]any, ns string) (*node, error) {
	typ, _ := o["type"].(string)
	if typ == "" {
		if inner, ok := o["type"]; ok { // {"type": {"type": "array", ...}} or a union
			return p.parse(inner, ns)
		}
		return nil, fmt.Errorf("a type object without \"type\"")
	}
	var n *node
	switch typ {
	case "record", "error", "enum", "fixed":
		name, _ := o["name"].(string)
		if name == "" {
			return nil, fmt.Errorf("a %s without a name", typ)
		}
		if space, ok := o["namespace"].(string); ok && !strings.Contains(name, ".") {
			ns = space
		}
		full := fullName(name, ns)
		if i := strings.LastIndexByte(full, '.'); i >= 0 {
			ns = full[:i]
		} else {
			ns = ""
		}
		n = &node{name: full}
		p.names[full] = n
		switch typ {
		case "enum":
			n.kind = tEnum
			syms, _ := o["symbols"].([]any)
			for _, s := range syms {
				str, _ := s.(string)
				n.symbols = append(n.symbols, []byte(str))
			}
		case "fixed":
			n.kind = tFixed
			size, ok := o["size"].(float64)
			if !ok || size < 0 || size != float64(int(size)) {
				return nil, fmt.Errorf("fixed %s: size is not a whole number", full)
			}
			n.size = int(size)
		default:
			n.kind = tRecord
			fs, _ := o["fields"].([]any)
			for _, f := range fs {
				fo, _ := f.(map[string]any)
				fname, _ := fo["name"].(string)
				if fname == "" {
					return nil, fmt.Errorf("record %s: a field without a name", full)
				}
				ft, err := p.parse(fo["type"], ns)
				if err != nil {
					return nil, fmt.Errorf("record %s, field %s: %w", full, fname, err)
				}
				n.fields = append(n.fields, field{name: fname, typ: ft})
			}
		}
	case "array", "map":
		n = &node{kind: tArray}
		key := "items"
		if typ == "map" {
			n.kind, key = tMap, "values"
		}
		items, err := p.parse(o[key], ns)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", typ, key, err)
		}
		n.items = items
	default:
		k, ok := primitives[typ]
		if !ok {
			// {"type": "Name"}: a reference to a named type.
			return p.parse(typ, ns)
		}
		n = &node{kind: k}
	}
	n.logical = logicalType(n, o)
	if c, ok := o["connect.name"].(string); ok && n.connect == "" {
		n.connect = c
	}
	if n.logical == "decimal" {
		scale, _ := o["scale"].(float64)
		n.scale = int(scale)
	}
	return n, nil
}

// logicalType is o's logicalType when it is valid for n's type; the spec says an invalid one is
// ignored and the value read as its underlying type.
func logicalType(n *node, o map[string]any) string {
	lt, _ := o["logicalType"].(string)
	ok := false
	switch lt {
	case "decimal":
		scale, _ := o["scale"].(float64)
		prec, _ := o["precision"].(float64)
		ok = (n.kind == tBytes || n.kind == tFixed) && prec > 0 && scale >= 0 && scale <= prec && scale == float64(int(scale))
	case "uuid":
		ok = n.kind == tString || (n.kind == tFixed && n.size == 16)
	case "date", "time-millis":
		ok = n.kind == tInt
	case "time-micros", "timestamp-millis", "timestamp-micros", "timestamp-nanos",
		"local-timestamp-millis", "local-timestamp-micros", "local-timestamp-nanos":
		ok = n.kind == tLong
	}
	if !ok {
		return ""
	}
	return lt
}
