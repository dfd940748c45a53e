// Package sqllock is the Go binding of libsqllock: distributed locks on
// the PostgreSQL, MySQL/MariaDB or SQLite database an application already
// runs. Lease locks with watchdog renewal and fencing tokens, semaphores,
// shared/exclusive locks, leader election, row-lock transactions,
// versioned records and the guard of the application's own writes.
//
//	db, err := sqllock.Open("postgres://app:pw@db1/shop")
//	lease, err := db.Lock(ctx, "nightly-report", sqllock.TTL(30*time.Second))
//	defer lease.Release(context.Background())
//	select { case <-lease.Lost(): ...; default: }
//
// The lock contract the calls keep is docs/contract.md of the repository;
// the rules named in comments (L1, M2, G1, ...) are its.
package sqllock

/*
#cgo pkg-config: sqllock
#include "helpers.h"
*/
import "C"

import (
	"context"
	"sync"
	"time"
	"unsafe"
)

// MaxConnsDefault is how many connections a DB opens at most unless
// MaxConns says otherwise.
const MaxConnsDefault = 8

// slice is the longest single C wait: a context that ends is noticed
// within it (wake-ups still work inside each wait).
const slice = 200 * time.Millisecond

// session is one connection of a DB: a sqllock_db of the C library. tok
// is its lock (contract E3: one goroutine in the handle at a time); the
// other fields belong to the DB's mutex.
type session struct {
	h      *C.sqllock_db
	tok    chan struct{}
	busy   bool            // checked out for a wait or a transaction
	held   int             // leases a wait acquired here, still held
	leases map[*Lease]bool // live lease handles made here (freed by Close)
}

func newSession() *session {
	return &session{tok: make(chan struct{}, 1), leases: map[*Lease]bool{}}
}

// lock takes the handle, waiting until ctx ends. A handle free at once is
// taken even with a context that already ended (a release still runs).
func (s *session) lock(ctx context.Context) error {
	select {
	case s.tok <- struct{}{}:
		return nil
	default:
	}
	select {
	case s.tok <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctxError(ctx, "waiting for a connection of the handle")
	}
}

func (s *session) unlock() { <-s.tok }

// fail is the Error of rc with the handle's message; call with the lock
// held, right after the call that returned rc.
func (s *session) fail(rc C.int) error {
	if rc == C.SQLLOCK_OK {
		return nil
	}
	return newError(rc, C.GoString(C.sqllock_errmsg(s.h)))
}

type dbConfig struct {
	maxConns                 int
	busy, connect, statement time.Duration
	init                     bool
}

// DBOption configures Open.
type DBOption func(*dbConfig)

// MaxConns bounds the connections of the DB's pool (default 8; see DB).
func MaxConns(n int) DBOption { return func(c *dbConfig) { c.maxConns = n } }

// BusyTimeout: how long one statement waits for the database's own locks
// (SQLite's busy timeout; default 5 s).
func BusyTimeout(d time.Duration) DBOption { return func(c *dbConfig) { c.busy = d } }

// ConnectTimeout bounds each connect (default 10 s).
func ConnectTimeout(d time.Duration) DBOption { return func(c *dbConfig) { c.connect = d } }

// StatementTimeout bounds each round trip on the client's side (default
// 30 s).
func StatementTimeout(d time.Duration) DBOption {
	return func(c *dbConfig) { c.statement = d }
}

// InitSchema makes Open create the sqllock tables when they do not exist
// (sqllock_init(): idempotent; an existing schema is only read).
func InitSchema() DBOption { return func(c *dbConfig) { c.init = true } }

// DB is a pool of connections to one database, safe for concurrent use
// by goroutines. Make it with Open, end it with Close.
//
// Short calls (a try, a release, the records, a lookup) run on the first
// connection, one goroutine at a time for a round trip or two. A blocking
// wait (a Lock that finds the name held and may wait) takes a connection
// of the pool to itself, so that it holds up no other goroutine's call;
// the lease it acquires stays bound to that connection until released
// (its wake-ups live there), and the connection serves no other wait
// meanwhile. A row-lock transaction takes one for its whole life. The
// pool opens connections as they are needed, up to MaxConns, and keeps
// them until Close; waiting for a free one is bounded by the caller's
// context (and Wait).
//
// Connection budget: at most MaxConns connections, plus one renewer
// connection per connection on which a renewed lease is held: at most
// 2 x MaxConns.
type DB struct {
	url    string
	cfg    dbConfig
	driver string

	mu       sync.Mutex
	sessions []*session
	opening  int
	changed  chan struct{} // closed and replaced when the pool changes
	closed   bool
}

