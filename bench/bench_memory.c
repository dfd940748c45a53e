/*
 * bench_memory.c -- how much memory a process spends per held lease, with
 * and without automatic renewal, on every driver.
 *
 *   bench_memory [--seconds N] [--quick] [--reps N] [--results FILE]
 *                [--leases N] [--ttl-ms N] URL...
 *
 *   e.g. bench_memory --results out.csv sqlite:///tmp/mem.db \
 *            postgres://user:pw@127.0.0.1:5432/db mysql://user:pw@host/db
 *
 * For each URL (sqllock_init() is run on it first), each repetition runs
 * two scenarios, each in a fresh child process (fork()) so that neither
 * inherits the other's heap:
 *
 *   held, not watched   one sqllock_db handle makes --leases (10 000)
 *                       lease handles, ttl --ttl-ms (60 s), and takes each
 *                       with sqllock_lease_try_acquire();
 *   held, watched       the same, and puts each lease under automatic
 *                       renewal with sqllock_lease_watch() (default
 *                       interval ttl/3, so 10 000 leases of 60 s ask the
 *                       database for 500 renewals a second, all on the
 *                       renewer's one connection). The program waits until
 *                       every lease has been renewed at least once (its
 *                       local deadline moved past what its acquire gave),
 *                       then --seconds more (the settle period, during
 *                       which it counts the renewals), and checks that
 *                       every lease is still HELD.
 *
 * Resident memory is read from /proc/self/statm (resident pages x page
 * size) before the lease handles are made and after the leases are held
 * (after the settle period), and the difference divided by the number of
 * leases is the memory per held lease. The "before" point follows a
 * warm-up: one lease taken and released (and, in the watched scenario,
 * sqllock_watch_prepare() and a short-lived lease watched until its first
 * renewal), so that the connection's and the renewer's own start-up
 * memory is not charged to the leases; the renewer's start-up is shown
 * apart (per handle, not per lease). Also shown: the memory of the lease
 * handles alone before any acquire, and what is still resident after
 * everything was released, freed and closed and glibc's malloc_trim()
 * has given the free memory of its heaps back.
 * All the arrays the program itself needs are allocated before the
 * "before" point.
 *
 * Everything is released and freed at the end of each child, and on MySQL
 * the per-name rows of sqllock_token are deleted too. The lock names are
 * "sqllock-bench-mem:<pid>:<i>"; rows of that prefix left by an aborted
 * earlier run are deleted at the start (do not run two copies on one
 * database at once).
 *
 * This is a measuring program, not a test. Any failed call aborts the run
 * with a message.
 */
#include <errno.h>
#if defined(__linux__)
#include <malloc.h>
#include <math.h>
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
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

#define PROG "bench_memory"
#define NAME_PREFIX "sqllock-bench-mem:"
#define MAX_REPS 15
#define WARM_TTL_MS 900          /* the watched warm-up lease: renewed
                                    every 300 ms */
#define RENEWED_SLACK_MS 1000    /* a deadline this much past the
                                    acquire's counts as renewed */

/* Resident memory of this process, in bytes (/proc/self/statm). */
static double rss_bytes(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long size, resident;

    if (f == NULL)
        bu_die("/proc/self/statm: %s", strerror(errno));
    if (fscanf(f, "%lu %lu", &size, &resident) != 2)
        bu_die("/proc/self/statm: unexpected contents");
    fclose(f);
    return (double)resident * (double)sysconf(_SC_PAGESIZE);
}

/* ------------------------------------------------------------------------ */
/* The results file                                                         */
/* ------------------------------------------------------------------------ */

static FILE *g_results;
static const char *g_results_path;

/* One row of the memory suite: no rate, no latency, no ratio; `rows` is
 * the live leases in the lock table (ours), `value` and `unit` the
 * figure. */
static void csv_row(const char *driver, const char *scenario, long rows,
                    double value, const char *unit)
{
    bu_result r = { "memory", driver, scenario, 1, rows, NAN, NAN, NAN, NAN,
                    NULL, value, unit };

    bu_results_put(g_results, &r);
}

/* ------------------------------------------------------------------------ */
/* Clean-up by hand, on the handle's own connection                         */
/* ------------------------------------------------------------------------ */

