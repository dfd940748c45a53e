/*
 * postgres.c -- the PostgreSQL driver (libpq).
 *
 * The URL goes to libpq (rebuilt from its parts, pg_url.c), so sslmode,
 * unix-socket hosts, target_session_attrs and the PG* environment
 * variables all work as libpq users expect. A host list is the core's:
 * it hands the driver one host at a time, with the URL's other
 * parameters (core/failover.c). Every statement is prepared once per
 * connection and executed as a prepared statement: an acquire, a renew
 * and a release are one round trip each (DESIGN D1b).
 *
 * Nothing blocks without a bound. The connect and every round trip use
 * libpq's asynchronous calls and wait in poll() until a deadline
 * (sqllock_options connect_timeout_ms, and statement_timeout_ms plus the
 * longest lock wait of the handle): a network that stalls keeps the
 * kernel acknowledging our bytes, so TCP keepalives and tcp_user_timeout
 * never fire, and only a client-side deadline ends the wait. After one
 * passes, the connection is given up (the core drops it and connects
 * again on the next call).
 */
#include "pg.h"

static const char *const pg_schemes[] = { "postgres", "postgresql",
                                                NULL };

const sqllock_driver sqllock__postgres_driver = {
    .version = SQLLOCK_DRIVER_VERSION,
    .name = "postgres",
    .schemes = pg_schemes,
    .caps = SQLLOCK_CAP_RETURNING | SQLLOCK_CAP_SKIP_LOCKED |
            SQLLOCK_CAP_NOWAIT | SQLLOCK_CAP_NOTIFY,
    .dialect = &sqllock__pg_dialect,
    .connect = sqllock__pg_connect,
    .disconnect = sqllock__pg_disconnect,
    .prepare = sqllock__pg_prepare,
    .finalize = sqllock__pg_finalize,
    .execute = sqllock__pg_execute,
    .fetch = sqllock__pg_fetch,
    .column_int64 = sqllock__pg_column_int64,
    .column_text = sqllock__pg_column_text,
    .affected_rows = sqllock__pg_affected_rows,
    .reset = sqllock__pg_reset,
    .exec_script = sqllock__pg_exec_script,
    .native = sqllock__pg_native,
    .begin = sqllock__pg_begin,
    .commit = sqllock__pg_commit,
    .rollback = sqllock__pg_rollback,
    .insert_id = sqllock__pg_insert_id,
    .column_blob = sqllock__pg_column_blob,
    .listen = sqllock__pg_listen,
    .wait_notify = sqllock__pg_wait_notify,
    .adopt = sqllock__pg_adopt,
    .txn_status = sqllock__pg_txn_status,
    .upgrade = sqllock__pg_upgrade,
    .execute_txn = sqllock__pg_execute_txn,
};