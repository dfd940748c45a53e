"""Row locks (R1-R8), versioned records (O1-O3), fenced writes (L5) and
the reaper (P1-P4) through the binding, on every driver."""
from __future__ import annotations

import threading
import time

import pytest

import sqllock

from conftest import slowdown


def _inventory(url: str, table: str, qty: int) -> sqllock.Table:
    with sqllock.connect(url) as db:
        db.execute("CREATE TABLE IF NOT EXISTS %s (id INTEGER PRIMARY KEY, "
                   "qty INTEGER NOT NULL, version INTEGER NOT NULL, "
                   "fence INTEGER)" % table)
        db.execute("DELETE FROM %s" % table)
        db.execute("INSERT INTO %s (id, qty, version) VALUES (1, %d, 1)"
                   % (table, qty))
    return sqllock.Table(table, "id", "version")


def test_R1_R6_transaction_commits_or_rolls_back(url: str, name: str) -> None:
    with sqllock.connect(url) as db:
        with db.transaction() as txn:
            assert txn.lock(name, name + "-b") == [name, name + "-b"]
            db.record_create(name, b"in the transaction")       # R4
        assert db.record_get(name).value == b"in the transaction"
        with pytest.raises(RuntimeError):
            with db.transaction() as txn:
                txn.lock(name)
                db.record_cas(name, 1, b"rolled back")
                raise RuntimeError("the block fails")
        rec = db.record_get(name)
        assert rec.value == b"in the transaction" and rec.version == 1


def test_R1_R7_nowait_and_skip_locked(url: str, name: str) -> None:
    with sqllock.connect(url) as a, sqllock.connect(url) as b:
        with a.row_lock(name):
            tb = b.transaction()
            with pytest.raises(sqllock.Locked) as e:
                tb.lock(name, mode=sqllock.LockMode.NOWAIT)
            assert e.value.retryable
            # R7: the failed transaction refuses everything but rollback.
            with pytest.raises(sqllock.Misuse):
                tb.commit()
            tb.rollback()
            if b.row_lock_scope() != "database":
                with b.transaction() as txn:
                    got = txn.lock(name, name + "-free", mode="skip_locked")
                    assert got == [name + "-free"]


def test_R8_no_lease_call_inside_a_transaction(url: str, name: str) -> None:
    with sqllock.connect(url) as db:
        with db.transaction() as txn:
            txn.lock(name)
            with pytest.raises(sqllock.Misuse):
                db.lock(name + "-lease", ttl=5).acquire()


def test_R4_rows_of_the_application_under_lock_rows(url: str) -> None:
    inv = _inventory(url, "py_inv_rows", 5)
    with sqllock.connect(url) as db:
        with db.transaction() as txn:
            assert txn.lock_rows(inv, 1) == [1]
            qty = txn.execute("SELECT qty FROM py_inv_rows WHERE id = 1").first
            txn.execute("UPDATE py_inv_rows SET qty = %d WHERE id = 1"
                        % (qty - 1))
        assert db.table_get(inv, 1, ["qty"]).values == {"qty": 4}
        with pytest.raises(sqllock.NotFound):
            with db.transaction() as txn:
                txn.lock_rows(inv, 99)


def test_O1_records_compare_and_set(db: sqllock.Database, name: str) -> None:
    with pytest.raises(sqllock.NotFound):
        db.record_get(name)
    db.record_create(name, "one")
    with pytest.raises(sqllock.Conflict):
        db.record_create(name, "again")
    assert db.record_cas(name, 1, b"two") == 2
    with pytest.raises(sqllock.Conflict):
        db.record_cas(name, 1, b"stale")
    rec = db.record_get(name)
    assert (rec.value, rec.version) == (b"two", 2)
    with pytest.raises(sqllock.Conflict):
        db.record_delete(name, 1)
    db.record_delete(name, 2)
    db.record_create(name, b"")
    assert db.record_get(name).value == b""


