/*
 * bench_scale.c -- lease latency with a large lock table, and the reaper's
 * throughput on a large backlog of expired leases, on every driver.
 *
 *   bench_scale [--seconds N] [--quick] [--reps N] [--results FILE]
 *               [--clients 1,8] [--rows 0,100000,1000000]
 *               [--reap-rows N] [--reap-reps N] [--batch N]
 *               [--only scale|reaper] URL...
 *
 *   e.g. bench_scale --results out.csv sqlite:///tmp/scale.db \
 *            postgres://user:pw@127.0.0.1:5432/db mysql://user:pw@host/db
 *
 * Two suites per URL (sqllock_init() is run on it first):
 *
 *   scale    sqllock_lease_try_acquire() + sqllock_lease_release() pairs,
 *            with 1 and 8 clients, while the lock table holds 0, 100 000
 *            and 1 000 000 LIVE lease rows of other names (expiring in 30
 *            days and more). The figures of each row count are compared
 *            with those of the empty table, measured in the same run.
 *
 *   reaper   1 000 000 EXPIRED lease rows (expired a day ago and more),
 *            then, each on a fresh fill of the same rows:
 *            - sqllock_reap() alone, with the default batch (1000) and a
 *              larger one (--batch, default 10000): expired rows deleted
 *              per second over the whole pass;
 *            - 8 clients doing acquire+release pairs on names of their own,
 *              first with no reaper running (while the expired rows are
 *              there), then while a reaper thread (sqllock_reaper_start(),
 *              default batch) deletes those rows: how much the reaper
 *              raises their latency, and how fast it reaps under load.
 *            The three scenarios run in a rotating order across
 *            repetitions.
 *
 * THE ROWS. The filler rows are named "sqllock-bench-fill:<n>", with an
 * owner of 32 hex digits, holder "sqllock-bench-fill" and a token from the
 * database's own counter (PostgreSQL's sequence, SQLite's fence row, and
 * on MySQL a row of sqllock_token per name, as every grant leaves one).
 * They are written in bulk on the handle's own connection
 * (sqllock_db_native()) with set-based SQL, 100 000 rows per transaction:
 * generate_series() on PostgreSQL, a cross join of digit lists on MySQL
 * (no recursive CTE: MariaDB stops those at 1000 rows by default), a
 * recursive CTE on SQLite. Each fill is followed by ANALYZE of the lock
 * tables, so that the planner knows their size (on PostgreSQL VACUUM
 * (ANALYZE), so that autovacuum does not start on the fresh rows in the
 * middle of a measurement). Every filler row is
 * deleted at the end, and at the start rows left by an aborted earlier
 * run are deleted (do not run two copies on one database at once). On
 * PostgreSQL, VACUUM runs on sqllock_lease after every bulk delete and
 * every reaper pass, so that each fill starts on a table without dead
 * rows.
 *
 * THE GRACE TIME. The reaper runs with a grace time of one hour: it
 * deletes the rows that expired more than an hour ago, which are the
 * filler rows, and leaves alone the leases of other programs that expired
 * a moment ago (tests on a shared database count what they reap). It is
 * the same statement as with no grace.
 *
 * MySQL's reaper pass also trims the per-name rows of sqllock_token,
 * after the lease rows (not counted in the rows deleted). So that the two
 * phases can be told apart, while a reaper runs on MySQL this program
 * polls, every 50 ms, whether any expired lease row is left, and reports
 * the rate of the lease DELETEs alone beside that of the whole pass.
 *
 * Each client is a thread with its own handle and its own lock name
 * ("sqllock-bench-scale:<pid>:<i>", "sqllock-bench-reap:<pid>:<i>"), ttl
 * 30 s, so no two clients contend for a name (on SQLite they still share
 * the file's one write lock). A pair that meets SQLLOCK_EDBBUSY (SQLite's
 * busy timeout running out) is retried and counted. Each point runs for
 * a fixed time (the "with reaper" point: for as long as the reaper's
 * pass takes), repeated, and the table shows the median of each figure.
 *
 * This is a measuring program, not a test. Any failed call aborts the run
 * with a message.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sqllock.h>

#include "bench_util.h"

#if defined(SQLLOCK_HAVE_SQLITE)
#include <sqlite3.h>
#endif
#if defined(SQLLOCK_HAVE_POSTGRES)
#include <libpq-fe.h>
#endif
#if defined(SQLLOCK_HAVE_MYSQL)
#include <mysql.h>
#endif

#define PROG "bench_scale"

/* The filler rows: names from FILL_LO (inclusive) to FILL_HI (exclusive),
 * ';' being the byte after ':'. */
#define FILL_PREFIX "sqllock-bench-fill:"
#define FILL_LO "'sqllock-bench-fill:'"
#define FILL_HI "'sqllock-bench-fill;'"
#define FILL_HOLDER "sqllock-bench-fill"
#define FILL_CHUNK 100000L

#define SCALE_PREFIX "sqllock-bench-scale:"
#define REAP_PREFIX "sqllock-bench-reap:"

#define TTL_MS 30000
#define GRACE_MS INT64_C(3600000)
#define DEFAULT_BATCH 1000       /* the reaper's own default */
#define REAPER_INTERVAL_MS 200   /* between passes of the reaper thread */
#define REAP_MAX_S 7200.0        /* a pass longer than this fails the run */
#define WARMUP_PAIRS 10
#define BUSY_RETRIES 1000
#define MAX_CLIENTS 64
#define MAX_LEVELS 8
#define MAX_REPS 15

/* ------------------------------------------------------------------------ */
/* Errors, clocks, the results file                                         */
/* ------------------------------------------------------------------------ */

/* The common results CSV (bench/README.md): appended to, with the header
 * only when the file is empty. */
static FILE *g_results;
static const char *g_results_path;

/* One row; negative numbers and NULL texts are written as empty fields. */
static void csv_row(const char *suite, const char *driver,
                    const char *scenario, int clients, long rows,
                    double ops, double p50, double p99, double ratio,
                    const char *vs, double value, const char *unit)
{
#define OR_NAN_(v) ((v) >= 0 ? (v) : NAN)
    bu_result r = { suite, driver, scenario, clients, rows, OR_NAN_(ops),
                    OR_NAN_(p50), OR_NAN_(p99), OR_NAN_(ratio), vs,
                    OR_NAN_(value), unit };
#undef OR_NAN_

    bu_results_put(g_results, &r);
}

/* ------------------------------------------------------------------------ */
/* The database parts: bulk SQL on the native connection                    */
/* ------------------------------------------------------------------------ */

