"""The C connection inside each DB-API library's connection, for
sqllock.borrow() (contract G2): how to find it, check it, and see the
application's transaction on it.

How the C connection is found, and checked before it is used:

- psycopg: ``conn.pgconn.pgconn_ptr``; psycopg2: ``conn.pgconn_ptr``
  (PGconn *). The libpq that psycopg calls (its ctypes CDLL, or its C
  extension module) must resolve PQstatus to the same function as
  libsqllock: one libpq in the process (not the copy a *-binary wheel
  bundles). Then PQbackendPID(ptr) must be the connection's backend pid.
- MySQLdb: ``conn._get_native_connection()``, a PyCapsule named
  "_mysql.connection.native_connection" holding the MYSQL *. The same
  libmariadb/libmysqlclient as libsqllock's (mysql_thread_id at one
  address), and mysql_thread_id(ptr) must be ``conn.thread_id()``.
- sqlite3: no public pointer. CPython's connection object holds its
  ``sqlite3 *`` as the first field after the object header, read at
  ``id(conn) + object.__basicsize__``. The _sqlite3 module must use the
  same libsqlite3 as libsqllock (sqlite3_db_filename at one address), and
  the pointer must then give the file that ``PRAGMA database_list`` on
  the connection names, the connection's total_changes and its
  transaction state; anything else raises sqllock.Unsupported before the
  library is given the pointer.
"""
from __future__ import annotations

import ctypes
import os
import sys
from ctypes import byref, c_char_p, c_int, c_void_p
from typing import Any, Optional, Union

from . import _lib, errors
from ._db import Database
from ._lib import lib

SUPPORTED = ("a psycopg (3) Connection, a psycopg2 connection, a MySQLdb "
             "(mysqlclient) connection or a sqlite3.Connection")

# libpq's PQTRANS_ACTIVE, _INTRANS, _INERROR.
_PQTRANS_ACTIVE, _PQTRANS_INTRANS, _PQTRANS_INERROR = 1, 2, 3
_CONNECTION_OK = 0

_MYSQL_CAPSULE = b"_mysql.connection.native_connection"


# ---- the C libraries of the process -----------------------------------------

class _DlInfo(ctypes.Structure):
    _fields_ = [("dli_fname", c_char_p), ("dli_fbase", c_void_p),
                ("dli_sname", c_char_p), ("dli_saddr", c_void_p)]


def _file_of(addr: Optional[int]) -> str:
    """The shared object an address lies in (dladdr), for messages."""
    if not addr:
        return "?"
    try:
        dladdr = ctypes.CDLL(None).dladdr
        dladdr.argtypes = [c_void_p, ctypes.POINTER(_DlInfo)]
        dladdr.restype = c_int
        info = _DlInfo()
        if dladdr(addr, byref(info)) and info.dli_fname:
            return os.path.realpath(info.dli_fname.decode(errors="replace"))
    except (OSError, AttributeError):
        pass
    return "?"


def _address(owner: Union[ctypes.CDLL, str], symbol: str) -> Optional[int]:
    """Where `symbol` resolves through `owner` (a loaded CDLL, or the path
    of a loaded module, whose handle searches its own dependencies)."""
    try:
        cdll = owner if isinstance(owner, ctypes.CDLL) else ctypes.CDLL(owner)
        return ctypes.cast(cdll[symbol], c_void_p).value
    except (OSError, AttributeError):
        return None


def _ours(symbol: str, restype: Any, argtypes: list) -> Any:
    """A function of the client library libsqllock links (libpq,
    libmariadb, libsqlite3), as libsqllock resolves it."""
    fn = lib[symbol]
    fn.restype = restype
    fn.argtypes = argtypes
    return fn


def _capsule_pointer(capsule: Any) -> tuple:
    """(name, pointer) of a PyCapsule."""
    api = ctypes.pythonapi
    get_name = api.PyCapsule_GetName
    get_name.restype = c_char_p
    get_name.argtypes = [ctypes.py_object]
    get_pointer = api.PyCapsule_GetPointer
    get_pointer.restype = c_void_p
    get_pointer.argtypes = [ctypes.py_object, c_char_p]
    name = get_name(capsule)
    return name, get_pointer(capsule, name)


