"""The asyncio face: `async with db.lock(...)`, a loop that keeps running
while a lease is awaited, loss as an asyncio.Event, and cancellation
that never leaves a lease held."""
from __future__ import annotations

import asyncio
import time

import pytest

import sqllock

from conftest import placeholder, slowdown


def run(coro):
    return asyncio.run(coro)


def test_aio_lock_and_release(url: str, name: str) -> None:
    async def main() -> None:
        async with sqllock.connect_async(url) as db:
            async with db.lock(name, ttl=10, wait=5) as lease:
                assert lease.held and lease.token > 0
                rows = [r.name for r in await db.list()]
                assert name in rows
            assert not lease.held
            assert name not in [r.name for r in await db.list()]
    run(main())


def test_aio_L9_wait_does_not_block_the_loop(url: str, name: str) -> None:
    async def main() -> None:
        holder = sqllock.connect(url)
        holder.lock(name, ttl=30).acquire()
        db = await sqllock.connect_async(url)
        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0.01)

        t = asyncio.ensure_future(ticker())
        t0 = time.monotonic()
        with pytest.raises(sqllock.Timeout) as e:
            async with db.lock(name, ttl=5, wait=0.8):
                pass
        elapsed = time.monotonic() - t0
        t.cancel()
        assert "after waiting 800 ms" in str(e.value)
        assert 0.75 <= elapsed < 3 * slowdown()
        assert ticks >= 30, "the event loop was blocked"
        with pytest.raises(sqllock.Busy):
            await db.lock(name, ttl=5, wait=0).acquire()
        holder.close()
        await db.close()
    run(main())


def test_aio_L7_loss_sets_the_asyncio_event(url: str, name: str) -> None:
    async def main() -> None:
        async with sqllock.connect_async(url) as db:
            lease = db.lock(name, ttl=1.5, renew_every=0.2)
            with pytest.raises(sqllock.Lost):
                async with lease:
                    await db.execute("DELETE FROM sqllock_lease WHERE name = %s"
                                     % placeholder(db.driver, 1), name)
                    err = await asyncio.wait_for(lease.wait_lost(),
                                                 5 * slowdown())
                    assert isinstance(err, sqllock.Lost) and lease.lost
    run(main())


def _name_is_free(url: str, name: str) -> bool:
    with sqllock.connect(url) as probe:
        lease = probe.lock(name, ttl=5, watch=False)
        if not lease.try_acquire():
            return False
        lease.release()
        return True


def test_aio_cancelled_wait_leaves_no_lease_held(url: str, name: str) -> None:
    # A waiter cancelled while the holder holds; then waiters cancelled
    # just as the holder releases (the grant and the cancel race): after
    # each, no lease of the waiter's is left (a third handle gets it).
    async def main() -> None:
        holder = sqllock.connect(url)
        cancelled = granted = 0
        async with sqllock.connect_async(url) as db:
            for delay in (0.3, 0.0, 0.0, 0.0, 0.05, 0.1):
                lease = holder.lock(name, ttl=30).acquire()
                waiter = asyncio.ensure_future(
                    db.lock(name, ttl=30, wait=10).acquire())
                await asyncio.sleep(0.3)
                if delay:
                    lease.release()
                    await asyncio.sleep(delay)
                t0 = time.monotonic()
                waiter.cancel()
                if not delay:
                    # The release wakes the worker's C wait, which takes
                    # the lease while the cancellation is on its way.
                    lease.release()
                try:
                    got = await waiter
                except asyncio.CancelledError:
                    cancelled += 1
                else:
                    # The grant came before the cancel: not cancelled.
                    granted += 1
                    await got.release()
                # A granted lease would be released before this returns.
                assert time.monotonic() - t0 < 2 * slowdown()
                assert _name_is_free(url, name), "cancelled, yet held"
            assert cancelled >= 1
        holder.close()
    run(main())


def test_aio_transaction_and_records(url: str, name: str) -> None:
    async def main() -> None:
        async with sqllock.connect_async(url) as db:
            async with db.transaction() as txn:
                assert await txn.lock(name) == [name]
                await db.record_create(name, "v1")
            rec = await db.record_get(name)
            assert rec.value == b"v1" and rec.version == 1
            res = await db.record_update(name, lambda old: old + b"!")
            assert res.value == b"v1!"
    run(main())
