#!/usr/bin/env bash
# A throwaway 3-node MariaDB Galera cluster whose nodes each live in their
# own Linux network namespace, so that a test can cut the network between
# them (issue 30 item 2: partitions, nodes SIGKILLed in quick succession,
# a node paused). The loopback cluster of scripts/galera.sh is the model:
# same node configuration, same waiting logic. Needs root (ip netns).
#
#   scripts/galera_net.sh start DIR [--jepsen|--safe]
#                        create the namespaces and links, bootstrap node 1,
#                        join nodes 2 and 3 one at a time, wait until all
#                        three are Synced in a cluster of 3, create the
#                        test user and database, write DIR/env
#   scripts/galera_net.sh stop DIR
#                        stop every node (SIGCONT first, SIGTERM, SIGKILL
#                        after 30 s), kill what is left in the namespaces,
#                        delete the namespaces and links: nothing is left.
#                        Safe to call twice, or after a failed start
#   scripts/galera_net.sh partition DIR SPEC
#                        cut the node-to-node links between the groups of
#                        SPEC, e.g. '1|23' (node 1 alone), '12|3', '1|2|3';
#                        every link between two nodes of different groups
#                        drops all packets both ways, links inside a group
#                        and links to nodes not named are healed, so '1|2'
#                        cuts only 1-2 (node 3 still sees both: a bridge).
#                        The client links are left as they are
#   scripts/galera_net.sh isolate-client DIR I
#                        cut node I from the client (root namespace) too
#   scripts/galera_net.sh heal DIR
#                        restore every link (node-to-node and client)
#   scripts/galera_net.sh kill DIR I [J ...]
#                        SIGKILL the nodes in the order given, no delay
#                        between the signals, then wait until all are gone
#   scripts/galera_net.sh start-node DIR I
#                        start node I again (after a crash from the
#                        position `mariadbd --wsrep-recover` finds, passed
#                        as --wsrep-start-position: mariadbd alone reads
#                        only grastate.dat); while another node runs it
#                        rejoins (IST, else rsync SST) and the command
#                        returns once it is Synced; it fails at once,
#                        without starting it, when the running nodes are
#                        all non-Primary (see bootstrap). When no node
#                        runs, node I is bootstrapped if it is the most
#                        advanced (see recover), else the command fails
#                        naming the one
#   scripts/galera_net.sh recover DIR
#                        after a whole-cluster crash (every node down): find
#                        each node's last committed seqno with
#                        `mariadbd --wsrep-recover`, mark the node with the
#                        highest one (the lowest number on a tie) as
#                        safe_to_bootstrap in its grastate.dat, remove the
#                        saved views (gvwstate.dat), bootstrap it with
#                        --wsrep-new-cluster and join the other two (IST
#                        from its gcache, else SST), each from its own
#                        recovered position; prints every seqno
#   scripts/galera_net.sh bootstrap DIR I
#                        make running node I a primary component again
#                        (wsrep_provider_options pc.bootstrap=YES) when no
#                        running node is Primary but some are up: after 2 of
#                        3 nodes crashed the third stays non-Primary, and
#                        restarting a crashed node does not restore the
#                        quorum (the restarted node is a new member). Pick
#                        the running node with the highest
#                        wsrep_last_committed (status shows it); then
#                        start-node the others
#   scripts/galera_net.sh pause DIR I / resume DIR I
#                        SIGSTOP / SIGCONT node I's mariadbd
#   scripts/galera_net.sh status DIR
#                        one line per node: pid, wsrep_cluster_size,
#                        wsrep_cluster_status (Primary / non-Primary),
#                        wsrep_local_state_comment, wsrep_ready,
#                        wsrep_last_committed (read over the node's Unix
#                        socket, so even when cut off), or "paused" or
#                        "down"; then the links that are cut
#   scripts/galera_net.sh wait DIR I [SECONDS [SIZE]]
#                        wait until node I is Primary, Synced and ready
#                        (and sees a cluster of SIZE; default 120 s, any
#                        size)
#   scripts/galera_net.sh sql DIR I STATEMENTS
#                        run STATEMENTS as the client does: user sqllock
#                        over TCP from the root namespace to node I's
#                        address, database sqllock_test (batch output)
#
# Addresses. N is ${SQLLOCK_GALNET_NET:-10.213.7} (the first three octets
# of a /24 that nothing else on the machine uses; start fails when an
# address or route of the root namespace is in it). Node I has N.I/32 on
# the loopback device of its namespace and listens there on the standard
# ports: SQL 3306, group communication 4567, IST 4568, SST (rsync) 4444;
# each namespace has its own ports, so no port range can clash with other
# clusters or tests. The client (every process in the root namespace)
# has N.100/32 on each of its links.
#
# Topology. The namespaces are sqlgal-H-n1..3, where H is 6 hex digits of
# the md5 of DIR (kept in DIR/netid), so clusters in other directories
# never share a name. Links, all veth pairs made here:
#   node I <-> node J   device pJ in nI, pI in nJ; route N.J/32 dev pJ in
#                       nI (and back): the only way from I to J
#   node I <-> client   device cl in nI, sgH-cI in the root namespace;
#                       route N.100/32 dev cl in nI, N.I/32 dev sgH-cI in
#                       the root namespace
# A namespace has no other route (no default), and its ip_forward is 0, so
# node-to-node traffic can take no other path: with a link cut, its
# packets are dropped, never detoured through the client's namespace (the
# root namespace's ip_forward is not touched: it needs no forwarding).
# A cut link has a `pfifo limit 0` qdisc on both of its ends: every
# packet is dropped silently, both ways, as on a real partition
# (connections are not reset, nothing is refused; the link stays up and
# its routes stay). This kernel has no sch_netem (nor tc classifiers or
# iptables), so packet loss below 100% and delay are not offered.
#
# Files. Node I keeps its data in DIR/nI/data, its log in
# DIR/nI/server.log (and DIR/nI/stdout.log), its whole configuration in
# DIR/nI/my.cnf (read alone, with --defaults-file), its socket in
# DIR/nI/sock; recover writes DIR/nI/recover.log. DIR/mode holds the
# settings (default, jepsen or safe), DIR/start_ms the time start took.
#
# Settings under test (start's option; DIR/mode keeps it for restarts):
#   (none, or --default)
#             galera.sh's: innodb_flush_log_at_trx_commit=1 (the
#             default), no binary log, wsrep_sync_wait=0
#   --jepsen  what MariaDB's "Configuring MariaDB Galera Cluster" page
#             recommends and Jepsen's analysis of MariaDB Galera Cluster
#             12.1.2 (March 2026) tested as the recommended settings:
#             innodb_flush_log_at_trx_commit=0 (redo written and flushed
#             once a second: a SIGKILL loses up to a second of commits on
#             that node), binary log on with sync_binlog=0,
#             wsrep_sync_wait=0
#   --safe    innodb_flush_log_at_trx_commit=1 (redo flushed at each
#             commit), binary log on with sync_binlog=1,
#             innodb_doublewrite=1 (the default, which Galera requires),
#             wsrep_sync_wait=15 (causal checks before reads, UPDATE/
#             DELETE, INSERT/REPLACE and SHOW: read-your-writes across
#             nodes; it does not change durability). Galera itself has no
#             setting that makes a commit durable on the other nodes
#             before the ack: a commit is acknowledged once its write set
#             is ordered and certified by every member of the primary
#             component, applied and flushed there later
# Group communication uses galera.sh's short timeouts (a silent peer is
# suspected after 2 s and dropped after 3 s). Seen with them: a node cut
# off goes non-Primary about 3 s after the cut and then refuses
# statements with error 1047 (WSREP has not yet prepared node for
# application use); the commit in flight at the cut waits those 3 s and
# fails with error 1180 (Error while appending streaming replication
# fragment), yet may have been committed by the others: its outcome is
# unknown, not a failure.
#
# Each node has the database `sqllock_test` and the user `sqllock` with
# password `sqllock-test`, from localhost and from N.% (the client).
# DIR/env holds shell assignments: SQLLOCK_TEST_GALNET_URL1..3
# (mysql://sqllock:sqllock-test@N.I:3306/sqllock_test), SQLLOCK_TEST_
# GALNET_URLS (all three), SQLLOCK_TEST_GALNET_NS1..3 (the namespaces),
# SQLLOCK_TEST_GALNET_MODE, SQLLOCK_TEST_GALNET_DIR and
# SQLLOCK_TEST_GALNET_SCRIPT.
#
# Needs the Debian packages mariadb-server (10.11), galera-4, rsync and
# iproute2. The nodes run as the `mysql` user that Debian's packages
# create.
set -euo pipefail
# running, ms_now, stop_pid, abs_path (scripts/lib.sh).
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