# ---- one class per DB-API library -------------------------------------------

class Native:
    """What the binding needs to know of one DB-API library's connection:
    its C pointer, how to check it, and its transaction."""

    kind = ""          #: the DB-API library, for messages
    scheme = ""        #: sqllock's driver
    symbol = ""        #: a client-library function both must share
    library = ""       #: the client library's name, for messages
    #: what shares libsqllock's client library
    remedy = ("the DB-API library built against the system's client library "
              "(Debian's python3-* package, or pip's source build rather "
              "than a *-binary wheel)")

    def __init__(self, conn: Any) -> None:
        self.conn = conn
        self.ptr = 0
        self._held = False

    # The pointer, and whose library it belongs to.
    def read_pointer(self) -> Optional[int]:
        raise NotImplementedError

    def owner(self) -> Union[ctypes.CDLL, str]:
        """The CDLL or the extension module through which the DB-API
        library calls its client library."""
        raise NotImplementedError

    def verify(self, ptr: int) -> None:
        """Raises unless `ptr` is this connection's (through libsqllock's
        copy of the client library)."""
        raise NotImplementedError

    def closed(self) -> bool:
        raise NotImplementedError

    def busy(self) -> Optional[str]:
        """Why the connection cannot take a statement of ours now."""
        return None

    # The application's transaction.
    def txn_open(self) -> Optional[bool]:
        """True/False when the DB-API library knows, else None."""
        return None

    def implicit(self) -> bool:
        """The DB-API library opens a transaction at its next statement
        (autocommit off)."""
        return False

    def begin(self) -> None:
        """Opens that transaction now, through the DB-API library."""
        raise NotImplementedError

    def how_to_begin(self) -> str:
        raise NotImplementedError

    # psycopg's lock (a no-op elsewhere).
    def try_lock(self) -> bool:
        return True

    def unlock(self) -> None:
        pass

    def lock(self) -> None:
        if not self.try_lock():
            raise errors.Misuse(
                "the %s connection is in use: a query of another thread, "
                "or a cursor.stream() not read to its end; call sqllock "
                "between the application's statements, from the thread "
                "that uses the connection" % self.kind)

    # ---- common ----------------------------------------------------------

    def open(self) -> int:
        """At borrow(): the connection's pointer, checked."""
        if self.closed():
            raise errors.ConnectionError(
                "sqllock.borrow(): the %s connection is closed: borrow an "
                "open one" % self.kind)
        ptr = self.read_pointer()
        if not ptr:
            raise errors.ConnectionError(
                "sqllock.borrow(): the %s connection has no %s connection "
                "(closed?)" % (self.kind, self.library))
        self.same_library()
        self.verify(ptr)
        self.ptr = ptr
        return ptr

    def same_library(self) -> None:
        ours = _address(lib, self.symbol)
        if ours is None:
            raise errors.DriverNotBuilt(
                "sqllock.borrow(): %s does not link %s (%s not found): this "
                "copy of sqllock was built without its %s driver" %
                (_lib.lib._name, self.library, self.symbol, self.scheme))
        owner = self.owner()
        theirs = _address(owner, self.symbol)
        if theirs != ours:
            raise errors.Unsupported(
                "sqllock.borrow(): %s calls another %s (%s) than libsqllock "
                "(%s): a connection of one copy cannot be used through the "
                "other. Use %s, or a libsqllock built against the copy %s "
                "uses" % (self.kind, self.library,
                          _file_of(theirs) if theirs else
                          "%s not found through %s" % (self.symbol, owner),
                          _file_of(ours), self.remedy, self.kind))

    def check(self) -> None:
        """Before each call: open, the same connection, and free now."""
        if self.closed():
            raise errors.ConnectionError(
                "the borrowed %s connection was closed by the application: "
                "close this sqllock handle (nothing can run on it any more)"
                % self.kind)
        ptr = self.read_pointer()
        if ptr != self.ptr:
            raise errors.ConnectionError(
                "the borrowed %s connection no longer has the %s connection "
                "it had (closed or reconnected): close this sqllock handle, "
                "and borrow the connection again" % (self.kind, self.library))
        why = self.busy()
        if why:
            raise errors.Misuse(why)