/* Deletes the rows of names in [lo, hi) from `table`; returns how many. */
static long long delete_range(sqllock_db *db, const char *table,
                              const char *lo, const char *hi)
{
    const char *driver = sqllock_db_driver(db);
    void *native = sqllock_db_native(db);
    char sql[256];

    if (native == NULL)
        bu_die("the handle has no native connection");
    snprintf(sql, sizeof sql, "DELETE FROM %s WHERE name >= '%s' AND "
             "name < '%s'", table, lo, hi);
#if defined(SQLLOCK_HAVE_POSTGRES)
    if (strcmp(driver, "postgres") == 0) {
        PGresult *r = PQexec(native, sql);
        long long n;
        if (r == NULL || PQresultStatus(r) != PGRES_COMMAND_OK)
            bu_die("%s: %s", sql, r != NULL ? PQresultErrorMessage(r)
                                         : PQerrorMessage(native));
        n = strtoll(PQcmdTuples(r), NULL, 10);
        PQclear(r);
        return n;
    }
#endif
#if defined(SQLLOCK_HAVE_MYSQL)
    if (strcmp(driver, "mysql") == 0) {
        if (mysql_real_query(native, sql, (unsigned long)strlen(sql)) != 0)
            bu_die("%s: %s", sql, mysql_error(native));
        return (long long)mysql_affected_rows(native);
    }
#endif
#if defined(SQLLOCK_HAVE_SQLITE)
    if (strcmp(driver, "sqlite") == 0) {
        char *msg = NULL;
        if (sqlite3_exec(native, sql, NULL, NULL, &msg) != SQLITE_OK)
            bu_die("%s: %s", sql, msg != NULL ? msg : sqlite3_errmsg(native));
        return sqlite3_changes(native);
    }
#endif
    bu_die("no clean-up for driver '%s'", driver);
    return 0;
}

/* Deletes the lease rows, and on MySQL the token rows, of the names that
 * start with `prefix` (which ends in ':'); returns the lease rows. */
static long long delete_prefix(sqllock_db *db, const char *prefix)
{
    char hi[96];
    size_t len = strlen(prefix);
    long long n;

    snprintf(hi, sizeof hi, "%s", prefix);
    hi[len - 1] = (char)(hi[len - 1] + 1);      /* ':' + 1 = ';' */
    n = delete_range(db, "sqllock_lease", prefix, hi);
    if (strcmp(sqllock_db_driver(db), "mysql") == 0)
        delete_range(db, "sqllock_token", prefix, hi);
    return n;
}

/* ------------------------------------------------------------------------ */
/* One scenario, in a child process                                         */
/* ------------------------------------------------------------------------ */

typedef struct config {
    double secs;
    int reps;
    long leases;
    int64_t ttl_ms;
    long hold_ms;            /* not watched: held this long (1 s) */
} config;

/* What a child reports through its pipe. */
typedef struct mem_result {
    double before;           /* RSS after the warm-up */
    double handles;          /* after sqllock_lease_new() of every lease */
    double held;             /* after every acquire (and the settle) */
    double freed;            /* after every release, free and close */
    double renewer;          /* watched: what watch_prepare + warm-up took */
    double acquire_s;        /* the acquires (and watches) */
    double first_renew_s;    /* watched: until every lease was renewed */
    double renewals_per_s;   /* watched: counted in the settle period */
    double renewer_cpu;      /* watched: process CPU s per s of settle */
    long renewed;            /* watched: leases renewed before the settle */
    long lost;               /* releases that said SQLLOCK_LOST */
} mem_result;

static sqllock_lease *new_lease(sqllock_db *db, const char *name,
                                int64_t ttl_ms)
{
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_lease *l = NULL;
    int rc;

    o.ttl_ms = ttl_ms;
    rc = sqllock_lease_new(db, name, &o, &l);
    if (rc != SQLLOCK_OK)
        bu_die("sqllock_lease_new(%s): %s: %s", name, sqllock_errname(rc),
            sqllock_errmsg(db));
    return l;
}

static void acquire(sqllock_db *db, sqllock_lease *l)
{
    int rc = sqllock_lease_try_acquire(l);

    if (rc != SQLLOCK_OK)
        bu_die("sqllock_lease_try_acquire(%s): %s: %s", sqllock_lease_name(l),
            sqllock_errname(rc), sqllock_errmsg(db));
}

static void watch(sqllock_db *db, sqllock_lease *l)
{
    int rc = sqllock_lease_watch(l, NULL);

    if (rc != SQLLOCK_OK)
        bu_die("sqllock_lease_watch(%s): %s: %s", sqllock_lease_name(l),
            sqllock_errname(rc), sqllock_errmsg(db));
}

/* Releases; SQLLOCK_LOST is counted (a lease whose renewals fell behind
 * shows up there), anything else fails the run. */
