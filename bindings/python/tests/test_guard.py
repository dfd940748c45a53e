"""Guarding the application's own writes (contract G1): Lease.guard()
gives the condition and its parameters for the paramstyle of the
application's own DB-API module -- sqlite3, psycopg2 and psycopg, MySQLdb
(mysqlclient) -- whose connection, not sqllock's, makes the write, in its
own transaction; Database.guarded_update() is the library's own guarded
write."""
from __future__ import annotations

import threading
import time
import urllib.parse
import uuid
from typing import Any, Callable, Iterator, List, Tuple

import pytest

import sqllock
from conftest import driver_of, slowdown

TABLE = "sqllock_py_guard"


def _sqlite_path(url: str) -> str:
    rest = url.split(":", 1)[1]
    if rest.startswith("//"):
        rest = rest[2:]
    return rest.split("?", 1)[0]


def _clients(url: str) -> List[Tuple[str, Callable[[], Any], Any]]:
    """(label, connect, module) of every client library of the URL's
    database that the test machine has (scripts/test.sh installs them)."""
    drv = driver_of(url)
    out: List[Tuple[str, Callable[[], Any], Any]] = []
    if drv == "sqlite":
        import sqlite3
        path = _sqlite_path(url)
        out.append(("sqlite3", lambda: sqlite3.connect(
            path, timeout=5 * slowdown(), isolation_level=None), sqlite3))
    elif drv == "postgres":
        import psycopg2
        out.append(("psycopg2", lambda: psycopg2.connect(url), psycopg2))
        import psycopg
        out.append(("psycopg", lambda: psycopg.connect(url), psycopg))
    else:
        import MySQLdb
        u = urllib.parse.urlsplit(url)

        def my() -> Any:
            return MySQLdb.connect(
                host=u.hostname or "localhost", port=u.port or 3306,
                user=urllib.parse.unquote(u.username or ""),
                passwd=urllib.parse.unquote(u.password or ""),
                db=urllib.parse.unquote(u.path.lstrip("/")),
                charset="utf8mb4",
                # An application's session, in a zone of its own.
                init_command="SET time_zone = '+05:00'")
        out.append(("MySQLdb", my, MySQLdb))
    return out


def _ph(module: Any) -> str:
    return "?" if module.paramstyle == "qmark" else "%s"


@pytest.fixture
def clients(url: str) -> Iterator[List[Tuple[str, Callable[[], Any], Any]]]:
    cl = _clients(url)
    label, connect, module = cl[0]
    conn = connect()
    cur = conn.cursor()
    cur.execute("CREATE TABLE IF NOT EXISTS %s (id BIGINT PRIMARY KEY, "
                "val BIGINT NOT NULL DEFAULT 0)" % TABLE)
    conn.commit()
    conn.close()
    yield cl


def _new_row(connect: Callable[[], Any], module: Any) -> int:
    rid = uuid.uuid4().int % (2**62)
    conn = connect()
    conn.cursor().execute("INSERT INTO %s (id) VALUES (%s)" %
                          (TABLE, _ph(module)), (rid,))
    conn.commit()
    conn.close()
    return rid


def _val(connect: Callable[[], Any], module: Any, rid: int) -> int:
    conn = connect()
    cur = conn.cursor()
    cur.execute("SELECT val FROM %s WHERE id = %s" % (TABLE, _ph(module)),
                (rid,))
    v = cur.fetchone()[0]
    conn.close()
    return int(v)


def _guarded_set(conn: Any, module: Any, lease_guard: Tuple[str, Any],
                 rid: int, val: int, commit: bool = True) -> int:
    """UPDATE ... SET val WHERE id AND <guard>, in a transaction of the
    module's connection; the rows it changed."""
    guard, params = lease_guard
    ph = _ph(module)
    cur = conn.cursor()
    if module.__name__ == "sqlite3":
        cur.execute("BEGIN")
    cur.execute("UPDATE %s SET val = %s WHERE id = %s AND %s" %
                (TABLE, ph, ph, guard), (val, rid) + tuple(params))
    n = cur.rowcount
    if commit:
        conn.commit()
    return n


