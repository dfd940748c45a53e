"""Observers through the binding (issue 31), on every driver: an
Observer iterates the changes of a name that a holder in another thread
acquires and releases (contract L1: the holder's token, each change
once, in order), and ends its iteration after a quiet timeout."""
from __future__ import annotations

import threading
import time

import pytest

import sqllock

from conftest import slowdown


def test_L1_observer_sees_acquire_and_release(url: str, name: str,
                                              db: sqllock.Database) -> None:
    holder = sqllock.connect(url)
    lease = holder.lock(name, ttl=30, holder="py-holder")
    tokens = []
    step = threading.Event()
    done = threading.Event()

    def hold() -> None:
        # The holder, in a thread of its own: acquire, wait for the
        # observer to have seen it, release.
        lease.acquire(0)
        tokens.append(lease.token)
        step.wait(20 * slowdown())
        lease.release()
        done.set()

    interval = 0.2
    bound = interval + 1.5 * slowdown()
    with sqllock.Observer(db, [name], interval=interval,
                          initial=True) as obs:
        first = obs.next(0)
        assert first is not None and first.change == "free"
        assert (first.name, first.watched, first.token) == (name, name, 0)
        t = threading.Thread(target=hold)
        t.start()
        seen = []
        t0 = time.monotonic()
        for change in obs.changes(timeout=bound):
            seen.append(change)
            if change.change == "acquired":
                assert time.monotonic() - t0 < bound + 1
                step.set()
                assert done.wait(10 * slowdown())
                t0 = time.monotonic()
            elif change.change == "released":
                assert time.monotonic() - t0 < bound
                break
        t.join()
        assert [(c.change, c.name, c.token) for c in seen] == [
            ("acquired", name, tokens[0]), ("released", name, tokens[0])]
        assert seen[0].holder == "py-holder"
        assert seen[0].expires_at is not None
        assert 0 <= seen[0].lag <= bound
        # Nothing more happens: the iteration ends after its timeout.
        assert list(obs.changes(timeout=0.5)) == []
    assert obs.closed
    holder.close()


def test_observer_bad_input(url: str, db: sqllock.Database,
                            name: str) -> None:
    with pytest.raises(sqllock.InvalidArgument):
        sqllock.Observer(db, [])
    with pytest.raises(sqllock.InvalidArgument):
        sqllock.Observer(db, [""])
    with pytest.raises(sqllock.InvalidArgument):
        sqllock.Observer(db, [name, name])
    with pytest.raises(sqllock.InvalidArgument):
        sqllock.Observer(db, [name], interval=0.01)
    with sqllock.Observer(url, name) as obs:      # a URL, and one name
        assert obs.next(0) is None
        with pytest.raises(sqllock.InvalidArgument):
            obs.next(-1)
    with pytest.raises(sqllock.Misuse):
        obs.next(0)
