#!/usr/bin/env bash
# The benchmarks side by side, in one run on one machine:
#
#   scripts/bench.sh [--quick] [--seconds N] [--out DIR] [--only LIST]
#                    [--append]
#   scripts/bench.sh --chart CSV PNG      (redraw the chart and summary.md)
#
# Installs what is missing (Debian packages), builds the library and the
# programs of bench/ (Release, in build/bench), starts PostgreSQL, MariaDB
# and Redis on loopback in a temporary directory (free ports, as the tests
# do), runs every program, each point for a fixed time (10 s; --quick 2 s)
# repeated 3 times, and stops the servers again. Every program appends its
# medians to DIR/results.csv (the common format of bench/README.md); the
# tables they print go to DIR/bench.log as well as the terminal; and
# DIR/summary.md has every row as Markdown tables, and DIR/bench.png is
# the chart the README shows. DIR defaults to
# bench/results.
#
# --only takes a comma-separated list of: drivers, optimistic, handoff,
# many, sem, rw, leader, redis, tooz, scale, memory (default: all). rw is
# bench_rw (shared and exclusive holds beside the lease); leader is
# bench_leader (failover after a resign and after a crash, counted in
# rounds: 10, --quick 5, a crash lasting up to its ttl of 2 s). --append
# keeps DIR's results.csv and bench.log and adds to them (to run some
# suites again, or the rest of a run that stopped), and redraws the chart
# from the whole.
#
# Measurements need a quiet machine: anything else running on it (a build,
# a test run) shows up as noise in the figures.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
. scripts/lib.sh

# ---------------------------------------------------------------------
# The chart: ops/s of the uncontended pairs (1 and 8 clients, log scale)
# and the contended handovers, one bar per system and scenario.
# ---------------------------------------------------------------------
draw_chart() {   # draw_chart CSV PNG
  local csv=$1 png=$2 dat
  dat=$(mktemp -d "${TMPDIR:-/tmp}/sqllock-chart.XXXXXX")
  python3 - "$csv" "$dat" <<'EOF'
import csv, sys
src, out = sys.argv[1], sys.argv[2]
rows = list(csv.DictReader(open(src, newline='')))
def emit(name, pick):
    n = 0
    with open(f"{out}/{name}.dat", "w") as f:
        for r in rows:
            if pick(r) and r["ops_per_s"] and \
                    r["scenario"] not in ("python floor",):
                scen = r["scenario"].split(", critical section")[0]
                label = f'{r["driver"]}: {scen}'.replace('"', "'")
                f.write(f'"{label}" {float(r["ops_per_s"]):.1f}\n')
                n += 1
    print(f"{name} {n}")
for c in ("1", "8"):
    emit(f"pairs{c}", lambda r, c=c: r["clients"] == c and
         not r["rows"] and (r["suite"] in ("uncontended", "peer") or
         (r["suite"] == "fast" and r["scenario"].startswith("sqllock"))))
emit("handover", lambda r: r["suite"] == "contended" and
     r["scenario"] != "floor")
EOF
  local n1 n8 nh
  # A panel without rows (a run with --only) says so: gnuplot fails on a
  # plot of nothing ("all points y value undefined").
  local nodata="set label 1 'not measured in this run' at graph 0.5, graph 0.5 center; plot [0:1] [10:100] 20 notitle lc rgb 'white'; unset label 1"
  n1=$(wc -l < "$dat/pairs1.dat"); n8=$(wc -l < "$dat/pairs8.dat")
  nh=$(wc -l < "$dat/handover.dat")
  {
    echo "set terminal pngcairo size 1400,1500 font 'sans,10'"
    echo "set output '$png'"
    echo "set multiplot layout 3,1"
    echo "set style fill solid 0.8 border -1"
    echo "set boxwidth 0.7"
    echo "set rmargin 12"
    echo "set logscale y"
    echo "set grid ytics"
    echo "set xtics rotate by -35 left"
    echo "set yrange [10:*]"
    echo "unset key"
    echo "set ylabel 'acquire+release pairs/s (log)'"
    echo "set title 'Uncontended lock pairs, 1 client (medians; higher is better)'"
    [ "$n1" -gt 0 ] && echo "plot '$dat/pairs1.dat' using 0:2:xtic(1) with boxes lc rgb '#3a6ea5'" \
      || echo "$nodata"
    echo "set title 'Uncontended lock pairs, 8 clients, distinct names'"
    [ "$n8" -gt 0 ] && echo "plot '$dat/pairs8.dat' using 0:2:xtic(1) with boxes lc rgb '#5a9e4b'" \
      || echo "$nodata"
    echo "set ylabel 'handovers/s (log)'"
    echo "set title '8 clients on one name, 1 ms critical section'"
    [ "$nh" -gt 0 ] && echo "plot '$dat/handover.dat' using 0:2:xtic(1) with boxes lc rgb '#c0504d'" \
      || echo "$nodata"
    echo "unset multiplot"
  } > "$dat/chart.gp"
  gnuplot "$dat/chart.gp"
  rm -rf "$dat"
  echo "chart: $png"
}

