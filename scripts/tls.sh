#!/usr/bin/env bash
# Throwaway PostgreSQL and MariaDB servers with TLS, on loopback, in one
# directory, for tests/test_tls.c and tests/test_autocommit.c (issue 14).
# They are separate from the main test servers (scripts/servers.sh): own
# data directories, ports and configuration files.
#
#   scripts/tls.sh start DIR   make a test CA and certificates in DIR/certs
#                              (openssl), start PostgreSQL (DIR/pg) and
#                              MariaDB (DIR/my) with TLS, create their users
#                              and databases, and write DIR/env
#   scripts/tls.sh stop DIR    stop both (safe to call twice, or after a
#                              failed start)
#
# DIR/certs, made afresh by each start (EC P-256 keys, valid 2 days):
#   ca.crt, ca.key             the test CA
#   other-ca.crt               a second CA, which signed none of these
#   server.crt, server.key     the servers' certificate, signed by ca.crt,
#                              for DNS:localhost and IP:127.0.0.1 only
#   client.crt, client.key     a client certificate signed by ca.crt, CN
#                              sqllock_cert
# Both servers listen on 127.0.0.1 and on 127.0.0.2, a loopback address
# the certificate does not name: connecting to 127.0.0.2 is connecting
# under a wrong host name (no second server or certificate needed).
#
# PostgreSQL listens on port $SQLLOCK_TLS_PG_PORT and a unix socket in
# DIR/pg, with ssl = on (shared_buffers 16MB, fsync off: a test server).
# Role `sqllock` (password `sqllock-test`) owns database `sqllock_test`;
# role `sqllock_cert` logs in over TLS with the client certificate only
# (pg_hba `hostssl ... cert`). The superuser `postgres` is trusted on the
# unix socket.
#
# MariaDB listens on port $SQLLOCK_TLS_MY_PORT and DIR/my/sock, with
# ssl-ca, ssl-cert and ssl-key, and, for test_autocommit, with autocommit
# off for every session: autocommit=0 and init_connect='SET autocommit=0'
# (which applies to users without SUPER). Users, each with all rights on
# database `sqllock_test`:
#   sqllock       password sqllock-test     no TLS required
#   sqllock_tls   password sqllock-tls-Pw3  REQUIRE SSL
#   sqllock_cert  password sqllock-cert-Pw5 REQUIRE X509 (client.crt)
# root is trusted on the unix socket (unix_socket authentication).
#
# The ports (default: free ones picked at random) must be free. DIR/env
# holds SQLLOCK_TEST_TLS_PG_PORT, SQLLOCK_TEST_TLS_MY_PORT,
# SQLLOCK_TEST_TLS_CERTS, SQLLOCK_TEST_TLS_PG_ADMIN ('PG_BIN;SOCKET_DIR;
# PORT') and SQLLOCK_TEST_TLS_MY_ADMIN (the socket). A start takes about
# 3 s; each instance's time is printed. Every wait is bounded (30 s).
#
# Needs openssl, postgresql and mariadb-server. As root the servers run as
# the `postgres` and `mysql` users that Debian's packages create.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"

PG_BIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
PASSWORD=sqllock-test
TLS_PASSWORD=sqllock-tls-Pw3
CERT_PASSWORD=sqllock-cert-Pw5

die() { echo "tls.sh: $*" >&2; exit 1; }


# own FILE... USER: hand files to the server's user when we are root.
own() {
  local u=${*: -1}
  [ "$(id -u)" -eq 0 ] && chown "$u": "${@:1:$#-1}"
  return 0
}

# key OUT: a new EC P-256 private key.
key() {
  openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null
}

# ca NAME CN: a self-signed CA certificate NAME.crt with key NAME.key.
ca() {
  key "$1.key"
  openssl req -new -x509 -key "$1.key" -out "$1.crt" -days 2 -subj "/CN=$2" \
    -config "$certs/req.cnf" -extensions v3_ca 2>/dev/null
}

# leaf NAME CN EXT: a certificate NAME.crt (key NAME.key) signed by ca.crt
# with the extensions of section EXT of req.cnf.
leaf() {
  key "$1.key"
  openssl req -new -key "$1.key" -out "$1.csr" -subj "/CN=$2" \
    -config "$certs/req.cnf" 2>/dev/null
  openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial \
    -out "$1.crt" -days 2 -extfile "$certs/req.cnf" -extensions "$3" 2>/dev/null
  rm -f "$1.csr"
}

