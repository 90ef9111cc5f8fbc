package config

import (
	"fmt"
	"regexp"
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
	"timestamp", "date", "uuid", "timeuuid", "blob", "inet", "decimal", "varint",
)

// CQLType is a parsed column type.
type CQLType struct {
	Kind string // a scalar type, or "list", "set", "map"
	Elem string // element type of list and set, value type of map (keys are always text)
}

// String renders the type as CQL.
func (t CQLType) String() string {
	switch t.Kind {
	case "list", "set":
		return t.Kind + "<" + t.Elem + ">"
	case "map":
		return "map<text, " + t.Elem + ">"
	}
	return t.Kind
}

// IsCollection reports whether the type is a list, set or map (not allowed in the primary key).
func (t CQLType) IsCollection() bool { return t.Kind == "list" || t.Kind == "set" || t.Kind == "map" }

// ParseCQLType parses text, bigint, list<T>, set<T> and map<text, T> for the scalar types listed
// on Column.Type. Case and spaces inside the brackets are ignored.
func ParseCQLType(s string) (CQLType, error) {
	v := strings.ToLower(strings.Join(strings.Fields(s), ""))
	const hint = "use text, ascii, varchar, int, bigint, smallint, tinyint, float, double, boolean, timestamp, " +
		"date, uuid, timeuuid, blob, inet, decimal, varint, or list<T>, set<T>, map<text,T> of those"
	if scalarTypes[v] {
		return CQLType{Kind: v}, nil
	}
	for _, kind := range []string{"list", "set", "map"} {
		inner, ok := strings.CutPrefix(v, kind+"<")
		if !ok {
			continue
		}
		inner, ok = strings.CutSuffix(inner, ">")
		if !ok {
			break
		}
		if kind == "map" {
			key, val, ok := strings.Cut(inner, ",")
			if !ok || (key != "text" && key != "varchar") {
				return CQLType{}, fmt.Errorf("%q: map keys must be text (JSON object keys are strings); use map<text, T>", s)
			}
			inner = val
		}
		if !scalarTypes[inner] {
			return CQLType{}, fmt.Errorf("%q: element type %q is not supported; %s", s, inner, hint)
		}
		return CQLType{Kind: kind, Elem: inner}, nil
	}
	return CQLType{}, fmt.Errorf("%q is not a supported CQL type; %s", s, hint)
}
