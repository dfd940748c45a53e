"""One set of rows for every language (issue 32): a C process, a Python
process, a Go process, a Node.js process and `sqllock run` take the same
names at the same time, and the test checks that they are one lock:

- lock (L1, L5): no two holds overlap unless one of them was told it was
  lost; a counter read, paused on and written under the lock ends at the
  number of holds; the tokens rise in the order of the grants;
- sem (M1): at most PERMITS holds overlap at any moment;
- leader (M4): no two terms overlap, and the terms rise.

Each process appends "ROLE TOKEN T0 T1 OK|LOST" per hold (T0 after the
grant, T1 before the release, CLOCK_MONOTONIC microseconds: one clock for
the host) -- the workers' protocol is in worker.c. The URL is
$SQLLOCK_TEST_URL (tests/binding_run.py gives it). The workers:
$SQLLOCK_INTEROP_C (a program), worker.py next to this file (with the
Python binding), $SQLLOCK_INTEROP_GO (a program), $SQLLOCK_INTEROP_NODE (a
script for node), $SQLLOCK_TOOL (the sqllock program). One that is not
given fails the run under CI; elsewhere the run goes on without it and
ends skipped (77), not reported as tested.
"""
import os
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "bindings", "python"))

TIMEOUT = 150          # seconds, for all the workers of a phase
# (holds per process, hold time in ms, the tool's runs) per role
PLAN = {"lock": (6, 20, 4), "sem": (4, 100, 3), "leader": (2, 100, 2)}
PERMITS = 2
# The lock and the semaphore are held by the test itself while the
# workers start, so that every process finds them taken and they contend
# from the first hold (a process that starts fast would otherwise do all
# its holds alone).
GATE = 2.0


def is_ci():
    v = os.environ.get("CI", "")
    return v not in ("", "0") and v.lower() != "false"


def workers():
    """{language: argv prefix} of the workers that can run here, and the
    languages missing."""
    have, missing = {}, []
    for lang, env, pre in (("c", "SQLLOCK_INTEROP_C", []),
                           ("go", "SQLLOCK_INTEROP_GO", []),
                           ("node", "SQLLOCK_INTEROP_NODE", ["node"])):
        path = os.environ.get(env, "")
        if path and os.path.exists(path):
            have[lang] = pre + [path]
        else:
            missing.append("%s ($%s)" % (lang, env))
    have["python"] = [sys.executable, os.path.join(HERE, "worker.py")]
    tool = os.environ.get("SQLLOCK_TOOL", "")
    if not (tool and os.path.exists(tool)):
        missing.append("sqllock run ($SQLLOCK_TOOL)")
        tool = None
    return have, tool, missing


def tool_runs(tool, url, role, name, n, out, counter, hold_ms, errs):
    """`sqllock run` n times, one after another, each running worker.py's
    body; a run that exits 76 (the lease was lost) marks its line LOST."""
    env = dict(os.environ, SQLLOCK_DB=url)
    kind = {"lock": [], "sem": ["--permits", str(PERMITS)],
            "leader": ["--leader"]}[role]
    ttl = "3s" if role == "leader" else "10s"
    for _ in range(n):
        fd, one = tempfile.mkstemp(prefix="run-", dir=os.path.dirname(out))
        os.close(fd)
        os.unlink(one)
        cmd = [tool, "run", name] + kind + [
            "--ttl", ttl, "--wait", "120s", "--quiet", "--",
            sys.executable, os.path.join(HERE, "worker.py"), "body", role,
            one, counter, str(hold_ms)]
        rc = subprocess.call(cmd, env=env, timeout=TIMEOUT)
        try:
            with open(one) as f:
                line = f.read()
            os.unlink(one)
        except FileNotFoundError:
            line = ""
        if rc not in (0, 76) or not line:
            errs.append("sqllock run (%s) exited %d%s" %
                        (role, rc, "" if line else ", its command did not run"))
            return
        if rc == 76:
            line = line.replace(" OK\n", " LOST\n")
        with open(out, "a") as f:
            f.write(line)


def close_gate(role, url, name):
    """The holds that keep the workers waiting until they have all
    started: the lock, or every permit of the semaphore."""
    import sqllock
    gate = []
    for _ in range({"lock": 1, "sem": PERMITS}.get(role, 0)):
        db = sqllock.connect(url)
        lease = db.lock(name, ttl=30, wait=0) if role == "lock" else \
            db.semaphore(name, PERMITS, ttl=30, wait=0)
        lease.acquire()
        gate.append((lease, db))
    return gate


