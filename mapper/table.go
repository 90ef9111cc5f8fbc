package mapper

import (
	"github.com/bucketsink/sink/schema"
)

// Topics lists the configured topic names, sorted.
func (m *Mapper) Topics() []string { return m.tables.Names() }

// Table describes the table of topics.<topic>, as the mapper binds it; false when there is no
// such topic.
func (m *Mapper) Table(topic string) (schema.Table, bool) {
	t, ok := m.tables[topic]
	return t, ok
}
