package sqllock

/*
#include "helpers.h"
*/
import "C"

import (
	"context"
	"runtime/cgo"
	"sync"
	"time"
	"unsafe"
)

// Term is one term of leadership (contract M4): its fencing token and a
// context that is cancelled when the term ends (lost, resigned, closed).
// Fence the leader's actions with Token, and stop them when Ctx ends.
type Term struct {
	Token int64
	Ctx   context.Context
	st    *termState
}

type termState struct {
	cancel context.CancelFunc
	err    error // why it ended: nil after a hand-over, else ErrLost/ErrTimeout
}

// Err says why the term ended: nil while it lasts and after a hand-over
// (Resign, Close); ErrLost when another candidate took the leadership
// over; ErrTimeout when the local deadline passed without a renewal.
func (t Term) Err() error {
	if t.Ctx.Err() == nil {
		return nil
	}
	leaderMu.Lock()
	defer leaderMu.Unlock()
	return t.st.err
}

// leaderMu orders the callbacks' writes and the readers of Term.Err.
var leaderMu sync.Mutex

// Leader is a candidate in an election. Its campaign runs on a thread of
// the library with connections of its own; Terms delivers each term it
// wins. Safe for concurrent use.
type Leader struct {
	name  string
	h     *C.sqllock_leader
	ch    cgo.Handle
	terms chan Term

	life    sync.RWMutex // the C candidate's life: Close takes it to free
	mu      sync.Mutex
	queue   []Term
	cur     *Term
	wake    chan struct{}
	done    chan struct{}
	stopped bool
	fwd     sync.WaitGroup
}

// Campaign starts a candidate for the election `name` on the DB's
// database (TTL is the leadership lease's, default 30 s; Holder the text
// others see). The candidate keeps campaigning until Close: each time it
// is elected, a Term arrives on Terms().
func (db *DB) Campaign(name string, opts ...LockOption) (*Leader, error) {
	cfg := lockConfig{ttl: TTLDefault}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.ttl > 0 && cfg.ttl < time.Millisecond {
		return nil, errorf(C.SQLLOCK_EINVAL, "the ttl must be at least 1 ms")
	}
	cu, err := cstr(db.url, "the URL")
	if err != nil {
		return nil, err
	}
	defer C.free(unsafe.Pointer(cu))
	cn, err := cstr(name, "the name")
	if err != nil {
		return nil, err
	}
	defer C.free(unsafe.Pointer(cn))
	var holder *C.char
	if cfg.holder != "" {
		if holder, err = cstr(cfg.holder, "the holder"); err != nil {
			return nil, err
		}
		defer C.free(unsafe.Pointer(holder))
	}
	ld := &Leader{name: name, terms: make(chan Term), wake: make(chan struct{}, 1),
		done: make(chan struct{})}
	ld.ch = cgo.NewHandle(ld)
	var why [512]C.char
	rc := C.sqllock_go_leader_start(cu, cn, C.int64_t(cfg.ttl.Milliseconds()), 0, holder,
		C.uintptr_t(ld.ch), &ld.h, &why[0], C.size_t(len(why)))
	if rc != C.SQLLOCK_OK {
		ld.ch.Delete()
		return nil, newError(rc, C.GoString(&why[0]))
	}
	ld.fwd.Add(1)
	go ld.forward()
	return ld, nil
}

// forward hands the terms the callbacks queued to Terms(), so that the
// campaign thread never waits for the application.
func (ld *Leader) forward() {
	defer ld.fwd.Done()
	defer close(ld.terms)
	for {
		ld.mu.Lock()
		if len(ld.queue) == 0 {
			ld.mu.Unlock()
			select {
			case <-ld.wake:
				continue
			case <-ld.done:
				return
			}
		}
		t := ld.queue[0]
		ld.queue = ld.queue[1:]
		ld.mu.Unlock()
		select {
		case ld.terms <- t:
		case <-ld.done:
			return
		}
	}
}

// Terms delivers each term this candidate wins, in order; it is closed by
// Close. A term may have ended by the time it is read (its Ctx is done).
func (ld *Leader) Terms() <-chan Term { return ld.terms }

// IsLeader reports whether this candidate leads now and its local
// deadline (L6) has not passed.
func (ld *Leader) IsLeader() bool {
	ld.life.RLock()
	defer ld.life.RUnlock()
	return !ld.stopped && C.sqllock_leader_is_leader(ld.h) != 0
}

// Token is the current term's fencing token while leader, else 0.
func (ld *Leader) Token() int64 {
	ld.life.RLock()
	defer ld.life.RUnlock()
	if ld.stopped {
		return 0
	}
	return int64(C.sqllock_leader_token(ld.h))
}

// Resign hands the leadership over at once: the term ends, the waiting
// candidates are woken, and this one stays out until another candidate
// has led (or a ttl has passed), then campaigns again. ErrNotHeld when
// it does not lead.
func (ld *Leader) Resign() error {
	ld.life.RLock()
	defer ld.life.RUnlock()
	if ld.stopped {
		return errClosed
	}
	rc := C.sqllock_leader_resign(ld.h) // waits for the release
	if rc == C.SQLLOCK_OK {
		return nil
	}
	var buf [512]C.char
	C.sqllock_leader_error(ld.h, &buf[0], C.size_t(len(buf)))
	return newError(rc, C.GoString(&buf[0]))
}

// Close resigns if leader, stops the campaign and frees the candidate;
// Terms is closed. Closing twice is harmless; a Resign of another
// goroutine is waited for.
func (ld *Leader) Close() error {
	ld.life.Lock()
	defer ld.life.Unlock()
	if ld.stopped {
		return nil
	}
	ld.stopped = true
	C.sqllock_leader_stop(ld.h) // joins the campaign thread: no callback after
	ld.ch.Delete()
	close(ld.done)
	ld.fwd.Wait()
	return nil
}

//export goLeaderElected
func goLeaderElected(h C.uintptr_t, token C.int64_t) {
	ld := cgo.Handle(h).Value().(*Leader)
	ctx, cancel := context.WithCancel(context.Background())
	t := Term{Token: int64(token), Ctx: ctx, st: &termState{cancel: cancel}}
	ld.mu.Lock()
	ld.cur = &t
	ld.queue = append(ld.queue, t)
	ld.mu.Unlock()
	select {
	case ld.wake <- struct{}{}:
	default:
	}
}

//export goLeaderLost
func goLeaderLost(h C.uintptr_t, token C.int64_t, status C.int, msg *C.char) {
	ld := cgo.Handle(h).Value().(*Leader)
	ld.mu.Lock()
	t := ld.cur
	if t != nil && t.Token == int64(token) {
		ld.cur = nil
	} else {
		t = nil
	}
	ld.mu.Unlock()
	if t == nil {
		return
	}
	leaderMu.Lock()
	t.st.err = newError(status, C.GoString(msg))
	leaderMu.Unlock()
	t.st.cancel()
}

// LeaderOf reads the current leader of election `name`: ErrNotFound when
// there is none.
func (db *DB) LeaderOf(ctx context.Context, name string) (HolderInfo, error) {
	var out HolderInfo
	cn, err := cstr(name, "the name")
	if err != nil {
		return out, err
	}
	defer C.free(unsafe.Pointer(cn))
	var info C.sqllock_leader_info
	err = db.call(ctx, func(h *C.sqllock_db) C.int { return C.sqllock_leader_get(h, cn, &info) })
	if err != nil {
		return out, err
	}
	return HolderInfo{C.GoString(&info.holder[0]), int64(info.token),
		time.Duration(info.remaining_ms) * time.Millisecond}, nil
}
