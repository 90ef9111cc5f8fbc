package reader

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"time"
)

// cursorVersion is written into every cursor; a cursor of another version is refused with a clear
// error instead of being misread.
const cursorVersion = 1

// cursor is the state a query resumes from, in any process. It holds the query's own range and
// limit (so "the last 24 hours" keeps meaning the 24 hours of the first page) and the position of
// the last row returned as clustering values, never a driver page state: clustering values stay
// valid across processes, schema changes and concurrent writes, so a resumed read returns every
// row that sorts after the last one, present at the first call or written since, exactly once.
type cursor struct {
	V        int      `json:"v"`
	Query    uint64   `json:"q"` // fingerprint of the topic, table and id values
	From     int64    `json:"f"` // the range, Unix nanoseconds
	To       int64    `json:"t"`
	Limit    int      `json:"l,omitempty"`
	Returned int      `json:"n"`           // rows returned so far, for Limit
	Bucket   int64    `json:"b"`           // the time bucket of the last row
	Event    int      `json:"e,omitempty"` // its event bucket (ties between event buckets)
	Last     []string `json:"k"`           // its clustering values, in text form (FormatValue)
}

func (c cursor) encode() string {
	b, _ := json.Marshal(c) // a struct of strings and integers always marshals
	return base64.RawURLEncoding.EncodeToString(b)
}

// ErrCursor is wrapped by every error about a cursor that cannot be used.
var ErrCursor = errors.New("invalid cursor")

func decodeCursor(s string) (cursor, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return cursor{}, fmt.Errorf("%w: not a cursor printed by sink query or reader.Page", ErrCursor)
	}
	var c cursor
	if err := json.Unmarshal(b, &c); err != nil {
		return cursor{}, fmt.Errorf("%w: not a cursor printed by sink query or reader.Page", ErrCursor)
	}
	if c.V != cursorVersion {
		return cursor{}, fmt.Errorf("%w: version %d, this reader reads version %d", ErrCursor, c.V, cursorVersion)
	}
	// A cursor is text from users: a negative count would let a page return more rows than its limit.
	if c.Limit < 0 || c.Returned < 0 {
		return cursor{}, fmt.Errorf("%w: a negative limit (%d) or count of rows returned (%d)", ErrCursor, c.Limit, c.Returned)
	}
	return c, nil
}

func (c cursor) from() time.Time { return time.Unix(0, c.From).UTC() }
func (c cursor) to() time.Time   { return time.Unix(0, c.To).UTC() }

// fingerprint identifies what a cursor may resume: the same topic, table and entity.
func fingerprint(topic, table string, id []string) uint64 {
	h := fnv.New64a()
	for _, s := range append([]string{topic, table}, id...) {
		_, _ = h.Write([]byte(s))
		_, _ = h.Write([]byte{0})
	}
	return h.Sum64()
}