NET=${SQLLOCK_GALNET_NET:-10.213.7}
if ! [[ $NET =~ ^([0-9]{1,3})\.([0-9]{1,3})\.([0-9]{1,3})$ ]] ||
   [ "${BASH_REMATCH[1]}" -gt 255 ] || [ "${BASH_REMATCH[2]}" -gt 255 ] ||
   [ "${BASH_REMATCH[3]}" -gt 255 ]; then
  echo "galera_net.sh: SQLLOCK_GALNET_NET must be three octets like 10.213.7, not '$NET'" >&2
  exit 64
fi
CLIENT_ADDR=$NET.100
SQL_PORT=3306
GCOMM_PORT=4567
IST_PORT=4568
SST_PORT=4444
PROVIDER=/usr/lib/galera/libgalera_smm.so
PASSWORD=sqllock-test
CLUSTER_ADDRESS="gcomm://$NET.1:$GCOMM_PORT,$NET.2:$GCOMM_PORT,$NET.3:$GCOMM_PORT"
SELF=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$(basename "${BASH_SOURCE[0]}")
# Dropping every packet on a link: a queue of length 0.
CUT_QDISC=(pfifo limit 0)

die() { echo "galera_net.sh: $*" >&2; exit 1; }

# netid DIR: the 6 hex digits that name DIR's namespaces and links.
netid() {
  local dir=$1
  if [ -s "$dir/netid" ]; then cat "$dir/netid"; return; fi
  printf '%s' "$dir" | md5sum | cut -c1-6
}
ns() { echo "sqlgal-$(netid "$1")-n$2"; }       # ns DIR I
cdev() { echo "sg$(netid "$1")-c$2"; }           # cdev DIR I: root side
addr() { echo "$NET.$1"; }                       # addr I

node_pid() {     # node_pid DIR I: the pid of a running node, or fails
  local f=$1/n$2/mariadbd.pid pid
  [ -f "$f" ] || f=$1/n$2/launch.pid
  [ -f "$f" ] || return 1
  pid=$(cat "$f" 2>/dev/null) || return 1
  [ -n "$pid" ] && running "$pid" &&
    grep -qxE 'mariadbd|ip' "/proc/$pid/comm" 2>/dev/null && echo "$pid"
}

paused() {       # paused PID: 0 when the process is stopped (SIGSTOP)
  [ "$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null)" = T ]
}

