#!/usr/bin/env python3
"""What the binding costs: uncontended acquire+release pairs per second
from Python, one client, each URL, in three forms:

  reuse      one Lease, lease.acquire(0) + lease.release(), no watchdog:
             the same calls as bench_drivers' "sqllock" scenario
             (sqllock_lease_try_acquire + sqllock_lease_release);
  watched    the same with the watchdog on (lease_watch/unwatch, and the
             ctypes callback made, per hold);
  with       ``with db.lock(name, ttl=30, wait=0):`` -- a new Lease per
             pair (sqllock_lease_new and, later, its free), watched.

    SQLLOCK_LIBRARY=build/libsqllock.so python3 bindings/python/bench.py \
        --seconds 3 --reps 3 sqlite:///tmp/b.db postgres://u:p@h/db

Compare with the C figures of the same build:
    build/bench/bench_drivers --only sqllock --clients 1 --seconds 3 URL
"""
import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import sqllock  # noqa: E402


def rate(fn, seconds: float) -> float:
    n = 0
    t0 = time.perf_counter()
    end = t0 + seconds
    while True:
        for _ in range(20):
            fn()
        n += 20
        now = time.perf_counter()
        if now >= end:
            return n / (now - t0)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=3)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("urls", nargs="+")
    args = ap.parse_args()
    print("%-10s %-8s %12s   (median of %d runs of %g s)"
          % ("driver", "form", "pairs/s", args.reps, args.seconds))
    for url in args.urls:
        with sqllock.connect(url, init=True) as db:
            name = "py-bench-%d" % os.getpid()
            plain = db.lock(name, ttl=30, wait=0, watch=False)
            watched = db.lock(name, ttl=30, wait=0)

            def reuse() -> None:
                plain.acquire()
                plain.release()

            def watch() -> None:
                watched.acquire()
                watched.release()

            def with_block() -> None:
                with db.lock(name, ttl=30, wait=0):
                    pass

            for form, fn in (("reuse", reuse), ("watched", watch),
                             ("with", with_block)):
                fn()                                    # warm up
                runs = [rate(fn, args.seconds) for _ in range(args.reps)]
                print("%-10s %-8s %12.0f   %s" % (
                    db.driver, form, statistics.median(runs),
                    " ".join("%.0f" % r for r in runs)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
