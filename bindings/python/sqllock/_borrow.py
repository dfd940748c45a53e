"""The application's own connection (contract G2): sqllock.borrow().

A BorrowedDatabase is a sqllock handle over a connection the application
opened with its DB-API library -- psycopg (3), psycopg2, MySQLdb
(mysqlclient) or the standard sqlite3 module -- through the C library's
sqllock_borrow(). Row locks, the versioned records, the table calls, the
guarded update and execute() then run on that connection, inside the
application's transaction: they commit or roll back with its own
statements, when the application ends its transaction there.

    with psycopg.connect(dsn) as conn, sqllock.borrow(conn) as bdb:
        with conn.transaction():                 # the application's
            with bdb.join() as txn:              # ... joined by sqllock
                txn.lock("account:7")            # held until the commit
                conn.execute("UPDATE account SET ... WHERE id = 7")
        # committed: the write and the lock's end together

The connection stays the application's: closing the BorrowedDatabase
frees sqllock's handle only; sqllock never begins (see join()), commits,
rolls back, closes or reconnects it, and puts back the session settings
it changes (a row-lock wait). Leases, the watchdog, the reaper, init()
and list() need a connection of the library's own (a grant must commit by
itself, contract L10): on a BorrowedDatabase they raise sqllock.Misuse
with the library's message. Take leases on a sqllock.connect() handle;
their guard (Lease.guard(), BorrowedDatabase.guarded_update()) then works
on the borrowed connection.

How the C connection is found and checked: sqllock/_native.py.

Threads: use a BorrowedDatabase only from the thread that uses the
connection, between its statements -- never while a result of the
application's is still being read (an unbuffered MySQLdb cursor, a
psycopg cursor.stream()). The GIL is released during each C call (ctypes
CDLL), and nothing but psycopg (3) has a lock of its own that the binding
could take: for psycopg the binding takes ``conn.lock`` for the length of
each call (without waiting: sqllock.Misuse when psycopg is busy on the
connection), so a psycopg query of another thread waits for it. The asyncio
face has no borrowed form: psycopg's AsyncConnection is refused.
"""
from __future__ import annotations

import contextlib
from ctypes import byref, c_void_p
from typing import Any, Callable, Iterator, Optional

from . import _convert as cv
from . import _lib, errors
from ._db import Database, _HandleLock, _open
from ._lib import lib
from ._native import Native, native_of
from ._txn import Transaction


# ---- the handle --------------------------------------------------------------

class _BorrowLock:
    """The handle's lock (one thread at a time, as for every Database) and,
    for psycopg, the connection's own lock for the length of each call."""

    __slots__ = ("handle", "_native")

    def __init__(self, native: Native) -> None:
        self.handle = _HandleLock()
        self._native = native

    def __enter__(self) -> None:
        self.handle.__enter__()
        try:
            self._native.lock()
        except BaseException:
            self.handle.__exit__(None, None, None)
            raise

    def __exit__(self, *exc: object) -> None:
        try:
            self._native.unlock()
        finally:
            self.handle.__exit__(*exc)


