# Stage timing for scripts/test.sh: every stage's wall-clock time, in a
# table at the end of the run (also when it fails). Sourced, not run.
#
#   stages_init FILE      where the times go (one line per stage)
#   stage NAME            ends the current foreground stage, starts NAME
#   stage_end             ends the current foreground stage
#   stage_bg_begin NAME   (in a background job) notes NAME's start
#   stage_bg_end NAME RC  (in the same job) notes its end and exit status
#   stages_table          prints the table: start offset, seconds, status
#
# Stages that run side by side (a background build during the tests of
# another stage) each get their own line; the table is in start order and
# gives each start as an offset from stages_init, so overlaps show.

stages_file=""
stages_t0=0
stage_cur=""
stage_cur_t0=0

stages_now_ms() { date +%s%3N; }

stages_init() {
  stages_file=$1
  : > "$stages_file"
  stages_t0=$(stages_now_ms)
}

# stages_note NAME START_MS END_MS STATUS
stages_note() {
  [ -n "$stages_file" ] || return 0
  printf '%s\t%s\t%s\t%s\n' "$2" "$3" "$4" "$1" >> "$stages_file"
}

stage_end() {
  local rc=${1:-ok}
  if [ -n "$stage_cur" ]; then
    stages_note "$stage_cur" "$stage_cur_t0" "$(stages_now_ms)" "$rc"
    stage_cur=""
  fi
}

stage() {
  stage_end
  stage_cur=$1
  stage_cur_t0=$(stages_now_ms)
  echo "== stage: $1 (at $(( (stage_cur_t0 - stages_t0) / 1000 )) s)"
}

stage_bg_begin() { echo "$(stages_now_ms)" > "$stages_file.bg.$1"; }
stage_bg_end() {
  local t0
  t0=$(cat "$stages_file.bg.$1" 2>/dev/null || echo "$stages_t0")
  rm -f "$stages_file.bg.$1"
  if [ "$2" = 0 ]; then
    stages_note "$1" "$t0" "$(stages_now_ms)" ok
  else
    stages_note "$1" "$t0" "$(stages_now_ms)" "FAILED($2)"
  fi
}

stages_table() {
  [ -n "$stages_file" ] && [ -f "$stages_file" ] || return 0
  local now f name
  now=$(stages_now_ms)
  # Background stages that never reported an end (the run stopped first).
  for f in "$stages_file".bg.*; do
    [ -e "$f" ] || continue
    name=${f#"$stages_file".bg.}
    stages_note "$name" "$(cat "$f")" "$now" unfinished
    rm -f "$f"
  done
  echo "== stage times (s; start is the offset from the run's start)"
  printf '  %7s  %7s  %-10s %s\n' start seconds status stage
  sort -n -k1,1 "$stages_file" | awk -F'\t' -v t0="$stages_t0" -v now="$now" '
    { printf "  %7.1f  %7.1f  %-10s %s\n", ($1 - t0) / 1000, ($2 - $1) / 1000, $3, $4 }
    END { printf "  %7s  %7.1f  %-10s %s\n", "", (now - t0) / 1000, "", "total (wall clock)" }'
}
