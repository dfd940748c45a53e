/*
 * bench_drivers.c -- uncontended lease acquire+release on every driver,
 * against a floor, the library's own SQL sent by hand, and the database's
 * own session lock.
 *
 *   bench_drivers [--seconds N] [--quick] [--reps N] [--clients 1,8]
 *                 [--csv FILE] [--results FILE] [--no-wakeup] [--fast]
 *                 [--release-compare | --optimistic]
 *                 [--only SCENARIO] [--smoke] URL...
 *
 *   e.g. bench_drivers --results results.csv sqlite:///tmp/bench.db \
 *            postgres://user:pw@127.0.0.1:5432/db mysql://user:pw@host/db
 *
 * For each URL and each client count it measures acquire+release PAIRS per
 * second, and the p50 and p99 latency of one pair, in four scenarios
 * (three on SQLite):
 *
 *   floor     what any client pays for two statements on this kind of
 *             connection: two prepared `SELECT 1` (PostgreSQL, MySQL), or,
 *             on SQLite, where a SELECT commits nothing, two bare durable
 *             write transactions (an UPDATE of one row, twice, with the
 *             pragmas sqllock sets: WAL, synchronous=FULL);
 *   by hand   the exact statements the library runs, read at run time
 *             from the registered driver's dialect (bench_util.c bu_sql(),
 *             never a copy), prepared once with the database's own client
 *             API and run with the same parameters (a fresh random owner
 *             per acquire, then the release);
 *   sqllock   sqllock_lease_try_acquire() + sqllock_lease_release();
 *   native lock  the database's own session lock, sent by hand on the same
 *             connection, prepared once: PostgreSQL `SELECT
 *             pg_advisory_lock($1)` + `SELECT pg_advisory_unlock($1)` on a
 *             bigint key per client, MySQL/MariaDB `SELECT GET_LOCK(?, 10)`
 *             + `SELECT RELEASE_LOCK(?)` on a name per client. The unlock
 *             (PostgreSQL) or both calls (MySQL) must return true/1, or the
 *             run aborts. SQLite has no such lock: no row there.
 *
 * Every client is a thread with one connection of its own: the library's
 * handle, whose native connection (sqllock_db_native()) also runs the
 * floor, the by-hand statements and the native lock, so all scenarios share
 * the session settings the driver made. Each client locks its own name (or
 * key): there is no contention between clients (on SQLite the clients
 * still share the file's one write lock). Each point runs for a fixed time,
 * repeated (3 times by default, the scenarios in a rotating order), and the
 * table shows the median of each figure.
 *
 * --optimistic measures row locks and the optimistic versioned updates
 * instead, on an application table bench_inv_<pid>(id, qty, version) that
 * it creates (1000 rows, qty 10^12) and drops: decrements of qty as
 *
 *   FOR UPDATE  sqllock_txn_begin() + sqllock_txn_lock_rows(WAIT) on the
 *             row, then on the transaction's own connection (prepared
 *             once, by hand) SELECT qty and UPDATE qty = read - 1,
 *             version + 1, then sqllock_txn_commit(); a retryable status
 *             rolls back and starts again at once;
 *   CAS       sqllock_table_get() + sqllock_table_cas(qty - 1 if qty >= 1),
 *             retried at once on SQLLOCK_CONFLICT; one completed decrement
 *             is one transaction, and the table shows the conflicts per
 *             transaction;
 *   UPDATE    sqllock_table_update(qty - 1 WHERE qty >= 1), one statement;
 *
 * on one hot row (every client on id 1) and on a random id in 1..1000 per
 * transaction, against the same floor.
 *
 * --release-compare answers one question on PostgreSQL instead: how fast
 * is a pair, by hand, when the release commits asynchronously (the
 * library's set_config('synchronous_commit', 'off', true)) and when it is a
 * plain DELETE; with the server's WAL syncs per pair from pg_stat_wal.
 *
 * Beside each row, "client CPU" is this process's user+system CPU time per
 * pair (all clients' threads, warm-up included): what the client side
 * costs. It depends less on the server than the rates do, but a busy
 * machine still inflates it (cache misses, a slower scheduler).
 *
 * --csv FILE writes this program's own columns (one header, one layout per
 * mode). --results FILE appends the rows to FILE in the common format of
 * bench/README.md (the header only when FILE is empty or new), suite
 *
 *   uncontended  the default run: scenarios `floor`, `by hand`, `sqllock`
 *             (`sqllock, no wake-up` with --no-wakeup), `native lock`;
 *             value = client CPU per pair;
 *   fast      the same with --fast: the library's leases in fast mode
 *             (SQLLOCK_LEASE_FAST, PostgreSQL only), scenario `sqllock,
 *             fast mode`, beside the durable by-hand SQL and the floor;
 *   rowlock, optimistic  --optimistic: the FOR UPDATE rows, and the CAS
 *             and conditional UPDATE rows, each suite with the floor's row;
 *             rows = 1 (the hot row) or 1000; value = conflicts per
 *             transaction (CAS) or client CPU per transaction;
 *   release   --release-compare; value = WAL syncs per pair;
 *
 * with ratio = ops_per_s / that of `vs`: the floor (release: the plain
 * DELETE), measured in the same run with the same clients.
 *
 * This is a measuring program, not a test. Any failed call aborts the run
 * with a message. The lock names are "sqllock-bench:<pid>:<client>"; the
 * rows they leave (MySQL's per-name token rows, SQLite's floor table) are
 * removed at the end.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sqllock.h>
#include <sqllock_driver.h>

#include "bench_util.h"

#if defined(SQLLOCK_HAVE_SQLITE)
#include <sqlite3.h>
#endif
#if defined(SQLLOCK_HAVE_POSTGRES)
#include <libpq-fe.h>
#endif
#if defined(SQLLOCK_HAVE_MYSQL)
#include <mysql.h>

/* MariaDB Connector/C and libmysqlclient before 8.0 spell the flag type
 * my_bool; MySQL 8.0's client uses bool (as drivers/mysql/mysql.c). */
#if defined(MARIADB_PACKAGE_VERSION) || !defined(LIBMYSQL_VERSION_ID) || \
    LIBMYSQL_VERSION_ID < 80000
typedef my_bool bench_flag;
#else
#include <stdbool.h>
typedef bool bench_flag;
#endif
#endif

/* ------------------------------------------------------------------------ */
/* The SQL sent by hand                                                     */
/* ------------------------------------------------------------------------ */

/*
 * The library's statements are not copied here: bench_url() reads them
 * from the dialect the registered driver declares (bu_sql()), so "by
 * hand" is always the library's own SQL, and a driver whose placeholders
 * no longer bind in the order this program binds them stops the run (and
 * the smoke entries of ctest). The acquire of each driver is
 * SQLLOCK_SQL_LEASE_ACQUIRE, the release SQLLOCK_SQL_LEASE_RELEASE; MySQL
 * has no RETURNING, so core/lease.c acquire_in_transaction() runs BEGIN,
 * LEASE_ACQUIRE, TOKEN_NEXT, LEASE_SET_TOKEN, COMMIT there.
 */
static const char *g_sql_acquire;     /* 1 name, 2 owner, 3 holder, 4 ttl */
static const char *g_sql_release;     /* 1 name, 2 owner, 3 token [, 4] */
static const char *g_sql_token_next;  /* MySQL: 1 name */
static const char *g_sql_set_token;   /* MySQL: 3 token, 1 name, 2 owner */

/* The statements below are this program's own, stated once here. */
#if defined(SQLLOCK_HAVE_POSTGRES)
/* SQL_LEASE_RELEASE without the asynchronous commit and the notify, for
 * --release-compare. */
static const char PG_RELEASE_PLAIN[] =
    "DELETE FROM sqllock_lease "
    "WHERE name = $1 AND owner = $2 AND token = $3";
/* PostgreSQL's own session lock, for the native lock scenario ($1 a
 * bigint key). */
static const char PG_NATIVE_LOCK[] = "SELECT pg_advisory_lock($1)";
static const char PG_NATIVE_UNLOCK[] = "SELECT pg_advisory_unlock($1)";
#endif

#if defined(SQLLOCK_HAVE_MYSQL)
/* drivers/mysql/mysql.c mysql_begin_() (not a dialect statement);
 * mysql_commit_() is mysql_commit(). */
static const char MY_BEGIN[] = "START TRANSACTION";
/* MySQL's own named session lock, for the native lock scenario (the
 * name; a 10 s wait that never happens, the name being the client's
 * own). */
static const char MY_NATIVE_LOCK[] = "SELECT GET_LOCK(?, 10)";
static const char MY_NATIVE_UNLOCK[] = "SELECT RELEASE_LOCK(?)";
#endif

#if defined(SQLLOCK_HAVE_SQLITE)
/* The SQLite floor, one row per client. */
static const char SQ_FLOOR_TABLE[] =
    "CREATE TABLE IF NOT EXISTS sqllock_bench_floor "
    "(id INTEGER PRIMARY KEY, v INTEGER NOT NULL)";
static const char SQ_FLOOR[] =
    "UPDATE sqllock_bench_floor SET v = v + 1 WHERE id = ?1";
#endif

/* ------------------------------------------------------------------------ */
/* Clients                                                                  */
/* ------------------------------------------------------------------------ */

/* --optimistic: the application table (bench_inv_<pid>) while it exists. */
static char g_inv_table[64];

#define TTL_MS 30000
#define WARMUP_PAIRS 10
#define MAX_CLIENTS 64

typedef struct worker worker;
typedef int (*pair_fn)(worker *w);

struct worker {
    bu_client bc;                    /* first: bu_point_run()'s part */
    sqllock_db *db;
    sqllock_lease *lease;
    void *native;                    /* the handle's own connection */
    char name[96];
    char holder[64];
    char owner[SQLLOCK_OWNER_LEN + 1];
    long long token;
    long long ttl;
    char native_key[24];             /* PostgreSQL's advisory key, as text */
    /* --optimistic: the application table, how many of its rows the
     * transactions pick from (1: all on id 1), the generator that picks
     * them, and the conflicts and busy timeouts met in the measured part
     * of a run. */
    sqllock_table inv;
    int nrows;
    unsigned long long rng;
    long conflicts;
    long busy;
    /* --optimistic FOR UPDATE: reads qty of row fu_id and writes fu_qty
     * there, by hand on the transaction's connection (the driver part's
     * *_fu_rmw(), its statements prepared on first use). */
    int (*fu_rmw)(worker *w);
    long long fu_id, fu_qty;
    int fu_ready;
    /* The driver part's set-up, run again when the library has opened
     * the handle's connection anew (a row-lock transaction whose lock
     * wait is longer than the connection was opened for, core/db.c
     * grow_lock_wait()): the statements prepared by hand went with the
     * old session. */
    int (*setup)(worker *w);
    void (*teardown)(worker *w);
    /* The pair function of the point that runs. */
    pair_fn pair;
#if defined(SQLLOCK_HAVE_MYSQL)
    MYSQL_STMT *my_floor, *my_acq, *my_tok, *my_set, *my_rel;
    MYSQL_STMT *my_fu_read, *my_fu_write;
    MYSQL_STMT *my_nlock, *my_nunlock;
    MYSQL_BIND my_floor_res[1], my_acq_p[4], my_tok_p[1], my_set_p[3],
               my_rel_p[3], my_fu_read_p[1], my_fu_read_res[1],
               my_fu_write_p[2], my_native_p[1], my_native_res[1];
    long long my_floor_val;
    long long my_native_val;         /* GET_LOCK's or RELEASE_LOCK's result */
    bench_flag my_native_null;
    unsigned long name_len, owner_len, holder_len;
#endif
#if defined(SQLLOCK_HAVE_SQLITE)
    sqlite3_stmt *sq_floor, *sq_acq, *sq_rel;
    sqlite3_stmt *sq_fu_read, *sq_fu_write;
#endif
};

