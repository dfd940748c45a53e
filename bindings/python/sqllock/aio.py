"""The asyncio face: the same handles, with every blocking call run on a
thread of the handle's own, so that the event loop never waits.

    async with sqllock.connect_async(url) as db:
        async with db.lock("nightly-report", ttl=30, wait=10) as lease:
            ...

Each AsyncDatabase has one worker thread for its short calls (a try, a
release, a renewal, the records, a transaction's statements), run there
one after another, and up to max_connections more for lease waits: a
wait runs on a connection of the Database's pool (see
sqllock.Database), so that a task waiting for a lock holds up no other
task's call on the same handle. The blocking calls never take the event
loop's thread.

Cancellation. A lease wait runs as short waits of the C library in turn
(SLICE seconds each; wake-ups still work within each), and a cancelled
wait stops at the end of the current one -- at once with a libsqllock
that has sqllock_lease_cancel() (0.12.0), which the event loop calls to
end the C wait running. A fair wait (``fair=True``, contract M3) is ONE
C wait, since a wait in slices would give up its place in the queue at
each: a cancel ends it through sqllock_lease_cancel() within a pause of
its backoff, its queue row deleted (with an older libsqllock, only when
that wait ends: give it a deadline there). If the wait was granted the
lease meanwhile, it is released before the cancellation goes on: a
cancelled ``acquire()`` or ``async with db.lock(...)`` never leaves the
lease held. A release is shielded from cancellation (it completes). Other
calls cannot be stopped once sent: cancelling one abandons its result,
not its effect.

The application's own connection (sqllock.borrow(), contract G2) has no
asyncio form: sqllock.borrow() refuses psycopg's AsyncConnection with a
TypeError. Its statements run on the event loop's thread while the
library's would run on a worker thread, and only a lock shared by both
(psycopg's ``conn.lock`` is an asyncio.Lock there) could keep them apart.
Borrow a synchronous connection, or use an AsyncDatabase of the library's
own, whose row-lock transactions (``db.transaction()``) are its own.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import threading
import time
from typing import (Any, Callable, Generator, List, Mapping, Optional,
                    Sequence, TypeVar, Union)

from . import _convert as cv
from . import _lib, errors
from ._db import (Database, ExecResult, LeaseInfo, Record, RecordUpdate, Row,
                  Table, connect)
from ._lease import Lease, LeaseState, _UNSET
from ._txn import LockMode, Transaction

T = TypeVar("T")

#: The longest single C wait of an async acquire (seconds): how long a
#: cancelled wait may take to stop.
SLICE = 0.2


class AsyncDatabase:
    """A Database whose blocking calls run on a worker thread of its own.
    `sync` is the underlying Database (its lease-state reads are safe from
    the event loop's thread)."""

    def __init__(self, db: Database) -> None:
        self.sync = db
        self._ex = concurrent.futures.ThreadPoolExecutor(
            1, thread_name_prefix="sqllock-aio")
        # The lease waits: at most one per connection of the pool.
        self._wex = concurrent.futures.ThreadPoolExecutor(
            db.max_connections, thread_name_prefix="sqllock-aio-wait")

    async def _run(self, fn: Callable[..., T], *args: Any, **kw: Any) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._ex,
                                          functools.partial(fn, *args, **kw))

    async def close(self) -> None:
        """Closes the handle (see Database.close) and its worker."""
        try:
            await asyncio.shield(self._run(self.sync.close))
        finally:
            self._ex.shutdown(wait=False)
            self._wex.shutdown(wait=False)

    async def __aenter__(self) -> "AsyncDatabase":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    @property
    def driver(self) -> str:
        return self.sync.driver

    def __repr__(self) -> str:
        return "<sqllock.aio.AsyncDatabase %s>" % self.sync.url

    def lock(self, name: str, ttl: cv.Duration,
             wait: Optional[cv.Duration] = None, **options: Any) -> "AsyncLease":
        """``async with db.lock(name, ttl=30, wait=10) as lease:`` (the
        options are those of sqllock.Lease)."""
        return AsyncLease(self, name, ttl, wait, options)

    def transaction(self, lock_timeout: Optional[cv.Duration] = None) -> "AsyncTransaction":
        """``async with db.transaction() as txn: await txn.lock(...)``"""
        return AsyncTransaction(self, lock_timeout)

    async def init(self) -> None:
        await self._run(self.sync.init)

    async def list(self) -> List[LeaseInfo]:
        return await self._run(self.sync.list)

    async def reap(self, grace: cv.Duration = 0, batch: int = 1000) -> int:
        return await self._run(self.sync.reap, grace, batch)

    async def execute(self, sql: str, *args: Union[int, str]) -> ExecResult:
        return await self._run(self.sync.execute, sql, *args)

    async def record_get(self, key: str) -> Record:
        return await self._run(self.sync.record_get, key)

    async def record_create(self, key: str, value: Any) -> None:
        await self._run(self.sync.record_create, key, value)

    async def record_cas(self, key: str, expected: int, value: Any) -> int:
        return await self._run(self.sync.record_cas, key, expected, value)

    async def record_delete(self, key: str, expected: int) -> None:
        await self._run(self.sync.record_delete, key, expected)

    async def record_update(self, key: str,
                            fn: Callable[[Optional[bytes]], Any],
                            **options: Any) -> RecordUpdate:
        """Database.record_update(); `fn` is a plain (not async) function
        and runs on the handle's worker thread."""
        return await self._run(self.sync.record_update, key, fn, **options)

    async def table_get(self, table: Table, key: Union[int, str],
                        columns: Sequence[str]) -> Row:
        return await self._run(self.sync.table_get, table, key, columns)

    async def table_cas(self, table: Table, key: Union[int, str],
                        expected: int, set: Mapping[str, Any],
                        where: Optional[Mapping[str, Any]] = None) -> int:
        return await self._run(self.sync.table_cas, table, key, expected,
                               set, where)

    async def table_update(self, table: Table, key: Union[int, str],
                           set: Mapping[str, Any],
                           where: Optional[Mapping[str, Any]] = None) -> None:
        await self._run(self.sync.table_update, table, key, set, where)


