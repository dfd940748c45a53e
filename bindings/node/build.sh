#!/bin/sh
# Builds the addon, OUT_DIR/sqllock.node, with plain cc against Node's
# N-API headers (no node-gyp, no npm package): a shared object linked to
# libsqllock. Usage:
#   SQLLOCK_LIB_DIR=/path/to/build sh build.sh OUT_DIR
# SQLLOCK_LIB_DIR is the directory holding libsqllock.so (a build tree,
# or /usr/lib/x86_64-linux-gnu for Debian's libsqllock-dev); it becomes
# the addon's run path. NODE_INCLUDE overrides /usr/include/node; CC, cc.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=${1:?usage: SQLLOCK_LIB_DIR=DIR sh build.sh OUT_DIR}
lib=${SQLLOCK_LIB_DIR:?set SQLLOCK_LIB_DIR to the directory holding libsqllock.so}
node_inc=${NODE_INCLUDE:-/usr/include/node}
if [ ! -f "$node_inc/node_api.h" ]; then
  echo "build.sh: $node_inc/node_api.h not found (Debian: libnode-dev; NodeSource's nodejs has it)" >&2
  exit 1
fi
mkdir -p "$out"
lib=$(cd "$lib" && pwd)
${CC:-cc} -std=c99 -D_POSIX_C_SOURCE=200809L -DNODE_GYP_MODULE_NAME=sqllock \
  -O2 -g -Wall -Wextra -fPIC -fvisibility=hidden -shared \
  -I"$node_inc" -I"$here/../../include" \
  "$here"/src/addon.c "$here"/src/conn.c "$here"/src/ops.c "$here"/src/leader.c \
  "$here"/src/inspect.c \
  -o "$out/sqllock.node.$$" -L"$lib" -lsqllock -lpthread -Wl,-rpath,"$lib"
mv "$out/sqllock.node.$$" "$out/sqllock.node"   # atomic: a running test keeps its copy