class _Psycopg(Native):
    kind = "psycopg"
    scheme = "postgres"
    symbol = "PQstatus"
    library = "libpq"

    def read_pointer(self) -> Optional[int]:
        return self.conn.pgconn.pgconn_ptr

    def owner(self) -> Union[ctypes.CDLL, str]:
        import psycopg
        if psycopg.pq.__impl__ == "python":
            from psycopg.pq import _pq_ctypes
            return _pq_ctypes.pq
        mod = sys.modules[type(self.conn.pgconn).__module__]
        return str(mod.__file__)

    def verify(self, ptr: int) -> None:
        _verify_pg(self, ptr, self.conn.info.backend_pid)

    def closed(self) -> bool:
        return bool(self.conn.closed)

    def busy(self) -> Optional[str]:
        pg = self.conn.pgconn
        if pg.pipeline_status:
            return ("the psycopg connection is in pipeline mode: sqllock "
                    "runs on it only outside conn.pipeline() blocks")
        if pg.transaction_status == _PQTRANS_ACTIVE:
            return ("the psycopg connection has a query in progress: read "
                    "its results first")
        return None

    def txn_open(self) -> Optional[bool]:
        return self.conn.pgconn.transaction_status in (_PQTRANS_INTRANS,
                                                       _PQTRANS_INERROR)

    def implicit(self) -> bool:
        return not self.conn.autocommit

    def begin(self) -> None:
        # psycopg sends its BEGIN (with the connection's isolation level,
        # read_only, deferrable) before the first statement outside a
        # transaction: let it.
        self.conn.execute("SELECT 1")

    def how_to_begin(self) -> str:
        return ("open one there first: `with conn.transaction():` around "
                "the join" + (" (autocommit is on)" if self.conn.autocommit
                              else ""))

    def try_lock(self) -> bool:
        if self._held:
            return True
        self._held = self.conn.lock.acquire(blocking=False)
        return self._held

    def unlock(self) -> None:
        if self._held:
            self._held = False
            self.conn.lock.release()


class _Psycopg2(Native):
    kind = "psycopg2"
    scheme = "postgres"
    symbol = "PQstatus"
    library = "libpq"

    def read_pointer(self) -> Optional[int]:
        return self.conn.pgconn_ptr

    def owner(self) -> Union[ctypes.CDLL, str]:
        return str(sys.modules["psycopg2._psycopg"].__file__)

    def verify(self, ptr: int) -> None:
        if self.conn.async_:
            raise errors.Unsupported(
                "sqllock.borrow(): an asynchronous psycopg2 connection "
                "(async_=True) cannot be borrowed: its queries are in flight "
                "between polls; borrow a synchronous one")
        _verify_pg(self, ptr, self.conn.get_backend_pid())

    def closed(self) -> bool:
        return bool(self.conn.closed)

    def busy(self) -> Optional[str]:
        if self.conn.isexecuting():
            return "the psycopg2 connection has a query in progress"
        return None

    def txn_open(self) -> Optional[bool]:
        return self.conn.info.transaction_status in (_PQTRANS_INTRANS,
                                                     _PQTRANS_INERROR)

    def implicit(self) -> bool:
        return not self.conn.autocommit

    def begin(self) -> None:
        # psycopg2 tracks its transaction itself (conn.commit() sends
        # nothing unless psycopg2 began one): it must be psycopg2 that
        # sends the BEGIN, as it does before its next statement.
        with self.conn.cursor() as cur:
            cur.execute("SELECT 1")

    def how_to_begin(self) -> str:
        if self.conn.autocommit:
            return ("autocommit is on: set conn.autocommit = False (psycopg2 "
                    "then begins at the next statement, or at the join), or "
                    "execute BEGIN on a cursor first")
        return "execute a statement first, or join with begin=True"