class _AsyncConnect:
    """What connect_async() returns: awaitable, and an async context
    manager that closes the handle."""

    def __init__(self, url: str, kw: Any) -> None:
        self._url, self._kw = url, kw
        self._db: Optional[AsyncDatabase] = None

    async def _open(self) -> AsyncDatabase:
        loop = asyncio.get_running_loop()
        db = await loop.run_in_executor(
            None, functools.partial(connect, self._url, **self._kw))
        return AsyncDatabase(db)

    def __await__(self) -> Generator[Any, None, AsyncDatabase]:
        return self._open().__await__()

    async def __aenter__(self) -> AsyncDatabase:
        self._db = await self._open()
        return self._db

    async def __aexit__(self, *exc: Any) -> None:
        if self._db is not None:
            await self._db.close()


def connect_async(url: str, **options: Any) -> _AsyncConnect:
    """``db = await sqllock.connect_async(url)`` or ``async with
    sqllock.connect_async(url) as db:`` -- sqllock.connect() (same
    options) on a worker thread, giving an AsyncDatabase."""
    return _AsyncConnect(url, options)


class AsyncLease:
    """A Lease for asyncio. `sync` is the underlying Lease once the
    first acquire has made it; `lost_event` is an asyncio.Event set (on
    the loop) when the hold is found lost."""

    def __init__(self, db: AsyncDatabase, name: str, ttl: cv.Duration,
                 wait: Optional[cv.Duration], options: Any) -> None:
        cv.text(name, "name")      # type errors now; the rest in C
        self._db = db
        self._args = (name, ttl, wait, options)
        self._wait_ms = cv.wait_ms(wait)
        self.sync: Optional[Lease] = None
        self.lost_event: Optional[asyncio.Event] = None

    def _make(self) -> Lease:
        name, ttl, wait, options = self._args
        return Lease(self._db.sync, name, ttl, wait, **options)

    async def _ensure(self) -> Lease:
        if self.sync is None:
            lease = await self._db._run(self._make)
            loop = asyncio.get_running_loop()
            self.lost_event = asyncio.Event()
            event = self.lost_event

            def on_loss(_: Lease) -> None:
                try:
                    loop.call_soon_threadsafe(event.set)
                except RuntimeError:      # the loop is closed
                    pass

            lease._loss_hooks.append(on_loss)
            self.sync = lease
        return self.sync

    def _acquire_slices(self, wait_ms: int, cancel: threading.Event) -> str:
        """On the worker: waits in slices (a fair wait in one); "acquired",
        "released" (granted after a cancel, and let go), or "cancelled".
        The loop ends the C wait running through lease._cancel_wait()."""
        lease = self.sync
        assert lease is not None
        forever = wait_ms == _lib.WAIT_FOREVER
        c = cancel if lease._cancellable() else None
        if lease._opts.flags & _lib.LEASE_FAIR:
            if cancel.is_set():
                return "cancelled"
            try:
                lease._acquire(None if forever else wait_ms / 1000, c, False)
            except errors.Canceled:
                if cancel.is_set():
                    return "cancelled"   # released if it was granted
                raise
            if cancel.is_set():          # an old libsqllock's late grant
                lease.release()
                return "released"
            return "acquired"
        deadline = time.monotonic() + wait_ms / 1000
        while True:
            if cancel.is_set():
                return "cancelled"
            left = int((deadline - time.monotonic()) * 1000)
            step = int(SLICE * 1000) if forever else max(0, min(left, int(SLICE * 1000)))
            if wait_ms == 0:
                step = 0
            try:
                lease._acquire(step / 1000, c if step else None, False)
            except errors.Canceled:
                if cancel.is_set():
                    return "cancelled"
                raise
            except (errors.Busy, errors.Timeout):
                if wait_ms == 0:
                    raise
                if not forever and time.monotonic() >= deadline:
                    raise errors.Timeout(
                        "lock '%s' was still held by another owner after "
                        "waiting %d ms" % (lease.name, wait_ms)) from None
                continue
            if cancel.is_set():
                lease.release()
                return "released"
            return "acquired"

    async def acquire(self, wait: Optional[cv.Duration] = _UNSET) -> "AsyncLease":
        """Lease.acquire() without blocking the loop; a cancelled wait
        leaves the lease not held (see the module's docstring)."""
        wait_ms = self._wait_ms if wait is _UNSET else cv.wait_ms(wait)
        lease = await self._ensure()
        cancel = threading.Event()
        fut = asyncio.wrap_future(
            self._db._wex.submit(self._acquire_slices, wait_ms, cancel))
        try:
            await asyncio.shield(fut)
        except asyncio.CancelledError:
            # Ends the C wait running (a fair one's at once); the worker
            # withdraws the request once that wait returned.
            lease._cancel_wait(cancel)
            try:
                outcome = await asyncio.shield(fut)
            except asyncio.CancelledError:
                # Cancelled again: let the worker's outcome be undone
                # there, whenever it ends.
                fut.add_done_callback(self._undo)
                raise
            except Exception:
                outcome = None
            if outcome == "acquired":
                await asyncio.shield(self._db._run(self._release_quiet))
            raise
        del lease
        return self

    def _undo(self, fut: "asyncio.Future[str]") -> None:
        if not fut.cancelled() and fut.exception() is None and \
                fut.result() == "acquired":
            self._db._ex.submit(self._release_quiet)

    def _release_quiet(self) -> None:
        assert self.sync is not None
        try:
            self.sync.release()
        except errors.Error:
            pass

    async def release(self) -> None:
        """Lease.release(); it completes even if the caller is cancelled."""
        if self.sync is None:
            raise errors.NotHeld("lock '%s' is not held" % self._args[0])
        await asyncio.shield(self._db._run(self.sync.release))

    async def renew(self) -> None:
        if self.sync is None:
            raise errors.NotHeld("lock '%s' is not held" % self._args[0])
        await self._db._run(self.sync.renew)

    async def wait_lost(self) -> errors.Error:
        """Returns (Lost or Timeout) once the current hold is lost."""
        lease = await self._ensure()
        assert self.lost_event is not None
        await self.lost_event.wait()
        return lease.loss or errors.Lost("lock '%s' is lost" % lease.name)

    async def __aenter__(self) -> "AsyncLease":
        return await self.acquire()

    async def __aexit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if self.sync is None or self.sync.count == 0:
            return
        try:
            await self.release()
        except errors.Error:
            if exc_type is None:
                raise

    # The state, read without the worker (safe from any thread).
    @property
    def name(self) -> str:
        return self._args[0]

    @property
    def token(self) -> int:
        return self.sync.token if self.sync else 0

    @property
    def owner(self) -> str:
        return self.sync.owner if self.sync else ""

    @property
    def count(self) -> int:
        return self.sync.count if self.sync else 0

    @property
    def state(self) -> LeaseState:
        return self.sync.state if self.sync else LeaseState.NOT_HELD

    @property
    def held(self) -> bool:
        return self.sync.held if self.sync else False

    @property
    def lost(self) -> bool:
        return self.sync.lost if self.sync else False

    @property
    def loss(self) -> Optional[errors.Error]:
        return self.sync.loss if self.sync else None

    @property
    def remaining(self) -> float:
        return self.sync.remaining if self.sync else 0.0

    def check(self) -> None:
        """Lease.check(): raises unless held right now."""
        if self.sync is None:
            raise errors.NotHeld("lock '%s' is not held" % self._args[0])
        self.sync.check()


