package config

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Names that reach CQL are checked here, so nothing from the config is ever spliced into a
// statement unchecked: unquoted identifiers only, no reserved words, types from a closed list.

var (
	// Cassandra limits keyspace and table names to 48 characters.
	tableNameRE  = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9_]{0,47}$`)
	columnNameRE = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9_]*$`)
	// Kafka topic names: legal characters and at most 249 of them.
	kafkaTopicRE = regexp.MustCompile(`^[a-zA-Z0-9._-]{1,249}$`)
)

// MaxNameLen is Cassandra's limit on keyspace and table names.
const MaxNameLen = 48

// reservedWords are the CQL keywords that cannot be used as unquoted identifiers, plus KEY,
// which parses but collides with the legacy thrift column name and confuses tooling.
var reservedWords = toSet(
	"add", "allow", "alter", "and", "apply", "asc", "authorize", "batch", "begin", "by",
	"columnfamily", "create", "default", "delete", "desc", "describe", "drop", "entries", "execute", "from",
	"full", "grant", "if", "in", "index", "infinity", "insert", "into", "is", "key", "keyspace", "limit",
	"materialized", "mbean", "mbeans", "modify", "nan", "norecursive", "not", "null", "of", "on", "or",
	"order", "primary", "rename", "replace", "revoke", "schema", "select", "set", "table", "to", "token",
	"truncate", "unlogged", "unset", "update", "use", "using", "view", "where", "with",
)

// Reserved reports whether name is a CQL word a column, table or keyspace cannot be named unquoted.
func Reserved(name string) bool { return reservedWords[strings.ToLower(name)] }

func toSet(words ...string) map[string]bool {
	m := make(map[string]bool, len(words))
	for _, w := range words {
		m[w] = true
	}
	return m
}

// checkName returns what is wrong with a keyspace, table or column name, or "".
func checkName(kind, name string, re *regexp.Regexp) string {
	switch {
	case name == "":
		return fmt.Sprintf("empty; name the %s", kind)
	case reservedWords[strings.ToLower(name)]:
		return fmt.Sprintf("%q is a reserved CQL word; rename the %s (e.g. %s_%s)", name, kind, strings.ToLower(name), suffixFor(kind))
	case re == tableNameRE && len(name) > MaxNameLen:
		return fmt.Sprintf("%q is %d characters; Cassandra allows at most %d", name, len(name), MaxNameLen)
	case !re.MatchString(name):
		return fmt.Sprintf("%q is not a valid CQL identifier; use a letter followed by letters, digits or underscores", name)
	case re == tableNameRE && name != strings.ToLower(name):
		// The statements name keyspaces and tables unquoted, which CQL folds to lower case; the schema
		// check would look for the name as written and find nothing.
		return fmt.Sprintf("%q has upper-case letters; CQL folds unquoted names to lower case and the sink writes them unquoted, so write %q", name, strings.ToLower(name))
	}
	return ""
}

func suffixFor(kind string) string {
	switch kind {
	case "keyspace":
		return "ks"
	case "table":
		return "data"
	}
	return "value"
}

// scalarTypes are the CQL types a column may have, and the element types of collections.
var scalarTypes = toSet(
	"text", "ascii", "varchar", "int", "bigint", "smallint", "tinyint", "float", "double", "boolean",
	"timestamp", "date", "uuid", "timeuuid", "blob", "inet", "decimal", "varint", "time", "duration",
)

// mapKeyTypes are the types a map's keys may have: the ones a JSON object key or an Avro map key,
// both text, spells exactly.
var mapKeyTypes = toSet("text", "varchar", "ascii", "int", "bigint", "smallint", "tinyint", "timestamp", "date",
	"uuid", "timeuuid", "inet", "varint")

// vectorElems are the element types of a vector.
var vectorElems = toSet("float", "double", "int", "bigint")

// MaxVectorDim bounds a vector's dimension (packed.MaxVectorDim, which a test keeps equal).
const MaxVectorDim = 8192

// CQLType is a parsed column type.
type CQLType struct {
	Kind string // a scalar type, or "list", "set", "map", "tuple", "vector", "udt"
	Elem string // element type of list and set, value type of map
	Key  string // key type of map ("text" for map<text, T>)
	// Arity is a tuple's number of elements; 0 for the other types.
	Arity int
	// canon is the canonical spelling of a tuple, a vector or a UDT (its name).
	canon string
}

// String renders the type as CQL, not frozen.
func (t CQLType) String() string {
	switch t.Kind {
	case "list", "set":
		return t.Kind + "<" + t.Elem + ">"
	case "map":
		return "map<" + t.Key + ", " + t.Elem + ">"
	case "tuple", "vector", "udt":
		return t.canon
	}
	return t.Kind
}

// IsCollection reports whether the type is a list, set or map (not allowed in the primary key).
func (t CQLType) IsCollection() bool { return t.Kind == "list" || t.Kind == "set" || t.Kind == "map" }

// KeyProblem says why a column of type t cannot be in the primary key, or "" when it can.
func (t CQLType) KeyProblem() string {
	switch {
	case t.IsCollection():
		return "a collection"
	case t.Kind == "tuple" || t.Kind == "udt" || t.Kind == "vector":
		return "a " + t.Kind
	case t.Kind == "time" || t.Kind == "duration":
		return "a " + t.Kind + ", which the sink does not take in a key"
	}
	return ""
}

