"""Cancelling a fair wait (contract M3, L9, E3): a fair wait is ONE C
wait, which sqllock_lease_cancel() ends from another thread -- the sync
``acquire(cancel=event)``'s watcher, or the event loop for a cancelled
asyncio task. Each test: the wait ends within a generous bound, the
lease not held, its queue row gone, and the request withdrawn (the next
wait on the same lease is not ended by it)."""
from __future__ import annotations

import asyncio
import threading
import time
from typing import Any, List

import pytest

import sqllock
import sqllock.aio
from sqllock import _lib

from conftest import slowdown

# How long a cancel may take to end a wait (it takes one pause of the
# backoff, 500 ms at most, plus CANCEL_POLL): generous for a loaded host.
BOUND = 10.0


def _queued(db: sqllock.Database, name: str) -> int:
    """Live fair-queue rows of `name` (NAME 0x1f q...)."""
    return sum(1 for r in db.list()
               if r.name.startswith(name + "\x1fq") and r.remaining > 0)


def _queue_rows(db: sqllock.Database, name: str) -> List[str]:
    return sorted(r.name for r in db.list()
                  if r.name.startswith(name + "\x1fq"))


def _until(what: str, fn: Any, limit: float = 20.0) -> None:
    """Polls fn() until true; fails naming `what` after limit*slowdown."""
    end = time.monotonic() + limit * slowdown()
    while not fn():
        assert time.monotonic() < end, "timed out waiting for " + what
        time.sleep(0.01)


def _holder_token(db: sqllock.Database, name: str) -> int:
    got = db.lookup(name)
    return got.token if got is not None else 0


def test_M3_L9_E3_sync_fair_wait_canceled_by_event(url: str, name: str) -> None:
    # A fair wait without a deadline behind a holder, its queue row in
    # place; setting the event (from this thread: the waiter's is in the
    # C wait, E3's one exception) ends it with Canceled.
    with sqllock.connect(url) as a, sqllock.connect(url) as b:
        holder = a.lock(name, ttl=60).acquire()
        lease = b.lock(name, ttl=60, fair=True)
        ev = threading.Event()
        out: List[Any] = []

        def wait(cancel: threading.Event) -> None:
            try:
                lease.acquire(None, cancel=cancel)
                out.append("acquired")
            except Exception as e:   # checked below
                out.append(e)

        t = threading.Thread(target=wait, args=(ev,))
        t.start()
        _until("the waiter's queue row", lambda: _queued(a, name) == 1)
        t0 = time.monotonic()
        ev.set()
        t.join(BOUND * slowdown())
        took = time.monotonic() - t0
        print("sync fair wait canceled in %.3f s" % took)
        assert not t.is_alive(), "the canceled fair wait did not end"
        assert isinstance(out[0], sqllock.Canceled), out
        assert not lease.held and lease.count == 0
        assert _queued(a, name) == 0, "the queue row stayed"
        assert _holder_token(a, name) == holder.token

        # Withdrawn: a new fair wait on the same lease waits, and gets
        # the lock once the holder releases.
        out.clear()
        t = threading.Thread(target=wait, args=(threading.Event(),))
        t.start()
        _until("the second wait's queue row", lambda: _queued(a, name) == 1)
        assert not out, out
        holder.release()
        t.join(30 * slowdown())
        assert out == ["acquired"], out
        assert lease.held
        lease.release()
        assert _queued(a, name) == 0


def test_M3_L9_aio_fair_wait_canceled_with_its_task(url: str, name: str) -> None:
    # The asyncio form: cancelling the task ends the one C wait of the
    # fair acquire at once (not at its end: it has none), CancelledError,
    # nothing held, the queue row gone; the same AsyncLease then waits
    # fairly again and gets the lock at the holder's release.
    async def main() -> None:
        a = sqllock.connect(url)
        holder = a.lock(name, ttl=60).acquire()
        db = await sqllock.connect_async(url)
        lease = db.lock(name, ttl=60, fair=True)
        task = asyncio.ensure_future(lease.acquire(None))
        end = time.monotonic() + 20 * slowdown()
        while _queued(a, name) != 1:
            assert time.monotonic() < end, "the task never queued"
            assert not task.done(), task
            await asyncio.sleep(0.01)
        # M3: the one C wait keeps its place for longer than several
        # slices of a plain wait (a wait in slices would queue anew).
        row = _queue_rows(a, name)
        await asyncio.sleep(4 * sqllock.aio.SLICE)
        assert _queue_rows(a, name) == row and not task.done()
        t0 = time.monotonic()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(task, BOUND * slowdown())
        took = time.monotonic() - t0
        print("aio fair wait canceled in %.3f s" % took)
        assert not lease.held and lease.count == 0
        assert _queued(a, name) == 0, "the queue row stayed"
        assert _holder_token(a, name) == holder.token

        again = asyncio.ensure_future(lease.acquire(None))
        end = time.monotonic() + 20 * slowdown()
        while _queued(a, name) != 1:
            assert time.monotonic() < end, "the second wait never queued"
            assert not again.done(), again
            await asyncio.sleep(0.01)
        holder.release()
        await asyncio.wait_for(again, 30 * slowdown())
        assert lease.held
        await lease.release()
        assert _queued(a, name) == 0
        await db.close()
        a.close()
    asyncio.run(main())