// Open connects to the database at url ("postgres://...", "mysql://...",
// "sqlite:///path/file.db"). Bad input fails with ErrInvalid, ErrURL or
// ErrScheme; an unreachable server with ErrConnect.
func Open(url string, opts ...DBOption) (*DB, error) {
	cfg := dbConfig{maxConns: MaxConnsDefault}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.maxConns < 1 {
		return nil, errorf(C.SQLLOCK_EINVAL, "MaxConns must be at least 1, not %d", cfg.maxConns)
	}
	if cfg.busy < 0 || cfg.connect < 0 || cfg.statement < 0 {
		return nil, errorf(C.SQLLOCK_EINVAL, "timeouts must not be negative")
	}
	if url == "" {
		return nil, errorf(C.SQLLOCK_EINVAL, "the database URL is empty")
	}
	db := &DB{url: url, cfg: cfg, changed: make(chan struct{})}
	s := newSession()
	if err := db.openSession(s); err != nil {
		return nil, err
	}
	db.sessions = []*session{s}
	db.driver = C.GoString(C.sqllock_db_driver(s.h))
	if cfg.init {
		if err := db.Init(); err != nil {
			db.Close()
			return nil, err
		}
	}
	return db, nil
}

func (db *DB) openSession(s *session) error {
	curl := C.CString(db.url)
	defer C.free(unsafe.Pointer(curl))
	var h *C.sqllock_db
	rc := C.sqllock_go_open(curl, C.int64_t(db.cfg.busy.Milliseconds()),
		C.int64_t(db.cfg.connect.Milliseconds()),
		C.int64_t(db.cfg.statement.Milliseconds()), &h)
	if rc != C.SQLLOCK_OK {
		msg := ""
		if h != nil {
			msg = C.GoString(C.sqllock_errmsg(h))
		}
		C.sqllock_close(h)
		return newError(rc, msg)
	}
	s.h = h
	return nil
}

// main is the first connection, or an error once the DB is closed.
func (db *DB) main() (*session, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.closed {
		return nil, errClosed
	}
	return db.sessions[0], nil
}

var errClosed = &Error{Status: C.SQLLOCK_EMISUSE, Name: "SQLLOCK_EMISUSE",
	Msg: "the database handle is closed"}

// notify wakes the goroutines waiting for a connection; with db.mu held.
func (db *DB) notify() {
	close(db.changed)
	db.changed = make(chan struct{})
}

// checkout gives a connection of the pool to a wait or a transaction,
// to itself until checkin: one that is not busy and holds no lease of a
// wait, opened when none is and the pool may grow, else waited for until
// ctx ends or `deadline` (zero: none) passes. With MaxConns 1 it is the
// first connection, shared (its lock keeps the calls apart).
func (db *DB) checkout(ctx context.Context, deadline time.Time, what string) (*session, error) {
	db.mu.Lock()
	for {
		if db.closed {
			db.mu.Unlock()
			return nil, errClosed
		}
		if db.cfg.maxConns == 1 {
			s := db.sessions[0]
			db.mu.Unlock()
			return s, nil
		}
		for _, s := range db.sessions[1:] {
			if !s.busy && s.held == 0 {
				s.busy = true
				db.mu.Unlock()
				return s, nil
			}
		}
		if len(db.sessions)+db.opening < db.cfg.maxConns {
			db.opening++
			break
		}
		changed := db.changed
		db.mu.Unlock()
		var timer <-chan time.Time
		if !deadline.IsZero() {
			d := time.Until(deadline)
			if d <= 0 {
				return nil, errorf(C.SQLLOCK_TIMEOUT, "%s: every connection of the "+
					"handle's pool (MaxConns %d) was waiting, in a transaction or "+
					"holding a lease acquired by a wait, for the whole wait; raise "+
					"MaxConns, or release sooner", what, db.cfg.maxConns)
			}
			t := time.NewTimer(d)
			defer t.Stop()
			timer = t.C
		}
		select {
		case <-changed:
		case <-timer:
		case <-ctx.Done():
			return nil, ctxError(ctx, what)
		}
		db.mu.Lock()
	}
	db.mu.Unlock()
	s := newSession()
	s.busy = true
	err := db.openSession(s)
	db.mu.Lock()
	defer db.mu.Unlock()
	db.opening--
	db.notify()
	if err != nil {
		return nil, err
	}
	if db.closed {
		C.sqllock_close(s.h)
		return nil, errClosed
	}
	db.sessions = append(db.sessions, s)
	return s, nil
}

