package config

import (
	"context"
	"encoding"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"
)

// decoder copies the merged koanf map into a Config. It is strict where mapstructure is lenient:
// every unknown key and every value of the wrong shape becomes an error naming its full key
// path, and all of them are reported together instead of the first one alone.
type decoder struct {
	ctx      context.Context // checked now and then: a large config is interruptible
	steps    int
	stopped  bool
	problems []error
	bad      []string // the key paths of problems, without the variable
	// origin maps a key path set from the environment to the variable that set it, so an error
	// about that key points at the variable rather than at a YAML line that does not exist.
	origin map[string]string
	// set records every key path that carried a non-null value, so defaults fill only keys the
	// operator left out (an explicit `linger: 0` or `address: ""` means what it says).
	set map[string]bool
}

var (
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
	durationType        = reflect.TypeFor[Duration]()
	bytesType           = reflect.TypeFor[Bytes]()
	secretType          = reflect.TypeFor[Secret]()
)

// scalarForm is a struct a key may also spell as one word, as a short form of a mapping
// (`bucket: none` for `bucket: {width: none}`).
type scalarForm interface {
	fromScalar(s string) bool // stores the short form s; false when s is not one
	scalarForms() string      // the short forms, for a message
}

func (d *decoder) fail(path, format string, args ...any) {
	d.bad = append(d.bad, path)
	if env := d.originOf(path); env != "" {
		path += " (from " + env + ")"
	}
	d.problems = append(d.problems, &FieldError{Path: path, Problem: fmt.Sprintf(format, args...)})
}

