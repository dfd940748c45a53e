/*
 * bench_renew.c -- one process, one handle, many watched leases: what the
 * watchdog's renewer costs (issue 18 item 3).
 *
 *   bench_renew [--leases N] [--ttl S] [--seconds S] [--smoke] URL...
 *
 *   e.g. bench_renew --leases 100000 --ttl 30 --seconds 300 \
 *            postgres://user:pw@127.0.0.1:5432/db mysql://user:pw@host/db
 *
 * For each URL (sqllock_init() is run on it first), one sqllock_db handle
 * makes --leases (100 000) lease handles of ttl --ttl (30 s, renewed every
 * ttl/3 with the default safety margin of ttl/10), takes each with
 * sqllock_lease_try_acquire() (SQLLOCK_LEASE_NO_WAKEUP: no companion
 * session lock per lease on MySQL) and puts it under automatic renewal
 * with sqllock_lease_watch() right after its acquire. Once all are
 * watched, it waits one ttl (so every lease has been renewed by the
 * watchdog at least once and the renewals are in their steady state) and
 * then measures for --seconds (90):
 *
 *   statements/s   what the database counted in the window, read on a
 *                  second connection: PostgreSQL xact_commit +
 *                  xact_rollback of the database (pg_stat_database; the
 *                  renewer's statements are one transaction each), MySQL
 *                  the server's Questions (global status); both include
 *                  the program's own two reads of the counter. SQLite: n/a.
 *   renewer CPU    user + system time of every thread but the main one
 *                  (/proc/self/task/TID/stat), which sleeps meanwhile;
 *                  shown as % of one core.
 *   not held       every second, the leases whose sqllock_lease_state() is
 *                  not HELD (the most seen at once), and at the end the
 *                  releases that said SQLLOCK_LOST.
 *   memory         resident memory (/proc/self/statm) after everything was
 *                  watched minus before the lease handles were made (after
 *                  a warm-up lease and sqllock_watch_prepare()), divided
 *                  by the number of leases: handle + lease row copy +
 *                  renewer entry, as an application pays them.
 *
 * With --results FILE it appends two rows per URL to the common CSV (suite
 * `renew`, bench/README.md): `statements` (ops_per_s: statements/s in the
 * window; value: renewer CPU, % of one core) and `memory` (value: bytes
 * per lease), rows = the number of leases.
 *
 * Lock names are "sqllock-bench-renew:<pid>:<i>"; rows of that prefix left
 * by an aborted earlier run are deleted at the start, and on MySQL the
 * per-name token rows too. This is a measuring program, not a test: a
 * failed call aborts the run with a message.
 */
#include <dirent.h>
#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_util.h"
#include "sqllock.h"

#define PROG "bench_renew"
#define PREFIX "sqllock-bench-renew:"

static FILE *g_results;

/* What the watch callbacks said (the renewer thread writes). */
static _Atomic long g_uncertain, g_lost_taken, g_lost_late;
static char g_first_lost[256];

static void on_change(void *ctx, sqllock_lease *l, int state, int status,
                      const char *msg)
{
    (void)ctx;
    if (state == SQLLOCK_STATE_UNCERTAIN) {
        g_uncertain++;
    } else if (state == SQLLOCK_STATE_LOST) {
        if (g_lost_taken + g_lost_late == 0)
            snprintf(g_first_lost, sizeof g_first_lost, "%s: %s: %s",
                     sqllock_lease_name(l), sqllock_errname(status),
                     msg != NULL ? msg : "");
        if (status == SQLLOCK_LOST)
            g_lost_taken++;
        else
            g_lost_late++;
    }
}

typedef struct config {
    long leases;
    int64_t ttl_ms;
    double secs;
} config;

static double rss_bytes(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    long size = 0, res = 0;

    if (f == NULL)
        return 0;
    if (fscanf(f, "%ld %ld", &size, &res) != 2)
        res = 0;
    fclose(f);
    return (double)res * (double)sysconf(_SC_PAGESIZE);
}

