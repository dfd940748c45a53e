"""A process of test_L1_exclusion_8_processes: `iterations` times, under
the lease `name`, reads the counter file, writes it plus one, and notes
"counter token" in its own log. Run as: worker.py URL NAME FILE N LOG."""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import sqllock  # noqa: E402


def main() -> int:
    url, name, path, n, log = sys.argv[1:6]
    with sqllock.connect(url) as db, open(log, "w") as out:
        lease = db.lock(name, ttl=30, wait=60, backoff=(0.001, 0.02),
                        watch=False)
        for _ in range(int(n)):
            with lease:
                with open(path) as f:
                    value = int(f.read() or "0")
                time.sleep(0.0005)          # widen the race window
                with open(path, "w") as f:
                    f.write(str(value + 1))
                out.write("%d %d\n" % (value + 1, lease.token))
    return 0


if __name__ == "__main__":
    sys.exit(main())