class AsyncTransaction:
    """A Transaction for asyncio: ``async with db.transaction() as txn``
    commits at the end of the block, rolls back on an exception."""

    def __init__(self, db: AsyncDatabase, lock_timeout: Optional[cv.Duration]) -> None:
        self._db = db
        self._lock_timeout = lock_timeout
        self.sync: Optional[Transaction] = None

    async def _txn(self) -> Transaction:
        if self.sync is None:
            self.sync = await self._db._run(self._db.sync.transaction,
                                            self._lock_timeout)
        return self.sync

    async def lock(self, *names: str,
                   mode: Union[LockMode, str] = LockMode.WAIT) -> List[str]:
        txn = await self._txn()
        return await self._db._run(txn.lock, *names, mode=mode)

    async def lock_rows(self, table: Table, *keys: Union[int, str],
                        mode: Union[LockMode, str] = LockMode.WAIT) -> List[Any]:
        txn = await self._txn()
        return await self._db._run(txn.lock_rows, table, *keys, mode=mode)

    async def execute(self, sql: str, *args: Union[int, str]) -> ExecResult:
        txn = await self._txn()
        return await self._db._run(txn.execute, sql, *args)

    async def commit(self) -> None:
        txn = await self._txn()
        await asyncio.shield(self._db._run(txn.commit))

    async def rollback(self) -> None:
        if self.sync is not None:
            await asyncio.shield(self._db._run(self.sync.rollback))

    async def __aenter__(self) -> "AsyncTransaction":
        await self._txn()
        return self

    async def __aexit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if self.sync is None or not self.sync.open:
            return
        await asyncio.shield(self._db._run(self.sync.__exit__, exc_type, exc,
                                           tb))


__all__ = ["AsyncDatabase", "AsyncLease", "AsyncTransaction",
           "connect_async", "SLICE"]
