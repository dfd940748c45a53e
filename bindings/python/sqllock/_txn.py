"""Row locks in a transaction on the handle's connection (contract R1-R8)."""
from __future__ import annotations

import enum
import time
from ctypes import byref, c_int, c_void_p
from typing import TYPE_CHECKING, Any, Callable, List, Optional, Union

from . import _convert as cv
from . import _lib, errors
from ._lib import lib

if TYPE_CHECKING:
    from ._db import Database, ExecResult, Table


class LockMode(enum.IntEnum):
    """How a row lock waits (sqllock_lock_mode)."""

    WAIT = _lib.LOCK_WAIT                 #: up to the lock timeout (ELOCKED)
    NOWAIT = _lib.LOCK_NOWAIT             #: fail at once with Locked
    SKIP_LOCKED = _lib.LOCK_SKIP_LOCKED   #: take the free rows only


def _mode(mode: Union[LockMode, str, int]) -> LockMode:
    if isinstance(mode, str):
        try:
            return LockMode[mode.upper().replace("-", "_")]
        except KeyError:
            raise cv.invalid("mode %r: use 'wait', 'nowait' or "
                             "'skip_locked'" % mode) from None
    return LockMode(mode)


class Transaction:
    """A row-lock transaction (a sqllock_txn) on a Database's connection.

    Made by ``db.transaction()``; nothing is sent until the first lock
    call (or execute()). As a context manager it commits at the end of the
    block and rolls back when the block raises (R6). It has a connection
    of the Database's pool to itself (see Database), and belongs to the
    thread that opened it: that thread's record and table calls and
    execute() on the same Database run inside it once it has started
    (R4), and that thread's lease calls raise Misuse while it is open
    (R8); other threads' calls run outside it. After a statement of it failed
    with Locked, Deadlock, SerializationFailure, ConnectionError (...)
    the transaction has failed: every later call raises Misuse until
    rollback() (R7).
    """

    def __init__(self, db: Database, lock_timeout: Optional[cv.Duration] = None) -> None:
        self._db = db
        self._h: Optional[int] = None
        self._on_enter: Optional[Callable[[], Any]] = None
        opts = _lib.TxnOptions.init(
            lock_timeout_ms=cv.duration_ms(lock_timeout, "lock_timeout"))
        # A connection of the pool to itself for its whole life (the
        # thread's own, if it has one open: the C library refuses a
        # second), waited for as long as its locks may wait.
        here = db._here()
        if here is not db._main or db._max == 1:
            s = here
        else:
            ms = opts.lock_timeout_ms
            s = db._checkout(None if ms <= 0 else
                             time.monotonic() + ms / 1000,
                             "a row-lock transaction")
        self._s = s
        h = c_void_p()
        try:
            with s.lock:
                rc = lib.sqllock_txn_begin(s.handle(), byref(opts), byref(h))
                if rc != _lib.OK:
                    raise s.fail(rc)
                self._h = h.value
                s.txn = self
        except BaseException:
            if s is not here:
                db._checkin(s)
            raise
        db._tls.session = s

    def _handle(self) -> int:
        self._s.handle()
        if self._h is None:
            raise errors.Misuse("the transaction is over (committed, rolled "
                                "back, or its database closed)")
        return self._h

    def _free(self) -> None:
        """Rolls back if open, and frees; with the database's lock held."""
        if self._h is not None:
            lib.sqllock_txn_free(self._h)
            self._h = None
            self._ended()

    def _ended(self) -> None:
        """The transaction is over: its connection goes back."""
        s = self._s
        if s.txn is self:
            s.txn = None
            self._db._checkin(s)

    def _abandon(self) -> None:
        """Forgets the C transaction without freeing it, for a borrowed
        connection the application closed (freeing could send a
        statement on it); with the database's lock held."""
        self._h = None
        self._ended()

    def _call(self, fn: Callable[..., int], *args: Any) -> None:
        with self._s.lock:
            rc = fn(self._handle(), *args)
            if rc != _lib.OK:
                raise self._s.fail(rc)

    @property
    def open(self) -> bool:
        return self._h is not None

    def lock(self, *names: str, mode: Union[LockMode, str] = LockMode.WAIT) -> List[str]:
        """Locks the library's own lock rows `names` (1..64, each a valid
        lock name), always in one sorted order (R2). WAIT and NOWAIT lock
        all or raise (Locked, Deadlock); SKIP_LOCKED returns the names it
        took. Returns the names now locked."""
        arr, raw = cv.names_array(list(names), "name")
        got = (c_int * max(len(raw), 1))()
        self._call(lib.sqllock_txn_lock, arr, len(raw), _mode(mode), got)
        return [n for i, n in enumerate(names) if got[i]]

    def lock_rows(self, table: Table, *keys: Union[int, str],
                  mode: Union[LockMode, str] = LockMode.WAIT) -> List[Union[int, str]]:
        """``SELECT key FROM table WHERE key = ? FOR UPDATE [NOWAIT | SKIP
        LOCKED]`` per key, in sorted order. NotFound (WAIT, NOWAIT) when a
        key has no row. Returns the keys now locked."""
        t = table._c()
        arr, n = cv.cells(keys, "key")
        got = (c_int * max(n, 1))()
        self._call(lib.sqllock_txn_lock_rows, byref(t), arr, n, _mode(mode),
                   got)
        return [k for i, k in enumerate(keys) if got[i]]

    def execute(self, sql: str, *args: Union[int, str]) -> ExecResult:
        """One statement of the application's own, inside the transaction
        (R4): Database.execute() on the same handle."""
        with self._s.lock:
            self._handle()
        return self._db._execute_on(self._s, sql, args)

    def commit(self) -> None:
        """Commits: the locks end. Misuse when the transaction failed (R7:
        roll it back); on a Galera cluster Deadlock when another node's
        transaction committed first."""
        with self._s.lock:
            rc = lib.sqllock_txn_commit(self._handle())
            if rc != _lib.OK:
                raise self._s.fail(rc)
            self._free()

    def rollback(self) -> None:
        """Rolls back (the one way out of a failed transaction, R7); a
        transaction already over is left alone."""
        with self._s.lock:
            if self._h is None:
                return
            lib.sqllock_txn_rollback(self._h)
            self._free()

    def __enter__(self) -> "Transaction":
        if self._on_enter is not None:
            try:
                self._on_enter()
            except BaseException:
                self.rollback()
                raise
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if self._h is None:
            return
        if exc_type is not None:
            self.rollback()
            return
        try:
            self.commit()
        except BaseException:
            self.rollback()
            raise

    def __repr__(self) -> str:
        return "<sqllock.Transaction %s>" % ("open" if self._h else "over")
