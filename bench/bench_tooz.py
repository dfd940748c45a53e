#!/usr/bin/python3
"""bench_tooz.py -- OpenStack tooz's locks, measured on this machine, so that
sqllock's figures have a peer to be read against.

  bench_tooz.py [--seconds N] [--quick] [--reps N] [--clients 1,8]
                [--results FILE] URL...

  e.g. bench_tooz.py --results out.csv \\
           postgres://sqllock:sqllock-test@127.0.0.1:54329/sqllock_test \\
           mysql://sqllock:sqllock-test@127.0.0.1:33069/sqllock_test \\
           redis://127.0.0.1:63799

The URLs are in the form sqllock uses (postgres://, mysql://) and redis://;
each is converted to what tooz expects (postgresql://user:pw@host:port/db,
mysql://user:pw@host:port/db, redis://host:port). Without URLs it takes
$SQLLOCK_TEST_PG_URL, $SQLLOCK_TEST_MYSQL_URL and $SQLLOCK_BENCH_REDIS_URL,
all three.

It runs on Debian's /usr/bin/python3, whose packages provide tooz and the
clients (python3-tooz, python3-psycopg2, python3-pymysql, python3-redis).
Started by another python3 that cannot import tooz (a pyenv or venv first
on PATH), it says so and runs itself again under /usr/bin/python3.

For each backend and each client count it measures acquire+release PAIRS
per second, and the p50 and p99 latency of one pair, in two scenarios:

  python floor      two trivial round trips through the Python client that
                    tooz's backend uses, on one kept connection: psycopg2 or
                    PyMySQL `SELECT 1` twice (autocommit), or redis-py PING
                    twice. It is what Python pays for two round trips, so
                    the ratio shows what tooz adds on top of Python;
  tooz <backend>    coordinator.get_lock(name) once, then
                    lock.acquire(blocking=True) + lock.release(), each of
                    which must answer True.

What tooz does for one pair (tooz 3.1, Debian 12), and so what is measured:

  postgresql  connects (a new psycopg2 connection, password auth included),
              SELECT pg_advisory_lock(k1, k2), pg_advisory_unlock, and
              closes the connection: every pair pays a connect. The lock's
              key is the first 2 bytes of md5(name), so two names out of
              65536 share a lock; this program picks names whose keys
              differ.
  mysql       the same shape: connects, SELECT GET_LOCK(name, 0),
              RELEASE_LOCK, closes. A busy lock is polled through tenacity's
              wait_exponential(max=1), whose multiplier of 1 s makes every
              wait 1 s, without jitter: a waiter hears of a release up to
              1 s late.
  redis       redis-py's Lock on the coordinator's connection pool: SET NX
              PX 30000 with a random token (polled every 0.1 s when busy),
              and the compare-and-delete Lua script by EVALSHA: the lock
              bench_redis measures in C.

Every client is a process (fork) with its own coordinator and its own lock
name: there is no contention between clients. Each point runs for a fixed
time after 10 warm-up pairs, repeated (3 times by default, the scenarios in
a rotating order); the table shows the median of each figure. The rows are
appended to --results FILE in the common format of bench/README.md (suite
"peer", scenario "tooz postgresql" / "tooz mysql" / "tooz redis" and
"python floor", driver postgres / mysql / redis).

A backend that fails (a missing Python package, a refused connection, an
acquire that does not succeed) is reported with the reason; the others
still run, and the program exits with status 1.
"""

import argparse
import hashlib
import importlib.util
import multiprocessing
import os
import sys
import threading
import time
import traceback
import urllib.parse
from array import array

WARMUP_PAIRS = 10
SETUP_TIMEOUT_S = 120          # connecting and warming up, per point

# sqllock's URL scheme -> (tooz's scheme, the results file's driver column).
BACKENDS = {
    "postgres": ("postgresql", "postgres"),
    "postgresql": ("postgresql", "postgres"),
    "mysql": ("mysql", "mysql"),
    "redis": ("redis", "redis"),
}
ORDER = ("postgresql", "mysql", "redis")
# The Python module each backend needs, and its Debian package.
MODULES = {"postgresql": ("psycopg2", "python3-psycopg2"),
           "mysql": ("pymysql", "python3-pymysql"),
           "redis": ("redis", "python3-redis")}