class BorrowedDatabase(Database):
    """A sqllock handle over the application's own DB-API connection
    (contract G2). Make it with sqllock.borrow(conn); close it with
    close(), at the end of a ``with`` block, or by dropping it: that
    frees sqllock's handle and leaves the connection open.

    What runs on it: join() (row locks inside the application's
    transaction), transaction() (a transaction of sqllock's own, when the
    application has none open), the records (record_get/create/cas/
    delete/update), the table calls (table_get/cas/update,
    fenced_update), guarded_update() with a lease of a sqllock.connect()
    handle, guard_sql(), execute() and row_lock_scope(). Outside a
    joined transaction these run inside the application's transaction
    when one is open (they commit or roll back with it), else each
    commits on its own. lock(), attach(), init(), list(), reap() and
    watch_prepare() raise sqllock.Misuse: a lease needs a connection of
    the library's own (contract L10).

    On MySQL, a connection with autocommit off (MySQLdb's default) is
    always inside a transaction: every call then runs in it, and takes
    effect at the application's commit. record_update() inside the
    application's transaction reads the record with a lock (FOR UPDATE),
    so its retries see the latest record, not the snapshot of the
    transaction's first read (MySQL's REPEATABLE READ); a deadlock or
    serialization failure there is raised at once, not retried: the
    database ended the transaction, so run it again.

    Threads: from the thread that uses the connection, between its
    statements (see sqllock._borrow's docstring). A record_update()
    function runs with psycopg's connection lock released.
    """

    def __init__(self, connection: Any, *,
                 statement_timeout: Optional[cv.Duration] = None) -> None:
        native = native_of(connection)
        self._native = native
        self._setup(_BorrowLock(native))
        self._main.check = native.check     # the connection is still open
        self._url = None
        self._driver = native.scheme
        ptr = native.open()
        opts = _lib.Options.init(
            statement_timeout_ms=cv.duration_ms(statement_timeout,
                                                "statement_timeout"))
        h = c_void_p()
        with self._lock:
            rc = lib.sqllock_borrow(native.scheme.encode(), ptr, byref(opts),
                                    byref(h))
            if rc != _lib.OK:
                msg = lib.sqllock_errmsg(h)
                lib.sqllock_close(h)
                raise _lib.error_for(rc, msg)
        self._h = h.value
        self._driver = lib.sqllock_db_driver(self._h).decode()
        _open.add(self)

    # ---- plumbing ---------------------------------------------------------

    @contextlib.contextmanager
    def _in_callback(self) -> Iterator[None]:
        self._native.unlock()
        try:
            yield
        finally:
            self._native.lock()

    # ---- the handle -------------------------------------------------------

    def close(self) -> None:
        """Frees sqllock's handle; the connection stays open, and stays
        the application's. A joined transaction still open ends (its
        locks stay until the application ends its transaction). Closing
        twice is harmless."""
        with self._lock.handle:
            if self._h is None:
                return
            if self._txn is not None:
                # Ending it may put the row-lock wait back, a statement on
                # the connection: only while the connection can take one.
                # Else its small C struct is left behind, never touched.
                native = self._native
                if not native.closed() and \
                        native.read_pointer() == native.ptr and \
                        native.try_lock():
                    try:
                        self._txn._free()
                    finally:
                        native.unlock()
                else:
                    self._txn._abandon()
            lib.sqllock_close(self._h)
            self._h = None
        _open.discard(self)

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    def __enter__(self) -> "BorrowedDatabase":
        return self

    @property
    def borrowed(self) -> bool:
        return True

    @property
    def connection(self) -> Any:
        """The application's connection."""
        return self._native.conn

    @property
    def url(self) -> str:
        return "(a borrowed %s connection)" % self._native.kind

    def __repr__(self) -> str:
        state = "closed" if self._h is None else self._driver
        return "<sqllock.BorrowedDatabase %s over a %s connection>" % (
            state, self._native.kind)

    # ---- the application's transaction -----------------------------------

    def join(self, lock_timeout: Optional[cv.Duration] = None, *,
             begin: bool = True) -> "JoinedTransaction":
        """The application's open transaction, joined (sqllock_txn_join()):
        ``with bdb.join() as txn: txn.lock("a")`` -- the locks and the
        record and table calls of this handle run inside it, and last
        until the application commits or rolls back on its connection.
        Leaving the block never commits or rolls anything back; it ends
        sqllock's part and puts the session's row-lock wait back.

        `lock_timeout` bounds each lock call's wait (default 5 s; the
        session's own value is read at the first lock call and put back
        at the end). No transaction open: with `begin` (the default), a
        connection whose DB-API library would open one at its next
        statement -- psycopg and psycopg2 with autocommit off, sqlite3
        with an isolation_level -- gets it now, opened by that library
        (its BEGIN, with the connection's isolation level); an autocommit
        connection, or ``begin=False``, raises Misuse saying how to open
        one. MySQLdb with autocommit off is always in a transaction.

        A lock call that fails with Locked, Deadlock,
        SerializationFailure or ConnectionError fails the joined
        transaction (R7): roll the application's transaction back."""
        return JoinedTransaction(self, lock_timeout, begin)


