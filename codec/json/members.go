package json

import "strconv"

// Span is where a value lies in a document: b[Off:End]; Off is -1 when there is none.
type Span struct{ Off, End int }

// Found reports whether the span holds a value.
func (s Span) Found() bool { return s.Off >= 0 }

// Null reports whether the span holds the literal null.
func (s Span) Null(b []byte) bool { return s.End-s.Off == 4 && string(b[s.Off:s.End]) == "null" }

// Members finds the members named keys at the top level of the JSON object b: spans[i] is where the
// value of keys[i] lies (its first occurrence, as the plans keep the first of a key given twice), or Off
// -1 when the object has none. It reports false when b is not one JSON object; the values it steps over
// are checked as the scan checks a value it skips (well formed, their strings not decoded), and a caller
// reads the ones it needs with a plan. A change envelope is split this way into its parts (package
// mapper), each then read by the plan made for it.
func Members(b []byte, keys []string, spans []Span) bool {
	for i := range spans {
		spans[i] = Span{-1, -1}
	}
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return skipSpace(b, i+1) == len(b)
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return false
		}
		end, esc, ok := stringEnd(b, i+1)
		if !ok {
			return false
		}
		key := bstr(b[i+1 : end])
		if esc {
			k, err := strconv.Unquote(string(b[i : end+1]))
			if err != nil {
				return false
			}
			key = k
		}
		i = skipSpace(b, end+1)
		if i >= len(b) || b[i] != ':' {
			return false
		}
		i = skipSpace(b, i+1)
		start := i
		if i, ok = skipValue(b, i, 2); !ok {
			return false
		}
		for k, want := range keys {
			if want == key && spans[k].Off < 0 {
				spans[k] = Span{start, i}
			}
		}
		i = skipSpace(b, i)
		if i >= len(b) {
			return false
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case '}':
			return skipSpace(b, i+1) == len(b)
		default:
			return false
		}
	}
}