/* The FOR UPDATE scenario's two statements on bench_inv_<pid>, in the
 * driver's placeholder style: "SELECT qty ... WHERE id = ?" and "UPDATE
 * ... SET qty = ?, version = version + 1 WHERE id = ?". */
static void fu_sql(char *read, char *write, size_t n, int dollar)
{
    snprintf(read, n, "SELECT qty FROM %s WHERE id = %s", g_inv_table,
             dollar ? "$1" : "?");
    snprintf(write, n, "UPDATE %s SET qty = %s, version = version + 1 "
             "WHERE id = %s", g_inv_table, dollar ? "$1" : "?",
             dollar ? "$2" : "?");
}

/* The reason of a failed pair, into the client's bu_client; -1 (as
 * bench_util's bu_fail(), which also checks the format). */
#define wfail(w, ...) bu_fail(&(w)->bc, __VA_ARGS__)

/* A fresh owner id for the by-hand acquire, as the library makes it. */
static int new_owner(worker *w)
{
    if (bu_new_owner(w->owner) != 0)
        return wfail(w, "getrandom: %s", strerror(errno));
    return 0;
}

/* The library: one try-acquire and one release. */
static int lib_pair(worker *w)
{
    int rc = sqllock_lease_try_acquire(w->lease);

    if (rc != SQLLOCK_OK)
        return wfail(w, "sqllock_lease_try_acquire: %s: %s",
                     sqllock_errname(rc), sqllock_errmsg(w->db));
    rc = sqllock_lease_release(w->lease);
    if (rc != SQLLOCK_OK)
        return wfail(w, "sqllock_lease_release: %s: %s", sqllock_errname(rc),
                     sqllock_errmsg(w->db));
    return 0;
}

/* ------------------------------------------------------------------------ */
/* PostgreSQL                                                               */
/* ------------------------------------------------------------------------ */

#if defined(SQLLOCK_HAVE_POSTGRES)
/* A URL with pooler=transaction (issue 14): the library sends unnamed
 * statements there, and so do the floor and the by-hand statements, each
 * Parse + Bind + Execute + Sync in one round trip; the session's native
 * lock cannot work through a transaction pooler and is left out. */
static int g_pg_unnamed;

static const char PG_FLOOR[] = "SELECT 1";
static const char *const PG_FLOOR_P = PG_FLOOR;
static const char *const PG_RELEASE_PLAIN_P = PG_RELEASE_PLAIN;
static const char *const PG_NATIVE_LOCK_P = PG_NATIVE_LOCK;
static const char *const PG_NATIVE_UNLOCK_P = PG_NATIVE_UNLOCK;
static const struct { const char *name; const char *const *sql; } pg_stmts[] = {
    { "bench_floor", &PG_FLOOR_P },
    { "bench_acquire", &g_sql_acquire },
    { "bench_release", &g_sql_release },
    { "bench_release_plain", &PG_RELEASE_PLAIN_P },
    { "bench_native_lock", &PG_NATIVE_LOCK_P },
    { "bench_native_unlock", &PG_NATIVE_UNLOCK_P },
};

static PGresult *pg_run(worker *w, const char *stmt, int n,
                        const char *const *vals, ExecStatusType want)
{
    PGconn *pg = w->native;
    PGresult *r = NULL;
    size_t i;

    if (g_pg_unnamed) {
        for (i = 0; i < sizeof pg_stmts / sizeof pg_stmts[0]; i++)
            if (strcmp(pg_stmts[i].name, stmt) == 0)
                r = PQexecParams(pg, *pg_stmts[i].sql, n, NULL, vals, NULL,
                                 NULL, 0);
    } else {
        r = PQexecPrepared(pg, stmt, n, vals, NULL, NULL, 0);
    }

    if (r == NULL || PQresultStatus(r) != want) {
        wfail(w, "%s: %s", stmt, r != NULL ? PQresultErrorMessage(r)
                                           : PQerrorMessage(pg));
        PQclear(r);
        return NULL;
    }
    return r;
}

static int pg_prepare(worker *w, const char *stmt, const char *sql)
{
    PGresult *r = PQprepare(w->native, stmt, sql, 0, NULL);
    int ok = r != NULL && PQresultStatus(r) == PGRES_COMMAND_OK;

    if (!ok)
        wfail(w, "prepare %s: %s", stmt, r != NULL ? PQresultErrorMessage(r)
                                                   : PQerrorMessage(w->native));
    PQclear(r);
    return ok ? 0 : -1;
}

static int pg_setup(worker *w)
{
    if (g_pg_unnamed)
        return 0;
    if (pg_prepare(w, "bench_floor", "SELECT 1") != 0 ||
        pg_prepare(w, "bench_acquire", g_sql_acquire) != 0 ||
        pg_prepare(w, "bench_release", g_sql_release) != 0 ||
        pg_prepare(w, "bench_release_plain", PG_RELEASE_PLAIN) != 0 ||
        pg_prepare(w, "bench_native_lock", PG_NATIVE_LOCK) != 0 ||
        pg_prepare(w, "bench_native_unlock", PG_NATIVE_UNLOCK) != 0)
        return -1;
    return 0;
}

static int pg_floor_pair(worker *w)
{
    int i;

    for (i = 0; i < 2; i++) {
        PGresult *r = pg_run(w, "bench_floor", 0, NULL, PGRES_TUPLES_OK);
        if (r == NULL)
            return -1;
        if (PQntuples(r) != 1) {
            PQclear(r);
            return wfail(w, "SELECT 1 returned no row");
        }
        PQclear(r);
    }
    return 0;
}

static int pg_hand_pair_with(worker *w, const char *release)
{
    char ttl[24], token[24];
    const char *vals[4];
    PGresult *r;

    if (new_owner(w) != 0)
        return -1;
    snprintf(ttl, sizeof ttl, "%lld", w->ttl);
    vals[0] = w->name;
    vals[1] = w->owner;
    vals[2] = w->holder;
    vals[3] = ttl;
    r = pg_run(w, "bench_acquire", 4, vals, PGRES_TUPLES_OK);
    if (r == NULL)
        return -1;
    if (PQntuples(r) != 1) {
        PQclear(r);
        return wfail(w, "acquire by hand of '%s' returned no token (busy)",
                     w->name);
    }
    w->token = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
    PQclear(r);
    snprintf(token, sizeof token, "%lld", w->token);
    vals[2] = token;
    /* The library's release also notifies (a channel of the same shape
     * as the core's); the plain DELETE does not. */
    vals[3] = "sqllock_0123456789abcdef";
    if (strcmp(release, "bench_release") == 0)
        r = pg_run(w, release, 4, vals, PGRES_TUPLES_OK);
    else
        r = pg_run(w, release, 3, vals, PGRES_COMMAND_OK);
    if (r == NULL)
        return -1;
    if (strcmp(PQcmdTuples(r), "1") != 0) {
        PQclear(r);
        return wfail(w, "release by hand of '%s' deleted no row", w->name);
    }
    PQclear(r);
    return 0;
}

static int pg_hand_pair(worker *w)
{
    return pg_hand_pair_with(w, "bench_release");
}

static int pg_hand_pair_plain(worker *w)
{
    return pg_hand_pair_with(w, "bench_release_plain");
}

/* The native lock: pg_advisory_lock() returns void, so its check is the
 * one row every successful call returns; pg_advisory_unlock() must return
 * true (false: this session did not hold the key). */
static int pg_native_pair(worker *w)
{
    const char *vals[1] = { w->native_key };
    PGresult *r = pg_run(w, "bench_native_lock", 1, vals, PGRES_TUPLES_OK);

    if (r == NULL)
        return -1;
    if (PQntuples(r) != 1 || PQnfields(r) != 1) {
        wfail(w, "pg_advisory_lock(%s) returned %d rows of %d columns",
              w->native_key, PQntuples(r), PQnfields(r));
        PQclear(r);
        return -1;
    }
    PQclear(r);
    r = pg_run(w, "bench_native_unlock", 1, vals, PGRES_TUPLES_OK);
    if (r == NULL)
        return -1;
    if (PQntuples(r) != 1 || PQgetisnull(r, 0, 0) ||
        strcmp(PQgetvalue(r, 0, 0), "t") != 0) {
        wfail(w, "pg_advisory_unlock(%s) returned %s, not true",
              w->native_key, PQntuples(r) != 1 ? "no row"
              : PQgetisnull(r, 0, 0) ? "NULL" : PQgetvalue(r, 0, 0));
        PQclear(r);
        return -1;
    }
    PQclear(r);
    return 0;
}

/* FOR UPDATE: reads qty of w->fu_id into w->fu_qty, then writes
 * fu_qty - 1 there. */
static int pg_fu_rmw(worker *w)
{
    char read[160], write[160], id[24], qty[24];
    const char *vals[2];
    PGresult *r;

    if (!w->fu_ready) {
        fu_sql(read, write, sizeof read, 1);
        if (pg_prepare(w, "bench_fu_read", read) != 0 ||
            pg_prepare(w, "bench_fu_write", write) != 0)
            return -1;
        w->fu_ready = 1;
    }
    snprintf(id, sizeof id, "%lld", w->fu_id);
    vals[0] = id;
    r = pg_run(w, "bench_fu_read", 1, vals, PGRES_TUPLES_OK);
    if (r == NULL)
        return -1;
    if (PQntuples(r) != 1) {
        PQclear(r);
        return wfail(w, "row %lld: no such row", w->fu_id);
    }
    w->fu_qty = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
    PQclear(r);
    snprintf(qty, sizeof qty, "%lld", w->fu_qty - 1);
    vals[0] = qty;
    vals[1] = id;
    r = pg_run(w, "bench_fu_write", 2, vals, PGRES_COMMAND_OK);
    if (r == NULL)
        return -1;
    PQclear(r);
    return 0;
}

static void pg_teardown(worker *w)
{
    /* Prepared statements end with the session. */
}

static void pg_describe(worker *w, char *buf, size_t n)
{
    const char *v = PQparameterStatus(w->native, "server_version");
    const char *host = PQhost(w->native);
    size_t len = v != NULL ? strcspn(v, " ") : 0;

    snprintf(buf, n, "PostgreSQL %.*s, %s:%s%s", (int)len,
             v != NULL ? v : "?",
             host != NULL && host[0] != '\0' ? host : "local socket",
             PQport(w->native), g_pg_unnamed ? ", unnamed statements" : "");
}

/* Deletes what the bench may have left; returns the rows deleted. */
static long pg_cleanup(worker *w, const char *pattern)
{
    const char *vals[1] = { pattern };
    PGresult *r = PQexecParams(w->native, "DELETE FROM sqllock_lease WHERE "
                               "name LIKE $1", 1, NULL, vals, NULL, NULL, 0);
    long n;

    if (r == NULL || PQresultStatus(r) != PGRES_COMMAND_OK)
        bu_die("cleanup: %s", r != NULL ? PQresultErrorMessage(r)
                                     : PQerrorMessage(w->native));
    n = strtol(PQcmdTuples(r), NULL, 10);
    PQclear(r);
    return n;
}

/* Runs one statement without parameters (the --optimistic table's DDL). */
static void pg_exec_sql(void *native, const char *sql)
{
    PGresult *r = PQexec(native, sql);

    if (r == NULL || PQresultStatus(r) != PGRES_COMMAND_OK)
        bu_die("%.60s...: %s", sql, r != NULL ? PQresultErrorMessage(r)
                                           : PQerrorMessage(native));
    PQclear(r);
}

/* The server's WAL syncs so far. Every client first reports its pending
 * statistics (they are otherwise sent at most once a second). */
static long long pg_wal_syncs(worker *ws, int n)
{
    PGresult *r;
    long long syncs;
    int i;

    for (i = 0; i < n; i++) {
        r = PQexec(ws[i].native, "SELECT pg_stat_force_next_flush()");
        if (r == NULL || PQresultStatus(r) != PGRES_TUPLES_OK)
            bu_die("pg_stat_force_next_flush: %s",
                r != NULL ? PQresultErrorMessage(r)
                          : PQerrorMessage(ws[i].native));
        PQclear(r);
    }
    r = PQexec(ws[0].native, "SELECT wal_sync FROM pg_stat_wal");
    if (r == NULL || PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1)
        bu_die("reading pg_stat_wal: %s", r != NULL ? PQresultErrorMessage(r)
                                                 : PQerrorMessage(ws[0].native));
    syncs = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
    PQclear(r);
    return syncs;
}
#endif

