#!/usr/bin/env python3
"""The oversell demo in Python: 8 buyer processes, a stock of 20 items in
a table of the example's own, example_inventory(id, qty, version), each
buyer reading the stock, "paying by card" for 2 ms, then writing the
stock less one:

  no lock             read, pay, write: two buyers read the same stock and
                      both sell the item (oversell);
  lease lock          the same under db.lock("example_inventory:1"): none;
  lease + guard       the lease, and the application's own connection
                      (sqlite3, psycopg or psycopg2, MySQLdb) reads and
                      writes in its own transaction, the UPDATE carrying
                      the lease's guard (lease.guard(conn)): a buyer whose
                      lease was lost writes nothing; none;
  row lock            SELECT ... FOR UPDATE through db.transaction(): none;
  joined row lock     the row lock taken on the application's own
                      connection, inside its transaction
                      (sqllock.borrow(conn), bdb.join()), the read and the
                      write through the application's cursor: none;
  optimistic version  db.table_cas() on the version, retried on Conflict:
                      none.

    python3 examples/python/inventory.py sqlite:///tmp/shop.db
    python3 examples/python/inventory.py postgres://user:pw@host/db

It touches no table but its own: it makes example_inventory (--prefix
changes "example_") with a column made_by_sqllock_example that marks it
as the example's, and drops it at the end. A table of that name without
the mark is someone else's: the example stops before changing anything.
One with the mark was left by an earlier run that was killed, and is
made again. The locks' own rows are in sqllock's tables.

(With the binding installed, or PYTHONPATH=bindings/python, and the
library found: SQLLOCK_LIBRARY=build/libsqllock.so. The two modes on the
application's connection need its DB-API library: Debian's python3-psycopg
or python3-psycopg2, python3-mysqldb; sqlite3 is Python's.) It prints one
line per mode and exits 1 if a locked mode oversold.
"""
import argparse
import multiprocessing
import os
import sys
import time
import urllib.parse
from typing import Any, Optional

try:
    import sqllock
except ImportError:     # run from a clone, without installing the binding
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                    "..", "..", "bindings", "python"))
    import sqllock

MARK = "made_by_sqllock_example"
PAY = 0.002
# The example's table: set by use_table() in each process.
INV = "example_inventory"
TABLE = sqllock.Table(INV, "id", "version")


def use_table(prefix: str) -> None:
    global INV, TABLE
    INV = prefix + "inventory"
    TABLE = sqllock.Table(INV, "id", "version")


def ours(db: sqllock.Database, table: str) -> bool:
    """True when `table` exists and carries the example's mark."""
    try:
        db.execute("SELECT %s FROM %s WHERE 1 = 0" % (MARK, table))
        return True
    except sqllock.Error:
        return False


def make_table(url: str) -> None:
    """Makes the example's table, or stops (SystemExit) at a table of
    its name that the example did not make, having changed nothing."""
    with sqllock.connect(url, init=True) as db:
        if ours(db, INV):
            db.execute("DROP TABLE %s" % INV)     # left by a killed run
        try:
            db.execute("CREATE TABLE %s (id INTEGER PRIMARY KEY, qty INTEGER "
                       "NOT NULL, version INTEGER NOT NULL, %s INTEGER)"
                       % (INV, MARK))
        except sqllock.Error as e:
            raise SystemExit(
                "inventory.py: cannot create the example's table %s (%s). "
                "A table of that name that the example did not make (it has "
                "no column %s) is never touched: give another --prefix, or "
                "run the example on another database" % (INV, e, MARK))


def drop_table(url: str) -> None:
    with sqllock.connect(url) as db:
        if ours(db, INV):
            db.execute("DROP TABLE %s" % INV)


def setup(url: str, stock: int) -> None:
    with sqllock.connect(url) as db:
        db.execute("DELETE FROM %s" % INV)
        db.execute("INSERT INTO %s (id, qty, version) VALUES (1, %d, 1)"
                   % (INV, stock))


