/*
 * bench_rw.c -- shared and exclusive holds (issue 19 item 2, contract
 * M2) beside the plain lease, in the same run, with 1 and 8 client
 * processes (--clients), each with a connection of its own:
 *
 *   lease      acquire + release of a plain lease, each client its own
 *              name (the floor: one statement each way);
 *   shared     sqllock_rw_try_acquire + release of a shared hold, every
 *              client on ONE name (readers share: no waiting);
 *   exclusive  the same for an exclusive hold, each client its own name
 *              (the writer's row, the check that no reader is inside,
 *              the release).
 *
 * The clients of a point connect and warm up, wait at a barrier (memory
 * shared with this process), then run pairs until --seconds have passed
 * since it; the rate is all their pairs over that window. The modes of a
 * client count run in a rotating order from rep to rep (so that a load
 * that comes and goes on the machine falls on all of them alike); the
 * median of --reps points, and each mode's ratio to the lease's at the
 * same client count, measured in the same run.
 *
 * Usage: bench_rw [--seconds S] [--reps N] [--quick] [--clients 1,8]
 *                 [--results FILE] [--smoke] URL...
 * --seconds 5 and --reps 3 by default (--quick: 2 s; --secs is
 * --seconds); URLs default to $SQLLOCK_BENCH_URLS. --results appends rows
 * of suite `rw` to the common CSV (bench/README.md). --smoke: each mode
 * once for 0.2 s on the tests' URLs (bench_util.h; ctest's
 * bench_smoke_rw_<driver>). Figures, not a test: a failed call ends the
 * program with status 1. A call that meets SQLLOCK_EDBBUSY (SQLite's
 * busy timeout running out: its clients share the file's one write lock)
 * is tried again and counted, as in bench_scale, and the count is shown
 * beside the point.
 */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sqllock.h"
#include "bench_util.h"

#define PROG "bench_rw"
/* How often one call is tried again while the database stays busy. */
#define BUSY_RETRIES 1000

enum { MODE_LEASE, MODE_SHARED, MODE_EXCLUSIVE, MODES };
static const char *const mode_name[MODES] = { "lease", "shared",
                                              "exclusive" };

/* What a point's client processes share with this one. */
typedef struct shared {
    _Atomic int ready;               /* clients past their warm-up */
    _Atomic int go;                  /* set once all are ready */
    _Atomic int failed;              /* a client gave up */
    _Atomic int64_t start_ns;        /* the barrier, CLOCK_MONOTONIC */
    _Atomic int64_t count[BU_MAX_CLIENTS];
    _Atomic long busy;               /* SQLLOCK_EDBBUSY met and retried */
    char err[600];                   /* the first failure's message */
} shared;

static shared *g_sh;
/* SQLLOCK_EDBBUSY retried in the points of each mode since its report. */
static long g_busy[MODES];
static FILE *g_results;

/* In a client: says why, and ends the client with status 1. */
static void __attribute__((noreturn))
client_die(const char *what, sqllock_db *db, int rc)
{
    int expected = 0;

    if (atomic_compare_exchange_strong(&g_sh->failed, &expected, 1))
        snprintf(g_sh->err, sizeof g_sh->err, "%s: %s: %s", what,
                 sqllock_errname(rc), db != NULL ? sqllock_errmsg(db) : "");
    _exit(1);
}

/* One call of a pair: the acquire (`release` 0) or the release, tried
 * again while the database stays busy past its busy timeout. */
static int call(int mode, sqllock_lease *l, sqllock_rw *rw, int release)
{
    int rc, tries;

    for (tries = 0;; tries++) {
        if (mode == MODE_LEASE)
            rc = release ? sqllock_lease_release(l)
                         : sqllock_lease_try_acquire(l);
        else
            rc = release ? sqllock_rw_release(rw) : sqllock_rw_try_acquire(rw);
        if (rc != SQLLOCK_EDBBUSY || tries == BUSY_RETRIES)
            return rc;
        atomic_fetch_add(&g_sh->busy, 1);
    }
}

