#!/usr/bin/env bash
# scripts/packages.sh [OUT] -- builds the project's packages into OUT
# (default: dist): the Debian packages libsqllock0, libsqllock-dev,
# sqllock and python3-sqllock, and the wheel
# sqllock-VERSION-py3-none-linux_<arch>.whl (issue 29 items 3, 4;
# cmake/packaging.cmake says what each holds). It installs what the build
# needs (Debian's packages, with apt-get), and builds in OUT/build, a
# tree of its own configured for /usr, without the tests.
#
#   scripts/packages.sh dist
#   sudo apt-get install ./dist/*.deb                 # the system's
#   pip install dist/sqllock-*-py3-none-linux_*.whl   # any CPython >= 3.9
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
out=${1:-dist}
mkdir -p "$out"
out=$(cd "$out" && pwd)
ensure_packages "${BUILD_PACKAGES[@]}" libpq-dev default-libmysqlclient-dev \
  dpkg-dev python3
tree="$out/build"
cmake -S . -B "$tree" -DCMAKE_INSTALL_PREFIX=/usr \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSQLLOCK_BUILD_TESTS=OFF \
  -DSQLLOCK_BUILD_BENCH=OFF -DSQLLOCK_BUILD_EXAMPLES=OFF >/dev/null
cmake --build "$tree" -j"$(nproc)" >/dev/null
rm -f "$tree"/dist/*.deb "$tree"/dist/*.whl
cmake --build "$tree" --target deb >/dev/null
cmake --build "$tree" --target python-wheel >/dev/null
rm -f "$out"/*.deb "$out"/sqllock-*.whl
mv "$tree"/dist/*.deb "$tree"/dist/*.whl "$out"/
ls -1 "$out"/*.deb "$out"/*.whl
