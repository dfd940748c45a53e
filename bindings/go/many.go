package sqllock

/*
#include "helpers.h"
*/
import "C"

import (
	"context"
	"fmt"
	"time"
	"unsafe"
)

// LockMany takes several lease locks at once, all or none (contract
// L12): one transaction takes every name, in one order whatever the
// order given, so two LockMany calls never deadlock. Each lease has its
// own token and watchdog and is released by itself. Waiting is as
// Lock's (C waits of at most 200 ms, ctx checked between them); on any
// failure nothing is held. Not for Fair leases.
func (db *DB) LockMany(ctx context.Context, names []string, opts ...LockOption) ([]*Lease, error) {
	cfg := lockConfig{ttl: TTLDefault}
	for _, o := range opts {
		o(&cfg)
	}
	what := fmt.Sprintf("locks %q", names)
	if len(names) == 0 || len(names) > C.SQLLOCK_LEASE_MANY_MAX {
		return nil, errorf(C.SQLLOCK_EINVAL, "%s: give 1 to %d names", what, C.SQLLOCK_LEASE_MANY_MAX)
	}
	if cfg.hasWait && cfg.wait < 0 {
		return nil, errorf(C.SQLLOCK_EINVAL, "%s: the wait must not be negative", what)
	}
	if err := ctx.Err(); err != nil {
		return nil, ctxError(ctx, what)
	}
	var deadline time.Time
	if cfg.hasWait {
		deadline = time.Now().Add(cfg.wait)
	}
	fromCtx := false
	if d, ok := ctx.Deadline(); ok && (deadline.IsZero() || !deadline.Before(d)) {
		deadline, fromCtx = d, true
	}
	try := cfg.hasWait && cfg.wait == 0
	var s *session
	var err error
	if try {
		s, err = db.main()
	} else {
		s, err = db.checkout(ctx, deadline, what)
		if err == nil {
			defer db.checkin(s)
		}
	}
	if err != nil {
		return nil, err
	}
	leases := make([]*Lease, len(names))
	arr := (**C.sqllock_lease)(C.calloc(C.size_t(len(names)), C.size_t(unsafe.Sizeof(uintptr(0)))))
	defer C.free(unsafe.Pointer(arr))
	carr := unsafe.Slice(arr, len(names))
	s.lock(context.Background())
	for i, n := range names {
		leases[i] = &Lease{db: db, k: plainKind, name: n, cfg: cfg, lost: make(chan struct{}), index: -1}
		if err := leases[i].make(s); err != nil {
			for _, l := range leases[:i] {
				l.free()
			}
			s.unlock()
			return nil, err
		}
		carr[i] = (*C.sqllock_lease)(leases[i].h)
	}
	if !cfg.noRenew {
		if rc := C.sqllock_watch_prepare(s.h); rc != C.SQLLOCK_OK {
			err := s.fail(rc)
			s.unlock()
			freeAll(s, leases)
			return nil, err
		}
	}
	s.unlock()
	for {
		ms := int64(0)
		if !try {
			if ctx.Err() != nil {
				freeAll(s, leases)
				return nil, ctxError(ctx, what)
			}
			step := slice
			if !deadline.IsZero() {
				left := time.Until(deadline)
				if left <= 0 {
					freeAll(s, leases)
					if fromCtx || ctx.Err() != nil {
						return nil, deadlineError(what)
					}
					return nil, errorf(C.SQLLOCK_TIMEOUT, "%s: still held by another owner", what)
				}
				if left < step {
					step = left
				}
			}
			ms = durMs(step)
		}
		s.lock(context.Background())
		if s.h == nil {
			s.unlock()
			return nil, errClosed
		}
		rc := C.sqllock_lease_acquire_many(s.h, arr, C.int(len(names)), C.int64_t(ms))
		if rc == C.SQLLOCK_OK {
			if ctx.Err() != nil {
				C.sqllock_lease_release_many(s.h, arr, C.int(len(names)))
				s.unlock()
				freeAll(s, leases)
				return nil, ctxError(ctx, what)
			}
			for i, l := range leases {
				if rc, err := l.setup(); rc != C.SQLLOCK_OK {
					for _, m := range leases[:i] {
						m.releaseLocked()
					}
					s.unlock()
					freeAll(s, leases)
					return nil, err
				}
			}
			s.unlock()
			if s != db.sessions0() {
				db.mu.Lock()
				for _, l := range leases {
					s.held++
					l.bound = true
				}
				db.mu.Unlock()
			}
			return leases, nil
		}
		err := s.fail(rc)
		s.unlock()
		if try || (rc != C.SQLLOCK_TIMEOUT && rc != C.SQLLOCK_BUSY) {
			freeAll(s, leases)
			return nil, err
		}
	}
}

func freeAll(s *session, leases []*Lease) {
	s.lock(context.Background())
	defer s.unlock()
	for _, l := range leases {
		if l != nil {
			l.free()
		}
	}
}
