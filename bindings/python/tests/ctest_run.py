"""What ctest runs for test_python_<driver>: pytest on this folder.

Without pytest it says so and is skipped (exit 77), or fails under CI.
pytest's "no test collected" (5) is a failure. The rest (URLs, reports,
skips under CI) is conftest.py's.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def main() -> int:
    try:
        import pytest
    except ImportError:
        ci = os.environ.get("CI", "")
        print("%s: pytest is not installed for %s (Debian: apt-get install "
              "python3-pytest)" % (os.environ.get("SQLLOCK_TEST_UNIT",
                                                   "python"), sys.executable))
        return 1 if ci not in ("", "0") and ci.lower() != "false" else 77
    rc = pytest.main([HERE, "-p", "no:cacheprovider", "-q", "-rs",
                      "--durations=5"] + sys.argv[1:])
    return 1 if rc == 5 else int(rc)


if __name__ == "__main__":
    sys.exit(main())