def test_O2_retry_helper_exact_under_contention(url: str, name: str) -> None:
    # 4 threads with handles of their own add 1 twenty times each through
    # record_update(fn): every conflict is retried, the total is exact.
    threads, n = 4, 20
    attempts = []

    def work() -> None:
        with sqllock.connect(url) as db:
            for _ in range(n):
                r = db.record_update(name, lambda old: str(int(old or b"0") + 1),
                                     max_attempts=1000, backoff=(0.001, 0.01))
                attempts.append(r.attempts)

    ts = [threading.Thread(target=work) for _ in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    with sqllock.connect(url) as db:
        assert int(db.record_get(name).value) == threads * n
    assert len(attempts) == threads * n


def test_O2_function_exception_writes_nothing(db: sqllock.Database, name: str) -> None:
    db.record_create(name, b"10")

    class SoldOut(Exception):
        pass

    def fn(old):
        raise SoldOut(old)

    with pytest.raises(SoldOut):
        db.record_update(name, fn)
    assert db.record_get(name).version == 1


def test_O3_table_cas_and_conditional_update(url: str) -> None:
    inv = _inventory(url, "py_inv_cas", 2)
    with sqllock.connect(url) as db:
        row = db.table_get(inv, 1, ["qty"])
        assert row.values["qty"] == 2
        v = db.table_cas(inv, 1, row.version, set={"qty": sqllock.sub(1)},
                         where={"qty": sqllock.ge(1)})
        assert v == row.version + 1
        with pytest.raises(sqllock.Conflict):
            db.table_cas(inv, 1, row.version, set={"qty": sqllock.sub(1)})
        db.table_update(inv, 1, set={"qty": sqllock.sub(1)},
                        where={"qty": sqllock.ge(1)})
        with pytest.raises(sqllock.Conflict):               # sold out
            db.table_update(inv, 1, set={"qty": sqllock.sub(1)},
                            where={"qty": sqllock.ge(1)})
        with pytest.raises(sqllock.InvalidArgument):
            db.table_update(inv, 1, set={"qty": sqllock.ge(1)})


def test_L5_fenced_update_refuses_a_stale_token(url: str, name: str) -> None:
    inv = _inventory(url, "py_inv_fence", 1)
    with sqllock.connect(url) as db:
        with db.lock(name, ttl=5) as old:
            stale = old.token
        with db.lock(name, ttl=5) as new:
            db.fenced_update(inv, 1, "fence", new.token, set={"qty": 7})
        with pytest.raises(sqllock.Lost):
            db.fenced_update(inv, 1, "fence", stale, set={"qty": 0})
        assert db.table_get(inv, 1, ["qty"]).values["qty"] == 7


def test_P1_P4_reap_and_the_reaper_thread(url: str, name: str) -> None:
    with sqllock.connect(url) as db:
        for i in range(3):
            db.lock("%s-%d" % (name, i), ttl=0.05, watch=False).acquire()
        live = db.lock(name + "-live", ttl=30).acquire()
        time.sleep(0.2)
        assert db.reap() >= 3                       # P4: one pass
        mine = [r.name for r in db.list() if r.name.startswith(name)]
        assert mine == [name + "-live"]              # P1: only expired rows
        db.lock(name + "-x", ttl=0.05, watch=False).acquire()
        time.sleep(0.2)
        with sqllock.Reaper(url, interval=0.05) as reaper:
            deadline = time.monotonic() + 5 * slowdown()
            while reaper.stats().reaped < 1 and time.monotonic() < deadline:
                time.sleep(0.05)
            stats = reaper.stats()
            assert stats.reaped >= 1 and stats.passes >= 1
            t0 = time.monotonic()
        assert time.monotonic() - t0 < 2 * slowdown()   # P3: prompt stop
        assert not reaper.running
        assert live.held
        live.release()
    with pytest.raises(sqllock.UnknownScheme):
        sqllock.start_reaper("nosuch://x/y")


def test_O1_records_by_prefix(db: sqllock.Database, name: str) -> None:
    # db.records(prefix): the records under a prefix in key order, with
    # values and versions (sqllock_record_list()); not the neighbours of
    # the prefix; the library's own records (derived keys) never shown.
    keys = [name + t for t in ("-a", "-b", "-b2", "-c", "-b\u00e9")]
    for k in keys:
        db.record_create(k, k.encode())
    db.record_cas(name + "-b", 1, b"B")
    got = db.records(name + "-b")
    assert [r.key for r in got] == [name + "-b", name + "-b2",
                                    name + "-b\u00e9"]
    assert (got[0].value, got[0].version) == (b"B", 2)
    assert got[1].value == (name + "-b2").encode() and got[1].version == 1
    assert [r.key for r in db.records(name + "-")] == sorted(
        keys, key=lambda k: k.encode())
    assert {r.key for r in db.records()} >= set(keys)
    assert db.records(name + "-zz") == []
    with pytest.raises(sqllock.InvalidArgument):
        db.records(name + "\x1f")
    with pytest.raises(sqllock.InvalidArgument):
        db.records(None)  # type: ignore[arg-type]
    for r in db.records(name + "-"):
        db.record_delete(r.key, r.version)
    assert db.records(name) == []