/* ------------------------------------------------------------------------ */
/* MySQL / MariaDB                                                          */
/* ------------------------------------------------------------------------ */

#if defined(SQLLOCK_HAVE_MYSQL)
static int my_stmt(worker *w, MYSQL_STMT **st, const char *sql)
{
    *st = mysql_stmt_init(w->native);
    if (*st == NULL)
        return wfail(w, "mysql_stmt_init: %s", mysql_error(w->native));
    if (mysql_stmt_prepare(*st, sql, (unsigned long)strlen(sql)) != 0)
        return wfail(w, "prepare '%.40s...': %s", sql, mysql_stmt_error(*st));
    return 0;
}

static void my_text(MYSQL_BIND *b, char *buf, unsigned long *len)
{
    memset(b, 0, sizeof *b);
    b->buffer_type = MYSQL_TYPE_STRING;
    b->buffer = buf;
    b->buffer_length = *len;
    b->length = len;
}

static void my_int(MYSQL_BIND *b, long long *v)
{
    memset(b, 0, sizeof *b);
    b->buffer_type = MYSQL_TYPE_LONGLONG;
    b->buffer = v;
}

/* The parameters point into the worker, so they are bound once; each
 * execute sends the values the buffers hold then. */
static int my_setup(worker *w)
{
    w->name_len = (unsigned long)strlen(w->name);
    w->owner_len = SQLLOCK_OWNER_LEN;
    w->holder_len = (unsigned long)strlen(w->holder);
    if (my_stmt(w, &w->my_floor, "SELECT 1") != 0 ||
        my_stmt(w, &w->my_acq, g_sql_acquire) != 0 ||
        my_stmt(w, &w->my_tok, g_sql_token_next) != 0 ||
        my_stmt(w, &w->my_set, g_sql_set_token) != 0 ||
        my_stmt(w, &w->my_rel, g_sql_release) != 0 ||
        my_stmt(w, &w->my_nlock, MY_NATIVE_LOCK) != 0 ||
        my_stmt(w, &w->my_nunlock, MY_NATIVE_UNLOCK) != 0)
        return -1;
    my_int(&w->my_floor_res[0], &w->my_floor_val);
    my_text(&w->my_acq_p[0], w->name, &w->name_len);
    my_text(&w->my_acq_p[1], w->owner, &w->owner_len);
    my_text(&w->my_acq_p[2], w->holder, &w->holder_len);
    my_int(&w->my_acq_p[3], &w->ttl);
    my_text(&w->my_tok_p[0], w->name, &w->name_len);
    my_int(&w->my_set_p[0], &w->token);
    my_text(&w->my_set_p[1], w->name, &w->name_len);
    my_text(&w->my_set_p[2], w->owner, &w->owner_len);
    my_text(&w->my_rel_p[0], w->name, &w->name_len);
    my_text(&w->my_rel_p[1], w->owner, &w->owner_len);
    my_int(&w->my_rel_p[2], &w->token);
    my_text(&w->my_native_p[0], w->name, &w->name_len);
    my_int(&w->my_native_res[0], &w->my_native_val);
    w->my_native_res[0].is_null = &w->my_native_null;
    if (mysql_stmt_bind_result(w->my_floor, w->my_floor_res) != 0 ||
        mysql_stmt_bind_param(w->my_acq, w->my_acq_p) != 0 ||
        mysql_stmt_bind_param(w->my_tok, w->my_tok_p) != 0 ||
        mysql_stmt_bind_param(w->my_set, w->my_set_p) != 0 ||
        mysql_stmt_bind_param(w->my_rel, w->my_rel_p) != 0 ||
        mysql_stmt_bind_param(w->my_nlock, w->my_native_p) != 0 ||
        mysql_stmt_bind_result(w->my_nlock, w->my_native_res) != 0 ||
        mysql_stmt_bind_param(w->my_nunlock, w->my_native_p) != 0 ||
        mysql_stmt_bind_result(w->my_nunlock, w->my_native_res) != 0)
        return wfail(w, "binding: %s", mysql_error(w->native));
    return 0;
}

/* Executes a statement without a result; returns the affected rows, or
 * -1 on failure. */
static long long my_exec(worker *w, MYSQL_STMT *st, const char *what)
{
    if (mysql_stmt_execute(st) != 0) {
        wfail(w, "%s: %s (%u)", what, mysql_stmt_error(st),
              mysql_stmt_errno(st));
        return -1;
    }
    return (long long)mysql_stmt_affected_rows(st);
}

static int my_floor_pair(worker *w)
{
    int i;

    for (i = 0; i < 2; i++) {
        /* As the driver reads a result: all of it at once, then free. */
        if (mysql_stmt_execute(w->my_floor) != 0 ||
            mysql_stmt_store_result(w->my_floor) != 0)
            return wfail(w, "SELECT 1: %s", mysql_stmt_error(w->my_floor));
        if (mysql_stmt_fetch(w->my_floor) != 0)
            return wfail(w, "SELECT 1 returned no row: %s",
                         mysql_stmt_error(w->my_floor));
        mysql_stmt_free_result(w->my_floor);
    }
    return 0;
}

static int my_hand_pair(worker *w)
{
    MYSQL *my = w->native;
    long long n;

    if (new_owner(w) != 0)
        return -1;
    if (mysql_real_query(my, MY_BEGIN, sizeof MY_BEGIN - 1) != 0)
        return wfail(w, "START TRANSACTION: %s", mysql_error(my));
    n = my_exec(w, w->my_acq, "acquire");
    if (n <= 0) {
        mysql_rollback(my);
        return n == 0 ? wfail(w, "acquire by hand of '%s': busy", w->name)
                      : -1;
    }
    if (my_exec(w, w->my_tok, "token") < 0) {
        mysql_rollback(my);
        return -1;
    }
    w->token = (long long)mysql_stmt_insert_id(w->my_tok);
    n = my_exec(w, w->my_set, "set token");
    if (n != 1) {
        mysql_rollback(my);
        return n < 0 ? -1 : wfail(w, "set token matched %lld rows", n);
    }
    if (mysql_commit(my) != 0)
        return wfail(w, "COMMIT: %s", mysql_error(my));
    n = my_exec(w, w->my_rel, "release");
    if (n != 1)
        return n < 0 ? -1 : wfail(w, "release by hand deleted %lld rows", n);
    return 0;
}

/* Runs GET_LOCK or RELEASE_LOCK on the client's name; 0 when it
 * returned 1 (0 is a timeout or "not yours", NULL an error or "no such
 * lock"). */
static int my_native_call(worker *w, MYSQL_STMT *st, const char *what)
{
    int rc;

    w->my_native_val = -1;
    w->my_native_null = 0;
    if (mysql_stmt_execute(st) != 0 || mysql_stmt_store_result(st) != 0)
        return wfail(w, "%s('%s'): %s (%u)", what, w->name,
                     mysql_stmt_error(st), mysql_stmt_errno(st));
    rc = mysql_stmt_fetch(st);
    if (rc != 0) {
        wfail(w, "%s('%s') returned no value (%d): %s", what, w->name, rc,
              mysql_stmt_error(st));
        mysql_stmt_free_result(st);
        return -1;
    }
    mysql_stmt_free_result(st);
    if (w->my_native_null)
        return wfail(w, "%s('%s') returned NULL", what, w->name);
    if (w->my_native_val != 1)
        return wfail(w, "%s('%s') returned %lld, not 1", what, w->name,
                     w->my_native_val);
    return 0;
}

static int my_native_pair(worker *w)
{
    if (my_native_call(w, w->my_nlock, "GET_LOCK") != 0 ||
        my_native_call(w, w->my_nunlock, "RELEASE_LOCK") != 0)
        return -1;
    return 0;
}

/* FOR UPDATE: reads qty of w->fu_id into w->fu_qty, then writes
 * fu_qty - 1 there (w->fu_qty is the bound buffer of both). */
static int my_fu_rmw(worker *w)
{
    char read[160], write[160];
    long long n;
    int rc;

    if (!w->fu_ready) {
        fu_sql(read, write, sizeof read, 0);
        if (my_stmt(w, &w->my_fu_read, read) != 0 ||
            my_stmt(w, &w->my_fu_write, write) != 0)
            return -1;
        my_int(&w->my_fu_read_p[0], &w->fu_id);
        my_int(&w->my_fu_read_res[0], &w->fu_qty);
        my_int(&w->my_fu_write_p[0], &w->fu_qty);
        my_int(&w->my_fu_write_p[1], &w->fu_id);
        if (mysql_stmt_bind_param(w->my_fu_read, w->my_fu_read_p) != 0 ||
            mysql_stmt_bind_result(w->my_fu_read, w->my_fu_read_res) != 0 ||
            mysql_stmt_bind_param(w->my_fu_write, w->my_fu_write_p) != 0)
            return wfail(w, "binding: %s", mysql_error(w->native));
        w->fu_ready = 1;
    }
    if (mysql_stmt_execute(w->my_fu_read) != 0 ||
        mysql_stmt_store_result(w->my_fu_read) != 0)
        return wfail(w, "SELECT qty: %s", mysql_stmt_error(w->my_fu_read));
    rc = mysql_stmt_fetch(w->my_fu_read);
    mysql_stmt_free_result(w->my_fu_read);
    if (rc != 0)
        return wfail(w, "row %lld: no such row", w->fu_id);
    w->fu_qty--;
    n = my_exec(w, w->my_fu_write, "UPDATE qty");
    if (n != 1)
        return n < 0 ? -1 : wfail(w, "row %lld: UPDATE matched %lld rows",
                                  w->fu_id, n);
    return 0;
}

static void my_teardown(worker *w)
{
    MYSQL_STMT **sts[] = { &w->my_floor, &w->my_acq, &w->my_tok, &w->my_set,
                           &w->my_rel, &w->my_fu_read, &w->my_fu_write,
                           &w->my_nlock, &w->my_nunlock };
    size_t i;

    for (i = 0; i < sizeof sts / sizeof sts[0]; i++) {
        if (*sts[i] != NULL)
            mysql_stmt_close(*sts[i]);
        *sts[i] = NULL;
    }
}

static void my_describe(worker *w, char *buf, size_t n)
{
    const char *v = mysql_get_server_info(w->native);
    const char *host = mysql_get_host_info(w->native);
    int maria = v != NULL && strstr(v, "MariaDB") != NULL;

    if (v == NULL)
        v = "?";
    if (host == NULL)
        host = "?";
    snprintf(buf, n, "%s %.*s, %.*s", maria ? "MariaDB" : "MySQL",
             (int)strcspn(v, "-"), v, (int)strcspn(host, " "), host);
}

static long my_cleanup(worker *w, const char *pattern)
{
    static const char *const sqls[] = {
        "DELETE FROM sqllock_lease WHERE name LIKE ?",
        "DELETE FROM sqllock_token WHERE name LIKE ?",
    };
    unsigned long len = (unsigned long)strlen(pattern);
    char buf[128];
    MYSQL_BIND b;
    long total = 0;
    size_t i;

    snprintf(buf, sizeof buf, "%s", pattern);
    for (i = 0; i < 2; i++) {
        MYSQL_STMT *st = NULL;
        long long n;
        if (my_stmt(w, &st, sqls[i]) != 0)
            bu_die("cleanup: %s", w->bc.err);
        my_text(&b, buf, &len);
        if (mysql_stmt_bind_param(st, &b) != 0)
            bu_die("cleanup: %s", mysql_stmt_error(st));
        n = my_exec(w, st, "cleanup");
        if (n < 0)
            bu_die("cleanup: %s", w->bc.err);
        if (i == 0)
            total = (long)n;   /* token rows are expected: one per name */
        mysql_stmt_close(st);
    }
    return total;
}