# ---- the application's own connection ---------------------------------------

def app_connect(url: str) -> Any:
    """The connection the application would open itself, with its DB-API
    library, to the database of a sqllock URL."""
    scheme = url.split(":", 1)[0].lower()
    if scheme == "sqlite":
        import sqlite3
        path = url.split(":", 1)[1]
        path = (path[2:] if path.startswith("//") else path).split("?")[0]
        return sqlite3.connect(path, timeout=60)
    if scheme in ("postgres", "postgresql"):
        try:
            import psycopg
            return psycopg.connect(url)
        except ImportError:
            import psycopg2
            return psycopg2.connect(url)
    import MySQLdb
    u = urllib.parse.urlsplit(url)
    return MySQLdb.connect(host=u.hostname or "localhost", port=u.port or 3306,
                           user=urllib.parse.unquote(u.username or ""),
                           passwd=urllib.parse.unquote(u.password or ""),
                           db=urllib.parse.unquote(u.path.lstrip("/")))


class App:
    """The application's connection, its placeholder, and (for the joined
    row lock) sqllock's handle over it."""

    def __init__(self, url: str) -> None:
        self.conn = app_connect(url)
        self.ph = "?" if type(self.conn).__module__ == "sqlite3" else "%s"
        self.bdb = sqllock.borrow(self.conn)

    def query(self, sql: str, *args: Any) -> Any:
        """One statement; the first column of its first row, or the
        number of rows it changed."""
        cur = self.conn.cursor()
        cur.execute(sql, args)
        result = cur.fetchone()[0] if cur.description else cur.rowcount
        cur.close()
        return result

    def close(self) -> None:
        self.bdb.close()                 # sqllock's handle, not the connection
        self.conn.close()


# ---- the buyers ----------------------------------------------------------------

def buy_unlocked(db: sqllock.Database, app: Optional[App]) -> bool:
    qty = db.execute("SELECT qty FROM %s WHERE id = 1" % INV).first
    if qty < 1:
        return False
    time.sleep(PAY)
    db.execute("UPDATE %s SET qty = %d WHERE id = 1" % (INV, qty - 1))
    return True


def buy_lease(db: sqllock.Database, app: Optional[App]) -> bool:
    with db.lock(INV + ":1", ttl=10, wait=60, backoff=(0.001, 0.02)):
        return buy_unlocked(db, app)


def buy_lease_guard(db: sqllock.Database, app: App) -> bool:
    # The lease on sqllock's connection; the read and the write on the
    # application's, in its transaction. The guard makes the UPDATE change
    # nothing once the lease is no longer ours (paused past the ttl, taken
    # over): it checks the lease row in the same statement and keeps it
    # locked until the commit (docs/guard.md).
    with db.lock(INV + ":1", ttl=10, wait=60, backoff=(0.001, 0.02)) \
            as lease:
        guard, params = lease.guard(app.conn)      # ? or %s, as conn takes
        try:
            qty = app.query("SELECT qty FROM %s WHERE id = 1" % INV)
            if qty < 1:
                app.conn.rollback()
                return False
            time.sleep(PAY)
            changed = app.query("UPDATE " + INV + " SET qty = " + app.ph +
                                " WHERE id = 1 AND " + guard, qty - 1, *params)
            if changed == 0:
                raise sqllock.Lost("the lease was lost: the sale is undone")
            app.conn.commit()            # commit, THEN release the lease
            return True
        except BaseException:
            app.conn.rollback()
            raise


def buy_row_lock(db: sqllock.Database, app: Optional[App]) -> bool:
    with db.transaction(lock_timeout=60) as txn:
        txn.lock_rows(TABLE, 1)
        qty = txn.execute("SELECT qty FROM %s WHERE id = 1" % INV).first
        if qty < 1:
            return False
        time.sleep(PAY)
        txn.execute("UPDATE %s SET qty = %d WHERE id = 1" % (INV, qty - 1))
        return True