static void release(sqllock_db *db, sqllock_lease *l, long *lost)
{
    int rc = sqllock_lease_release(l);

    if (rc == SQLLOCK_LOST)
        (*lost)++;
    else if (rc != SQLLOCK_OK)
        bu_die("sqllock_lease_release(%s): %s: %s", sqllock_lease_name(l),
            sqllock_errname(rc), sqllock_errmsg(db));
}

/* The warm-up: a lease taken and released (and, watched, the renewer
 * started and a short lease renewed once), so that the connection's
 * statements and the renewer exist before the "before" point. */
static void warm_up(sqllock_db *db, int watched, mem_result *res)
{
    char name[96];
    sqllock_lease *l;
    long lost = 0;
    double r0;
    int rc;

    snprintf(name, sizeof name, NAME_PREFIX "%ld:warm", (long)getpid());
    l = new_lease(db, name, watched ? WARM_TTL_MS : 30000);
    acquire(db, l);
    release(db, l, &lost);
    if (watched) {
        int64_t t0, dl0;
        r0 = rss_bytes();
        rc = sqllock_watch_prepare(db);
        if (rc != SQLLOCK_OK)
            bu_die("sqllock_watch_prepare: %s: %s", sqllock_errname(rc),
                sqllock_errmsg(db));
        acquire(db, l);
        watch(db, l);
        t0 = bu_now_ms();
        dl0 = t0 + sqllock_lease_remaining_ms(l);
        /* Its first renewal comes a third of the ttl after the acquire. */
        while (bu_now_ms() + sqllock_lease_remaining_ms(l) < dl0 + 100) {
            if (bu_now_ms() - t0 > WARM_TTL_MS * 3)
                bu_die("the warm-up lease was not renewed in %d ms (state "
                    "%s)", WARM_TTL_MS * 3,
                    sqllock_lease_state_name(sqllock_lease_state(l)));
            bu_sleep_ms(10);
        }
        release(db, l, &lost);
        res->renewer = rss_bytes() - r0;
    }
    sqllock_lease_free(l);
    if (lost > 0)
        bu_die("the warm-up lease was lost");
}

