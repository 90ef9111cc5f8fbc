package config

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Every key is declared once: a field of Config (or of a type below it) whose koanf tag is the
// key's name, and whose default, when it has one, is set in applyDefaults. The loader decodes by
// those tags, Load and ApplyDefaults apply those defaults, and Keys, Settings and the test that
// holds docs/CONFIG.md to the code all read the same two places: there is no list of keys to keep
// in step by hand.

// TopicPlaceholder stands for a topic's name in the key paths of Keys: topics.<name>.ttl.
const TopicPlaceholder = "<name>"

// Key is one key of the configuration.
type Key struct {
	// Path is the key path: "kafka.group"; "topics.<name>.ttl" for a topic's keys;
	// "topics.<name>.columns[].name" for a key of each element of a list.
	Path string
	// Kind says what the key holds: string, integer, boolean, duration, size, secret, list (of
	// strings), mapping (of strings) or filter (topics.<name>.where).
	Kind string
	// Default is the value a file without the key gets, spelt as a file would spell it; "" when
	// the key has none (it is required, optional, or derived from another key that has none).
	Default string
}

// Keys lists every key of the configuration in the order of the Config types, each with its
// default, as ApplyDefaults fills a config without any key (a topic's keys as they are for a topic
// that sets none of them).
//
// A key whose default applies only to some topics has it in Default all the same: bucket.missing_slice
// (sliced topics only) is "create".
func Keys() []Key {
	// One element in each list, so the keys of its elements show their defaults (clustering order).
	bare := Topic{Columns: []Column{{}}, Clustering: []Clustering{{}}}
	sliced := bare
	sliced.Bucket.Slice = "1d"
	c := Config{Topics: map[string]Topic{TopicPlaceholder: bare, TopicPlaceholder + "sliced": sliced}}
	c.ApplyDefaults()
	var out []Key
	index := map[string]int{}
	walkKeys("", reflect.ValueOf(c), false, func(path string, v reflect.Value) {
		k := Key{Path: path, Kind: kindOf(v.Type())}
		if v.IsValid() && !v.IsZero() {
			k.Default = formatValue(v)
		}
		index[path] = len(out)
		out = append(out, k)
	})
	var keys []Key
	for _, k := range out {
		if strings.HasPrefix(k.Path, "topics."+TopicPlaceholder+"sliced.") {
			continue // only there to be read below
		}
		if rest, ok := strings.CutPrefix(k.Path, "topics."+TopicPlaceholder+"."); ok && k.Default == "" && rest != "bucket.slice" {
			k.Default = out[index["topics."+TopicPlaceholder+"sliced."+rest]].Default
		}
		keys = append(keys, k)
	}
	return keys
}

// walkKeys calls leaf for every key below path in v, a value of a Config type. With each, every
// element of a list of mappings is walked with its index (columns[0].name); without, the elements
// are walked as one, path[], by the first of them or a zero one.
func walkKeys(path string, v reflect.Value, each bool, leaf func(path string, v reflect.Value)) {
	t := v.Type()
	switch {
	case isLeaf(t):
		leaf(path, v)
	case t.Kind() == reflect.Struct:
		for i := range t.NumField() {
			name := tagName(t.Field(i))
			if name == "" || !t.Field(i).IsExported() {
				continue
			}
			walkKeys(joinPath(path, name), v.Field(i), each, leaf)
		}
	case t.Kind() == reflect.Pointer: // an optional mapping (ttl_field): its keys, set or not
		elem := reflect.Zero(t.Elem())
		if !v.IsNil() {
			elem = v.Elem()
		}
		walkKeys(path, elem, each, leaf)
	case t.Kind() == reflect.Map: // topics
		keys := v.MapKeys()
		sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
		for _, k := range keys {
			walkKeys(joinPath(path, k.String()), v.MapIndex(k), each, leaf)
		}
	case t.Kind() == reflect.Slice && each: // a list of mappings: columns, clustering
		for i := range v.Len() {
			walkKeys(fmt.Sprintf("%s[%d]", path, i), v.Index(i), each, leaf)
		}
	case t.Kind() == reflect.Slice:
		elem := reflect.Zero(t.Elem())
		if v.Len() > 0 {
			elem = v.Index(0)
		}
		walkKeys(path+"[]", elem, each, leaf)
	}
}

// isLeaf reports whether a value of t is one key's whole value rather than a mapping of keys.
func isLeaf(t reflect.Type) bool {
	if reflect.PointerTo(t).Implements(textUnmarshalerType) || t == whereType {
		return true // a filter is one key's value, however deep it nests
	}
	switch t.Kind() {
	case reflect.String, reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return true
	case reflect.Slice:
		return t.Elem().Kind() == reflect.String
	case reflect.Map:
		return t.Elem().Kind() == reflect.String
	}
	return false
}

func kindOf(t reflect.Type) string {
	switch t {
	case durationType:
		return "duration"
	case bytesType:
		return "size"
	case secretType:
		return "secret"
	case whereType:
		return "filter"
	}
	switch t.Kind() {
	case reflect.Bool:
		return "boolean"
	case reflect.Slice:
		return "list"
	case reflect.Map:
		return "mapping"
	case reflect.String:
		return "string"
	}
	return "integer"
}

// formatValue spells a key's value as a YAML file would, with a secret redacted: "45s", "512KiB",
// "[a:9092, b:9092]", "{class: SimpleStrategy, replication_factor: 1}".
func formatValue(v reflect.Value) string {
	if !v.IsValid() {
		return ""
	}
	switch x := v.Interface().(type) {
	case *Where:
		if x == nil {
			return ""
		}
		return x.String()
	case Secret:
		if x.IsSet() {
			return redacted
		}
		return ""
	case Duration:
		return x.String()
	case Bytes:
		return x.String()
	case string:
		return x
	case bool:
		return strconv.FormatBool(x)
	case []string:
		return "[" + strings.Join(x, ", ") + "]"
	case map[string]string:
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(x)) {
			parts = append(parts, k+": "+x[k])
		}
		return "{" + strings.Join(parts, ", ") + "}"
	}
	if v.CanInt() {
		return strconv.FormatInt(v.Int(), 10)
	}
	return fmt.Sprint(v.Interface())
}