/*
 * What the bench does to each kind of database by hand, on the handle's
 * own connection. Every statement is built from integers and constants
 * only, so nothing needs binding.
 */
typedef struct bench_driver {
    const char *name;                /* as sqllock_db_driver() says */
    /* Inserts filler rows [start, start + count), live or expired, in one
     * transaction. */
    void (*fill)(void *native, long start, long count, int expired);
    /* ANALYZE of the lock tables (PostgreSQL: VACUUM (ANALYZE)). */
    void (*analyze)(void *native);
    /* Runs `sql` and returns the rows it changed, or the first column of
     * its first row when it returns rows. */
    long long (*exec)(void *native, const char *sql);
    /* VACUUM where it matters (PostgreSQL), else nothing. */
    void (*tidy)(void *native);
    void (*describe)(void *native, char *buf, size_t n);
    /* The reaper also trims sqllock_token (MySQL): filler rows need token
     * rows, and the lease DELETEs are timed apart from the trim. */
    int has_token_rows;
    /* A query that returns 1 while any filler lease row more than 23 hours
     * expired is left (MySQL only; NULL elsewhere). */
    const char *probe_expired;
} bench_driver;

#if defined(SQLLOCK_HAVE_POSTGRES)
static long long pg_exec(void *native, const char *sql)
{
    PGresult *r = PQexec(native, sql);
    long long n = 0;

    if (r == NULL || (PQresultStatus(r) != PGRES_COMMAND_OK &&
                      PQresultStatus(r) != PGRES_TUPLES_OK))
        bu_die("%.70s...: %s", sql, r != NULL ? PQresultErrorMessage(r)
                                           : PQerrorMessage(native));
    if (PQresultStatus(r) == PGRES_TUPLES_OK) {
        if (PQntuples(r) > 0 && PQnfields(r) > 0)
            n = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
    } else {
        n = strtoll(PQcmdTuples(r), NULL, 10);
    }
    PQclear(r);
    return n;
}

/* Live rows expire 30 days from now plus n ms, expired ones expired a day
 * ago minus n ms: distinct times, as real leases have. */
static void pg_fill(void *native, long start, long count, int expired)
{
    char sql[1024];

    snprintf(sql, sizeof sql,
             "INSERT INTO sqllock_lease "
             "(name, owner, holder, token, acquired_at, expires_at) "
             "SELECT '" FILL_PREFIX "' || g, md5('" FILL_PREFIX "' || g || "
             "':' || pg_backend_pid()), '" FILL_HOLDER "', "
             "nextval('sqllock_token_seq'), %s, %s "
             "FROM generate_series(%ld, %ld) AS g",
             expired ? "now() - interval '2 days'" : "now()",
             expired ? "now() - interval '1 day' - g * interval '1 ms'"
                     : "now() + interval '30 days' + g * interval '1 ms'",
             start, start + count - 1);
    if (pg_exec(native, sql) != count)
        bu_die("PostgreSQL fill inserted fewer rows than %ld", count);
}

/* VACUUM too: a million freshly inserted rows would otherwise bring
 * autovacuum onto the table in the middle of a measurement. */
static void pg_analyze(void *native)
{
    pg_exec(native, "VACUUM (ANALYZE) sqllock_lease");
}

static void pg_tidy(void *native)
{
    pg_exec(native, "VACUUM sqllock_lease");
}

static void pg_describe(void *native, char *buf, size_t n)
{
    const char *v = PQparameterStatus(native, "server_version");
    const char *host = PQhost(native);
    size_t len = v != NULL ? strcspn(v, " ") : 0;

    snprintf(buf, n, "PostgreSQL %.*s, %s", (int)len, v != NULL ? v : "?",
             host != NULL && host[0] != '\0' ? host : "local socket");
}
#endif

#if defined(SQLLOCK_HAVE_MYSQL)
static long long my_exec(void *native, const char *sql)
{
    MYSQL_RES *res;
    long long n;

    if (mysql_real_query(native, sql, (unsigned long)strlen(sql)) != 0)
        bu_die("%.70s...: %s (%u)", sql, mysql_error(native),
            mysql_errno(native));
    res = mysql_store_result(native);
    if (res == NULL) {
        if (mysql_field_count(native) != 0)
            bu_die("%.70s...: %s", sql, mysql_error(native));
        return (long long)mysql_affected_rows(native);
    }
    n = 0;
    {
        MYSQL_ROW row = mysql_fetch_row(res);
        if (row != NULL && mysql_num_fields(res) > 0 && row[0] != NULL)
            n = strtoll(row[0], NULL, 10);
    }
    mysql_free_result(res);
    return n;
}

/* n = 0..99999 from five digit lists (portable to MySQL 8.0 and MariaDB,
 * whose recursive CTEs stop at 1000 rows by default). */
#define MY_DIGITS "(SELECT 0 AS d UNION ALL SELECT 1 UNION ALL SELECT 2 " \
    "UNION ALL SELECT 3 UNION ALL SELECT 4 UNION ALL SELECT 5 UNION ALL "   \
    "SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9)"
#define MY_SEQ "(SELECT a.d + 10 * b.d + 100 * c.d + 1000 * e.d + "        \
    "10000 * f.d AS n FROM " MY_DIGITS " AS a CROSS JOIN " MY_DIGITS       \
    " AS b CROSS JOIN " MY_DIGITS " AS c CROSS JOIN " MY_DIGITS " AS e "   \
    "CROSS JOIN " MY_DIGITS " AS f)"

/* As a grant does, each name gets its row in sqllock_token (the token is
 * the table's AUTO_INCREMENT), and the lease row carries that token. */
static void my_fill(void *native, long start, long count, int expired)
{
    char sql[3072];
    long long n;

    if (count > 100000)
        bu_die("MySQL fill: at most 100000 rows per chunk");
    my_exec(native, "START TRANSACTION");
    snprintf(sql, sizeof sql,
             "INSERT INTO sqllock_token (name) "
             "SELECT CONCAT('" FILL_PREFIX "', %ld + s.n) FROM " MY_SEQ
             " AS s WHERE s.n < %ld", start, count);
    n = my_exec(native, sql);
    if (n != count)
        bu_die("MySQL fill: %lld token rows inserted, not %ld", n, count);
    snprintf(sql, sizeof sql,
             "INSERT INTO sqllock_lease "
             "(name, owner, holder, token, acquired_at, expires_at) "
             "SELECT t.name, MD5(CONCAT(t.name, ':', CONNECTION_ID())), '"
             FILL_HOLDER "', t.token, %s, "
             "NOW(6) %s INTERVAL ((%ld + s.n) * 1000) MICROSECOND "
             "FROM " MY_SEQ " AS s JOIN sqllock_token AS t "
             "ON t.name = CONCAT('" FILL_PREFIX "', %ld + s.n) "
             "WHERE s.n < %ld",
             expired ? "NOW(6) - INTERVAL 2 DAY" : "NOW(6)",
             expired ? "- INTERVAL 1 DAY -" : "+ INTERVAL 30 DAY +",
             start, start, count);
    n = my_exec(native, sql);
    if (n != count)
        bu_die("MySQL fill: %lld lease rows inserted, not %ld", n, count);
    my_exec(native, "COMMIT");
}

