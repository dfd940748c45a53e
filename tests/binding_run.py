"""What ctest runs for a binding's suite in another language (Go, Node.js)
and for the interoperability test: the harness's conventions, kept in one
place, around a command that knows nothing of them.

    binding_run.py -- CMD [ARGS...]

The command gets ONE URL in $SQLLOCK_TEST_URL: the first URL of
$SQLLOCK_TEST_URLS whose driver is $SQLLOCK_TEST_DRIVER, made the unit's
own database under $SQLLOCK_TEST_DB_PER_UNIT and initialised (as the
Python binding's tests/conftest.py does: its functions are used here);
without a list, a temporary SQLite file. A driver without a URL makes the
entry skipped (77), or failed under CI or when $SQLLOCK_TEST_REQUIRE names
it. The command's exit status is the entry's; a run that passed appends
"UNIT DRIVER" to $SQLLOCK_TEST_REPORT (scripts/test.sh's check_report).
It needs the Python binding and $SQLLOCK_LIBRARY, as test_python_* does.
"""
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "bindings", "python", "tests"))

import conftest  # noqa: E402  (the Python suite's harness: URLs, units)
import sqllock   # noqa: E402


def main(argv):
    if len(argv) < 3 or argv[1] != "--":
        print("usage: binding_run.py -- CMD [ARGS...]", file=sys.stderr)
        return 2
    unit = os.environ.get("SQLLOCK_TEST_UNIT", "binding")
    only = os.environ.get("SQLLOCK_TEST_DRIVER") or ""
    required = [d for d in os.environ.get("SQLLOCK_TEST_REQUIRE", "")
                .replace(" ", ",").split(",") if d]
    if not conftest.URLS:
        why = "no %s URL in SQLLOCK_TEST_URLS" % only
        if conftest.is_ci() or only in required:
            print("%s: FAILED: %s (required)" % (unit, why))
            return 1
        print("%s: SKIPPED: %s" % (unit, why))
        return 77
    url = conftest.URLS[0]
    tag = conftest._tag()
    if tag is not None and conftest.driver_of(url) != "sqlite" and \
            os.environ.get("SQLLOCK_TEST_URLS"):
        base = [b for b in os.environ["SQLLOCK_TEST_URLS"].split()
                if conftest.per_unit_url(b, tag, conftest._unit()) == url][0]
        conftest._create_unit_db(base, url)
    with sqllock.connect(url, init=True):
        pass
    env = dict(os.environ, SQLLOCK_TEST_URL=url)
    try:
        rc = subprocess.call(argv[2:], env=env)
    finally:
        if conftest._tmpdir is not None:
            shutil.rmtree(conftest._tmpdir, ignore_errors=True)
    if rc < 0:
        print("%s: killed by signal %d" % (unit, -rc))
        rc = 1
    if rc == 0 and os.environ.get("SQLLOCK_TEST_REPORT"):
        with open(os.environ["SQLLOCK_TEST_REPORT"], "a") as f:
            f.write("%s %s\n" % (unit, conftest.driver_of(url)))
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv))