# sql DIR I STATEMENTS: runs statements as the superuser on node I's
# socket (a Unix socket: reachable whatever the network does). Gives up
# after 10 s (a paused node accepts the connection and never answers).
sql() {
  local dir=$1 n=$2; shift 2
  timeout 10 mariadb --no-defaults --connect-timeout=5 -S "$dir/n$n/sock" \
    -u "$(id -un)" -N -B -e "SET SESSION wsrep_sync_wait = 0; $*"
}

# client_sql DIR I STATEMENTS: as the client: TCP from the root namespace.
client_sql() {
  local n=$2; shift 2
  mariadb --no-defaults --connect-timeout=10 -h "$(addr "$n")" -P "$SQL_PORT" \
    -u sqllock -p"$PASSWORD" -N -B sqllock_test -e "$*"
}

# wsrep DIR I VAR: one wsrep status variable of node I ("" when down).
wsrep() {
  sql "$1" "$2" "SHOW GLOBAL STATUS LIKE '$3'" 2>/dev/null | awk '{ print $2 }'
}

write_cnf() {    # write_cnf DIR I MODE
  local dir=$1 n=$2 mode=$3 nd=$1/n$2 a settings
  a=$(addr "$n")
  case $mode in
    default) settings="# galera.sh's settings
innodb-flush-log-at-trx-commit = 1
wsrep-sync-wait = 0" ;;
    jepsen) settings="# --jepsen: MariaDB's recommended Galera settings, as Jepsen tested them
innodb-flush-log-at-trx-commit = 0
log-bin = binlog
sync-binlog = 0
wsrep-sync-wait = 0" ;;
    safe) settings="# --safe: every commit flushed on the node that makes it
innodb-flush-log-at-trx-commit = 1
log-bin = binlog
sync-binlog = 1
innodb-doublewrite = 1
wsrep-sync-wait = 15" ;;
    *) die "unknown mode '$mode'" ;;
  esac
  cat > "$nd/my.cnf" <<CNF
# Node $n of the sqllock network-namespace test cluster
# (scripts/galera_net.sh), in namespace $(ns "$dir" "$n"). Read alone,
# with --defaults-file: nothing of /etc/mysql applies.
[mariadbd]
user = mysql
datadir = $nd/data
tmpdir = $nd/tmp
socket = $nd/sock
port = $SQL_PORT
bind-address = $a
pid-file = $nd/mariadbd.pid
log-error = $nd/server.log
skip-name-resolve
max-connections = 200
innodb-buffer-pool-size = 32M
innodb-log-file-size = 16M
default-storage-engine = InnoDB
binlog-format = ROW
innodb-autoinc-lock-mode = 2
$settings
wsrep-on = ON
wsrep-provider = $PROVIDER
wsrep-cluster-name = sqllock_galnet
wsrep-cluster-address = $CLUSTER_ADDRESS
wsrep-node-name = n$n
wsrep-node-address = $a:$GCOMM_PORT
wsrep-node-incoming-address = $a:$SQL_PORT
wsrep-sst-method = rsync
wsrep-sst-receive-address = $a:$SST_PORT
# Small gcache; a silent peer is suspected after 2 s and dropped after
# 3 s (the defaults take 5-15 s), as in scripts/galera.sh.
wsrep-provider-options = "gmcast.listen_addr=tcp://$a:$GCOMM_PORT;ist.recv_addr=$a:$IST_PORT;gcache.size=32M;gcache.page_size=16M;evs.keepalive_period=PT0.5S;evs.inactive_check_period=PT0.5S;evs.suspect_timeout=PT2S;evs.inactive_timeout=PT3S;evs.install_timeout=PT3S;evs.join_retrans_period=PT0.5S;pc.announce_timeout=PT1S"

[client]
socket = $nd/sock
CNF
}

# The network.

# net_conflict: fails when the root namespace already has an address or
# a route in N.0/24 (another cluster with the same SQLLOCK_GALNET_NET).
net_conflict() {
  local re="(^|[[:space:]/])${NET//./\\.}\\.[0-9]"
  ip -4 -o addr show | grep -qE "$re" || ip -4 route show table all | grep -qE "$re"
}

setup_net() {    # setup_net DIR
  local dir=$1 i j nsi nsj c
  for i in 1 2 3; do
    ip netns list | grep -q "^$(ns "$dir" "$i")\b" &&
      die "namespace $(ns "$dir" "$i") exists (a cluster left behind? run '$0 stop $dir')"
  done
  net_conflict && die "the root namespace already uses $NET.0/24 (another cluster? set SQLLOCK_GALNET_NET to another /24)"
  for i in 1 2 3; do
    nsi=$(ns "$dir" "$i"); c=$(cdev "$dir" "$i")
    ip netns add "$nsi"
    ip -n "$nsi" link set lo up
    ip -n "$nsi" addr add "$(addr "$i")/32" dev lo
    ip netns exec "$nsi" sysctl -qw net.ipv4.ip_forward=0
    ip link add "$c" type veth peer name cl netns "$nsi"
    ip addr add "$CLIENT_ADDR/32" dev "$c"
    ip link set "$c" up
    ip -n "$nsi" link set cl up
    ip route add "$(addr "$i")/32" dev "$c" src "$CLIENT_ADDR"
    ip -n "$nsi" route add "$CLIENT_ADDR/32" dev cl src "$(addr "$i")"
  done
  for i in 1 2; do
    for j in $(seq $((i + 1)) 3); do
      nsi=$(ns "$dir" "$i"); nsj=$(ns "$dir" "$j")
      ip link add "p$j" netns "$nsi" type veth peer name "p$i" netns "$nsj"
      ip -n "$nsi" link set "p$j" up
      ip -n "$nsj" link set "p$i" up
      ip -n "$nsi" route add "$(addr "$j")/32" dev "p$j" src "$(addr "$i")"
      ip -n "$nsj" route add "$(addr "$i")/32" dev "p$i" src "$(addr "$j")"
    done
  done
}