static void my_exec_sql(void *native, const char *sql)
{
    if (mysql_real_query(native, sql, (unsigned long)strlen(sql)) != 0)
        bu_die("%.60s...: %s", sql, mysql_error(native));
}
#endif

/* ------------------------------------------------------------------------ */
/* SQLite                                                                   */
/* ------------------------------------------------------------------------ */

#if defined(SQLLOCK_HAVE_SQLITE)
static int sq_prepare(worker *w, sqlite3_stmt **st, const char *sql)
{
    /* As the driver prepares: once, persistent. */
    if (sqlite3_prepare_v3(w->native, sql, -1, SQLITE_PREPARE_PERSISTENT, st,
                           NULL) != SQLITE_OK)
        return wfail(w, "prepare '%.40s...': %s", sql,
                     sqlite3_errmsg(w->native));
    return 0;
}

static int sq_setup(worker *w)
{
    if (sq_prepare(w, &w->sq_floor, SQ_FLOOR) != 0 ||
        sq_prepare(w, &w->sq_acq, g_sql_acquire) != 0 ||
        sq_prepare(w, &w->sq_rel, g_sql_release) != 0)
        return -1;
    return 0;
}

static int sq_floor_pair(worker *w)
{
    int i, rc;

    for (i = 0; i < 2; i++) {
        sqlite3_reset(w->sq_floor);
        if (sqlite3_bind_int(w->sq_floor, 1, w->bc.index) != SQLITE_OK)
            return wfail(w, "bind: %s", sqlite3_errmsg(w->native));
        rc = sqlite3_step(w->sq_floor);
        if (rc != SQLITE_DONE)
            return wfail(w, "floor UPDATE: %s", sqlite3_errmsg(w->native));
        if (sqlite3_changes(w->native) != 1)
            return wfail(w, "floor UPDATE changed no row");
    }
    sqlite3_reset(w->sq_floor);
    return 0;
}

/* Binds as the driver binds: text with SQLITE_TRANSIENT, integers as
 * int64, after a reset and clear_bindings. */
static int sq_bind3(worker *w, sqlite3_stmt *st, int third_is_token)
{
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    if (sqlite3_bind_text(st, 1, w->name, -1, SQLITE_TRANSIENT) != SQLITE_OK ||
        sqlite3_bind_text(st, 2, w->owner, -1, SQLITE_TRANSIENT) != SQLITE_OK ||
        (third_is_token
         ? sqlite3_bind_int64(st, 3, w->token)
         : sqlite3_bind_text(st, 3, w->holder, -1, SQLITE_TRANSIENT))
        != SQLITE_OK)
        return wfail(w, "bind: %s", sqlite3_errmsg(w->native));
    return 0;
}

static int sq_hand_pair(worker *w)
{
    int rc;

    if (new_owner(w) != 0 || sq_bind3(w, w->sq_acq, 0) != 0)
        return -1;
    if (sqlite3_bind_int64(w->sq_acq, 4, w->ttl) != SQLITE_OK)
        return wfail(w, "bind: %s", sqlite3_errmsg(w->native));
    rc = sqlite3_step(w->sq_acq);
    if (rc != SQLITE_ROW) {
        sqlite3_reset(w->sq_acq);
        return rc == SQLITE_DONE
               ? wfail(w, "acquire by hand of '%s': busy", w->name)
               : wfail(w, "acquire: %s", sqlite3_errmsg(w->native));
    }
    w->token = sqlite3_column_int64(w->sq_acq, 0);
    rc = sqlite3_step(w->sq_acq);
    sqlite3_reset(w->sq_acq);
    if (rc != SQLITE_DONE)
        return wfail(w, "acquire: %s", sqlite3_errmsg(w->native));
    if (sq_bind3(w, w->sq_rel, 1) != 0)
        return -1;
    rc = sqlite3_step(w->sq_rel);
    if (rc != SQLITE_DONE) {
        sqlite3_reset(w->sq_rel);
        return wfail(w, "release: %s", sqlite3_errmsg(w->native));
    }
    if (sqlite3_changes(w->native) != 1)
        return wfail(w, "release by hand of '%s' deleted no row", w->name);
    sqlite3_reset(w->sq_rel);
    return 0;
}

/* FOR UPDATE: reads qty of w->fu_id into w->fu_qty, then writes
 * fu_qty - 1 there. */
static int sq_fu_rmw(worker *w)
{
    char read[160], write[160];
    int rc;

    if (!w->fu_ready) {
        fu_sql(read, write, sizeof read, 0);
        if (sq_prepare(w, &w->sq_fu_read, read) != 0 ||
            sq_prepare(w, &w->sq_fu_write, write) != 0)
            return -1;
        w->fu_ready = 1;
    }
    sqlite3_reset(w->sq_fu_read);
    if (sqlite3_bind_int64(w->sq_fu_read, 1, w->fu_id) != SQLITE_OK)
        return wfail(w, "bind: %s", sqlite3_errmsg(w->native));
    rc = sqlite3_step(w->sq_fu_read);
    if (rc != SQLITE_ROW) {
        sqlite3_reset(w->sq_fu_read);
        return rc == SQLITE_DONE ? wfail(w, "row %lld: no such row", w->fu_id)
               : wfail(w, "SELECT qty: %s", sqlite3_errmsg(w->native));
    }
    w->fu_qty = sqlite3_column_int64(w->sq_fu_read, 0);
    sqlite3_reset(w->sq_fu_read);
    sqlite3_reset(w->sq_fu_write);
    if (sqlite3_bind_int64(w->sq_fu_write, 1, w->fu_qty - 1) != SQLITE_OK ||
        sqlite3_bind_int64(w->sq_fu_write, 2, w->fu_id) != SQLITE_OK)
        return wfail(w, "bind: %s", sqlite3_errmsg(w->native));
    rc = sqlite3_step(w->sq_fu_write);
    sqlite3_reset(w->sq_fu_write);
    if (rc != SQLITE_DONE)
        return wfail(w, "UPDATE qty: %s", sqlite3_errmsg(w->native));
    if (sqlite3_changes(w->native) != 1)
        return wfail(w, "row %lld: UPDATE matched no row", w->fu_id);
    return 0;
}

static void sq_teardown(worker *w)
{
    sqlite3_finalize(w->sq_floor);
    sqlite3_finalize(w->sq_acq);
    sqlite3_finalize(w->sq_rel);
    sqlite3_finalize(w->sq_fu_read);
    sqlite3_finalize(w->sq_fu_write);
    w->sq_floor = w->sq_acq = w->sq_rel = NULL;
    w->sq_fu_read = w->sq_fu_write = NULL;
}

static void sq_describe(worker *w, char *buf, size_t n)
{
    const char *path = sqlite3_db_filename(w->native, "main");

    snprintf(buf, n, "SQLite %s, %s", sqlite3_libversion(),
             path != NULL ? path : "?");
}

static void sq_exec(sqlite3 *db, const char *sql)
{
    char *msg = NULL;

    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK)
        bu_die("%s: %s", sql, msg != NULL ? msg : sqlite3_errmsg(db));
}

static long sq_cleanup(worker *w, const char *pattern)
{
    sqlite3_stmt *st = NULL;
    long n;

    if (sqlite3_prepare_v2(w->native, "DELETE FROM sqllock_lease WHERE name "
                           "LIKE ?1", -1, &st, NULL) != SQLITE_OK ||
        sqlite3_bind_text(st, 1, pattern, -1, SQLITE_TRANSIENT) != SQLITE_OK ||
        sqlite3_step(st) != SQLITE_DONE)
        bu_die("cleanup: %s", sqlite3_errmsg(w->native));
    n = sqlite3_changes(w->native);
    sqlite3_finalize(st);
    sq_exec(w->native, "DROP TABLE IF EXISTS sqllock_bench_floor");
    return n;
}

static void sq_exec_sql(void *native, const char *sql)
{
    sq_exec(native, sql);
}
#endif

/* ------------------------------------------------------------------------ */
/* Drivers                                                                  */
/* ------------------------------------------------------------------------ */

/* One statement of the library sent by hand: its dialect entry, the
 * placeholder order this program binds it in (sqllock_sql.args), and
 * where bench_url() puts its text. */
typedef struct sql_use {
    sqllock_sql_id id;
    const char *args;
    const char **text;
} sql_use;

typedef struct bench_driver {
    const char *name;                /* as sqllock_db_driver() says */
    const char *floor_label;
    const char *floor_note;
    int (*setup)(worker *w);
    int (*floor_pair)(worker *w);
    int (*hand_pair)(worker *w);
    void (*teardown)(worker *w);
    void (*describe)(worker *w, char *buf, size_t n);
    long (*cleanup)(worker *w, const char *pattern);
    sql_use uses[4];
    void (*exec)(void *native, const char *sql);
    int (*fu_rmw)(worker *w);
    /* The database's own session lock, or NULL (then native_note says
     * why there is none). */
    int (*native_pair)(worker *w);
    const char *native_label;
    const char *native_note;
} bench_driver;

static const bench_driver drivers[] = {
#if defined(SQLLOCK_HAVE_POSTGRES)
    { .name = "postgres", .floor_label = "floor: SELECT 1 x2",
      .setup = pg_setup, .floor_pair = pg_floor_pair,
      .hand_pair = pg_hand_pair, .teardown = pg_teardown,
      .describe = pg_describe, .cleanup = pg_cleanup,
      .uses = {
          { SQLLOCK_SQL_LEASE_ACQUIRE, "1234", &g_sql_acquire },
          { SQLLOCK_SQL_LEASE_RELEASE, "1234", &g_sql_release },
          { 0, NULL, NULL } },
      .exec = pg_exec_sql, .fu_rmw = pg_fu_rmw,
      .native_pair = pg_native_pair,
      .native_label = "native lock: pg_advisory_lock",
      .native_note = "native lock: SELECT pg_advisory_lock($1) + SELECT "
          "pg_advisory_unlock($1), prepared,\n  a bigint key per client, "
          "on the same connection" },
#endif
#if defined(SQLLOCK_HAVE_MYSQL)
    { .name = "mysql", .floor_label = "floor: SELECT 1 x2",
      .setup = my_setup, .floor_pair = my_floor_pair,
      .hand_pair = my_hand_pair, .teardown = my_teardown,
      .describe = my_describe, .cleanup = my_cleanup,
      .uses = {
          { SQLLOCK_SQL_LEASE_ACQUIRE, "1234", &g_sql_acquire },
          { SQLLOCK_SQL_TOKEN_NEXT, "1", &g_sql_token_next },
          { SQLLOCK_SQL_LEASE_SET_TOKEN, "312", &g_sql_set_token },
          { SQLLOCK_SQL_LEASE_RELEASE, "123", &g_sql_release } },
      .exec = my_exec_sql, .fu_rmw = my_fu_rmw,
      .native_pair = my_native_pair,
      .native_label = "native lock: GET_LOCK",
      .native_note = "native lock: SELECT GET_LOCK(?, 10) + SELECT "
          "RELEASE_LOCK(?), prepared,\n  a name per client, on the same "
          "connection" },
#endif
#if defined(SQLLOCK_HAVE_SQLITE)
    { .name = "sqlite", .floor_label = "floor: durable UPDATE x2",
      .floor_note = "floor on SQLite: two bare durable write transactions "
          "(an UPDATE of one row, twice,\n  WAL, synchronous=FULL, as "
          "sqllock sets them); a SELECT would cost SQLite no commit",
      .setup = sq_setup, .floor_pair = sq_floor_pair,
      .hand_pair = sq_hand_pair, .teardown = sq_teardown,
      .describe = sq_describe, .cleanup = sq_cleanup,
      .uses = {
          { SQLLOCK_SQL_LEASE_ACQUIRE, "1234", &g_sql_acquire },
          { SQLLOCK_SQL_LEASE_RELEASE, "123", &g_sql_release },
          { 0, NULL, NULL } },
      .exec = sq_exec_sql, .fu_rmw = sq_fu_rmw,
      .native_note = "native lock: none on SQLite, which has no named "
          "session lock (its only lock is the\n  file's write lock, which "
          "the floor already pays)" },
#endif
    { 0 }
};