static void run_child(const config *cfg, const char *url, int watched,
                      int fd)
{
    long n = cfg->leases, i, renewed = 0;
    sqllock_lease **ls;
    int64_t *acq_ms, *dl0;
    char **names, prefix[64];
    sqllock_db *db;
    mem_result res;
    double t0;
    ssize_t w;

    memset(&res, 0, sizeof res);
#if defined(SQLLOCK_HAVE_MYSQL)
    if (mysql_library_init(0, NULL, NULL) != 0)
        bu_die("mysql_library_init failed");
#endif
    /* Everything this program needs is allocated before "before". */
    ls = calloc((size_t)n, sizeof *ls);
    acq_ms = calloc((size_t)n, sizeof *acq_ms);
    dl0 = calloc((size_t)n, sizeof *dl0);
    names = calloc((size_t)n, sizeof *names);
    if (ls == NULL || acq_ms == NULL || dl0 == NULL || names == NULL)
        bu_die("out of memory");
    snprintf(prefix, sizeof prefix, NAME_PREFIX "%ld:", (long)getpid());
    for (i = 0; i < n; i++) {
        char buf[96];
        snprintf(buf, sizeof buf, "%s%ld", prefix, i);
        names[i] = strdup(buf);
        if (names[i] == NULL)
            bu_die("out of memory");
    }
    db = bu_open(url);
    warm_up(db, watched, &res);

    res.before = rss_bytes();
    for (i = 0; i < n; i++)
        ls[i] = new_lease(db, names[i], cfg->ttl_ms);
    res.handles = rss_bytes();
    t0 = bu_now_s();
    for (i = 0; i < n; i++) {
        acq_ms[i] = bu_now_ms();
        acquire(db, ls[i]);
        if (watched)
            watch(db, ls[i]);
    }
    res.acquire_s = bu_now_s() - t0;
    if (watched) {
        /* A lease is renewed once its local deadline is past what its
         * acquire gave it: sent at acq_ms[i] or later, ttl - margin. */
        int64_t margin = cfg->ttl_ms / 10, limit = bu_now_ms() + cfg->ttl_ms;
        double c0, t1;
        long renewals = 0;
        for (;;) {
            int64_t t = bu_now_ms();
            renewed = 0;
            for (i = 0; i < n; i++) {
                int st = sqllock_lease_state(ls[i]);
                if (st != SQLLOCK_STATE_HELD)
                    bu_die("lease %ld is %s before its first renewal", i,
                        sqllock_lease_state_name(st));
                if (t + sqllock_lease_remaining_ms(ls[i]) >
                    acq_ms[i] + cfg->ttl_ms - margin + RENEWED_SLACK_MS)
                    renewed++;
            }
            if (renewed == n || t > limit)
                break;
            bu_sleep_ms(200);
        }
        res.first_renew_s = bu_now_s() - t0;
        res.renewed = renewed;
        /* The settle period: the renewals in it are counted from each
         * lease's deadline at its start and at its end. */
        for (i = 0; i < n; i++)
            dl0[i] = bu_now_ms() + sqllock_lease_remaining_ms(ls[i]);
        c0 = (bu_cpu_us() / 1e6);
        t1 = bu_now_s();
        bu_sleep_ms((long)(cfg->secs * 1000));
        t1 = bu_now_s() - t1;
        res.renewer_cpu = ((bu_cpu_us() / 1e6) - c0) / t1;
        for (i = 0; i < n; i++) {
            int64_t moved = bu_now_ms() + sqllock_lease_remaining_ms(ls[i]) -
                            dl0[i];
            int64_t interval = cfg->ttl_ms / 3;
            int st = sqllock_lease_state(ls[i]);
            if (st != SQLLOCK_STATE_HELD)
                bu_die("lease %ld is %s after the settle period", i,
                    sqllock_lease_state_name(st));
            renewals += (long)((moved + interval / 2) / interval);
        }
        res.renewals_per_s = (double)renewals / t1;
    } else {
        bu_sleep_ms(cfg->hold_ms);
    }
    res.held = rss_bytes();
    for (i = 0; i < n; i++)
        release(db, ls[i], &res.lost);
    for (i = 0; i < n; i++)
        sqllock_lease_free(ls[i]);
    delete_prefix(db, prefix);
    sqllock_close(db);
#if defined(__GLIBC__)
    /* What the allocator keeps of freed memory is not the library's. */
    malloc_trim(0);
#endif
    res.freed = rss_bytes();
    w = write(fd, &res, sizeof res);
    if (w != (ssize_t)sizeof res)
        bu_die("writing to the parent: %s", strerror(errno));
    for (i = 0; i < n; i++)
        free(names[i]);
    free(names);
    free(dl0);
    free(acq_ms);
    free(ls);
#if defined(SQLLOCK_HAVE_MYSQL)
    mysql_library_end();
#endif
}

/* Runs one scenario in a child process; its result comes back through a
 * pipe. */
static void in_child(const config *cfg, const char *url, int watched,
                     mem_result *out)
{
    int fds[2], status;
    pid_t pid;
    ssize_t got;

    fflush(stdout);
    fflush(stderr);
    if (pipe(fds) != 0)
        bu_die("pipe: %s", strerror(errno));
    pid = fork();
    if (pid < 0)
        bu_die("fork: %s", strerror(errno));
    if (pid == 0) {
        close(fds[0]);
        run_child(cfg, url, watched, fds[1]);
        close(fds[1]);
        fflush(stdout);
        _exit(0);
    }
    close(fds[1]);
    got = read(fds[0], out, sizeof *out);
    close(fds[0]);
    if (waitpid(pid, &status, 0) != pid)
        bu_die("waitpid: %s", strerror(errno));
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        bu_die("the %s scenario's process failed (see above)",
            watched ? "watched" : "not watched");
    if (got != (ssize_t)sizeof *out)
        bu_die("the %s scenario's process sent no result",
            watched ? "watched" : "not watched");
}

/* sqllock_init() and the clean-up of an earlier run, in a child as well
 * (the parent holds no handle while it forks). */
static void prepare_child(const char *url, int fd)
{
    sqllock_db *db;
    char buf[256];
    long long left;
    int rc;

#if defined(SQLLOCK_HAVE_MYSQL)
    if (mysql_library_init(0, NULL, NULL) != 0)
        bu_die("mysql_library_init failed");
#endif
    db = bu_open(url);
    rc = sqllock_init(db);
    if (rc != SQLLOCK_OK)
        bu_die("sqllock_init on %s: %s", url, sqllock_errmsg(db));
    left = delete_prefix(db, NAME_PREFIX);
    memset(buf, 0, sizeof buf);
    snprintf(buf, sizeof buf, "%s|%lld", sqllock_db_driver(db), left);
    if (write(fd, buf, sizeof buf) != (ssize_t)sizeof buf)
        bu_die("writing to the parent: %s", strerror(errno));
    sqllock_close(db);
#if defined(SQLLOCK_HAVE_MYSQL)
    mysql_library_end();
#endif
}