# ---------------------------------------------------------------------
# The summary: every row of the CSV as Markdown tables, one per suite
# (DIR/summary.md; the note of a benchmark run quotes it whole).
# ---------------------------------------------------------------------
write_summary() {   # write_summary CSV MD
  python3 - "$1" "$2" <<'EOF'
import csv, sys
src, dst = sys.argv[1], sys.argv[2]
rows = list(csv.DictReader(open(src, newline='')))
titles = {
    "uncontended": "Uncontended acquire+release pairs (distinct names)",
    "fast": "PostgreSQL fast mode beside the floor and the durable SQL by hand",
    "rowlock": "Row locks (transactions/s)",
    "optimistic": "Optimistic updates (transactions/s)",
    "contended": "8 clients on one name, 1 ms critical section (handovers/s; p50/p99 = handoff)",
    "peer": "Peers: Redis and tooz (pairs/s)",
    "scale": "Scale: pairs/s with live rows in the lock table",
    "reaper": "Reaper on expired rows (rows/s), and 8 clients beside it",
    "memory": "Memory of a process holding leases",
    "many": "Several names at once: 10 names all or none (sets/s), and 8 processes on random sets of 3 of 20",
    "sem": "Semaphores: permit pairs/s beside the exclusive lease's (ratio vs lease)",
    "rw": "Shared and exclusive holds: pairs/s beside the exclusive lease's (ratio vs lease), client processes",
    "leader": "Leader failover: hand-over (resign) and crash (SIGKILL) to the next election (p50 µs; value = max ms; ratio: p50 vs the floor's p50, or vs the ttl)",
    "renew": "Batched renewal: one handle watching many leases",
}
def num(v, d=0):
    if v in ("", None):
        return ""
    return f"{float(v):.{d}f}"
out = []
for suite in titles:
    rs = [r for r in rows if r["suite"] == suite]
    if not rs:
        continue
    out.append(f"### {titles[suite]}\n")
    out.append("| driver | scenario | clients | rows | ops/s | p50 µs | p99 µs | ratio | vs | value | unit |")
    out.append("|---|---|--:|--:|--:|--:|--:|--:|---|--:|---|")
    for r in rs:
        out.append("| " + " | ".join([
            r["driver"], r["scenario"], r["clients"], r["rows"],
            num(r["ops_per_s"]), num(r["p50_us"]), num(r["p99_us"]),
            num(r["ratio"], 2), r["vs"], num(r["value"], 1), r["unit"]]) + " |")
    out.append("")
open(dst, "w").write("\n".join(out))
EOF
  echo "summary: $2"
}

if [ "${1:-}" = "--chart" ]; then
  [ $# -eq 3 ] || { echo "usage: scripts/bench.sh --chart CSV PNG" >&2; exit 64; }
  ensure_packages gnuplot-nox python3
  write_summary "$2" "$(dirname "$3")/summary.md"
  draw_chart "$2" "$3"
  exit 0
fi

secs_args=()
out=bench/results
only="drivers,optimistic,handoff,many,sem,rw,leader,redis,tooz,scale,memory"
append=0
while [ $# -gt 0 ]; do
  case $1 in
    --quick) secs_args=(--quick); shift ;;
    --seconds) secs_args=(--seconds "$2"); shift 2 ;;
    --out) out=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    --append) append=1; shift ;;
    -h|--help) sed -n '2,29p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "scripts/bench.sh: unknown argument $1 (see --help)" >&2; exit 64 ;;
  esac
done
want() { case ",$only," in *",$1,"*) return 0 ;; *) return 1 ;; esac; }

ensure_packages "${BUILD_PACKAGES[@]}" postgresql mariadb-server libpq-dev \
  default-libmysqlclient-dev redis-server libhiredis-dev gnuplot-nox python3 \
  python3-tooz python3-psycopg2 python3-pymysql python3-redis

cmake -S . -B build/bench -DCMAKE_BUILD_TYPE=Release \
      -DSQLLOCK_BUILD_TESTS=OFF >/dev/null
