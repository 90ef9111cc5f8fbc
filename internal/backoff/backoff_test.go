package backoff

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestCeilingDoublesUpToMax(t *testing.T) {
	p := Policy{Initial: 100 * time.Millisecond, Max: time.Second}
	want := []time.Duration{100, 200, 400, 800, 1000, 1000}
	for i, w := range want {
		if got := p.Ceiling(i + 1); got != w*time.Millisecond {
			t.Errorf("Ceiling(%d) = %v, want %v", i+1, got, w*time.Millisecond)
		}
	}
	// A huge retry number must not overflow into a negative or zero wait.
	if got := p.Ceiling(1 << 20); got != time.Second {
		t.Errorf("Ceiling(1<<20) = %v, want %v", got, time.Second)
	}
}

func TestDelayStaysBelowCeiling(t *testing.T) {
	p := Policy{Initial: 10 * time.Millisecond, Max: 80 * time.Millisecond}
	for n := 1; n < 10; n++ {
		for range 200 {
			if d := p.Delay(n); d < 0 || d >= p.Ceiling(n) {
				t.Fatalf("Delay(%d) = %v, want in [0, %v)", n, d, p.Ceiling(n))
			}
		}
	}
	if d := (Policy{}).Delay(3); d != 0 {
		t.Errorf("zero policy: Delay = %v, want 0", d)
	}
}

func TestSleepReturnsCauseWhenContextEnds(t *testing.T) {
	cause := errors.New("revoked")
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(cause)
	if err := Sleep(ctx, time.Hour); !errors.Is(err, cause) {
		t.Errorf("Sleep on an ended context = %v, want %v", err, cause)
	}
	if err := Sleep(context.Background(), time.Millisecond); err != nil {
		t.Errorf("Sleep = %v, want nil", err)
	}
}
