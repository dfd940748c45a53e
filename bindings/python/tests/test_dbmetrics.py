"""The database's view in OpenMetrics text (Database.metrics_db()) and a
candidate's health (Leader.health(), Leader.healthy()), on every driver
(issue 31)."""
from __future__ import annotations

import re
import time
from typing import Dict, Tuple

import sqllock

from conftest import slowdown

_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*$")
_SAMPLE = re.compile(r'([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$')


def parse(text: str) -> Dict[Tuple[str, str], float]:
    """{(name, labels as written): value}, checking the format: TYPE and
    HELP before a family's samples, names, one "# EOF" at the end."""
    assert text.endswith("# EOF\n")
    lines = text.split("\n")[:-2]
    typed, helped, out = {}, set(), {}
    for line in lines:
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ", 3)
            assert _NAME.match(name) and name not in typed
            typed[name] = kind
        elif line.startswith("# HELP "):
            helped.add(line.split(" ", 3)[2])
        elif line.startswith("# UNIT "):
            _, _, name, unit = line.split(" ", 3)
            assert name.endswith("_" + unit)
        else:
            m = _SAMPLE.match(line)
            assert m, line
            family = m.group(1)
            if typed.get(family[:-len("_total")]) == "counter":
                family = family[:-len("_total")]
            assert family in typed and family in helped, line
            key = (m.group(1), m.group(3) or "")
            assert key not in out, line
            out[key] = float(m.group(4))
    return out


def test_metrics_db_counts_what_is_held(db: sqllock.Database,
                                         name: str) -> None:
    before = parse(db.metrics_db())
    held = ('sqllock_db_locks_held', 'kind="lease"')
    sems = ('sqllock_db_locks_held', 'kind="semaphore"')
    with db.lock(name + "-a", ttl=30), db.lock(name + "-b", ttl=30), \
            db.semaphore(name + "-s", 3, ttl=30):
        during = parse(db.metrics_db())
        assert during[held] - before[held] == 2
        assert during[sems] - before[sems] == 1
        assert during[("sqllock_db_up", "")] == 1
        assert during[("sqllock_db_oldest_hold_seconds", "")] >= 0
    after = parse(db.metrics_db())
    assert after[held] == before[held]


def test_leader_health(url: str, name: str) -> None:
    ttl = 2 * slowdown()
    with sqllock.Leader(url, name, ttl=ttl, holder="a") as a:
        assert a.wait_for_leadership(10 * slowdown())
        assert a.healthy()
        status, age = a.health()
        assert status == "ok" and age is not None
        assert 0 <= age < ttl * 0.9
        with sqllock.Leader(url, name, ttl=ttl, holder="b") as b:
            deadline = time.monotonic() + 10 * slowdown()
            while b.leader is None:
                assert time.monotonic() < deadline
                time.sleep(0.01)
            assert not b.healthy()
            assert b.health() == ("not_leader", None)
            a.resign()
            assert not a.healthy()
            assert b.wait_for_leadership(10 * slowdown())
            assert b.health()[0] == "ok"
    assert a.health() == ("not_leader", None)
    assert not b.healthy()