static const bench_driver *find_driver(const char *name)
{
    size_t i;

    for (i = 0; drivers[i].name != NULL; i++)
        if (strcmp(drivers[i].name, name) == 0)
            return &drivers[i];
    return NULL;
}

/* Reads the statements the by-hand scenario sends from the driver's
 * dialect (bu_sql() stops the run when their placeholders no longer bind
 * in the order this program binds them). */
static void load_sql(const bench_driver *bd)
{
    int i;

    g_sql_acquire = g_sql_release = g_sql_token_next = g_sql_set_token =
        NULL;
    for (i = 0; i < 4 && bd->uses[i].text != NULL; i++)
        *bd->uses[i].text = bu_sql(bd->name, bd->uses[i].id,
                                   bd->uses[i].args);
}

/* ------------------------------------------------------------------------ */
/* Runs                                                                     */
/* ------------------------------------------------------------------------ */

typedef struct result {
    double rate, p50, p99, max;
    double cpu_us;                   /* this process's CPU per pair */
    double conflicts;                /* --optimistic: conflicts per pair */
    long busy;                       /* --optimistic: SQLLOCK_EDBBUSY */
    long pairs;
} result;

/* bu_point_run()'s pair: the point's own pair function. */
static int run_pair(bu_client *c)
{
    worker *w = (worker *)c;

    return w->pair(w);
}

/* The warm-up's conflicts and busy timeouts do not count. */
static void after_warmup(bu_client *c)
{
    worker *w = (worker *)c;

    w->conflicts = 0;
    w->busy = 0;
}

static void run_point(worker *ws, int n, pair_fn fn, double secs, result *out)
{
    bu_client *cs[MAX_CLIENTS] = { NULL };
    bu_run run = { run_pair, secs, WARMUP_PAIRS, after_warmup, NULL, NULL };
    bu_point pt;
    long conflicts = 0;
    int i;

    for (i = 0; i < n; i++) {
        ws[i].pair = fn;
        cs[i] = &ws[i].bc;
    }
    bu_point_run(cs, n, &run, &pt);
    out->busy = 0;
    for (i = 0; i < n; i++) {
        conflicts += ws[i].conflicts;
        out->busy += ws[i].busy;
    }
    out->pairs = pt.pairs;
    out->cpu_us = pt.cpu_us;
    out->rate = pt.rate;
    out->p50 = pt.p50;
    out->p99 = pt.p99;
    out->max = pt.max;
    /* A run in which no CAS completed at all shows "inf", not 0. */
    out->conflicts = pt.pairs > 0 ? (double)conflicts / (double)pt.pairs
                     : conflicts > 0 ? INFINITY : 0;
}

#define MAX_REPS 15

/* One row of a table: every repetition, and the medians. */
typedef struct row {
    const char *label;
    int clients;
    int nreps;
    result reps[MAX_REPS];
    result med;
    double wal_per_pair;             /* --release-compare only */
    double wal[MAX_REPS];
} row;

static void finish_row(row *r)
{
    double v[MAX_REPS];
    int i;

#define MED_(expr, out)                                                      \
    do {                                                                     \
        for (i = 0; i < r->nreps; i++)                                       \
            v[i] = (expr);                                                   \
        (out) = bu_median(v, r->nreps);                                      \
    } while (0)
    MED_(r->reps[i].rate, r->med.rate);
    MED_(r->reps[i].p50, r->med.p50);
    MED_(r->reps[i].p99, r->med.p99);
    MED_(r->reps[i].max, r->med.max);
    MED_(r->reps[i].cpu_us, r->med.cpu_us);
    MED_(r->reps[i].conflicts, r->med.conflicts);
    MED_(r->wal[i], r->wal_per_pair);
#undef MED_
}

/* ------------------------------------------------------------------------ */
/* Set-up                                                                   */
/* ------------------------------------------------------------------------ */

typedef struct config {
    double secs;
    int reps;
    int clients[8];
    int nclients;
    int max_clients;
    const char *csv_path;
    FILE *csv;
    int release_compare;
    int optimistic;
    int only;                        /* 0 all, else 1 + scenario index */
    const char *results_path;        /* --results: the common CSV */
    FILE *results;
} config;

/* Lease flags for the library's scenario (--no-wakeup, --fast). */
static unsigned g_lease_flags;

/* The library scenario's label, which says its flags. */
static const char *lib_label(void)
{
    switch (g_lease_flags & (SQLLOCK_LEASE_NO_WAKEUP | SQLLOCK_LEASE_FAST)) {
    case SQLLOCK_LEASE_NO_WAKEUP:
        return "sqllock, no wake-up";
    case SQLLOCK_LEASE_FAST:
        return "sqllock, fast mode";
    case SQLLOCK_LEASE_NO_WAKEUP | SQLLOCK_LEASE_FAST:
        return "sqllock, fast mode, no wake-up";
    default:
        return "sqllock acquire+release";
    }
}

static void open_workers(const bench_driver *bd, const char *url, worker *ws,
                         int n)
{
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    int i, rc;

    o.flags = g_lease_flags;

    for (i = 0; i < n; i++) {
        worker *w = &ws[i];
        w->bc.index = i;
        w->ttl = TTL_MS;
        snprintf(w->name, sizeof w->name, "sqllock-bench:%ld:%d",
                 (long)getpid(), i);
        snprintf(w->holder, sizeof w->holder, "sqllock-bench:%ld",
                 (long)getpid());
        /* "SQLK" in the high half, then the pid and the client: a key of
         * this run's own, in the one-bigint key space of PostgreSQL's
         * advisory locks (the library's pg_advisory_xact_lock(int, int)
         * is in the two-int space, which does not overlap it). */
        snprintf(w->native_key, sizeof w->native_key, "%lld",
                 (long long)(((unsigned long long)0x53514C4Bu << 32) |
                             ((unsigned long long)getpid() << 8) |
                             (unsigned long long)i));
        w->db = bu_open(url);
        w->native = sqllock_db_native(w->db);
        if (w->native == NULL)
            bu_die("%s: the handle has no native connection", url);
        o.ttl_ms = TTL_MS;
        o.holder = w->holder;
        rc = sqllock_lease_new(w->db, w->name, &o, &w->lease);
        if (rc != SQLLOCK_OK)
            bu_die("sqllock_lease_new: %s", sqllock_errmsg(w->db));
        w->setup = bd->setup;
        w->teardown = bd->teardown;
        if (new_owner(w) != 0 || bd->setup(w) != 0)
            bu_die("%s: setting up client %d: %s", url, i, w->bc.err);
    }
}

static void close_workers(const bench_driver *bd, worker *ws, int n)
{
    int i;

    for (i = 0; i < n; i++) {
        bd->teardown(&ws[i]);
        sqllock_lease_free(ws[i].lease);
        sqllock_close(ws[i].db);
        bu_lat_free(&ws[i].bc.lat);
        memset(&ws[i], 0, sizeof ws[i]);
    }
}

/* ------------------------------------------------------------------------ */
/* Output                                                                   */
/* ------------------------------------------------------------------------ */

/* One measured row of a table in the common format: its rate, p50, p99,
 * the ratio to `vs` (none when vs_rate is 0) and one extra value. */
static void res_put(const config *cfg, const char *suite, const char *driver,
                    const char *scenario, const row *r, int rows,
                    const char *vs, double vs_rate, double value,
                    const char *unit)
{
    bu_result o;

    o.suite = suite;
    o.driver = driver;
    o.scenario = scenario;
    o.clients = r->clients;
    o.rows = rows > 0 ? rows : -1;   /* 0: not varied, an empty field */
    o.ops_per_s = r->med.rate;
    o.p50_us = r->med.p50;
    o.p99_us = r->med.p99;
    o.ratio = vs != NULL && vs_rate > 0 ? r->med.rate / vs_rate : NAN;
    o.vs = vs != NULL && vs_rate > 0 ? vs : NULL;
    o.value = value;
    o.unit = unit;
    bu_results_put(cfg->results, &o);
}

static void print_header(const char *driver, const char *desc,
                         const config *cfg)
{
    printf("\n%s (%s), %g s x %d, median\n", driver, desc, cfg->secs,
           cfg->reps);
}

static void csv_row(const config *cfg, const char *driver, const char *desc,
                    const row *r, double vs_floor, double vs_hand)
{
    int i;

    if (cfg->csv == NULL)
        return;
    fprintf(cfg->csv, "%s,\"%s\",\"%s\",%d,%g,%d,%.1f,%.1f,%.1f,%.1f,%.1f,",
            driver, desc, r->label, r->clients, cfg->secs, r->nreps,
            r->med.rate, r->med.p50, r->med.p99, r->med.max, r->med.cpu_us);
    if (vs_floor > 0)
        fprintf(cfg->csv, "%.3f", vs_floor);
    fputc(',', cfg->csv);
    if (vs_hand > 0)
        fprintf(cfg->csv, "%.3f", vs_hand);
    fputc(',', cfg->csv);
    if (cfg->release_compare)
        fprintf(cfg->csv, "%.2f", r->wal_per_pair);
    for (i = 0; i < MAX_REPS && i < 3; i++) {
        fputc(',', cfg->csv);
        if (i < r->nreps)
            fprintf(cfg->csv, "%.1f", r->reps[i].rate);
    }
    fputc('\n', cfg->csv);
}

static void print_row(const row *r, double vs_floor, double vs_hand)
{
    printf("%-32s %7d %9.0f %9.0f %9.0f", r->label, r->clients, r->med.rate,
           r->med.p50, r->med.p99);
    if (vs_floor > 0)
        printf(" %10.2f", vs_floor);
    else
        printf(" %10s", "");
    if (vs_hand > 0)
        printf(" %11.2f", vs_hand);
    else
        printf(" %11s", "");
    printf(" %12.1f\n", r->med.cpu_us);
}

/* ------------------------------------------------------------------------ */
/* The modes                                                                */
/* ------------------------------------------------------------------------ */

/* The floor's own rows, where it needs some (SQLite: one per client). */
static void floor_setup(const config *cfg, const bench_driver *bd,
                        sqllock_db *db)
{
#if defined(SQLLOCK_HAVE_SQLITE)
    if (strcmp(bd->name, "sqlite") == 0) {
        char sql[128];
        int i;
        sq_exec(sqllock_db_native(db), SQ_FLOOR_TABLE);
        for (i = 0; i < cfg->max_clients; i++) {
            snprintf(sql, sizeof sql, "INSERT OR IGNORE INTO "
                     "sqllock_bench_floor VALUES (%d, 0)", i);
            sq_exec(sqllock_db_native(db), sql);
        }
    }
#else
    (void)cfg;
    (void)bd;
    (void)db;
#endif
}

/* The scenarios of the default run, in table order; the native lock only
 * where the database has one. */
enum { SC_FLOOR, SC_HAND, SC_LIB, SC_NATIVE, SC_COUNT };

/* Their names in the common results CSV. */
static const char *const sc_names[SC_COUNT] = {
    "floor", "by hand", "sqllock", "native lock"
};

/* The four scenarios (three on SQLite) at every client count, one
 * table. */