def buy_joined_row_lock(db: sqllock.Database, app: App) -> bool:
    # The application's transaction (its DB-API library opens it; the join
    # begins it if it is not open yet), joined by sqllock: the row lock,
    # the read and the write commit together, by the application.
    try:
        with app.bdb.join(lock_timeout=60) as txn:
            txn.lock_rows(TABLE, 1)               # SELECT ... FOR UPDATE
            qty = app.query("SELECT qty FROM %s WHERE id = 1" % INV)
            if qty >= 1:
                time.sleep(PAY)
                app.query("UPDATE " + INV + " SET qty = " + app.ph +
                          " WHERE id = 1", qty - 1)
        # Leaving the join commits nothing: the application does.
        if qty < 1:
            app.conn.rollback()
            return False
        app.conn.commit()                         # the lock ends here
        return True
    except BaseException:
        app.conn.rollback()
        raise


def buy_optimistic(db: sqllock.Database, app: Optional[App]) -> bool:
    while True:
        row = db.table_get(TABLE, 1, ["qty"])
        if row.values["qty"] < 1:
            return False
        time.sleep(PAY)
        try:
            db.table_cas(TABLE, 1, row.version, set={"qty": sqllock.sub(1)})
            return True
        except sqllock.Conflict:        # another buyer got there first
            continue


MODES = [("no lock", buy_unlocked), ("lease lock", buy_lease),
         ("lease + guard", buy_lease_guard), ("row lock", buy_row_lock),
         ("joined row lock", buy_joined_row_lock),
         ("optimistic version", buy_optimistic)]
WITH_APP = (buy_lease_guard, buy_joined_row_lock)


def buyer(url: str, mode: int, prefix: str) -> int:
    use_table(prefix)
    buy = MODES[mode][1]
    sold = 0
    app = App(url) if buy in WITH_APP else None
    try:
        with sqllock.connect(url, busy_timeout=30) as db:
            while True:
                try:
                    if not buy(db, app):
                        break
                except (sqllock.DatabaseBusy, sqllock.Deadlock,
                        sqllock.Locked, sqllock.Lost):
                    continue             # SQLite's write lock; try again
                sold += 1
    finally:
        if app is not None:
            app.close()
    return sold


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("url")
    ap.add_argument("--workers", type=int, default=8)
    ap.add_argument("--stock", type=int, default=20)
    ap.add_argument("--prefix", default="example_",
                    help="of the example's table's name (default example_)")
    args = ap.parse_args()
    if not args.prefix.replace("_", "a").isalnum() or \
            not args.prefix[:1].isalpha():
        ap.error("--prefix: letters, digits and _, a letter first")
    use_table(args.prefix)
    make_table(args.url)
    ctx = multiprocessing.get_context("spawn")   # no handle crosses a fork
    bad = 0
    print("%-20s %7s %5s %5s %8s" % ("mode", "workers", "stock", "sold",
                                     "oversold"))
    # One process per buyer, started once; each mode gives every one of
    # them a buyer to run, all at the same time.
    try:
        with ctx.Pool(args.workers) as pool:
            for i, (label, _) in enumerate(MODES):
                bad |= run_mode(pool, args, i, label)
    finally:
        drop_table(args.url)
    return bad


def run_mode(pool: Any, args: Any, i: int, label: str) -> int:
    """One mode: every buyer at once; 1 when a locked mode oversold."""
    setup(args.url, args.stock)
    sold = sum(pool.starmap(buyer, [(args.url, i, args.prefix)] *
                            args.workers, chunksize=1))
    over = sold - args.stock
    print("%-20s %7d %5d %5d %8d" % (label, args.workers, args.stock, sold,
                                     over), flush=True)
    return 1 if i > 0 and over != 0 else 0


if __name__ == "__main__":
    sys.exit(main())