cmake --build build/bench -j"$(nproc)" >/dev/null
bin=build/bench/bench

work=$(mktemp -d "${TMPDIR:-/tmp}/sqllock-bench.XXXXXX")
chmod 755 "$work"
srv="" redis=""
cleanup() {
  local rc=$?
  [ -n "$redis" ] && { scripts/redis.sh stop "$redis" || true; }
  [ -n "$srv" ] && { scripts/servers.sh stop "$srv" || true; }
  rm -rf "$work"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

echo "== starting PostgreSQL, MariaDB and Redis in $work"
srv="$work/srv"
SQLLOCK_PG_PORT=$(pick_port SQLLOCK_BENCH_PG_PORT) \
SQLLOCK_MY_PORT=$(pick_port SQLLOCK_BENCH_MY_PORT) \
  scripts/servers.sh start "$srv" >/dev/null
. "$srv/env"
pg=$SQLLOCK_TEST_PG_URL my=$SQLLOCK_TEST_MYSQL_URL
lite="sqlite://$work/bench.db"
redis="$work/redis"
SQLLOCK_REDIS_PORT=$(pick_port SQLLOCK_BENCH_REDIS_PORT) \
  scripts/redis.sh start "$redis" >/dev/null
. "$redis/env"

mkdir -p "$out"
csv="$out/results.csv" log="$out/bench.log"
[ "$append" = 1 ] || rm -f "$csv" "$log"
{
  echo "# scripts/bench.sh ${secs_args[*]:-} --only $only on $(hostname), $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "# $(nproc) CPUs, $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo), $(uname -sr)"
  echo "# git $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
} >> "$log"
run() {   # run LABEL CMD...: one program; its tables go to the log too
  echo "== $1" | tee -a "$log"
  shift
  echo "\$ $*" >> "$log"
  "$@" 2>&1 | tee -a "$log"
}

want drivers && run "uncontended pairs: floor, by hand, sqllock, native lock" \
  "$bin/bench_drivers" "${secs_args[@]}" --results "$csv" "$lite" "$pg" "$my"
want drivers && run "fast mode beside the durable default (PostgreSQL)" \
  "$bin/bench_drivers" "${secs_args[@]}" --fast --results "$csv" "$pg"
want optimistic && run "row locks and optimistic updates" \
  "$bin/bench_drivers" "${secs_args[@]}" --optimistic --results "$csv" \
  "$lite" "$pg" "$my"
want handoff && run "contended: 8 clients on one name, 1 ms critical section" \
  "$bin/bench_handoff" "${secs_args[@]}" --hold-ms 1 --results "$csv" \
  "$lite" "$pg" "$my"
want many && run "several names at once: acquire_many(10) against 10 single acquires" \
  "$bin/bench_many" "${secs_args[@]}" --results "$csv" "$lite" "$pg" "$my"
want sem && run "semaphores: permit pairs beside the lease's, 1 and 8 clients" \
  "$bin/bench_sem" "${secs_args[@]}" --results "$csv" "$lite" "$pg" "$my"
want rw && run "shared and exclusive holds beside the lease, 1 and 8 client processes" \
  "$bin/bench_rw" "${secs_args[@]}" --results "$csv" "$lite" "$pg" "$my"
want leader && run "leader failover: hand-over and crash, 3 candidates, ttl 2 s" \
  "$bin/bench_leader" "${secs_args[@]}" --results "$csv" "$lite" "$pg" "$my"
want redis && run "Redis: SET NX PX + Lua compare-and-delete" \
  "$bin/bench_redis" "${secs_args[@]}" --results "$csv" "$SQLLOCK_BENCH_REDIS_URL"
want tooz && run "OpenStack tooz on PostgreSQL, MySQL and Redis" \
  bench/bench_tooz.py "${secs_args[@]}" --results "$csv" \
  "$pg" "$my" "$SQLLOCK_BENCH_REDIS_URL"
want scale && run "scale: 0, 100k, 1M live rows; the reaper on 1M expired rows" \
  "$bin/bench_scale" "${secs_args[@]}" --results "$csv" "$lite" "$pg" "$my"
want memory && run "memory: 10 000 leases under renewal" \
  "$bin/bench_memory" "${secs_args[@]}" --results "$csv" "$lite" "$pg" "$my"

write_summary "$csv" "$out/summary.md"
draw_chart "$csv" "$out/bench.png"
echo "== results: $csv, $log, $out/summary.md, $out/bench.png"
