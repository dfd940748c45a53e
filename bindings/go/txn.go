package sqllock

/*
#include "helpers.h"
*/
import "C"

import (
	"context"
	"fmt"
	"sync"
	"time"
	"unsafe"
)

// LockMode is how a row lock waits (contract R1).
type LockMode int

const (
	LockWait       LockMode = C.SQLLOCK_LOCK_WAIT        // up to the lock timeout, then ErrLocked
	LockNoWait     LockMode = C.SQLLOCK_LOCK_NOWAIT      // ErrLocked at once
	LockSkipLocked LockMode = C.SQLLOCK_LOCK_SKIP_LOCKED // take the free rows, skip the others
)

// Table names an application table (contract O3): identifiers, the
// table optionally schema-qualified; VersionColumn may be empty where a
// call does not use it.
type Table struct {
	Table, KeyColumn, VersionColumn string
}

// TxOption configures Begin.
type TxOption func(*txConfig)

type txConfig struct{ lockTimeout time.Duration }

// LockTimeout bounds a LockWait row lock (default 5 s).
func LockTimeout(d time.Duration) TxOption { return func(c *txConfig) { c.lockTimeout = d } }

// Tx is a row-lock transaction (contract R1-R8) on a connection of the
// pool of its own, until Commit or Rollback. Its locks end with it; a
// connection that dies ends them too. The records of Tx.Records and
// Tx.Exec run inside it. One goroutine at a time.
type Tx struct {
	db     *DB
	s      *session
	shared bool // the DB's only connection (MaxConns 1): its lock is held
	mu     sync.Mutex
	t      *C.sqllock_txn
}

// Begin opens a row-lock transaction; nothing is sent until its first
// lock. Waiting for a free connection is bounded by ctx. With MaxConns 1
// the transaction holds the one connection: every other call of the DB
// waits until it ends.
func (db *DB) Begin(ctx context.Context, opts ...TxOption) (*Tx, error) {
	var cfg txConfig
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.lockTimeout < 0 {
		return nil, errorf(C.SQLLOCK_EINVAL, "the lock timeout must not be negative")
	}
	s, err := db.checkout(ctx, time.Time{}, "a transaction")
	if err != nil {
		return nil, err
	}
	if err := s.lock(ctx); err != nil {
		db.checkin(s)
		return nil, err
	}
	tx := &Tx{db: db, s: s, shared: db.cfg.maxConns == 1}
	if s.h == nil {
		err = errClosed
	} else {
		err = s.fail(C.sqllock_go_txn_begin(s.h, C.int64_t(durMs(cfg.lockTimeout)), &tx.t))
	}
	if err != nil || !tx.shared {
		s.unlock()
	}
	if err != nil {
		db.checkin(s)
		return nil, err
	}
	return tx, nil
}

// call runs fn on the transaction's connection.
func (tx *Tx) call(ctx context.Context, fn func(h *C.sqllock_db) C.int) error {
	tx.mu.Lock()
	defer tx.mu.Unlock()
	if tx.t == nil {
		return errorf(C.SQLLOCK_EMISUSE, "the transaction is over")
	}
	if !tx.shared {
		if err := tx.s.lock(ctx); err != nil {
			return err
		}
		defer tx.s.unlock()
	}
	if tx.s.h == nil {
		return errClosed
	}
	return tx.s.fail(fn(tx.s.h))
}

// Records gives the versioned-record calls inside the transaction.
func (tx *Tx) Records() Records { return Records{tx: tx} }

// Lock locks the library's own lock rows `names` (1..64), always in one
// sorted order so that two transactions never deadlock through the
// library (R2). It says per name whether it is now locked (LockSkipLocked
// may leave some out). ErrLocked: NOWAIT, or the lock timeout passed --
// the transaction has then failed: roll it back (R7).
func (tx *Tx) Lock(ctx context.Context, mode LockMode, names ...string) ([]bool, error) {
	if len(names) == 0 {
		return nil, errorf(C.SQLLOCK_EINVAL, "no names to lock")
	}
	cn := (*[1 << 20]*C.char)(C.calloc(C.size_t(len(names)), C.size_t(unsafe.Sizeof((*C.char)(nil)))))[:len(names):len(names)]
	defer C.free(unsafe.Pointer(&cn[0]))
	for i, n := range names {
		c, err := cstr(n, "a name")
		if err != nil {
			return nil, err
		}
		defer C.free(unsafe.Pointer(c))
		cn[i] = c
	}
	got := make([]C.int, len(names))
	err := tx.call(ctx, func(h *C.sqllock_db) C.int {
		return C.sqllock_txn_lock(tx.t, &cn[0], C.int(len(names)), C.sqllock_lock_mode(mode), &got[0])
	})
	return bools(got), err
}

func bools(got []C.int) []bool {
	out := make([]bool, len(got))
	for i, g := range got {
		out[i] = g != 0
	}
	return out
}

