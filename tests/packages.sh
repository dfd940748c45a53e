#!/usr/bin/env bash
# tests/packages.sh DIST -- the packages of scripts/packages.sh DIST as a
# user installs them (issue 29 items 3, 4), on an SQLite file:
#
# The wheel, into a fresh venv of every CPython >= 3.9 found -- Debian's
# /usr/bin/python3 and pyenv's (the python3 first on PATH of many
# machines) -- with pip's --no-index (offline) after setuptools and wheel
# are taken out of the venv: `import sqllock` finds the wheel's own
# library without SQLLOCK_LIBRARY, takes and releases a lease; with
# Debian's python and one other, examples/python/inventory.py sells
# exactly its stock. A wheel whose system library is missing says which
# and the package that brings it.
#
# The Debian packages, installed on this machine with apt-get (root;
# with SQLLOCK_TEST_INSTALL_DEBS=1 or under CI, as they change /usr),
# then removed: `sqllock run` runs a command under a lock, man finds
# sqllock(1), examples/lease.c builds with `pkg-config --cflags --libs
# sqllock` and runs, a CMake project finds the package, Debian's python3
# imports sqllock from python3-sqllock over libsqllock0. Packages of the
# same names installed before are refused, not replaced.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
dist=$(cd "${1:?usage: tests/packages.sh DIST}" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/sqllock-packages.XXXXXX")
chmod 755 "$work"
installed=0
debs=(libsqllock0 libsqllock-dev sqllock python3-sqllock)
cleanup() {
  if [ "$installed" = 1 ]; then
    apt_waiting env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=60 \
      purge -y -qq "${debs[@]}" >/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL (packages): $*" >&2; exit 1; }

wheel=$(ls "$dist"/sqllock-*-py3-none-linux_*.whl)
ensure_packages python3-venv

# ---- the wheel --------------------------------------------------------------
pythons=(/usr/bin/python3)
for p in "$(command -v python3 || true)" /root/.pyenv/versions/3.9*/bin/python3 \
         /root/.pyenv/versions/3.13*/bin/python3 "$HOME"/.pyenv/versions/3.9*/bin/python3 \
         "$HOME"/.pyenv/versions/3.13*/bin/python3; do
  [ -x "$p" ] || continue
  p=$(readlink -f "$p")
  "$p" -c 'import sys; sys.exit(sys.version_info < (3, 9))' 2>/dev/null || continue
  case " ${pythons[*]} " in *" $p "*) ;; *) pythons+=("$p") ;; esac
done
n=0
for py in "${pythons[@]}"; do
  n=$((n + 1))
  venv="$work/venv$n"
  "$py" -m venv "$venv"
  "$venv/bin/python" -m pip uninstall -y -q setuptools wheel >/dev/null 2>&1 || true
  if "$venv/bin/python" -c 'import setuptools' 2>/dev/null ||
     "$venv/bin/python" -c 'import wheel' 2>/dev/null; then
    fail "$py: setuptools or wheel still in the venv"
  fi
  "$venv/bin/python" -m pip install -q --no-index "$wheel" ||
    fail "$py: pip install $wheel"
  ver=$(env -u SQLLOCK_LIBRARY -u PYTHONPATH "$venv/bin/python" - "$work/w$n.db" <<'PY'
import os, sys
import sqllock
assert "_libs" in sqllock._lib.lib._name, sqllock._lib.lib._name
with sqllock.connect("sqlite://" + sys.argv[1], init=True) as db:
    with db.lock("wheel", ttl=10, wait=5) as lease:
        assert lease.token > 0 and db.locked("wheel")
    assert not db.locked("wheel")
print("%d.%d.%d" % sys.version_info[:3])
PY
) || fail "$py: the installed wheel did not take a lock"
  echo "wheel: CPython $ver ($py): installed offline, lock taken and released"
  if [ "$n" -le 2 ]; then
    env -u SQLLOCK_LIBRARY -u PYTHONPATH "$venv/bin/python" \
      examples/python/inventory.py "sqlite://$work/shop$n.db" \
      --workers 4 --stock 12 > "$work/inv$n.out" ||
      { cat "$work/inv$n.out"; fail "$py: the inventory example"; }
    grep -q "^optimistic version" "$work/inv$n.out" || fail "$py: the example's table"
    echo "wheel: CPython $ver: examples/python/inventory.py sold exactly its stock"
  fi
