package sqllock

/*
#include "helpers.h"
*/
import "C"

import (
	"context"
	"time"
	"unsafe"
)

// Permit is one permit of a semaphore (contract M1): a lease of its own,
// with its own fencing token, renewal and Lost.
type Permit struct {
	*Lease
}

// Index is the permit held, 0..permits-1.
func (p *Permit) Index() int { return p.index }

// Semaphore takes one of `permits` permits of the semaphore `name`
// (1..1000), waiting as Lock does: at most `permits` holders at once,
// across goroutines and processes that agree on the number. A holder that
// dies gives its permit back after its ttl.
func (db *DB) Semaphore(ctx context.Context, name string, permits int, opts ...LockOption) (*Permit, error) {
	k := &kind{
		what: "semaphore",
		newh: func(h *C.sqllock_db, cn *C.char, o *C.sqllock_lease_options) (unsafe.Pointer, C.int) {
			var s *C.sqllock_sem
			rc := C.sqllock_sem_new(h, cn, C.int(permits), o, &s)
			return unsafe.Pointer(s), rc
		},
		acquire: func(h unsafe.Pointer, ms int64) C.int {
			return C.sqllock_sem_acquire((*C.sqllock_sem)(h), C.int64_t(ms))
		},
		try:     func(h unsafe.Pointer) C.int { return C.sqllock_sem_try_acquire((*C.sqllock_sem)(h)) },
		release: func(h unsafe.Pointer) C.int { return C.sqllock_sem_release((*C.sqllock_sem)(h)) },
		lease:   func(h unsafe.Pointer) *C.sqllock_lease { return C.sqllock_sem_lease((*C.sqllock_sem)(h)) },
		free:    func(h unsafe.Pointer) { C.sqllock_sem_free((*C.sqllock_sem)(h)) },
	}
	l, err := db.acquire(ctx, k, name, opts)
	if err != nil {
		return nil, err
	}
	return &Permit{l}, nil
}

// SemaphoreCount counts the live permits of semaphore `name` now.
func (db *DB) SemaphoreCount(ctx context.Context, name string) (int, error) {
	cn, err := cstr(name, "the name")
	if err != nil {
		return 0, err
	}
	defer C.free(unsafe.Pointer(cn))
	var live C.int
	err = db.call(ctx, func(h *C.sqllock_db) C.int { return C.sqllock_sem_count(h, cn, &live) })
	return int(live), err
}

func rwKind(shared bool) *kind {
	sh, what := C.int(0), "exclusive lock"
	if shared {
		sh, what = 1, "shared lock"
	}
	return &kind{
		what: what,
		newh: func(h *C.sqllock_db, cn *C.char, o *C.sqllock_lease_options) (unsafe.Pointer, C.int) {
			var rw *C.sqllock_rw
			rc := C.sqllock_rw_new(h, cn, sh, o, &rw)
			return unsafe.Pointer(rw), rc
		},
		acquire: func(h unsafe.Pointer, ms int64) C.int {
			return C.sqllock_rw_acquire((*C.sqllock_rw)(h), C.int64_t(ms))
		},
		try:     func(h unsafe.Pointer) C.int { return C.sqllock_rw_try_acquire((*C.sqllock_rw)(h)) },
		release: func(h unsafe.Pointer) C.int { return C.sqllock_rw_release((*C.sqllock_rw)(h)) },
		lease:   func(h unsafe.Pointer) *C.sqllock_lease { return C.sqllock_rw_lease((*C.sqllock_rw)(h)) },
		free:    func(h unsafe.Pointer) { C.sqllock_rw_free((*C.sqllock_rw)(h)) },
	}
}

// Shared takes a shared (read) hold of the shared/exclusive lock `name`
// (contract M2): many readers at once, never beside a writer. Waiting is
// as Lock's.
func (db *DB) Shared(ctx context.Context, name string, opts ...LockOption) (*Lease, error) {
	return db.acquire(ctx, rwKind(true), name, opts)
}

// Exclusive takes the exclusive (write) hold of the shared/exclusive lock
// `name`: no reader and no other writer meanwhile. A waiting writer keeps
// new readers out and waits only for those inside. Its Token fences
// writes.
func (db *DB) Exclusive(ctx context.Context, name string, opts ...LockOption) (*Lease, error) {
	return db.acquire(ctx, rwKind(false), name, opts)
}

// GuardStyle is how the application's SQL library writes placeholders.
type GuardStyle struct {
	style C.int
	first int
}

// Qmark: "?" placeholders (go-sql-driver/mysql, mattn/go-sqlite3).
var Qmark = GuardStyle{C.SQLLOCK_PARAM_QMARK, 1}

// Dollar: "$n" placeholders numbered from first (pgx, lib/pq).
func Dollar(first int) GuardStyle { return GuardStyle{C.SQLLOCK_PARAM_DOLLAR, first} }

// Guard returns the condition to AND into the WHERE of the application's
// own write, in its own transaction, and the arguments to bind to its two
// placeholders (the lease's row name, then its token): the write changes
// no row unless this hold still holds the lease when it commits
// (contract G1). Commit before releasing the lease.
//
//	cond, args, err := lease.Guard(sqllock.Dollar(3))
//	tx.ExecContext(ctx, "UPDATE stock SET qty = qty - $1 WHERE id = $2 AND "+cond,
//	    append([]any{1, 7}, args...)...)
func (l *Lease) Guard(style GuardStyle) (string, []any, error) {
	s := l.s
	if s == nil {
		return "", nil, errorf(C.SQLLOCK_ENOTHELD, "%s '%s' is not held", l.k.what, l.name)
	}
	s.lock(context.Background())
	defer s.unlock()
	l.mu.RLock()
	lease := l.lease
	l.mu.RUnlock()
	if lease == nil || s.h == nil {
		return "", nil, errorf(C.SQLLOCK_ENOTHELD, "%s '%s' is not held", l.k.what, l.name)
	}
	row := C.sqllock_lease_name(lease)
	var buf [C.SQLLOCK_GUARD_SQL_MAX]C.char
	rc := C.sqllock_guard_sql(s.h, row, C.int64_t(l.token), style.style, C.int(style.first),
		&buf[0], C.size_t(len(buf)), nil)
	if rc != C.SQLLOCK_OK {
		return "", nil, s.fail(rc)
	}
	return C.GoString(&buf[0]), []any{C.GoString(row), l.token}, nil
}

// durMs is a duration in whole milliseconds, rounded up (so that a
// positive duration never becomes 0, which means "default" in C).
func durMs(d time.Duration) int64 {
	return int64((d + time.Millisecond - 1) / time.Millisecond)
}
