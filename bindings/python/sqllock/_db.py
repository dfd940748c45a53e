"""Database handles: connect(), the versioned records, the application's
tables, list(), reap() and execute()."""
from __future__ import annotations

import atexit
import contextlib
import ctypes
import dataclasses
import datetime
import os
import stat
import threading
import weakref
from ctypes import byref, c_char_p, c_int, c_int64, c_size_t, c_void_p
from typing import (TYPE_CHECKING, Any, Callable, ContextManager, Dict,
                    Iterator, List, Mapping, Optional, Sequence, Union)

from . import _convert as cv
from . import _lib, errors
from ._lib import lib

if TYPE_CHECKING:
    from ._lease import Lease, LeaseSet
    from ._rw import RWLease
    from ._txn import Transaction

Value = Union[bytes, bytearray, memoryview, str]


class _HandleLock:
    """The lock that keeps a handle to one thread at a time (contract
    E3). A thread that calls into the handle again while its own call is
    running -- from a record-update function or a list callback, which
    run inside the C call -- gets sqllock.Misuse instead of a deadlock."""

    __slots__ = ("_lock", "_owner")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._owner: Optional[int] = None

    def __enter__(self) -> None:
        me = threading.get_ident()
        if self._owner == me:
            raise errors.Misuse("this database handle is already in a call "
                                "on this thread: a callback of the library "
                                "(a record-update function, a list "
                                "callback) must not call into the same "
                                "handle")
        self._lock.acquire()
        self._owner = me

    def __exit__(self, *exc: object) -> None:
        self._owner = None
        self._lock.release()


@dataclasses.dataclass(frozen=True)
class LeaseInfo:
    """One row of the lease table, as list() reports it. Times are the
    database server's clock; `remaining` is in seconds and negative for a
    lease that expired but whose row was not yet taken over or reaped."""

    name: str
    owner: str
    holder: str
    token: int
    acquired_at: datetime.datetime
    expires_at: datetime.datetime
    remaining: float


@dataclasses.dataclass(frozen=True)
class Record:
    """A versioned record of the library's own table."""

    key: str
    value: bytes
    version: int


@dataclasses.dataclass(frozen=True)
class RecordUpdate:
    """What record_update() wrote, and after how many attempts."""

    value: bytes
    attempts: int


@dataclasses.dataclass(frozen=True)
class Table:
    """An application table for the compare-and-set and row-lock calls
    (contract O3): names are identifiers, the table optionally
    schema-qualified; the library validates and quotes them."""

    table: str
    key_column: str
    version_column: Optional[str] = None

    def _c(self) -> _lib.Table:
        return _lib.Table(cv.text(self.table, "table"),
                          cv.text(self.key_column, "key_column"),
                          cv.text(self.version_column, "version_column"))


@dataclasses.dataclass(frozen=True)
class Row:
    """Integer columns of an application row, and its version."""

    values: Dict[str, int]
    version: int


@dataclasses.dataclass(frozen=True)
class ExecResult:
    """What execute() learned: whether rows came back, the first column
    of the first row as an integer (None without a row), and the rows an
    INSERT, UPDATE or DELETE changed."""

    has_row: bool
    first: Optional[int]
    affected: int


_open: "weakref.WeakSet[Database]" = weakref.WeakSet()


@atexit.register
def _close_all() -> None:
    # A renewer thread must not call into an interpreter that is gone:
    # close every handle (stopping its renewer) before Python finalizes.
    for db in list(_open):
        db.close()


def _ms_to_datetime(ms: int) -> datetime.datetime:
    return datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc)


