"""Semaphores through the binding (contract M1)."""
from __future__ import annotations

import gc
import threading
import time

import pytest

import sqllock

from conftest import slowdown


def test_M1_at_most_n_permits(url: str, name: str) -> None:
    with sqllock.connect(url) as a, sqllock.connect(url) as b, \
            sqllock.connect(url) as c:
        with a.semaphore(name, 2, ttl=30) as p1, \
                b.semaphore(name, 2, ttl=30) as p2:
            assert p1.held and p2.held
            assert {p1.permit, p2.permit} == {0, 1}
            assert p1.token > 0 and p2.token != p1.token
            assert a.semaphore_count(name) == 2
            third = c.semaphore(name, 2, ttl=30)
            assert third.permit == -1
            with pytest.raises(sqllock.Busy):
                third.acquire(0)
            assert not third.try_acquire()
            # L8, as every kind: the same permit, counted up.
            permit = p1.permit
            assert p1.acquire(0).count == 2 and p1.permit == permit
            p1.release()
            assert p1.count == 1 and p1.held and p1.permit == permit
            assert a.semaphore_count(name) == 2
            # One more permit for whoever says 3: permit 2 is free.
            with c.semaphore(name, 3, ttl=30, wait=0) as wider:
                assert wider.permit == 2
        assert a.semaphore_count(name) == 0
        with pytest.raises(sqllock.NotHeld):
            a.semaphore(name, 2, ttl=30).release()
        with pytest.raises(ValueError):
            a.semaphore(name, 0, ttl=30)


def test_M1_waiter_gets_a_released_permit(url: str, name: str) -> None:
    with sqllock.connect(url) as a, sqllock.connect(url) as b:
        held = a.semaphore(name, 1, ttl=30).acquire()
        first = held.permit
        threading.Timer(0.3, held.release).start()
        t0 = time.monotonic()
        with b.semaphore(name, 1, ttl=30, wait=10 * slowdown()) as p:
            waited = time.monotonic() - t0
            assert p.held and p.permit == first == 0
            assert p.state == sqllock.LeaseState.HELD
        assert 0.25 <= waited < 5 * slowdown()
        assert p.state == sqllock.LeaseState.NOT_HELD
        # The same handle takes a permit again, a hold after a hold.
        with p:
            assert p.held and p.token > 0


def test_M1_collected_and_closed_handles_are_freed(url: str,
                                                   name: str) -> None:
    db = sqllock.connect(url)
    db.semaphore(name, 2, ttl=30)            # collected: freed later
    gc.collect()
    kept = db.semaphore(name, 2, ttl=30)
    held = db.semaphore(name + "-2", 2, ttl=30).acquire()
    assert held.held
    db.close()                               # frees the others
    with pytest.raises(sqllock.Misuse):
        kept.acquire(0)


def test_operator_releases_a_stuck_permit_by_its_row(url: str,
                                                      name: str) -> None:
    """Issue 27 item 4: a permit's row, as list() reports it (NAME, 0x1f,
    the tag), is attached to and released by its owner and token; its
    holder then hears Lost."""
    with sqllock.connect(url) as a, sqllock.connect(url) as op:
        held = a.semaphore(name, 2, ttl=30, watch=False).acquire()
        rows = [r for r in op.list()
                if r.name == "%s\x1fp%d" % (name, held.permit)]
        assert len(rows) == 1 and rows[0].token == held.token
        row = op.attach(rows[0].name, rows[0].owner, rows[0].token, ttl=30,
                        watch=False)
        with pytest.raises(sqllock.Misuse):
            row.try_acquire()
        row.release()
        with pytest.raises(sqllock.Lost):
            held.release()


def test_M1_locked_when_no_permit_is_free(url: str, name: str) -> None:
    with sqllock.connect(url) as db:
        a = db.semaphore(name, 2, ttl=30)
        b = db.semaphore(name, 2, ttl=30)
        assert not a.locked()
        a.acquire(0)
        assert not b.locked() and a.owned() and not b.owned()
        b.acquire(0)
        assert a.locked() and b.locked()
        a.release()
        assert not b.locked()
        b.release()
