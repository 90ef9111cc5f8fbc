package mapper

import (
	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/packed"
)

// kind is a column's CQL type kind, as the packed row format names it.
type kind = packed.Kind

const (
	kText      = packed.KText
	kASCII     = packed.KASCII
	kInt       = packed.KInt
	kBigint    = packed.KBigint
	kSmallint  = packed.KSmallint
	kTinyint   = packed.KTinyint
	kFloat     = packed.KFloat
	kDouble    = packed.KDouble
	kBoolean   = packed.KBoolean
	kTimestamp = packed.KTimestamp
	kDate      = packed.KDate
	kUUID      = packed.KUUID
	kTimeUUID  = packed.KTimeUUID
	kBlob      = packed.KBlob
	kInet      = packed.KInet
	kDecimal   = packed.KDecimal
	kVarint    = packed.KVarint
	kList      = packed.KList
	kSet       = packed.KSet
	kMap       = packed.KMap
)

// kindNames is the CQL name of each kind, for messages.
var kindNames = func() map[kind]string {
	m := make(map[kind]string)
	for k := kText; k <= packed.KVector; k++ {
		m[k] = k.String()
	}
	return m
}()

// cqlType is a parsed column type. name is the canonical CQL spelling used in DDL and messages.
type cqlType struct {
	kind kind
	elem kind              // element (value) kind of list, set and map
	key  kind              // a map's key kind; 0 is text
	comp *packed.Composite // a tuple's, a UDT's or a vector's parts
	name string
}

func (t cqlType) collection() bool { return t.kind.Collection() }

// packed is the type as the packed row format takes it.
func (t cqlType) packed() packed.Type {
	return packed.Type{Kind: t.kind, Elem: t.elem, Key: t.key, Comp: t.comp}
}

// parseType parses the column types config accepts (see packed.ParseType), and a UDT: the type of a
// column with fields (packed.ParseUDT).
func parseType(c config.Column) (cqlType, error) {
	var t packed.Type
	var err error
	if len(c.Fields) > 0 {
		names, types := make([]string, len(c.Fields)), make([]string, len(c.Fields))
		for i, f := range c.Fields {
			names[i], types[i] = f.Name, f.Type
		}
		t, err = packed.ParseUDT(c.Type, names, types)
	} else {
		t, err = packed.ParseType(c.Type)
	}
	if err != nil {
		return cqlType{}, err
	}
	return cqlType{kind: t.Kind, elem: t.Elem, key: t.Key, comp: t.Comp, name: t.String()}, nil
}
