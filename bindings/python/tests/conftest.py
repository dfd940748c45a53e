"""The test harness of the Python binding, after tests/harness (C).

URLs: $SQLLOCK_TEST_URLS (space-separated), only those of the driver
$SQLLOCK_TEST_DRIVER names; with no list, a temporary SQLite file. With
$SQLLOCK_TEST_DB_PER_UNIT each URL becomes the unit's own database
(<tag>_<unit>_<db>, made on demand; a SQLite file F-<tag>-<unit>.db), as
tests/harness/util.c makes them. Each test that takes `url` or `db` runs
once per URL, with its driver in its id (test_L1_...[postgres]).

Under ctest (SQLLOCK_TEST_UNIT set, tests/CMakeLists.txt): a driver
without a URL makes the run skipped (exit 77), or failed under CI or
when SQLLOCK_TEST_REQUIRE names it; under CI a skipped test fails the
run; a run that passed with nothing skipped appends "UNIT DRIVER" to
$SQLLOCK_TEST_REPORT for each driver it tested (scripts/test.sh's
check_report reads it).
"""
from __future__ import annotations

import os
import shutil
import sys
import tempfile
import uuid
from typing import Dict, Iterator, List, Optional

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
PKG = os.path.dirname(HERE)
sys.path.insert(0, PKG)

import sqllock  # noqa: E402

_SCHEMES = {"sqlite": "sqlite", "postgres": "postgres",
            "postgresql": "postgres", "mysql": "mysql", "mariadb": "mysql"}


def driver_of(url: str) -> Optional[str]:
    return _SCHEMES.get(url.split(":", 1)[0].lower())


def is_ci() -> bool:
    """tu_ci(): CI set and not empty, "0" or "false"."""
    v = os.environ.get("CI", "")
    return v != "" and v != "0" and v.lower() != "false"


def slowdown() -> int:
    """tu_slowdown() without the tool factor: the load per core (1..4)
    times SQLLOCK_TEST_SLOWDOWN. Timing bounds are multiplied by it."""
    try:
        load = int(os.getloadavg()[0] / (os.cpu_count() or 1))
    except OSError:
        load = 1
    try:
        own = max(1, int(os.environ.get("SQLLOCK_TEST_SLOWDOWN", "1")))
    except ValueError:
        own = 1
    return min(max(load, 1), 4) * own


def _unit() -> str:
    u = os.environ.get("SQLLOCK_TEST_UNIT") or "python"
    return "".join(c if c.isalnum() or c == "_" else "_" for c in u.lower())


def _tag() -> Optional[str]:
    t = os.environ.get("SQLLOCK_TEST_DB_PER_UNIT", "")
    if t in ("", "0"):
        return None
    return "" if t == "1" else t


def per_unit_url(url: str, tag: str, unit: str) -> str:
    """tu_url_per_unit(): the unit's own database of `url`."""
    end = url.find("?")
    end = len(url) if end < 0 else end
    if driver_of(url) == "sqlite":
        dot = None
        for i, ch in enumerate(url[:end]):
            if ch in "/:":
                dot = None
            elif ch == ".":
                dot = i
        dot = end if dot is None else dot
        suffix = "%s%s-%s" % ("-" if tag else "", tag, unit)
        return url[:dot] + suffix + url[dot:]
    a = url.find("://")
    slash = url.find("/", a + 3)
    if a < 0 or slash < 0 or slash >= end - 1:
        raise RuntimeError("%s names no database to give the unit its own"
                           % sqllock.redact(url))
    return url[:slash + 1] + "%s_%s_" % (tag or "u", unit) + url[slash + 1:]


def _create_unit_db(base: str, unit_url: str) -> None:
    name = unit_url[unit_url.find("/", unit_url.find("://") + 3) + 1:]
    name = name.split("?", 1)[0]
    with sqllock.connect(base) as db:
        if db.driver == "mysql":
            db.execute("CREATE DATABASE IF NOT EXISTS `%s`" % name)
            return
        for attempt in range(2):
            n = db.execute("SELECT count(*) FROM pg_catalog.pg_database "
                           "WHERE datname = $1", name).first
            if n:
                return
            try:
                db.execute('CREATE DATABASE "%s"' % name)
                return
            except sqllock.DatabaseError:
                if attempt:
                    raise        # another process may have made it: look again


