package main

import (
	"slices"
	"testing"
)

func TestParseRates(t *testing.T) {
	got, err := parseRates("2000, 5000,15000,")
	if err != nil || !slices.Equal(got, []float64{2000, 5000, 15000}) {
		t.Errorf("parseRates = %v, %v", got, err)
	}
	if got, err := parseRates(""); err != nil || got != nil {
		t.Errorf("an empty --curve = %v, %v; want no curve", got, err)
	}
	if _, err := parseRates("5k"); err == nil {
		t.Error("5k was read as a rate")
	}
}
