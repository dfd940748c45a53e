package sqllock

/*
#include "helpers.h"
*/
import "C"

import (
	"context"
	"math"
	"sync"
	"time"
	"unsafe"
)

// LeaseInfo is one row of the lease table, as List reads it. Times are by
// the server's clock.
//
// A primitive's rows are in the table too, named as the C library names
// them: the base name, "\x1f" and a tag ("jobs\x1fw" is the writer row of
// the shared/exclusive lock "jobs", "jobs\x1fp0" a semaphore's permit;
// `sqllock list` prints them "jobs [w]"). List keeps those names as they
// are: Lookup and an operator's attach accept them.
type LeaseInfo struct {
	Name, Owner, Holder string
	Token               int64
	AcquiredAt          time.Time
	ExpiresAt           time.Time
	// Remaining is the time left by the server's clock; <= 0 for a lease
	// that expired but whose row was not yet taken over or reaped (the
	// name is held only while Remaining > 0).
	Remaining time.Duration
}

// List reads every lease row, in name order (sqllock_list(): one read of
// the whole table, on the first connection).
func (db *DB) List(ctx context.Context) ([]LeaseInfo, error) {
	var rows *C.sqllock_go_row
	var n C.size_t
	err := db.call(ctx, func(h *C.sqllock_db) C.int { return C.sqllock_go_list(h, &rows, &n) })
	if err != nil {
		return nil, err
	}
	defer C.sqllock_go_rows_free(rows, n)
	out := make([]LeaseInfo, 0, int(n))
	if n == 0 {
		return out, nil
	}
	for _, r := range unsafe.Slice(rows, int(n)) {
		out = append(out, LeaseInfo{
			Name:       C.GoString(r.name),
			Owner:      C.GoString(r.owner),
			Holder:     C.GoString(r.holder),
			Token:      int64(r.token),
			AcquiredAt: time.UnixMilli(int64(r.acquired_at_ms)),
			ExpiresAt:  time.UnixMilli(int64(r.expires_at_ms)),
			Remaining:  time.Duration(r.remaining_ms) * time.Millisecond,
		})
	}
	return out, nil
}

// ReapBatchDefault is the rows per DELETE of Reap(ctx, grace, 0) and of a
// Reaper without ReapBatch.
const ReapBatchDefault = 1000

// Reap runs one pass of the reaper (contract P1, P4) on the first
// connection: it deletes the lease rows that expired more than grace ago
// by the server's clock, batch rows per statement (0: 1000), and returns
// how many it deleted -- also with an error, when a later statement
// failed. Only expired rows go (judged inside the DELETE), and tokens
// stay monotonic afterwards (L5). A negative grace or a batch outside
// 1..1000000 is ErrInvalid.
func (db *DB) Reap(ctx context.Context, grace time.Duration, batch int) (int64, error) {
	if batch == 0 {
		batch = ReapBatchDefault
	}
	cb, err := cBatch(batch)
	if err != nil {
		return 0, err
	}
	var deleted C.int64_t
	err = db.call(ctx, func(h *C.sqllock_db) C.int {
		return C.sqllock_reap(h, C.int64_t(durationMs(grace)), cb, &deleted)
	})
	return int64(deleted), err
}

// durationMs is d in whole milliseconds, rounded away from zero, so that
// C sees a sub-millisecond negative duration as negative (and refuses it)
// and a positive one as at least 1 ms rather than 0, its "default".
func durationMs(d time.Duration) int64 {
	ms := d.Milliseconds()
	if time.Duration(ms)*time.Millisecond != d {
		if d > 0 {
			ms++
		} else {
			ms--
		}
	}
	return ms
}

// cBatch is batch as a C int; C itself judges the range 1..1000000, but a
// Go int beyond a C int's would be cut short on the way.
func cBatch(batch int) (C.int, error) {
	if batch < math.MinInt32 || batch > math.MaxInt32 {
		return 0, errorf(C.SQLLOCK_EINVAL, "the batch size of %d rows is too large; "+
			"the limit is 1000000", batch)
	}
	return C.int(batch), nil
}