class BenchError(Exception):
    """A failure with a message that says everything."""


def hide_password(url):
    """The URL as it may be printed: its password, if any, as ***."""
    u = urllib.parse.urlsplit(url)
    if u.password is None:
        return url
    return url.replace(":" + u.password + "@", ":***@", 1)


def describe_exc(e):
    """The exception and every cause under it, on one line: tooz wraps the
    client's error (ToozConnectionError caused by OperationalError...).
    Anything but an expected error also says where it was raised: tooz's
    own bugs surface as TypeError and the like."""
    parts = []
    seen = set()
    where = ""
    if not isinstance(e, (BenchError, OSError)) and e.__traceback__:
        frame = traceback.extract_tb(e.__traceback__)[-1]
        where = " (raised at %s:%d)" % (frame.filename, frame.lineno)
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        text = str(e).strip().replace("\n", " | ")
        parts.append("%s: %s" % (type(e).__name__, text) if text
                     else type(e).__name__)
        e = e.__cause__ or e.__context__
    return " <- caused by ".join(parts) + where


# ---------------------------------------------------------------------------
# Backends
# ---------------------------------------------------------------------------

class Backend:
    """One URL: how to reach it with tooz, and with the plain client."""

    def __init__(self, url):
        u = urllib.parse.urlsplit(url)
        url = hide_password(url)      # for the messages below
        if u.scheme not in BACKENDS:
            raise BenchError("%s: unknown scheme (postgres://, mysql:// or "
                             "redis://)" % url)
        self.kind, self.driver = BACKENDS[u.scheme]
        if u.query or u.fragment:
            raise BenchError("%s: options after '?' are not passed on to "
                             "tooz; give a plain URL" % url)
        # tooz hands the user and password to the client as they appear in
        # the URL, without percent-decoding them.
        if "%" in u.netloc:
            raise BenchError("%s: tooz does not decode %%-escapes in the "
                             "user or password" % url)
        if not u.hostname:
            raise BenchError("%s: no host" % url)
        self.host = u.hostname
        self.port = u.port
        self.user = u.username
        self.password = u.password
        self.db = u.path[1:] if u.path.startswith("/") else u.path
        if self.kind in ("postgresql", "mysql") and not self.db:
            raise BenchError("%s: no database name" % url)
        if self.kind == "redis" and self.db:
            raise BenchError("%s: only redis://host:port is understood"
                             % url)
        self.tooz_url = urllib.parse.urlunsplit(
            (self.kind, u.netloc, u.path if self.kind != "redis" else "",
             "", ""))
        self.label = "tooz " + self.kind

    def shown_url(self):
        """tooz's URL, password hidden."""
        return hide_password(self.tooz_url)

    # The plain client, for the floor and for the server's version.

    def connect_plain(self):
        if self.kind == "postgresql":
            import psycopg2
            conn = psycopg2.connect(host=self.host, port=self.port or 5432,
                                    dbname=self.db, user=self.user,
                                    password=self.password)
            conn.autocommit = True
            return conn
        if self.kind == "mysql":
            import pymysql
            return pymysql.connect(host=self.host, port=self.port or 3306,
                                   user=self.user, password=self.password,
                                   database=self.db, autocommit=True)
        import redis
        return redis.Redis(host=self.host, port=self.port or 6379,
                           socket_timeout=30)

    def floor_pair_fn(self, conn):
        if self.kind == "redis":
            def pair():
                if not (conn.ping() and conn.ping()):
                    raise BenchError("PING did not answer PONG")
            return pair
        cur = conn.cursor()

        def pair():
            for _ in range(2):
                cur.execute("SELECT 1")
                if cur.fetchone()[0] != 1:
                    raise BenchError("SELECT 1 did not answer 1")
        return pair

    def server_version(self):
        conn = self.connect_plain()
        try:
            if self.kind == "redis":
                return "Redis " + conn.info("server")["redis_version"]
            cur = conn.cursor()
            if self.kind == "postgresql":
                cur.execute("SHOW server_version")
                return "PostgreSQL " + cur.fetchone()[0].split()[0]
            cur.execute("SELECT VERSION()")
            v = cur.fetchone()[0]
            return ("MariaDB " if "MariaDB" in v else "MySQL ") + \
                v.split("-")[0]
        finally:
            conn.close()

    def client_versions(self):
        import importlib.metadata as md
        client = {"postgresql": "psycopg2", "mysql": "PyMySQL",
                  "redis": "redis"}[self.kind]
        return "tooz %s, %s %s" % (md.version("tooz"), client,
                                   md.version(client))


