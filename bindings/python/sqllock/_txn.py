"""Row locks in a transaction on the handle's connection (contract R1-R8)."""
from __future__ import annotations

import enum
from ctypes import byref, c_int, c_void_p
from typing import Any, Callable, List, Optional, Union

from . import _convert as cv
from . import _lib, errors
from ._db import Database, ExecResult, Table
from ._lib import lib


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
    block and rolls back when the block raises (R6). The record and table
    calls of the same Database run inside it once it has started (R4).
    While it is open the handle refuses lease calls with Misuse (R8): take
    leases on a Database of their own. After a statement of it failed
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
        h = c_void_p()
        with db._lock:
            rc = lib.sqllock_txn_begin(db._handle(), byref(opts), byref(h))
            if rc != _lib.OK:
                raise db._fail(rc)
            self._h = h.value
            db._txn = self

    def _handle(self) -> int:
        self._db._handle()
        if self._h is None:
            raise errors.Misuse("the transaction is over (committed, rolled "
                                "back, or its database closed)")
        return self._h

    def _free(self) -> None:
        """Rolls back if open, and frees; with the database's lock held."""
        if self._h is not None:
            lib.sqllock_txn_free(self._h)
            self._h = None
            if self._db._txn is self:
                self._db._txn = None

    def _abandon(self) -> None:
        """Forgets the C transaction without freeing it, for a borrowed
        connection the application closed (freeing could send a
        statement on it); with the database's lock held."""
        self._h = None
        if self._db._txn is self:
            self._db._txn = None

    def _call(self, fn: Callable[..., int], *args: Any) -> None:
        with self._db._lock:
            rc = fn(self._handle(), *args)
            if rc != _lib.OK:
                raise self._db._fail(rc)

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
        with self._db._lock:
            self._handle()
        return self._db.execute(sql, *args)

    def commit(self) -> None:
        """Commits: the locks end. Misuse when the transaction failed (R7:
        roll it back); on a Galera cluster Deadlock when another node's
        transaction committed first."""
        with self._db._lock:
            rc = lib.sqllock_txn_commit(self._handle())
            if rc != _lib.OK:
                raise self._db._fail(rc)
            self._free()

    def rollback(self) -> None:
        """Rolls back (the one way out of a failed transaction, R7); a
        transaction already over is left alone."""
        with self._db._lock:
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