// cells is a C array of sqllock_cell for values (int, int64 or string),
// and the function that frees it.
func cells(values []any) (*C.sqllock_cell, func(), error) {
	if len(values) == 0 {
		return nil, func() {}, nil
	}
	p := (*C.sqllock_cell)(C.calloc(C.size_t(len(values)), C.size_t(unsafe.Sizeof(C.sqllock_cell{}))))
	arr := unsafe.Slice(p, len(values))
	var texts []*C.char
	free := func() {
		for _, t := range texts {
			C.free(unsafe.Pointer(t))
		}
		C.free(unsafe.Pointer(p))
	}
	for i, v := range values {
		switch x := v.(type) {
		case int:
			arr[i].number = C.int64_t(x)
		case int64:
			arr[i].number = C.int64_t(x)
		case int32:
			arr[i].number = C.int64_t(x)
		case string:
			c, err := cstr(x, "a value")
			if err != nil {
				free()
				return nil, nil, err
			}
			texts = append(texts, c)
			arr[i].text = c
		default:
			free()
			return nil, nil, errorf(C.SQLLOCK_EINVAL, "value %d: %T is neither an integer nor a string", i+1, v)
		}
	}
	return p, free, nil
}

// LockRows locks the application's rows of table t with the given keys
// (SELECT ... FOR UPDATE, keys in sorted order). ErrNotFound when a key
// has no row (LockWait, LockNoWait).
func (tx *Tx) LockRows(ctx context.Context, t Table, mode LockMode, keys ...any) ([]bool, error) {
	if len(keys) == 0 {
		return nil, errorf(C.SQLLOCK_EINVAL, "no keys to lock")
	}
	ct, free, err := ctable(t)
	if err != nil {
		return nil, err
	}
	defer free()
	ck, freek, err := cells(keys)
	if err != nil {
		return nil, err
	}
	defer freek()
	got := make([]C.int, len(keys))
	err = tx.call(ctx, func(h *C.sqllock_db) C.int {
		return C.sqllock_txn_lock_rows(tx.t, ct, ck, C.int(len(keys)), C.sqllock_lock_mode(mode), &got[0])
	})
	return bools(got), err
}

func ctable(t Table) (*C.sqllock_table, func(), error) {
	ct := (*C.sqllock_table)(C.calloc(1, C.size_t(unsafe.Sizeof(C.sqllock_table{}))))
	var err error
	if ct.table, err = cstr(t.Table, "the table"); err == nil {
		if ct.key_column, err = cstr(t.KeyColumn, "the key column"); err == nil && t.VersionColumn != "" {
			ct.version_column, err = cstr(t.VersionColumn, "the version column")
		}
	}
	free := func() {
		C.free(unsafe.Pointer(ct.table))
		C.free(unsafe.Pointer(ct.key_column))
		C.free(unsafe.Pointer(ct.version_column))
		C.free(unsafe.Pointer(ct))
	}
	if err != nil {
		free()
		return nil, nil, err
	}
	return ct, free, nil
}

// ExecResult is what Exec learned.
type ExecResult struct {
	HasRow   bool  // the statement returned rows
	First    int64 // the first column of the first row, as an integer
	Affected int64 // rows an INSERT, UPDATE or DELETE changed (matched)
}

// Exec runs one statement of the application's inside the transaction,
// in the database's own placeholders ($1 on PostgreSQL, ? elsewhere),
// with int or string arguments.
func (tx *Tx) Exec(ctx context.Context, sql string, args ...any) (ExecResult, error) {
	return execute(ctx, sql, args, tx.call)
}

// Exec runs one statement on the DB's first connection (it commits on its
// own): a table of the application's, a count.
func (db *DB) Exec(ctx context.Context, sql string, args ...any) (ExecResult, error) {
	return execute(ctx, sql, args, db.call)
}

func execute(ctx context.Context, sql string, args []any,
	call func(context.Context, func(*C.sqllock_db) C.int) error) (ExecResult, error) {
	var res ExecResult
	cs, err := cstr(sql, "the statement")
	if err != nil {
		return res, err
	}
	defer C.free(unsafe.Pointer(cs))
	ca, free, err := cells(args)
	if err != nil {
		return res, err
	}
	defer free()
	var hasRow C.int
	var first, affected C.int64_t
	err = call(ctx, func(h *C.sqllock_db) C.int {
		return C.sqllock_db_exec(h, cs, ca, C.int(len(args)), &hasRow, &first, &affected)
	})
	return ExecResult{hasRow != 0, int64(first), int64(affected)}, err
}

// end finishes the transaction with fn (commit or rollback) and gives the
// connection back.
func (tx *Tx) end(fn func(t *C.sqllock_txn) C.int, what string) error {
	tx.mu.Lock()
	defer tx.mu.Unlock()
	if tx.t == nil {
		return errorf(C.SQLLOCK_EMISUSE, "%s: the transaction is over", what)
	}
	if !tx.shared {
		tx.s.lock(context.Background())
	}
	var err error
	if tx.s.h != nil {
		err = tx.s.fail(fn(tx.t))
		C.sqllock_txn_free(tx.t) // rolls back what is still open
	} else {
		err = errClosed
	}
	tx.t = nil
	tx.s.unlock()
	tx.db.checkin(tx.s)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// Commit commits; the locks end. After a failure the transaction is over
// all the same (rolled back).
func (tx *Tx) Commit() error {
	return tx.end(func(t *C.sqllock_txn) C.int { return C.sqllock_txn_commit(t) }, "commit")
}

// Rollback rolls back; the locks end. ErrMisuse on a transaction that is
// over (committed or rolled back): `defer tx.Rollback()` after a Commit
// only returns that error.
func (tx *Tx) Rollback() error {
	return tx.end(func(t *C.sqllock_txn) C.int { return C.sqllock_txn_rollback(t) }, "rollback")
}
