package avro

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/bucketsink/sink/codec"
	"github.com/bucketsink/sink/codec/registry"
	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/internal/testenv"
)

// TestIntegrationADiamondOfReferencesFromTheRegistryIsParsedOncePerSchema: a diamond reference graph
// 20 levels deep registered in the real registry (each level's two schemas reference both of the level
// below, by subject and version) comes back from the registry client and compiles with each of its 41
// schemas parsed once, where main parsed them once per path, about 2^20 times.
func TestIntegrationADiamondOfReferencesFromTheRegistryIsParsedOncePerSchema(t *testing.T) {
	const depth = 20
	c, err := registry.New(config.SchemaRegistry{URLs: []string{testenv.Registry(t)}, Timeout: config.Duration(10 * time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	prefix := testenv.Name(t, "diamond")
	var below []sr.SchemaReference
	for _, level := range diamondLevels(depth) {
		var here []sr.SchemaReference
		for _, ty := range level {
			subject := prefix + "-" + ty.name
			got, err := c.SR().CreateSchema(ctx, subject, sr.Schema{Schema: ty.text, References: below})
			if err != nil {
				t.Fatalf("registering %s: %v", subject, err)
			}
			here = append(here, sr.SchemaReference{Name: ty.name, Subject: subject, Version: got.Version})
		}
		below = here
	}
	top, err := c.SR().CreateSchema(ctx, prefix+"-value", sr.Schema{Schema: diamondTop, References: below})
	if err != nil {
		t.Fatal(err)
	}
	s, err := c.Schema(ctx, top.ID)
	if err != nil {
		t.Fatal(err)
	}
	p := newParser()
	if _, err := p.schema(s); err != nil {
		t.Fatal(err)
	}
	if p.parsed != 2*depth+1 {
		t.Errorf("%d texts parsed, want %d: each schema of the graph once", p.parsed, 2*depth+1)
	}
	if _, err := (Codec{}).Compile(s, []codec.Field{fieldOf("v", "v", "bigint")}); err != nil {
		t.Errorf("compiling: %v", err)
	}
}