// ReaperStats are a reaper's counters, copied at one moment.
type ReaperStats struct {
	Reaped  int64 // rows deleted
	Passes  int64 // passes completed, failed ones included
	Errors  int64 // passes that failed
	LastErr error // the last pass's error (an *Error); nil after a success
}

type reaperConfig struct {
	every, grace time.Duration
	batch        int
}

// ReaperOption configures StartReaper.
type ReaperOption func(*reaperConfig)

// ReapEvery is the time between passes (default 60 s).
func ReapEvery(d time.Duration) ReaperOption { return func(c *reaperConfig) { c.every = d } }

// ReapGrace: only rows expired longer ago than d go (default 0).
func ReapGrace(d time.Duration) ReaperOption { return func(c *reaperConfig) { c.grace = d } }

// ReapBatch is the rows per DELETE (default 1000, at most 1000000).
func ReapBatch(n int) ReaperOption { return func(c *reaperConfig) { c.batch = n } }

// Reaper is a thread of the C library, with a connection of its own, that
// deletes expired lease rows (contract P1-P4): a pass at once, then one
// every interval. Errors of a pass are counted in Stats, not returned;
// the thread keeps trying, reconnecting as needed. Safe for concurrent
// use; end it with Stop.
type Reaper struct {
	mu   sync.Mutex
	h    *C.sqllock_reaper // nil once stopped
	last ReaperStats       // the counters Stop read last
}

// StartReaper opens the reaper's connection to url (so a bad URL or an
// unreachable database is reported here: ErrURL, ErrScheme, ErrConnect,
// ...) and starts its thread. Bad options are ErrInvalid.
func StartReaper(url string, opts ...ReaperOption) (*Reaper, error) {
	var cfg reaperConfig
	for _, o := range opts {
		o(&cfg)
	}
	if url == "" {
		return nil, errorf(C.SQLLOCK_EINVAL, "the database URL is empty")
	}
	cu, err := cstr(url, "the URL")
	if err != nil {
		return nil, err
	}
	defer C.free(unsafe.Pointer(cu))
	cb, err := cBatch(cfg.batch)
	if err != nil {
		return nil, err
	}
	r := &Reaper{}
	var why [512]C.char
	rc := C.sqllock_go_reaper_start(cu, C.int64_t(durationMs(cfg.every)),
		C.int64_t(durationMs(cfg.grace)), cb, &r.h, &why[0], C.size_t(len(why)))
	if rc != C.SQLLOCK_OK {
		return nil, newError(rc, C.GoString(&why[0]))
	}
	return r, nil
}

// Stats copies the counters (sqllock_reaper_stats_get()). After Stop it
// returns the counters as Stop last read them.
func (r *Reaper) Stats() ReaperStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.read()
	return r.last
}

// read refreshes r.last from the running thread; with r.mu held.
func (r *Reaper) read() {
	if r.h == nil {
		return
	}
	var s C.sqllock_reaper_stats
	if C.sqllock_reaper_stats_get(r.h, &s) != C.SQLLOCK_OK {
		return
	}
	r.last = ReaperStats{Reaped: int64(s.reaped), Passes: int64(s.passes),
		Errors:  int64(s.errors),
		LastErr: newError(C.int(s.last_status), C.GoString(&s.last_error[0]))}
}

// Stop wakes the thread, waits for it to end (within one statement's
// time: it never sleeps through the request) and frees it. Stopping twice,
// or from several goroutines at once, is harmless. A pass that was running
// ends after its current statement; the rows it deleted then are not in
// Stats.
func (r *Reaper) Stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.h == nil {
		return
	}
	r.read()
	C.sqllock_reaper_stop(r.h)
	r.h = nil
}
