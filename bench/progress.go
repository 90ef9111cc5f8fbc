package bench

import (
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"
)

// progress prints one line every few seconds about the phase under way, and a line when it ends.
type progress struct {
	w    io.Writer
	mu   sync.Mutex
	name string
	unit string
	of   int64
	n    *atomic.Int64
	t0   time.Time
	quit chan struct{}
	wg   sync.WaitGroup
}

func newProgress(w io.Writer) *progress {
	p := &progress{w: w, quit: make(chan struct{})}
	p.wg.Add(1)
	go p.loop()
	return p
}

const progressEvery = 2 * time.Second

func (p *progress) loop() {
	defer p.wg.Done()
	t := time.NewTicker(progressEvery)
	defer t.Stop()
	for {
		select {
		case <-p.quit:
			return
		case <-t.C:
			p.mu.Lock()
			if p.n != nil {
				p.line("")
			}
			p.mu.Unlock()
		}
	}
}

// line prints the current phase's state; p.mu is held.
func (p *progress) line(suffix string) {
	n := p.n.Load()
	el := time.Since(p.t0)
	rate := float64(n) / el.Seconds()
	pct := 0.0
	if p.of > 0 {
		pct = 100 * float64(n) / float64(p.of)
	}
	fmt.Fprintf(p.w, "%-50s %11d/%d %s (%5.1f%%) %12s %s/s %6.1fs%s\n", p.name, n, p.of, p.unit, pct, num(rate), p.unit, el.Seconds(), suffix)
}

// phase starts reporting on a counter that goes from 0 to of.
func (p *progress) phase(name string, of int64, unit string, n *atomic.Int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.name, p.of, p.unit, p.n, p.t0 = name, of, unit, n, time.Now()
}

// done prints the final line of the phase and stops reporting on it.
func (p *progress) done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.n != nil {
		p.line(" done")
	}
	p.n = nil
}

func (p *progress) logf(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, format+"\n", args...)
}

func (p *progress) stop() {
	close(p.quit)
	p.wg.Wait()
}
