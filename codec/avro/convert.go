package avro

import (
	"time"

	"github.com/bucketsink/sink/codec"
	"github.com/bucketsink/sink/packed"
)

// conv is how a kept Avro value becomes a codec.Value for its column's CQL type.
type conv uint8

const (
	cNone          conv = iota
	cText               // string -> text, ascii
	cEnumText           // enum -> its symbol
	cInt                // int, long -> the integer kinds, range-checked
	cTimeOfDay          // time-millis, time-micros -> bigint nanoseconds since midnight
	cFloat              // float, double, int, long -> float, double
	cBool               // boolean -> boolean
	cTimestamp          // timestamp-*, or an int or long counting units -> timestamp
	cTimestampText      // string in RFC 3339 -> timestamp
	cDate               // date -> date
	cDateText           // string YYYY-MM-DD -> date
	cTimeFormat         // string in the field's layout, or holding a count of its unit -> timestamp, date
	cUUIDText           // uuid string, string -> uuid, timeuuid
	cUUIDFixed          // fixed(16) -> uuid, timeuuid
	cBlob               // bytes, fixed -> blob
	cInetText           // string -> inet
	cInetFixed          // fixed(4), fixed(16) -> inet
	cDecimal            // decimal -> decimal (its scale kept)
	cDecimalInt         // int, long -> decimal, scale 0
	cVarint             // int, long -> varint
	cVarintDecimal      // decimal with scale 0 -> varint
	cList               // array -> list, set
	cMap                // map -> map<K, T>
	cTimeText           // string HH:MM:SS[.fffffffff] -> time
	cDuration           // string (the forms codec.ParseDuration reads) -> duration
	cUDT                // record -> UDT, its fields matched by name
	cTuple              // array of as many items as the tuple has elements -> tuple
	cVector             // array of exactly the dimension's items -> vector
	cIntText            // int, long -> their decimal text (codec.Field.AsText)
	cBoolText           // boolean -> true, false (codec.Field.AsText)
	cFloatText          // float, double -> the shortest text that reads back (codec.Field.AsText)
)

// textConverter picks the conversion of an Avro value of n read as text (codec.Field.AsText); cNone
// for a type with no scalar text (bytes, fixed, a record, an array, a map, null).
func textConverter(n *node) conv {
	switch n.kind {
	case tString:
		return cText
	case tEnum:
		return cEnumText
	case tInt, tLong:
		return cIntText
	case tBoolean:
		return cBoolText
	case tFloat, tDouble:
		return cFloatText
	}
	return cNone
}

// converter picks the conversion of an Avro value of n to CQL kind k; tf is the field's time format,
// which says what an int or long without a logical type counts, and how a string spells a time. It
// returns cNone, and a hint, for a pairing that cannot feed the column; docs/CONFIG.md has the table.
func converter(n *node, k packed.Kind, tf *codec.TimeFormat) (conv, int64, string) {
	lt := n.logical
	switch k {
	case packed.KText, packed.KASCII:
		switch {
		case n.kind == tString:
			return cText, 0, ""
		case n.kind == tEnum:
			return cEnumText, 0, ""
		}
	case packed.KTinyint, packed.KSmallint, packed.KInt, packed.KBigint:
		switch {
		case lt == "time-millis" || lt == "time-micros":
			if k == packed.KBigint {
				return cTimeOfDay, 0, ""
			}
			return cNone, 0, " (a time of day feeds bigint, in nanoseconds since midnight)"
		case lt != "":
			return cNone, 0, ""
		case n.kind == tInt || n.kind == tLong:
			return cInt, 0, ""
		}
	case packed.KFloat, packed.KDouble:
		if lt == "" && (n.kind == tFloat || n.kind == tDouble || n.kind == tInt || n.kind == tLong) {
			return cFloat, 0, ""
		}
	case packed.KBoolean:
		if n.kind == tBoolean {
			return cBool, 0, ""
		}
	case packed.KTimestamp:
		switch lt {
		case "timestamp-millis", "local-timestamp-millis":
			return cTimestamp, int64(time.Millisecond), ""
		case "timestamp-micros", "local-timestamp-micros":
			return cTimestamp, int64(time.Microsecond), ""
		case "timestamp-nanos", "local-timestamp-nanos":
			return cTimestamp, 1, ""
		case "":
			switch unit := tf.IntegerUnit(k); {
			case (n.kind == tLong || n.kind == tInt) && unit > 0:
				return cTimestamp, int64(unit), ""
			case n.kind == tLong || n.kind == tInt:
				return cNone, 0, " (format " + tf.Name + " reads a string; use timestamp-millis/micros or a unix_* format)"
			case n.kind == tString && (tf.Form == codec.TimeLayout || tf.Form == codec.TimeUnix):
				return cTimeFormat, 0, ""
			case n.kind == tString:
				return cTimestampText, 0, ""
			}
		}
	case packed.KDate:
		switch {
		case lt == "date":
			return cDate, 0, ""
		case lt == "" && (n.kind == tLong || n.kind == tInt) && tf.Form == codec.TimeUnix:
			return cDate, 0, ""
		case lt == "" && n.kind == tString && (tf.Form == codec.TimeLayout || tf.Form == codec.TimeUnix):
			return cTimeFormat, 0, ""
		case lt == "" && n.kind == tString:
			return cDateText, 0, ""
		}
	case packed.KUUID, packed.KTimeUUID:
		switch {
		case n.kind == tString:
			return cUUIDText, 0, ""
		case n.kind == tFixed && n.size == 16:
			return cUUIDFixed, 0, ""
		}
	case packed.KBlob:
		if lt == "" && (n.kind == tBytes || n.kind == tFixed) {
			return cBlob, 0, ""
		}
	case packed.KInet:
		switch {
		case n.kind == tString && lt == "":
			return cInetText, 0, ""
		case n.kind == tFixed && (n.size == 4 || n.size == 16):
			return cInetFixed, 0, ""
		}
	case packed.KDecimal:
		switch {
		case lt == "decimal":
			return cDecimal, 0, ""
		case lt == "" && (n.kind == tInt || n.kind == tLong):
			return cDecimalInt, 0, ""
		}
	case packed.KVarint:
		switch {
		case lt == "decimal" && n.scale == 0:
			return cVarintDecimal, 0, ""
		case lt == "decimal":
			return cNone, 0, " (a decimal with a scale feeds decimal)"
		case lt == "" && (n.kind == tInt || n.kind == tLong):
			return cVarint, 0, ""
		}
	case packed.KList, packed.KSet:
		if n.kind == tArray {
			return cList, 0, ""
		}
	case packed.KMap:
		if n.kind == tMap {
			return cMap, 0, ""
		}
	case packed.KTime:
		switch {
		case lt == "time-millis" || lt == "time-micros":
			return cTimeOfDay, 0, ""
		case lt == "" && n.kind == tString:
			return cTimeText, 0, ""
		}
	case packed.KDuration:
		if lt == "" && n.kind == tString {
			return cDuration, 0, ""
		}
		return cNone, 0, " (a string such as P1DT2H feeds duration)"
	case packed.KUDT:
		if n.kind == tRecord {
			return cUDT, 0, ""
		}
	case packed.KTuple:
		if n.kind == tArray {
			return cTuple, 0, ""
		}
	case packed.KVector:
		if n.kind == tArray {
			return cVector, 0, ""
		}
	}
	if n.kind == tRecord {
		return cNone, 0, "; name one of its fields (field: a.b)"
	}
	return cNone, 0, ""
}
