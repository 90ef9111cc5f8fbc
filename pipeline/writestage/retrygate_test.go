package writestage

import (
	"testing"
	"time"
)

// TestTableGateProbesOneAtATimeAndOpensOnASuccess: the gate of a failing table lets one probe through
// once its backoff has passed, none while a probe is under way, and every waiting batch once a probe is
// written; a failure pushes the next probe back by the backoff of one more failure only when the table
// was thought to work or the probe failed, not when a batch that was already waiting fails again; the
// last batch out reports the gate may go.
func TestTableGateProbesOneAtATimeAndOpensOnASuccess(t *testing.T) {
	delay := func(retry int) time.Duration { return time.Duration(retry) * time.Second }
	type op struct {
		do        string        // fail, join (fail for a batch's first time), leave, admit
		at        time.Duration // from t0
		probe, ok bool          // fail and leave: the batch was the probe; leave: it was written
		// what the op reports: admit, send and probe; leave, whether it was the last one out
		send, wantProbe, last bool
	}
	for _, tc := range []struct {
		name string
		ops  []op
		// the gate after the ops
		waiters, failures int
		next              time.Duration
		open              bool
	}{
		{"a table's first failure: no probe before its backoff", []op{
			{do: "join"},
			{do: "admit", at: 999 * time.Millisecond},
		}, 1, 1, time.Second, false},
		{"past the backoff one batch goes as the probe, the others wait", []op{
			{do: "join"}, {do: "join"},
			{do: "admit", at: time.Second, send: true, wantProbe: true},
			{do: "admit", at: time.Second},
		}, 2, 1, time.Second, false},
		{"a failed probe pushes the next one back by one more failure's backoff", []op{
			{do: "join"}, {do: "join"},
			{do: "admit", at: time.Second, send: true, wantProbe: true},
			{do: "fail", at: time.Second, probe: true},
			{do: "admit", at: 2 * time.Second},
			{do: "admit", at: 3 * time.Second, send: true, wantProbe: true},
		}, 2, 2, 3 * time.Second, false},
		{"a waiting batch failing again does not push the probe back", []op{
			{do: "join"}, {do: "join"},
			{do: "fail", at: 500 * time.Millisecond},
		}, 2, 1, time.Second, false},
		{"a written probe opens the gate: every waiting batch goes", []op{
			{do: "join"}, {do: "join"}, {do: "join"},
			{do: "admit", at: time.Second, send: true, wantProbe: true},
			{do: "leave", at: time.Second, probe: true, ok: true},
			{do: "admit", at: time.Second, send: true},
			{do: "admit", at: time.Second, send: true},
		}, 2, 0, time.Second, true},
		{"a failure after the gate opened closes it and backs off again", []op{
			{do: "join"}, {do: "join"},
			{do: "admit", at: time.Second, send: true, wantProbe: true},
			{do: "leave", at: time.Second, probe: true, ok: true},
			{do: "fail", at: 5 * time.Second},
			{do: "admit", at: 5 * time.Second},
		}, 1, 1, 6 * time.Second, false},
		{"the last batch out reports the gate may go", []op{
			{do: "join"}, {do: "join"},
			{do: "leave"},
			{do: "leave", last: true},
		}, 0, 1, time.Second, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var g tableGate
			for i, o := range tc.ops {
				now := t0.Add(o.at)
				switch o.do {
				case "join", "fail":
					g.fail(o.do == "join", o.probe, now, delay)
				case "leave":
					if last := g.leave(o.probe, o.ok); last != o.last {
						t.Errorf("op %d (leave): last one out %v, want %v", i, last, o.last)
					}
				case "admit":
					if send, probe := g.admit(now); send != o.send || probe != o.wantProbe {
						t.Errorf("op %d (admit at %v): send %v, probe %v; want %v, %v", i, o.at, send, probe, o.send, o.wantProbe)
					}
				}
			}
			if g.waiters != tc.waiters || g.failures != tc.failures || !g.next.Equal(t0.Add(tc.next)) || g.open != tc.open {
				t.Errorf("gate: %d waiters, %d failures, next probe at %v, open %v; want %d, %d, %v, %v",
					g.waiters, g.failures, g.next.Sub(t0), g.open, tc.waiters, tc.failures, tc.next, tc.open)
			}
		})
	}
}