make_certs() {
  certs=$1/certs
  rm -rf "$certs"; mkdir -p "$certs"
  cat > "$certs/req.cnf" <<'CNF'
[req]
distinguished_name = dn
[dn]
[v3_ca]
basicConstraints = critical, CA:TRUE
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
[server]
basicConstraints = CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = serverAuth
subjectAltName = DNS:localhost, IP:127.0.0.1
[client]
basicConstraints = CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = clientAuth
CNF
  (
    cd "$certs"
    ca ca "sqllock test CA"
    ca other-ca "sqllock other CA"
    leaf server localhost server
    leaf client sqllock_cert client
    rm -f other-ca.key ca.srl
    chmod 644 ./*.crt; chmod 600 ./*.key
  ) || die "openssl failed to make the test certificates"
  chmod 755 "$certs"
}

start_pg() {
  local dir=$1/pg port=$2
  mkdir -p "$dir"; own "$dir" postgres
  printf '%s\n' "$PASSWORD" > "$1/pgpass.tmp"; chmod 644 "$1/pgpass.tmp"
  as_user postgres "$PG_BIN/initdb" -D "$dir/data" -U postgres \
    --auth-local=trust --auth-host=scram-sha-256 --pwfile="$1/pgpass.tmp" \
    -E UTF8 --locale=C.UTF-8 --no-sync >"$dir/initdb.log" 2>&1 \
    || { rm -f "$1/pgpass.tmp"; cat "$dir/initdb.log" >&2; return 1; }
  rm -f "$1/pgpass.tmp"
  cp "$1/certs/server.crt" "$1/certs/server.key" "$1/certs/ca.crt" "$dir/data/"
  own "$dir/data/server.crt" "$dir/data/server.key" "$dir/data/ca.crt" postgres
  chmod 600 "$dir/data/server.key"
  echo "$port" > "$dir/port"
  cat >> "$dir/data/postgresql.conf" <<CONF

# scripts/tls.sh
port = $port
listen_addresses = '127.0.0.1,127.0.0.2'
unix_socket_directories = '$dir'
max_connections = 30
shared_buffers = 16MB
fsync = off
synchronous_commit = off
full_page_writes = off
ssl = on
ssl_cert_file = 'server.crt'
ssl_key_file = 'server.key'
ssl_ca_file = 'ca.crt'
CONF
  cat > "$dir/data/pg_hba.conf" <<HBA
local   all  all                        trust
hostssl all  sqllock_cert 127.0.0.1/32  cert
hostssl all  sqllock_cert 127.0.0.2/32  cert
host    all  all          127.0.0.1/32  scram-sha-256
host    all  all          127.0.0.2/32  scram-sha-256
HBA
  as_user postgres "$PG_BIN/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 30 \
    start >/dev/null || { cat "$dir/server.log" >&2; return 1; }
  as_user postgres "$PG_BIN/psql" -X -q -h "$dir" -p "$port" -U postgres -d postgres \
    -v ON_ERROR_STOP=1 \
    -c "CREATE ROLE sqllock LOGIN PASSWORD '$PASSWORD'" \
    -c "CREATE ROLE sqllock_cert LOGIN" \
    -c "CREATE DATABASE sqllock_test OWNER sqllock" >/dev/null
}

start_my() {
  local dir=$1/my port=$2 user_opt=() i
  # tmpdir of its own: see servers.sh's start_my.
  mkdir -p "$dir/tmp"; own "$dir" mysql; own "$dir/tmp" mysql
  [ "$(id -u)" -eq 0 ] && user_opt=(--user=mysql)
  cp "$1/certs/server.crt" "$1/certs/server.key" "$dir/"
  own "$dir/server.crt" "$dir/server.key" mysql
  chmod 600 "$dir/server.key"
  echo "$port" > "$dir/port"
  # The whole configuration is this file (--defaults-file), so neither
  # /etc/mysql nor ~/.my.cnf reach the server.
  cat > "$dir/my.cnf" <<CNF
[mariadbd]
datadir = $dir/data
tmpdir = $dir/tmp
socket = $dir/sock
port = $port
bind-address = 127.0.0.1,127.0.0.2
pid-file = $dir/mariadbd.pid
log-error = $dir/server.log
skip-name-resolve
max-connections = 50
performance-schema = OFF
innodb-buffer-pool-size = 16M
# 1: the library refuses a server that acknowledges commits before they
# are on disk (DESIGN L10; the URL's innodb_flush=any accepts one).
innodb-flush-log-at-trx-commit = 1
innodb-doublewrite = 0
ssl-ca = $1/certs/ca.crt
ssl-cert = $dir/server.crt
ssl-key = $dir/server.key
autocommit = 0
init-connect = 'SET autocommit=0'
CNF
  # The system tables are made without this file: with its autocommit=0
  # the bootstrap would commit nothing.
  mariadb-install-db --no-defaults "${user_opt[@]}" --datadir="$dir/data" \
    --tmpdir="$dir/tmp" \
    --auth-root-authentication-method=socket --skip-test-db \
    >"$dir/install.log" 2>&1 || { cat "$dir/install.log" >&2; return 1; }
  mariadbd --defaults-file="$dir/my.cnf" "${user_opt[@]}" >/dev/null 2>&1 </dev/null &
  for i in $(seq 1 300); do
    if mariadb-admin --no-defaults -S "$dir/sock" -u "$(id -un)" ping >/dev/null 2>&1; then
      break
    fi
    [ "$i" -eq 300 ] && { echo "tls.sh: MariaDB did not start in 30 s" >&2; cat "$dir/server.log" >&2; return 1; }
    sleep 0.1
  done
  local h sql="SET autocommit = 1; CREATE DATABASE sqllock_test;"
  for h in 127.0.0.1 127.0.0.2 localhost; do
    sql="$sql
      CREATE USER 'sqllock'@'$h' IDENTIFIED BY '$PASSWORD';
      CREATE USER 'sqllock_tls'@'$h' IDENTIFIED BY '$TLS_PASSWORD' REQUIRE SSL;
      CREATE USER 'sqllock_cert'@'$h' IDENTIFIED BY '$CERT_PASSWORD' REQUIRE X509;
      GRANT ALL ON sqllock_test.* TO 'sqllock'@'$h';
      GRANT ALL ON sqllock_test.* TO 'sqllock_tls'@'$h';
      GRANT ALL ON sqllock_test.* TO 'sqllock_cert'@'$h';"
  done
  mariadb --no-defaults -S "$dir/sock" -u "$(id -un)" -e "$sql" \
    || { cat "$dir/server.log" >&2; return 1; }
}


stop_all() {
  local dir=$1
  if [ -f "$dir/pg/data/postmaster.pid" ]; then
    as_user postgres "$PG_BIN/pg_ctl" -D "$dir/pg/data" -m fast -w -t 30 stop >/dev/null 2>&1 || true
  fi
  if [ -f "$dir/my/mariadbd.pid" ]; then
    stop_pid "$(cat "$dir/my/mariadbd.pid")" TERM 30 "tls.sh: MariaDB" || true
    rm -f "$dir/my/mariadbd.pid"
  fi
}

# DIR may be relative (abs_path, scripts/lib.sh).
[ -z "${2:-}" ] || set -- "$1" "$(abs_path "$2")" "${@:3}"
case "${1:-}" in
  start)
    dir=${2:?usage: tls.sh start DIR}
    command -v openssl >/dev/null || die "openssl is not installed"
    [ -n "$PG_BIN" ] || die "PostgreSQL server binaries not found"
    command -v mariadbd >/dev/null || die "mariadbd is not installed"
    pg_port=$(pick_port SQLLOCK_TLS_PG_PORT) || exit 1
    my_port=$(pick_port SQLLOCK_TLS_MY_PORT) || exit 1
    while [ "$my_port" = "$pg_port" ]; do my_port=$(SQLLOCK_TLS_MY_PORT='' pick_port SQLLOCK_TLS_MY_PORT); done
    if [ -f "$dir/pg/data/postmaster.pid" ] || [ -f "$dir/my/mariadbd.pid" ]; then
      die "servers may still run in $dir: run 'tls.sh stop $dir' first"
    fi
    rm -rf "$dir/pg" "$dir/my" "$dir/env"
    mkdir -p "$dir"; chmod 755 "$dir"
    t0=$(ms_now)
    make_certs "$dir"
    t1=$(ms_now)
    start_pg "$dir" "$pg_port"
    t2=$(ms_now)
    start_my "$dir" "$my_port"
    t3=$(ms_now)
    cat > "$dir/env" <<ENV
SQLLOCK_TEST_TLS_PG_PORT='$pg_port'
SQLLOCK_TEST_TLS_MY_PORT='$my_port'
SQLLOCK_TEST_TLS_CERTS='$dir/certs'
SQLLOCK_TEST_TLS_PG_ADMIN='$PG_BIN;$dir/pg;$pg_port'
SQLLOCK_TEST_TLS_MY_ADMIN='$dir/my/sock'
ENV
    echo "tls servers: PostgreSQL on 127.0.0.1:$pg_port, MariaDB on 127.0.0.1:$my_port (in $dir); certificates $((t1 - t0)) ms, PostgreSQL $((t2 - t1)) ms, MariaDB $((t3 - t2)) ms"
    ;;
  stop)
    stop_all "${2:?usage: tls.sh stop DIR}"
    ;;
  *)
    echo "usage: tls.sh start|stop DIR" >&2; exit 64 ;;
esac
