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
	KMap // map<text, elem>

	numKinds = KMap + 1
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
}

// String is the kind's CQL name (text for text and varchar).
func (k Kind) String() string {
	if k == 0 || k >= numKinds {
		return "kind " + strconv.Itoa(int(k))
	}
	return kindInfo[k].name
}

// Width is the size of a value of kind k: 1 (tinyint, boolean), 2, 4, 8 or 16; 0 for the kinds
// whose values vary in size (text, ascii, blob, inet, decimal, varint and the collections).
func Width(k Kind) int {
	if k >= numKinds {
		return 0
	}
	return int(kindInfo[k].width)
}

// Collection reports whether k is list, set or map.
func (k Kind) Collection() bool { return k >= KList && k <= KMap }

// Type is a column type: a kind, and for a collection the kind of its elements (a map's values;
// its keys are always text).
type Type struct {
	Kind Kind
	Elem Kind
}

// Scalar is the Type of a scalar kind.
func Scalar(k Kind) Type { return Type{Kind: k} }

// String is the canonical CQL spelling: "int", "list<int>", "map<text, double>".
func (t Type) String() string {
	switch t.Kind {
	case KList, KSet:
		return t.Kind.String() + "<" + t.Elem.String() + ">"
	case KMap:
		return "map<text, " + t.Elem.String() + ">"
	}
	return t.Kind.String()
}

var scalarNames = map[string]Kind{
	"text": KText, "varchar": KText, "ascii": KASCII,
	"int": KInt, "bigint": KBigint, "smallint": KSmallint, "tinyint": KTinyint,
	"float": KFloat, "double": KDouble, "boolean": KBoolean,
	"timestamp": KTimestamp, "date": KDate, "uuid": KUUID, "timeuuid": KTimeUUID,
	"blob": KBlob, "inet": KInet, "decimal": KDecimal, "varint": KVarint,
}

// ParseType parses the column types the sink supports: the scalars, list<T>, set<T> and
// map<text, T> of a scalar T. White space and case are ignored, as config.ParseCQLType ignores
// them; varchar is text.
func ParseType(s string) (Type, error) {
	v := strings.ToLower(strings.Join(strings.Fields(s), ""))
	if k, ok := scalarNames[v]; ok {
		return Type{Kind: k}, nil
	}
	if open := strings.IndexByte(v, '<'); open > 0 && strings.HasSuffix(v, ">") {
		outer, inner := v[:open], v[open+1:len(v)-1]
		switch outer {
		case "list", "set":
			if k, ok := scalarNames[inner]; ok {
				ck := KList
				if outer == "set" {
					ck = KSet
				}
				return Type{Kind: ck, Elem: k}, nil
			}
		case "map":
			key, val, ok := strings.Cut(inner, ",")
			if ok && (key == "text" || key == "varchar") {
				if k, ok := scalarNames[val]; ok {
					return Type{Kind: KMap, Elem: k}, nil
				}
			}
		}
	}
	return Type{}, fmt.Errorf("%q is not a supported CQL type; use text, ascii, varchar, int, bigint, smallint, "+
		"tinyint, float, double, boolean, timestamp, date, uuid, timeuuid, blob, inet, decimal, varint, "+
		"list<T>, set<T> or map<text, T> of one of those", s)
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
		if kindInfo[k].cql == t {
			return kindInfo[k].name
		}
	}
	switch t {
	case gocql.TypeText:
		return "text"
	case gocql.TypeCounter:
		return "counter"
	case gocql.TypeTime:
		return "time"
	case gocql.TypeDuration:
		return "duration"
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
