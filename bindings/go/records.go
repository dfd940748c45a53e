package sqllock

/*
#include "helpers.h"
*/
import "C"

import (
	"context"
	"runtime/cgo"
	"unsafe"
)

// Record is a versioned record of the library's own table (contract O1).
type Record struct {
	Key     string
	Value   []byte
	Version int64
}

// Records are the versioned-record calls, on a DB (each commits on its
// own) or inside a row-lock transaction (Tx.Records).
type Records struct {
	db *DB
	tx *Tx
}

// Records gives the versioned-record calls of the DB.
func (db *DB) Records() Records { return Records{db: db} }

// run calls fn on the records' connection under its lock.
func (r Records) run(ctx context.Context, fn func(h *C.sqllock_db) C.int) error {
	if r.tx != nil {
		return r.tx.call(ctx, fn)
	}
	return r.db.call(ctx, fn)
}

// Get reads record key: ErrNotFound when there is none.
func (r Records) Get(ctx context.Context, key string) (Record, error) {
	ck, err := cstr(key, "the key")
	if err != nil {
		return Record{}, err
	}
	defer C.free(unsafe.Pointer(ck))
	var value unsafe.Pointer
	var n C.size_t
	var version C.int64_t
	err = r.run(ctx, func(h *C.sqllock_db) C.int {
		return C.sqllock_record_get(h, ck, &value, &n, &version)
	})
	if err != nil {
		return Record{}, err
	}
	defer C.sqllock_free(value)
	return Record{key, C.GoBytes(value, C.int(n)), int64(version)}, nil
}

// Create makes record key at version 1; ErrConflict when it exists.
func (r Records) Create(ctx context.Context, key string, value []byte) error {
	ck, err := cstr(key, "the key")
	if err != nil {
		return err
	}
	defer C.free(unsafe.Pointer(ck))
	cv := C.CBytes(value)
	defer C.free(cv)
	return r.run(ctx, func(h *C.sqllock_db) C.int {
		return C.sqllock_record_create(h, ck, cv, C.size_t(len(value)))
	})
}

// CAS replaces the value if the version is still expected, and returns
// the new version (expected+1); ErrConflict when it moved.
func (r Records) CAS(ctx context.Context, key string, expected int64, value []byte) (int64, error) {
	ck, err := cstr(key, "the key")
	if err != nil {
		return 0, err
	}
	defer C.free(unsafe.Pointer(ck))
	cv := C.CBytes(value)
	defer C.free(cv)
	var nv C.int64_t
	err = r.run(ctx, func(h *C.sqllock_db) C.int {
		return C.sqllock_record_cas(h, ck, C.int64_t(expected), cv, C.size_t(len(value)), &nv)
	})
	return int64(nv), err
}

// Delete removes the record if its version is still expected.
func (r Records) Delete(ctx context.Context, key string, expected int64) error {
	ck, err := cstr(key, "the key")
	if err != nil {
		return err
	}
	defer C.free(unsafe.Pointer(ck))
	return r.run(ctx, func(h *C.sqllock_db) C.int {
		return C.sqllock_record_delete(h, ck, C.int64_t(expected))
	})
}

type updateCall struct {
	fn  func(old []byte, exists bool) ([]byte, error)
	err error
}

// Update is the retry helper (contract O2): it reads the record, calls
// fn(old, exists) for the new value, writes it with compare-and-set
// (creating the record when it did not exist), and on a conflict backs
// off and starts again, up to maxAttempts (0: 16). It returns the number
// of attempts. An error from fn ends the update and is returned. fn runs
// inside the library's call, holding the connection: it must not call
// this DB's short calls (they would wait for it).
func (r Records) Update(ctx context.Context, key string, maxAttempts int,
	fn func(old []byte, exists bool) ([]byte, error)) (int, error) {
	ck, err := cstr(key, "the key")
	if err != nil {
		return 0, err
	}
	defer C.free(unsafe.Pointer(ck))
	u := &updateCall{fn: fn}
	ch := cgo.NewHandle(u)
	defer ch.Delete()
	var attempts C.int
	err = r.run(ctx, func(h *C.sqllock_db) C.int {
		return C.sqllock_go_record_update(h, ck, C.uintptr_t(ch), C.int(maxAttempts), &attempts)
	})
	if u.err != nil {
		return int(attempts), u.err
	}
	return int(attempts), err
}

//export goRecordUpdate
func goRecordUpdate(h C.uintptr_t, old unsafe.Pointer, oldLen C.size_t,
	out *unsafe.Pointer, outLen *C.size_t) C.int {
	u := cgo.Handle(h).Value().(*updateCall)
	var prev []byte
	if old != nil {
		prev = C.GoBytes(old, C.int(oldLen))
	}
	v, err := u.fn(prev, old != nil)
	if err != nil {
		u.err = err
		if e, ok := err.(*Error); ok && e.Status != C.SQLLOCK_OK {
			return C.int(e.Status)
		}
		return C.SQLLOCK_ECANCELED
	}
	if len(v) > 0 {
		*out = C.CBytes(v)
	}
	*outLen = C.size_t(len(v))
	return C.SQLLOCK_OK
}