/* CPU seconds of every thread of the process but the main one. */
static double other_threads_cpu(void)
{
    DIR *d = opendir("/proc/self/task");
    struct dirent *de;
    double ticks = 0;
    long hz = sysconf(_SC_CLK_TCK);

    if (d == NULL)
        return 0;
    while ((de = readdir(d)) != NULL) {
        char path[300], buf[1024], *p;
        unsigned long ut = 0, st = 0;
        FILE *f;
        long tid = strtol(de->d_name, NULL, 10);
        if (tid <= 0 || tid == (long)getpid())
            continue;
        snprintf(path, sizeof path, "/proc/self/task/%ld/stat", tid);
        f = fopen(path, "r");
        if (f == NULL)
            continue;
        if (fgets(buf, sizeof buf, f) != NULL &&
            (p = strrchr(buf, ')')) != NULL &&
            sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u "
                   "%lu %lu", &ut, &st) == 2)
            ticks += (double)(ut + st);
        fclose(f);
    }
    closedir(d);
    return ticks / (double)hz;
}

static void exec_or_die(sqllock_db *db, const char *sql, int64_t *first)
{
    int has_row = 0, rc;

    rc = sqllock_db_exec(db, sql, NULL, 0, &has_row, first, NULL);
    if (rc != SQLLOCK_OK)
        bu_die("%s: %s: %s", sql, sqllock_errname(rc), sqllock_errmsg(db));
}

/* The database's count of statements (see the file comment); -1: none. */
static int64_t statements(sqllock_db *db)
{
    const char *drv = sqllock_db_driver(db);
    int64_t n = -1;

    if (strcmp(drv, "postgres") == 0) {
        /* The counters another backend flushes (at most once a second)
         * are read from a fresh snapshot. */
        exec_or_die(db, "SELECT pg_stat_clear_snapshot()", NULL);
        exec_or_die(db, "SELECT (xact_commit + xact_rollback)::bigint FROM "
                    "pg_stat_database WHERE datname = current_database()",
                    &n);
    } else if (strcmp(drv, "mysql") == 0) {
        exec_or_die(db, "SELECT CAST(VARIABLE_VALUE AS SIGNED) FROM "
                    "information_schema.GLOBAL_STATUS "
                    "WHERE VARIABLE_NAME = 'QUESTIONS'", &n);
    }
    return n;
}

static void delete_prefix(sqllock_db *db)
{
    exec_or_die(db, "DELETE FROM sqllock_lease WHERE name >= '" PREFIX
                "' AND name < 'sqllock-bench-renew;'", NULL);
    if (strcmp(sqllock_db_driver(db), "mysql") == 0)
        exec_or_die(db, "DELETE FROM sqllock_token WHERE name >= '" PREFIX
                    "' AND name < 'sqllock-bench-renew;'", NULL);
}

static sqllock_lease *new_lease(sqllock_db *db, const char *name,
                                int64_t ttl_ms)
{
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_lease *l = NULL;
    int rc;

    o.ttl_ms = ttl_ms;
    o.flags = SQLLOCK_LEASE_NO_WAKEUP;
    rc = sqllock_lease_new(db, name, &o, &l);
    if (rc != SQLLOCK_OK)
        bu_die("sqllock_lease_new(%s): %s: %s", name, sqllock_errname(rc),
               sqllock_errmsg(db));
    return l;
}

static void take_and_watch(sqllock_db *db, sqllock_lease *l)
{
    int rc = sqllock_lease_try_acquire(l);
    sqllock_watch_options w = SQLLOCK_WATCH_OPTIONS_INIT;

    if (rc != SQLLOCK_OK)
        bu_die("sqllock_lease_try_acquire(%s): %s: %s",
               sqllock_lease_name(l), sqllock_errname(rc),
               sqllock_errmsg(db));
    w.callback = on_change;
    rc = sqllock_lease_watch(l, &w);
    if (rc != SQLLOCK_OK)
        bu_die("sqllock_lease_watch(%s): %s: %s", sqllock_lease_name(l),
               sqllock_errname(rc), sqllock_errmsg(db));
}