done
[ "$n" -ge 2 ] || echo "wheel: only Debian's python3 here (no pyenv CPython)"
# A system library missing: named, with its package.
site=$("$work/venv1/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
echo "libsqllock-missing-test.so.9 libmissing-test9" >> "$site/sqllock/_libs/DEPENDS"
if env -u SQLLOCK_LIBRARY -u PYTHONPATH "$work/venv1/bin/python" -c 'import sqllock' \
     2> "$work/missing.err"; then
  fail "import with a missing system library succeeded"
fi
grep -q "libsqllock-missing-test.so.9 (package libmissing-test9)" "$work/missing.err" ||
  fail "no word of the missing library: $(tail -1 "$work/missing.err")"
grep -q "apt-get install libmissing-test9" "$work/missing.err" ||
  fail "no apt-get line for the missing library"
echo "wheel: a missing system library is named with its package"

# ---- the Debian packages ------------------------------------------------------
if [ "${SQLLOCK_TEST_INSTALL_DEBS:-0}" != 1 ] && ! is_ci; then
  echo "debs: not installed here (they change /usr): SQLLOCK_TEST_INSTALL_DEBS=1 to"
  exit 0
fi
[ "$(id -u)" = 0 ] || fail "installing the Debian packages needs root"
for p in "${debs[@]}"; do
  if dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    fail "$p is installed already: not replacing it"
  fi
done
installed=1
apt_waiting env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=60 \
  install -y -qq "$dist"/*.deb >/dev/null || fail "apt-get install ./*.deb"
db="sqlite://$work/debs.db"
/usr/bin/sqllock --db "$db" init >/dev/null
# shellcheck disable=SC2016
/usr/bin/sqllock --db "$db" run nightly --ttl 30s -- \
  sh -c 'echo "ran under $SQLLOCK_TOKEN"' > "$work/run.out" || fail "sqllock run"
grep -q "^ran under [0-9]" "$work/run.out" || fail "sqllock run: $(cat "$work/run.out")"
man -w sqllock >/dev/null || fail "man -w sqllock"
echo "debs: sqllock run ran the command under a lock; man sqllock is there"
# shellcheck disable=SC2046
cc examples/lease.c $(pkg-config --cflags --libs sqllock) -o "$work/lease" ||
  fail "cc \$(pkg-config --cflags --libs sqllock)"
"$work/lease" "$db" >/dev/null || fail "the pkg-config program"
ldd "$work/lease" | grep -qE "libsqllock.so.0 => /(usr/)?lib/" ||
  fail "not the package's libsqllock: $(ldd "$work/lease" | grep sqllock)"
cmake -S tests/package -B "$work/cmake" >/dev/null || fail "find_package(sqllock)"
cmake --build "$work/cmake" >/dev/null || fail "the CMake consumer"
"$work/cmake/consumer_shared" "$db" >/dev/null || fail "the CMake consumer's run"
echo "debs: a C program built with pkg-config and one with find_package ran"
(cd / && env -u SQLLOCK_LIBRARY -u PYTHONPATH /usr/bin/python3 - "$work/py.db" <<'PY'
import sys
import sqllock
assert sqllock.__file__.startswith("/usr/lib/python3/dist-packages/"), sqllock.__file__
assert sqllock._lib.lib._name.startswith("/usr/lib/") or "libsqllock.so.0" in sqllock._lib.lib._name
with sqllock.connect("sqlite://" + sys.argv[1], init=True) as db:
    with db.lock("deb", ttl=10):
        pass
PY
) || fail "python3 -c 'import sqllock' from python3-sqllock"
echo "debs: Debian's python3 imported sqllock from python3-sqllock and took a lock"
apt_waiting env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=60 \
  purge -y -qq "${debs[@]}" >/dev/null || fail "apt-get purge"
installed=0
if [ -e /usr/bin/sqllock ] || ls /usr/lib/*/libsqllock.so* >/dev/null 2>&1; then
  fail "files left after the purge"
fi
echo "debs: removed"