static void bench_url(const config *cfg, const char *url)
{
    const bench_driver *bd;
    worker *ws;
    sqllock_db *db;
    char desc[200], pattern[64];
    row rows[8][SC_COUNT];
    int c, s, rep, rc, nsc;
    long left = 0;

    db = bu_open(url);
    rc = sqllock_init(db);
    if (rc != SQLLOCK_OK)
        bu_die("sqllock_init on %s: %s", url, sqllock_errmsg(db));
    bd = find_driver(sqllock_db_driver(db));
    if (bd == NULL)
        bu_die("%s: the bench has no '%s' part", url, sqllock_db_driver(db));
    load_sql(bd);
    floor_setup(cfg, bd, db);
#if defined(SQLLOCK_HAVE_POSTGRES)
    g_pg_unnamed = strcmp(bd->name, "postgres") == 0 &&
                   strstr(url, "pooler=transaction") != NULL;
#endif
    nsc = bd->native_pair != NULL ? SC_COUNT : SC_NATIVE;
#if defined(SQLLOCK_HAVE_POSTGRES)
    if (g_pg_unnamed)
        nsc = SC_NATIVE;
#endif
    if (cfg->only == SC_NATIVE + 1 && nsc == SC_NATIVE)
        fprintf(stderr, "bench_drivers: %s has no native lock; nothing to "
                "run with --only native\n", bd->name);
    ws = calloc((size_t)cfg->max_clients, sizeof *ws);
    if (ws == NULL)
        bu_die("out of memory");
    for (c = 0; c < cfg->nclients; c++) {
        pair_fn fns[SC_COUNT];
        int n = cfg->clients[c];

        fns[SC_FLOOR] = bd->floor_pair;
        fns[SC_HAND] = bd->hand_pair;
        fns[SC_LIB] = lib_pair;
        fns[SC_NATIVE] = bd->native_pair;
        rows[c][SC_FLOOR].label = bd->floor_label;
        rows[c][SC_HAND].label = "lock SQL by hand";
        rows[c][SC_LIB].label = lib_label();
        rows[c][SC_NATIVE].label = bd->native_label;
        open_workers(bd, url, ws, n);
        if (c == 0)
            bd->describe(&ws[0], desc, sizeof desc);
        for (s = 0; s < nsc; s++) {
            rows[c][s].clients = n;
            rows[c][s].nreps = cfg->reps;
            memset(rows[c][s].wal, 0, sizeof rows[c][s].wal);
            memset(rows[c][s].reps, 0, sizeof rows[c][s].reps);
        }
        for (rep = 0; rep < cfg->reps; rep++) {
            for (s = 0; s < nsc; s++) {
                /* A rotating order, so no scenario always runs first. */
                int k = (s + rep) % nsc;
                if (cfg->only != 0 && cfg->only != k + 1)
                    continue;
                run_point(ws, n, fns[k], cfg->secs, &rows[c][k].reps[rep]);
                fprintf(stderr, "  %s %d clients, run %d: %-29s %8.0f "
                        "pairs/s (%ld pairs, slowest %.0f ms)\n", bd->name,
                        n, rep + 1, rows[c][k].label,
                        rows[c][k].reps[rep].rate, rows[c][k].reps[rep].pairs,
                        rows[c][k].reps[rep].max / 1000);
            }
        }
        for (s = 0; s < nsc; s++)
            finish_row(&rows[c][s]);
        if (c == cfg->nclients - 1) {
            snprintf(pattern, sizeof pattern, "sqllock-bench:%ld:%%",
                     (long)getpid());
            left = bd->cleanup(&ws[0], pattern);
        }
        close_workers(bd, ws, n);
    }
    free(ws);
    sqllock_close(db);

    print_header(bd->name, desc, cfg);
    printf("%-32s %7s %9s %9s %9s %10s %11s %12s\n", "scenario", "clients",
           "pairs/s", "p50 us", "p99 us", "vs floor", "vs by-hand",
           "client CPU");
    for (c = 0; c < cfg->nclients; c++) {
        double fl = rows[c][SC_FLOOR].med.rate;
        double hand = rows[c][SC_HAND].med.rate;
        double lib = rows[c][SC_LIB].med.rate;

        print_row(&rows[c][SC_FLOOR], 0, 0);
        print_row(&rows[c][SC_HAND], hand / fl, 0);
        print_row(&rows[c][SC_LIB], lib / fl, lib / hand);
        csv_row(cfg, bd->name, desc, &rows[c][SC_FLOOR], 1.0, 0);
        csv_row(cfg, bd->name, desc, &rows[c][SC_HAND], hand / fl, 0);
        csv_row(cfg, bd->name, desc, &rows[c][SC_LIB], lib / fl, lib / hand);
        if (nsc > SC_NATIVE) {
            double nat = rows[c][SC_NATIVE].med.rate;
            print_row(&rows[c][SC_NATIVE], nat / fl, 0);
            csv_row(cfg, bd->name, desc, &rows[c][SC_NATIVE], nat / fl, 0);
        }
        for (s = 0; s < nsc; s++) {
            const char *name = sc_names[s];
            /* --only: the scenarios that did not run get no row. */
            if (cfg->only != 0 && cfg->only != s + 1)
                continue;
            if (s == SC_LIB && g_lease_flags != 0)
                name = lib_label();
            res_put(cfg, g_lease_flags & SQLLOCK_LEASE_FAST ? "fast"
                                                            : "uncontended",
                    bd->name, name, &rows[c][s], 0,
                    s == SC_FLOOR ? NULL : "floor", fl,
                    rows[c][s].med.cpu_us, "us CPU/pair");
        }
    }
    printf("  client CPU: this process's user+system CPU per pair, in us "
           "(all clients' threads)\n");
    if (bd->native_note != NULL)
        printf("  %s\n", bd->native_note);
    if (bd->floor_note != NULL)
        printf("  %s\n", bd->floor_note);
    if (left != 0)
        printf("  cleanup: removed %ld leftover lease rows\n", left);
    fflush(stdout);
}

/* PostgreSQL: the library's asynchronous release commit against a plain
 * DELETE, both by hand. */
static void release_compare(const config *cfg, const char *url)
{
#if defined(SQLLOCK_HAVE_POSTGRES)
    const bench_driver *bd;
    worker *ws;
    sqllock_db *db;
    char desc[200], pattern[64];
    row rows[8][3];
    pair_fn fns[3] = { pg_hand_pair_plain, pg_hand_pair, lib_pair };
    int c, s, rep, rc;

    db = bu_open(url);
    rc = sqllock_init(db);
    if (rc != SQLLOCK_OK)
        bu_die("sqllock_init on %s: %s", url, sqllock_errmsg(db));
    if (strcmp(sqllock_db_driver(db), "postgres") != 0) {
        fprintf(stderr, "bench_drivers: --release-compare is for PostgreSQL "
                "only; skipping %s\n", sqllock_db_driver(db));
        sqllock_close(db);
        return;
    }
    bd = find_driver("postgres");
    load_sql(bd);
    ws = calloc((size_t)cfg->max_clients, sizeof *ws);
    if (ws == NULL)
        bu_die("out of memory");
    for (c = 0; c < cfg->nclients; c++) {
        int n = cfg->clients[c];

        rows[c][0].label = "by hand, plain DELETE";
        rows[c][1].label = "by hand, DELETE + async commit";
        rows[c][2].label = "sqllock (async commit)";
        open_workers(bd, url, ws, n);
        if (c == 0)
            bd->describe(&ws[0], desc, sizeof desc);
        for (s = 0; s < 3; s++) {
            rows[c][s].clients = n;
            rows[c][s].nreps = cfg->reps;
        }
        for (rep = 0; rep < cfg->reps; rep++) {
            for (s = 0; s < 3; s++) {
                int k = (s + rep) % 3;
                long long w0 = pg_wal_syncs(ws, n), w1;
                run_point(ws, n, fns[k], cfg->secs, &rows[c][k].reps[rep]);
                w1 = pg_wal_syncs(ws, n);
                /* The warm-up pairs are counted in the syncs too. */
                rows[c][k].wal[rep] = (double)(w1 - w0) /
                    (double)(rows[c][k].reps[rep].pairs + n * WARMUP_PAIRS);
                fprintf(stderr, "  release-compare %d clients, run %d: "
                        "%-30s %8.0f pairs/s %.2f WAL syncs/pair\n", n,
                        rep + 1, rows[c][k].label, rows[c][k].reps[rep].rate,
                        rows[c][k].wal[rep]);
            }
        }
        for (s = 0; s < 3; s++)
            finish_row(&rows[c][s]);
        if (c == cfg->nclients - 1) {
            snprintf(pattern, sizeof pattern, "sqllock-bench:%ld:%%",
                     (long)getpid());
            bd->cleanup(&ws[0], pattern);
        }
        close_workers(bd, ws, n);
    }
    free(ws);
    sqllock_close(db);

    printf("\npostgres release commit (%s), %g s x %d, median\n", desc,
           cfg->secs, cfg->reps);
    printf("%-32s %7s %9s %9s %9s %10s %15s\n", "release statement",
           "clients", "pairs/s", "p50 us", "p99 us", "vs plain",
           "WAL syncs/pair");
    for (c = 0; c < cfg->nclients; c++) {
        for (s = 0; s < 3; s++) {
            const row *r = &rows[c][s];
            printf("%-32s %7d %9.0f %9.0f %9.0f %10.2f %15.2f\n", r->label,
                   r->clients, r->med.rate, r->med.p50, r->med.p99,
                   r->med.rate / rows[c][0].med.rate, r->wal_per_pair);
            csv_row(cfg, "postgres-release", desc, r,
                    r->med.rate / rows[c][0].med.rate, 0);
            res_put(cfg, "release", "postgres", r->label, r, 0,
                    s == 0 ? NULL : rows[c][0].label, rows[c][0].med.rate,
                    r->wal_per_pair, "WAL syncs/pair");
        }
    }
    printf("  WAL syncs/pair: pg_stat_wal.wal_sync over the run (the WAL "
           "writer's included) / pairs;\n  other sessions on the server "
           "add to it.\n");
    fflush(stdout);
#else
    (void)cfg;
    bu_die("--release-compare needs the postgres driver, which was not built "
        "(url %s)", url);
#endif
}

/* --optimistic: decrements of qty on the application table
 * bench_inv_<pid>(id, qty, version), through the library. */

#define INV_ROWS 1000
#define INV_QTY 1000000000000LL     /* never runs out */
#define CAS_MAX_ATTEMPTS 100000     /* a livelock guard, never reached */
#define OPT_POINTS 7

static const char *const inv_columns[1] = { "qty" };

/* The id of the next transaction: 1, or uniform in 1..nrows
 * (xorshift64*, one generator per client). */
static int64_t pick_id(worker *w)
{
    unsigned long long x = w->rng;

    if (w->nrows <= 1)
        return 1;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    w->rng = x;
    return 1 + (int64_t)((x * 0x2545F4914F6CDD1DULL >> 33) %
                         (unsigned long long)w->nrows);
}

/* Optimistic CAS: read qty and version, write qty - 1 if the version has
 * not moved (and qty >= 1); on SQLLOCK_CONFLICT read again, at once. One
 * completed decrement is one transaction; its latency includes the
 * retries. */
static int cas_tx(worker *w)
{
    sqllock_cell key = SQLLOCK_NUMBER(pick_id(w));
    sqllock_cell sub = { "qty", SQLLOCK_OP_SUB, NULL, 1 };
    sqllock_cell enough = { "qty", SQLLOCK_OP_GE, NULL, 1 };
    int64_t qty, version;
    int attempt, rc;

    for (attempt = 0; attempt < CAS_MAX_ATTEMPTS; attempt++) {
        rc = sqllock_table_get(w->db, &w->inv, &key, inv_columns, 1, &qty,
                               &version);
        if (rc == SQLLOCK_EDBBUSY) {
            w->busy++;
            continue;
        }
        if (rc != SQLLOCK_OK)
            return wfail(w, "sqllock_table_get(id %lld): %s: %s",
                         (long long)key.number, sqllock_errname(rc),
                         sqllock_errmsg(w->db));
        if (qty < 1)
            return wfail(w, "row %lld is sold out", (long long)key.number);
        rc = sqllock_table_cas(w->db, &w->inv, &key, version, &sub, 1,
                               &enough, 1, NULL);
        if (rc == SQLLOCK_OK)
            return 0;
        if (rc == SQLLOCK_EDBBUSY) {
            w->busy++;
            continue;
        }
        if (rc != SQLLOCK_CONFLICT)
            return wfail(w, "sqllock_table_cas(id %lld): %s: %s",
                         (long long)key.number, sqllock_errname(rc),
                         sqllock_errmsg(w->db));
        w->conflicts++;
    }
    return wfail(w, "row %lld: %d conflicts in a row", (long long)key.number,
                 CAS_MAX_ATTEMPTS);
}