def test_G1_guard_text_params_and_bad_input(db: sqllock.Database, name: str,
                                            driver: str,
                                            clients: Any) -> None:
    lease = db.lock(name, ttl=30, wait=0, watch=False)
    with pytest.raises(sqllock.NotHeld):
        lease.guard("qmark")
    with lease:
        sql, params = lease.guard("qmark")
        assert sql.count("?") == 2 and params == (name, lease.token)
        sql, params = lease.guard("format")
        assert sql.count("%s") == 2 and params == (name, lease.token)
        sql, params = lease.guard("pyformat")
        assert "%(sqllock_name)s" in sql and "%(sqllock_token)s" in sql
        assert params == {"sqllock_name": name, "sqllock_token": lease.token}
        sql, params = lease.guard("named")
        assert ":sqllock_name" in sql and isinstance(params, dict)
        sql, _ = lease.guard("numeric", first=3)
        assert ":3" in sql and ":4" in sql
        sql, _ = lease.guard("dollar", first=2)
        assert "$2" in sql and "$3" in sql
        for label, connect, module in clients:
            sql, params = lease.guard(module)
            want = "?" if module.paramstyle == "qmark" else "%s"
            assert sql.count(want) == 2, label
            conn = connect()
            try:
                assert lease.guard(conn)[0] == sql, label
            finally:
                conn.close()
        with pytest.raises(sqllock.InvalidArgument):
            lease.guard("percent")
        with pytest.raises(sqllock.InvalidArgument):
            lease.guard(object())
        with pytest.raises(sqllock.InvalidArgument):
            lease.guard("dollar", first=0)
        with pytest.raises(sqllock.InvalidArgument):
            db.guard_sql(name, 0)
        with pytest.raises(sqllock.InvalidArgument):
            db.guard_sql("", 5)
        assert db.guard_sql(name, 5, "qmark") == lease.guard("qmark")[0]
    if driver == "postgres":
        with db.lock(name + "-fast", ttl=30, wait=0, watch=False,
                     fast=True) as fast:
            with pytest.raises(sqllock.InvalidArgument, match="fast mode"):
                fast.guard("format")


def test_G1_guarded_write_on_the_applications_connection(
        db: sqllock.Database, url: str, name: str, clients: Any) -> None:
    """Held: the write applies; taken over after expiry (the new holder
    has not written): the old holder's write changes nothing; the new
    holder's applies."""
    ttl = 0.4 * slowdown()
    for label, connect, module in clients:
        rid = _new_row(connect, module)
        conn = connect()
        a = db.lock("%s-%s" % (name, label), ttl=ttl, wait=0, watch=False)
        a.acquire()
        guard_a = a.guard(module)
        assert _guarded_set(conn, module, guard_a, rid, 1) == 1, label
        time.sleep(ttl + 0.15)
        # Expired, not taken over: refused already.
        assert _guarded_set(conn, module, guard_a, rid, 2) == 0, label
        with sqllock.connect(url) as db2:
            with db2.lock(a.name, ttl=30, wait=5, watch=False) as b:
                assert b.token > a.token
                assert _guarded_set(conn, module, guard_a, rid, 3) == 0, label
                assert _guarded_set(conn, module, b.guard(module), rid,
                                    4) == 1, label
        assert _val(connect, module, rid) == 4, label
        with pytest.raises(sqllock.Lost):
            a.release()
        conn.close()


def test_G1_takeover_waits_for_the_guarded_commit(
        db: sqllock.Database, url: str, name: str, clients: Any) -> None:
    """A guarded write made while the lease was live, its transaction
    still open: a takeover after the expiry waits for the commit, then
    finds the write."""
    ttl = 0.4 * slowdown()
    for label, connect, module in clients:
        rid = _new_row(connect, module)
        conn = connect()
        a = db.lock("%s-%s" % (name, label), ttl=ttl, wait=0, watch=False)
        a.acquire()
        assert _guarded_set(conn, module, a.guard(module), rid, 7,
                            commit=False) == 1, label
        seen: dict = {}

        def take() -> None:
            time.sleep(ttl + 0.05)
            with sqllock.connect(url) as db2:
                seen["try"] = time.monotonic()
                with db2.lock(a.name, ttl=30, wait=20 * slowdown(),
                              watch=False, backoff=(0.001, 0.01)):
                    seen["grant"] = time.monotonic()
                    seen["val"] = _val(connect, module, rid)

        t = threading.Thread(target=take)
        t.start()
        time.sleep(ttl + 0.05 + 0.5 * slowdown())
        assert "grant" not in seen, "%s: the takeover did not wait" % label
        # The takeover may end as soon as the server has committed, before
        # this thread hears of it: compare with when COMMIT was sent.
        committing = time.monotonic()
        conn.commit()
        t.join(30 * slowdown())
        assert not t.is_alive()
        assert seen["grant"] >= committing - 0.005, label
        assert seen["val"] == 7, label
        with pytest.raises(sqllock.Lost):
            a.release()
        conn.close()


def test_G1_guarded_update(db: sqllock.Database, url: str, name: str,
                           clients: Any) -> None:
    label, connect, module = clients[0]
    rid = _new_row(connect, module)
    table = sqllock.Table(TABLE, "id")
    ttl = 0.4 * slowdown()
    lease = db.lock(name, ttl=ttl, wait=0, watch=False)
    with pytest.raises(sqllock.NotHeld):
        db.guarded_update(lease, table, rid, set={"val": 1})
    lease.acquire()
    db.guarded_update(lease, table, rid, set={"val": 1})
    with pytest.raises(sqllock.Conflict):
        db.guarded_update(lease, table, rid, set={"val": 2},
                          where={"val": sqllock.ge(100)})
    with pytest.raises(sqllock.NotFound):
        db.guarded_update(lease, table, -1, set={"val": 2})
    time.sleep(ttl + 0.15)
    with sqllock.connect(url) as db2:
        with db2.lock(name, ttl=30, wait=5, watch=False) as b:
            with pytest.raises(sqllock.Lost):
                db.guarded_update(lease, table, rid, set={"val": 3})
            db2.guarded_update(b, table, rid, set={"val": 4})
    assert _val(connect, module, rid) == 4