def phase(role, url, have, tool, tmp):
    n, hold_ms, runs = PLAN[role]
    name = "interop-%s-%d-%d" % (role, os.getpid(), int(time.time()))
    out = os.path.join(tmp, role + ".out")
    counter = os.path.join(tmp, role + ".counter") if role == "lock" else "-"
    gate = close_gate(role, url, name)
    procs = {}
    for lang, argv in have.items():
        procs[lang] = subprocess.Popen(
            argv + [role, url, name, str(n), out, counter,
                    str(PERMITS if role == "sem" else 0), str(hold_ms)])
    errs = []
    t = None
    if tool:
        t = threading.Thread(target=tool_runs, args=(
            tool, url, role, name, runs, out, counter, hold_ms, errs))
        t.start()
    time.sleep(GATE)
    for lease, db in gate:
        lease.release()
        db.close()
    end = time.monotonic() + TIMEOUT
    for lang, p in procs.items():
        try:
            rc = p.wait(max(1, end - time.monotonic()))
        except subprocess.TimeoutExpired:
            p.kill()
            rc = "killed after %d s" % TIMEOUT
        if rc != 0:
            errs.append("the %s worker (%s) exited %s" % (lang, role, rc))
    if t:
        t.join()
    holds = []
    if os.path.exists(out):
        with open(out) as f:
            for line in f:
                r, token, t0, t1, how = line.split()
                assert r == role, line
                holds.append((int(t0), int(t1), int(token), how == "LOST"))
    want = n * len(have) + (runs if tool else 0)
    if len(holds) != want and not errs:
        errs.append("%s: %d holds written, %d expected" %
                    (role, len(holds), want))
    holds.sort()
    errs += check(role, holds, counter)
    print("%s: %d holds by %s%s; %s" % (
        role, len(holds), ", ".join(sorted(have)), " and sqllock run"
        if tool else "", "; ".join(errs) if errs else "all checks passed"))
    return errs


def overlaps(holds):
    """The largest number of holds at once, and the pairs of holds that
    overlap while neither was told it was lost."""
    events = sorted([(t0, 1) for t0, _, _, _ in holds] +
                    [(t1, -1) for _, t1, _, _ in holds])
    most = cur = 0
    for _, d in events:
        cur += d
        most = max(most, cur)
    bad = []
    for i, a in enumerate(holds):
        for b in holds[i + 1:]:
            if b[0] >= a[1]:
                break
            if not a[3] and not b[3]:
                bad.append((a, b))
    return most, bad


def check(role, holds, counter):
    errs = []
    most, bad = overlaps(holds)
    if role in ("lock", "leader"):
        if bad:
            errs.append("%d overlapping holds neither of which was told it "
                        "was lost, first %r" % (len(bad), bad[0]))
        tokens = [h[2] for h in holds]
        if any(b <= a for a, b in zip(tokens, tokens[1:])):
            errs.append("tokens do not rise in the order of the grants: %r"
                        % tokens)
    if role == "lock":
        try:
            with open(counter) as f:
                value = int(f.read().strip() or 0)
        except FileNotFoundError:
            value = 0
        if value != len(holds):
            errs.append("the counter is %d after %d holds" %
                        (value, len(holds)))
    if role == "sem":
        print("sem: at most %d holds at once (%d permits)" % (most, PERMITS))
        if most > PERMITS:
            errs.append("%d holds at once, %d permits" % (most, PERMITS))
        elif most < PERMITS:
            errs.append("the permits were never all taken at once: the "
                        "workers did not contend")
    return errs


def main():
    url = os.environ.get("SQLLOCK_TEST_URL")
    if not url:
        print("interop: no SQLLOCK_TEST_URL (run it through "
              "tests/binding_run.py)")
        return 2
    have, tool, missing = workers()
    py = os.path.join(HERE, "..", "..", "bindings", "python")
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [py] + [p for p in [os.environ.get("PYTHONPATH")] if p])
    if missing:
        print("interop: not here: %s" % ", ".join(missing))
        if is_ci():
            print("interop: FAILED: every language is required under CI")
            return 1
    errs = []
    with tempfile.TemporaryDirectory(prefix="sqllock-interop-") as tmp:
        for role in ("lock", "sem", "leader"):
            errs += phase(role, url, have, tool, tmp)
    if errs:
        print("interop: FAILED")
        return 1
    return 77 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
