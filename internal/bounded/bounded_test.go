package bounded

import (
	"testing"
	"time"
)

func TestWithinReportsAFinishedStep(t *testing.T) {
	ran := false
	if !Within(time.Minute, func() { ran = true }) || !ran {
		t.Fatalf("Within returned before the step finished (ran %v)", ran)
	}
}

func TestWithinAbandonsAStepThatOverruns(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	if Within(10*time.Millisecond, func() { <-release }) {
		t.Fatal("Within reported a blocked step as finished")
	}
}
