package mapper

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/bucketsink/sink/codec"
	"github.com/bucketsink/sink/codec/avro"
	"github.com/bucketsink/sink/config"
	"github.com/bucketsink/sink/packed"
)

// gatedCodec is the Avro codec whose Compile counts its calls and, until release is closed, blocks;
// with panics set, the first Compile panics instead.
type gatedCodec struct {
	release  chan struct{}
	compiles atomic.Int32
	panics   bool
}

func (c *gatedCodec) Compile(s *codec.Schema, fields []codec.Field) (codec.Plan, error) {
	first := c.compiles.Add(1) == 1
	<-c.release
	if first && c.panics {
		panic("compiling")
	}
	return avro.Codec{}.Compile(s, fields)
}

func gatedDecoder(c *gatedCodec) *decoder {
	reg := &staticRegistry{schemas: map[int]*codec.Schema{7: {ID: 7, Type: "AVRO", Text: sensorAvro}}}
	return &decoder{codecName: config.CodecAvro, codec: c, framed: true, registry: reg,
		fields: []codec.Field{{Path: []string{"device_id"}, Column: "device_id", Type: packed.Scalar(packed.KText)}}}
}

// TestConcurrentFirstSightsOfAnIDShareOneCompile guards against every partition worker that meets a
// new schema id compiling its plan on its own: while one compiles, the others wait for that plan.
func TestConcurrentFirstSightsOfAnIDShareOneCompile(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 8
		c := &gatedCodec{release: make(chan struct{})}
		d := gatedDecoder(c)
		plans := make([]codec.Plan, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() { plans[i], _, errs[i] = d.writerPlan(t.Context(), 7) })
		}
		synctest.Wait() // every caller is compiling, or waiting for a compile
		close(c.release)
		wg.Wait()
		if got := c.compiles.Load(); got != 1 {
			t.Errorf("%d compiles for %d first sights of one id, want 1", got, n)
		}
		for i := range n {
			if errs[i] != nil || plans[i] == nil || plans[i] != plans[0] {
				t.Errorf("caller %d: plan %p, %v; want the one plan", i, plans[i], errs[i])
			}
		}
		if _, _, err := d.writerPlan(t.Context(), 7); err != nil || c.compiles.Load() != 1 {
			t.Errorf("a later sight: %v, %d compiles; want the kept plan", err, c.compiles.Load())
		}
	})
}

// TestAWaiterForAPlanIsNotStrandedByThePanicOrItsContext: a compile that panics releases those waiting
// for it, which compile the plan themselves; a waiter whose context ends is told the plan is
// unavailable, not that its record is bad.
func TestAWaiterForAPlanIsNotStrandedByThePanicOrItsContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := &gatedCodec{release: make(chan struct{}), panics: true}
		d := gatedDecoder(c)
		var wg sync.WaitGroup
		var recovered any
		wg.Go(func() {
			defer func() { recovered = recover() }()
			d.writerPlan(t.Context(), 7)
		})
		synctest.Wait() // the first caller is compiling
		var plan codec.Plan
		var err error
		wg.Go(func() { plan, _, err = d.writerPlan(t.Context(), 7) })
		ctx, cancel := context.WithCancel(t.Context())
		var gone error
		wg.Go(func() { _, _, gone = d.writerPlan(ctx, 7) })
		synctest.Wait()
		cancel()
		synctest.Wait()
		var ue *codec.UnavailableError
		if !errors.As(gone, &ue) || !errors.Is(gone, context.Canceled) {
			t.Errorf("a waiter whose context ended: %v, want an unavailable error", gone)
		}
		close(c.release)
		wg.Wait()
		if recovered == nil {
			t.Error("the first compile did not panic")
		}
		if err != nil || plan == nil || c.compiles.Load() != 2 {
			t.Errorf("the waiter after the panic: %v, a plan: %v, %d compiles; want its own compile's plan", err, plan != nil, c.compiles.Load())
		}
	})
}
