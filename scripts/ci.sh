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
