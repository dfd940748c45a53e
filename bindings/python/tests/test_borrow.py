"""Row locks, records and the guard on the application's own DB-API
connection (contract G2): sqllock.borrow() over psycopg, psycopg2,
MySQLdb and sqlite3 connections, bdb.join() inside the application's
transaction, on every driver. Each test runs once per URL, and in it
once per DB-API library of that URL's database (tests/dbapi.py)."""
from __future__ import annotations

import asyncio
import gc
import os
import subprocess
import sys
import time
import uuid
from typing import Any, Iterator

import pytest

import sqllock
from conftest import HERE, PKG, slowdown

import dbapi

ROWS = "sqllock_py_borrow"


@pytest.fixture
def libraries(url: str) -> Iterator[list]:
    """The DB-API libraries of the URL's database, and the application
    table (id, val) the tests write."""
    with sqllock.connect(url) as db:
        db.execute("CREATE TABLE IF NOT EXISTS %s (id BIGINT PRIMARY KEY, "
                   "val BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL "
                   "DEFAULT 1)" % ROWS)
    yield dbapi.libraries(url)


def _rid() -> int:
    return uuid.uuid4().int % (2**62)


def _new_row(db: sqllock.Database, val: int = 0) -> int:
    rid = _rid()
    p = "$1" if db.driver == "postgres" else "?"
    db.execute("INSERT INTO %s (id, val) VALUES (%s, %d)" % (ROWS, p, val),
               rid)
    return rid


def _val(db: sqllock.Database, rid: int) -> Any:
    p = "$1" if db.driver == "postgres" else "?"
    return db.execute("SELECT val FROM %s WHERE id = %s" % (ROWS, p),
                      rid).first


def _nowait(db: sqllock.Database, name: str) -> None:
    """Another handle's NOWAIT on the lock name: Locked while held."""
    with db.transaction() as txn:
        txn.lock(name, mode="nowait")


def _nowait_row(db: sqllock.Database, rid: int) -> None:
    """Another handle's NOWAIT on the application's row."""
    with db.transaction() as txn:
        txn.lock_rows(sqllock.Table(ROWS, "id"), rid, mode="nowait")


def test_G2_R1_joined_row_lock_commits_and_rolls_back_with_the_application(
        url: str, name: str, libraries: list) -> None:
    """The application's write and the joined locks (on a lock name and on
    another row of the application's) commit together; on a rollback the
    write vanishes; another handle's NOWAIT sees Locked while the
    application's transaction is open (after the join block too), and
    takes the locks once it ended."""
    table = sqllock.Table(ROWS, "id")
    with sqllock.connect(url) as other:
        with other.row_lock(name):           # the lock row exists (see
            pass                             # bindings/python/README.md)
        for lib in libraries:
            conn = dbapi.connect(url, lib)
            with sqllock.borrow(conn) as bdb:
                for outcome in ("commit", "rollback"):
                    rid, locked, new = _new_row(other), _new_row(other), _rid()
                    dbapi.run(conn, "UPDATE %s SET val = 1 WHERE id = {}"
                              % ROWS, rid)
                    with bdb.join(lock_timeout=10) as txn:
                        assert txn.lock(name) == [name]
                        assert txn.lock_rows(table, locked) == [locked]
                        dbapi.run(conn, "INSERT INTO %s (id, val) VALUES "
                                  "({}, 7)" % ROWS, new)
                        with pytest.raises(sqllock.Locked):
                            _nowait(other, name)
                    # Ended here, not in the database: still held.
                    with pytest.raises(sqllock.Locked):
                        _nowait(other, name)
                    with pytest.raises(sqllock.Locked):
                        _nowait_row(other, locked)
                    if outcome == "commit":
                        conn.commit()
                        assert _val(other, rid) == 1, lib
                        assert _val(other, new) == 7, lib
                    else:
                        conn.rollback()
                        assert _val(other, rid) == 0, lib
                        assert _val(other, new) is None, lib
                    _nowait(other, name)           # free
                    _nowait_row(other, locked)
            conn.close()


