"""sqllock: distributed locks on the SQL database you already run.

A binding of libsqllock (the C library, through ctypes) for Python::

    import sqllock

    with sqllock.connect("postgres://app:pw@db1/shop", init=True) as db:
        with db.lock("nightly-report", ttl=30, wait=10) as lease:
            ...                      # renewed by a watchdog meanwhile
            lease.check()            # raises Lost once the lease is gone

Lease locks (db.lock), row locks (db.transaction, db.row_lock), versioned
records with a retry helper (db.record_update), compare-and-set on the
application's tables (db.table_cas), the guard of a lease for the
application's own writes (lease.guard), the reaper (sqllock.Reaper),
semaphores (db.semaphore), shared/exclusive locks (db.rw_lock), fair
waiting (db.lock(..., fair=True)), leader election (sqllock.Leader,
db.leader(name)), observers of lock names (sqllock.Observer), an
asyncio face (sqllock.connect_async), and row locks, records and guarded
writes on the application's own DB-API connection, inside its
transaction (sqllock.borrow(conn), bdb.join()). Every status of the C
library is an exception class of its own under sqllock.Error, carrying
the library's message. The rules cited (L1, R7, ...) are those of docs/contract.md.

The library is found through $SQLLOCK_LIBRARY (a path), else the
system's loader (ctypes.util.find_library, then libsqllock.so.0).
"""
from __future__ import annotations

from . import errors
from ._base import Error
from ._borrow import BorrowedDatabase, JoinedTransaction, borrow
from ._convert import Duration, Op, add, eq, ge, gt, le, lt, ne, set_to, sub
from ._db import (Database, ExecResult, LeaseInfo, Record, RecordUpdate, Row,
                  Table, connect, redact)
from ._lease import Lease, LeaseSet, LeaseState
from ._leader import Leader, LeaderInfo, leader_get
from ._lib import LibraryNotFound
from ._metrics import Event, MetricsCollector, log_to, metrics_text
from ._lib import lib as _clib
from ._observe import Change, Observer
from ._reaper import Reaper, ReaperStats, start_reaper
from ._rw import RWLease
from ._sem import SemaphoreLease
from ._txn import LockMode, Transaction
from .aio import AsyncDatabase, AsyncLease, AsyncTransaction, connect_async
from .errors import *  # noqa: F401,F403  (one class per status)
from .errors import BY_STATUS

__version__ = "0.1.0"

#: The version of the C library loaded ("MAJOR.MINOR.PATCH").
library_version: str = _clib.sqllock_version_string().decode()
#: The path or name the C library was loaded from.
library_path: str = _clib._name


def exception_for(status: int) -> type:
    """The exception class of a C status code (sqllock.Error for a code
    this binding does not know)."""
    return BY_STATUS.get(status, Error)


__all__ = [
    "connect", "connect_async", "redact", "Database", "AsyncDatabase",
    "borrow", "BorrowedDatabase", "JoinedTransaction",
    "Lease", "LeaseSet", "AsyncLease", "LeaseState", "RWLease",
    "SemaphoreLease",
    "Transaction", "AsyncTransaction",
    "LockMode", "Reaper", "ReaperStats", "start_reaper", "LeaseInfo",
    "Record", "RecordUpdate", "Row", "Table", "ExecResult", "Op", "add",
    "sub", "set_to", "eq", "ne", "lt", "le", "gt", "ge", "Duration",
    "Error", "LibraryNotFound", "exception_for", "library_version",
    "library_path", "Leader", "LeaderInfo", "leader_get",
    "Observer", "Change",
] + errors.__all__
