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
