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
import time
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
class LeaderInfo:
    """The current leader of an election, as anyone reads it."""

    holder: str          #: its identity (the candidate's holder text)
    token: int           #: its term, the fencing token of its actions
    remaining: float     #: seconds until its lease expires (server clock)


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



def _info_of(i: Any) -> "LeaseInfo":
    return LeaseInfo((i.name or b"").decode("utf-8", "replace"),
                     (i.owner or b"").decode(),
                     (i.holder or b"").decode("utf-8", "replace"),
                     i.token, _ms_to_datetime(i.acquired_at_ms),
                     _ms_to_datetime(i.expires_at_ms), i.remaining_ms / 1000)


def _lookup(h: Optional[int], row: bytes) -> Optional["LeaseInfo"]:
    """The lease row `row` read on the C handle `h` in one round trip
    (sqllock_lease_lookup()), or None when there is none or it cannot
    be read; with the handle's lock held."""
    found: List[LeaseInfo] = []

    def each(ctx: Any, info: Any) -> int:
        found.append(_info_of(info.contents))
        return 0

    if h is None or lib.sqllock_lease_lookup(h, row, _lib.LIST_FN(each),
                                             None) != _lib.OK or not found:
        return None
    return found[0]


class _Session:
    """One connection of a Database (a sqllock_db of the C library) and
    what lives on it: its lock (contract E3: one thread in it at a time),
    the leases made on it (weakly), the held ones (strongly: a held lease
    and its watch callback live until released), the handles of leases
    collected meanwhile (freed under the lock), and its row-lock
    transaction. `busy` is set while a thread has it to itself: a
    blocking wait or a transaction (Database._checkout)."""

    __slots__ = ("h", "lock", "leases", "held", "pending", "txn", "busy",
                 "check", "__weakref__")

    def __init__(self, lock: Any) -> None:
        self.h: Optional[int] = None
        self.lock = lock
        self.leases: "weakref.WeakValueDictionary[int, Any]" = \
            weakref.WeakValueDictionary()
        self.held: Dict[int, Any] = {}
        self.pending: List[Any] = []
        self.txn: Optional[Any] = None
        self.busy = False
        # What else handle() checks (a borrowed connection still open).
        self.check: Optional[Callable[[], None]] = None

    def handle(self) -> int:
        """The C handle; call with the lock held."""
        if self.h is None:
            raise errors.Misuse("the database handle is closed")
        if self.check is not None:
            self.check()
        return self.h

    def fail(self, rc: int, row: Optional[bytes] = None) -> errors.Error:
        """The exception for `rc` with the handle's message; call with the
        lock held, right after the call that returned `rc`. For Busy and
        Timeout with `row` (the lock's row name), the row is read as it
        is now and the exception names its holder and the time it has
        left (as ``sqllock run`` does), also in its attributes."""
        err = _lib.error_for(rc, lib.sqllock_errmsg(self.h))
        if row is not None and isinstance(err, (errors.Busy, errors.Timeout)):
            self.add_holder(err, row)
        return err

    def add_holder(self, err: errors.Error, row: bytes) -> None:
        """Sets err's holder, token and remaining from the lease row
        `row`, and adds them to its message; nothing when the row is gone
        (released meanwhile) or cannot be read. With the lock held."""
        got = _lookup(self.h, row)
        if got is None:
            return
        err.holder, err.token, err.remaining = (got.holder, got.token,
                                                got.remaining)
        left = ("%.1fs left" % got.remaining if got.remaining >= 0
                else "expired %.1fs ago" % -got.remaining)
        err.message = "%s: holder %r, token %d, %s" % (err.message,
                                                       got.holder, got.token,
                                                       left)
        err.args = (err.message,)

    def defer_free(self, h: Any) -> None:
        """A Lease was collected, or moved to another session: its handle
        is freed under this session's lock (by the next lease made here,
        or close()), never from the collector."""
        self.pending.append(h)

    def drain(self) -> None:
        """Frees the handles of collected Leases; with the lock held."""
        while self.pending:
            h = self.pending.pop()
            if isinstance(h, tuple):        # (free function, handle)
                h[0](h[1])
            else:
                lib.sqllock_lease_free(h)

    def call(self, fn: Callable[..., int], *args: Any) -> None:
        """fn(handle, *args) under the lock; raises on failure."""
        with self.lock:
            rc = fn(self.handle(), *args)
            if rc != _lib.OK:
                raise self.fail(rc)

    def close(self) -> None:
        """Frees the C handle, its transaction and its leases' handles;
        with the lock held."""
        if self.h is None:
            return
        if self.txn is not None:
            self.txn._free()
        for lease in list(self.leases.values()):
            lease._free()
        self.drain()
        lib.sqllock_close(self.h)
        self.h = None


