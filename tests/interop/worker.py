"""The Python process of the interoperability test (tests/interop/run.py),
the same protocol as worker.c:

    worker.py ROLE URL NAME N OUT COUNTER PERMITS HOLD_MS

and, as the command `sqllock run` runs while it holds NAME:

    worker.py body ROLE OUT COUNTER HOLD_MS

which does one hold's work (the counter for lock; a pause for sem and
leader) and appends its line with $SQLLOCK_TOKEN, the runner's token. The
runner's exit code tells whether that hold was lost (76): run.py notes it.
Times: CLOCK_MONOTONIC in microseconds, as sqllock_now_us().
"""
import os
import sys
import time

import sqllock

WAIT = 120


def now_us():
    return time.monotonic_ns() // 1000


def note(out, role, token, t0, t1, lost):
    line = "%s %d %d %d %s\n" % (role, token, t0, t1,
                                 "LOST" if lost else "OK")
    fd = os.open(out, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode())      # one write: lines stay whole
    finally:
        os.close(fd)


def bump(path, hold_ms):
    """Read, pause, write: two holders at once would lose an increment."""
    try:
        with open(path) as f:
            v = int(f.read().strip() or 0)
    except FileNotFoundError:
        v = 0
    time.sleep(hold_ms / 2000)
    with open(path, "w") as f:
        f.write("%d\n" % (v + 1))
    time.sleep((hold_ms - hold_ms // 2) / 1000)


def hold(lease, role, out, counter, hold_ms):
    token, t0 = lease.token, now_us()
    if role == "lock":
        bump(counter, hold_ms)
    else:
        time.sleep(hold_ms / 1000)
    t1, lost = now_us(), lease.lost
    try:
        lease.release()
    except sqllock.Lost:
        lost = True
    note(out, role, token, t0, t1, lost)


def leader(url, name, n, out, hold_ms):
    deadline = time.monotonic() + WAIT
    with sqllock.Leader(url, name, ttl=3) as cand:
        done = 0
        while done < n:
            left = deadline - time.monotonic()
            if left <= 0 or not cand.wait_for_leadership(left):
                print("interop Python worker: %d of %d terms" % (done, n),
                      file=sys.stderr)
                return 1
            token, t0 = cand.token, now_us()
            time.sleep(hold_ms / 1000)
            t1 = now_us()
            lost = not cand.is_leader or cand.token != token
            try:
                if not cand.resign():
                    lost = True
            except sqllock.Lost:
                lost = True
            note(out, "leader", token, t0, t1, lost)
            done += 1
    return 0


def main(argv):
    if len(argv) == 6 and argv[1] == "body":
        role, out, counter, hold_ms = argv[2], argv[3], argv[4], int(argv[5])
        token, t0 = int(os.environ["SQLLOCK_TOKEN"]), now_us()
        if role == "lock":
            bump(counter, hold_ms)
        else:
            time.sleep(hold_ms / 1000)
        note(out, role, token, t0, now_us(), False)
        return 0
    if len(argv) != 9:
        print("usage: worker.py ROLE URL NAME N OUT COUNTER PERMITS HOLD_MS",
              file=sys.stderr)
        return 2
    role, url, name, n = argv[1], argv[2], argv[3], int(argv[4])
    out, counter, permits, hold_ms = argv[5], argv[6], int(argv[7]), \
        int(argv[8])
    if role == "leader":
        return leader(url, name, n, out, hold_ms)
    with sqllock.connect(url) as db:
        for _ in range(n):
            if role == "lock":
                lease = db.lock(name, ttl=10, wait=WAIT)
            elif role == "sem":
                lease = db.semaphore(name, permits, ttl=10, wait=WAIT)
            else:
                print("unknown role %s" % role, file=sys.stderr)
                return 2
            lease.acquire()
            hold(lease, role, out, counter, hold_ms)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