static void pair(int mode, sqllock_db *db, sqllock_lease *l, sqllock_rw *rw)
{
    char what[32];
    int rc;

    if ((rc = call(mode, l, rw, 0)) != SQLLOCK_OK) {
        snprintf(what, sizeof what, "%s acquire", mode_name[mode]);
        client_die(what, db, rc);
    }
    if ((rc = call(mode, l, rw, 1)) != SQLLOCK_OK) {
        snprintf(what, sizeof what, "%s release", mode_name[mode]);
        client_die(what, db, rc);
    }
}

/* One client process: warm-up, the barrier, then pairs of `mode` until
 * `secs` after it; the count into the shared memory. */
static void __attribute__((noreturn))
client(const char *url, int mode, int id, double secs, int warmup)
{
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_db *db = NULL;
    sqllock_lease *l = NULL;
    sqllock_rw *rw = NULL;
    char name[96];
    int64_t n = 0, end;
    int rc, i;

    if ((rc = sqllock_open(url, NULL, &db)) != SQLLOCK_OK)
        client_die("open", db, rc);
    o.ttl_ms = 30000;
    if (mode == MODE_SHARED)
        snprintf(name, sizeof name, "bench-rw-%ld-shared", (long)getppid());
    else
        snprintf(name, sizeof name, "bench-rw-%ld-%s-%d", (long)getppid(),
                 mode_name[mode], id);
    if (mode == MODE_LEASE)
        rc = sqllock_lease_new(db, name, &o, &l);
    else
        rc = sqllock_rw_new(db, name, mode == MODE_SHARED, &o, &rw);
    if (rc != SQLLOCK_OK)
        client_die("new", db, rc);
    for (i = 0; i < warmup; i++)
        pair(mode, db, l, rw);
    atomic_fetch_add(&g_sh->ready, 1);
    while (!atomic_load(&g_sh->go))
        bu_sleep_ns(100000);
    end = atomic_load(&g_sh->start_ns) + (int64_t)(secs * 1e9);
    while (bu_now_ns() < end) {
        pair(mode, db, l, rw);
        n++;
    }
    atomic_store(&g_sh->count[id], n);
    sqllock_lease_free(l);
    sqllock_rw_free(rw);
    sqllock_close(db);
    _exit(0);
}

/* One point: `n` client processes of `mode`; pairs per second. */
static double point(const char *url, int mode, int n, const bu_args *a)
{
    pid_t pid[BU_MAX_CLIENTS];
    int64_t total = 0, deadline;
    int i, st, bad = 0;

    memset(g_sh, 0, sizeof *g_sh);
    fflush(NULL);
    for (i = 0; i < n; i++) {
        pid[i] = fork();
        if (pid[i] < 0)
            bu_die("fork: %s", strerror(errno));
        if (pid[i] == 0)
            client(url, mode, i, a->secs, a->smoke ? 2 : 20);
    }
    /* Connections and warm-ups: a minute at most. */
    deadline = bu_now_ms() + 60000;
    while (atomic_load(&g_sh->ready) < n && !atomic_load(&g_sh->failed) &&
           bu_now_ms() < deadline)
        bu_sleep_ms(1);
    if (atomic_load(&g_sh->ready) < n && !atomic_load(&g_sh->failed)) {
        snprintf(g_sh->err, sizeof g_sh->err,
                 "%d of %d clients not ready after 60 s",
                 n - atomic_load(&g_sh->ready), n);
        atomic_store(&g_sh->failed, 1);
    }
    atomic_store(&g_sh->start_ns, bu_now_ns());
    atomic_store(&g_sh->go, 1);
    for (i = 0; i < n; i++) {
        if (atomic_load(&g_sh->failed) && waitpid(pid[i], &st, WNOHANG) == 0)
            kill(pid[i], SIGKILL);
        if (waitpid(pid[i], &st, 0) != pid[i] || !WIFEXITED(st) ||
            WEXITSTATUS(st) != 0)
            bad = 1;
        total += atomic_load(&g_sh->count[i]);
    }
    g_busy[mode] += atomic_load(&g_sh->busy);
    if (atomic_load(&g_sh->failed))
        bu_die("%s, %d clients: %s", mode_name[mode], n, g_sh->err);
    if (bad)
        bu_die("%s, %d clients: a client failed", mode_name[mode], n);
    return (double)total / a->secs;
}

