"""Shared and exclusive holds through the binding (contract M2)."""
from __future__ import annotations

import gc
import threading
import time

import pytest

import sqllock

from conftest import slowdown


def test_M2_readers_share_a_writer_excludes(url: str, name: str) -> None:
    with sqllock.connect(url) as a, sqllock.connect(url) as b, \
            sqllock.connect(url) as c:
        with a.rw_lock(name, ttl=30) as r1, b.rw_lock(name, ttl=30) as r2:
            assert r1.shared and r1.held and r2.held
            assert r1.token > 0 and r2.token != r1.token
            with pytest.raises(sqllock.Busy) as busy:
                c.rw_lock(name, ttl=30, shared=False, wait=0).acquire()
            assert "readers" in str(busy.value)
            # L8, as every kind: counted up, the same hold.
            token = r1.token
            assert r1.acquire(0).count == 2 and r1.token == token
            r1.release()
            assert r1.count == 1 and r1.held
            # N1: a plain lease on the name is refused, naming its kind.
            with pytest.raises(sqllock.WrongKind, match="shared/exclusive"):
                c.lock(name, ttl=30, wait=5).acquire()
        with c.rw_lock(name, ttl=30, shared=False, wait=5) as w:
            assert not w.shared and w.held and w.token > r2.token
            assert not a.rw_lock(name, ttl=30).try_acquire()
        with b.rw_lock(name, ttl=30, shared=False, wait=5) as w2:
            assert w2.token > w.token      # L5: grows per exclusive grant
        with pytest.raises(sqllock.NotHeld):
            a.rw_lock(name, ttl=30).release()


def test_M2_writer_waits_for_the_reader_inside(url: str, name: str) -> None:
    with sqllock.connect(url) as a, sqllock.connect(url) as b:
        reader = a.rw_lock(name, ttl=30).acquire()
        threading.Timer(0.3, reader.release).start()
        t0 = time.monotonic()
        with b.rw_lock(name, ttl=30, shared=False, wait=10 * slowdown()) as w:
            waited = time.monotonic() - t0
            assert w.held
        assert 0.25 <= waited < 5 * slowdown()


def test_M2_collected_and_closed_handles_are_freed(url: str, name: str) -> None:
    db = sqllock.connect(url)
    db.rw_lock(name, ttl=30)                # collected: freed later
    gc.collect()
    kept = db.rw_lock(name, ttl=30, shared=False)
    db.rw_lock(name + "-2", ttl=30)         # frees the collected one
    db.close()                              # frees the others
    with pytest.raises(sqllock.Misuse):
        kept.acquire(0)


def test_M2_locked_says_whether_this_hold_could_be_taken(url: str,
                                                         name: str) -> None:
    with sqllock.connect(url) as db:
        r = db.rw_lock(name, ttl=30, shared=True)
        w = db.rw_lock(name, ttl=30, shared=False)
        assert not r.locked() and not w.locked()
        r.acquire(0)
        assert w.locked() and not r.locked()     # a reader: no writer in
        r.release()
        w.acquire(0)
        assert r.locked() and w.owned()
        w.release()
        assert not r.locked() and not w.locked()
