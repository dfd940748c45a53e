#!/usr/bin/env bash
# scripts/mutants.sh [MUTANT...] -- checks that the test suite catches the
# lock bugs it exists to catch (issue 16 item 11). Each mutant is one
# deliberate bug, applied with perl to a copy of this tree in a temporary
# directory (never to the tree itself); the copy is built and the ctest
# entries that should catch the bug run against it. A mutant is "killed"
# when at least one of them fails, and the script names the entries that
# did; a mutant that no entry kills fails the script (exit 1), as does a
# mutation that no longer applies because the code it edits moved (the
# script then says which pattern it did not find: update it there).
#
# The mutants:
#   acquire-always   the acquire reports success whether or not the
#                    statement took the row (core/lease.c)
#   release-any      the release deletes the row whoever owns it (the
#                    drivers' RELEASE statements lose their owner and
#                    token conditions)
#   renew-noop       the watchdog's renewer reports success without
#                    renewing (core/watch.c)
#   client-clock     PostgreSQL stores a lease's expiry by the client's
#                    wall clock: the acquire sends the client's time plus
#                    the ttl, and the statement stores that (DESIGN L2)
#
# Needs the servers of the tests: SQLLOCK_TEST_URLS (as for ctest: a
# sqlite, a postgres and a mysql URL), e.g. from scripts/servers.sh start
# DIR (. DIR/env). SQLLOCK_MUTANT_JOBS sets the build's -j (default 2);
# SQLLOCK_MUTANT_DRY=1 only applies each mutant and shows its diff;
# SQLLOCK_MUTANT_CASES=PATTERN runs only those cases of the entries
# (SQLLOCK_TEST_CASES), e.g. test_clock_L2_library_* to see that the
# library-level test alone kills client-clock.
# Every entry runs with SQLLOCK_TEST_DB_PER_UNIT=mut, in databases of its
# own. Takes a few minutes per mutant (a build and its entries).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
. scripts/lib.sh

# mutant NAME -> the ctest entries (a -R pattern) that should catch it.
declare -A entries=(
  [acquire-always]='^test_(conformance|mutex)_(sqlite|postgres|mysql)$'
  [release-any]='^test_conformance_(sqlite|postgres|mysql)$'
  [renew-noop]='^test_(watchdog|conformance)_(sqlite|postgres|mysql)$'
  [client-clock]='^test_clock_postgres$'
)
all=(acquire-always release-any renew-noop client-clock)

# subst FILE PERL-EXPR LABEL: applies the substitution to FILE (found in
# the copy), failing when it changed nothing.
subst() {
  local file=$1 expr=$2 label=$3
  cp "$file" "$file.orig"
  perl -0pi -e "$expr" "$file"
  if cmp -s "$file" "$file.orig"; then
    echo "FAIL: mutant $label: the pattern no longer matches in ${file#$copy/} ($expr)" >&2
    return 1
  fi
  rm -f "$file.orig"
}

# the file under core/ or drivers/ of the copy that holds TEXT.
holding() {
  local f
  f=$(grep -rlF -- "$1" "$copy/core" "$copy/drivers" | head -n 1)
  [ -n "$f" ] || { echo "FAIL: no file holds \"$1\" any more" >&2; return 1; }
  echo "$f"
}

# on FILE-TEXT PERL-EXPR LABEL: subst on the file that holds FILE-TEXT.
on() {
  local f
  f=$(holding "$1") || return 1
  subst "$f" "$2" "$3"
}

