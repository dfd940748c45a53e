/*
 * mysql.c -- the MySQL and MariaDB driver (URL schemes mysql: and mariadb:).
 *
 * The driver is built against the MySQL C API as MariaDB Connector/C and
 * Oracle's libmysqlclient both provide it. Its SQL stays within what
 * MySQL 8.0 also runs (DESIGN D4): there is no RETURNING and there are no
 * sequences, so the driver declares no SQLLOCK_CAP_RETURNING and the core
 * takes its declared branch for acquire: the insert-or-takeover statement
 * in a transaction, then a token from an AUTO_INCREMENT counter
 * (TOKEN_NEXT) stored into the row just taken (LEASE_SET_TOKEN), then
 * commit (see sqllock_driver.h).
 *
 * Each session runs with the time zone set to UTC, so that NOW(6) and the
 * DATETIME(6) columns are UTC and no daylight-saving jump can move an
 * expiry, with READ COMMITTED isolation, so that the insert path takes no
 * gap locks, and with autocommit on, so that a statement the core runs
 * outside its own transaction commits by itself; a session found inside a
 * transaction after such a statement fails it with SQLLOCK_EPROXY (DESIGN
 * C2, sqllock__my_check_committed() in my_txn.c). Automatic reconnection
 * stays off: a silent
 * reconnect could run a statement again whose effect is unknown; the core
 * reconnects on the next call instead, after the driver reports
 * SQLLOCK_ECONNECT.
 *
 * The URL takes MySQL's TLS settings (ssl_mode, ssl_ca, ssl_capath,
 * ssl_cert, ssl_key, ssl_cipher, ssl_crl, ssl_crlpath) and an option file
 * (option_file, option_group; my_optfile.c reads it) for the login and the
 * TLS settings; the URL's own values win over the file's.
 */
#include "my.h"

static const char *const my_schemes[] = { "mysql", "mariadb", NULL };

const sqllock_driver sqllock__mysql_driver = {
    .version = SQLLOCK_DRIVER_VERSION,
    .name = "mysql",
    .schemes = my_schemes,
    .caps = SQLLOCK_CAP_SKIP_LOCKED | SQLLOCK_CAP_NOWAIT,
    .dialect = &sqllock__my_dialect,
    .connect = sqllock__my_connect,
    .disconnect = sqllock__my_disconnect,
    .prepare = sqllock__my_prepare,
    .finalize = sqllock__my_finalize,
    .execute = sqllock__my_execute,
    .fetch = sqllock__my_fetch,
    .column_int64 = sqllock__my_column_int64,
    .column_text = sqllock__my_column_text,
    .affected_rows = sqllock__my_affected_rows,
    .reset = sqllock__my_reset,
    .exec_script = sqllock__my_exec_script,
    .native = sqllock__my_native,
    .begin = sqllock__my_begin,
    .commit = sqllock__my_commit,
    .rollback = sqllock__my_rollback,
    .insert_id = sqllock__my_insert_id,
    .column_blob = sqllock__my_column_blob,
    .row_lock_scope = sqllock__my_row_lock_scope,
    .adopt = sqllock__my_adopt,
    .txn_status = sqllock__my_txn_status,
    .upgrade = sqllock__my_upgrade,
    .session_wake = sqllock__my_session_wake,
};