def check_modules(kind):
    """Imports what the backend needs, or says what to install."""
    for module, package in (("tooz", "python3-tooz"), MODULES[kind]):
        try:
            __import__(module)
        except ImportError as e:
            raise BenchError("%s cannot be imported by %s (%s): install the "
                             "Debian package %s" % (module, sys.executable,
                                                    e, package))


def lock_names(backend, n):
    """n lock names, one per client, unique to this run. On PostgreSQL tooz
    locks md5(name)[0:2], 16 bits: names are picked so that no two clients
    share a key (and so contend without meaning to)."""
    names, keys, salt = [], set(), 0
    while len(names) < n:
        name = ("sqllock-bench-tooz:%d:%d:%d"
                % (os.getpid(), len(names), salt)).encode()
        key = hashlib.md5(name).digest()[0:2]
        if backend.kind == "postgresql" and key in keys:
            salt += 1
            continue
        keys.add(key)
        names.append(name)
    return names


# ---------------------------------------------------------------------------
# One client, in its own process
# ---------------------------------------------------------------------------

def make_pair(backend, scenario, index, name):
    """The pair function of one client, and what closes it."""
    if scenario == "floor":
        conn = backend.connect_plain()
        return backend.floor_pair_fn(conn), conn.close

    from tooz import coordination
    member = ("bench-tooz-%d-%d" % (os.getpid(), index)).encode()
    coord = coordination.get_coordinator(backend.tooz_url, member)
    coord.start()
    lock = coord.get_lock(name)

    def pair():
        if lock.acquire(blocking=True) is not True:
            raise BenchError("lock.acquire(blocking=True) did not answer "
                             "True")
        if lock.release() is not True:
            raise BenchError("lock.release() did not answer True")
    return pair, coord.stop


def client_main(backend, scenario, index, name, secs, barrier, out):
    try:
        pair, close = make_pair(backend, scenario, index, name)
        for _ in range(WARMUP_PAIRS):
            pair()
    except BaseException as e:                  # noqa: B902 -- report all
        barrier.abort()
        out.send(("error", "client %d, setting up: %s"
                  % (index, describe_exc(e))))
        return
    try:
        barrier.wait(SETUP_TIMEOUT_S)
    except threading.BrokenBarrierError:
        out.send(("error", "client %d: another client failed to set up"
                  % index))
        return
    lat = array("d")
    start = time.monotonic()      # CLOCK_MONOTONIC: one clock for all
    end = start + secs
    try:
        while True:
            t0 = time.monotonic()
            if t0 >= end:
                break
            pair()
            lat.append((time.monotonic() - t0) * 1e6)
        last = time.monotonic()
        close()
    except BaseException as e:                  # noqa: B902
        out.send(("error", "client %d: %s" % (index, describe_exc(e))))
        return
    out.send(("ok", start, last, lat.tobytes()))


def percentile(v, p):
    """The nearest-rank percentile of sorted values (as bench_drivers.c)."""
    if not v:
        return 0.0
    k = int(p * len(v) + 0.999999)
    return v[min(max(k, 1), len(v)) - 1]


def median(v):
    v = sorted(v)
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


