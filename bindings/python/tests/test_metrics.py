"""The library's metrics and log hook through the binding (issue 31).

The counts are the process's: other tests of this run add to them, so
each check is on the difference a test's own calls made.
"""
from __future__ import annotations

import logging
import threading
import time

import pytest

import sqllock

from conftest import slowdown


def sample(text: str, series: str) -> float:
    for line in text.splitlines():
        if line.startswith(series + " "):
            return float(line.split(" ", 1)[1])
    raise AssertionError(f"{series} not in the metrics")


GRANTED = 'sqllock_acquires_total{kind="lease",outcome="granted"}'
RELEASED = 'sqllock_releases_total{outcome="released"}'


def test_L1_threads_counted_exactly(url: str, name: str) -> None:
    # 4 threads share one Database; a counter read, paused on and written
    # + 1 under the lease ends exact, and the metrics count each grant and
    # release once.
    before = sqllock.metrics_text()
    counter = [0]
    errors: list = []

    with sqllock.connect(url) as db:
        def work() -> None:
            try:
                for _ in range(10):
                    with db.lock(name, ttl=30, wait=30 * slowdown()):
                        v = counter[0]
                        time.sleep(0.001)
                        counter[0] = v + 1
            except Exception as e:  # pragma: no cover (reported below)
                errors.append(e)

        threads = [threading.Thread(target=work) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert not errors
    assert counter[0] == 40
    after = sqllock.metrics_text()
    assert sample(after, GRANTED) - sample(before, GRANTED) == 40
    assert sample(after, RELEASED) - sample(before, RELEASED) == 40
    assert (sample(after, "sqllock_hold_seconds_count")
            - sample(before, "sqllock_hold_seconds_count")) == 40
    assert after.endswith("# EOF\n")


def test_prometheus_collector(url: str, name: str) -> None:
    prometheus_client = pytest.importorskip("prometheus_client")
    reg = prometheus_client.CollectorRegistry()
    reg.register(sqllock.MetricsCollector())
    labels = {"kind": "lease", "outcome": "busy"}
    busy0 = reg.get_sample_value("sqllock_acquires_total", labels)
    with sqllock.connect(url) as a, sqllock.connect(url) as b:
        with a.lock(name, ttl=30):
            with pytest.raises(sqllock.Busy):
                b.lock(name, ttl=30, wait=0).__enter__()
    assert reg.get_sample_value("sqllock_acquires_total", labels) == busy0 + 1
    assert reg.get_sample_value("sqllock_leases_held") is not None
    text = prometheus_client.generate_latest(reg).decode()
    assert "sqllock_hold_seconds_bucket" in text


def test_log_to_callable_and_logger(url: str, name: str,
                                    caplog: pytest.LogCaptureFixture) -> None:
    seen: list = []
    sqllock.log_to(seen.append, logging.DEBUG)
    try:
        with sqllock.connect(url) as db:
            with db.lock(name, ttl=30) as lease:
                token = lease.token
        got = [(e.type, e.name, e.token) for e in seen if e.name == name]
        assert ("acquired", name, token) in got
        assert ("released", name, token) in got
        acquired = next(e for e in seen if e.type == "acquired"
                        and e.name == name)
        assert acquired.level == logging.INFO and acquired.message
        # To a logger, at the events' own levels.
        logger = logging.getLogger("sqllock.test")
        sqllock.log_to(logger, logging.INFO)
        with caplog.at_level(logging.INFO, logger="sqllock.test"):
            with sqllock.connect(url) as db:
                with db.lock(name, ttl=30):
                    pass
        recs = [r for r in caplog.records if r.name == "sqllock.test"]
        assert any(getattr(r, "sqllock_event", None) == "acquired"
                   and r.sqllock_name == name for r in recs)
    finally:
        sqllock.log_to(None)
    n = len(seen)
    with sqllock.connect(url) as db:
        with db.lock(name, ttl=30):
            pass
    assert len(seen) == n           # no hook: nothing more
