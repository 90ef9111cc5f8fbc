package mapper

import (
	"fmt"
	"strings"
)

// kind is a scalar CQL type, or a collection whose element kind is kept beside it.
type kind uint8

const (
	kText kind = iota + 1 // text and varchar
	kASCII
	kInt
	kBigint
	kSmallint
	kTinyint
	kFloat
	kDouble
	kBoolean
	kTimestamp
	kDate
	kUUID
	kTimeUUID
	kBlob
	kInet
	kDecimal
	kVarint
	kList
	kSet
	kMap // map<text, elem>
)

var scalarNames = map[string]kind{
	"text": kText, "varchar": kText, "ascii": kASCII,
	"int": kInt, "bigint": kBigint, "smallint": kSmallint, "tinyint": kTinyint,
	"float": kFloat, "double": kDouble, "boolean": kBoolean,
	"timestamp": kTimestamp, "date": kDate, "uuid": kUUID, "timeuuid": kTimeUUID,
	"blob": kBlob, "inet": kInet, "decimal": kDecimal, "varint": kVarint,
}

var kindNames = func() map[kind]string {
	m := make(map[kind]string, len(scalarNames))
	for n, k := range scalarNames {
		if n != "varchar" {
			m[k] = n
		}
	}
	return m
}()

// cqlType is a parsed column type. name is the canonical CQL spelling used in DDL and messages.
type cqlType struct {
	kind kind
	elem kind // element (value) kind of list, set and map
	name string
}

func (t cqlType) collection() bool { return t.kind >= kList }

// parseType parses the column types config accepts: the scalars above, list<T>, set<T> and
// map<text, T> of a scalar T. Spaces and case are ignored.
func parseType(s string) (cqlType, error) {
	v := strings.ToLower(strings.ReplaceAll(strings.TrimSpace(s), " ", ""))
	if k, ok := scalarNames[v]; ok {
		return cqlType{kind: k, name: kindNames[k]}, nil
	}
	open := strings.IndexByte(v, '<')
	if open > 0 && strings.HasSuffix(v, ">") {
		outer, inner := v[:open], v[open+1:len(v)-1]
		switch outer {
		case "list", "set":
			if k, ok := scalarNames[inner]; ok {
				ck := kList
				if outer == "set" {
					ck = kSet
				}
				return cqlType{kind: ck, elem: k, name: outer + "<" + kindNames[k] + ">"}, nil
			}
		case "map":
			key, val, ok := strings.Cut(inner, ",")
			if ok && (key == "text" || key == "varchar") {
				if k, ok := scalarNames[val]; ok {
					return cqlType{kind: kMap, elem: k, name: "map<text, " + kindNames[k] + ">"}, nil
				}
			}
		}
	}
	return cqlType{}, fmt.Errorf("%q is not a supported CQL type; use text, ascii, varchar, int, bigint, smallint, "+
		"tinyint, float, double, boolean, timestamp, date, uuid, timeuuid, blob, inet, decimal, varint, "+
		"list<T>, set<T> or map<text, T> of one of those", s)
}
