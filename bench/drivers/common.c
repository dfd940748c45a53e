/*
 * drivers/common.c -- what the parts of bench_drivers share: the library's
 * statements read from the driver's dialect, the clients' owner ids and
 * the library's pair, the table of driver parts, the measured point and
 * the medians of a row, opening and closing the clients, the rows of
 * the two CSV files, and --optimistic's table name and FOR UPDATE
 * statements.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "drivers/drivers.h"

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
const char *g_sql_acquire;     /* 1 name, 2 owner, 3 holder, 4 ttl */
const char *g_sql_release;     /* 1 name, 2 owner, 3 token [, 4] */
const char *g_sql_token_next;  /* MySQL: 1 name */
const char *g_sql_set_token;   /* MySQL: 3 token, 1 name, 2 owner */

/* ------------------------------------------------------------------------ */
/* Clients                                                                  */
/* ------------------------------------------------------------------------ */

/* A fresh owner id for the by-hand acquire, as the library makes it. */
int new_owner(worker *w)
{
    if (bu_new_owner(w->owner) != 0)
        return wfail(w, "getrandom: %s", strerror(errno));
    return 0;
}

/* The library: one try-acquire and one release. */
int lib_pair(worker *w)
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
/* Drivers                                                                  */
/* ------------------------------------------------------------------------ */

/* The driver parts this build has (drivers/postgres.c, mysql.c,
 * sqlite.c). */
static const bench_driver *const drivers[] = {
#if defined(SQLLOCK_HAVE_POSTGRES)
    &postgres_part,
#endif
#if defined(SQLLOCK_HAVE_MYSQL)
    &mysql_part,
#endif
#if defined(SQLLOCK_HAVE_SQLITE)
    &sqlite_part,
#endif
    NULL
};

const bench_driver *find_driver(const char *name)
{
    size_t i;

    for (i = 0; drivers[i] != NULL; i++)
        if (strcmp(drivers[i]->name, name) == 0)
            return drivers[i];
    return NULL;
}

/* Reads the statements the by-hand scenario sends from the driver's
 * dialect (bu_sql() stops the run when their placeholders no longer bind
 * in the order this program binds them). */
void load_sql(const bench_driver *bd)
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

void run_point(worker *ws, int n, pair_fn fn, double secs, result *out)
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

void finish_row(row *r)
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

/* Lease flags for the library's scenario (--no-wakeup, --fast). */
unsigned g_lease_flags;

void open_workers(const bench_driver *bd, const char *url, worker *ws,
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

void close_workers(const bench_driver *bd, worker *ws, int n)
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
void res_put(const config *cfg, const char *suite, const char *driver,
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

void csv_row(const config *cfg, const char *driver, const char *desc,
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

/* --optimistic: the application table (bench_inv_<pid>) while it exists. */
char g_inv_table[64];

/* The FOR UPDATE scenario's two statements on bench_inv_<pid>, in the
 * driver's placeholder style: "SELECT qty ... WHERE id = ?" and "UPDATE
 * ... SET qty = ?, version = version + 1 WHERE id = ?". */
void fu_sql(char *read, char *write, size_t n, int dollar)
{
    snprintf(read, n, "SELECT qty FROM %s WHERE id = %s", g_inv_table,
             dollar ? "$1" : "?");
    snprintf(write, n, "UPDATE %s SET qty = %s, version = version + 1 "
             "WHERE id = %s", g_inv_table, dollar ? "$1" : "?",
             dollar ? "$2" : "?");
}