static void prepare(const char *url, char *driver, size_t n)
{
    char buf[256], *bar;
    int fds[2], status;
    pid_t pid;

    fflush(stdout);
    fflush(stderr);
    if (pipe(fds) != 0)
        bu_die("pipe: %s", strerror(errno));
    pid = fork();
    if (pid < 0)
        bu_die("fork: %s", strerror(errno));
    if (pid == 0) {
        close(fds[0]);
        prepare_child(url, fds[1]);
        _exit(0);
    }
    close(fds[1]);
    if (read(fds[0], buf, sizeof buf) != (ssize_t)sizeof buf)
        buf[0] = '\0';
    close(fds[0]);
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
        WEXITSTATUS(status) != 0 || buf[0] == '\0')
        bu_die("%s: the set-up failed (see above)", url);
    buf[sizeof buf - 1] = '\0';
    bar = strchr(buf, '|');
    if (bar == NULL)
        bu_die("%s: the set-up sent no driver name", url);
    *bar = '\0';
    snprintf(driver, n, "%s", buf);
    if (strtoll(bar + 1, NULL, 10) > 0)
        printf("%s: removed %s rows left by an earlier run\n", driver,
               bar + 1);
}

/* ------------------------------------------------------------------------ */
/* The table                                                                */
/* ------------------------------------------------------------------------ */

static void bench_url(const config *cfg, const char *url)
{
    mem_result res[2][MAX_REPS];
    double v[MAX_REPS], per[2], handles[2], freed[2], renewer;
    double acq[2], first, rate, cpu;
    long lost = 0, renewed_min = cfg->leases;
    char driver[64];
    int rep, k, i;
    static const char *const labels[2] = { "held, not watched",
                                           "held, watched (renewed)" };

    prepare(url, driver, sizeof driver);
    for (rep = 0; rep < cfg->reps; rep++) {
        for (k = 0; k < 2; k++) {
            int watched = (k + rep) % 2;     /* a rotating order */
            mem_result *r = &res[watched][rep];
            in_child(cfg, url, watched, r);
            lost += r->lost;
            if (watched && r->renewed < renewed_min)
                renewed_min = r->renewed;
            fprintf(stderr, "  %s run %d: %-24s %8.0f bytes/lease (handles "
                    "%.0f), acquire%s %.1f s", driver, rep + 1,
                    labels[watched], (r->held - r->before) /
                    (double)cfg->leases, (r->handles - r->before) /
                    (double)cfg->leases, watched ? "+watch" : "",
                    r->acquire_s);
            if (watched)
                fprintf(stderr, ", all renewed after %.1f s, %.0f "
                        "renewals/s, renewer %.0f kB, CPU %.1f%%",
                        r->first_renew_s, r->renewals_per_s,
                        r->renewer / 1024, r->renewer_cpu * 100);
            fputc('\n', stderr);
        }
    }
#define MED_(expr, out)                                                      \
    do {                                                                     \
        for (i = 0; i < cfg->reps; i++) {                                    \
            const mem_result *r = &res[k][i];                                \
            v[i] = (expr);                                                   \
        }                                                                    \
        out = bu_median(v, cfg->reps);                                          \
    } while (0)
    for (k = 0; k < 2; k++) {
        MED_((r->held - r->before) / (double)cfg->leases, per[k]);
        MED_((r->handles - r->before) / (double)cfg->leases, handles[k]);
        MED_(r->freed - r->before, freed[k]);
        MED_(r->acquire_s, acq[k]);
    }
    k = 1;
    MED_(r->renewer, renewer);
    MED_(r->first_renew_s, first);
    MED_(r->renewals_per_s, rate);
    MED_(r->renewer_cpu, cpu);
#undef MED_

    printf("\n%s memory, %ld leases, ttl %lld ms, settle %g s, %d runs, "
           "median\n", driver, cfg->leases, (long long)cfg->ttl_ms,
           cfg->secs, cfg->reps);
    printf("%-26s %12s %14s %16s %12s\n", "scenario", "bytes/lease",
           "handles only", "kept after free", "acquire s");
    for (k = 0; k < 2; k++) {
        printf("%-26s %12.0f %14.0f %16.0f %12.1f\n", labels[k], per[k],
               handles[k], freed[k], acq[k]);
        csv_row(driver, labels[k], cfg->leases, per[k], "bytes/lease");
    }
    csv_row(driver, "renewer (per handle)", cfg->leases, renewer, "bytes");
    printf("  bytes/lease: (resident after the leases are held - resident "
           "before the first\n  lease handle) / leases, /proc/self/statm; "
           "handles only: after sqllock_lease_new()\n  of every lease, "
           "before any acquire; kept after free: resident bytes above "
           "\"before\"\n  after every release, free and close, and "
           "malloc_trim(0)\n");
    printf("  renewer: %.0f kB resident for sqllock_watch_prepare() (thread "
           "and connection) and its\n  first renewal, once per handle\n",
           renewer / 1024);
    printf("  renewals: interval ttl/3 = %lld ms, so %.0f renewals/s asked "
           "of the database on the\n  renewer's one connection; counted in "
           "the settle period: %.0f/s; every lease renewed\n  once after "
           "%.1f s (acquires included; fewest renewed before the settle: "
           "%ld of %ld);\n  process CPU during the settle period: %.1f%% of "
           "one core\n", (long long)(cfg->ttl_ms / 3),
           (double)cfg->leases / ((double)cfg->ttl_ms / 3000.0), rate,
           first, renewed_min, cfg->leases, cpu * 100);
    if (lost > 0)
        printf("  %ld releases reported SQLLOCK_LOST (leases whose renewals "
               "fell behind)\n", lost);
    fflush(stdout);
}