def test_G2_R1_exclusion_8_processes_on_the_applications_connections(
        url: str, name: str, libraries: list) -> None:
    """8 processes, each with its own DB-API connection (the libraries of
    the database in turn), 25 times: begin, join, lock the name, read the
    counter through the application's cursor, write it plus one, commit
    through the application. The count is exact."""
    procs, n = 8, 25
    table = "sqllock_py_borrow_counter"
    with sqllock.connect(url) as db:
        db.execute("CREATE TABLE IF NOT EXISTS %s (id INTEGER PRIMARY KEY, "
                   "n INTEGER NOT NULL)" % table)
        db.execute("DELETE FROM %s" % table)
        db.execute("INSERT INTO %s (id, n) VALUES (1, 0)" % table)
        with db.row_lock(name):
            pass
    env = dict(os.environ, PYTHONPATH=PKG)
    workers = [subprocess.Popen(
        [sys.executable, os.path.join(HERE, "borrow_worker.py"), url,
         libraries[i % len(libraries)], name, table, str(n)],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for i in range(procs)]
    retries = 0
    for w in workers:
        out, err = w.communicate(timeout=120 * slowdown())
        assert w.returncode == 0, err
        retries += int(out.split()[-1])
    with sqllock.connect(url) as db:
        assert db.execute("SELECT n FROM %s WHERE id = 1" % table).first == \
            procs * n
    print("retries after Locked/Deadlock: %d" % retries)


def test_G1_G2_guard_on_the_applications_connection(
        url: str, name: str, libraries: list) -> None:
    """A lease of a sqllock.connect() handle guards the application's own
    writes on a borrowed connection, in its transaction: through
    guarded_update() and through the application's cursor with the
    guard's text. Once the lease expired and another handle took it, both
    are refused and the data is the new holder's."""
    table = sqllock.Table(ROWS, "id")
    ttl = 0.4 * slowdown()
    for lib in libraries:
        with sqllock.connect(url) as db:
            rid = _new_row(db)
            conn = dbapi.connect(url, lib)
            bdb = sqllock.borrow(conn)
            lease = db.lock("%s-%s" % (name, lib), ttl=ttl, wait=0,
                            watch=False)
            lease.acquire()
            guard, params = lease.guard(conn)
            update = ("UPDATE %s SET val = {} WHERE id = {} AND %s"
                      % (ROWS, guard)).replace("{}", dbapi.ph(conn))

            bdb.guarded_update(lease, table, rid, set={"val": 1})
            cur = conn.cursor()
            cur.execute(update, (2, rid) + tuple(params))
            assert cur.rowcount == 1, lib
            conn.commit()
            assert _val(db, rid) == 2, lib

            time.sleep(ttl + 0.15)             # expired; no watchdog
            with sqllock.connect(url) as db2:
                with db2.lock(lease.name, ttl=30, wait=5, watch=False) as b:
                    with pytest.raises(sqllock.Lost):
                        bdb.guarded_update(lease, table, rid, set={"val": 3})
                    cur.execute(update, (3, rid) + tuple(params))
                    assert cur.rowcount == 0, lib
                    conn.commit()
                    _, params_b = b.guard(conn)     # the same text
                    cur.execute(update, (4, rid) + tuple(params_b))
                    assert cur.rowcount == 1, lib
                    conn.commit()        # commit, then release (guard.md)
            assert _val(db, rid) == 4, lib
            with pytest.raises(sqllock.Lost):
                lease.release()
            cur.close()
            bdb.close()
            conn.close()


_SHOW = {"postgres": "SHOW lock_timeout",
         "mysql": "SELECT @@SESSION.innodb_lock_wait_timeout",
         "sqlite": "PRAGMA busy_timeout"}
_SET = {"postgres": "SET lock_timeout = '7s'",
        "mysql": "SET SESSION innodb_lock_wait_timeout = 7",
        "sqlite": "PRAGMA busy_timeout = 3210"}
_OWN = {"postgres": "7s", "mysql": 7, "sqlite": 3210}


def test_G2_session_lock_timeout_put_back_after_join(
        url: str, name: str, driver: str, libraries: list) -> None:
    """The session's own row-lock wait is the join's during its lock calls
    and the application's again when the join ends -- after a lock, and
    after a lock that failed -- inside and after the application's
    transaction."""
    with sqllock.connect(url) as other:
        with other.row_lock(name):
            pass
        for lib in libraries:
            conn = dbapi.connect(url, lib)
            dbapi.run(conn, _SET[driver])
            conn.commit()
            with sqllock.borrow(conn) as bdb:
                with bdb.join(lock_timeout=2) as txn:
                    txn.lock(name)
                    inside = dbapi.run(conn, _SHOW[driver])
                    # SQLite waits for its write lock with the join's wait,
                    # then gives the connection its own back at once.
                    assert inside == {"postgres": "2s", "mysql": 2,
                                      "sqlite": 3210}[driver], lib
                assert dbapi.run(conn, _SHOW[driver]) == _OWN[driver], lib
                conn.commit()
                assert dbapi.run(conn, _SHOW[driver]) == _OWN[driver], lib
                conn.commit()
                with other.row_lock(name):
                    with pytest.raises(sqllock.Locked):
                        with bdb.join(lock_timeout=1) as txn:
                            txn.lock(name, mode="nowait")
                conn.rollback()
                assert dbapi.run(conn, _SHOW[driver]) == _OWN[driver], lib
                conn.commit()
            conn.close()


def test_G2_O1_O3_records_and_tables_in_the_applications_transaction(
        url: str, name: str, libraries: list) -> None:
    """The records and the table calls of a borrowed handle run inside
    the application's transaction (commit and roll back with it), and
    commit on their own when none is open."""
    table = sqllock.Table(ROWS, "id", "version")
    with sqllock.connect(url) as db:
        for lib in libraries:
            key = "%s-%s" % (name, lib)
            rid = _new_row(db, 10)
            conn = dbapi.connect(url, lib)
            with sqllock.borrow(conn) as bdb:
                with bdb.join():             # opens the application's
                    bdb.record_create(key, b"rolled back")
                    bdb.table_cas(table, rid, 1, set={"val": sqllock.sub(1)})
                    assert bdb.table_get(table, rid, ["val"]).values == \
                        {"val": 9}
                conn.rollback()
                with pytest.raises(sqllock.NotFound):
                    db.record_get(key)
                assert db.table_get(table, rid, ["val"]) == \
                    sqllock.Row({"val": 10}, 1)

                with bdb.join():
                    bdb.record_create(key, b"1")
                    got = bdb.record_update(
                        key, lambda old: b"%d" % (int(old) + 1))
                    assert got.value == b"2" and got.attempts == 1
                    assert bdb.execute("SELECT 1").first == 1
                    bdb.table_update(table, rid, set={"val": sqllock.add(5)},
                                     where={"val": sqllock.ge(10)})
                    with pytest.raises(sqllock.Conflict):
                        bdb.table_cas(table, rid, 99, set={"val": 0})
                conn.commit()
                assert db.record_get(key).value == b"2"
                assert db.table_get(table, rid, ["val"]).values == \
                    {"val": 15}
                if lib != "MySQLdb":       # autocommit off: always in one
                    # No transaction open: each call commits on its own.
                    bdb.record_cas(key, 2, b"3")
                    assert db.record_get(key).value == b"3"
            conn.close()


def _autocommit(url: str, lib: str) -> Any:
    """A connection of `lib` in autocommit mode: no implicit transaction."""
    if lib == "sqlite3":
        return dbapi.connect(url, lib, isolation_level=None)
    if lib == "psycopg":
        return dbapi.connect(url, lib, autocommit=True)
    conn = dbapi.connect(url, lib)
    if lib == "psycopg2":
        conn.autocommit = True
    else:
        conn.autocommit(True)
    return conn


def test_G2_L10_misuse_raises_with_the_librarys_message(
        url: str, name: str, libraries: list) -> None:
    """Leases, the watchdog, the reaper, init and list need a connection of
    the library's own; a joined transaction does not commit; no join
    without a transaction, or twice; no transaction of sqllock's own
    inside the application's."""
    for lib in libraries:
        conn = dbapi.connect(url, lib)
        with sqllock.borrow(conn) as bdb:
            assert bdb.borrowed and bdb.connection is conn
            own = "connection of the library's own"
            with pytest.raises(sqllock.Misuse, match=own):
                bdb.lock(name, ttl=5)
            with pytest.raises(sqllock.Misuse, match=own):
                bdb.attach(name, "0" * 32, 1, ttl=5)
            for call in (bdb.init, bdb.list, bdb.reap, bdb.watch_prepare):
                with pytest.raises(sqllock.Misuse, match=own):
                    call()
            with bdb.join() as txn:
                with pytest.raises(sqllock.Misuse, match="application's"):
                    txn.commit()
                with pytest.raises(sqllock.Misuse, match="already open"):
                    bdb.join()
                txn.lock(name)
            # The application's transaction is still open: join it.
            with pytest.raises(sqllock.Misuse, match="join it"):
                bdb.transaction()
            conn.rollback()
            if lib != "MySQLdb":       # autocommit off: always in one
                with pytest.raises(sqllock.Misuse, match="no transaction"):
                    bdb.join(begin=False)
        conn.close()

        conn = _autocommit(url, lib)
        with sqllock.borrow(conn) as bdb:
            how = {"psycopg": "conn.transaction()", "psycopg2": "autocommit",
                   "MySQLdb": r"conn.begin\(\)", "sqlite3": "BEGIN"}[lib]
            with pytest.raises(sqllock.Misuse, match=how):
                bdb.join()
            # With no transaction open, one of sqllock's own is fine.
            with bdb.transaction() as txn:
                txn.lock(name)
        conn.close()


def test_G2_borrow_refuses_what_it_cannot_use(url: str,
                                              libraries: list) -> None:
    for bad in (None, object(), 42, url):
        with pytest.raises(TypeError, match="sqlite3.Connection"
                           if not isinstance(bad, str) else "connect"):
            sqllock.borrow(bad)
    with sqllock.connect(url) as db:
        with pytest.raises(TypeError, match="sqllock"):
            sqllock.borrow(db)
    for lib in libraries:
        conn = dbapi.connect(url, lib)
        conn.close()
        with pytest.raises(sqllock.ConnectionError, match="closed"):
            sqllock.borrow(conn)

        conn = dbapi.connect(url, lib)
        bdb = sqllock.borrow(conn)
        bdb.execute("SELECT 1")
        conn.close()                 # behind the handle's back
        with pytest.raises(sqllock.ConnectionError, match="closed"):
            bdb.execute("SELECT 1")
        with pytest.raises(sqllock.ConnectionError, match="closed"):
            bdb.join()
        bdb.close()
        bdb.close()
    if "psycopg" in libraries:
        import psycopg

        async def borrow_async() -> None:
            aconn = await psycopg.AsyncConnection.connect(url)
            try:
                with pytest.raises(TypeError, match="AsyncConnection"):
                    sqllock.borrow(aconn)
            finally:
                await aconn.close()

        asyncio.run(borrow_async())
        conn = dbapi.connect(url, "psycopg")
        with sqllock.borrow(conn) as bdb:
            rows = conn.cursor().stream("SELECT 1 UNION ALL SELECT 2")
            next(rows)                # psycopg is reading a result
            with pytest.raises(sqllock.Misuse, match="in use"):
                bdb.execute("SELECT 1")
            assert list(rows) == [(2,)]
            assert bdb.execute("SELECT 3").first == 3
        conn.close()


def test_G2_borrow_checks_the_pointer_and_its_library(
        url: str, libraries: list, tmp: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The C connection is used only once it is shown to be the
    connection's, through the client library libsqllock links: another
    connection's pointer, or another copy of the library, is refused
    before the C library sees it."""
    from sqllock import _native
    for lib in libraries:
        conn = dbapi.connect(url, lib)
        if lib == "sqlite3":
            import sqlite3
            other = sqlite3.connect(os.path.join(tmp, "other.db"))
        else:
            other = dbapi.connect(url, lib)
        cls = type(_native.native_of(conn))
        with monkeypatch.context() as m:
            ptr = cls(other).read_pointer()
            m.setattr(cls, "read_pointer", lambda self: ptr)
            with pytest.raises(sqllock.Unsupported,
                               match="does not answer as"):
                sqllock.borrow(conn)
        with monkeypatch.context() as m:
            m.setattr(cls, "owner", lambda self: "libc.so.6")
            with pytest.raises(sqllock.Unsupported, match="another"):
                sqllock.borrow(conn)
        with sqllock.borrow(conn) as bdb:     # as it is: fine
            assert bdb.execute("SELECT 5").first == 5
        other.close()
        conn.close()


def test_G2_closing_the_handle_leaves_the_connection_working(
        url: str, name: str, libraries: list) -> None:
    for lib in libraries:
        conn = dbapi.connect(url, lib)
        with sqllock.borrow(conn) as bdb:
            with bdb.join() as txn:
                txn.lock(name)
        assert bdb.closed
        assert dbapi.run(conn, "SELECT 41 + 1") == 42
        conn.commit()

        # A joined transaction still open when the handle closes.
        bdb = sqllock.borrow(conn)
        bdb.join().lock(name)
        bdb.close()
        assert dbapi.run(conn, "SELECT 2") == 2
        conn.commit()

        # The handle keeps the connection alive (a reference of its own);
        # dropping it closes the handle, not the connection.
        del bdb
        before = sys.getrefcount(conn)
        bdb = sqllock.borrow(conn)
        assert sys.getrefcount(conn) > before
        bdb.execute("SELECT 1")
        del bdb
        gc.collect()
        assert sys.getrefcount(conn) == before
        assert dbapi.run(conn, "SELECT 3") == 3
        conn.commit()
        conn.close()