ns_exists() { [ -e "/run/netns/$1" ]; }

teardown_net() { # teardown_net DIR: what is left of the namespaces and links
  local dir=$1 i nsi pid
  for i in 1 2 3; do
    nsi=$(ns "$dir" "$i")
    if ns_exists "$nsi"; then
      # Whatever still runs in the namespace (an rsync daemon of an SST, a
      # node that did not stop) is this cluster's.
      for pid in $(ip netns pids "$nsi" 2>/dev/null); do
        kill -CONT "$pid" 2>/dev/null || true
        kill -9 "$pid" 2>/dev/null || true
      done
      ip netns del "$nsi" 2>/dev/null || true
    fi
    # Deleting the namespace deletes its ends of the links and so their
    # peers; the client link's root side, should it be left:
    if ip link show "$(cdev "$dir" "$i")" >/dev/null 2>&1; then
      ip link del "$(cdev "$dir" "$i")" 2>/dev/null || true
    fi
  done
}

# cut_end NS DEV / heal_end NS DEV: drop all / none of DEV's packets.
# NS "" is the root namespace.
cut_end() { tc ${1:+-n "$1"} qdisc replace dev "$2" root "${CUT_QDISC[@]}"; }
heal_end() {
  if tc ${1:+-n "$1"} qdisc show dev "$2" root 2>/dev/null | grep -q "^qdisc pfifo"; then
    tc ${1:+-n "$1"} qdisc del dev "$2" root
  fi
}
cut_link() {     # cut_link DIR I J
  cut_end "$(ns "$1" "$2")" "p$3"; cut_end "$(ns "$1" "$3")" "p$2"
}
heal_link() {    # heal_link DIR I J
  heal_end "$(ns "$1" "$2")" "p$3"; heal_end "$(ns "$1" "$3")" "p$2"
}
link_cut() {     # link_cut NS DEV: 0 when cut
  tc ${1:+-n "$1"} qdisc show dev "$2" root 2>/dev/null | grep -q "^qdisc pfifo"
}

need_net() {
  local i
  for i in 1 2 3; do
    ns_exists "$(ns "$1" "$i")" || die "no namespace $(ns "$1" "$i") (run '$0 start $1' first)"
  done
}