static void usage(void)
{
    fprintf(stderr,
        "usage: " PROG " [--seconds N] [--quick] [--reps N] [--results FILE]"
        "\n                    [--leases N] [--ttl-ms N] [--smoke] URL...\n"
        "  --seconds N      the settle period after every watched lease was "
        "renewed once\n"
        "                   (default 10)\n"
        "  --quick          a settle period of 2 s\n"
        "  --reps N         repetitions; the median is shown (default 3)\n"
        "  --results FILE   append the rows to the common results CSV\n"
        "  --leases N       leases held by the one handle (default 10000)\n"
        "  --ttl-ms N       their ttl (default 60000; renewed every ttl/3)\n"
        "  --smoke          one run of 50 leases of 3 s, settle 0.2 s: a check "
        "that the\n"
        "                   program runs (ctest's bench_smoke_memory_*); the "
        "URLs default\n"
        "                   to the tests' (bench_util.h)\n"
        "URLs: sqlite:///path.db postgres://... mysql://...\n");
    exit(2);
}

int main(int argc, char **argv)
{
    config cfg;
    bu_args args = { 10, 3, MAX_REPS, NULL, 0, { NULL }, 0 };
    int i, took;

    memset(&cfg, 0, sizeof cfg);
    cfg.leases = 10000;
    cfg.ttl_ms = 60000;
    cfg.hold_ms = 1000;
    bu_init(PROG, "run aborted (lease rows left behind expire after their "
            "ttl; the next run deletes them)");
    for (i = 1; i < argc; i++) {
        const char *a = argv[i];
        if ((took = bu_args_take(&args, argc, argv, &i)) != 0) {
            if (took < 0)
                usage();
        } else if (strcmp(a, "--leases") == 0 && i + 1 < argc) {
            cfg.leases = bu_parse_long(argv[++i], 1, 10000000, "--leases");
        } else if (strcmp(a, "--ttl-ms") == 0 && i + 1 < argc) {
            cfg.ttl_ms = bu_parse_long(argv[++i], 3000, 86400000L,
                                       "--ttl-ms");
        } else {
            usage();
        }
    }
    if (args.smoke) {
        cfg.leases = 50;
        cfg.ttl_ms = 3000;
        cfg.hold_ms = 200;
    }
    bu_args_finish(&args, 1);
    if (args.nurls == 0)
        usage();
    cfg.secs = args.secs;
    cfg.reps = args.reps;
    if (args.results != NULL) {
        g_results_path = args.results;
        g_results = bu_results_open(args.results);
    }
    printf(PROG ": sqllock %s, %ld leases, ttl %lld ms, settle %g s, %d "
           "runs\n", sqllock_version_string(), cfg.leases,
           (long long)cfg.ttl_ms, cfg.secs, cfg.reps);
    fflush(stdout);
    for (i = 0; i < args.nurls; i++)
        bench_url(&cfg, args.urls[i]);
    if (g_results != NULL && (ferror(g_results) | fclose(g_results)) != 0)
        bu_die("writing %s failed", g_results_path);
    bu_smoke_done();
    return 0;
}
