# Shared by the scripts in this folder: install missing Debian packages.
# Sourced, not run.

# ensure_packages PKG...: installs the packages that are not installed yet,
# with apt-get (through sudo when not root). Does nothing when all are there.
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
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# The packages a build needs.
BUILD_PACKAGES=(build-essential cmake pkg-config libsqlite3-dev)

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
