#!/bin/sh
# tests/valgrind.sh LOG TEST [ARGS...] -- runs TEST under valgrind's
# memcheck: every error, and every definite, indirect or possible leak,
# fails it (exit 99; the test's own failure keeps its status). Each
# process (forked children too) writes LOG.<pid>; they are printed when
# it fails. ctest runs it as valgrind/<entry> (tests/CMakeLists.txt,
# SQLLOCK_TEST_VALGRIND=ON).
log=$1
shift
mkdir -p "$(dirname "$log")"
rm -f "$log".*
# A test may do fewer rounds of a loop under valgrind, where each round
# finds what it can find (test_reaper's start/stop loop).
SQLLOCK_TEST_UNDER_VALGRIND=1
export SQLLOCK_TEST_UNDER_VALGRIND
valgrind --leak-check=full --show-leak-kinds=definite,indirect,possible \
  --errors-for-leak-kinds=definite,indirect,possible \
  --error-exitcode=99 --log-file="$log.%p" "$@"
rc=$?
if [ "$rc" != 0 ] && [ "$rc" != 77 ]; then
  for f in "$log".*; do
    [ -f "$f" ] || continue
    echo "== $f"
    cat "$f"
  done
fi
exit "$rc"
