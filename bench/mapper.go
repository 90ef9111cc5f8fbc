package bench

import (
	"github.com/bucketsink/sink/codec/registry"
	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/mapper"
)

// newMapper compiles cfg's topics into a mapper reading writer schemas from the client of cfg's
// schema_registry block, when it names one (the mapper builds no network client of its own).
func newMapper(cfg *config.Config) (*mapper.Mapper, error) {
	reg, err := registry.ForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return mapper.New(cfg, mapper.WithRegistry(reg))
}