def run_point(backend, scenario, names, secs):
    """n clients for secs; returns (pairs/s, p50 us, p99 us, max us,
    pairs)."""
    ctx = multiprocessing.get_context("fork")
    n = len(names)
    barrier = ctx.Barrier(n + 1)
    procs, pipes = [], []
    sys.stdout.flush()
    sys.stderr.flush()
    for i in range(n):
        r, w = ctx.Pipe(duplex=False)
        p = ctx.Process(target=client_main,
                        args=(backend, scenario, i, names[i], secs, barrier,
                              w))
        p.start()
        w.close()                 # so that a dead child reads as EOF
        procs.append(p)
        pipes.append(r)
    try:
        barrier.wait(SETUP_TIMEOUT_S)
    except threading.BrokenBarrierError:
        pass                      # the failing client says why below
    errors, lat, first, last = [], [], None, None
    for i, r in enumerate(pipes):
        try:
            msg = r.recv()
        except EOFError:
            msg = ("error", "client %d died without a word" % i)
        if msg[0] == "error":
            errors.append(msg[1])
            continue
        _, start, end, raw = msg
        a = array("d")
        a.frombytes(raw)
        lat.extend(a)
        first = start if first is None else min(first, start)
        last = end if last is None else max(last, end)
    for p in procs:
        p.join()
        if p.exitcode != 0 and not errors:
            errors.append("a client exited with status %s" % p.exitcode)
    if errors:
        raise BenchError("; ".join(errors))
    lat.sort()
    rate = len(lat) / (last - first)
    return (rate, percentile(lat, 0.50), percentile(lat, 0.99),
            lat[-1] if lat else 0.0, len(lat))


# ---------------------------------------------------------------------------
# The results file
# ---------------------------------------------------------------------------

def csv_field(s):
    """Quoted as RFC 4180 says when it holds a comma, a space or a quote
    (the common format of bench/README.md)."""
    s = str(s)
    if any(c in s for c in ', "\r\n'):
        return '"' + s.replace('"', '""') + '"'
    return s


def num(v, fmt):
    return "" if v is None else fmt % v


HEADER = ("suite,driver,scenario,clients,rows,ops_per_s,p50_us,p99_us,"
          "ratio,vs,value,unit\n")


def append_rows(path, rows):
    """Appends rows (dicts); the header goes only into an empty file, as
    the other programs append to the same one."""
    with open(path, "a", encoding="ascii", newline="") as f:
        if f.tell() == 0:
            f.write(HEADER)
        for r in rows:
            f.write(",".join([
                "peer", r["driver"], csv_field(r["scenario"]),
                str(r["clients"]), "", num(r["rate"], "%.1f"),
                num(r["p50"], "%.1f"), num(r["p99"], "%.1f"),
                num(r.get("ratio"), "%.3f"), csv_field(r.get("vs", "")),
                "", ""]) + "\n")


# ---------------------------------------------------------------------------
# main
# ---------------------------------------------------------------------------

def bench_backend(backend, args):
    """Runs every point of one backend; returns its rows."""
    check_modules(backend.kind)
    desc = "%s, %s, %s:%s" % (backend.server_version(),
                              backend.client_versions(), backend.host,
                              backend.port)
    scenarios = (("floor", "python floor"), ("tooz", backend.label))
    table = []
    for n in args.clients:
        names = lock_names(backend, n)
        reps = {s: [] for s, _ in scenarios}
        for rep in range(args.reps):
            for k in range(len(scenarios)):
                # A rotating order, so no scenario always runs first.
                s, label = scenarios[(k + rep) % len(scenarios)]
                res = run_point(backend, s, names, args.seconds)
                reps[s].append(res)
                print("  %s %d clients, run %d: %-16s %8.0f pairs/s "
                      "(%d pairs, slowest %.1f ms)"
                      % (backend.kind, n, rep + 1, label, res[0], res[4],
                         res[3] / 1000), file=sys.stderr, flush=True)
        for s, label in scenarios:
            table.append({
                "driver": backend.driver, "scenario": label, "clients": n,
                "rate": median([r[0] for r in reps[s]]),
                "p50": median([r[1] for r in reps[s]]),
                "p99": median([r[2] for r in reps[s]]),
            })
        floor, tooz = table[-2], table[-1]
        tooz["ratio"] = tooz["rate"] / floor["rate"]
        tooz["vs"] = "python floor"

    print("\n%s (%s), %g s x %d, median" % (backend.label, desc,
                                             args.seconds, args.reps))
    print("%-24s %7s %9s %9s %9s %9s" % ("scenario", "clients", "pairs/s",
                                          "p50 us", "p99 us", "vs floor"))
    for r in table:
        ratio = " %9.2f" % r["ratio"] if "ratio" in r else ""
        print("%-24s %7d %9.0f %9.0f %9.0f%s" % (r["scenario"], r["clients"],
                                                  r["rate"], r["p50"],
                                                  r["p99"], ratio))
    print("  tooz URL: %s; python floor: two round trips through the same "
          "client, one kept connection" % backend.shown_url())
    sys.stdout.flush()
    return table


