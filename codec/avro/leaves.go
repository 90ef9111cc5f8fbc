package avro

import (
	"errors"
	"fmt"

	"github.com/bucketsink/sink/codec"
	"github.com/bucketsink/sink/packed"
)

// Leaves lists the leaf fields of the record writer schema s, nested records walked by their
// paths, each with the column type it feeds without loss: its logical type's (timestamp, date,
// uuid, decimal, bigint nanoseconds for a time of day), else its own (int, bigint, double, text for
// a string or an enum's symbol, blob). A choice is kept only when the pairing table (converter)
// takes it, so a drafted column always compiles against s. A union of several types, a recursive
// record and a collection of records feed no column; their Reason says why.
func Leaves(s *codec.Schema) ([]codec.Leaf, error) {
	if s == nil {
		return nil, errors.New("avro: no writer schema")
	}
	root, err := parseSchema(s)
	if err != nil {
		return nil, err
	}
	root = nonNull(root)
	if root.kind != tRecord {
		return nil, fmt.Errorf("the writer schema is %s, not a record", root.describe())
	}
	var out []codec.Leaf
	walkLeaves(root, nil, map[*node]bool{}, &out)
	return out, nil
}

// nonNull is a union's only branch besides null, else n.
func nonNull(n *node) *node {
	if n.kind != tUnion {
		return n
	}
	var only *node
	for _, b := range n.branches {
		if b.kind == tNull {
			continue
		}
		if only != nil {
			return n
		}
		only = b
	}
	if only == nil {
		return n
	}
	return only
}

func walkLeaves(rec *node, path []string, open map[*node]bool, out *[]codec.Leaf) {
	open[rec] = true
	defer delete(open, rec)
	for _, f := range rec.fields {
		p := append(append([]string(nil), path...), f.name)
		n := nonNull(f.typ)
		if n.kind == tRecord {
			if open[n] {
				*out = append(*out, codec.Leaf{Path: p, Writer: n.describe(), Reason: "a recursive record: name the fields of one level in a hand-written column"})
				continue
			}
			walkLeaves(n, p, open, out)
			continue
		}
		*out = append(*out, leafOf(n, p))
	}
}

func leafOf(n *node, path []string) codec.Leaf {
	l := codec.Leaf{Path: path, Writer: n.describe()}
	switch n.kind {
	case tArray, tMap:
		items := nonNull(n.items)
		l.Writer = n.kind.String() + " of " + items.describe()
		k, _ := naturalKind(items)
		if k == 0 || items.kind == tArray || items.kind == tMap {
			l.Reason = "its elements (" + items.describe() + ") feed no collection element"
			return l
		}
		l.Type = packed.Type{Kind: packed.KList, Elem: k}
		if n.kind == tMap {
			l.Type.Kind = packed.KMap
		}
		if cv, _, _ := converter(items, k, &textTime); cv == cNone {
			l.Type, l.Reason = packed.Type{}, "its elements feed no column type"
		}
		return l
	}
	k, why := naturalKind(n)
	if k == 0 {
		l.Reason = why
		return l
	}
	if cv, _, _ := converter(n, k, &textTime); cv == cNone {
		l.Reason = "no column type takes " + n.describe()
		return l
	}
	l.Type = packed.Scalar(k)
	l.Time = k == packed.KTimestamp
	return l
}

// naturalKind is the column kind n feeds without loss, or 0 and why none.
func naturalKind(n *node) (packed.Kind, string) {
	switch n.logical {
	case "timestamp-millis", "timestamp-micros", "timestamp-nanos",
		"local-timestamp-millis", "local-timestamp-micros", "local-timestamp-nanos":
		return packed.KTimestamp, ""
	case "date":
		return packed.KDate, ""
	case "time-millis", "time-micros":
		return packed.KBigint, ""
	case "decimal":
		return packed.KDecimal, ""
	case "uuid":
		return packed.KUUID, ""
	}
	switch n.kind {
	case tString, tEnum:
		return packed.KText, ""
	case tBoolean:
		return packed.KBoolean, ""
	case tInt:
		return packed.KInt, ""
	case tLong:
		return packed.KBigint, ""
	case tFloat:
		return packed.KFloat, ""
	case tDouble:
		return packed.KDouble, ""
	case tBytes, tFixed:
		return packed.KBlob, ""
	case tUnion:
		return 0, "a union of several types (" + unionText(n) + ") feeds no one column"
	case tNull:
		return 0, "always null"
	}
	return 0, n.describe() + " feeds no column"
}

func unionText(n *node) string {
	s := ""
	for i, b := range n.branches {
		if i > 0 {
			s += ", "
		}
		s += b.describe()
	}
	return s
}

// textTime is the format a leaf is judged by: a time is text, so only a timestamp logical type makes
// an integer one.
var textTime = codec.TimeFormat{Form: codec.TimeRFC3339, Name: "rfc3339"}
