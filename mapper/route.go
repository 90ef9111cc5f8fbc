package mapper

import "github.com/bucketsink/sink/routing"

// Routes returns the split routing of topics.<name>, which the pipeline fills and the mapper
// follows; nil for an unknown topic.
func (m *Mapper) Routes(name string) *routing.Routes {
	if p := m.byName[name]; p != nil {
		return &p.routes
	}
	return nil
}
