"""examples/python/inventory.py runs on every driver: with a lease, a
lease and its guard on the application's own connection, a row lock, a
row lock joined into the application's transaction, or optimistic
versions, 8 buyers sell exactly the stock (L1, G1, R1, G2, O1); without a
lock they usually oversell (printed, not asserted: it depends on
timing). It touches no table but its own (issue 29 item 5)."""
from __future__ import annotations

import os
import subprocess
import sys

import sqllock

from conftest import PKG, slowdown

EXAMPLE = os.path.join(PKG, "..", "..", "examples", "python", "inventory.py")
ROWS = [(1, 7, 3), (2, 0, 1), (3, 12, 9)]


def _run(url: str, *extra: str) -> "subprocess.CompletedProcess[str]":
    env = dict(os.environ, PYTHONPATH=PKG)
    run = subprocess.run([sys.executable, EXAMPLE, url] + list(extra),
                         env=env, capture_output=True, text=True,
                         timeout=120 * slowdown())
    print(run.stdout, run.stderr)
    return run


def _rows(db: sqllock.Database, table: str) -> list:
    n = db.execute("SELECT COUNT(*) FROM %s" % table).first
    s = db.execute("SELECT SUM(id * 10000 + qty * 100 + version) FROM %s"
                   % table).first
    return [n, s]


def _exists(db: sqllock.Database, table: str) -> bool:
    try:
        db.execute("SELECT COUNT(*) FROM %s" % table)
        return True
    except sqllock.Error:
        return False


def _drop(db: sqllock.Database, *tables: str) -> None:
    for t in tables:
        if _exists(db, t):
            db.execute("DROP TABLE %s" % t)


def test_L1_G1_R1_G2_O1_inventory_example(url: str) -> None:
    run = _run(url)
    assert run.returncode == 0
    lines = {l[:20].strip(): l.split() for l in run.stdout.splitlines()[1:]}
    locked = ("lease lock", "lease + guard", "row lock", "joined row lock",
              "optimistic version")
    assert set(lines) == {"no lock"} | set(locked)
    for mode in locked:
        assert lines[mode][-2:] == ["20", "0"], (mode, lines[mode])
    assert int(lines["no lock"][-2]) >= 20


def test_example_touches_only_its_own_table(url: str) -> None:
    # A newcomer's database already holds an `inventory` table with rows,
    # and a table named like the example's that the example did not make.
    # The example stops before changing anything and says why; with that
    # table gone it runs, and leaves `inventory` exactly as it was and no
    # table of its own behind. A table it left (its mark) is taken back.
    with sqllock.connect(url, init=True) as db:
        _drop(db, "inventory", "example_inventory")
        db.execute("CREATE TABLE inventory (id INTEGER PRIMARY KEY, qty "
                   "INTEGER NOT NULL, version INTEGER NOT NULL)")
        for r in ROWS:
            db.execute("INSERT INTO inventory (id, qty, version) VALUES "
                       "(%d, %d, %d)" % r)
        db.execute("CREATE TABLE example_inventory (id INTEGER PRIMARY KEY, "
                   "qty INTEGER NOT NULL)")
        db.execute("INSERT INTO example_inventory (id, qty) VALUES (1, 42)")
        before = _rows(db, "inventory")
        try:
            run = _run(url, "--stock", "5", "--workers", "3")
            assert run.returncode != 0
            assert "never touched" in run.stderr
            assert "example_inventory" in run.stderr
            assert db.execute("SELECT qty FROM example_inventory WHERE id = "
                              "1").first == 42
            assert _rows(db, "inventory") == before

            db.execute("DROP TABLE example_inventory")
            run = _run(url, "--stock", "5", "--workers", "3")
            assert run.returncode == 0
            assert _rows(db, "inventory") == before
            assert not _exists(db, "example_inventory")

            db.execute("CREATE TABLE example_inventory (id INTEGER, "
                       "made_by_sqllock_example INTEGER)")
            run = _run(url, "--stock", "5", "--workers", "3")
            assert run.returncode == 0
            assert not _exists(db, "example_inventory")
            assert _rows(db, "inventory") == before

            # Another prefix: another table, the same care.
            run = _run(url, "--stock", "5", "--workers", "3", "--prefix",
                       "shop2_")
            assert run.returncode == 0
            assert not _exists(db, "shop2_inventory")
            assert _rows(db, "inventory") == before
        finally:
            _drop(db, "inventory", "example_inventory")
