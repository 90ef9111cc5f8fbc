package split

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/bucketsink/sink/internal/backoff"
	"github.com/bucketsink/sink/pipeline/writestage"
)

// Lease says until when no other member can own a partition this member's workers hold: the
// write stage sends a split topic's batch only under it (fence). A heartbeat of the member's current
// session that the coordinator answers without error, sent at s, proves that the session was alive
// and the group stable after s; the coordinator can end the session at the earliest
// kafka.session_timeout after it last heard from the member, or kafka.rebalance_timeout after a
// rebalance that began later, and only then give its partitions to another member, whose first split
// decision or adoption waits cassandra.timeout more (State.settle). A lease therefore runs from s
// for half the shorter of the two timeouts (the other half is the margin for the heartbeat's travel
// and the machines' clocks), and a write attempt started within it lands (or fails) before the next
// owner reads what its partitions hold (docs/DESIGN.md, "A member that lost its session"). During a
// rebalance the coordinator answers REBALANCE_IN_PROGRESS to a member it still knows: that keeps the
// session from expiring, but the rebalance began after the member's last stable answer s0 and may
// remove it kafka.rebalance_timeout later, so such an answer sent at s holds until the earlier of
// s + session/2 and s0 + rebalance/2: a normal rebalance (whose revoke waits for the writes in flight)
// does not stall split topics' writes.
//
// A process frozen (SIGSTOP, a long pause) wakes with its lease run out: its batches wait for a
// heartbeat, which a coordinator that has ended the session refuses, until franz-go reports the
// partitions lost and they are dropped (the next owner replays them). Concurrency: Hold is called by
// the write stage's writer goroutines at once; one of them confirms at a time, the others use the
// lease they have or wait for that confirmation.
type Lease struct {
	// confirm sends one heartbeat of the current session; it returns the member it was sent for.
	confirm            func(ctx context.Context) (member string, err error)
	session, rebalance time.Duration  // kafka.session_timeout, kafka.rebalance_timeout
	retry              backoff.Policy // between failed confirmations
	log                *slog.Logger

	cur atomic.Pointer[lease] // nil until the first confirmation

	mu       sync.Mutex
	renewing chan struct{} // closed when the confirmation under way ends; nil when none is
	nextTry  time.Time     // no confirmation before it: the last one failed
	// The renewer's alone (one at a time, handed over under mu): confirmations failed in a row, and
	// when the last one answered without error was sent, for which member.
	failures     int
	stable       time.Time
	stableMember string
}

// lease is one confirmation: writes started before until are safe; ctx ends at until.
type lease struct {
	ctx     context.Context
	stop    context.CancelFunc // ctx's own, never called: writes may still use ctx when the next lease replaces it, and its deadline releases it
	until   time.Time
	renewAt time.Time // half way: the first batch sent after it confirms again
}

// ErrPartitionsGone: every partition of a batch's rows was given up (lost or revoked) while it waited.
var ErrPartitionsGone = errors.New("the batch's partitions are no longer ours")

func NewLease(cl *kgo.Client, group string, sessionTimeout, rebalanceTimeout time.Duration, retry backoff.Policy, log *slog.Logger) *Lease {
	return &Lease{
		confirm: func(ctx context.Context) (string, error) { return heartbeat(ctx, cl, group) },
		session: sessionTimeout, rebalance: rebalanceTimeout,
		retry: retry,
		log:   log,
	}
}

// heartbeat sends one heartbeat of the client's current group session and returns the member it was
// sent for and the coordinator's error.
func heartbeat(ctx context.Context, cl *kgo.Client, group string) (string, error) {
	member, generation := cl.GroupMetadata()
	if member == "" {
		return "", errors.New("not in the group")
	}
	req := kmsg.NewPtrHeartbeatRequest()
	req.Group, req.MemberID, req.Generation = group, member, generation
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return member, err
	}
	return member, kerr.ErrorForCode(resp.ErrorCode)
}

// Hold returns the context to write a batch under, once the lease covers now; owners are its rows'
// assignments. It returns ErrPartitionsGone as soon as none of them is ours any more, and parent's
// error when parent ends first. In the normal case it is one atomic load and a clock reading; the
// first caller past the lease's half way confirms the session for everyone.
func (l *Lease) Hold(parent context.Context, owners []writestage.Owner) (context.Context, error) {
	for {
		if !writestage.AnyOwned(owners) {
			return nil, ErrPartitionsGone
		}
		if err := parent.Err(); err != nil {
			return nil, err
		}
		now := time.Now()
		cur := l.cur.Load()
		if cur != nil && now.Before(cur.renewAt) {
			return cur.ctx, nil
		}
		l.mu.Lock()
		// Read again under mu: a confirmation may have ended since, and the next one is not due.
		cur = l.cur.Load()
		valid := cur != nil && now.Before(cur.until)
		fresh := cur != nil && now.Before(cur.renewAt)
		wait := l.renewing
		// While the lease holds, a failed confirmation is tried again only after its backoff, and
		// meanwhile batches go under the lease they have.
		mine := wait == nil && !fresh && (!valid || !now.Before(l.nextTry))
		if mine {
			l.renewing = make(chan struct{})
		}
		l.mu.Unlock()
		if mine {
			l.renew(parent)
			if cur := l.cur.Load(); cur != nil && time.Now().Before(cur.until) {
				return cur.ctx, nil
			}
			continue
		}
		if valid {
			return cur.ctx, nil
		}
		select {
		case <-wait:
		case <-parent.Done():
			return nil, parent.Err()
		}
	}
}

// renew confirms the session once (after a failure, not before its backoff, at most a second so that
// a waiting batch soon sees its partitions lost, and the writers waiting do not heartbeat in a loop),
// publishes the new lease on success, and wakes the waiters.
func (l *Lease) renew(parent context.Context) {
	var next time.Time
	defer func() {
		l.mu.Lock()
		l.nextTry = next
		close(l.renewing)
		l.renewing = nil
		l.mu.Unlock()
	}()
	l.mu.Lock()
	wait := time.Until(l.nextTry)
	l.mu.Unlock()
	if backoff.Sleep(parent, wait) != nil {
		return
	}
	sent := time.Now()
	ctx, cancel := context.WithTimeout(parent, min(l.session, l.rebalance)/4)
	member, err := l.confirm(ctx)
	cancel()
	var until time.Time
	switch {
	case err == nil:
		l.stable, l.stableMember = sent, member
		until = sent.Add(min(l.session, l.rebalance) / 2)
	case errors.Is(err, kerr.RebalanceInProgress) && member == l.stableMember && !l.stable.IsZero():
		until = sent.Add(l.session / 2)
		if end := l.stable.Add(l.rebalance / 2); end.Before(until) {
			until = end
		}
		if !time.Now().Before(until) {
			break
		}
		err = nil
	}
	if err != nil {
		if l.failures == 0 {
			l.log.Warn("the group session could not be confirmed; split topics' batches wait for it (or for their partitions to be lost)",
				slog.Any("error", err))
		}
		l.failures++
		next = time.Now().Add(min(l.retry.Delay(l.failures-1), time.Second))
		return
	}
	if l.failures > 0 {
		l.log.Info("the group session is confirmed again; split topics' batches are sent", slog.Int("attempts", l.failures+1))
	}
	l.failures = 0
	lctx, stop := context.WithDeadline(parent, until)
	l.cur.Store(&lease{ctx: lctx, stop: stop, until: until, renewAt: sent.Add(until.Sub(sent) / 2)})
}