_tmpdir: Optional[str] = None


def _load_urls() -> List[str]:
    global _tmpdir
    only = os.environ.get("SQLLOCK_TEST_DRIVER") or None
    env = os.environ.get("SQLLOCK_TEST_URLS")
    urls = env.split() if env is not None else []
    tag = _tag()
    if not urls and only in (None, "sqlite"):
        _tmpdir = tempfile.mkdtemp(prefix="sqllock-py-")
        urls = ["sqlite://%s/locks.db" % _tmpdir]
        tag = None
    urls = [u for u in urls if only is None or driver_of(u) == only]
    if tag is not None:
        urls = [per_unit_url(u, tag, _unit()) for u in urls]
    return urls


URLS: List[str] = _load_urls()
_prepared: Dict[str, bool] = {}
_skipped = 0
_ran = 0


def placeholder(driver: str, i: int) -> str:
    """The database's own placeholder for argument i (1-based)."""
    return "$%d" % i if driver == "postgres" else "?"


def pytest_sessionstart(session: pytest.Session) -> None:
    if not os.environ.get("SQLLOCK_TEST_UNIT"):
        return
    only = os.environ.get("SQLLOCK_TEST_DRIVER") or ""
    required = [d for d in os.environ.get("SQLLOCK_TEST_REQUIRE", "")
                .replace(" ", ",").split(",") if d]
    if not URLS:
        why = "no %s URL in SQLLOCK_TEST_URLS" % only
        if is_ci() or only in required:
            pytest.exit("FAILED: %s (required)" % why, returncode=1)
        pytest.exit("SKIPPED: %s" % why, returncode=77)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "url" in metafunc.fixturenames:
        metafunc.parametrize("url", URLS, ids=[driver_of(u) for u in URLS],
                             indirect=True, scope="session")


@pytest.fixture(scope="session")
def url(request: pytest.FixtureRequest) -> str:
    """A URL of the run, its unit's database made and initialised."""
    u = request.param
    if u not in _prepared:
        tag = _tag()
        if tag is not None and driver_of(u) != "sqlite" and \
                os.environ.get("SQLLOCK_TEST_URLS"):
            base = [b for b in os.environ["SQLLOCK_TEST_URLS"].split()
                    if per_unit_url(b, tag, _unit()) == u][0]
            _create_unit_db(base, u)
        with sqllock.connect(u, init=True):
            pass
        _prepared[u] = True
    return u


@pytest.fixture
def driver(url: str) -> str:
    return driver_of(url) or "?"


@pytest.fixture
def db(url: str) -> Iterator[sqllock.Database]:
    d = sqllock.connect(url)
    yield d
    d.close()


@pytest.fixture
def name(request: pytest.FixtureRequest) -> str:
    """A lock name of this test's own."""
    return "py-%s-%s" % (request.node.originalname[:40], uuid.uuid4().hex[:8])


@pytest.fixture
def tmp(tmp_path: "os.PathLike[str]") -> str:
    return str(tmp_path)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    global _skipped, _ran
    if report.skipped:
        _skipped += 1
    elif report.when == "call":
        _ran += 1


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if _tmpdir is not None:
        shutil.rmtree(_tmpdir, ignore_errors=True)
    if not os.environ.get("SQLLOCK_TEST_UNIT"):
        return
    if exitstatus != 0:
        return
    if _ran == 0:
        print("\nFAILED: no test ran")
        session.exitstatus = 1
        return
    if _skipped:
        if is_ci():
            print("\nFAILED: %d test(s) skipped under CI: a skip is a failure"
                  % _skipped)
            session.exitstatus = 1
        else:
            print("\n%d test(s) could not run here: not reported as tested"
                  % _skipped)
            session.exitstatus = 77
        return
    report = os.environ.get("SQLLOCK_TEST_REPORT")
    if report:
        with open(report, "a") as f:
            for d in sorted({driver_of(u) for u in URLS}):
                f.write("%s %s\n" % (os.environ["SQLLOCK_TEST_UNIT"], d))