static void my_analyze(void *native)
{
    my_exec(native, "ANALYZE TABLE sqllock_lease, sqllock_token");
}

static void my_tidy(void *native)
{
    (void)native;
}

static void my_describe(void *native, char *buf, size_t n)
{
    const char *v = mysql_get_server_info(native);
    const char *host = mysql_get_host_info(native);
    int maria = v != NULL && strstr(v, "MariaDB") != NULL;

    if (v == NULL)
        v = "?";
    if (host == NULL)
        host = "?";
    snprintf(buf, n, "%s %.*s, %.*s", maria ? "MariaDB" : "MySQL",
             (int)strcspn(v, "-"), v, (int)strcspn(host, " "), host);
}
#endif

#if defined(SQLLOCK_HAVE_SQLITE)
/* drivers/sqlite/sqlite.c NOW_MS: the lock table's clock. */
#define SQ_NOW_MS \
    "CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER)"

static long long sq_exec(void *native, const char *sql)
{
    sqlite3_stmt *st = NULL;
    long long n = 0;
    int rc;

    if (sqlite3_prepare_v2(native, sql, -1, &st, NULL) != SQLITE_OK)
        bu_die("%.70s...: %s", sql, sqlite3_errmsg(native));
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        n = sqlite3_column_int64(st, 0);
        while ((rc = sqlite3_step(st)) == SQLITE_ROW)
            ;
    } else if (rc == SQLITE_DONE) {
        n = sqlite3_changes(native);
    }
    if (rc != SQLITE_DONE) {
        const char *msg = sqlite3_errmsg(native);
        sqlite3_finalize(st);
        bu_die("%.70s...: %s", sql, msg);
    }
    sqlite3_finalize(st);
    return n;
}

/* The token counter is the fence row: the grant trigger moves it to each
 * new row's token, so the filler's tokens continue it. */
static void sq_fill(void *native, long start, long count, int expired)
{
    char sql[1024];
    long long base;

    sq_exec(native, "BEGIN IMMEDIATE");
    base = sq_exec(native, "SELECT token FROM sqllock_fence WHERE id = 1");
    snprintf(sql, sizeof sql,
             "WITH RECURSIVE g(n) AS (SELECT %ld UNION ALL SELECT n + 1 "
             "FROM g WHERE n < %ld) "
             "INSERT INTO sqllock_lease "
             "(name, owner, holder, token, acquired_at, expires_at) "
             "SELECT '" FILL_PREFIX "' || n, lower(hex(randomblob(16))), '"
             FILL_HOLDER "', %lld + 1 + n - %ld, %s, %s FROM g",
             start, start + count - 1, base, start,
             expired ? SQ_NOW_MS " - 172800000" : SQ_NOW_MS,
             expired ? SQ_NOW_MS " - 86400000 - n"
                     : SQ_NOW_MS " + 2592000000 + n");
    if (sq_exec(native, sql) != count)
        bu_die("SQLite fill inserted fewer rows than %ld", count);
    sq_exec(native, "COMMIT");
}

static void sq_analyze(void *native)
{
    sq_exec(native, "ANALYZE sqllock_lease");
}

static void sq_tidy(void *native)
{
    (void)native;
}

static void sq_describe(void *native, char *buf, size_t n)
{
    const char *path = sqlite3_db_filename(native, "main");

    snprintf(buf, n, "SQLite %s, %s", sqlite3_libversion(),
             path != NULL ? path : "?");
}
#endif