// originOf names the variable that set path or, for a misspelt level, a key below it.
func (d *decoder) originOf(path string) string {
	if env, ok := d.origin[path]; ok {
		return env
	}
	var found string
	for p, env := range d.origin {
		if strings.HasPrefix(p, path+".") && (found == "" || env < found) {
			found = env
		}
	}
	return found
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// decode stores v (a value produced by the YAML parser or the environment) into dst.
func (d *decoder) decode(path string, v any, dst reflect.Value) {
	if v == nil {
		return // `key:` with no value: treat as absent so the default applies
	}
	if d.stopped {
		return
	}
	if d.steps++; d.steps%4096 == 0 && d.ctx != nil && d.ctx.Err() != nil {
		d.stopped = true // load reports the interruption
		return
	}
	d.set[path] = true
	if dst.CanAddr() && dst.Addr().Type().Implements(textUnmarshalerType) {
		d.decodeText(path, v, dst)
		return
	}
	switch dst.Kind() {
	case reflect.Struct:
		m, ok := v.(map[string]any)
		if s, isText := v.(string); isText && dst.CanAddr() {
			if f, short := dst.Addr().Interface().(scalarForm); short {
				if !f.fromScalar(s) {
					d.fail(path, "expected a mapping of keys or %s, got %s", f.scalarForms(), describe(v))
					return
				}
				// The keys the short form stands for were given, as if spelt out.
				walkKeys(path, dst, false, func(p string, v reflect.Value) {
					if !v.IsZero() {
						d.set[p] = true
					}
				})
				return
			}
		}
		if !ok {
			d.fail(path, "expected a mapping of keys, got %s", describe(v))
			return
		}
		fields := structKeys(dst.Type())
		for _, k := range sortedKeys(m) {
			idx, ok := fields[k]
			if !ok {
				meant, hint := suggestKey(k, dst.Type())
				d.fail(joinPath(path, k), "unknown key%s", hint)
				if meant != "" {
					// The key meant is missing for the same reason: its own problems would repeat this one.
					d.bad = append(d.bad, joinPath(path, meant))
				}
				continue
			}
			d.decode(joinPath(path, k), m[k], dst.Field(idx))
		}
	case reflect.Map:
		m, ok := v.(map[string]any)
		if !ok {
			d.fail(path, "expected a mapping, got %s", describe(v))
			return
		}
		if dst.IsNil() {
			dst.Set(reflect.MakeMap(dst.Type()))
		}
		for _, k := range sortedKeys(m) {
			elem := reflect.New(dst.Type().Elem()).Elem()
			if old := dst.MapIndex(reflect.ValueOf(k)); old.IsValid() {
				elem.Set(old)
			}
			d.decode(joinPath(path, k), m[k], elem)
			dst.SetMapIndex(reflect.ValueOf(k), elem)
		}
	case reflect.Slice:
		var items []any
		switch x := v.(type) {
		case []any:
			items = x
		case string:
			if dst.Type().Elem().Kind() != reflect.String {
				d.fail(path, "expected a list of mappings, got a string (lists of mappings can only be set in the YAML file)")
				return
			}
			// Comma lists are how the environment spells a list: SINK_KAFKA__BROKERS=a:9092,b:9092.
			for _, part := range strings.Split(x, ",") {
				if part = strings.TrimSpace(part); part != "" {
					items = append(items, part)
				}
			}
		case bool, int, int64, uint64, float64:
			if dst.Type().Elem().Kind() != reflect.String {
				d.fail(path, "expected a list, got %s", describe(v))
				return
			}
			items = []any{x} // a lone scalar is a one-element list: `id: device_id`
		default:
			d.fail(path, "expected a list, got %s", describe(v))
			return
		}
		s := reflect.MakeSlice(dst.Type(), len(items), len(items))
		for i, item := range items {
			d.decode(fmt.Sprintf("%s[%d]", path, i), item, s.Index(i))
		}
		dst.Set(s)
	case reflect.String:
		switch x := v.(type) {
		case string:
			dst.SetString(x)
		case bool, int, int64, uint64, float64:
			dst.SetString(fmt.Sprint(x))
		case time.Time:
			// YAML reads an unquoted 2006-01-02 as a date; a layout must be quoted.
			d.fail(path, "expected a string, got %s; quote the value", describe(v))
		default:
			d.fail(path, "expected a string, got %s", describe(v))
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, ok := toInt(v)
		if !ok {
			d.fail(path, "expected an integer, got %s", describe(v))
			return
		}
		if dst.OverflowInt(n) {
			d.fail(path, "%d is out of range", n)
			return
		}
		dst.SetInt(n)
	case reflect.Bool:
		switch x := v.(type) {
		case bool:
			dst.SetBool(x)
		case string:
			b, err := strconv.ParseBool(strings.TrimSpace(x))
			if err != nil {
				d.fail(path, "expected true or false, got %q", x)
				return
			}
			dst.SetBool(b)
		default:
			d.fail(path, "expected true or false, got %s", describe(v))
		}
	default:
		// Every field type of Config is handled above; reaching here is a programming error in
		// this package, reported rather than panicking on an operator.
		d.fail(path, "cannot decode into %s", dst.Type())
	}
}

// decodeText feeds scalars to the field's UnmarshalText (Duration, Bytes, Secret).
func (d *decoder) decodeText(path string, v any, dst reflect.Value) {
	var text string
	switch x := v.(type) {
	case string:
		text = x
	case int, int64, uint64:
		switch dst.Type() {
		case durationType:
			if n, _ := toInt(x); n != 0 {
				d.fail(path, "%v has no unit; write e.g. \"%vs\", \"%vm\" or \"%vd\"", x, x, x, x)
				return
			}
		}
		text = fmt.Sprint(x) // Bytes: a plain number of bytes; Secret: digits are a fine password
	case float64:
		if dst.Type() == durationType {
			d.fail(path, "%v has no unit; write e.g. \"%vs\" or \"%vd\"", x, x, x)
			return
		}
		text = strconv.FormatFloat(x, 'f', -1, 64)
	case bool:
		if dst.Type() != secretType {
			d.fail(path, "expected %s, got %s", textKind(dst.Type()), describe(v))
			return
		}
		text = strconv.FormatBool(x)
	default:
		d.fail(path, "expected %s, got %s", textKind(dst.Type()), describe(v))
		return
	}
	if err := dst.Addr().Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(text)); err != nil {
		d.fail(path, "%v", err)
	}
}

func textKind(t reflect.Type) string {
	switch t {
	case durationType:
		return "a duration such as 30s or 90d"
	case bytesType:
		return "a size such as 64MiB or 100MB"
	}
	return "a string"
}

func toInt(v any) (int64, bool) {
	switch x := v.(type) {
	case int:
		return int64(x), true
	case int64:
		return x, true
	case uint64:
		if x > math.MaxInt64 {
			return 0, false
		}
		return int64(x), true
	case float64:
		if x != math.Trunc(x) || math.Abs(x) > 1<<53 {
			return 0, false
		}
		return int64(x), true
	case string:
		n, err := strconv.ParseInt(strings.TrimSpace(x), 10, 64)
		return n, err == nil
	}
	return 0, false
}

// describe names the shape of a parsed value for error messages.
func describe(v any) string {
	switch x := v.(type) {
	case map[string]any:
		return "a mapping"
	case []any:
		return "a list"
	case string:
		return strconv.Quote(x)
	case time.Time:
		return "a date (" + x.Format(time.RFC3339) + ")"
	case bool, int, int64, uint64, float64:
		return fmt.Sprint(x)
	}
	return fmt.Sprintf("%T", v)
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// structKeys maps each koanf tag of t to its field index.
func structKeys(t reflect.Type) map[string]int {
	m := make(map[string]int, t.NumField())
	for i := range t.NumField() {
		if tag := tagName(t.Field(i)); tag != "" {
			m[tag] = i
		}
	}
	return m
}

func tagName(f reflect.StructField) string {
	tag, _, _ := strings.Cut(f.Tag.Get("koanf"), ",")
	if tag == "-" {
		return ""
	}
	return tag
}

// suggestKey proposes the key the operator most likely meant: a close spelling at the same
// level, or the same key one level down ("width" under a topic is "bucket.width").
func suggestKey(key string, t reflect.Type) (meant, hint string) {
	var names []string
	var nested []string
	for i := range t.NumField() {
		f := t.Field(i)
		name := tagName(f)
		if name == "" {
			continue
		}
		names = append(names, name)
		if f.Type.Kind() == reflect.Struct && !f.Type.Implements(textUnmarshalerType) {
			for j := range f.Type.NumField() {
				if sub := tagName(f.Type.Field(j)); sub == key {
					nested = append(nested, name+"."+sub)
				}
			}
		}
	}
	if best := Closest(key, names); best != "" {
		return best, fmt.Sprintf("; did you mean %q?", best)
	}
	if len(nested) > 0 {
		return nested[0], fmt.Sprintf("; did you mean %q?", nested[0])
	}
	return "", "; valid keys here: " + strings.Join(names, ", ")
}

// Closest returns the candidate within a small edit distance of s, or "". The allowance grows
// with length so short keys ("ttl") do not match unrelated short keys. Config keys and the
// command line's flags both suggest the one meant with it.
func Closest(s string, candidates []string) string {
	best, bestDist := "", math.MaxInt
	ls := strings.ToLower(s)
	for _, c := range candidates {
		d := editDistance(ls, strings.ToLower(c))
		limit := 1 + len(c)/4
		if d <= limit && d < bestDist {
			best, bestDist = c, d
		}
	}
	return best
}

// editDistance is the optimal-string-alignment distance: insertions, deletions, substitutions
// and adjacent transpositions ("bukcet") each cost one.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}