/* FOR UPDATE: begin, lock the row (waiting), read qty and write qty - 1
 * on the transaction's connection, commit. A retryable status (SQLite's
 * write lock busy past the timeout, a lock wait timed out, a deadlock)
 * rolls back and starts again at once; it is counted with the busy
 * timeouts. One committed decrement is one transaction. */
static int forupdate_tx(worker *w)
{
    sqllock_cell key = SQLLOCK_NUMBER(pick_id(w));
    sqllock_txn *txn = NULL;
    int attempt, rc;
    const char *what = "sqllock_txn_begin";

    for (attempt = 0; attempt < CAS_MAX_ATTEMPTS; attempt++) {
        what = "sqllock_txn_begin";
        rc = sqllock_txn_begin(w->db, NULL, &txn);
        if (rc == SQLLOCK_OK) {
            what = "sqllock_txn_lock_rows";
            rc = sqllock_txn_lock_rows(txn, &w->inv, &key, 1,
                                       SQLLOCK_LOCK_WAIT, NULL);
        }
        if (rc == SQLLOCK_OK) {
            /* The transaction's connection, as sqllock.h says to use it:
             * it need not be the one sqllock_db_native() gave before. */
            void *conn = sqllock_txn_native(txn);
            if (conn == NULL) {
                sqllock_txn_free(txn);
                return wfail(w, "sqllock_txn_native: %s",
                             sqllock_errmsg(w->db));
            }
            if (conn != w->native) {
                /* The old statements go first (on MySQL they are
                 * detached from the closed connection; closing frees
                 * them). */
                w->teardown(w);
                w->native = conn;
                w->fu_ready = 0;
                if (w->setup(w) != 0) {
                    sqllock_txn_free(txn);
                    return -1;
                }
            }
            w->fu_id = key.number;
            if (w->fu_rmw(w) != 0) {
                sqllock_txn_free(txn);
                return -1;
            }
            what = "sqllock_txn_commit";
            rc = sqllock_txn_commit(txn);
        }
        if (rc != SQLLOCK_OK && sqllock_retryable(rc)) {
            sqllock_txn_free(txn);
            txn = NULL;
            w->busy++;
            continue;
        }
        break;
    }
    if (rc != SQLLOCK_OK)
        wfail(w, "%s(id %lld): %s: %s", what, (long long)key.number,
              sqllock_errname(rc), sqllock_errmsg(w->db));
    sqllock_txn_free(txn);
    return rc == SQLLOCK_OK ? 0 : -1;
}

/* Conditional UPDATE: qty = qty - 1 WHERE qty >= 1, one statement.
 * Both scenarios retry SQLLOCK_EDBBUSY (SQLite's busy timeout, which its
 * unfair busy handler reaches under 8 writers) and count it. */
static int update_tx(worker *w)
{
    sqllock_cell key = SQLLOCK_NUMBER(pick_id(w));
    sqllock_cell sub = { "qty", SQLLOCK_OP_SUB, NULL, 1 };
    sqllock_cell enough = { "qty", SQLLOCK_OP_GE, NULL, 1 };
    int attempt, rc = SQLLOCK_EDBBUSY;

    for (attempt = 0; attempt < CAS_MAX_ATTEMPTS && rc == SQLLOCK_EDBBUSY;
         attempt++) {
        rc = sqllock_table_update(w->db, &w->inv, &key, &sub, 1, &enough, 1);
        if (rc == SQLLOCK_EDBBUSY)
            w->busy++;
    }
    if (rc != SQLLOCK_OK)
        return wfail(w, "sqllock_table_update(id %lld): %s: %s",
                     (long long)key.number, sqllock_errname(rc),
                     sqllock_errmsg(w->db));
    return 0;
}

/* Creates bench_inv_<pid> with INV_ROWS rows, on the handle's own
 * connection. */
static void inv_create(const bench_driver *bd, sqllock_db *db)
{
    size_t cap = 64 + (size_t)INV_ROWS * 48, len;
    char *sql = malloc(cap);
    int i;

    if (sql == NULL)
        bu_die("out of memory");
    snprintf(g_inv_table, sizeof g_inv_table, "bench_inv_%ld",
             (long)getpid());
    snprintf(sql, cap, "DROP TABLE IF EXISTS %s", g_inv_table);
    bd->exec(sqllock_db_native(db), sql);
    snprintf(sql, cap, "CREATE TABLE %s (id BIGINT PRIMARY KEY, "
             "qty BIGINT NOT NULL, version BIGINT NOT NULL)", g_inv_table);
    bd->exec(sqllock_db_native(db), sql);
    len = (size_t)snprintf(sql, cap, "INSERT INTO %s (id, qty, version) "
                           "VALUES ", g_inv_table);
    for (i = 1; i <= INV_ROWS; i++)
        len += (size_t)snprintf(sql + len, cap - len, "%s(%d, %lld, 1)",
                                i > 1 ? ", " : "", i, INV_QTY);
    bd->exec(sqllock_db_native(db), sql);
    free(sql);
}

/* Every write took 1 from qty and added 1 to version: checks that
 * qty + version is still INV_QTY + 1 on every row, then drops the table.
 * Returns the decrements counted on the rows. */
static long long inv_check_drop(const bench_driver *bd, sqllock_db *db)
{
    sqllock_table t = { g_inv_table, "id", "version" };
    long long total = 0;
    char sql[96];
    int i, rc;

    for (i = 1; i <= INV_ROWS; i++) {
        sqllock_cell key = SQLLOCK_NUMBER(i);
        int64_t qty, version;
        rc = sqllock_table_get(db, &t, &key, inv_columns, 1, &qty, &version);
        if (rc != SQLLOCK_OK)
            bu_die("reading back row %d: %s", i, sqllock_errmsg(db));
        if (qty + version != INV_QTY + 1)
            bu_die("row %d: qty %lld, version %lld: a decrement was lost or "
                "doubled", i, (long long)qty, (long long)version);
        total += (long long)(version - 1);
    }
    snprintf(sql, sizeof sql, "DROP TABLE %s", g_inv_table);
    bd->exec(sqllock_db_native(db), sql);
    g_inv_table[0] = '\0';
    return total;
}

static void opt_print_row(const row *r, const char *rows, double vs_floor,
                          int cas)
{
    printf("%-28s %6s %7d %9.0f %9.0f %9.0f", r->label, rows, r->clients,
           r->med.rate, r->med.p50, r->med.p99);
    if (vs_floor > 0)
        printf(" %9.2f", vs_floor);
    else
        printf(" %9s", "");
    if (cas)
        printf(" %12.3f", r->med.conflicts);
    else
        printf(" %12s", "");
    printf(" %11.1f\n", r->med.cpu_us);
}

static void opt_csv_row(const config *cfg, const char *driver,
                        const char *desc, const row *r, int rows,
                        double vs_floor, int cas)
{
    int i;

    if (cfg->csv == NULL)
        return;
    fprintf(cfg->csv, "%s,\"%s\",\"%s\",", driver, desc, r->label);
    if (rows > 0)
        fprintf(cfg->csv, "%d", rows);
    fprintf(cfg->csv, ",%d,%g,%d,%.1f,%.1f,%.1f,%.1f,%.1f,%.3f,",
            r->clients, cfg->secs, r->nreps, r->med.rate, r->med.p50,
            r->med.p99, r->med.max, r->med.cpu_us, vs_floor);
    if (cas)
        fprintf(cfg->csv, "%.4f", r->med.conflicts);
    for (i = 0; i < 3; i++) {
        fputc(',', cfg->csv);
        if (i < r->nreps)
            fprintf(cfg->csv, "%.1f", r->reps[i].rate);
    }
    fputc('\n', cfg->csv);
}

/* The floor, FOR UPDATE, CAS and conditional UPDATE, each on one hot row
 * and on INV_ROWS rows, at every client count: one table. */
static void bench_optimistic(const config *cfg, const char *url)
{
    /* The points of one client count, in table order; kind 0 floor,
     * 1 CAS, 2 UPDATE, 3 FOR UPDATE. */
    static const struct { int kind, nrows; } pts[OPT_POINTS] = {
        { 0, 0 }, { 3, 1 }, { 1, 1 }, { 2, 1 },
        { 3, INV_ROWS }, { 1, INV_ROWS }, { 2, INV_ROWS },
    };
    const bench_driver *bd;
    worker *ws;
    sqllock_db *db;
    char desc[200], pattern[64], rows_txt[16];
    row rows[8][OPT_POINTS];
    int c, s, rep, rc, i;
    long long counted;
    long busy = 0;

    db = bu_open(url);
    rc = sqllock_init(db);
    if (rc != SQLLOCK_OK)
        bu_die("sqllock_init on %s: %s", url, sqllock_errmsg(db));
    bd = find_driver(sqllock_db_driver(db));
    if (bd == NULL)
        bu_die("%s: the bench has no '%s' part", url, sqllock_db_driver(db));
    floor_setup(cfg, bd, db);
    inv_create(bd, db);
    ws = calloc((size_t)cfg->max_clients, sizeof *ws);
    if (ws == NULL)
        bu_die("out of memory");
    for (c = 0; c < cfg->nclients; c++) {
        pair_fn fns[4];
        int n = cfg->clients[c];

        fns[0] = bd->floor_pair;
        fns[1] = cas_tx;
        fns[2] = update_tx;
        fns[3] = forupdate_tx;
        open_workers(bd, url, ws, n);
        for (i = 0; i < n; i++) {
            ws[i].fu_rmw = bd->fu_rmw;
            ws[i].inv.table = g_inv_table;
            ws[i].inv.key_column = "id";
            ws[i].inv.version_column = "version";
            ws[i].rng = (0x9E3779B97F4A7C15ULL * (unsigned long long)
                         (i + 1)) ^ ((unsigned long long)getpid() << 20) ^ 1;
        }
        if (c == 0)
            bd->describe(&ws[0], desc, sizeof desc);
        for (s = 0; s < OPT_POINTS; s++) {
            static const char *const labels[4] = {
                NULL, "CAS get+cas (retried)", "conditional UPDATE",
                "FOR UPDATE lock+read+write" };
            rows[c][s].label = pts[s].kind == 0 ? bd->floor_label
                                                : labels[pts[s].kind];
            rows[c][s].clients = n;
            rows[c][s].nreps = cfg->reps;
            memset(rows[c][s].wal, 0, sizeof rows[c][s].wal);
            memset(rows[c][s].reps, 0, sizeof rows[c][s].reps);
        }
        for (rep = 0; rep < cfg->reps; rep++) {
            for (s = 0; s < OPT_POINTS; s++) {
                /* A rotating order, so no scenario always runs first. */
                int k = (s + rep) % OPT_POINTS;
                for (i = 0; i < n; i++)
                    ws[i].nrows = pts[k].nrows;
                run_point(ws, n, fns[pts[k].kind], cfg->secs,
                          &rows[c][k].reps[rep]);
                busy += rows[c][k].reps[rep].busy;
                fprintf(stderr, "  %s %d clients, %4d rows, run %d: %-26s "
                        "%8.0f tx/s (%ld tx, %.3f conflicts/tx, slowest "
                        "%.0f ms)\n", bd->name, n, pts[k].nrows, rep + 1,
                        rows[c][k].label, rows[c][k].reps[rep].rate,
                        rows[c][k].reps[rep].pairs,
                        rows[c][k].reps[rep].conflicts,
                        rows[c][k].reps[rep].max / 1000);
            }
        }
        for (s = 0; s < OPT_POINTS; s++)
            finish_row(&rows[c][s]);
        if (c == cfg->nclients - 1) {
            snprintf(pattern, sizeof pattern, "sqllock-bench:%ld:%%",
                     (long)getpid());
            bd->cleanup(&ws[0], pattern);
        }
        close_workers(bd, ws, n);
    }
    free(ws);
    counted = inv_check_drop(bd, db);
    sqllock_close(db);

    printf("\n%s row locks and optimistic updates (%s), %g s x %d, "
           "median\n", bd->name, desc, cfg->secs, cfg->reps);
    printf("%-28s %6s %7s %9s %9s %9s %9s %12s %11s\n", "scenario", "rows",
           "clients", "tx/s", "p50 us", "p99 us", "vs floor", "conflicts/tx",
           "client CPU");
    for (c = 0; c < cfg->nclients; c++) {
        double fl = rows[c][0].med.rate;
        for (s = 0; s < OPT_POINTS; s++) {
            const row *r = &rows[c][s];
            int cas = pts[s].kind == 1;
            if (pts[s].kind == 0)
                snprintf(rows_txt, sizeof rows_txt, "-");
            else if (pts[s].nrows == 1)
                snprintf(rows_txt, sizeof rows_txt, "1 hot");
            else
                snprintf(rows_txt, sizeof rows_txt, "%d", pts[s].nrows);
            opt_print_row(r, rows_txt, s == 0 ? 0 : r->med.rate / fl, cas);
            opt_csv_row(cfg, bd->name, desc, r, pts[s].nrows,
                        r->med.rate / fl, cas);
            /* The floor goes to both suites, so that each has its own. */
            if (pts[s].kind == 0) {
                res_put(cfg, "rowlock", bd->name, "floor", r, 0, NULL, 0,
                        r->med.cpu_us, "us CPU/tx");
                res_put(cfg, "optimistic", bd->name, "floor", r, 0, NULL, 0,
                        r->med.cpu_us, "us CPU/tx");
            } else {
                res_put(cfg, pts[s].kind == 3 ? "rowlock" : "optimistic",
                        bd->name, r->label, r, pts[s].nrows, "floor", fl,
                        cas ? r->med.conflicts : r->med.cpu_us,
                        cas ? "conflicts/tx" : "us CPU/tx");
            }
        }
    }
    printf("  tx: one completed decrement of qty in "
           "bench_inv_<pid>(id, qty, version);\n"
           "  FOR UPDATE = sqllock_txn_begin() + sqllock_txn_lock_rows(WAIT) "
           "+ SELECT qty and\n"
           "  UPDATE qty on its connection, by hand + sqllock_txn_commit();\n"
           "  CAS = sqllock_table_get() + sqllock_table_cas(qty - 1 if "
           "qty >= 1), retried at once on\n"
           "  SQLLOCK_CONFLICT (no backoff), latency including the retries; "
           "UPDATE = one\n"
           "  sqllock_table_update(qty - 1 WHERE qty >= 1). Floor tx = one "
           "pair of the floor's\n"
           "  two statements, as in the lease tables. \"1 hot\": every "
           "client on id 1; %d: a\n"
           "  random id per tx.\n", INV_ROWS);
    printf("  conflicts/tx: SQLLOCK_CONFLICT results per completed "
           "decrement\n");
    printf("  check: qty + version unchanged on all %d rows (%lld "
           "decrements, warm-ups included)\n", INV_ROWS, counted);
    if (busy > 0)
        printf("  retryable statuses met and retried %ld times in all runs "
               "(SQLLOCK_EDBBUSY: the busy\n  timeout ran out; FOR UPDATE "
               "also ELOCKED, EDEADLOCK, ESERIALIZATION)\n", busy);
    if (bd->floor_note != NULL)
        printf("  %s\n", bd->floor_note);
    fflush(stdout);
}