static long not_held(sqllock_lease **v, long n)
{
    long i, bad = 0;

    for (i = 0; i < n; i++)
        if (sqllock_lease_state(v[i]) != SQLLOCK_STATE_HELD)
            bad++;
    return bad;
}

static void bench_url(const config *cfg, const char *url)
{
    sqllock_db *db = bu_open(url), *stats = bu_open(url);
    sqllock_lease **v, *warm;
    char name[128];
    double rss0, rss1, t0, t_acq, cpu0, cpu1, w0, w1;
    int64_t st0, st1, end_ms;
    long i, worst = 0, lost = 0, bad;
    int rc;

    g_uncertain = g_lost_taken = g_lost_late = 0;
    g_first_lost[0] = '\0';
    if ((rc = sqllock_init(db)) != SQLLOCK_OK)
        bu_die("sqllock_init(%s): %s: %s", url, sqllock_errname(rc),
               sqllock_errmsg(db));
    delete_prefix(stats);
    v = calloc((size_t)cfg->leases, sizeof *v);
    if (v == NULL)
        bu_die("out of memory");
    /* Warm-up: the handle's statements and the renewer exist before the
     * "before" point. */
    if ((rc = sqllock_watch_prepare(db)) != SQLLOCK_OK)
        bu_die("sqllock_watch_prepare: %s: %s", sqllock_errname(rc),
               sqllock_errmsg(db));
    snprintf(name, sizeof name, PREFIX "%ld:warm", (long)getpid());
    warm = new_lease(db, name, cfg->ttl_ms);
    take_and_watch(db, warm);
    rss0 = rss_bytes();
    t0 = bu_now_s();
    for (i = 0; i < cfg->leases; i++) {
        snprintf(name, sizeof name, PREFIX "%ld:%ld", (long)getpid(), i);
        v[i] = new_lease(db, name, cfg->ttl_ms);
        take_and_watch(db, v[i]);
    }
    t_acq = bu_now_s() - t0;
    rss1 = rss_bytes();
    printf("%s: %ld leases taken and watched in %.1f s (%.0f/s); "
           "%.0f bytes resident per lease\n", sqllock_db_driver(db),
           cfg->leases, t_acq, cfg->leases / t_acq,
           (rss1 - rss0) / (double)cfg->leases);
    fflush(stdout);
    /* One ttl for the renewals to reach their steady state. */
    end_ms = bu_now_ms() + cfg->ttl_ms;
    while (bu_now_ms() < end_ms) {
        bu_sleep_ms(1000);
        bad = not_held(v, cfg->leases);
        if (bad > worst)
            worst = bad;
    }
    st0 = statements(stats);
    cpu0 = other_threads_cpu();
    w0 = bu_now_s();
    end_ms = bu_now_ms() + (int64_t)(cfg->secs * 1000);
    while (bu_now_ms() < end_ms) {
        bu_sleep_ms(cfg->secs < 2 ? 100 : 1000);
        bad = not_held(v, cfg->leases);
        if (bad > worst)
            worst = bad;
    }
    w1 = bu_now_s();
    cpu1 = other_threads_cpu();
    st1 = statements(stats);
    bad = not_held(v, cfg->leases);
    for (i = 0; i < cfg->leases; i++) {
        rc = sqllock_lease_release(v[i]);
        if (rc == SQLLOCK_LOST)
            lost++;
        else if (rc != SQLLOCK_OK)
            bu_die("sqllock_lease_release(%s): %s: %s",
                   sqllock_lease_name(v[i]), sqllock_errname(rc),
                   sqllock_errmsg(db));
        sqllock_lease_free(v[i]);
    }
    sqllock_lease_release(warm);
    sqllock_lease_free(warm);
    printf("%s: window %.1f s (after %.0f s to settle): ",
           sqllock_db_driver(db), w1 - w0, cfg->ttl_ms / 1000.0);
    if (st0 >= 0)
        printf("%.1f statements/s, ", (double)(st1 - st0) / (w1 - w0));
    else
        printf("statements/s n/a, ");
    printf("renewer CPU %.2f%% of one core; not HELD at the end %ld, most "
           "at once %ld; releases LOST %ld (target: <= 200 statements/s, "
           "<= 10%% CPU, 0 lost)\n", 100.0 * (cpu1 - cpu0) / (w1 - w0), bad,
           worst, lost);
    printf("%s: callbacks over the whole run: %ld UNCERTAIN, %ld LOST taken "
           "over, %ld LOST late%s%s\n", sqllock_db_driver(db),
           (long)g_uncertain, (long)g_lost_taken, (long)g_lost_late,
           g_first_lost[0] ? "; first: " : "", g_first_lost);
    fflush(stdout);
    {
        bu_result r = { "renew", sqllock_db_driver(db), "statements", 1,
                        cfg->leases, st0 >= 0 ? (double)(st1 - st0) /
                        (w1 - w0) : NAN, NAN, NAN, NAN, NULL,
                        100.0 * (cpu1 - cpu0) / (w1 - w0), "% CPU" };
        bu_results_put(g_results, &r);
        r.scenario = "memory";
        r.ops_per_s = NAN;
        r.value = (rss1 - rss0) / (double)cfg->leases;
        r.unit = "bytes/lease";
        bu_results_put(g_results, &r);
    }
    free(v);
    sqllock_close(db);
    delete_prefix(stats);
    sqllock_close(stats);
    if (bad > 0 || lost > 0)
        bu_die("%ld leases not HELD, %ld lost", bad, lost);
}

