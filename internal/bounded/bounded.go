// Package bounded runs a step of a shutdown with a deadline it cannot outlast.
package bounded

import "time"

// Within runs fn and waits for it at most d; it reports whether fn returned. An fn that overruns is
// abandoned, not stopped: it goes on in its goroutine, and a process that is exiting does not wait for it.
// Use it only for steps whose result may be given up, such as closing a client during shutdown.
func Within(d time.Duration, fn func()) bool {
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}