class JoinedTransaction(Transaction):
    """sqllock's part of the application's transaction on a borrowed
    connection (a joined sqllock_txn, contract G2). Made by
    BorrowedDatabase.join(). lock(), lock_rows() and execute() work as on
    a Transaction; commit() raises Misuse (commit on the application's
    connection); end() -- and rollback(), and leaving the ``with`` block,
    whether or not it raised -- ends sqllock's part without ending the
    application's transaction."""

    def __init__(self, db: BorrowedDatabase,
                 lock_timeout: Optional[cv.Duration] = None,
                 begin: bool = True) -> None:
        self._db = db
        self._s = db._main
        self._h: Optional[int] = None
        self._on_enter: Optional[Callable[[], Any]] = None
        opts = _lib.TxnOptions.init(
            lock_timeout_ms=cv.duration_ms(lock_timeout, "lock_timeout"))
        native = db._native
        with db._lock:
            db._handle()
            if db._txn is not None:
                raise errors.Misuse("a transaction is already open on this "
                                    "handle: end it first")
            opened = native.txn_open()
        if opened is False:
            if not (begin and native.implicit()):
                raise errors.Misuse(
                    "join: no transaction is open on the %s connection: %s"
                    % (native.kind, native.how_to_begin()))
            native.begin()
        h = c_void_p()
        with db._lock:
            rc = lib.sqllock_txn_join(db._handle(), byref(opts), byref(h))
            if rc != _lib.OK:
                err = db._fail(rc)
                if isinstance(err, errors.Misuse) and \
                        native.txn_open() is not True:
                    err = errors.Misuse("%s (%s)" % (err.message,
                                                     native.how_to_begin()))
                raise err
            self._h = h.value
            db._txn = self

    def commit(self) -> None:
        """Raises Misuse: the transaction is the application's; commit it
        on its connection (conn.commit(), psycopg's ``with
        conn.transaction()``), then leave the block or call end()."""
        with self._db._lock:
            rc = lib.sqllock_txn_commit(self._handle())
            raise self._db._fail(rc if rc != _lib.OK else
                                 errors.Misuse.status)

    def end(self) -> None:
        """Ends sqllock's part: the session's row-lock wait goes back as
        it was; nothing is committed or rolled back, and the locks taken
        stay until the application ends its transaction. Ending twice is
        harmless."""
        db = self._db
        native = db._native
        with db._lock.handle:
            if self._h is None:
                return
            if native.closed() or native.read_pointer() != native.ptr:
                self._abandon()         # nothing can be sent any more
                return
            native.lock()
            try:
                self._free()
            finally:
                native.unlock()

    def rollback(self) -> None:
        """end(): on a joined transaction nothing is rolled back here --
        roll back on the application's connection."""
        self.end()

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if self._h is not None:
            self.end()

    def __repr__(self) -> str:
        return "<sqllock.JoinedTransaction %s>" % ("open" if self._h
                                                   else "over")


def borrow(connection: Any, *,
           statement_timeout: Optional[cv.Duration] = None) -> BorrowedDatabase:
    """A sqllock handle over the application's own open DB-API connection
    (contract G2): a psycopg (3) Connection, a psycopg2 connection, a
    MySQLdb (mysqlclient) connection or a sqlite3.Connection, whose
    client library must be the one libsqllock links. Row locks
    (``bdb.join()``), the records, the table calls and the guarded update
    then run on it, inside the application's transaction. The handle
    keeps a reference to the connection; closing it (close(), ``with``,
    or dropping it) never closes the connection. `statement_timeout`
    bounds each round trip on PostgreSQL (elsewhere the connection's own
    settings do).

    TypeError for anything else; ConnectionError for a closed
    connection; Unsupported when the pointer cannot be checked (another
    copy of the client library, a Python that keeps the sqlite3 *
    elsewhere); Misuse when the connection is busy (psycopg in pipeline
    mode, a query in progress). Added in 0.2.0."""
    return BorrowedDatabase(connection, statement_timeout=statement_timeout)


__all__ = ["borrow", "BorrowedDatabase", "JoinedTransaction"]