class Database:
    """A connection to one database (a sqllock_db). Make it with
    sqllock.connect(). Close it with close(), or use it as a context
    manager.

    Threads: the handle, its leases and its transaction are used by one
    thread at a time (contract E3). Every call takes a lock per handle,
    so calls from several threads are safe but wait for each other -- a
    thread waiting for a lock holds up every other call on the handle.
    For concurrent work, open one Database per thread. Lease state
    (``lease.lost``, ``lease.state``, ``lease.remaining``) may be read
    from any thread at any time. After fork(), the child must open its
    own handles.
    """

    def __init__(self, url: str, *, busy_timeout: Optional[cv.Duration] = None,
                 connect_timeout: Optional[cv.Duration] = None,
                 statement_timeout: Optional[cv.Duration] = None) -> None:
        self._setup(_HandleLock())
        opts = _lib.Options.init(
            busy_timeout_ms=cv.duration_ms(busy_timeout, "busy_timeout"),
            connect_timeout_ms=cv.duration_ms(connect_timeout,
                                              "connect_timeout"),
            statement_timeout_ms=cv.duration_ms(statement_timeout,
                                                "statement_timeout"))
        raw = cv.text(url, "url")
        h = c_void_p()
        rc = lib.sqllock_open(raw, byref(opts), byref(h))
        if rc != _lib.OK:
            msg = lib.sqllock_errmsg(h)
            lib.sqllock_close(h)
            raise _lib.error_for(rc, msg)
        self._h = h.value
        self._url = url
        self._driver = lib.sqllock_db_driver(self._h).decode()
        _open.add(self)

    # ---- plumbing ---------------------------------------------------------

    def _setup(self, lock: Any) -> None:
        """The state of a handle not yet opened (self._h None)."""
        self._h: Optional[int] = None
        self._lock = lock
        # Every live Lease of the handle (weakly), the held ones (strongly:
        # a held lease and its watch callback live until released), and
        # the handles of Leases collected meanwhile, freed under the lock.
        self._leases: "weakref.WeakValueDictionary[int, Lease]" = \
            weakref.WeakValueDictionary()
        self._held: Dict[int, "Lease"] = {}
        self._pending: List[Any] = []
        self._txn: Optional["Transaction"] = None

    def _in_callback(self) -> ContextManager[Any]:
        """What surrounds a callback of the library that runs the
        application's code inside a C call (record_update's function).
        Nothing here; a borrowed handle lets go of the application's
        connection meanwhile (sqllock.BorrowedDatabase)."""
        return contextlib.nullcontext()

    def _handle(self) -> int:
        """The C handle; call with the lock held."""
        if self._h is None:
            raise errors.Misuse("the database handle is closed")
        return self._h

    def _fail(self, rc: int, row: Optional[bytes] = None) -> errors.Error:
        """The exception for `rc` with the handle's message; call with the
        lock held, right after the call that returned `rc`. For Busy and
        Timeout with `row` (the lock's row name), the row is read as it
        is now and the exception names its holder and the time it has
        left (as ``sqllock run`` does), also in its attributes."""
        err = _lib.error_for(rc, lib.sqllock_errmsg(self._h))
        if row is not None and isinstance(err, (errors.Busy, errors.Timeout)):
            self._add_holder(err, row)
        return err

    def _add_holder(self, err: errors.Error, row: bytes) -> None:
        """Sets err's holder, token and remaining from the lease row
        `row`, and adds them to its message; nothing when the row is gone
        (released meanwhile) or cannot be read. With the lock held."""
        found: List[Any] = []

        def each(ctx: Any, info: Any) -> int:
            i = info.contents
            if i.name != row:
                return 0
            found.append(((i.holder or b"").decode("utf-8", "replace"),
                          i.token, i.remaining_ms / 1000))
            return 1             # stop the walk

        if lib.sqllock_list(self._h, _lib.LIST_FN(each), None) not in (0, 1) \
                or not found:
            return
        holder, token, remaining = found[0]
        err.holder, err.token, err.remaining = holder, token, remaining
        left = ("%.1fs left" % remaining if remaining >= 0
                else "expired %.1fs ago" % -remaining)
        err.message = "%s: holder %r, token %d, %s" % (err.message, holder,
                                                       token, left)
        err.args = (err.message,)

    def _defer_free(self, h: Any) -> None:
        """A Lease was collected: its handle is freed under the lock (by
        the next lease made, or close()), never from the collector."""
        self._pending.append(h)

    def _drain(self) -> None:
        """Frees the handles of collected Leases; with the lock held."""
        while self._pending:
            h = self._pending.pop()
            if isinstance(h, tuple):        # (free function, handle)
                h[0](h[1])
            else:
                lib.sqllock_lease_free(h)

    def _call(self, fn: Callable[..., int], *args: Any) -> None:
        """fn(handle, *args) under the handle's lock; raises on failure."""
        with self._lock:
            rc = fn(self._handle(), *args)
            if rc != _lib.OK:
                raise self._fail(rc)

    # ---- the handle -------------------------------------------------------

    def close(self) -> None:
        """Frees the handle: its transaction is rolled back, and its
        leases' handles are freed. A lease still held is NOT released in
        the database: it stays until its ttl passes (release it first, or
        hold it in a ``with`` block). Closing twice is harmless."""
        with self._lock:
            if self._h is None:
                return
            if self._txn is not None:
                self._txn._free()
            for lease in list(self._leases.values()):
                lease._free()
            self._drain()
            lib.sqllock_close(self._h)
            self._h = None
        _open.discard(self)

    @property
    def closed(self) -> bool:
        return self._h is None

    def __enter__(self) -> "Database":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def driver(self) -> str:
        """"sqlite", "postgres" or "mysql"."""
        return self._driver

    @property
    def borrowed(self) -> bool:
        """True for a handle over the application's own connection
        (sqllock.borrow(), contract G2); False for one of sqllock.connect().
        Added in 0.2.0."""
        return False

    @property
    def url(self) -> str:
        """The URL with its password and secret parameters shown as ***
        (sqllock_url_redact(): what messages show, contract C4)."""
        return redact(self._url)

    def __repr__(self) -> str:
        state = "closed" if self._h is None else self._driver
        return "<sqllock.Database %s %s>" % (state, self.url)

    @property
    def errmsg(self) -> str:
        """The last message on the handle (sqllock_errmsg())."""
        with self._lock:
            return lib.sqllock_errmsg(self._h).decode("utf-8", "replace")

    def init(self) -> None:
        """Creates the sqllock tables if they do not exist (idempotent; a
        current schema is only read, contract S1/S2)."""
        self._call(lib.sqllock_init)

    def watch_prepare(self) -> None:
        """Starts the handle's renewer thread and its connection now, so
        that the first watched lease does not spend its ttl connecting
        (lock() does this for a lease it watches)."""
        self._call(lib.sqllock_watch_prepare)

    def row_lock_scope(self) -> str:
        """What a row lock excludes here: "exclusive" (PostgreSQL, MySQL),
        "node" (a MariaDB Galera node) or "database" (SQLite, R5)."""
        scope = c_int()
        self._call(lib.sqllock_row_lock_scope, byref(scope))
        return lib.sqllock_row_lock_scope_name(scope.value).decode()

    # ---- leases, transactions (the classes are in _lease.py, _txn.py) ----

    def lock(self, name: str, ttl: cv.Duration, wait: Optional[cv.Duration] = None,
             **options: Any) -> "Lease":
        """A lease lock on `name` (not yet acquired): use it as
        ``with db.lock(name, ttl=30, wait=10) as lease:``, which acquires
        (waiting up to `wait` seconds; None waits for ever, 0 tries once),
        puts the lease under watchdog renewal, and releases it at the end.
        The other keywords are those of sqllock.Lease."""
        from ._lease import Lease
        return Lease(self, name, ttl, wait, **options)

    def lock_many(self, names: Sequence[str], ttl: cv.Duration,
                  wait: Optional[cv.Duration] = None,
                  **options: Any) -> "LeaseSet":
        """Several lease locks taken together, all or none (contract L12):
        ``with db.lock_many(["account:1", "account:2"], ttl=30, wait=10)
        as locks:`` takes every name in one transaction or none (waiting
        up to `wait` for the one found held), each with its own token
        (``locks.tokens``), renews each, and releases them all at the end.
        The other keywords are those of sqllock.Lease."""
        from ._lease import LeaseSet
        return LeaseSet(self, names, ttl, wait, **options)

    def rw_lock(self, name: str, ttl: cv.Duration, shared: bool = True,
                wait: Optional[cv.Duration] = None,
                **options: Any) -> "RWLease":
        """A shared (``shared=True``) or exclusive hold of `name`'s
        shared/exclusive lock (contract M2), not yet acquired: many shared
        holders at once or one exclusive holder; a waiting exclusive
        holder stops new shared ones and waits only for those inside.
        Used as ``with db.rw_lock(name, ttl=30, shared=False, wait=60) as
        lease:`` like lock(); the lease's token is the hold's (an
        exclusive one fences writes). Not the plain lease on `name`. Not
        reentrant. Added in 0.9.0."""
        from ._rw import RWLease
        return RWLease(self, name, ttl, wait, shared=shared, **options)

    def semaphore(self, name: str, permits: int, ttl: cv.Duration,
                  wait: Optional[cv.Duration] = None,
                  **options: Any) -> "SemaphoreLease":
        """One permit of semaphore `name`, which admits at most `permits`
        holders at once (contract M1), not yet acquired: used as ``with
        db.semaphore("exports", 3, ttl=30, wait=60) as permit:`` like
        lock(). The permit is a lease of its own (token, renewal, loss);
        ``permit.permit`` says which one (0..permits-1). Not reentrant.
        Added in 0.9.0."""
        from ._sem import SemaphoreLease
        return SemaphoreLease(self, name, permits, ttl, wait, **options)

    def semaphore_count(self, name: str) -> int:
        """The permits of semaphore `name` live now by the database's
        clock, whatever number of permits they were taken under."""
        live = c_int()
        self._call(lib.sqllock_sem_count, cv.text(name, "name"), byref(live))
        return live.value

    def attach(self, name: str, owner: str, token: int, ttl: cv.Duration,
               **options: Any) -> "Lease":
        """A lease acquired elsewhere (``sqllock acquire`` prints the
        owner and token), so that it can be renewed, watched or
        released."""
        from ._lease import Lease
        return Lease(self, name, ttl, 0, _attach=(owner, token), **options)

    def transaction(self, lock_timeout: Optional[cv.Duration] = None) -> "Transaction":
        """A row-lock transaction on this handle (contract R1-R8): use it
        as ``with db.transaction() as txn: txn.lock(...)``; it commits at
        the end of the block and rolls back on an exception."""
        from ._txn import Transaction
        return Transaction(self, lock_timeout)

    def row_lock(self, *names: str, mode: Any = "wait",
                 lock_timeout: Optional[cv.Duration] = None) -> "Transaction":
        """``with db.row_lock("account:7") as txn:`` -- a transaction that
        locks the library's lock rows `names` (in one sorted order, R2)
        as it starts, and commits at the end of the block."""
        txn = self.transaction(lock_timeout)
        txn._on_enter = lambda: txn.lock(*names, mode=mode)
        return txn

    # ---- versioned records (contract O1, O2) ------------------------------

    def record_get(self, key: str) -> Record:
        """The record `key`; NotFound when there is none."""
        value, size, version = c_void_p(), c_size_t(), c_int64()
        self._call(lib.sqllock_record_get, cv.text(key, "key"), byref(value),
                   byref(size), byref(version))
        try:
            data = ctypes.string_at(value, size.value) if value else b""
        finally:
            lib.sqllock_free(value)
        return Record(key, data, version.value)

    def record_create(self, key: str, value: Value) -> None:
        """Creates `key` at version 1; Conflict when it exists."""
        raw = cv.value_bytes(value)
        self._call(lib.sqllock_record_create, cv.text(key, "key"), raw,
                   len(raw))

    def record_cas(self, key: str, expected: int, value: Value) -> int:
        """Writes `value` if the version is still `expected` and returns
        the new version; Conflict when another writer got there first."""
        raw = cv.value_bytes(value)
        new = c_int64()
        self._call(lib.sqllock_record_cas, cv.text(key, "key"), expected, raw,
                   len(raw), byref(new))
        return new.value

    def record_delete(self, key: str, expected: int) -> None:
        """Deletes `key` if its version is still `expected`."""
        self._call(lib.sqllock_record_delete, cv.text(key, "key"), expected)

    def record_update(self, key: str,
                      fn: Callable[[Optional[bytes]], Value], *,
                      max_attempts: Optional[int] = None,
                      backoff: Optional[Sequence[cv.Duration]] = None) -> RecordUpdate:
        """The retry helper (contract O2): reads `key`, calls ``fn(old)``
        (old is None when the record does not exist yet) for the new
        value, and writes it with compare-and-set, starting again after a
        conflict (jittered backoff, up to max_attempts, default 16).
        `fn` runs on this thread inside the call: it may be called
        several times and must not use this handle. An exception from
        `fn` ends the update, writes nothing and propagates. Conflict
        when every attempt conflicted."""
        raised: List[BaseException] = []
        keep: List[Any] = []

        def call(ctx: Any, old: Optional[int], old_len: int, out: Any,
                 out_len: Any) -> int:
            try:
                prev = ctypes.string_at(old, old_len) if old else None
                with self._in_callback():
                    new = fn(prev)
                raw = cv.value_bytes(new, "the update function's value")
                buf = ctypes.create_string_buffer(raw, max(len(raw), 1))
                keep[:] = [buf, raw]
                out[0] = ctypes.cast(buf, c_void_p).value
                out_len[0] = len(raw)
                return _lib.OK
            except BaseException as e:     # re-raised after the C call
                raised.append(e)
                return errors.Canceled.status

        ropts = _lib.RetryOptions.init()
        if max_attempts is not None:
            ropts.max_attempts = max_attempts
        if backoff is not None:
            lo, hi = backoff
            ropts.backoff_min_ms = cv.duration_ms(lo, "backoff")
            ropts.backoff_max_ms = cv.duration_ms(hi, "backoff")
        attempts = c_int()
        cb = _lib.UPDATE_FN(call)
        with self._lock:
            rc = lib.sqllock_record_update(self._handle(), cv.text(key, "key"),
                                           cb, None, byref(ropts),
                                           byref(attempts))
            if raised:
                raise raised[0]
            if rc != _lib.OK:
                raise self._fail(rc)
        return RecordUpdate(keep[1] if keep else b"", attempts.value)

    # ---- the application's tables (contract O3, L5) -----------------------

    def table_get(self, table: Table, key: Union[int, str],
                  columns: Sequence[str]) -> Row:
        """The integer `columns` (at most 16) and the version of the row
        `key`; NotFound when there is none."""
        t = table._c()
        k = cv.cell(key, "key")
        cols, raw = cv.names_array(list(columns), "column")
        values = (c_int64 * max(len(raw), 1))()
        version = c_int64()
        self._call(lib.sqllock_table_get, byref(t), byref(k), cols, len(raw),
                   values, byref(version))
        return Row({c: values[i] for i, c in enumerate(columns)},
                   version.value)

    def table_cas(self, table: Table, key: Union[int, str], expected: int,
                  set: Mapping[str, Any],
                  where: Optional[Mapping[str, Any]] = None) -> int:
        """``UPDATE table SET <set>, version = version + 1 WHERE key = ?
        AND version = expected AND <where>``; returns the new version.
        Conflict when no row matched. ``set={"qty": sqllock.sub(1)},
        where={"qty": sqllock.ge(1)}``."""
        t = table._c()
        k = cv.cell(key, "key")
        sets, ns = cv.column_cells(set, True, "set")
        conds, nc = cv.column_cells(where, False, "where")
        new = c_int64()
        self._call(lib.sqllock_table_cas, byref(t), byref(k), expected, sets,
                   ns, conds, nc, byref(new))
        return new.value

    def table_update(self, table: Table, key: Union[int, str],
                     set: Mapping[str, Any],
                     where: Optional[Mapping[str, Any]] = None) -> None:
        """The same conditional update without a version check (one
        statement); Conflict when no row matched."""
        t = table._c()
        k = cv.cell(key, "key")
        sets, ns = cv.column_cells(set, True, "set")
        conds, nc = cv.column_cells(where, False, "where")
        self._call(lib.sqllock_table_update, byref(t), byref(k), sets, ns,
                   conds, nc)

    def fenced_update(self, table: Table, key: Union[int, str],
                      fence_column: str, token: int,
                      set: Optional[Mapping[str, Any]] = None,
                      where: Optional[Mapping[str, Any]] = None) -> None:
        """A write fenced by a lease's token (contract L5): applied only
        if no larger token wrote the row. Lost when one did, Conflict when
        a condition failed, NotFound without the row."""
        t = table._c()
        k = cv.cell(key, "key")
        sets, ns = cv.column_cells(set, True, "set")
        conds, nc = cv.column_cells(where, False, "where")
        self._call(lib.sqllock_table_fenced_update, byref(t), byref(k),
                   cv.text(fence_column, "fence_column"), token, sets, ns,
                   conds, nc)

    def guarded_update(self, lease: "Lease", table: Table,
                       key: Union[int, str],
                       set: Optional[Mapping[str, Any]] = None,
                       where: Optional[Mapping[str, Any]] = None,
                       fence_column: Optional[str] = None) -> None:
        """A write guarded by `lease` (contract G1): applied only while
        the lease is still this hold's, and it stays so until the write
        commits. Lost (nothing changed) once the lease expired by the
        server's clock, was taken over, released or reaped -- even before
        a new holder wrote the row; Conflict when a condition failed;
        NotFound without the row; NotHeld when `lease` is not held.
        `fence_column`, when given, also keeps the writer's token in the
        row, as fenced_update() does. Added in 0.2.0."""
        t = table._c()
        k = cv.cell(key, "key")
        sets, ns = cv.column_cells(set, True, "set")
        conds, nc = cv.column_cells(where, False, "where")
        fence = (cv.text(fence_column, "fence_column")
                 if fence_column is not None else None)
        with self._lock:
            lh = lease._handle()
            rc = lib.sqllock_table_guarded_update(self._handle(), lh,
                                                  byref(t), byref(k), fence,
                                                  sets, ns, conds, nc)
            if rc != _lib.OK:
                raise self._fail(rc)

    def guard_sql(self, name: str, token: int, paramstyle: Any = "qmark",
                  first: int = 1) -> str:
        """The guard of the lease (name, token) in this database's SQL,
        with two placeholders in `paramstyle` (see Lease.guard(), which
        also gives the parameters). For a lease held elsewhere, e.g. by
        `sqllock acquire`. Added in 0.2.0."""
        from . import _guard
        return _guard.guard_sql(self, cv.text(name, "name").decode("utf-8"),
                                token, _guard.style_of(paramstyle), first)

    # ---- inspection, reaping, the application's statements --------------

    def list(self) -> List[LeaseInfo]:
        """Every lease row, in name order."""
        rows: List[LeaseInfo] = []

        def each(ctx: Any, info: Any) -> int:
            i = info.contents
            rows.append(LeaseInfo(
                (i.name or b"").decode("utf-8", "replace"),
                (i.owner or b"").decode(),
                (i.holder or b"").decode("utf-8", "replace"),
                i.token, _ms_to_datetime(i.acquired_at_ms),
                _ms_to_datetime(i.expires_at_ms), i.remaining_ms / 1000))
            return 0

        self._call(lib.sqllock_list, _lib.LIST_FN(each), None)
        return rows

    def __iter__(self) -> Iterator[LeaseInfo]:
        return iter(self.list())

    def leader(self, name: str) -> Any:
        """The current leader of election `name` (a sqllock.LeaderInfo:
        holder, token, remaining seconds), or None when there is none
        (contract M4). Added in 0.9.0."""
        from . import _leader
        return _leader.leader_get(self, name)

    def reap(self, grace: cv.Duration = 0, batch: int = 1000) -> int:
        """One pass of the reaper (contract P1, P4): deletes lease rows
        expired more than `grace` ago, `batch` per statement; returns how
        many."""
        deleted = c_int64()
        self._call(lib.sqllock_reap, cv.duration_ms(grace, "grace"), batch,
                   byref(deleted))
        return deleted.value

    def execute(self, sql: str, *args: Union[int, str]) -> ExecResult:
        """Runs one statement of the application's own on the handle's
        connection (inside the handle's row-lock transaction when one is
        open), with `args` bound in order to the database's placeholders
        ($1 on PostgreSQL, ? on SQLite and MySQL)."""
        arr, n = cv.cells(args, "argument")
        has_row, first, affected = c_int(), c_int64(), c_int64()
        self._call(lib.sqllock_db_exec, cv.text(sql, "sql"), arr, n,
                   byref(has_row), byref(first), byref(affected))
        return ExecResult(bool(has_row.value),
                          first.value if has_row.value else None,
                          affected.value)