partition() {    # partition DIR SPEC
  local dir=$1 spec=$2 i j k p g=0 seen="" t0 re='^[123]+([|][123]+)+$'
  local -a parts=()
  local -A group=()
  need_net "$dir"
  [[ $spec =~ $re ]] || die "a partition is groups of nodes separated by '|', e.g. '1|23', not '$spec'"
  IFS='|' read -r -a parts <<<"$spec"
  for p in "${parts[@]}"; do
    g=$((g + 1))
    for ((k = 0; k < ${#p}; k++)); do
      i=${p:k:1}
      [[ $seen == *$i* ]] && die "node $i is in two groups of '$spec'"
      seen+=$i; group[$i]=$g
    done
  done
  t0=$(ms_now)
  for i in 1 2; do
    for j in $(seq $((i + 1)) 3); do
      if [ -n "${group[$i]:-}" ] && [ -n "${group[$j]:-}" ] &&
         [ "${group[$i]}" != "${group[$j]}" ]; then
        cut_link "$dir" "$i" "$j"
      else
        heal_link "$dir" "$i" "$j"
      fi
    done
  done
  echo "galera_net: partition $spec in place ($(( $(ms_now) - t0 )) ms); cut: $(cut_links "$dir")"
}

isolate_client() { # isolate_client DIR I
  need_net "$1"
  cut_end "$(ns "$1" "$2")" cl
  cut_end "" "$(cdev "$1" "$2")"
  echo "galera_net: node $2 cut from the client; cut: $(cut_links "$1")"
}

heal() {         # heal DIR
  local dir=$1 i j
  need_net "$dir"
  for i in 1 2; do
    for j in $(seq $((i + 1)) 3); do heal_link "$dir" "$i" "$j"; done
  done
  for i in 1 2 3; do
    heal_end "$(ns "$dir" "$i")" cl
    heal_end "" "$(cdev "$dir" "$i")"
  done
  echo "galera_net: all links healed"
}

cut_links() {    # cut_links DIR: the cut links, e.g. "1-2 1-3 client-2"
  local dir=$1 i j out=""
  for i in 1 2; do
    for j in $(seq $((i + 1)) 3); do
      if link_cut "$(ns "$dir" "$i")" "p$j" || link_cut "$(ns "$dir" "$j")" "p$i"; then
        out+=" $i-$j"
      fi
    done
  done
  for i in 1 2 3; do
    if link_cut "$(ns "$dir" "$i")" cl || link_cut "" "$(cdev "$dir" "$i")"; then
      out+=" client-$i"
    fi
  done
  out=${out# }
  echo "${out:-none}"
}

# The nodes.

# run_node DIR I [ARGS]: starts node I in its namespace, in the background.
# `ip netns exec` execs mariadbd, so $! is the server's pid.
run_node() {
  local dir=$1 n=$2; shift 2
  rm -f "$dir/n$n/mariadbd.pid"
  ip netns exec "$(ns "$dir" "$n")" mariadbd --defaults-file="$dir/n$n/my.cnf" "$@" \
    >>"$dir/n$n/stdout.log" 2>&1 </dev/null &
  echo $! > "$dir/n$n/launch.pid"
}

# wait_synced DIR I SECONDS [SIZE]: waits until node I answers, is ready,
# Primary and Synced (and, with SIZE, sees a cluster of SIZE). Fails with
# its log.
wait_synced() {
  local dir=$1 n=$2 secs=$3 size=${4:-} st="" ready csize t_end
  t_end=$(( $(ms_now) + secs * 1000 ))
  while [ "$(ms_now)" -lt "$t_end" ]; do
    st=$(sql "$dir" "$n" "SHOW GLOBAL STATUS WHERE Variable_name IN ('wsrep_ready', 'wsrep_local_state_comment', 'wsrep_cluster_size', 'wsrep_cluster_status')" 2>/dev/null || true)
    ready=$(awk '$1 == "wsrep_ready" { print $2 }' <<<"$st")
    csize=$(awk '$1 == "wsrep_cluster_size" { print $2 }' <<<"$st")
    if [ "$ready" = ON ] && grep -q "wsrep_local_state_comment.Synced" <<<"$st" &&
       grep -q "wsrep_cluster_status.Primary" <<<"$st" &&
       { [ -z "$size" ] || [ "$csize" = "$size" ]; }; then
      return 0
    fi
    if ! node_pid "$dir" "$n" >/dev/null; then
      echo "galera_net.sh: node $n is not running; its log:" >&2
      tail -n 40 "$dir/n$n/server.log" >&2 || true
      return 1
    fi
    sleep 0.1
  done
  echo "galera_net.sh: node $n was not Synced${size:+ in a cluster of $size} within $secs s; its state:" >&2
  echo "$st" >&2
  tail -n 40 "$dir/n$n/server.log" >&2 || true
  return 1
}

start_cluster() { # start_cluster DIR MODE
  local dir=$1 mode=$2 n t0 t1 u
  t0=$(ms_now)
  [ "$(id -u)" -eq 0 ] || die "needs root (network namespaces)"
  [ -f "$PROVIDER" ] || die "$PROVIDER not found (install galera-4)"
  command -v mariadbd >/dev/null || die "mariadbd not found (install mariadb-server)"
  command -v rsync >/dev/null || die "rsync not found (install rsync; it is the SST method)"
  { command -v ip >/dev/null && command -v tc >/dev/null; } || die "ip and tc not found (install iproute2)"
  for n in 1 2 3; do
    node_pid "$dir" "$n" >/dev/null && die "node $n already runs in $dir (stop it first)"
  done
  mkdir -p "$dir"; chmod 755 "$dir"
  printf '%s' "$dir" | md5sum | cut -c1-6 > "$dir/netid.new"
  mv "$dir/netid.new" "$dir/netid"
  setup_net "$dir" || return 1
  echo "$mode" > "$dir/mode"
  for n in 1 2 3; do
    rm -rf "$dir/n$n"
    mkdir -p "$dir/n$n/data" "$dir/n$n/tmp" || return 1
    write_cnf "$dir" "$n" "$mode" || return 1
    chown -R mysql: "$dir/n$n"
  done
  # Only node 1 gets a data directory; 2 and 3 receive theirs by SST.
  mariadb-install-db --no-defaults --user=mysql --datadir="$dir/n1/data" \
    --tmpdir="$dir/n1/tmp" \
    --auth-root-authentication-method=socket --skip-test-db \
    >"$dir/n1/install.log" 2>&1 || { cat "$dir/n1/install.log" >&2; return 1; }
  # Each step says `|| return 1`: start_cluster runs on the left of ||,
  # where set -e does not stop it.
  run_node "$dir" 1 --wsrep-new-cluster || return 1
  wait_synced "$dir" 1 60 1 || return 1
  sql "$dir" 1 "
    CREATE DATABASE sqllock_test;
    CREATE USER 'sqllock'@'$NET.%' IDENTIFIED BY '$PASSWORD';
    CREATE USER 'sqllock'@'localhost' IDENTIFIED BY '$PASSWORD';
    GRANT ALL ON sqllock_test.* TO 'sqllock'@'$NET.%';
    GRANT ALL ON sqllock_test.* TO 'sqllock'@'localhost';" \
    || { tail -n 40 "$dir/n1/server.log" >&2; return 1; }
  t1=$(ms_now)
  echo "galera_net: node 1 bootstrapped in $((t1 - t0)) ms"
  # One joiner at a time: node 1 is the only donor until node 2 is synced.
  run_node "$dir" 2 || return 1
  wait_synced "$dir" 2 120 2 || return 1
  run_node "$dir" 3 || return 1
  wait_synced "$dir" 3 120 3 || return 1
  for n in 1 2 3; do wait_synced "$dir" "$n" 30 3 || return 1; done
  client_sql "$dir" 3 "SELECT 1" >/dev/null ||
    { echo "galera_net.sh: the client cannot reach node 3 at $(addr 3):$SQL_PORT" >&2; return 1; }
  u="sqllock:$PASSWORD@"
  cat > "$dir/env" <<ENV
SQLLOCK_TEST_GALNET_URL1='mysql://$u$(addr 1):$SQL_PORT/sqllock_test'
SQLLOCK_TEST_GALNET_URL2='mysql://$u$(addr 2):$SQL_PORT/sqllock_test'
SQLLOCK_TEST_GALNET_URL3='mysql://$u$(addr 3):$SQL_PORT/sqllock_test'
SQLLOCK_TEST_GALNET_URLS='mysql://$u$(addr 1):$SQL_PORT,$(addr 2):$SQL_PORT,$(addr 3):$SQL_PORT/sqllock_test'
SQLLOCK_TEST_GALNET_NS1='$(ns "$dir" 1)'
SQLLOCK_TEST_GALNET_NS2='$(ns "$dir" 2)'
SQLLOCK_TEST_GALNET_NS3='$(ns "$dir" 3)'
SQLLOCK_TEST_GALNET_MODE='$mode'
SQLLOCK_TEST_GALNET_DIR='$dir'
SQLLOCK_TEST_GALNET_SCRIPT='$SELF'
ENV
  echo "$(( $(ms_now) - t0 ))" > "$dir/start_ms"
  echo "galera_net: 3 nodes synced ($mode settings) on $(addr 1)-3:$SQL_PORT in namespaces $(ns "$dir" '{1,2,3}') in $(cat "$dir/start_ms") ms (in $dir)"
}

# An rsync daemon that an SST left behind on node I (its pid file is in
# the node's data directory).
kill_sst_helpers() {
  local f=$1/n$2/data/rsync_sst.pid pid
  [ -f "$f" ] || return 0
  pid=$(cat "$f" 2>/dev/null || true)
  if [ -n "$pid" ] && running "$pid" && grep -q rsync "/proc/$pid/comm" 2>/dev/null; then
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$f"
}

# kill_nodes DIR I...: SIGKILL in the order given, no delay, then waits
# until every one is gone.
kill_nodes() {
  local dir=$1 n pid i t0 pids=() names=()
  shift
  for n in "$@"; do
    pid=$(node_pid "$dir" "$n") || die "node $n does not run in $dir"
    pids+=("$pid"); names+=("$n")
  done
  t0=$(ms_now)
  for pid in "${pids[@]}"; do kill -9 "$pid"; done
  local t_sent=$(( $(ms_now) - t0 ))
  for pid in "${pids[@]}"; do
    for i in $(seq 1 200); do running "$pid" || break; sleep 0.05; done
    running "$pid" && die "pid $pid still runs 10 s after SIGKILL"
  done
  for n in "${names[@]}"; do
    rm -f "$dir/n$n/mariadbd.pid"
    kill_sst_helpers "$dir" "$n"
  done
  echo "galera_net: node(s) ${names[*]} (pid ${pids[*]}) SIGKILLed within $t_sent ms, gone in $(( $(ms_now) - t0 )) ms"
}

# recovered_pos DIR I: node I's last committed position, UUID:SEQNO:
# from grastate.dat after a clean stop, else (its seqno is -1 while a node
# runs, so after a crash) from `mariadbd --wsrep-recover`, whose log is
# DIR/nI/recover.log; "" when unknown.
recovered_pos() {
  local dir=$1 n=$2 log=$1/n$2/recover.log g=$1/n$2/data/grastate.dat pos uuid seq
  uuid=$(awk '$1 == "uuid:" { print $2 }' "$g" 2>/dev/null || true)
  seq=$(awk '$1 == "seqno:" { print $2 }' "$g" 2>/dev/null || true)
  if [ -n "$seq" ] && [ "$seq" != -1 ]; then echo "$uuid:$seq"; return; fi
  rm -f "$log"; touch "$log"; chown mysql: "$log"
  ip netns exec "$(ns "$dir" "$n")" mariadbd --defaults-file="$dir/n$n/my.cnf" \
    --wsrep-recover --log-error="$log" >/dev/null 2>&1 </dev/null || true
  pos=$(sed -n 's/.*WSREP: Recovered position: *//p' "$log" | tail -n 1)
  pos=${pos%%,*}
  [[ $pos =~ ^[0-9a-f-]{36}:-?[0-9]+$ ]] || pos=""
  echo "$pos"
}

# crash_pos DIR I: the --wsrep-start-position=UUID:SEQNO that node I needs
# after a crash ("" after a clean stop, or when unknown): mariadbd itself
# reads only grastate.dat, so a crashed node would bootstrap a new history
# (UUID new, seqno 0: every joiner then needs a full SST) or could only
# join by a full SST, never IST.
crash_pos() {
  local seq pos
  seq=$(awk '$1 == "seqno:" { print $2 }' "$1/n$2/data/grastate.dat" 2>/dev/null || true)
  [ "$seq" = -1 ] || return 0
  pos=$(recovered_pos "$1" "$2")
  [ -z "$pos" ] || echo "--wsrep-start-position=$pos"
}

# bootstrap_node DIR I POS: node I starts a new primary component from
# its own state, POS (UUID:SEQNO, or "").
bootstrap_node() {
  local dir=$1 n=$2 pos=$3 g=$1/n$2/data/grastate.dat m args=(--wsrep-new-cluster)
  if [ -f "$g" ]; then sed -i 's/^safe_to_bootstrap: *0/safe_to_bootstrap: 1/' "$g"; fi
  for m in 1 2 3; do rm -f "$dir/n$m/data/gvwstate.dat"; done
  [ -z "$pos" ] || args+=("--wsrep-start-position=$pos")
  run_node "$dir" "$n" "${args[@]}"
  wait_synced "$dir" "$n" 120 1
}

# find_positions DIR: sets POS[I] (UUID:SEQNO or ""), SEQ[I] (-1 when
# unknown) for I = 1..3, and BEST: the node with the highest seqno (the
# lowest number on a tie). Every node must be down.
POS=(); SEQ=(); BEST=0
find_positions() {
  local dir=$1 n bs=-2
  for n in 1 2 3; do
    POS[n]=$(recovered_pos "$dir" "$n")
    SEQ[n]=${POS[n]##*:}; SEQ[n]=${SEQ[n]:--1}
    if [ "${SEQ[n]}" -gt "$bs" ]; then BEST=$n; bs=${SEQ[n]}; fi
  done
}

# state_transfer DIR I: how node I got its state in its last start:
# "SST" (a full copy, possibly followed by an IST of the rest), "IST", or
# "no transfer". (With rsync an IST too is logged as "SST received".)
state_transfer() {
  awk '/WSREP: Found saved state/ { sst = 0; ist = 0 }
       /SST completed on joiner/ { sst = 1 }
       /IST completed on joiner|WSREP: IST received/ { ist = 1 }
       END { print sst ? "SST" : ist ? "IST" : "no transfer" }' "$1/n$2/server.log" 2>/dev/null
}

any_running() {  # any_running DIR [EXCEPT]: 0 when a node (not EXCEPT) runs
  local n
  for n in 1 2 3; do
    [ "$n" = "${2:-}" ] && continue
    node_pid "$1" "$n" >/dev/null && return 0
  done
  return 1
}

start_node() {   # start_node DIR I
  local dir=$1 n=$2 t0 pos
  [ -f "$dir/n$n/my.cnf" ] || die "no node $n in $dir (run start first)"
  need_net "$dir"
  node_pid "$dir" "$n" >/dev/null && die "node $n already runs"
  kill_sst_helpers "$dir" "$n"
  t0=$(ms_now)
  if any_running "$dir" "$n"; then
    primary_running "$dir" ||
      die "the running nodes are all non-Primary, so node $n could not join: first run '$0 bootstrap $dir J' on the running node J with the highest last committed seqno ($(last_committed "$dir"))"
    pos=$(crash_pos "$dir" "$n")
    # shellcheck disable=SC2086 # pos is one word or none
    run_node "$dir" "$n" $pos
    wait_synced "$dir" "$n" 120
    echo "galera_net: node $n rejoined by $(state_transfer "$dir" "$n") (Synced, cluster size $(wsrep "$dir" "$n" wsrep_cluster_size)) in $(( $(ms_now) - t0 )) ms"
    return
  fi
  find_positions "$dir"
  if [ "${SEQ[n]}" -lt "${SEQ[BEST]}" ]; then
    die "no node runs, and node $n (seqno ${SEQ[n]}) is behind node $BEST (seqno ${SEQ[BEST]}): start node $BEST first, or run '$0 recover $dir'"
  fi
  bootstrap_node "$dir" "$n" "${POS[n]}"
  echo "galera_net: no node ran; node $n (position ${POS[n]:-unknown}; seqnos ${SEQ[1]} ${SEQ[2]} ${SEQ[3]}) bootstrapped a new primary component in $(( $(ms_now) - t0 )) ms"
}

# primary_running DIR: 0 when a running node is in a primary component.
primary_running() {
  local n
  for n in 1 2 3; do
    node_pid "$1" "$n" >/dev/null || continue
    [ "$(wsrep "$1" "$n" wsrep_cluster_status)" = Primary ] && return 0
  done
  return 1
}

# last_committed DIR: "node I: S" for each running node.
last_committed() {
  local n out=""
  for n in 1 2 3; do
    node_pid "$1" "$n" >/dev/null || continue
    out+="${out:+, }node $n: $(wsrep "$1" "$n" wsrep_last_committed)"
  done
  echo "$out"
}

bootstrap_running() { # bootstrap_running DIR I
  local dir=$1 n=$2 t0
  node_pid "$dir" "$n" >/dev/null || die "node $n does not run in $dir"
  t0=$(ms_now)
  echo "galera_net: last committed seqnos: $(last_committed "$dir")"
  sql "$dir" "$n" "SET GLOBAL wsrep_provider_options='pc.bootstrap=YES'"
  wait_synced "$dir" "$n" 60
  echo "galera_net: node $n is Primary again (cluster size $(wsrep "$dir" "$n" wsrep_cluster_size)) in $(( $(ms_now) - t0 )) ms"
}

recover() {      # recover DIR
  local dir=$1 n t0 size=1 args
  need_net "$dir"
  any_running "$dir" && die "a node still runs: recover is for a cluster whose every node is down (kill the others first, or use start-node)"
  t0=$(ms_now)
  for n in 1 2 3; do kill_sst_helpers "$dir" "$n"; done
  find_positions "$dir"
  echo "galera_net: recovered seqnos: node 1 ${SEQ[1]}, node 2 ${SEQ[2]}, node 3 ${SEQ[3]}; bootstrapping node $BEST from ${POS[BEST]:-an unknown position} ($(( $(ms_now) - t0 )) ms)"
  bootstrap_node "$dir" "$BEST" "${POS[BEST]}"
  for n in 1 2 3; do
    [ "$n" = "$BEST" ] && continue
    size=$((size + 1))
    args=()
    [ -z "${POS[n]}" ] || args=("--wsrep-start-position=${POS[n]}")
    run_node "$dir" "$n" "${args[@]}"
    wait_synced "$dir" "$n" 120 "$size"
    echo "galera_net: node $n joined by $(state_transfer "$dir" "$n")"
  done
  echo "galera_net: cluster recovered from node $BEST, 3 nodes Synced in $(( $(ms_now) - t0 )) ms"
}

pause_node() {   # pause_node DIR I STOP|CONT
  local pid
  pid=$(node_pid "$1" "$2") || die "node $2 does not run in $1"
  kill "-$3" "$pid"
  echo "galera_net: node $2 (pid $pid) SIG$3"
}

stop_cluster() { # stop_cluster DIR
  local dir=$1 n pid t0
  t0=$(ms_now)
  # Healed first, so that the nodes leave the cluster in good order.
  if ns_exists "$(ns "$dir" 1)" && ns_exists "$(ns "$dir" 2)" && ns_exists "$(ns "$dir" 3)"; then
    heal "$dir" >/dev/null 2>&1 || true
  fi
  for n in 3 2 1; do
    if pid=$(node_pid "$dir" "$n"); then
      kill -CONT "$pid" 2>/dev/null || true
      stop_pid "$pid" TERM 30 "galera_net.sh: node $n" || true
    fi
    rm -f "$dir/n$n/mariadbd.pid"
    kill_sst_helpers "$dir" "$n"
  done
  teardown_net "$dir"
  echo "galera_net: stopped in $(( $(ms_now) - t0 )) ms"
}

status() {       # status DIR
  local dir=$1 n pid
  for n in 1 2 3; do
    if ! pid=$(node_pid "$dir" "$n"); then
      printf 'node %d (%s): down\n' "$n" "$(addr "$n")"
    elif paused "$pid"; then
      printf 'node %d (%s): pid %s, paused (SIGSTOP)\n' "$n" "$(addr "$n")" "$pid"
    else
      local st
      st=$(sql "$dir" "$n" "SHOW GLOBAL STATUS WHERE Variable_name IN ('wsrep_ready', 'wsrep_local_state_comment', 'wsrep_cluster_size', 'wsrep_cluster_status', 'wsrep_last_committed')" 2>/dev/null || true)
      v() { awk -v k="$1" '$1 == k { print $2 }' <<<"$st"; }
      printf 'node %d (%s): pid %s, cluster size %s, %s, %s, ready %s, last committed %s\n' \
        "$n" "$(addr "$n")" "$pid" "$(v wsrep_cluster_size)" \
        "$(v wsrep_cluster_status)" "$(v wsrep_local_state_comment)" "$(v wsrep_ready)" \
        "$(v wsrep_last_committed)"
    fi
  done
  if ns_exists "$(ns "$dir" 1)"; then echo "cut links: $(cut_links "$dir")"; else echo "no network (namespaces absent)"; fi
}

node_arg() {
  case "${1:-}" in 1|2|3) ;; *) die "the node is 1, 2 or 3, not '${1:-}'" ;; esac
}

usage() {
  echo "usage: galera_net.sh start DIR [--jepsen|--safe] | stop|status|heal|recover DIR |" \
       "partition DIR SPEC | kill DIR I [J...] | start-node|bootstrap|pause|resume|isolate-client DIR I |" \
       "wait DIR I [SECONDS [SIZE]] | sql DIR I STATEMENTS" >&2
  exit 64
}

cmd=${1:-}; [ $# -gt 0 ] && shift
mode=default
args=()
for a in "$@"; do
  case $a in
    --jepsen) mode=jepsen ;;
    --safe) mode=safe ;;
    --default) mode=default ;;
    --*) usage ;;
    *) args+=("$a") ;;
  esac
