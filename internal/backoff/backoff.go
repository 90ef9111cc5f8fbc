// Package backoff is the one retry schedule of the sink: capped exponential backoff with full jitter.
// The Cassandra writer uses it between the attempts of one request, the write stage between the
// attempts of a batch whose partition is stuck. It is pure apart from the random draw and safe for
// concurrent use.
package backoff

import (
	"context"
	"math/rand/v2"
	"time"
)

// Policy is the schedule writer.retry_initial .. writer.retry_max: retry n (1-based) waits a
// uniformly random time in [0, min(Max, Initial·2^(n-1))). Full jitter spreads the retries of many
// writers that failed together, so they do not come back in step (the AWS Architecture Blog's
// "Exponential Backoff and Jitter" compares the variants).
type Policy struct {
	Initial, Max time.Duration
}

// Ceiling is the upper bound of the wait before retry n: Initial doubled n-1 times, at most Max.
func (p Policy) Ceiling(n int) time.Duration {
	c := p.Initial
	for i := 1; i < n && c < p.Max; i++ {
		c *= 2
	}
	return min(c, p.Max)
}

// Delay draws the wait before retry n.
func (p Policy) Delay(n int) time.Duration {
	c := p.Ceiling(n)
	if c <= 0 {
		return 0
	}
	return rand.N(c)
}

// Sleep waits d or until ctx ends, whichever is first; it returns the context's cause when ctx
// ended first (also for d <= 0 on an ended ctx).
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return context.Cause(ctx)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}
