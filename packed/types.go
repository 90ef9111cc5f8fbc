package packed

import (
	"fmt"
	"strconv"
	"strings"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
)

// Kind is a CQL column type the sink writes: a scalar, or a collection whose element kind is kept
// beside it in a Type. A packed value's tag is its Kind.
type Kind uint8

const (
	KText Kind = iota + 1 // text and varchar
	KASCII
	KInt
	KBigint
	KSmallint
	KTinyint
	KFloat
	KDouble
	KBoolean
	KTimestamp
	KDate
	KUUID
	KTimeUUID
	KBlob
	KInet
	KDecimal
	KVarint
	KList
	KSet
	KMap // map<key, elem>: Type.Key is the key's kind, text when 0

	// The kinds below are handed over as wire bytes, like the collections. A tuple, a UDT and a
	// vector keep what they hold in Type.Comp; a packed value carries only their tag.
	KTime     // time: nanoseconds since midnight
	KDuration // duration: months, days and nanoseconds
	KTuple    // tuple<T1, T2, ...>, written frozen
	KUDT      // a user-defined type, written frozen
	KVector   // vector<T, n> (Cassandra 5.0)

	numKinds = KVector + 1
)

// kindInfo is what the format knows about each kind.
var kindInfo = [numKinds]struct {
	name  string
	width uint8 // the fixed size of a value, 0 when it carries its length
	cql   gocql.Type
}{
	KText: {"text", 0, gocql.TypeVarchar}, KASCII: {"ascii", 0, gocql.TypeAscii},
	KInt: {"int", 4, gocql.TypeInt}, KBigint: {"bigint", 8, gocql.TypeBigInt},
	KSmallint: {"smallint", 2, gocql.TypeSmallInt}, KTinyint: {"tinyint", 1, gocql.TypeTinyInt},
	KFloat: {"float", 4, gocql.TypeFloat}, KDouble: {"double", 8, gocql.TypeDouble},
	KBoolean: {"boolean", 1, gocql.TypeBoolean}, KTimestamp: {"timestamp", 8, gocql.TypeTimestamp},
	KDate: {"date", 4, gocql.TypeDate}, KUUID: {"uuid", 16, gocql.TypeUUID}, KTimeUUID: {"timeuuid", 16, gocql.TypeTimeUUID},
	KBlob: {"blob", 0, gocql.TypeBlob}, KInet: {"inet", 0, gocql.TypeInet},
	KDecimal: {"decimal", 0, gocql.TypeDecimal}, KVarint: {"varint", 0, gocql.TypeVarint},
	KList: {"list", 0, gocql.TypeList}, KSet: {"set", 0, gocql.TypeSet}, KMap: {"map", 0, gocql.TypeMap},
	KTime: {"time", 0, gocql.TypeTime}, KDuration: {"duration", 0, gocql.TypeDuration},
	KTuple: {"tuple", 0, gocql.TypeTuple}, KUDT: {"udt", 0, gocql.TypeUDT}, KVector: {"vector", 0, gocql.TypeCustom},
}

// String is the kind's CQL name (text for text and varchar).
func (k Kind) String() string {
	if k == 0 || k >= numKinds {
		return "kind " + strconv.Itoa(int(k))
	}
	return kindInfo[k].name
}

// Width is the size of a value of kind k: 1 (tinyint, boolean), 2, 4, 8 or 16; 0 for the kinds
// whose values vary in size (text, ascii, blob, inet, decimal, varint, the collections, and time,
// duration, tuple, UDT and vector, which are handed over as wire bytes).
func Width(k Kind) int {
	if k >= numKinds {
		return 0
	}
	return int(kindInfo[k].width)
}

// Collection reports whether k is list, set or map.
func (k Kind) Collection() bool { return k >= KList && k <= KMap }

// Type is a column type: a kind, for a collection the kind of its elements (a map's values) and of
// a map's keys, and for a tuple, a UDT or a vector what it holds.
type Type struct {
	Kind Kind
	Elem Kind
	Key  Kind       // a map's key kind; 0 is text
	Comp *Composite // a tuple's, a UDT's or a vector's parts; nil for the other kinds
}

// Composite is what a tuple, a UDT or a vector holds. A tuple has Types; a UDT Name, Fields and
// Types (one per field); a vector one Type, its elements', and Dim.
type Composite struct {
	Name   string   // the UDT's name, as CQL folds it (lower case)
	Fields []string // the UDT's field names, as configured (CQL folds them; a record's members match them as they are)
	Types  []Type   // the element or field types, none of them a tuple, UDT or vector
	Dim    int      // a vector's dimension
}