done
[ ${#args[@]} -ge 1 ] || usage
# DIR may be relative (abs_path, scripts/lib.sh); no trailing slash, so
# that one directory always gives the same names.
dir=$(abs_path "${args[0]}"); while [ "${dir%/}" != "$dir" ] && [ "$dir" != / ]; do dir=${dir%/}; done
[ "$(id -u)" -eq 0 ] || die "needs root (network namespaces)"
case $cmd in
  start)
    # In a process of its own, where set -e applies (it does not in a
    # function on the left of ||: a failed step would go unnoticed).
    "$SELF" _start "$dir" "--$mode" || { echo "galera_net.sh: start failed; stopping what started" >&2; stop_cluster "$dir"; exit 1; }
    ;;
  _start) start_cluster "$dir" "$mode" ;;
  stop) stop_cluster "$dir" ;;
  status) status "$dir" ;;
  partition)
    [ ${#args[@]} -eq 2 ] || usage
    partition "$dir" "${args[1]}" ;;
  heal) heal "$dir" ;;
  isolate-client)
    node_arg "${args[1]:-}"; isolate_client "$dir" "${args[1]}" ;;
  kill)
    [ ${#args[@]} -ge 2 ] || usage
    for n in "${args[@]:1}"; do node_arg "$n"; done
    kill_nodes "$dir" "${args[@]:1}" ;;
  start-node)
    node_arg "${args[1]:-}"; start_node "$dir" "${args[1]}" ;;
  recover) recover "$dir" ;;
  bootstrap)
    node_arg "${args[1]:-}"; bootstrap_running "$dir" "${args[1]}" ;;
  pause)
    node_arg "${args[1]:-}"; pause_node "$dir" "${args[1]}" STOP ;;
  resume)
    node_arg "${args[1]:-}"; pause_node "$dir" "${args[1]}" CONT ;;
  wait)
    node_arg "${args[1]:-}"
    wait_synced "$dir" "${args[1]}" "${args[2]:-120}" "${args[3]:-}"
    echo "galera_net: node ${args[1]} is Synced (cluster size $(wsrep "$dir" "${args[1]}" wsrep_cluster_size))" ;;
  sql)
    node_arg "${args[1]:-}"
    [ ${#args[@]} -ge 3 ] || usage
    client_sql "$dir" "${args[1]}" "${args[*]:2}" ;;
  *) usage ;;
esac
