#!/usr/bin/env bash
# scripts/install.sh [PREFIX] -- builds sqllock from this clone and
# installs it under PREFIX (default /usr/local): libsqllock (shared and
# static), the headers, the CMake package and sqllock.pc, the sqllock tool
# and its man page (docs/install.md). Installs what the build needs
# (Debian's packages, with apt-get) and runs ldconfig; through sudo where
# PREFIX is not yours. The build is in build/install.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
prefix=${1:-/usr/local}
ensure_packages "${BUILD_PACKAGES[@]}" libpq-dev default-libmysqlclient-dev
cmake -S . -B build/install -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_INSTALL_PREFIX="$prefix" -DSQLLOCK_BUILD_TESTS=OFF \
  -DSQLLOCK_BUILD_BENCH=OFF -DSQLLOCK_BUILD_EXAMPLES=OFF >/dev/null
cmake --build build/install -j"$(nproc)" >/dev/null
sudo=""
mkdir -p "$prefix" 2>/dev/null || true
if [ ! -w "$prefix" ] && [ "$(id -u)" -ne 0 ]; then sudo=sudo; fi
$sudo cmake --install build/install >/dev/null
if [ -x /sbin/ldconfig ] || command -v ldconfig >/dev/null; then
  $sudo ldconfig 2>/dev/null || true
fi
echo "$(build/install/tools/sqllock --version 2>/dev/null | head -1) installed under $prefix"
