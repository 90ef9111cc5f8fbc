package codec

import (
	"strings"

	"github.com/bucketsink/sink/packed"
)

// Leaf is one leaf field of a writer schema as `sink init` drafts a column from it: its path, the
// writer's type, and the column type that type feeds without loss. A leaf no column can take (a
// union of several types, a message with no fields to name) has no Type and says why in Reason.
type Leaf struct {
	Path   []string
	Writer string      // the writer's type, for comments: "long (timestamp-millis)", "int64", "string (date-time)"
	Type   packed.Type // zero when Reason is set
	Reason string
	// Time: the writer type says the value is an instant (a timestamp logical type, a Timestamp message,
	// a date-time string), so an event time read from it needs no time.format.
	Time bool
}

// Name is the leaf's dot path.
func (l Leaf) Name() string { return strings.Join(l.Path, ".") }

// Fits reports whether the leaf can feed a column.
func (l Leaf) Fits() bool { return l.Reason == "" }