mutate() {   # mutate NAME: applies mutant NAME to $copy
  case "$1" in
    acquire-always)
      on 'is held by another "' \
        's/if \(!got\) \{\n        forget\(l\);\n        return sqllock__fail\(db, SQLLOCK_BUSY/if (0 \&\& !got) {\n        forget(l);\n        return sqllock__fail(db, SQLLOCK_BUSY/' "$1" ;;
    release-any)
      on 'WITH async AS' \
        's/(DELETE FROM sqllock_lease "\s*"WHERE name = \$1 AND )owner = \$2 AND token = \$3/$1\$2::text IS NOT NULL AND \$3::bigint IS NOT NULL/' "$1" &&
      on 'owner = ?2 AND token = ?3' \
        's/(DELETE FROM sqllock_lease WHERE name = \?1 AND )owner = \?2 AND token = \?3/$1?2 IS NOT NULL AND ?3 IS NOT NULL/' "$1" &&
      on 'DELETE FROM sqllock_lease WHERE name = ? AND owner = ? AND token = ?' \
        's/(DELETE FROM sqllock_lease WHERE name = \? AND )owner = \? AND token = \?/$1? IS NOT NULL AND ? IS NOT NULL/' "$1" ;;
    renew-noop)
      on 'rc = sqllock__lease_renew_raw(r->db' \
        's/rc = sqllock__lease_renew_raw\(r->db, e->name, e->owner, e->token,\s*e->ttl_ms, e->fast, &affected\);/rc = SQLLOCK_OK; affected = 1;/' "$1" ;;
    client-clock)
      on 'args[3] = sqllock__int(l->ttl_ms);' \
        's/args\[3\] = sqllock__int\(l->ttl_ms\);/args[3] = sqllock__int((int64_t)time(NULL) * 1000 + l->ttl_ms);/' "$1" &&
      on 'define LEASE_ACQUIRE(' \
        's/("SELECT \$1, \$2, \$3, nextval\(.sqllock_token_seq.\), now\(\), "\s*\\\s*)"now\(\) \+ \$4::float8 \* interval .1 millisecond. "/$1"to_timestamp(\$4::float8 \/ 1000.0) "/' "$1" ;;
    *) echo "unknown mutant $1 (known: ${all[*]})" >&2; return 64 ;;
  esac
}

[ -n "${SQLLOCK_TEST_URLS:-}" ] || [ -n "${SQLLOCK_MUTANT_DRY:-}" ] || { echo "mutants.sh: set SQLLOCK_TEST_URLS (scripts/servers.sh start DIR; . DIR/env)" >&2; exit 64; }
[ $# -gt 0 ] || set -- "${all[@]}"
work=$(mktemp -d "${TMPDIR:-/tmp}/sqllock-mutants.XXXXXX")
trap 'rm -rf "$work"' EXIT
survived=0
for m in "$@"; do
  [ -n "${entries[$m]:-}" ] || { echo "unknown mutant $m (known: ${all[*]})" >&2; exit 64; }
  copy="$work/$m"
  mkdir -p "$copy"
  tar -C "$root" --exclude=./build --exclude=./.git -cf - . | tar -C "$copy" -xf -
  mutate "$m" || exit 1
  n=$( { diff -r "$root/core" "$copy/core"; diff -r "$root/drivers" "$copy/drivers"; } | grep -c '^>' || true)
  echo "== mutant $m: $n line(s) changed"
  if [ -n "${SQLLOCK_MUTANT_DRY:-}" ]; then
    diff -ru "$root/core" "$copy/core" || true
    diff -ru "$root/drivers" "$copy/drivers" || true
    rm -rf "$copy"
    continue
  fi
  cmake -S "$copy" -B "$copy/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DSQLLOCK_BUILD_BENCH=OFF -DSQLLOCK_BUILD_EXAMPLES=OFF >"$work/$m.cmake.log" 2>&1
  cmake --build "$copy/build" -j"${SQLLOCK_MUTANT_JOBS:-2}" >"$work/$m.build.log" 2>&1 \
    || { tail -n 30 "$work/$m.build.log"; echo "FAIL: mutant $m does not build" >&2; exit 1; }
  log="$work/$m.ctest.log"
  (cd "$copy/build" && SQLLOCK_TEST_DB_PER_UNIT=mut \
     SQLLOCK_TEST_CASES="${SQLLOCK_MUTANT_CASES:-}" ctest -R "${entries[$m]}" -j2 \
     --timeout 300) >"$log" 2>&1 || true
  killed=$(awk '/\*\*\*Failed|\*\*\*Timeout|\*\*\*Exception/ { for (i = 1; i < NF; i++) if ($i ~ /^#[0-9]+:$/) print $(i + 1) }' "$log" | paste -sd' ' -)
  if [ -n "$killed" ]; then
    echo "killed: mutant $m, by $killed"
  else
    tail -n 15 "$log"
    echo "SURVIVED: mutant $m: no entry of ${entries[$m]} failed" >&2
    survived=$((survived + 1))
  fi
  rm -rf "$copy"
done
[ "$survived" = 0 ] || exit 1
echo "every mutant was killed"