def _verify_pg(native: Native, ptr: int, pid: int) -> None:
    status = _ours("PQstatus", c_int, [c_void_p])
    backend_pid = _ours("PQbackendPID", c_int, [c_void_p])
    if status(ptr) != _CONNECTION_OK:
        raise errors.ConnectionError(
            "sqllock.borrow(): the %s connection is not connected"
            % native.kind)
    if backend_pid(ptr) != pid:
        raise errors.Unsupported(
            "sqllock.borrow(): the PGconn of the %s connection does not "
            "answer as the connection does (backend pid %d, %d expected)"
            % (native.kind, backend_pid(ptr), pid))


class _MySQLdb(Native):
    kind = "MySQLdb"
    scheme = "mysql"
    symbol = "mysql_thread_id"
    library = "libmariadb/libmysqlclient"

    def read_pointer(self) -> Optional[int]:
        get = getattr(self.conn, "_get_native_connection", None)
        if get is None:
            raise errors.Unsupported(
                "sqllock.borrow(): this MySQLdb has no "
                "_get_native_connection() (mysqlclient 1.4 or later has)")
        try:
            capsule = get()
        except Exception:                    # closed: OperationalError 2006
            return None
        name, ptr = _capsule_pointer(capsule)
        if name != _MYSQL_CAPSULE:
            raise errors.Unsupported(
                "sqllock.borrow(): MySQLdb's native connection is a capsule "
                "named %r, not %r: an unknown mysqlclient" %
                (name, _MYSQL_CAPSULE.decode()))
        return ptr

    def owner(self) -> Union[ctypes.CDLL, str]:
        return str(sys.modules["MySQLdb._mysql"].__file__)

    def verify(self, ptr: int) -> None:
        thread_id = _ours("mysql_thread_id", ctypes.c_ulong, [c_void_p])
        if thread_id(ptr) != self.conn.thread_id():
            raise errors.Unsupported(
                "sqllock.borrow(): the MYSQL * of the MySQLdb connection does "
                "not answer as the connection does (thread id %d, %d "
                "expected)" % (thread_id(ptr), self.conn.thread_id()))

    def closed(self) -> bool:
        return not self.conn.open

    def txn_open(self) -> Optional[bool]:
        # With autocommit off the next statement opens the application's
        # transaction, which the C library joins; with it on, only the
        # server knows whether a BEGIN was sent.
        return True if not self.conn.get_autocommit() else None

    def how_to_begin(self) -> str:
        return ("autocommit is on: call conn.begin() first, or "
                "conn.autocommit(False) (MySQLdb's default)")