// checkin gives back a connection of checkout.
func (db *DB) checkin(s *session) {
	db.mu.Lock()
	defer db.mu.Unlock()
	if s != db.sessions[0] {
		s.busy = false
		db.notify()
	}
}

// Close closes every connection. An open transaction is rolled back and
// the leases' handles are freed; a lease still held is NOT released in
// the database: it stays until its ttl passes (release it first). Closing
// twice is harmless. Calls made after Close fail with ErrMisuse.
func (db *DB) Close() error {
	db.mu.Lock()
	if db.closed {
		db.mu.Unlock()
		return nil
	}
	db.closed = true
	sessions := db.sessions
	db.notify()
	db.mu.Unlock()
	for i := len(sessions) - 1; i >= 0; i-- {
		s := sessions[i]
		s.lock(context.Background())
		for l := range s.leases {
			l.free()
		}
		C.sqllock_close(s.h)
		s.h = nil
		s.unlock()
	}
	return nil
}

// Driver is "sqlite", "postgres" or "mysql".
func (db *DB) Driver() string { return db.driver }

// MaxConns is the most connections the pool opens.
func (db *DB) MaxConns() int { return db.cfg.maxConns }

// Conns is the number of connections the pool has open now (renewers'
// not counted).
func (db *DB) Conns() int {
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.closed {
		return 0
	}
	return len(db.sessions)
}

// call runs fn on the first connection under its lock; fn returns a
// status, turned into an Error with the handle's message.
func (db *DB) call(ctx context.Context, fn func(h *C.sqllock_db) C.int) error {
	s, err := db.main()
	if err != nil {
		return err
	}
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.unlock()
	if s.h == nil {
		return errClosed
	}
	return s.fail(fn(s.h))
}

// Init creates the sqllock tables if they do not exist (idempotent).
func (db *DB) Init() error {
	return db.call(context.Background(), func(h *C.sqllock_db) C.int { return C.sqllock_init(h) })
}

// cstr is a C copy of s, freed by the caller; ErrInvalid for text with a
// NUL byte, which C would cut short.
func cstr(s, what string) (*C.char, error) {
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			return nil, errorf(C.SQLLOCK_EINVAL, "%s contains a NUL byte", what)
		}
	}
	return C.CString(s), nil
}

// HolderInfo is who holds a name now, as Lookup reads it.
type HolderInfo struct {
	Holder    string        // the holder text ("host:pid" by default)
	Token     int64         // its fencing token
	Remaining time.Duration // until it expires by the server's clock (<= 0: expired)
}

// Lookup reads the row of name in one round trip; ErrNotFound when no one
// holds it. A primitive's row may be named as `sqllock list` shows it
// ("jobs [w]", "jobs [p0]").
func (db *DB) Lookup(ctx context.Context, name string) (HolderInfo, error) {
	var out HolderInfo
	cn, err := cstr(name, "the name")
	if err != nil {
		return out, err
	}
	defer C.free(unsafe.Pointer(cn))
	var buf [C.SQLLOCK_HOLDER_MAX + 1]C.char
	var token, left C.int64_t
	err = db.call(ctx, func(h *C.sqllock_db) C.int {
		return C.sqllock_go_lookup(h, cn, &buf[0], C.size_t(len(buf)), &token, &left)
	})
	if err != nil {
		return out, err
	}
	return HolderInfo{C.GoString(&buf[0]), int64(token), time.Duration(left) * time.Millisecond}, nil
}

// ForceRelease is the operator's forced release (contract C5): it frees
// the row of name whoever holds it and writes the audit line into the
// name's history in the same transaction. A live lease needs live true
// (else ErrBusy). Its holder hears ErrLost at its next renewal.
func (db *DB) ForceRelease(ctx context.Context, name string, live bool) error {
	cn, err := cstr(name, "the name")
	if err != nil {
		return err
	}
	defer C.free(unsafe.Pointer(cn))
	l := C.int(0)
	if live {
		l = 1
	}
	return db.call(ctx, func(h *C.sqllock_db) C.int { return C.sqllock_go_force_release(h, cn, l, 0) })
}

// Now is the library's clock in microseconds (sqllock_now_us(): the clock
// of every local deadline; only differences mean anything).
func Now() int64 { return int64(C.sqllock_now_us()) }