# The variables the sqllock tool reads (tools/cli.h), the largest file
# it reads, and the schemes of the drivers that may be built.
DB_ENV = "SQLLOCK_DB"
DB_FILE_ENV = "SQLLOCK_DB_FILE"
_DB_FILE_MAX = 16384
_SCHEMES = ("sqlite", "postgres", "postgresql", "mysql", "mariadb")


def _url_from_file(path: str, how: str) -> str:
    """The URL in the file at `path` as the tool reads it (tools/dburl.c):
    its first line that is not blank, without the white space around it.
    A regular file that its group or others may read is refused, and
    what the file holds is never quoted (contract C4)."""
    why = None
    try:
        with open(path, "rb") as f:
            st = os.fstat(f.fileno())
            if stat.S_ISREG(st.st_mode) and st.st_mode & 0o077:
                raise errors.InvalidArgument(
                    "refusing the database URL in %r (%s): its group or "
                    "others may read it (mode %04o), and a URL may hold a "
                    "password; make it readable by its owner only: chmod "
                    "600 %s" % (path, how, st.st_mode & 0o7777, path))
            data = f.read(_DB_FILE_MAX + 1)
    except OSError as e:
        raise type(e)(e.errno, "cannot read the database URL from %r (%s): "
                      "%s" % (path, how, e.strerror)) from None
    url = ""
    if len(data) > _DB_FILE_MAX:
        why = "it is larger than %d bytes, too large for a URL" % _DB_FILE_MAX
    elif b"\0" in data:
        why = "it holds a NUL byte (not a text file)"
    else:
        for line in data.split(b"\n"):
            line = line.strip(b" \t\r\f\v")
            if line:
                url = line.decode("utf-8", "replace")
                break
        else:
            why = "it is empty (no line but blank ones)"
    if why is not None:
        raise errors.InvalidArgument("cannot read the database URL from %r "
                                     "(%s): %s" % (path, how, why))
    scheme, colon, _ = url.partition(":")
    if not colon or scheme.lower() not in _SCHEMES:
        raise errors.BadURL("what %r (%s) holds is not a database URL: its "
                            "first line that is not blank must be one such "
                            "as postgres://user:password@host:5432/db (a "
                            "~/.pgpass line or a password alone is none; "
                            "what the file holds is not shown)" % (path, how))
    return url