class _Sqlite3(Native):
    kind = "sqlite3"
    scheme = "sqlite"
    symbol = "sqlite3_db_filename"
    library = "libsqlite3"
    remedy = ("a Python whose _sqlite3 module links the system's libsqlite3 "
              "(Debian's /usr/bin/python3; a Python built elsewhere, pyenv's "
              "say, may carry a SQLite of its own)")

    def read_pointer(self) -> Optional[int]:
        # CPython's pysqlite_Connection: PyObject_HEAD, then `sqlite3 *db`
        # (NULL once closed), in every version from 3.7 to 3.13.
        if sys.implementation.name != "cpython":
            raise errors.Unsupported(
                "sqllock.borrow(): a sqlite3 connection can be borrowed on "
                "CPython only (its sqlite3 * is read from the object)")
        if type(self.conn).__basicsize__ < object.__basicsize__ + \
                ctypes.sizeof(c_void_p):
            raise errors.Unsupported(
                "sqllock.borrow(): this sqlite3.Connection has no room for "
                "its sqlite3 * where CPython keeps it")
        return c_void_p.from_address(id(self.conn) +
                                     object.__basicsize__).value

    def owner(self) -> Union[ctypes.CDLL, str]:
        return str(sys.modules["_sqlite3"].__file__)

    def verify(self, ptr: int) -> None:
        filename = _ours("sqlite3_db_filename", c_char_p, [c_void_p, c_char_p])
        autocommit = _ours("sqlite3_get_autocommit", c_int, [c_void_p])
        changes = _ours("sqlite3_total_changes", c_int, [c_void_p])
        main = [row[2] for row in self.conn.execute("PRAGMA database_list")
                if row[1] == "main"]
        want = main[0] if main else None
        got = filename(ptr, b"main")
        got = got.decode("utf-8", "replace") if got is not None else None
        if got != want or bool(autocommit(ptr)) == self.conn.in_transaction \
                or changes(ptr) != self.conn.total_changes:
            raise errors.Unsupported(
                "sqllock.borrow(): the sqlite3 * read from the sqlite3 "
                "connection does not answer as the connection does (main "
                "database %r, %r expected): this Python keeps it elsewhere "
                "than CPython 3.7-3.13 do" % (got, want))

    def closed(self) -> bool:
        import sqlite3
        try:
            self.conn.total_changes
        except sqlite3.ProgrammingError:
            return True
        return False

    def txn_open(self) -> Optional[bool]:
        return self.conn.in_transaction

    def _legacy(self) -> bool:
        import sqlite3
        mode = getattr(self.conn, "autocommit",
                       getattr(sqlite3, "LEGACY_TRANSACTION_CONTROL", -1))
        return mode == getattr(sqlite3, "LEGACY_TRANSACTION_CONTROL", -1)

    def implicit(self) -> bool:
        # Python 3.12's autocommit=False keeps a transaction open at all
        # times; the legacy mode opens one before a write, as a lock is.
        return self._legacy() and self.conn.isolation_level is not None

    def begin(self) -> None:
        # What the sqlite3 module sends before a write in its legacy mode.
        self.conn.execute("BEGIN " + (self.conn.isolation_level or ""))

    def how_to_begin(self) -> str:
        return ("the connection is in autocommit mode (isolation_level None"
                ", or autocommit=True): execute BEGIN (or BEGIN IMMEDIATE) on "
                "it first")


def native_of(conn: Any) -> Native:
    """The Native of a DB-API connection; TypeError for anything else."""
    mods = sys.modules
    psycopg = mods.get("psycopg")
    if psycopg is not None:
        if isinstance(conn, psycopg.AsyncConnection):
            raise TypeError(
                "sqllock.borrow() takes synchronous connections: a psycopg "
                "AsyncConnection is not supported (the asyncio face, "
                "sqllock.connect_async(), has no borrowed form). Borrow a "
                "psycopg.Connection, or use a handle of sqllock's own")
        if isinstance(conn, psycopg.Connection):
            return _Psycopg(conn)
    ext = mods.get("psycopg2.extensions")
    if ext is not None and isinstance(conn, ext.connection):
        return _Psycopg2(conn)
    my = mods.get("MySQLdb.connections")
    if my is not None and isinstance(conn, my.Connection):
        return _MySQLdb(conn)
    sqlite3 = mods.get("sqlite3")
    if sqlite3 is not None and isinstance(conn, sqlite3.Connection):
        return _Sqlite3(conn)
    if isinstance(conn, Database):
        raise TypeError("sqllock.borrow() takes the application's DB-API "
                        "connection; %r is a sqllock handle already" % conn)
    if isinstance(conn, str):
        raise TypeError("sqllock.borrow() takes the application's DB-API "
                        "connection, not a URL: for a connection of sqllock's "
                        "own, use sqllock.connect(url)")
    raise TypeError(
        "sqllock.borrow() takes %s; got %s.%s (a pool's or an ORM's wrapper: "
        "pass the DB-API connection inside it, e.g. SQLAlchemy's "
        "connection.connection.driver_connection)" %
        (SUPPORTED, type(conn).__module__, type(conn).__qualname__))
