package sqllock

/*
#include "helpers.h"
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"runtime/cgo"
	"sync"
	"time"
	"unsafe"
)

type lockConfig struct {
	ttl, margin, renewEvery time.Duration
	wait                    time.Duration
	hasWait                 bool
	noRenew, fair, noWakeup bool
	holder                  string
}

// LockOption configures Lock, TryLock, Semaphore, Shared and Exclusive.
type LockOption func(*lockConfig)

// TTLDefault is the ttl of a lease unless TTL says otherwise.
const TTLDefault = 30 * time.Second

// TTL is how long the lease lasts after each acquire or renewal, judged
// by the database server's clock (contract L2); positive. Default 30 s.
func TTL(d time.Duration) LockOption { return func(c *lockConfig) { c.ttl = d } }

// Wait bounds the wait for the lock, as an alternative (or in addition)
// to the context's deadline: Wait(0) tries once (ErrBusy when held); when
// it runs out the error is ErrTimeout. Without Wait and without a
// deadline on the context, Lock waits until the context is cancelled.
func Wait(d time.Duration) LockOption {
	return func(c *lockConfig) { c.wait, c.hasWait = d, true }
}

// NoRenew leaves the lease without the watchdog: it lasts one ttl unless
// the application calls Renew, and Lost() fires only when a Renew or the
// Release finds it lost.
func NoRenew() LockOption { return func(c *lockConfig) { c.noRenew = true } }

// Fair queues the waiters (contract M3): the oldest live waiter gets the
// lock next. A fair wait is ONE wait of the C library (leaving the queue
// between slices would lose the waiter's place); a context that ends
// meanwhile ends it at once all the same (sqllock_lease_cancel: within
// one pause of its backoff), its place in the queue given up.
func Fair() LockOption { return func(c *lockConfig) { c.fair = true } }

// NoWakeup makes waits poll only, and releases send no wake-up
// (SQLLOCK_LEASE_NO_WAKEUP).
func NoWakeup() LockOption { return func(c *lockConfig) { c.noWakeup = true } }

// Holder is the text `sqllock list` shows for the holder (default
// "host:pid").
func Holder(text string) LockOption { return func(c *lockConfig) { c.holder = text } }

// SafetyMargin: how much earlier than the server the holder stops
// believing it holds (contract L6). Default ttl/10.
func SafetyMargin(d time.Duration) LockOption { return func(c *lockConfig) { c.margin = d } }

// RenewEvery is the watchdog's interval (default ttl/3).
func RenewEvery(d time.Duration) LockOption { return func(c *lockConfig) { c.renewEvery = d } }

// kind is how one kind of hold is made, taken, given up and freed: a
// plain lease, a semaphore permit, a shared or an exclusive hold.
type kind struct {
	what    string
	newh    func(db *C.sqllock_db, name *C.char, o *C.sqllock_lease_options) (unsafe.Pointer, C.int)
	acquire func(h unsafe.Pointer, waitMs int64) C.int
	try     func(h unsafe.Pointer) C.int // one try (cheaper than acquire(h, 0))
	release func(h unsafe.Pointer) C.int
	lease   func(h unsafe.Pointer) *C.sqllock_lease
	free    func(h unsafe.Pointer)
}

var plainKind = &kind{
	what: "lock",
	newh: func(db *C.sqllock_db, name *C.char, o *C.sqllock_lease_options) (unsafe.Pointer, C.int) {
		var l *C.sqllock_lease
		rc := C.sqllock_lease_new(db, name, o, &l)
		return unsafe.Pointer(l), rc
	},
	acquire: func(h unsafe.Pointer, ms int64) C.int {
		return C.sqllock_lease_acquire((*C.sqllock_lease)(h), C.int64_t(ms))
	},
	try:     func(h unsafe.Pointer) C.int { return C.sqllock_lease_try_acquire((*C.sqllock_lease)(h)) },
	release: func(h unsafe.Pointer) C.int { return C.sqllock_lease_release((*C.sqllock_lease)(h)) },
	lease:   func(h unsafe.Pointer) *C.sqllock_lease { return (*C.sqllock_lease)(h) },
	free:    func(h unsafe.Pointer) { C.sqllock_lease_free((*C.sqllock_lease)(h)) },
}

// Lease is one hold of a lock, a permit or a shared/exclusive lock. Its
// accessors (Token, Lost, Err, State, Remaining) may be called from any
// goroutine; Release, Renew and Guard are safe from any goroutine too (the
// connection's lock orders them).
type Lease struct {
	db    *DB
	s     *session // the connection the hold is bound to
	k     *kind
	name  string
	cfg   lockConfig
	bound bool // acquired by a wait on a connection of its own

	mu    sync.RWMutex   // the C handle's life
	h     unsafe.Pointer // the kind's handle; nil once freed
	lease *C.sqllock_lease
	ch    cgo.Handle // the watch callback's, 0 without

	token int64
	owner string
	index int

	lostMu  sync.Mutex
	lost    chan struct{}
	lostErr error
}

// Lock takes the lease lock `name`, waiting while another owner holds it
// until ctx ends or Wait runs out (contract L1, L9). The lease is renewed
// by the watchdog until released (contract L7) unless NoRenew.
//
// A wait runs as C waits of at most 200 ms each (wake-ups work within
// each) and checks ctx between them: when ctx ends, Lock returns an
// *Error that unwraps to ctx.Err() (see Error) and leaves nothing held --
// a slice granted as ctx ended is released first. A Fair wait is one C
// wait, which ctx's end stops at once (sqllock_lease_cancel), with the
// same errors.
func (db *DB) Lock(ctx context.Context, name string, opts ...LockOption) (*Lease, error) {
	return db.acquire(ctx, plainKind, name, opts)
}

// TryLock tries once: ErrBusy (naming the holder) when another owner
// holds the lock.
func (db *DB) TryLock(ctx context.Context, name string, opts ...LockOption) (*Lease, error) {
	return db.acquire(ctx, plainKind, name, append(opts, Wait(0)))
}

func (db *DB) acquire(ctx context.Context, k *kind, name string, opts []LockOption) (*Lease, error) {
	cfg := lockConfig{ttl: TTLDefault}
	for _, o := range opts {
		o(&cfg)
	}
	what := fmt.Sprintf("%s '%s'", k.what, name)
	if cfg.hasWait && cfg.wait < 0 {
		return nil, errorf(C.SQLLOCK_EINVAL, "%s: the wait must not be negative", what)
	}
	if cfg.fair && k != plainKind {
		// Only a lease waits in a fair queue (M3, docs/primitives.md);
		// the other kinds' waits cannot be cancelled in one C wait.
		return nil, errorf(C.SQLLOCK_EINVAL, "%s: Fair() is for Lock only: "+
			"only a lease waits in a fair queue", what)
	}
	if err := ctx.Err(); err != nil {
		return nil, ctxError(ctx, what)
	}
	start := time.Now()
	var deadline time.Time // zero: none but ctx's cancellation
	if cfg.hasWait {
		deadline = start.Add(cfg.wait)
	}
	fromCtx := false // the deadline is the context's
	if d, ok := ctx.Deadline(); ok && (deadline.IsZero() || !deadline.Before(d)) {
		deadline, fromCtx = d, true
	}
	l := &Lease{db: db, k: k, name: name, cfg: cfg, lost: make(chan struct{}), index: -1}

	// One try on the first connection.
	s, err := db.main()
	if err != nil {
		return nil, err
	}
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	if err := l.make(s); err != nil {
		s.unlock()
		return nil, err
	}
	rc, err := l.try(0)
	if err == nil {
		s.unlock()
		return l, nil
	}
	busy := rc == C.SQLLOCK_BUSY || rc == C.SQLLOCK_TIMEOUT
	if busy && k == plainKind {
		err = l.withHolder(err)
	}
	l.free()
	s.unlock()
	if !busy || (cfg.hasWait && cfg.wait == 0) {
		return nil, err
	}

	// The wait, on a connection of the pool's own.
	w, err := db.checkout(ctx, deadline, what)
	if err != nil {
		return nil, err
	}
	defer db.checkin(w)
	if err := w.lock(ctx); err != nil {
		return nil, err
	}
	err = l.make(w)
	w.unlock()
	if err != nil {
		return nil, err
	}
	for {
		if ctx.Err() != nil {
			l.drop(w)
			return nil, ctxError(ctx, what)
		}
		step := slice
		if !deadline.IsZero() {
			left := time.Until(deadline)
			if left <= 0 {
				if ctx.Err() != nil || fromCtx {
					// The context's timer may fire a moment later.
					l.drop(w)
					return nil, deadlineError(what)
				}
				err := errorf(C.SQLLOCK_TIMEOUT, "%s was still held by another "+
					"owner after waiting %v", what, time.Since(start).Round(time.Millisecond))
				w.lock(context.Background())
				if k == plainKind && w.h != nil {
					err = l.withHolder(err)
				}
				l.free()
				w.unlock()
				return nil, err
			}
			if left < step || cfg.fair {
				step = left
			}
		} else if cfg.fair {
			step = time.Duration(C.SQLLOCK_WAIT_FOREVER)
		}
		w.lock(context.Background())
		l.mu.RLock()
		gone := l.h == nil || w.h == nil
		l.mu.RUnlock()
		if gone {
			w.unlock()
			return nil, errClosed
		}
		ms := step.Milliseconds()
		if step == time.Duration(C.SQLLOCK_WAIT_FOREVER) {
			ms = int64(C.SQLLOCK_WAIT_FOREVER)
		} else if ms < 1 {
			ms = 1
		}
		var rc C.int
		if cfg.fair && k == plainKind {
			rc, err = l.tryCancellable(ctx, ms)
		} else {
			rc, err = l.try(ms)
		}
		if err == nil {
			if ctx.Err() != nil {
				// Granted as the context ended: never leave it held.
				l.releaseLocked()
				w.unlock()
				return nil, ctxError(ctx, what)
			}
			w.unlock()
			if w != db.sessions0() {
				db.mu.Lock()
				w.held++
				l.bound = true
				db.mu.Unlock()
			}
			return l, nil
		}
		w.unlock()
		if rc == C.SQLLOCK_ECANCELED && ctx.Err() != nil {
			// The context ended the fair wait: nothing held, out of the queue.
			l.drop(w)
			return nil, ctxError(ctx, what)
		}
		if rc != C.SQLLOCK_TIMEOUT && rc != C.SQLLOCK_BUSY {
			l.drop(w)
			return nil, err
		}
	}
}

func (db *DB) sessions0() *session {
	db.mu.Lock()
	defer db.mu.Unlock()
	return db.sessions[0]
}

// make creates the C handle on connection s; with s's lock held.
func (l *Lease) make(s *session) error {
	if s.h == nil {
		return errClosed
	}
	cn, err := cstr(l.name, "the name")
	if err != nil {
		return err
	}
	defer C.free(unsafe.Pointer(cn))
	var holder *C.char
	if l.cfg.holder != "" {
		if holder, err = cstr(l.cfg.holder, "the holder"); err != nil {
			return err
		}
		defer C.free(unsafe.Pointer(holder))
	}
	var flags C.uint
	if l.cfg.noWakeup {
		flags |= C.SQLLOCK_LEASE_NO_WAKEUP
	}
	if l.cfg.fair {
		flags |= C.SQLLOCK_LEASE_FAIR
	}
	var o C.sqllock_lease_options
	C.sqllock_go_lease_opts(&o, C.int64_t(l.cfg.ttl.Milliseconds()),
		C.int64_t(l.cfg.margin.Milliseconds()), holder, flags)
	if l.cfg.ttl > 0 && l.cfg.ttl < time.Millisecond {
		return errorf(C.SQLLOCK_EINVAL, "the ttl must be at least 1 ms, not %v", l.cfg.ttl)
	}
	h, rc := l.k.newh(s.h, cn, &o)
	if rc != C.SQLLOCK_OK {
		return s.fail(rc)
	}
	l.mu.Lock()
	l.s, l.h = s, h
	l.mu.Unlock()
	s.leases[l] = true
	return nil
}

// try is one C acquire of up to ms (0: once) on the lease's connection,
// with its lock held; on success the hold is set up (token, watch).
func (l *Lease) try(ms int64) (C.int, error) {
	s := l.s
	if !l.cfg.noRenew {
		if rc := C.sqllock_watch_prepare(s.h); rc != C.SQLLOCK_OK {
			return rc, s.fail(rc)
		}
	}
	var rc C.int
	if ms == 0 {
		rc = l.k.try(l.h)
	} else {
		rc = l.k.acquire(l.h, ms)
	}
	if rc != C.SQLLOCK_OK {
		return rc, s.fail(rc)
	}
	return l.setup()
}

// tryCancellable is try for a fair wait, ONE C wait however long: when
// ctx ends meanwhile, a watcher goroutine asks the C wait to end
// (sqllock_lease_cancel, the one call E3 allows from another thread). On
// the plain kind only (l.h is the C lease); with the connection's lock
// held, so the handle cannot be freed while the watcher may still run.
func (l *Lease) tryCancellable(ctx context.Context, ms int64) (C.int, error) {
	done := ctx.Done()
	if done == nil { // never cancelled
		return l.try(ms)
	}
	h := (*C.sqllock_lease)(l.h)
	stop := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		select {
		case <-done:
			C.sqllock_lease_cancel(h, 1)
		case <-stop:
		}
	}()
	rc, err := l.try(ms)
	close(stop)
	<-finished // no cancel call after this one: the handle may be freed next
	// Withdraw a request the wait did not see (it ended first, e.g.
	// granted): it would end the handle's next wait before its first try.
	C.sqllock_lease_cancel(h, 0)
	return rc, err
}

// setup notes the new hold (token, owner, permit) and puts it under the
// watchdog; with the connection's lock held.
func (l *Lease) setup() (C.int, error) {
	s := l.s
	lease := l.k.lease(l.h)
	l.mu.Lock()
	l.lease = lease
	l.mu.Unlock()
	l.token = int64(C.sqllock_lease_token(lease))
	l.owner = C.GoString(C.sqllock_lease_owner(lease))
	if l.k.what == "semaphore" {
		l.index = int(C.sqllock_sem_permit((*C.sqllock_sem)(l.h)))
	}
	if !l.cfg.noRenew {
		ch := cgo.NewHandle(l)
		rc := C.sqllock_go_watch(lease, C.int64_t(l.cfg.renewEvery.Milliseconds()), C.uintptr_t(ch))
		if rc != C.SQLLOCK_OK {
			err := s.fail(rc)
			ch.Delete()
			l.k.release(l.h)
			return rc, err
		}
		l.mu.Lock()
		l.ch = ch
		l.mu.Unlock()
	}
	return C.SQLLOCK_OK, nil
}

// withHolder adds who holds the name to a Busy or Timeout error; with
// the connection's lock held.
func (l *Lease) withHolder(err error) error {
	cn := C.CString(l.name)
	defer C.free(unsafe.Pointer(cn))
	var buf [C.SQLLOCK_HOLDER_MAX + 1]C.char
	var token, left C.int64_t
	if C.sqllock_go_lookup(l.s.h, cn, &buf[0], C.size_t(len(buf)), &token, &left) != C.SQLLOCK_OK {
		return err
	}
	e := err.(*Error)
	e.Msg = fmt.Sprintf("%s: holder %q, token %d, %.1fs left", e.Msg,
		C.GoString(&buf[0]), int64(token), float64(left)/1000)
	return e
}

// drop frees the handle of a lease that holds nothing, under s's lock.
func (l *Lease) drop(s *session) {
	s.lock(context.Background())
	l.free()
	s.unlock()
}

// free unwatches and frees the C handle; with the connection's lock held.
// A hold still held is NOT released (it expires).
func (l *Lease) free() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.h == nil {
		return
	}
	l.k.free(l.h) // unwatches first: no callback runs after this
	l.h, l.lease = nil, nil
	if l.ch != 0 {
		l.ch.Delete()
		l.ch = 0
	}
	delete(l.s.leases, l)
}

// releaseLocked releases and frees; with the connection's lock held.
func (l *Lease) releaseLocked() error {
	rc := l.k.release(l.h)
	err := l.s.fail(rc)
	if rc == C.SQLLOCK_OK || rc == C.SQLLOCK_LOST || rc == C.SQLLOCK_ENOTHELD {
		l.free()
	}
	return err
}

// Release gives the lock up. ErrLost when it had been lost (taken over,
// or removed after it expired: contract L4) -- the hold is over all the
// same. ctx bounds only the wait for the connection: once sent, a release
// completes. After a connection error the lease is still held: call
// Release again (it lasts at most its ttl).
func (l *Lease) Release(ctx context.Context) error {
	s := l.s
	if s == nil {
		return errorf(C.SQLLOCK_ENOTHELD, "%s '%s' is not held", l.k.what, l.name)
	}
	if err := s.lock(ctx); err != nil {
		return err
	}
	l.mu.RLock()
	h := l.h
	l.mu.RUnlock()
	if h == nil || s.h == nil {
		s.unlock()
		return errorf(C.SQLLOCK_ENOTHELD, "%s '%s' is not held (released, or its "+
			"database was closed)", l.k.what, l.name)
	}
	err := l.releaseLocked()
	freed := l.h == nil
	s.unlock()
	if freed && l.bound {
		l.db.mu.Lock()
		s.held--
		l.bound = false
		l.db.notify()
		l.db.mu.Unlock()
	}
	if errors.Is(err, ErrLost) {
		l.markLost(err)
	}
	return err
}

// Renew extends the lease to a full ttl now (the watchdog does this by
// itself unless NoRenew). ErrLost when another owner took it over.
func (l *Lease) Renew(ctx context.Context) error {
	s := l.s
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.unlock()
	l.mu.RLock()
	lease := l.lease
	l.mu.RUnlock()
	if lease == nil || s.h == nil {
		return errorf(C.SQLLOCK_ENOTHELD, "%s '%s' is not held", l.k.what, l.name)
	}
	err := s.fail(C.sqllock_lease_renew(lease))
	if errors.Is(err, ErrLost) {
		l.markLost(err)
	}
	return err
}

func (l *Lease) markLost(err error) {
	l.lostMu.Lock()
	defer l.lostMu.Unlock()
	if l.lostErr == nil {
		l.lostErr = err
		close(l.lost)
	}
}

// Lost is closed once the hold is found lost: by the watchdog (another
// owner took it over: ErrLost; the local deadline passed without a
// renewal: ErrTimeout), or by a Renew or Release that finds it lost.
// Stop acting as the holder when it is closed.
func (l *Lease) Lost() <-chan struct{} { return l.lost }

// Err says why the lease was lost (nil while it was not).
func (l *Lease) Err() error {
	l.lostMu.Lock()
	defer l.lostMu.Unlock()
	return l.lostErr
}

// Name is the lock's name.
func (l *Lease) Name() string { return l.name }

// Token is the hold's fencing token (contract L5): larger than every
// token issued before for the name.
func (l *Lease) Token() int64 { return l.token }

// Owner is the hold's owner id (32 hex digits).
func (l *Lease) Owner() string { return l.owner }

// LeaseState is what a lease knows of its hold.
type LeaseState int

const (
	NotHeld   LeaseState = C.SQLLOCK_STATE_NOT_HELD
	Held      LeaseState = C.SQLLOCK_STATE_HELD
	Uncertain LeaseState = C.SQLLOCK_STATE_UNCERTAIN // renewals failing; deadline ahead
	LostState LeaseState = C.SQLLOCK_STATE_LOST
)

func (s LeaseState) String() string {
	return C.GoString(C.sqllock_lease_state_name(C.int(s)))
}

// State reads the hold's state (atomics only: any goroutine, any time).
func (l *Lease) State() LeaseState {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.lease == nil {
		return NotHeld
	}
	return LeaseState(C.sqllock_lease_state(l.lease))
}

// Held reports whether the hold is held and its local deadline (L6) is
// ahead.
func (l *Lease) Held() bool {
	st := l.State()
	return st == Held || st == Uncertain
}

// Remaining is how long the holder may still count on the lease without a
// further renewal (contract L6).
func (l *Lease) Remaining() time.Duration {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.lease == nil {
		return 0
	}
	return time.Duration(C.sqllock_lease_remaining_ms(l.lease)) * time.Millisecond
}

//export goWatchEvent
func goWatchEvent(h C.uintptr_t, state, status C.int, msg *C.char) {
	// On the renewer's thread: only note the loss (no lock the handle's
	// users may hold while they wait for this callback).
	if state != C.SQLLOCK_STATE_LOST {
		return
	}
	l := cgo.Handle(h).Value().(*Lease)
	l.markLost(newError(status, C.GoString(msg)))
}