def test_M3_L9_E3_cancel_racing_the_grant_never_leaves_it_held(
        url: str, name: str) -> None:
    # The holder releases and the waiter is cancelled at the same moment,
    # several times: whichever comes first, a canceled acquire ends with
    # the lease not held (a grant that won the race is released before
    # Canceled), the name free and the queue empty; one that was granted
    # holds it.
    with sqllock.connect(url) as a, sqllock.connect(url) as b:
        lease = b.lock(name, ttl=60, fair=True)
        for _ in range(4):
            holder = a.lock(name, ttl=60).acquire()
            ev = threading.Event()
            out: List[Any] = []

            def wait() -> None:
                try:
                    lease.acquire(None, cancel=ev)
                    out.append("acquired")
                except Exception as e:   # checked below
                    out.append(e)

            t = threading.Thread(target=wait)
            t.start()
            _until("the waiter's queue row", lambda: _queued(a, name) == 1)
            holder.release()
            ev.set()
            t.join(BOUND * slowdown())
            assert not t.is_alive()
            if out == ["acquired"]:
                assert lease.held
                lease.release()
            else:
                assert isinstance(out[0], sqllock.Canceled), out
                assert not lease.held
            assert a.lookup(name) is None, "the name stayed held"
            assert _queued(a, name) == 0


def test_L9_plain_wait_canceled_by_event(db: sqllock.Database,
                                         url: str, name: str) -> None:
    # Not only a fair one: the C cancel ends a plain wait too.
    with sqllock.connect(url) as a:
        a.lock(name, ttl=60).acquire()
        ev = threading.Event()
        threading.Timer(0.3, ev.set).start()
        t0 = time.monotonic()
        with pytest.raises(sqllock.Canceled):
            db.lock(name, ttl=60).acquire(None, cancel=ev)
        took = time.monotonic() - t0
        print("plain wait canceled in %.3f s" % took)
        assert took < BOUND * slowdown()


def test_cancel_bad_input(db: sqllock.Database, name: str) -> None:
    # Refused with a clear error, never a wait that cannot be cancelled.
    ev = threading.Event()
    lease = db.lock(name, ttl=10, fair=True)
    with pytest.raises(TypeError):
        lease.acquire(None, cancel=True)             # not an Event
    with pytest.raises(TypeError):
        lease.acquire(timeout=1, cancel=ev)          # the bool form
    with pytest.raises(sqllock.Unsupported):
        db.rw_lock(name + "-rw", ttl=10).acquire(None, cancel=ev)
    with pytest.raises(sqllock.Unsupported):
        db.semaphore(name + "-sem", 2, ttl=10).acquire(None, cancel=ev)
    ev.set()
    with pytest.raises(sqllock.Canceled):            # set before: no try
        lease.acquire(None, cancel=ev)
    assert db.lookup(name) is None
    # Not canceled, the event unused: an ordinary acquire.
    lease.acquire(1, cancel=threading.Event())
    assert lease.held
    lease.release()


def test_cancel_needs_the_library_call(db: sqllock.Database, name: str,
                                       monkeypatch: Any) -> None:
    # sqllock_lease_cancel() is optional (0.12.0): a libsqllock without
    # it still loads, and cancel= then says what it lacks.
    assert _lib.has("sqllock_lease_cancel")
    assert not _lib.has("sqllock_no_such_call")
    monkeypatch.setattr(_lib, "has", lambda n: False)
    with pytest.raises(sqllock.Unsupported, match="sqllock_lease_cancel"):
        db.lock(name, ttl=10).acquire(1, cancel=threading.Event())


def test_E3_cancel_while_waiting_for_a_connection_of_the_pool(
        url: str, name: str) -> None:
    # Every connection of the pool hosts a hold a wait acquired, so a
    # new wait first waits for a connection: the cancel ends that too.
    with sqllock.connect(url) as a, \
            sqllock.connect(url, max_connections=2) as b:
        first = a.lock(name + "-1", ttl=60).acquire()
        pooled = b.lock(name + "-1", ttl=60)
        t = threading.Thread(target=pooled.acquire, args=(30 * slowdown(),))
        t.start()
        _until("the pooled waiter", lambda: b.connections == 2)
        first.release()
        t.join(30 * slowdown())
        assert pooled.held           # on the pool's connection
        a.lock(name, ttl=60).acquire()
        ev = threading.Event()
        threading.Timer(0.3, ev.set).start()
        t0 = time.monotonic()
        with pytest.raises(sqllock.Canceled, match="connection of the pool"):
            b.lock(name, ttl=60, fair=True).acquire(None, cancel=ev)
        assert time.monotonic() - t0 < BOUND * slowdown()
        assert _queued(a, name) == 0
        pooled.release()
