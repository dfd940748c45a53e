"""Leader election through the binding (contract M4), on every driver."""
from __future__ import annotations

import threading
import time

import pytest

import sqllock

from conftest import slowdown


def test_M4_elect_observe_resign_stop(url: str, name: str,
                                      db: sqllock.Database) -> None:
    events = []
    seen = threading.Event()

    def cand(tag: str) -> sqllock.Leader:
        def observed(holder: str, term: int) -> None:
            events.append((tag, "observed", holder, term))
            seen.set()
        return sqllock.Leader(
            url, name, ttl=10 * slowdown(), holder=tag,
            on_elected=lambda term: events.append((tag, "elected", term)),
            on_lost=lambda term, err, msg: events.append(
                (tag, "lost", term, err)),
            on_observed=observed)

    a = cand("a")
    deadline = time.monotonic() + 10 * slowdown()
    while not a.is_leader:
        assert time.monotonic() < deadline, a.error()
        time.sleep(0.01)
    term_a = a.token
    assert term_a > 0 and a.remaining > 0
    info = db.leader(name)
    assert info is not None
    assert (info.holder, info.token) == ("a", term_a)
    with cand("b") as b:
        deadline = time.monotonic() + 10 * slowdown()
        while ("b", "observed", "a", term_a) not in events:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        assert not b.is_leader and b.token == 0
        assert not b.resign()                 # not the leader
        t0 = time.monotonic()
        assert a.resign()                     # hands over
        assert not a.is_leader and a.token == 0
        while not b.is_leader:
            # Well before the ttl of 10 s: the release woke it.
            assert time.monotonic() - t0 < 5 * slowdown()
            time.sleep(0.005)
        assert b.token > term_a
        assert ("a", "lost", term_a, None) in events
        assert db.leader(name).holder == "b"
        a.stop()
        a.stop()                              # harmless
    # b stopped too, handing over to no one.
    assert db.leader(name) is None
    assert ("b", "lost", events[-1][2], None) == events[-1]


def test_E2_bad_input(url: str) -> None:
    with pytest.raises(sqllock.InvalidArgument, match="empty"):
        sqllock.Leader(url, "", ttl=5)
    with pytest.raises(sqllock.InvalidArgument, match="200|long"):
        sqllock.Leader(url, "x" * 201, ttl=5)
    with pytest.raises(sqllock.InvalidArgument, match="ttl"):
        sqllock.Leader(url, "e", ttl=0)
    with sqllock.connect(url) as db:
        with pytest.raises(sqllock.InvalidArgument):
            db.leader("")
        assert db.leader("py-nobody-leads-this") is None


def test_M4_wait_for_leadership_and_the_current_leader(url: str, name: str,
                                                       tmp: str) -> None:
    # Without callbacks: wait_for_leadership() returns True once this
    # candidate leads, False when the time is up; `leader` reads the
    # election's leader from the database; a hand-over lets the next
    # waiter in. init=True (the default) makes the tables of a database
    # that has none.
    # b campaigns only once a leads: both campaign from their
    # constructors, and b started beside a may win the race.
    bound = 10 * slowdown()
    with sqllock.Leader(url, name, ttl=10 * slowdown(), holder="a") as a:
        assert a.wait_for_leadership(bound) is True
        assert a.is_leader and a.token > 0
        with sqllock.Leader(url, name, ttl=10 * slowdown(),
                            holder="b") as b:
            info = b.leader
            assert info is not None
            assert (info.holder, info.token) == ("a", a.token)
            t0 = time.monotonic()
            assert b.wait_for_leadership(0.3) is False
            assert time.monotonic() - t0 >= 0.25
            a.stop()                                  # resigns: b is woken
            assert b.wait_for_leadership(bound) is True
            assert b.leader.holder == "b"
            with pytest.raises(ValueError):
                b.wait_for_leadership(-1)
    with pytest.raises(sqllock.Misuse):
        a.wait_for_leadership(0.1)
    fresh = "sqlite://%s/fresh-leader.db" % tmp
    with sqllock.Leader(fresh, "solo", ttl=10 * slowdown()) as solo:
        assert solo.wait_for_leadership(bound)
        assert solo.leader is not None and solo.leader.token == solo.token