// Composite reports whether k is a tuple, a UDT or a vector.
func (k Kind) Composite() bool { return k >= KTuple && k <= KVector }

// MapKey is the kind of a map's keys: Key, or text when it is 0.
func (t Type) MapKey() Kind {
	if t.Key == 0 {
		return KText
	}
	return t.Key
}

// Scalar is the Type of a scalar kind.
func Scalar(k Kind) Type { return Type{Kind: k} }

// String is the canonical CQL spelling, not frozen: "int", "list<int>", "map<text, double>",
// "tuple<int, text>", "vector<float, 3>", and a UDT's name.
func (t Type) String() string {
	switch t.Kind {
	case KList, KSet:
		return t.Kind.String() + "<" + t.Elem.String() + ">"
	case KMap:
		return "map<" + t.MapKey().String() + ", " + t.Elem.String() + ">"
	case KTuple:
		if t.Comp == nil {
			return "tuple"
		}
		parts := make([]string, len(t.Comp.Types))
		for i, e := range t.Comp.Types {
			parts[i] = e.String()
		}
		return "tuple<" + strings.Join(parts, ", ") + ">"
	case KUDT:
		if t.Comp == nil {
			return "udt"
		}
		return t.Comp.Name
	case KVector:
		if t.Comp == nil || len(t.Comp.Types) != 1 {
			return "vector"
		}
		return "vector<" + t.Comp.Types[0].String() + ", " + strconv.Itoa(t.Comp.Dim) + ">"
	}
	return t.Kind.String()
}

var scalarNames = map[string]Kind{
	"text": KText, "varchar": KText, "ascii": KASCII,
	"int": KInt, "bigint": KBigint, "smallint": KSmallint, "tinyint": KTinyint,
	"float": KFloat, "double": KDouble, "boolean": KBoolean,
	"timestamp": KTimestamp, "date": KDate, "uuid": KUUID, "timeuuid": KTimeUUID,
	"blob": KBlob, "inet": KInet, "decimal": KDecimal, "varint": KVarint,
	"time": KTime, "duration": KDuration,
}

// ParseType parses the column types the sink supports: the scalars, time and duration; list<T>,
// set<T> and map<K, T> of a scalar T, K a scalar but a float, double, blob, decimal or boolean
// (text for the JSON object keys and Avro map keys that feed them); tuple<T1, T2, ...> of scalars,
// time, duration and collections; vector<T, n> of float, double, int or bigint, n from 1 to
// MaxVectorDim. frozen<...> around a tuple or a collection is accepted and dropped (the sink
// creates them frozen). A UDT is not spelt in a type: see ParseUDT. White space and case are
// ignored, as config.ParseCQLType ignores them; varchar is text.
func ParseType(s string) (Type, error) {
	v := strings.ToLower(strings.Join(strings.Fields(s), ""))
	if t, ok := parseType(v, true); ok {
		return t, nil
	}
	return Type{}, fmt.Errorf("%q is not a supported CQL type; use text, ascii, varchar, int, bigint, smallint, "+
		"tinyint, float, double, boolean, timestamp, date, time, duration, uuid, timeuuid, blob, inet, decimal, varint, "+
		"list<T>, set<T> or map<K, T> of one of those (K not float, double, blob, decimal or boolean), "+
		"tuple<T1, T2, ...>, or vector<float, n> (also double, int, bigint)", s)
}

// MaxVectorDim bounds a vector's dimension: Cassandra's own limit is far higher, but a record
// carrying more numbers than this in one value is not what the sink is for.
const MaxVectorDim = 8192

// mapKeyKinds are the kinds a map's keys may have: those a JSON object key or an Avro map key, both
// text, spells exactly.
var mapKeyKinds = map[Kind]bool{
	KText: true, KASCII: true, KInt: true, KBigint: true, KSmallint: true, KTinyint: true,
	KTimestamp: true, KDate: true, KUUID: true, KTimeUUID: true, KInet: true, KVarint: true,
}

