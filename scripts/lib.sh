# Shared by the scripts in this folder: install missing Debian packages,
# CI detection, free ports, stopping a process. Sourced, not run.

# is_ci (scripts/ci.sh).
# shellcheck source=scripts/ci.sh
. "$(dirname "${BASH_SOURCE[0]}")/ci.sh"

# apt_waiting CMD...: runs an apt-get command; while another package
# manager (an unattended upgrade, another apt-get) holds the dpkg or the
# lists lock, waits for it -- apt's own wait (DPkg::Lock::Timeout), then
# tries again every 10 s -- for up to 10 minutes in all. Prints the
# command's output only when it fails.
apt_waiting() {
  local i out
  for i in $(seq 1 60); do
    if out=$("$@" 2>&1); then return 0; fi
    if ! grep -qiE "could not get lock|unable to acquire|is another process using it" <<<"$out"; then
      printf '%s\n' "$out" >&2
      return 1
    fi
    [ "$i" -gt 1 ] || echo "== waiting for another package manager to finish (the apt/dpkg lock is taken)"
    sleep 10
  done
  printf '%s\n' "$out" >&2
  return 1
}

# ensure_packages PKG...: installs the packages that are not installed yet,
# with apt-get (through sudo when not root), waiting for another package
# manager that holds the lock (apt_waiting). Does nothing when all are
# there.
ensure_packages() {
  local missing=() p
  for p in "$@"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
      missing+=("$p")
    fi
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "== installing: ${missing[*]}"
  local sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  apt_waiting $sudo apt-get -o DPkg::Lock::Timeout=60 update -qq
  apt_waiting $sudo env DEBIAN_FRONTEND=noninteractive apt-get \
    -o DPkg::Lock::Timeout=60 install -y -qq --no-install-recommends \
    "${missing[@]}"
}

# abs_path PATH: PATH made absolute against the current directory. The
# server scripts take their DIR through it: the servers run as other
# users, from other directories, and a restart must find the same DIR.
abs_path() {
  case $1 in
    /*) printf '%s\n' "$1" ;;
    *) printf '%s/%s\n' "$PWD" "$1" ;;
  esac
}

# The packages a build needs.
BUILD_PACKAGES=(build-essential cmake pkg-config libsqlite3-dev)

# as_user USER CMD...: run as USER when we are root (PostgreSQL refuses to
# run as root).
as_user() {   # as_user USER CMD...: run as USER when we are root
  local u=$1; shift
  if [ "$(id -u)" -eq 0 ]; then runuser -u "$u" -- "$@"; else "$@"; fi
}

# ms_now: the wall clock in milliseconds.
ms_now() { date +%s%3N; }

# port_free PORT: 0 when nothing listens on 127.0.0.1:PORT.
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
# pick_port VAR: a free port for the caller, unless VAR is set. It is
# taken below the kernel's range of ephemeral ports (32768-60999 by
# default): a server started later on a port from that range can find it
# taken by the local end of one of the thousands of client connections
# the tests make (seen: "could not bind ... Address already in use" for
# the standby of test_failover).
pick_port() {
  local var=$1 p i lo=32768 span
  if [ -n "${!var:-}" ]; then
    port_free "${!var}" || { echo "port ${!var} ($var) is taken" >&2; return 1; }
    echo "${!var}"; return 0
  fi
  if [ -r /proc/sys/net/ipv4/ip_local_port_range ]; then
    read -r lo _ < /proc/sys/net/ipv4/ip_local_port_range || lo=32768
  fi
  span=$(( lo - 10000 ))
  [ "$span" -ge 2000 ] || span=2000
  for i in $(seq 1 50); do
    p=$(( 10000 + RANDOM % span ))
    if port_free "$p"; then echo "$p"; return 0; fi
  done
  echo "no free port found for $var" >&2; return 1
}

# running PID: 0 while the process exists and is not a zombie (an exited
# server whose parent has not reaped it yet no longer holds its files).
running() {
  local state
  state=$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null) || return 1
  [ -n "$state" ] && [ "$state" != Z ] && [ "$state" != X ]
}

# stop_pid PID SIGNAL SECONDS [NAME]: sends SIGNAL to PID and waits up to
# SECONDS for it to end; if it has not, says so (naming NAME) and kills it
# with SIGKILL, waiting up to 10 s more. Returns 0 when it ended on
# SIGNAL (or was already gone), 1 when it had to be killed. The one stop
# of servers.sh, galera.sh, tls.sh and poolers.sh.
stop_pid() {
  local pid=$1 sig=$2 secs=$3 name=${4:-pid $1} i
  [ -n "$pid" ] || return 0
  running "$pid" || return 0
  kill "-$sig" "$pid" 2>/dev/null || return 0
  for i in $(seq 1 $(( secs * 20 ))); do running "$pid" || return 0; sleep 0.05; done
  echo "$name (pid $pid) did not stop within $secs s of SIG$sig; killing it" >&2
  kill -9 "$pid" 2>/dev/null || true
  for i in $(seq 1 200); do running "$pid" || break; sleep 0.05; done
  return 1
}
