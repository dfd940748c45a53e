#!/usr/bin/env python3
"""The oversell demo in Python: 8 buyer processes, a stock of 20 items in
an application table inventory(id, qty, version), each buyer reading the
stock, "paying by card" for 2 ms, then writing the stock less one:

  no lock             read, pay, write: two buyers read the same stock and
                      both sell the item (oversell);
  lease lock          the same under db.lock("inventory:1"): none;
  row lock            SELECT ... FOR UPDATE through db.transaction(): none;
  optimistic version  db.table_cas() on the version, retried on Conflict:
                      none.

    python3 examples/python/inventory.py sqlite:///tmp/shop.db
    python3 examples/python/inventory.py postgres://user:pw@host/db

(With the binding installed, or PYTHONPATH=bindings/python, and the
library found: SQLLOCK_LIBRARY=build/libsqllock.so.) It prints one line
per mode and exits 1 if a locked mode oversold.
"""
import argparse
import multiprocessing
import os
import sys
import time

try:
    import sqllock
except ImportError:     # run from a clone, without installing the binding
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                    "..", "..", "bindings", "python"))
    import sqllock

TABLE = sqllock.Table("inventory", "id", "version")
PAY = 0.002


def setup(url: str, stock: int) -> None:
    with sqllock.connect(url, init=True) as db:
        db.execute("CREATE TABLE IF NOT EXISTS inventory (id INTEGER PRIMARY "
                   "KEY, qty INTEGER NOT NULL, version INTEGER NOT NULL)")
        db.execute("DELETE FROM inventory")
        db.execute("INSERT INTO inventory (id, qty, version) VALUES (1, %d, 1)"
                   % stock)


def buy_unlocked(db: sqllock.Database) -> bool:
    qty = db.execute("SELECT qty FROM inventory WHERE id = 1").first
    if qty < 1:
        return False
    time.sleep(PAY)
    db.execute("UPDATE inventory SET qty = %d WHERE id = 1" % (qty - 1))
    return True


def buy_lease(db: sqllock.Database) -> bool:
    with db.lock("inventory:1", ttl=10, wait=60, backoff=(0.001, 0.02)):
        return buy_unlocked(db)


def buy_row_lock(db: sqllock.Database) -> bool:
    with db.transaction(lock_timeout=60) as txn:
        txn.lock_rows(TABLE, 1)
        qty = txn.execute("SELECT qty FROM inventory WHERE id = 1").first
        if qty < 1:
            return False
        time.sleep(PAY)
        txn.execute("UPDATE inventory SET qty = %d WHERE id = 1" % (qty - 1))
        return True


def buy_optimistic(db: sqllock.Database) -> bool:
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
         ("row lock", buy_row_lock), ("optimistic version", buy_optimistic)]


def buyer(url: str, mode: int, out: "multiprocessing.Queue[int]") -> None:
    buy = MODES[mode][1]
    sold = 0
    with sqllock.connect(url, busy_timeout=30) as db:
        while True:
            try:
                if not buy(db):
                    break
            except (sqllock.DatabaseBusy, sqllock.Deadlock, sqllock.Locked):
                continue                 # SQLite's write lock; try again
            sold += 1
    out.put(sold)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("url")
    ap.add_argument("--workers", type=int, default=8)
    ap.add_argument("--stock", type=int, default=20)
    args = ap.parse_args()
    ctx = multiprocessing.get_context("spawn")   # no handle crosses a fork
    bad = 0
    print("%-20s %7s %5s %5s %8s" % ("mode", "workers", "stock", "sold",
                                     "oversold"))
    for i, (label, _) in enumerate(MODES):
        setup(args.url, args.stock)
        out = ctx.Queue()
        procs = [ctx.Process(target=buyer, args=(args.url, i, out))
                 for _ in range(args.workers)]
        for p in procs:
            p.start()
        sold = sum(out.get() for _ in procs)
        for p in procs:
            p.join()
        over = sold - args.stock
        print("%-20s %7d %5d %5d %8d" % (label, args.workers, args.stock,
                                         sold, over))
        if i > 0 and over != 0:
            bad = 1
    return bad


if __name__ == "__main__":
    sys.exit(main())