#: How many connections a Database of sqllock.connect() keeps at most by
#: default (its max_connections): see Database.
MAX_CONNECTIONS = 8


class Database:
    """A connection pool to one database: sqllock_db handles of the C
    library, one per connection. Make it with sqllock.connect(). Close it
    with close(), or use it as a context manager.

    Threads share one Database. A short call (a try, a release, a
    renewal, list(), the records, execute()) runs on the handle's first
    connection, one thread at a time for a round trip or two. A blocking
    wait -- an acquire that finds the lock held and may wait (``wait``
    not 0), a lock_many() likewise, a row-lock transaction for its whole
    life -- takes a connection of the pool to itself, so that it holds up
    no other thread's call; a lease it acquires stays on that connection
    (its session-lock wake-up lives there) until released, and the
    connection serves no other wait or transaction meanwhile. The pool
    opens connections as they are needed, up to `max_connections`
    (default 8), and keeps them until close(). When every connection is
    taken, a wait waits for one to come free within its own time (then
    Timeout, saying so), and a transaction within its lock_timeout (for
    ever without one).

    The connection budget: one handle uses at most max_connections
    connections of its own, and one more per connection on which a
    watched lease is held -- the renewer's (contract L7): at most 2 x
    max_connections in all. ``max_connections=1`` is one connection
    that every call shares in turn (a wait then holds up every other
    call on the handle).

    Lease state (``lease.lost``, ``lease.state``, ``lease.remaining``)
    may be read from any thread at any time. A row-lock transaction
    belongs to the thread that opened it: the records, table calls and
    execute() of that thread run inside it, and that thread may take no
    lease meanwhile (R8); other threads' calls run outside it. After
    fork(), the child must open its own handles.
    """

    def __init__(self, url: str, *, busy_timeout: Optional[cv.Duration] = None,
                 connect_timeout: Optional[cv.Duration] = None,
                 statement_timeout: Optional[cv.Duration] = None,
                 max_connections: int = MAX_CONNECTIONS) -> None:
        if isinstance(max_connections, bool) or \
                not isinstance(max_connections, int):
            raise TypeError("max_connections must be an int")
        if max_connections < 1:
            raise errors.InvalidArgument("max_connections must be at least "
                                         "1, not %d" % max_connections)
        self._setup(_HandleLock(), max_connections)
        self._opts = _lib.Options.init(
            busy_timeout_ms=cv.duration_ms(busy_timeout, "busy_timeout"),
            connect_timeout_ms=cv.duration_ms(connect_timeout,
                                              "connect_timeout"),
            statement_timeout_ms=cv.duration_ms(statement_timeout,
                                                "statement_timeout"))
        self._raw_url = cv.text(url, "url")
        self._url = url
        self._main.h = self._open_c()
        self._driver = lib.sqllock_db_driver(self._main.h).decode()
        _open.add(self)

    # ---- plumbing ---------------------------------------------------------

    def _setup(self, lock: Any, max_connections: int = 1) -> None:
        """The state of a handle not yet opened (no C handle yet)."""
        self._main = _Session(lock)
        self._sessions: List[_Session] = [self._main]
        self._max = max_connections
        self._opening = 0                 # connections being opened
        self._pool = threading.Condition(threading.Lock())
        self._closed = False
        self._tls = threading.local()     # .session: this thread's txn's

    def _open_c(self) -> int:
        """A new C handle on the URL, with the handle's options."""
        h = c_void_p()
        rc = lib.sqllock_open(self._raw_url, byref(self._opts), byref(h))
        if rc != _lib.OK:
            msg = lib.sqllock_errmsg(h)
            lib.sqllock_close(h)
            raise _lib.error_for(rc, msg)
        return h.value

    # The first connection's state, by the names a handle of one
    # connection had (sqllock.BorrowedDatabase and the transactions use
    # them).
    @property
    def _lock(self) -> Any:
        return self._main.lock

    @property
    def _h(self) -> Optional[int]:
        return self._main.h

    @_h.setter
    def _h(self, h: Optional[int]) -> None:
        self._main.h = h

    @property
    def _txn(self) -> Any:
        return self._main.txn

    @_txn.setter
    def _txn(self, txn: Any) -> None:
        self._main.txn = txn

    def _here(self) -> _Session:
        """The connection the calling thread's calls run on: its open
        transaction's, else the first."""
        s = getattr(self._tls, "session", None)
        if s is not None and s.txn is not None and s.h is not None:
            return s
        return self._main

    def _no_txn_here(self, what: str) -> None:
        """Misuse when the calling thread has a row-lock transaction open
        on a connection of the pool other than the first (R8, per thread;
        on the first, the C library refuses the call itself)."""
        s = self._here()
        if s is not self._main:
            raise errors.Misuse("%s: this thread has a row-lock transaction "
                                "open on this database: end it first (R8)"
                                % what)

    def _free_for_wait(self, s: _Session) -> bool:
        return (s is not self._main and not s.busy and not s.held and
                s.txn is None and s.h is not None)

    def _checkout(self, deadline: Optional[float], what: str,
                  cancel: Optional[threading.Event] = None) -> _Session:
        """A connection of the pool for a thread's blocking wait or
        transaction, to itself until _checkin(): one that holds no lease
        and serves no other wait or transaction, opened if none is and
        the pool may grow, else waited for until `deadline` (a
        time.monotonic() time; None: for ever) -- then Timeout -- or
        until `cancel` is set (looked at every 50 ms) -- then Canceled.
        With max_connections 1, the one connection (its lock keeps the
        calls apart)."""
        if self._max == 1:
            return self._main
        with self._pool:
            while True:
                if self._closed:
                    raise errors.Misuse("the database handle is closed")
                for s in self._sessions:
                    if self._free_for_wait(s):
                        s.busy = True
                        return s
                if len(self._sessions) + self._opening < self._max:
                    self._opening += 1
                    break
                left = None if deadline is None else \
                    deadline - time.monotonic()
                if cancel is not None and cancel.is_set():
                    raise errors.Canceled("%s: canceled while waiting for "
                                          "a connection of the pool" % what)
                if left is not None and left <= 0:
                    raise errors.Timeout(
                        "%s: every connection of the database handle's pool "
                        "(max_connections=%d) was waiting, in a transaction "
                        "or holding a lease acquired by a wait, for the "
                        "whole wait; raise max_connections, or release "
                        "sooner" % (what, self._max))
                if cancel is not None:
                    left = 0.05 if left is None else min(left, 0.05)
                self._pool.wait(left)
        s = _Session(_HandleLock())
        s.busy = True
        try:
            s.h = self._open_c()
        finally:
            with self._pool:
                self._opening -= 1
                if s.h is not None and not self._closed:
                    self._sessions.append(s)
                self._pool.notify_all()
        if s.h is None or self._closed:
            if s.h is not None:
                lib.sqllock_close(s.h)
            raise errors.Misuse("the database handle is closed")
        return s

    def _checkin(self, s: _Session) -> None:
        """Gives back a connection of _checkout()."""
        if s is self._main:
            return
        with self._pool:
            s.busy = False
            self._pool.notify_all()

    def _pool_changed(self) -> None:
        """A connection's last held lease was released: a waiter for a
        connection may take it."""
        if self._max > 1:
            with self._pool:
                self._pool.notify_all()

    def _in_callback(self) -> ContextManager[Any]:
        """What surrounds a callback of the library that runs the
        application's code inside a C call (record_update's function).
        Nothing here; a borrowed handle lets go of the application's
        connection meanwhile (sqllock.BorrowedDatabase)."""
        return contextlib.nullcontext()

    def _handle(self) -> int:
        """The first connection's C handle; call with its lock held."""
        return self._main.handle()

    def _fail(self, rc: int, row: Optional[bytes] = None) -> errors.Error:
        """The first connection's exception for `rc` (_Session.fail)."""
        return self._main.fail(rc, row)

    def _defer_free(self, h: Any) -> None:
        self._main.defer_free(h)

    def _drain(self) -> None:
        self._main.drain()

    def _call(self, fn: Callable[..., int], *args: Any) -> None:
        """fn(handle, *args) on the calling thread's connection, under
        its lock; raises on failure."""
        self._here().call(fn, *args)

    # ---- the handle -------------------------------------------------------

    def close(self) -> None:
        """Closes every connection: an open transaction is rolled back,
        and the leases' handles are freed. A lease still held is NOT
        released in the database: it stays until its ttl passes (release
        it first, or hold it in a ``with`` block). Closing twice is
        harmless. Call it when no other thread uses the handle."""
        with self._pool:
            self._closed = True
            sessions = list(self._sessions)
            self._pool.notify_all()
        for s in reversed(sessions):
            with s.lock:
                s.close()
        _open.discard(self)

    @property
    def closed(self) -> bool:
        return self._main.h is None

    @property
    def max_connections(self) -> int:
        """The most connections the pool opens (see Database)."""
        return self._max

    @property
    def connections(self) -> int:
        """The connections the pool has open now (renewers' not
        counted)."""
        with self._pool:
            return sum(1 for s in self._sessions if s.h is not None)

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
        s = self._here()
        with s.lock:
            return lib.sqllock_errmsg(s.h).decode("utf-8", "replace")

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
        exclusive one fences writes). Not the plain lease on `name`.
        Reentrant, as every kind (L8). Added in 0.9.0."""
        from ._rw import RWLease
        return RWLease(self, name, ttl, wait, shared=shared, **options)

    def semaphore(self, name: str, permits: int, ttl: cv.Duration,
                  wait: Optional[cv.Duration] = None,
                  **options: Any) -> "SemaphoreLease":
        """One permit of semaphore `name`, which admits at most `permits`
        holders at once (contract M1), not yet acquired: used as ``with
        db.semaphore("exports", 3, ttl=30, wait=60) as permit:`` like
        lock(). The permit is a lease of its own (token, renewal, loss);
        ``permit.permit`` says which one (0..permits-1). Reentrant, as
        every kind (L8): the same permit, counted up.
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

    def records(self, prefix: str = "") -> List[Record]:
        """The records whose key begins with `prefix` ("" for all), in
        key order (by bytes), each with its value and version
        (sqllock_record_list(): one index range scan). Inside this
        thread's row-lock transaction when one is open (R4). Added in
        0.10.0."""
        out: List[Record] = []

        def each(ctx: Any, key: bytes, value: Optional[int], n: int,
                 version: int) -> int:
            out.append(Record(key.decode("utf-8", "replace"),
                              ctypes.string_at(value, n) if n else b"",
                              version))
            return 0

        self._call(lib.sqllock_record_list, cv.text(prefix, "prefix"),
                   _lib.RECORD_FN(each), None)
        return out

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
        s = self._here()
        with s.lock:
            rc = lib.sqllock_record_update(s.handle(), cv.text(key, "key"),
                                           cb, None, byref(ropts),
                                           byref(attempts))
            if raised:
                raise raised[0]
            if rc != _lib.OK:
                raise s.fail(rc)
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
        # On the connection the lease is held on (the write then waits
        # for no other thread's wait), or inside this thread's
        # transaction, or on this handle when the lease is another's (a
        # borrowed handle's write): that one's lock first, then the
        # lease's.
        here, ls = self._here(), lease._s
        with here.lock if here is not ls else contextlib.nullcontext():
            with ls.lock:
                lh = lease._handle()
                s = ls if lease._db is self and here is self._main else here
                rc = lib.sqllock_table_guarded_update(s.handle(), lh,
                                                      byref(t), byref(k),
                                                      fence, sets, ns, conds,
                                                      nc)
                if rc != _lib.OK:
                    raise s.fail(rc)

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
            rows.append(_info_of(info.contents))
            return 0

        self._call(lib.sqllock_list, _lib.LIST_FN(each), None)
        return rows

    def metrics_db(self) -> str:
        """The lock tables as the database sees them -- every client's
        rows -- in the OpenMetrics text format, ending with "# EOF"
        (sqllock_metrics_db_text(); `sqllock metrics` prints the same):
        live holds by kind, fair waiters, expired rows, the oldest holds,
        the runs of each name's history, and the schedule slots of the
        names run with --once-per. One read of the whole lease
        table. Raises the database's error rather than return a partial
        text. Added in 0.11.0."""
        out = c_void_p()
        self._call(lib.sqllock_metrics_db_text, byref(out))
        try:
            return ctypes.string_at(out).decode("utf-8", "replace")
        finally:
            lib.sqllock_free(out)

    def lookup(self, name: str) -> Optional[LeaseInfo]:
        """The lease row of `name` in one round trip (not a scan of the
        table): a LeaseInfo, or None when there is no row. `name` is a
        lock name or a row as list() shows it (a primitive's rows are its
        name, "\x1f" and a tag: a shared lock's writer row is
        ``NAME + "\x1fw"``). A row whose lease expired
        but was not yet taken over or reaped is returned too, with
        ``remaining <= 0``. Added in 0.10.0."""
        found: List[LeaseInfo] = []

        def each(ctx: Any, info: Any) -> int:
            found.append(_info_of(info.contents))
            return 0

        try:
            self._call(lib.sqllock_lease_lookup, cv.text(name, "name"),
                       _lib.LIST_FN(each), None)
        except errors.NotFound:
            return None
        return found[0] if found else None

    def force_release(self, name: str, *, token: int = 0,
                      live: bool = False,
                      who: Optional[str] = None) -> LeaseInfo:
        """An operator's forced release (sqllock_force_release(), DESIGN
        C5): frees the lease row of `name` whoever holds it, and writes
        the audit line into the name's history (``sqllock history NAME``)
        in the same transaction -- both or neither. `name` may be a
        primitive's row as ``sqllock list`` shows it ("jobs [w]"). Returns
        the row freed. `token`: only that hold (Conflict when the row has
        another); `live`: free a lease still live by the database's clock
        (else Busy, naming its holder: it may be alive and working);
        `who`: who forces it, for the audit (default "user@host" and the
        database user). NotFound without a row, WrongKind for the row that
        marks a name's kind (N1: never freed), Lost when the row changed
        meanwhile (nothing changed), PermissionDenied when the role may
        not write the audit record (nothing changed). The holder hears
        Lost at its next renewal. Added in 0.10.0."""
        found: List[LeaseInfo] = []

        def each(ctx: Any, info: Any) -> int:
            found.append(_info_of(info.contents))
            return 0

        if isinstance(token, bool) or not isinstance(token, int):
            raise TypeError("token must be an int")
        opts = _lib.ForceOptions.init(token=token, live=1 if live else 0,
                                      who=cv.text(who, "who"))
        self._call(lib.sqllock_force_release, cv.text(name, "name"),
                   byref(opts), _lib.LIST_FN(each), None)
        return found[0]

    def locked(self, name: str) -> bool:
        """True when a lease on `name` is live now by the database's
        clock, whoever holds it (lookup() gives the holder and the time
        left). Added in 0.10.0."""
        info = self.lookup(name)
        return info is not None and info.remaining > 0

    def __iter__(self) -> Iterator[LeaseInfo]:
        return iter(self.list())

    def leader(self, name: str) -> Optional[LeaderInfo]:
        """The current leader of election `name` (a sqllock.LeaderInfo:
        holder, token, remaining seconds), or None when there is none
        (contract M4; sqllock_leader_get()). Added in 0.9.0."""
        out = _lib.LeaderInfo()
        s = self._here()
        with s.lock:
            rc = lib.sqllock_leader_get(s.handle(), cv.text(name, "name"),
                                        byref(out))
            if rc == errors.NotFound.status:
                return None
            if rc != _lib.OK:
                raise s.fail(rc)
        return LeaderInfo(out.holder.decode("utf-8", "replace"), out.token,
                          out.remaining_ms / 1000)

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
        return self._execute_on(self._here(), sql, args)

    def _execute_on(self, s: _Session, sql: str,
                    args: Sequence[Union[int, str]]) -> ExecResult:
        """execute() on connection `s`."""
        arr, n = cv.cells(args, "argument")
        has_row, first, affected = c_int(), c_int64(), c_int64()
        s.call(lib.sqllock_db_exec, cv.text(sql, "sql"), arr, n,
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
            statement_timeout: Optional[cv.Duration] = None,
            max_connections: int = MAX_CONNECTIONS) -> Database:
    """Opens a database handle from a URL (``sqlite:///path/locks.db``,
    ``postgres://user:pass@host/db``, ``mysql://...``), and with
    ``init=True`` creates the sqllock tables if they are missing.
    `max_connections` bounds the handle's pool (see Database). Raises
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
                  statement_timeout=statement_timeout,
                  max_connections=max_connections)
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
