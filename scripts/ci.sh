# shellcheck shell=sh
# is_ci: true under CI -- CI is set and is not empty, "0" or "false" (any
# case). The one CI check of the scripts (tests/pooled.sh, scripts/test.sh
# and, through scripts/lib.sh, the others); the tests' own is tu_ci() in
# tests/harness/tu_env.c, with the same rule. Plain POSIX sh: sourced by
# sh and bash scripts alike.
is_ci() {
  case "${CI:-}" in
    ""|0|[Ff][Aa][Ll][Ss][Ee]) return 1 ;;
    *) return 0 ;;
  esac
}

# skip_or_fail WHAT WHY: a test or check that cannot run here skips (exit
# 77, which ctest shows as skipped), saying why; under CI it fails, as a
# test that does not run must there.
skip_or_fail() {
  echo "$1: SKIPPED: $2"
  if is_ci; then
    echo "$1: under CI (CI=$CI) a test that does not run fails"
    exit 1
  fi
  exit 77
}
