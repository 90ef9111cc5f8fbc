package main

import (
	"testing"
	"time"
)

// TestStopFitsTheChartGracePeriod: the sum of the shutdown steps' bounds, with the watchdog's slack, stays
// under the chart's default terminationGracePeriodSeconds (writer.shutdown_timeout + 15 s, deploy/helm/sink
// templates/_helpers.tpl) with at least two seconds to spare for the exit itself, for short and long drains.
func TestStopFitsTheChartGracePeriod(t *testing.T) {
	for _, s := range []time.Duration{time.Second, 5 * time.Second, 30 * time.Second, 5 * time.Minute} {
		grace := s + 15*time.Second
		if got := stopBound(s) + stopSlack; got > grace-2*time.Second {
			t.Errorf("shutdown_timeout %s: the stop may take %s, too close to the grace period %s", s, got, grace)
		}
		if got, want := stopBound(s), s+11*time.Second; got != want {
			t.Errorf("shutdown_timeout %s: stop bound %s, but the docs say %s", s, got, want)
		}
	}
}