const typeHint = "use text, ascii, varchar, int, bigint, smallint, tinyint, float, double, boolean, timestamp, " +
	"date, time, duration, uuid, timeuuid, blob, inet, decimal, varint, list<T>, set<T>, map<K, T> of those " +
	"(K text, ascii, an integer type, timestamp, date, uuid, timeuuid, inet or varint), tuple<T1, T2, ...>, " +
	"vector<float, n> (or double, int, bigint), or a UDT: a name with fields"

// ParseCQLType parses the column types listed on Column.Type (a UDT is parsed by ParseUDT). Case and
// spaces inside the brackets are ignored; frozen<...> around a collection or a tuple is dropped.
func ParseCQLType(s string) (CQLType, error) {
	v := strings.ToLower(strings.Join(strings.Fields(s), ""))
	t, why := parseCQLType(v, true)
	if r, ok := strings.CutPrefix(why, "is not"); ok {
		return CQLType{}, fmt.Errorf("%q is not%s", s, r)
	} else if why != "" {
		return CQLType{}, fmt.Errorf("%q: %s", s, why)
	}
	return t, nil
}

// parseCQLType parses v (lower case, no spaces): the type, or why it is not one.
func parseCQLType(v string, composite bool) (CQLType, string) {
	if scalarTypes[v] {
		return CQLType{Kind: v}, ""
	}
	if inner, ok := cutType(v, "frozen"); ok {
		t, why := parseCQLType(inner, composite)
		if why == "" && !t.IsCollection() && t.Kind != "tuple" {
			return CQLType{}, "frozen<...> takes a collection or a tuple"
		}
		return t, why
	}
	for _, kind := range []string{"list", "set"} {
		if inner, ok := cutType(v, kind); ok {
			switch {
			case !scalarTypes[inner]:
				return CQLType{}, fmt.Sprintf("element type %q is not supported; %s", inner, typeHint)
			case kind == "set" && inner == "duration":
				return CQLType{}, "a set cannot hold durations (they have no order); use list<duration>"
			}
			return CQLType{Kind: kind, Elem: inner}, ""
		}
	}
	if inner, ok := cutType(v, "map"); ok {
		key, val, ok := strings.Cut(inner, ",")
		switch {
		case !ok || !scalarTypes[key] || !scalarTypes[val]:
			return CQLType{}, "a map's key and value types must be scalars; " + typeHint
		case !mapKeyTypes[key]:
			return CQLType{}, fmt.Sprintf("map keys cannot be %s (the sink reads a map's keys from text, a JSON object's or an Avro map's, "+
				"and takes the key types whose text names one value); use text, ascii, an integer type, timestamp, date, uuid, timeuuid, inet or varint", key)
		}
		return CQLType{Kind: "map", Key: text(key), Elem: val}, ""
	}
	if !composite {
		if strings.HasPrefix(v, "tuple<") || strings.HasPrefix(v, "vector<") {
			return CQLType{}, "a tuple or a vector cannot be inside another type"
		}
		return CQLType{}, "is not a supported type; " + typeHint
	}
	if inner, ok := cutType(v, "tuple"); ok {
		parts := splitTop(inner)
		canon := make([]string, len(parts))
		for i, p := range parts {
			t, why := parseCQLType(p, false)
			if why != "" {
				return CQLType{}, fmt.Sprintf("tuple element %d: %s", i, why)
			}
			t.Kind, t.Elem = text(t.Kind), text(t.Elem)
			canon[i] = t.String()
		}
		return CQLType{Kind: "tuple", Arity: len(parts), canon: "tuple<" + strings.Join(canon, ", ") + ">"}, ""
	}
	if inner, ok := cutType(v, "vector"); ok {
		elem, dim, _ := strings.Cut(inner, ",")
		n, err := strconv.Atoi(dim)
		switch {
		case !vectorElems[elem]:
			return CQLType{}, fmt.Sprintf("a vector's elements must be float, double, int or bigint, not %q", elem)
		case err != nil || n < 1 || n > MaxVectorDim:
			return CQLType{}, fmt.Sprintf("a vector's dimension must be a whole number from 1 to %d, not %q", MaxVectorDim, dim)
		}
		return CQLType{Kind: "vector", canon: "vector<" + elem + ", " + strconv.Itoa(n) + ">"}, ""
	}
	return CQLType{}, "is not a supported CQL type; " + typeHint
}

// text is a type name with varchar spelt text.
func text(k string) string {
	if k == "varchar" {
		return "text"
	}
	return k
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

// builtinTypes are names a UDT cannot take.
var builtinTypes = toSet("list", "set", "map", "tuple", "vector", "frozen", "counter", "udt")

// ParseUDT parses the type of a column with fields: a UDT called col.Type (an identifier, written
// frozen) whose fields are col.Fields, in order, each of a type ParseCQLType takes but a tuple or a
// vector. Its String is the UDT's name in lower case.
func ParseUDT(col Column) (CQLType, error) {
	name := strings.ToLower(strings.TrimSpace(col.Type))
	name = strings.TrimSuffix(strings.TrimPrefix(name, "frozen<"), ">")
	switch {
	case !tableNameRE.MatchString(name):
		return CQLType{}, fmt.Errorf("%q is not a valid UDT name (a column with fields has a UDT type: its name, a letter followed by letters, digits or underscores)", col.Type)
	case reservedWords[name] || scalarTypes[name] || builtinTypes[name]:
		return CQLType{}, fmt.Errorf("%q cannot name a UDT: it is a CQL word or type; name the UDT e.g. %s_t", col.Type, name)
	}
	return CQLType{Kind: "udt", canon: name}, nil
}