// parseType parses v (lower case, no spaces); composite allows a tuple or vector at this level.
func parseType(v string, composite bool) (Type, bool) {
	if k, ok := scalarNames[v]; ok {
		return Type{Kind: k}, true
	}
	if inner, ok := cutType(v, "frozen"); ok {
		t, ok := parseType(inner, composite)
		return t, ok && (t.Kind.Collection() || t.Kind == KTuple)
	}
	if inner, ok := cutType(v, "list"); ok {
		k, ok := scalarNames[inner]
		return Type{Kind: KList, Elem: k}, ok
	}
	if inner, ok := cutType(v, "set"); ok {
		k, ok := scalarNames[inner]
		return Type{Kind: KSet, Elem: k}, ok && k != KDuration // Cassandra orders a set's elements; a duration has no order
	}
	if inner, ok := cutType(v, "map"); ok {
		key, val, ok := strings.Cut(inner, ",")
		kk, kok := scalarNames[key]
		vk, vok := scalarNames[val]
		if !ok || !kok || !vok || !mapKeyKinds[kk] {
			return Type{}, false
		}
		t := Type{Kind: KMap, Elem: vk}
		if kk != KText {
			t.Key = kk
		}
		return t, true
	}
	if !composite {
		return Type{}, false
	}
	if inner, ok := cutType(v, "tuple"); ok {
		parts := splitTop(inner)
		c := &Composite{Types: make([]Type, len(parts))}
		for i, p := range parts {
			var ok bool
			if c.Types[i], ok = parseType(p, false); !ok {
				return Type{}, false
			}
		}
		return Type{Kind: KTuple, Comp: c}, len(parts) > 0
	}
	if inner, ok := cutType(v, "vector"); ok {
		elem, dim, ok := strings.Cut(inner, ",")
		k := scalarNames[elem]
		n, err := strconv.Atoi(dim)
		if !ok || err != nil || n < 1 || n > MaxVectorDim || (k != KFloat && k != KDouble && k != KInt && k != KBigint) {
			return Type{}, false
		}
		return Type{Kind: KVector, Comp: &Composite{Types: []Type{{Kind: k}}, Dim: n}}, true
	}
	return Type{}, false
}

// cutType returns the inside of name<...> in v.
func cutType(v, name string) (string, bool) {
	inner, ok := strings.CutPrefix(v, name+"<")
	if !ok {
		return "", false
	}
	return strings.CutSuffix(inner, ">")
}

// splitTop splits v at the commas outside angle brackets.
func splitTop(v string) []string {
	var out []string
	depth, at := 0, 0
	for i := 0; i < len(v); i++ {
		switch v[i] {
		case '<':
			depth++
		case '>':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, v[at:i])
				at = i + 1
			}
		}
	}
	return append(out, v[at:])
}

// ParseUDT is the type of a UDT called name (frozen<name> too) whose fields are names, of types
// (ParseType's, but not a tuple or a vector). The name is folded to lower case, as CQL folds unquoted
// identifiers; the caller checked the names as identifiers.
func ParseUDT(name string, names, types []string) (Type, error) {
	if len(names) == 0 || len(names) != len(types) {
		return Type{}, fmt.Errorf("UDT %s: give at least one field, each with a name and a type", name)
	}
	n := strings.ToLower(strings.TrimSpace(name))
	if inner, ok := cutType(strings.ReplaceAll(n, " ", ""), "frozen"); ok {
		n = inner
	}
	c := &Composite{Name: n, Fields: make([]string, len(names)), Types: make([]Type, len(types))}
	for i := range names {
		c.Fields[i] = names[i]
		t, ok := parseType(strings.ToLower(strings.Join(strings.Fields(types[i]), "")), false)
		if !ok {
			return Type{}, fmt.Errorf("UDT %s field %s: %q is not a supported field type; use a scalar, time, duration or a collection of scalars", name, names[i], types[i])
		}
		c.Types[i] = t
	}
	return Type{Kind: KUDT, Comp: c}, nil
}

// CQLType is the native type id of kind k.
func CQLType(k Kind) gocql.Type {
	if k == 0 || k >= numKinds {
		return gocql.TypeCustom
	}
	return kindInfo[k].cql
}

// TypeName names a native type id for messages.
func TypeName(t gocql.Type) string {
	for k := KText; k < numKinds; k++ {
		if kindInfo[k].cql == t && k != KVector { // a vector is one of the custom types
			return kindInfo[k].name
		}
	}
	switch t {
	case gocql.TypeText:
		return "text"
	case gocql.TypeCounter:
		return "counter"
	}
	return "type id 0x" + strconv.FormatUint(uint64(t), 16)
}

// MustTypes parses CQL type names (see ParseType) written in code, such as the types of a row a
// test builds; it panics on a name that is not a supported type.
func MustTypes(names ...string) []Type {
	ts := make([]Type, len(names))
	for i, name := range names {
		t, err := ParseType(name)
		if err != nil {
			panic(err)
		}
		ts[i] = t
	}
	return ts
}