def parse_args(argv):
    ap = argparse.ArgumentParser(
        description="tooz locks (postgresql, mysql, redis) against a "
        "floor, in the common results format of bench/README.md")
    ap.add_argument("--seconds", type=float, default=10,
                    help="length of each run (default 10)")
    ap.add_argument("--quick", action="store_true", help="runs of 2 s")
    ap.add_argument("--reps", type=int, default=3,
                    help="repetitions of each run; the median is shown "
                    "(default 3)")
    ap.add_argument("--clients", default="1,8",
                    help="client counts, each a process with its own "
                    "coordinator and lock name (default 1,8)")
    ap.add_argument("--results", metavar="FILE",
                    help="append the rows to FILE")
    ap.add_argument("urls", nargs="*", metavar="URL",
                    help="postgres://..., mysql://..., redis://host:port "
                    "(default: $SQLLOCK_TEST_PG_URL, $SQLLOCK_TEST_MYSQL_URL "
                    "and $SQLLOCK_BENCH_REDIS_URL)")
    args = ap.parse_args(argv)
    if args.quick:
        args.seconds = 2
    if not args.seconds > 0 or not 1 <= args.reps <= 15:
        ap.error("--seconds must be > 0 and --reps 1..15")
    try:
        args.clients = [int(c) for c in args.clients.split(",")]
    except ValueError:
        ap.error("--clients takes comma-separated counts")
    if not args.clients or any(not 1 <= c <= 64 for c in args.clients):
        ap.error("--clients takes counts of 1..64")
    if not args.urls:
        env = ("SQLLOCK_TEST_PG_URL", "SQLLOCK_TEST_MYSQL_URL",
               "SQLLOCK_BENCH_REDIS_URL")
        missing = [e for e in env if not os.environ.get(e)]
        if missing:
            ap.error("no URL given, and %s not set" % ", ".join(missing))
        args.urls = [os.environ[e] for e in env]
    return args


DEBIAN_PYTHON = "/usr/bin/python3"


def run_under_debian_python():
    """Debian's python3-* packages serve /usr/bin/python3 only. When this
    interpreter cannot import tooz, run again under that one (once)."""
    if importlib.util.find_spec("tooz") is not None:
        return
    if (os.environ.get("SQLLOCK_BENCH_TOOZ_REEXEC") or
            not os.access(DEBIAN_PYTHON, os.X_OK) or
            os.path.realpath(sys.executable) ==
            os.path.realpath(DEBIAN_PYTHON)):
        return                    # check_modules() will say what is missing
    print("bench_tooz: %s cannot import tooz; running under %s"
          % (sys.executable, DEBIAN_PYTHON), file=sys.stderr, flush=True)
    os.environ["SQLLOCK_BENCH_TOOZ_REEXEC"] = "1"
    os.execv(DEBIAN_PYTHON, [DEBIAN_PYTHON, os.path.abspath(__file__)] +
             sys.argv[1:])


def main(argv):
    args = parse_args(argv)
    run_under_debian_python()
    backends, failed = [], []
    for url in args.urls:
        try:
            backends.append(Backend(url))
        except BenchError as e:
            failed.append((url.split(":")[0], str(e)))
    backends.sort(key=lambda b: ORDER.index(b.kind))
    print("bench_tooz: %s; %g s per run, %d runs, clients %s"
          % (", ".join(b.kind for b in backends) or "no backend",
             args.seconds, args.reps, ",".join(map(str, args.clients))),
          flush=True)
    for b in backends:
        try:
            rows = bench_backend(b, args)
        except BenchError as e:
            failed.append((b.kind, str(e)))
            continue
        except Exception as e:                  # noqa: B902 -- say why
            failed.append((b.kind, describe_exc(e)))
            continue
        if args.results:
            append_rows(args.results, rows)
    for kind, why in failed:
        print("bench_tooz: %s FAILED: %s" % (kind, why), file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