/* ------------------------------------------------------------------------ */
/* main                                                                     */
/* ------------------------------------------------------------------------ */

static void usage(void)
{
    fprintf(stderr,
        "usage: bench_drivers [--seconds N] [--quick] [--reps N] "
        "[--clients 1,8]\n"
        "                     [--csv FILE] [--results FILE] [--no-wakeup] "
        "[--fast]\n"
        "                     [--release-compare | --optimistic] "
        "[--only SCENARIO]\n"
        "                     [--smoke] URL...\n"
        "  --seconds N        length of each run (default 5)\n"
        "  --smoke            the default scenarios, --optimistic and (on "
        "PostgreSQL)\n"
        "                     --release-compare, each point once for 0.2 s "
        "with 1 and 2\n"
        "                     clients: a check that the program runs and that "
        "its SQL is\n"
        "                     the driver's (ctest's bench_smoke_drivers_*); "
        "the URLs default\n"
        "                     to the tests' (bench_util.h)\n"
        "  --quick            runs of 2 s\n"
        "  --reps N           repetitions of each run; the median is shown "
        "(default 3)\n"
        "  --clients LIST     client counts, each its own thread and "
        "connection (default 1,8)\n"
        "  --csv FILE         also write the rows as CSV, in this program's "
        "own columns\n"
        "  --results FILE     also append the rows to FILE in the common "
        "results format of\n"
        "                     bench/README.md (suite uncontended; rowlock "
        "and optimistic with\n"
        "                     --optimistic; release with "
        "--release-compare)\n"
        "  --release-compare  PostgreSQL only: async release commit vs plain "
        "DELETE, by hand\n"
        "  --optimistic       FOR UPDATE row locks, optimistic CAS and "
        "conditional UPDATE on an\n"
        "                     application table (hot row and %d rows) "
        "instead of the lease\n"
        "                     scenarios\n"
        "  --only SCENARIO    floor, hand, lib or native: run one scenario "
        "(to diagnose)\n"
        "  --no-wakeup        the library's leases with SQLLOCK_LEASE_NO_WAKEUP "
        "(no NOTIFY\n"
        "                     on PostgreSQL releases)\n"
        "  --fast             the library's leases in fast mode "
        "(SQLLOCK_LEASE_FAST,\n"
        "                     PostgreSQL only); results under suite "
        "\"fast\"\n"
        "Scenarios of the default run: the floor (two trivial statements), "
        "the library's\n"
        "lock SQL by hand, sqllock, and the native lock (pg_advisory_lock / "
        "GET_LOCK on the\n"
        "same connection; none on SQLite).\n"
        "URLs: sqlite:///path.db postgres://... mysql://...\n", INV_ROWS);
    exit(2);
}

static void parse_clients(config *cfg, const char *list)
{
    cfg->nclients = bu_parse_clients(list, cfg->clients, &cfg->max_clients);
}

/* bu_die()'s last word while --optimistic's table exists. */
static void inv_note(void)
{
    if (g_inv_table[0] != '\0')
        fprintf(stderr, "bench_drivers: table %s may be left behind: drop "
                "it by hand\n", g_inv_table);
}

/* --smoke: the default scenarios, then --optimistic, and on PostgreSQL
 * --release-compare, each point once for BU_SMOKE_SECS. */
static void smoke_url(config *cfg, const char *url)
{
    bench_url(cfg, url);
    cfg->optimistic = 1;
    bench_optimistic(cfg, url);
    cfg->optimistic = 0;
    if (strncmp(url, "postgres", 8) == 0) {
        cfg->release_compare = 1;
        release_compare(cfg, url);
        cfg->release_compare = 0;
    }
}

int main(int argc, char **argv)
{
    config cfg;
    bu_args args = { 5, 3, MAX_REPS, NULL, 0, { NULL }, 0 };
    int i, took;

    memset(&cfg, 0, sizeof cfg);
    bu_init("bench_drivers", "run aborted (lease rows left behind expire "
            "after 30 s)");
    bu_on_die(inv_note);
    parse_clients(&cfg, "1,8");
    for (i = 1; i < argc; i++) {
        const char *a = argv[i];
        if ((took = bu_args_take(&args, argc, argv, &i)) != 0) {
            if (took < 0)
                usage();
        } else if (strcmp(a, "--clients") == 0 && i + 1 < argc) {
            parse_clients(&cfg, argv[++i]);
        } else if (strcmp(a, "--csv") == 0 && i + 1 < argc) {
            cfg.csv_path = argv[++i];
        } else if (strcmp(a, "--only") == 0 && i + 1 < argc) {
            /* For diagnosis: one scenario only; the ratios are then
             * meaningless. */
            const char *v = argv[++i];
            cfg.only = strcmp(v, "floor") == 0 ? SC_FLOOR + 1
                       : strcmp(v, "hand") == 0 ? SC_HAND + 1
                       : strcmp(v, "lib") == 0 ? SC_LIB + 1
                       : strcmp(v, "native") == 0 ? SC_NATIVE + 1 : -1;
            if (cfg.only < 0)
                usage();
        } else if (strcmp(a, "--release-compare") == 0) {
            cfg.release_compare = 1;
        } else if (strcmp(a, "--no-wakeup") == 0) {
            g_lease_flags |= SQLLOCK_LEASE_NO_WAKEUP;
        } else if (strcmp(a, "--fast") == 0) {
            g_lease_flags |= SQLLOCK_LEASE_FAST;
        } else if (strcmp(a, "--optimistic") == 0) {
            cfg.optimistic = 1;
        } else {
            usage();
        }
    }
    if (args.smoke) {
        parse_clients(&cfg, "1,2");
        if (cfg.optimistic || cfg.release_compare || cfg.only)
            usage();
    }
    bu_args_finish(&args, 1);
    cfg.secs = args.secs;
    cfg.reps = args.reps;
    cfg.results_path = args.results;
    if (args.nurls == 0 || (cfg.optimistic && (cfg.release_compare || cfg.only)))
        usage();
#if defined(SQLLOCK_HAVE_MYSQL)
    if (mysql_library_init(0, NULL, NULL) != 0)
        bu_die("mysql_library_init failed");
#endif
    if (cfg.csv_path != NULL) {
        cfg.csv = fopen(cfg.csv_path, "w");
        if (cfg.csv == NULL)
            bu_die("cannot write %s: %s", cfg.csv_path, strerror(errno));
    }
    if (cfg.results_path != NULL)
        cfg.results = bu_results_open(cfg.results_path);
    if (cfg.csv != NULL && cfg.optimistic)
        fprintf(cfg.csv, "driver,server,scenario,rows,clients,seconds,reps,"
                "tx_per_s,p50_us,p99_us,max_us,client_cpu_us_per_tx,vs_floor,"
                "conflicts_per_tx,run1_tx_per_s,run2_tx_per_s,"
                "run3_tx_per_s\n");
    else if (cfg.csv != NULL) {
        fprintf(cfg.csv, "driver,server,scenario,clients,seconds,reps,"
                "pairs_per_s,p50_us,p99_us,max_us,client_cpu_us_per_pair,vs_floor,vs_by_hand,"
                "wal_syncs_per_pair,run1_pairs_per_s,run2_pairs_per_s,"
                "run3_pairs_per_s\n");
    }
    printf("bench_drivers: sqllock %s, %g s per run, %d runs, clients",
           sqllock_version_string(), cfg.secs, cfg.reps);
    for (i = 0; i < cfg.nclients; i++)
        printf("%s%d", i ? "," : " ", cfg.clients[i]);
    printf("\n");
    fflush(stdout);
    for (i = 0; i < args.nurls; i++) {
        if (args.smoke)
            smoke_url(&cfg, args.urls[i]);
        else if (cfg.release_compare)
            release_compare(&cfg, args.urls[i]);
        else if (cfg.optimistic)
            bench_optimistic(&cfg, args.urls[i]);
        else
            bench_url(&cfg, args.urls[i]);
    }
    if (cfg.csv != NULL && (ferror(cfg.csv) | fclose(cfg.csv)) != 0)
        bu_die("writing %s failed", cfg.csv_path);
    if (cfg.results != NULL &&
        (ferror(cfg.results) | fclose(cfg.results)) != 0)
        bu_die("writing %s failed", cfg.results_path);
#if defined(SQLLOCK_HAVE_MYSQL)
    mysql_library_end();
#endif
    bu_smoke_done();
    return 0;
}
