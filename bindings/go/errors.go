package sqllock

/*
#include "helpers.h"
*/
import "C"

import (
	"context"
	"fmt"
)

// Error is a failure the library reported: its status code (the C
// library's SQLLOCK_* number), the status's name ("SQLLOCK_BUSY") and the
// message, which names what was wrong with the database's own words where
// there are some. errors.Is(err, ErrBusy) and the like match by status:
// every status has a sentinel below.
//
// An Error made because a context ended also unwraps to ctx.Err(): a
// deadline is Status TIMEOUT (errors.Is(err, ErrTimeout) and
// errors.Is(err, context.DeadlineExceeded) both hold), a cancellation is
// Status ECANCELED (errors.Is(err, ErrCanceled) and
// errors.Is(err, context.Canceled)).
type Error struct {
	Status int    // SQLLOCK_* code
	Name   string // "SQLLOCK_BUSY"
	Msg    string // what happened
	cause  error  // ctx.Err() for a wait a context ended
}

func (e *Error) Error() string {
	if e.Msg == "" {
		return "sqllock: " + statusText(e.Status)
	}
	return "sqllock: " + e.Msg
}

// Is matches every *Error of the same status, so that the sentinels work
// with errors.Is.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Status == e.Status
}

// Unwrap gives the context's error for a wait a context ended, else nil.
func (e *Error) Unwrap() error { return e.cause }

// Retryable reports whether the same operation may simply be tried again
// (sqllock_retryable(): contention, a transaction the database rolled
// back).
func (e *Error) Retryable() bool { return C.sqllock_retryable(C.int(e.Status)) != 0 }

func statusName(rc int) string { return C.GoString(C.sqllock_errname(C.int(rc))) }
func statusText(rc int) string { return C.GoString(C.sqllock_strerror(C.int(rc))) }

func sentinel(rc int) *Error {
	return &Error{Status: rc, Name: statusName(rc), Msg: statusText(rc)}
}

// newError makes the Error of status rc with message msg (the library's
// text when msg is empty).
func newError(rc C.int, msg string) error {
	if rc == C.SQLLOCK_OK {
		return nil
	}
	if msg == "" {
		msg = statusText(int(rc))
	}
	return &Error{Status: int(rc), Name: statusName(int(rc)), Msg: msg}
}

func errorf(rc C.int, format string, args ...any) error {
	return newError(rc, fmt.Sprintf(format, args...))
}

// ctxError is the Error for a context that ended during `what`.
func ctxError(ctx context.Context, what string) error {
	err := ctx.Err()
	rc := C.SQLLOCK_ECANCELED
	if err == context.DeadlineExceeded {
		rc = C.SQLLOCK_TIMEOUT
	}
	return &Error{Status: int(rc), Name: statusName(int(rc)),
		Msg: what + ": " + err.Error(), cause: err}
}

// deadlineError is ctxError for a context whose deadline passed.
func deadlineError(what string) error {
	err := context.DeadlineExceeded
	return &Error{Status: C.SQLLOCK_TIMEOUT, Name: statusName(C.SQLLOCK_TIMEOUT),
		Msg: what + ": " + err.Error(), cause: err}
}

// One sentinel per status of the C status table (SQLLOCK_STATUS_MAP),
// OK excepted. TestStatusSentinels walks sqllock_errname() over the whole
// range and fails when one is missing here.
var (
	ErrBusy          = sentinel(C.SQLLOCK_BUSY)
	ErrTimeout       = sentinel(C.SQLLOCK_TIMEOUT)
	ErrLost          = sentinel(C.SQLLOCK_LOST)
	ErrConflict      = sentinel(C.SQLLOCK_CONFLICT)
	ErrNotFound      = sentinel(C.SQLLOCK_NOTFOUND)
	ErrInvalid       = sentinel(C.SQLLOCK_EINVAL)
	ErrNoMem         = sentinel(C.SQLLOCK_ENOMEM)
	ErrURL           = sentinel(C.SQLLOCK_EURL)
	ErrScheme        = sentinel(C.SQLLOCK_ESCHEME)
	ErrNotBuilt      = sentinel(C.SQLLOCK_ENOTBUILT)
	ErrConnect       = sentinel(C.SQLLOCK_ECONNECT)
	ErrNoSchema      = sentinel(C.SQLLOCK_ENOSCHEMA)
	ErrSchemaVersion = sentinel(C.SQLLOCK_ESCHEMAVER)
	ErrDBBusy        = sentinel(C.SQLLOCK_EDBBUSY)
	ErrPerm          = sentinel(C.SQLLOCK_EPERM)
	ErrDB            = sentinel(C.SQLLOCK_EDB)
	ErrNotHeld       = sentinel(C.SQLLOCK_ENOTHELD)
	ErrSys           = sentinel(C.SQLLOCK_ESYS)
	ErrMisuse        = sentinel(C.SQLLOCK_EMISUSE)
	ErrUnsupported   = sentinel(C.SQLLOCK_EUNSUPPORTED)
	ErrExists        = sentinel(C.SQLLOCK_EEXISTS)
	ErrLocked        = sentinel(C.SQLLOCK_ELOCKED)
	ErrDeadlock      = sentinel(C.SQLLOCK_EDEADLOCK)
	ErrSerialization = sentinel(C.SQLLOCK_ESERIALIZATION)
	ErrCanceled      = sentinel(C.SQLLOCK_ECANCELED)
	ErrFull          = sentinel(C.SQLLOCK_EFULL)
	ErrProxy         = sentinel(C.SQLLOCK_EPROXY)
	ErrKind          = sentinel(C.SQLLOCK_EKIND)
)

// sentinels by status, for Sentinel() and the completeness test.
var sentinels = map[int]*Error{}

func init() {
	for _, e := range []*Error{ErrBusy, ErrTimeout, ErrLost, ErrConflict,
		ErrNotFound, ErrInvalid, ErrNoMem, ErrURL, ErrScheme, ErrNotBuilt,
		ErrConnect, ErrNoSchema, ErrSchemaVersion, ErrDBBusy, ErrPerm, ErrDB,
		ErrNotHeld, ErrSys, ErrMisuse, ErrUnsupported, ErrExists, ErrLocked,
		ErrDeadlock, ErrSerialization, ErrCanceled, ErrFull, ErrProxy,
		ErrKind} {
		sentinels[e.Status] = e
	}
}

// Sentinel returns the sentinel error of a status code, or nil for
// SQLLOCK_OK and codes the library does not know.
func Sentinel(status int) error {
	if e, ok := sentinels[status]; ok {
		return e
	}
	return nil
}

// statusEnd is one past the largest status code (SQLLOCK_STATUS_END_).
const statusEnd = int(C.SQLLOCK_STATUS_END_)