static const bench_driver drivers[] = {
#if defined(SQLLOCK_HAVE_POSTGRES)
    { "postgres", pg_fill, pg_analyze, pg_exec, pg_tidy, pg_describe, 0,
      NULL },
#endif
#if defined(SQLLOCK_HAVE_MYSQL)
    { "mysql", my_fill, my_analyze, my_exec, my_tidy, my_describe, 1,
      "SELECT 1 FROM sqllock_lease "
      "WHERE expires_at < NOW(6) - INTERVAL 23 HOUR "
      "ORDER BY expires_at LIMIT 1" },
#endif
#if defined(SQLLOCK_HAVE_SQLITE)
    { "sqlite", sq_fill, sq_analyze, sq_exec, sq_tidy, sq_describe, 0,
      NULL },
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

static sqllock_db *open_db(const char *url)
{
    sqllock_db *db = bu_open(url);

    if (sqllock_db_native(db) == NULL)
        bu_die("%s: the handle has no native connection", url);
    return db;
}

/* Counts the lease rows whose names start with `prefix`. */
static long long count_prefix(const bench_driver *bd, void *native,
                              const char *table, const char *lo,
                              const char *hi)
{
    char sql[256];

    snprintf(sql, sizeof sql, "SELECT COUNT(*) FROM %s WHERE name >= '%s' "
             "AND name < '%s'", table, lo, hi);
    return bd->exec(native, sql);
}

/* The byte range of names that start with `prefix`: [prefix, hi), hi
 * being the prefix with its last byte (':') raised by one. */
static void prefix_range(const char *prefix, char *hi, size_t n)
{
    size_t len = strlen(prefix);

    snprintf(hi, n, "%s", prefix);
    if (len > 0 && len < n)
        hi[len - 1] = (char)(hi[len - 1] + 1);
}

/* Deletes the rows of names starting with `prefix` from the lock table
 * (and, on MySQL, from sqllock_token), 50 000 at a time; returns the
 * lease rows deleted. */
static long long remove_prefix(const bench_driver *bd, void *native,
                               const char *prefix)
{
    static const char *const tables[2] = { "sqllock_lease",
                                           "sqllock_token" };
    char sql[256], hi[64];
    long long total = 0, n;
    int t;

    prefix_range(prefix, hi, sizeof hi);
    for (t = 0; t < (bd->has_token_rows ? 2 : 1); t++) {
        if (strcmp(bd->name, "mysql") == 0) {
            snprintf(sql, sizeof sql, "DELETE FROM %s WHERE name >= '%s' "
                     "AND name < '%s' LIMIT 50000", tables[t], prefix, hi);
            do {
                n = bd->exec(native, sql);
                if (t == 0)
                    total += n;
            } while (n == 50000);
        } else {
            snprintf(sql, sizeof sql, "DELETE FROM %s WHERE name >= '%s' "
                     "AND name < '%s'", tables[t], prefix, hi);
            n = bd->exec(native, sql);
            if (t == 0)
                total += n;
        }
    }
    return total;
}

/* Fills rows [from, to) in chunks; returns the seconds it took. */
static double fill_rows(const bench_driver *bd, void *native, long from,
                        long to, int expired)
{
    double t0 = bu_now_s();
    long s;

    for (s = from; s < to; s += FILL_CHUNK) {
        long c = to - s < FILL_CHUNK ? to - s : FILL_CHUNK;
        bd->fill(native, s, c, expired);
    }
    return bu_now_s() - t0;
}

/* ------------------------------------------------------------------------ */
/* Clients                                                                  */
/* ------------------------------------------------------------------------ */

/* One client: a thread with its own handle and lock name (bench_util.h's
 * bu_client first, for bu_point_run()). */
typedef struct worker {
    bu_client bc;
    sqllock_db *db;
    sqllock_lease *lease;
    char name[96];
    long busy;                       /* SQLLOCK_EDBBUSY met and retried */
} worker;

/* One try-acquire and one release, each retried while the database stays
 * busy past its busy timeout (SQLite's write lock). */
static int lib_pair(bu_client *c)
{
    worker *w = (worker *)c;
    int rc, tries;

    for (tries = 0;; tries++) {
        rc = sqllock_lease_try_acquire(w->lease);
        if (rc != SQLLOCK_EDBBUSY || tries == BUSY_RETRIES)
            break;
        w->busy++;
    }
    if (rc != SQLLOCK_OK)
        return bu_fail(c, "sqllock_lease_try_acquire(%s): %s: %s", w->name,
                       sqllock_errname(rc), sqllock_errmsg(w->db));
    for (tries = 0;; tries++) {
        rc = sqllock_lease_release(w->lease);
        if (rc != SQLLOCK_EDBBUSY || tries == BUSY_RETRIES)
            break;
        w->busy++;
    }
    if (rc != SQLLOCK_OK)
        return bu_fail(c, "sqllock_lease_release(%s): %s: %s", w->name,
                       sqllock_errname(rc), sqllock_errmsg(w->db));
    return 0;
}

/* The warm-up's busy retries do not count. */
static void after_warmup(bu_client *c)
{
    ((worker *)c)->busy = 0;
}

static void open_workers(const char *url, worker *ws, int n,
                         const char *prefix)
{
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    int i, rc;

    o.ttl_ms = TTL_MS;
    for (i = 0; i < n; i++) {
        worker *w = &ws[i];
        memset(w, 0, sizeof *w);
        w->bc.index = i;
        snprintf(w->name, sizeof w->name, "%s%ld:%d", prefix,
                 (long)getpid(), i);
        w->db = open_db(url);
        rc = sqllock_lease_new(w->db, w->name, &o, &w->lease);
        if (rc != SQLLOCK_OK)
            bu_die("sqllock_lease_new: %s", sqllock_errmsg(w->db));
    }
}

static void close_workers(worker *ws, int n)
{
    int i;

    for (i = 0; i < n; i++) {
        sqllock_lease_free(ws[i].lease);
        sqllock_close(ws[i].db);
        bu_lat_free(&ws[i].bc.lat);
        memset(&ws[i], 0, sizeof ws[i]);
    }
}

/* One row of a table: every repetition, and the medians. */
typedef struct row {
    int nreps;
    bu_point reps[MAX_REPS];
    bu_point med;
    long busy;                       /* SQLLOCK_EDBBUSY retried, all runs */
} row;

/*
 * Runs `n` clients for `secs` after their warm-up, as repetition `rep` of
 * row `r`. When `during` is not NULL, the main thread calls it once the
 * clients are measuring, and the run ends when it returns (or at `secs`,
 * whichever comes first).
 */
static void run_point(worker *ws, int n, double secs,
                      void (*during)(void *ctx), void *ctx, row *r, int rep)
{
    bu_client *cs[MAX_CLIENTS] = { NULL };
    bu_run run = { lib_pair, secs, WARMUP_PAIRS, after_warmup, during, ctx };
    int i;

    for (i = 0; i < n; i++)
        cs[i] = &ws[i].bc;
    bu_point_run(cs, n, &run, &r->reps[rep]);
    for (i = 0; i < n; i++)
        r->busy += ws[i].busy;
}

static void finish_row(row *r)
{
    bu_point_median(r->reps, r->nreps, &r->med);
}

/* ------------------------------------------------------------------------ */
/* Configuration                                                            */
/* ------------------------------------------------------------------------ */

typedef struct config {
    double secs;
    int reps;
    int reap_reps;
    int clients[8];
    int nclients;
    long levels[MAX_LEVELS];         /* live rows of the scale suite */
    int nlevels;
    long reap_rows;
    int batch;                       /* the larger reaper batch */
    int reap_clients;                /* beside the reaper: 8 (smoke 2) */
    int scale, reaper;               /* which suites run */
} config;

/* ------------------------------------------------------------------------ */
/* The scale suite                                                          */
/* ------------------------------------------------------------------------ */

static void bench_scale(const config *cfg, const char *url,
                        const bench_driver *bd, sqllock_db *db,
                        const char *desc)
{
    void *native = sqllock_db_native(db);
    row rows[MAX_LEVELS][8];
    double fill_s[MAX_LEVELS], analyze_s[MAX_LEVELS], remove_s;
    long have = 0;
    long long removed, counted;
    worker ws[MAX_CLIENTS];
    char vs[32];
    long busy = 0;
    int l, c, rep;

    for (l = 0; l < cfg->nlevels; l++) {
        long want = cfg->levels[l];
        double t0;

        fill_s[l] = fill_rows(bd, native, have, want, 0);
        t0 = bu_now_s();
        bd->analyze(native);
        analyze_s[l] = bu_now_s() - t0;
        counted = count_prefix(bd, native, "sqllock_lease", FILL_PREFIX,
                               "sqllock-bench-fill;");
        if (counted != want)
            bu_die("%s: %lld filler rows in the lock table, not %ld", bd->name,
                counted, want);
        if (want > have)
            fprintf(stderr, "  %s scale: filled rows %ld..%ld (live) in "
                    "%.1f s (%.0f rows/s), ANALYZE %.2f s\n", bd->name,
                    have, want - 1, fill_s[l],
                    (double)(want - have) / fill_s[l], analyze_s[l]);
        have = want;
        for (c = 0; c < cfg->nclients; c++) {
            int n = cfg->clients[c];
            row *r = &rows[l][c];

            memset(r, 0, sizeof *r);
            r->nreps = cfg->reps;
            open_workers(url, ws, n, SCALE_PREFIX);
            for (rep = 0; rep < cfg->reps; rep++) {
                run_point(ws, n, cfg->secs, NULL, NULL, r, rep);
                fprintf(stderr, "  %s scale %7ld rows, %d clients, run %d: "
                        "%8.0f pairs/s p50 %6.0f us p99 %7.0f us (slowest "
                        "%.0f ms)\n", bd->name, want, n, rep + 1,
                        r->reps[rep].rate, r->reps[rep].p50,
                        r->reps[rep].p99, r->reps[rep].max / 1000);
            }
            finish_row(r);
            close_workers(ws, n);
        }
    }
    {
        double t0 = bu_now_s();
        removed = remove_prefix(bd, native, FILL_PREFIX);
        bd->tidy(native);
        remove_s = bu_now_s() - t0;
    }
    remove_prefix(bd, native, SCALE_PREFIX);

    printf("\n%s scale (%s), %g s x %d, median\n", bd->name, desc,
           cfg->secs, cfg->reps);
    printf("%-26s %8s %7s %9s %9s %9s %9s %8s %8s %6s\n", "scenario",
           "rows", "clients", "pairs/s", "p50 us", "p99 us", "vs empty",
           "p50 x0", "p99 x0", "busy");
    snprintf(vs, sizeof vs, "%ld rows", cfg->levels[0]);
    for (c = 0; c < cfg->nclients; c++) {
        const row *base = &rows[0][c];
        for (l = 0; l < cfg->nlevels; l++) {
            const row *r = &rows[l][c];
            double ratio = r->med.rate / base->med.rate;
            double p50x = r->med.p50 / base->med.p50;
            double p99x = r->med.p99 / base->med.p99;
            printf("%-26s %8ld %7d %9.0f %9.0f %9.0f %9.2f %8.2f %8.2f "
                   "%6ld\n", "sqllock acquire+release", cfg->levels[l],
                   cfg->clients[c], r->med.rate, r->med.p50, r->med.p99,
                   ratio, p50x, p99x, r->busy);
            csv_row("scale", bd->name, "sqllock acquire+release",
                    cfg->clients[c], cfg->levels[l], r->med.rate,
                    r->med.p50, r->med.p99, ratio, vs, p50x,
                    "p50 x baseline");
        }
    }
    printf("  rows: live filler leases (other names, expiring in 30+ days) "
           "in the lock table%s;\n", bd->has_token_rows
           ? ", each with its sqllock_token row" : "");
    printf("  vs empty = pairs/s / pairs/s at %ld rows; p50 x0, p99 x0 = "
           "latency / latency at %ld rows\n", cfg->levels[0],
           cfg->levels[0]);
    for (l = 0; l < cfg->nlevels; l++) {
        long added = cfg->levels[l] - (l > 0 ? cfg->levels[l - 1] : 0);
        if (added <= 0)
            continue;
        printf("  fill to %ld rows: %ld rows in %.1f s (%.0f rows/s), then "
               "ANALYZE %.2f s\n", cfg->levels[l], added, fill_s[l],
               (double)added / fill_s[l], analyze_s[l]);
    }
    printf("  removed %lld filler rows in %.1f s%s\n", removed, remove_s,
           strcmp(bd->name, "postgres") == 0 ? " (VACUUM included)" : "");
    for (l = 0; l < cfg->nlevels; l++)
        for (c = 0; c < cfg->nclients; c++)
            busy += rows[l][c].busy;
    if (busy > 0)
        printf("  busy: SQLLOCK_EDBBUSY met and retried (all runs)\n");
    fflush(stdout);
}

/* ------------------------------------------------------------------------ */
/* The reaper suite                                                         */
/* ------------------------------------------------------------------------ */

/* One reaper pass being timed. */
typedef struct reap_run {
    const bench_driver *bd;
    void *probe_native;              /* the main handle's connection */
    const char *url;
    int batch;
    int thread;                      /* 1: sqllock_reaper_start() */
    long expect;                     /* filler rows to be reaped */
    /* Results. */
    double secs;                     /* the whole pass */
    double lease_secs;               /* until no expired row was left */
    int64_t reaped;
    int64_t errors;
    char last_error[256];
    /* sqllock_reap() on a thread of its own. */
    sqllock_db *db;
    atomic_int done;
    int rc;
} reap_run;

static void *reap_main(void *arg)
{
    reap_run *rr = arg;
    int64_t n = 0;

    rr->rc = sqllock_reap(rr->db, GRACE_MS, rr->batch, &n);
    rr->reaped = n;
    if (rr->rc != SQLLOCK_OK)
        snprintf(rr->last_error, sizeof rr->last_error, "%s",
                 sqllock_errmsg(rr->db));
    atomic_store(&rr->done, 1);
    return NULL;
}

/* Polls the probe (MySQL) while the pass runs: the time at which no
 * expired lease row was left. */
static void probe_tick(reap_run *rr, double t0, double *next)
{
    double t = bu_now_s();

    if (rr->bd->probe_expired == NULL || rr->lease_secs > 0 || t < *next)
        return;
    *next = t + 0.05;
    if (rr->bd->exec(rr->probe_native, rr->bd->probe_expired) == 0)
        rr->lease_secs = bu_now_s() - t0;
}

/* Times one reaper pass, on a thread of the library's (the reaper) or of
 * this program's (sqllock_reap()). Also the `during` of run_point(). */
static void reap_timed(void *ctx)
{
    reap_run *rr = ctx;
    double t0, next = 0, deadline;

    rr->lease_secs = 0;
    rr->errors = 0;
    rr->last_error[0] = '\0';
    if (rr->thread) {
        sqllock_reaper_options o = SQLLOCK_REAPER_OPTIONS_INIT;
        sqllock_reaper *r = NULL;
        sqllock_reaper_stats st;
        char why[256];
        int rc;

        o.interval_ms = REAPER_INTERVAL_MS;
        o.grace_ms = GRACE_MS;
        o.batch = rr->batch;
        t0 = bu_now_s();
        deadline = t0 + REAP_MAX_S;
        /* The connect is timed too (a few ms of a pass of seconds). */
        rc = sqllock_reaper_start(rr->url, &o, &r, why, sizeof why);
        if (rc != SQLLOCK_OK)
            bu_die("sqllock_reaper_start: %s: %s", sqllock_errname(rc), why);
        for (;;) {
            if (sqllock_reaper_stats_get(r, &st) != SQLLOCK_OK)
                bu_die("sqllock_reaper_stats_get failed");
            /* A pass that failed is counted and followed by another; its
             * message stays in the counters until the next pass ends. */
            if (st.errors > rr->errors && st.last_error[0] != '\0') {
                rr->errors = st.errors;
                snprintf(rr->last_error, sizeof rr->last_error, "%s",
                         st.last_error);
            }
            if (st.passes > st.errors)
                break;
            if (bu_now_s() > deadline)
                bu_die("the reaper did not finish a pass in %.0f s", REAP_MAX_S);
            probe_tick(rr, t0, &next);
            bu_sleep_ms(2);
        }
        rr->secs = bu_now_s() - t0;
        rr->reaped = st.reaped;
        rr->errors = st.errors;
        sqllock_reaper_stop(r);
    } else {
        pthread_t tid;
        int rc;

        atomic_init(&rr->done, 0);
        t0 = bu_now_s();
        deadline = t0 + REAP_MAX_S;
        rc = pthread_create(&tid, NULL, reap_main, rr);
        if (rc != 0)
            bu_die("pthread_create: %s", strerror(rc));
        while (!atomic_load(&rr->done)) {
            if (bu_now_s() > deadline)
                bu_die("sqllock_reap() did not return in %.0f s", REAP_MAX_S);
            probe_tick(rr, t0, &next);
            bu_sleep_ms(2);
        }
        rr->secs = bu_now_s() - t0;
        pthread_join(tid, NULL);
        if (rr->rc != SQLLOCK_OK)
            bu_die("sqllock_reap(batch %d): %s: %s", rr->batch,
                sqllock_errname(rr->rc), rr->last_error);
    }
    if (rr->lease_secs <= 0)
        rr->lease_secs = rr->secs;
}

/* After a pass: every filler row is gone (and, on MySQL, the token rows
 * but the newest). */
static void check_reaped(const bench_driver *bd, void *native,
                         const reap_run *rr)
{
    long long left = count_prefix(bd, native, "sqllock_lease", FILL_PREFIX,
                                  "sqllock-bench-fill;");

    if (left != 0)
        bu_die("%s: the reaper (batch %d) left %lld of %ld expired filler rows",
            bd->name, rr->batch, left, rr->expect);
    if (rr->reaped < rr->expect)
        bu_die("%s: the reaper (batch %d) counted %lld rows deleted, fewer than "
            "the %ld filler rows", bd->name, rr->batch,
            (long long)rr->reaped, rr->expect);
    if (bd->has_token_rows) {
        left = count_prefix(bd, native, "sqllock_token", FILL_PREFIX,
                            "sqllock-bench-fill;");
        if (left > 1)
            bu_die("%s: the reaper left %lld token rows of filler names",
                bd->name, left);
    }
}

/* The reaper suite's scenarios, in table order. */
enum { RS_BASE, RS_WITH, RS_THREAD, RS_REAP1, RS_REAP2, RS_COUNT };

static void bench_reaper(const config *cfg, const char *url,
                         const bench_driver *bd, sqllock_db *db,
                         const char *desc)
{
    void *native = sqllock_db_native(db);
    const int nclients = cfg->reap_clients;
    row rows[RS_COUNT];
    double fills[3 * MAX_REPS], lease_rate[RS_COUNT][MAX_REPS];
    double pass_rate[RS_COUNT][MAX_REPS];
    int64_t errors = 0;
    int nfills = 0, rep, s, k, i;
    worker ws[MAX_CLIENTS];
    char label[RS_COUNT][96], last_error[256] = "";
    reap_run rr;

    memset(rows, 0, sizeof rows);
    for (s = 0; s < RS_COUNT; s++)
        rows[s].nreps = cfg->reap_reps;
    snprintf(label[RS_BASE], sizeof label[0], "%d clients, no reaper",
             nclients);
    snprintf(label[RS_WITH], sizeof label[0], "%d clients, reaper running",
             nclients);
    snprintf(label[RS_THREAD], sizeof label[0],
             "reaper thread, batch %d, %d clients", DEFAULT_BATCH, nclients);
    snprintf(label[RS_REAP1], sizeof label[0], "sqllock_reap, batch %d",
             DEFAULT_BATCH);
    snprintf(label[RS_REAP2], sizeof label[0], "sqllock_reap, batch %d",
             cfg->batch);
    open_workers(url, ws, nclients, REAP_PREFIX);
    for (rep = 0; rep < cfg->reap_reps; rep++) {
        for (k = 0; k < 3; k++) {
            /* A rotating order: clients+thread, batch 1000, larger batch. */
            int which = (k + rep) % 3;
            double t0, ana;

            fills[nfills] = fill_rows(bd, native, 0, cfg->reap_rows, 1);
            t0 = bu_now_s();
            bd->analyze(native);
            ana = bu_now_s() - t0;
            fprintf(stderr, "  %s reaper: filled %ld expired rows in %.1f s "
                    "(%.0f rows/s), ANALYZE %.2f s\n", bd->name,
                    cfg->reap_rows, fills[nfills],
                    (double)cfg->reap_rows / fills[nfills], ana);
            nfills++;
            memset(&rr, 0, sizeof rr);
            rr.bd = bd;
            rr.probe_native = native;
            rr.url = url;
            rr.expect = cfg->reap_rows;
            if (which == 0) {
                rr.thread = 1;
                rr.batch = DEFAULT_BATCH;
                run_point(ws, nclients, cfg->secs, NULL, NULL,
                          &rows[RS_BASE], rep);
                run_point(ws, nclients, REAP_MAX_S, reap_timed, &rr,
                          &rows[RS_WITH], rep);
                s = RS_THREAD;
                errors += rr.errors;
                if (rr.errors > 0)
                    snprintf(last_error, sizeof last_error, "%s",
                             rr.last_error);
                if (rr.errors > 0)
                    fprintf(stderr, "  %s reaper: %lld failed passes, the "
                            "last: %s\n", bd->name, (long long)rr.errors,
                            rr.last_error);
                for (i = RS_BASE; i <= RS_WITH; i++)
                    fprintf(stderr, "  %s reaper, run %d: %-28s %8.0f "
                            "pairs/s p50 %6.0f us p99 %7.0f us over %.1f s "
                            "(slowest %.0f ms)\n", bd->name, rep + 1,
                            label[i], rows[i].reps[rep].rate,
                            rows[i].reps[rep].p50, rows[i].reps[rep].p99,
                            rows[i].reps[rep].secs,
                            rows[i].reps[rep].max / 1000);
            } else {
                rr.thread = 0;
                rr.batch = which == 1 ? DEFAULT_BATCH : cfg->batch;
                rr.db = open_db(url);
                reap_timed(&rr);
                sqllock_close(rr.db);
                s = which == 1 ? RS_REAP1 : RS_REAP2;
            }
            check_reaped(bd, native, &rr);
            pass_rate[s][rep] = (double)rr.reaped / rr.secs;
            lease_rate[s][rep] = (double)cfg->reap_rows / rr.lease_secs;
            rows[s].reps[rep].rate = pass_rate[s][rep];
            rows[s].reps[rep].secs = rr.secs;
            fprintf(stderr, "  %s reaper, run %d: %-36s %lld rows in %.1f s "
                    "= %.0f rows/s", bd->name, rep + 1, label[s],
                    (long long)rr.reaped, rr.secs, pass_rate[s][rep]);
            if (bd->probe_expired != NULL)
                fprintf(stderr, " (lease rows gone after %.1f s: %.0f "
                        "rows/s)", rr.lease_secs, lease_rate[s][rep]);
            fputc('\n', stderr);
            /* Dead rows and token rows of the pass, so that the next fill
             * starts on a clean table. */
            remove_prefix(bd, native, FILL_PREFIX);
            bd->tidy(native);
        }
    }
    remove_prefix(bd, native, REAP_PREFIX);
    close_workers(ws, nclients);
    for (s = 0; s < RS_COUNT; s++)
        finish_row(&rows[s]);

    printf("\n%s reaper (%s), %ld expired rows, grace %lld ms, %d run%s, "
           "median\n", bd->name, desc, cfg->reap_rows, (long long)GRACE_MS,
           cfg->reap_reps, cfg->reap_reps > 1 ? "s" : "");
    printf("%-36s %9s %9s %9s%s\n", "reaper", "rows/s", "pass s", "clients",
           bd->probe_expired != NULL ? "  lease DELETEs rows/s (s)" : "");
    for (s = RS_THREAD; s <= RS_REAP2; s++) {
        double lr = bu_median(lease_rate[s], cfg->reap_reps);
        printf("%-36s %9.0f %9.1f %9d", label[s], rows[s].med.rate,
               rows[s].med.secs, s == RS_THREAD ? nclients : 0);
        if (bd->probe_expired != NULL)
            printf("  %20.0f (%.1f)", lr, (double)cfg->reap_rows / lr);
        printf("\n");
        csv_row("reaper", bd->name, label[s], s == RS_THREAD ? nclients : 0,
                cfg->reap_rows, rows[s].med.rate, -1, -1, -1, NULL,
                bd->probe_expired != NULL ? lr : rows[s].med.secs,
                bd->probe_expired != NULL ? "rows/s lease DELETEs"
                                          : "s per pass");
    }
    printf("%-36s %9s %9s %9s %9s %12s %8s %6s\n", "clients", "clients",
           "pairs/s", "p50 us", "p99 us", "vs no reaper", "p99 x", "s");
    for (s = RS_BASE; s <= RS_WITH; s++) {
        double ratio = rows[s].med.rate / rows[RS_BASE].med.rate;
        double p99x = rows[s].med.p99 / rows[RS_BASE].med.p99;
        printf("%-36s %9d %9.0f %9.0f %9.0f %12.2f %8.2f %6.1f\n", label[s],
               nclients, rows[s].med.rate, rows[s].med.p50, rows[s].med.p99,
               ratio, p99x, rows[s].med.secs);
        csv_row("reaper", bd->name, label[s], nclients, cfg->reap_rows,
                rows[s].med.rate, rows[s].med.p50, rows[s].med.p99, ratio,
                label[RS_BASE], p99x, "p99 vs no reaper");
    }
    printf("  rows/s: expired lease rows deleted / seconds of the whole "
           "pass%s\n", bd->has_token_rows ? " (on MySQL the pass also "
           "trims sqllock_token)" : "");
    if (bd->probe_expired != NULL)
        printf("  lease DELETEs: until no expired lease row was left "
               "(polled every 50 ms); the rest\n  of the pass trims "
               "sqllock_token's per-name rows\n");
    printf("  clients: acquire+release pairs on names of their own, with the "
           "expired rows in the\n  table; 'reaper running' lasts as long as "
           "the reaper thread's pass (column s);\n  p99 x = p99 / p99 with "
           "no reaper\n");
    {
        double fm = bu_median(fills, nfills);
        printf("  fill: %ld expired rows in %.1f s (median of %d fills, %.0f "
               "rows/s)%s\n", cfg->reap_rows, fm, nfills,
               (double)cfg->reap_rows / fm, bd->has_token_rows
               ? ", with their sqllock_token rows" : "");
    }
    if (errors > 0)
        printf("  the reaper thread had %lld failed passes (all runs), "
               "each followed by another\n  pass %d ms later; the last "
               "error: %s\n", (long long)errors, REAPER_INTERVAL_MS,
               last_error);
    if (rows[RS_BASE].busy + rows[RS_WITH].busy > 0)
        printf("  busy: SQLLOCK_EDBBUSY met and retried: %ld without, %ld "
               "with the reaper (all runs)\n", rows[RS_BASE].busy,
               rows[RS_WITH].busy);
    fflush(stdout);
}

/* ------------------------------------------------------------------------ */
/* main                                                                     */
/* ------------------------------------------------------------------------ */

static void bench_url(const config *cfg, const char *url)
{
    const bench_driver *bd;
    sqllock_db *db;
    char desc[200];
    long long left;
    int rc;

    db = open_db(url);
    rc = sqllock_init(db);
    if (rc != SQLLOCK_OK)
        bu_die("sqllock_init on %s: %s", url, sqllock_errmsg(db));
    bd = find_driver(sqllock_db_driver(db));
    if (bd == NULL)
        bu_die("%s: the bench has no '%s' part", url, sqllock_db_driver(db));
    bd->describe(sqllock_db_native(db), desc, sizeof desc);
    /* What an aborted earlier run left. */
    left = remove_prefix(bd, sqllock_db_native(db), FILL_PREFIX);
    left += remove_prefix(bd, sqllock_db_native(db), SCALE_PREFIX);
    left += remove_prefix(bd, sqllock_db_native(db), REAP_PREFIX);
    if (left > 0) {
        bd->tidy(sqllock_db_native(db));
        printf("%s: removed %lld rows left by an earlier run\n", bd->name,
               left);
        fflush(stdout);
    }
    if (cfg->scale)
        bench_scale(cfg, url, bd, db, desc);
    if (cfg->reaper)
        bench_reaper(cfg, url, bd, db, desc);
    sqllock_close(db);
}

static void usage(void)
{
    fprintf(stderr,
        "usage: " PROG " [--seconds N] [--quick] [--reps N] [--results FILE]"
        "\n                   [--clients 1,8] [--rows 0,100000,1000000]\n"
        "                   [--reap-rows N] [--reap-reps N] [--batch N]\n"
        "                   [--only scale|reaper] [--smoke] URL...\n"
        "  --seconds N      length of each run (default 10)\n"
        "  --quick          runs of 2 s\n"
        "  --reps N         repetitions of each point; the median is shown "
        "(default 3)\n"
        "  --results FILE   append the rows to the common results CSV\n"
        "  --clients LIST   client counts of the scale suite (default 1,8)\n"
        "  --rows LIST      live filler rows of the scale suite, ascending, "
        "the first the\n"
        "                   baseline (default 0,100000,1000000)\n"
        "  --reap-rows N    expired rows of the reaper suite (default "
        "1000000)\n"
        "  --reap-reps N    repetitions of the reaper suite (default: "
        "--reps); each fills\n"
        "                   the expired rows three times\n"
        "  --batch N        the larger sqllock_reap() batch (default 10000)\n"
        "  --only SUITE     scale or reaper\n"
        "  --smoke          both suites once, 0.2 s a point, 1 and 2 clients, "
        "2000 rows:\n"
        "                   a check that the program runs (ctest's "
        "bench_smoke_scale_*);\n"
        "                   the URLs default to the tests' (bench_util.h)\n"
        "URLs: sqlite:///path.db postgres://... mysql://...\n");
    exit(2);
}

int main(int argc, char **argv)
{
    config cfg;
    bu_args args = { 10, 3, MAX_REPS, NULL, 0, { NULL }, 0 };
    int i, j, took, reap_reps = 0;

    memset(&cfg, 0, sizeof cfg);
    cfg.nclients = 2;
    cfg.clients[0] = 1;
    cfg.clients[1] = 8;
    cfg.nlevels = 3;
    cfg.levels[0] = 0;
    cfg.levels[1] = 100000;
    cfg.levels[2] = 1000000;
    cfg.reap_rows = 1000000;
    cfg.batch = 10000;
    cfg.reap_clients = 8;
    cfg.scale = cfg.reaper = 1;
    bu_init(PROG, "run aborted; filler rows (" FILL_PREFIX "*) may be left "
            "behind: the next run removes them at its start");
    for (i = 1; i < argc; i++) {
        const char *a = argv[i];
        if ((took = bu_args_take(&args, argc, argv, &i)) != 0) {
            if (took < 0)
                usage();
        } else if (strcmp(a, "--reap-reps") == 0 && i + 1 < argc) {
            reap_reps = (int)bu_parse_long(argv[++i], 1, MAX_REPS,
                                           "--reap-reps");
        } else if (strcmp(a, "--clients") == 0 && i + 1 < argc) {
            cfg.nclients = bu_parse_clients(argv[++i], cfg.clients, &j);
        } else if (strcmp(a, "--rows") == 0 && i + 1 < argc) {
            cfg.nlevels = bu_parse_list(argv[++i], cfg.levels, MAX_LEVELS,
                                        0, 100000000L, "--rows");
            for (j = 1; j < cfg.nlevels; j++)
                if (cfg.levels[j] <= cfg.levels[j - 1])
                    usage();
        } else if (strcmp(a, "--reap-rows") == 0 && i + 1 < argc) {
            cfg.reap_rows = bu_parse_long(argv[++i], 1, 100000000L,
                                          "--reap-rows");
        } else if (strcmp(a, "--batch") == 0 && i + 1 < argc) {
            cfg.batch = (int)bu_parse_long(argv[++i], 1, 1000000, "--batch");
        } else if (strcmp(a, "--only") == 0 && i + 1 < argc) {
            const char *v = argv[++i];
            cfg.scale = strcmp(v, "scale") == 0;
            cfg.reaper = strcmp(v, "reaper") == 0;
            if (!cfg.scale && !cfg.reaper)
                usage();
        } else {
            usage();
        }
    }
    if (args.smoke) {
        /* Both suites, every scenario once, on a few thousand rows. */
        reap_reps = 1;
        cfg.nclients = 2;
        cfg.clients[0] = 1;
        cfg.clients[1] = 2;
        cfg.nlevels = 2;
        cfg.levels[0] = 0;
        cfg.levels[1] = 2000;
        cfg.reap_rows = 2000;
        cfg.batch = 500;
        cfg.reap_clients = 2;
    }
    bu_args_finish(&args, 1);
    if (args.nurls == 0)
        usage();
    cfg.secs = args.secs;
    cfg.reps = args.reps;
    cfg.reap_reps = reap_reps > 0 ? reap_reps : cfg.reps;
#if defined(SQLLOCK_HAVE_MYSQL)
    if (mysql_library_init(0, NULL, NULL) != 0)
        bu_die("mysql_library_init failed");
#endif
    if (args.results != NULL) {
        g_results_path = args.results;
        g_results = bu_results_open(args.results);
    }
    printf(PROG ": sqllock %s, %g s per run, %d runs (reaper suite %d)\n",
           sqllock_version_string(), cfg.secs, cfg.reps, cfg.reap_reps);
    fflush(stdout);
    for (i = 0; i < args.nurls; i++)
        bench_url(&cfg, args.urls[i]);
    if (g_results != NULL && (ferror(g_results) | fclose(g_results)) != 0)
        bu_die("writing %s failed", g_results_path);
#if defined(SQLLOCK_HAVE_MYSQL)
    mysql_library_end();
#endif
    bu_smoke_done();
    return 0;
}
