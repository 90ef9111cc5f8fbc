// Package metricstest reads gathered metrics back in tests.
package metricstest

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// Series returns the values of the exported series of the gauge name.
func Series(t testing.TB, reg prometheus.Gatherer, name string) []float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out []float64
	for _, mf := range mfs {
		if mf.GetName() == name {
			for _, m := range mf.GetMetric() {
				out = append(out, m.GetGauge().GetValue())
			}
		}
	}
	return out
}