static void usage(void)
{
    fprintf(stderr,
        "usage: " PROG " [--leases N] [--ttl S] [--seconds S] [--results FILE]"
        "\n                   [--smoke] URL...\n"
        "  --leases N   watched leases on the one handle (default 100000)\n"
        "  --ttl S      their ttl in seconds (default 30; renewed every "
        "ttl/3)\n"
        "  --seconds S  the measured window, after one ttl to settle "
        "(default 90)\n"
        "  --results F  append the rows to the common results CSV\n"
        "  --smoke      200 leases of 3 s, a window of 0.2 s: a check that "
        "the program\n"
        "               runs (ctest's bench_smoke_renew_*); the URLs default "
        "to the tests'\n");
    exit(2);
}

int main(int argc, char **argv)
{
    config cfg;
    bu_args args = { 90, 1, 1, NULL, 0, { NULL }, 0 };
    int i, took;

    cfg.leases = 100000;
    cfg.ttl_ms = 30000;
    bu_init(PROG, "run aborted (lease rows left behind expire after their "
            "ttl; the next run deletes them)");
    for (i = 1; i < argc; i++) {
        const char *a = argv[i];
        if ((took = bu_args_take(&args, argc, argv, &i)) != 0) {
            if (took < 0)
                usage();
        } else if (strcmp(a, "--leases") == 0 && i + 1 < argc) {
            cfg.leases = bu_parse_long(argv[++i], 1, 10000000, "--leases");
        } else if (strcmp(a, "--ttl") == 0 && i + 1 < argc) {
            cfg.ttl_ms = (int64_t)(bu_parse_secs(argv[++i], 86400, "--ttl") *
                                   1000);
            if (cfg.ttl_ms < 1000)
                usage();
        } else {
            usage();
        }
    }
    if (args.smoke) {
        cfg.leases = 200;
        cfg.ttl_ms = 3000;
    }
    bu_args_finish(&args, 1);
    if (args.nurls == 0)
        usage();
    cfg.secs = args.secs;
    if (args.results != NULL)
        g_results = bu_results_open(args.results);
    printf(PROG ": sqllock %s, %ld leases, ttl %.1f s, window %g s\n",
           sqllock_version_string(), cfg.leases, cfg.ttl_ms / 1000.0,
           cfg.secs);
    fflush(stdout);
    for (i = 0; i < args.nurls; i++)
        bench_url(&cfg, args.urls[i]);
    if (g_results != NULL && (ferror(g_results) | fclose(g_results)) != 0)
        bu_die("writing %s failed", args.results);
    bu_smoke_done();
    return 0;
}
