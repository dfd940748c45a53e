"""Threads (contract E3): the GIL is released in blocking calls, a handle
is kept to one thread at a time, callbacks cannot re-enter it."""
from __future__ import annotations

import threading
import time

import pytest

import sqllock

from conftest import slowdown


def test_E3_waiting_threads_do_not_block_each_other(url: str, name: str) -> None:
    # 4 threads, each with its own handle, wait 0.6 s on names another
    # handle holds. With the GIL released during the C wait they wait at
    # the same time: about 0.6 s in all, not 2.4 s.
    n, wait = 4, 0.6
    with sqllock.connect(url) as holder:
        leases = [holder.lock("%s-%d" % (name, i), ttl=30).acquire()
                  for i in range(n)]
        results = []

        def waiter(i: int) -> None:
            with sqllock.connect(url) as db:
                try:
                    db.lock("%s-%d" % (name, i), ttl=30, wait=wait).acquire()
                except sqllock.Timeout:
                    results.append(i)

        ticks = [0]
        done = threading.Event()

        def ticker() -> None:         # pure Python: needs the GIL
            while not done.is_set():
                ticks[0] += 1
                time.sleep(0.005)

        tick = threading.Thread(target=ticker)
        tick.start()
        t0 = time.monotonic()
        threads = [threading.Thread(target=waiter, args=(i,)) for i in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        elapsed = time.monotonic() - t0
        done.set()
        tick.join()
        for lease in leases:
            lease.release()
    assert sorted(results) == list(range(n))
    assert elapsed < n * wait * 0.75 * slowdown(), elapsed
    assert ticks[0] > 20, "the ticker starved: the GIL was held"


def test_E3_one_handle_shared_by_threads_serializes(url: str, name: str) -> None:
    # Several threads on ONE handle: each call waits for the one running
    # (the handle's lock), and nothing breaks.
    errors = []
    with sqllock.connect(url) as db:
        def work(i: int) -> None:
            try:
                for j in range(10):
                    with db.lock("%s-%d-%d" % (name, i, j), ttl=5,
                                 watch=False):
                        db.list()
            except Exception as e:     # pragma: no cover
                errors.append(e)
        threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert errors == []


def test_E3_callback_reentering_its_handle_is_misuse(db: sqllock.Database,
                                                     name: str) -> None:
    def fn(old):
        db.list()                       # the same handle, inside its call
        return b"x"
    with pytest.raises(sqllock.Misuse, match="callback"):
        db.record_update(name, fn)


def test_L7_renewer_callback_while_the_owner_thread_waits(url: str, name: str) -> None:
    # The owner thread blocks in a long C wait on the same handle while
    # the renewer reports a loss: the callback gets the GIL and runs.
    with sqllock.connect(url) as db, sqllock.connect(url) as other:
        lost = threading.Event()
        lease = db.lock(name, ttl=1.5, renew_every=0.1,
                        on_lost=lambda l: lost.set()).acquire()
        blocker = other.lock(name + "-b", ttl=30).acquire()
        from conftest import placeholder
        other.execute("DELETE FROM sqllock_lease WHERE name = %s"
                      % placeholder(other.driver, 1), name)
        with pytest.raises(sqllock.Timeout):
            db.lock(name + "-b", ttl=5, wait=1.0).acquire()   # blocks here
        assert lost.wait(5 * slowdown())
        blocker.release()
        with pytest.raises(sqllock.Lost):
            lease.release()