def _default_url() -> str:
    """The database the sqllock tool uses when no --db or --db-file names
    one: $SQLLOCK_DB, else the URL in the file $SQLLOCK_DB_FILE names (a
    variable set but empty counts as unset). InvalidArgument when neither
    is set, or the file is refused (see connect()); OSError when it cannot
    be read."""
    url = os.environ.get(DB_ENV, "")
    if url:
        return url
    path = os.environ.get(DB_FILE_ENV, "")
    if path:
        return _url_from_file(path, "$" + DB_FILE_ENV)
    raise errors.InvalidArgument("no database named: pass a URL to "
                                 "connect(), or set $%s or $%s"
                                 % (DB_ENV, DB_FILE_ENV))


def connect(url: Optional[str] = None, *, init: bool = False,
            busy_timeout: Optional[cv.Duration] = None,
            connect_timeout: Optional[cv.Duration] = None,
            statement_timeout: Optional[cv.Duration] = None) -> Database:
    """Opens a database handle from a URL (``sqlite:///path/locks.db``,
    ``postgres://user:pass@host/db``, ``mysql://...``), and with
    ``init=True`` creates the sqllock tables if they are missing. Raises
    the connection's error (BadURL, UnknownScheme, ConnectionError,
    PermissionDenied, ...) with the library's message.

    Without `url`, the database is the one the sqllock tool finds in the
    environment: $SQLLOCK_DB, else the first line of the
    file $SQLLOCK_DB_FILE names that is not blank (a variable set but
    empty counts as unset; neither is InvalidArgument). As the tool does,
    a file that its group or others may read is refused (InvalidArgument:
    ``chmod 600`` it), and so is one whose line is not a URL (BadURL,
    naming the file, never quoting it); one that cannot be read raises
    OSError."""
    if url is None:
        url = _default_url()
    db = Database(url, busy_timeout=busy_timeout,
                  connect_timeout=connect_timeout,
                  statement_timeout=statement_timeout)
    if init:
        try:
            db.init()
        except BaseException:
            db.close()
            raise
    return db


def redact(url: str) -> str:
    """`url` with its password and secret parameters as *** (C4)."""
    out = c_void_p()
    rc = lib.sqllock_url_redact(cv.text(url, "url"), byref(out))
    if rc != _lib.OK:
        raise _lib.error_for(rc, None)
    try:
        return ctypes.cast(out, c_char_p).value.decode("utf-8", "replace")
    finally:
        lib.sqllock_free(out)