static void report(const char *driver, int mode, int n, double rate,
                   double lease_rate)
{
    double ratio = lease_rate > 0 ? rate / lease_rate : NAN;
    bu_result res;

    printf("  %-10s %2d clients %9.0f pairs/s  x%.2f of the lease",
           mode_name[mode], n, rate, ratio);
    if (g_busy[mode] > 0)
        printf("  (SQLLOCK_EDBBUSY retried %ld times)", g_busy[mode]);
    putchar('\n');
    g_busy[mode] = 0;
    fflush(stdout);
    memset(&res, 0, sizeof res);
    res.suite = "rw";
    res.driver = driver;
    res.scenario = mode_name[mode];
    res.clients = n;
    res.rows = -1;
    res.ops_per_s = rate;
    res.p50_us = NAN;
    res.p99_us = NAN;
    res.ratio = ratio;
    res.vs = "lease";
    res.value = NAN;
    bu_results_put(g_results, &res);
}

static void bench_url(const char *url, const int *clients, int nclients,
                      const bu_args *a)
{
    char driver[32];
    sqllock_db *db = bu_open(url);
    int rc, k, r, j, m;

    if ((rc = sqllock_init(db)) != SQLLOCK_OK)
        bu_die("init: %s: %s", sqllock_errname(rc), sqllock_errmsg(db));
    snprintf(driver, sizeof driver, "%s", sqllock_db_driver(db));
    sqllock_close(db);
    printf("%s\n", driver);
    for (k = 0; k < nclients; k++) {
        double v[MODES][16], med[MODES];

        for (r = 0; r < a->reps; r++)
            for (j = 0; j < MODES; j++) {
                m = (j + r) % MODES;
                v[m][r] = point(url, m, clients[k], a);
            }
        for (m = 0; m < MODES; m++)
            med[m] = bu_median(v[m], a->reps);
        for (m = 0; m < MODES; m++)
            report(driver, m, clients[k], med[m], med[MODE_LEASE]);
    }
}

static void usage(void)
{
    fprintf(stderr, "usage: " PROG " [--seconds S] [--reps N] [--quick] "
            "[--clients 1,8] [--results FILE] [--smoke] URL...\n"
            "  (URLs default to $SQLLOCK_BENCH_URLS, space-separated)\n");
    exit(2);
}

int main(int argc, char **argv)
{
    bu_args args = { 5, 3, 16, NULL, 0, { NULL }, 0 };
    int clients[8] = { 1, 8 }, nclients = 2, max = 8, i, took;
    const char *env = getenv("SQLLOCK_BENCH_URLS");
    char *envcopy = NULL, *save = NULL, *tok;

    bu_init(PROG, "run aborted (its leases expire after 30 s)");
    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--secs") == 0 && i + 1 < argc) {
            args.secs = bu_parse_secs(argv[++i], 86400, "--secs");
        } else if ((took = bu_args_take(&args, argc, argv, &i)) != 0) {
            if (took < 0)
                usage();
        } else if (strcmp(argv[i], "--clients") == 0 && i + 1 < argc) {
            nclients = bu_parse_clients(argv[++i], clients, &max);
        } else {
            usage();
        }
    }
    (void)max;
    bu_args_finish(&args, 1);
    if (args.nurls == 0 && env != NULL) {
        if ((envcopy = strdup(env)) == NULL)
            bu_die("out of memory");
        for (tok = strtok_r(envcopy, " ", &save);
             tok != NULL && args.nurls < BU_MAX_URLS;
             tok = strtok_r(NULL, " ", &save))
            args.urls[args.nurls++] = tok;
    }
    if (args.nurls == 0)
        usage();
    g_sh = mmap(NULL, sizeof *g_sh, PROT_READ | PROT_WRITE,
                MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (g_sh == MAP_FAILED)
        bu_die("mmap: %s", strerror(errno));
    if (args.results != NULL)
        g_results = bu_results_open(args.results);
    printf(PROG ": sqllock %s, %d rep(s) of %g s a point, client "
           "processes\n", sqllock_version_string(), args.reps, args.secs);
    for (i = 0; i < args.nurls; i++)
        bench_url(args.urls[i], clients, nclients, &args);
    if (g_results != NULL && (ferror(g_results) | fclose(g_results)) != 0)
        bu_die("writing %s failed", args.results);
    munmap(g_sh, sizeof *g_sh);
    free(envcopy);
    bu_smoke_done();
    return 0;
}
