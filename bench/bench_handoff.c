/*
 * bench_handoff.c -- how long a released lock stays free before the next
 * waiter holds it, with and without wake-ups (DESIGN L9), on every driver.
 *
 *   bench_handoff [--seconds 10] [--quick] [--reps 3] [--waiters 8]
 *                 [--hold-ms 2] [--ttl-ms 10000] [--barge] [--fair]
 *                 [--csv FILE]
 *                 [--results FILE] URL...
 *
 *   e.g. the benchmarks' contended scenario (8 clients on one name, a 1 ms
 *   critical section) on the three drivers:
 *
 *   bench_handoff --hold-ms 1 --results results.csv sqlite:///tmp/h.db \
 *            postgres://user:pw@127.0.0.1:5432/db mysql://user:pw@host/db
 *
 * For each URL (sqllock_init() is run on it first) and each of four modes,
 *
 *   processes, wake-ups on    N forked processes, default lease options;
 *   processes, wake-ups off   the same with SQLLOCK_LEASE_NO_WAKEUP
 *                             (polling with backoff only);
 *   threads, wake-ups on      N threads of this process;
 *   threads, wake-ups off     the same with SQLLOCK_LEASE_NO_WAKEUP;
 *
 * N workers, each with its own sqllock_db handle, contend for one lock
 * name. Each loops: sqllock_lease_acquire() (waiting up to 60 s; a wait
 * that runs out fails the run), note the time it returned, hold the lock
 * for --hold-ms (the critical section), note the time the release starts,
 * sqllock_lease_release(), note the time it returned. HANDOVERS/S are the
 * critical sections completed (release returned) in the measured window,
 * per second. The HANDOFF of a grant is its acquire-return time minus the
 * previous grant's release-start time: how long the lock was out of the
 * application's hands. Its time from the previous release's
 * RETURN is shown too; it can be negative, since the next holder may hear
 * of the release before the releaser has read the database's reply.
 * The WAIT of a grant is the time its sqllock_lease_acquire() call took,
 * queueing included: its tail shows which waiters starve.
 *
 * After its release, a worker stands aside until another worker has
 * taken the lock, then queues again. Without that, the releaser, which is
 * the one worker not asleep, would take the lock straight back on most
 * grants and the figures would measure a re-acquire, not a handoff; so at
 * every release N - 1 workers are waiting in sqllock_lease_acquire().
 * --barge drops the rule, and the "self" column then shows the share of
 * grants the releaser took back.
 *
 * --fair adds the four modes again with SQLLOCK_LEASE_FAIR (contract M3:
 * waiters queue, the oldest is served next), measured in the same run, in
 * turn with the others: the cost of fair waiting against unfair waiting.
 *
 * Mutual exclusion is checked at the same time: under the lock each
 * holder reads a shared counter, sleeps for the hold, and writes it back
 * plus one. If the counter does not end equal to the number of grants,
 * two holders overlapped and the program exits with status 1.
 *
 * Each run of a mode has 1 s of warm-up and then --seconds of measurement
 * (10; --quick 2); each mode runs --reps times (3), the modes in turn, and
 * the table shows the median of each column over the runs. Beside
 * each row, the FLOOR is the p50 of one uncontended acquire+release pair
 * on the same driver, measured in the same run by one handle of this
 * process for 1 s (its pairs/s, p50 and p99 are in a table of their own
 * at the end). Timestamps are CLOCK_MONOTONIC, kept in memory shared with
 * the children (mmap MAP_SHARED | MAP_ANONYMOUS). The parent holds no open
 * handle while it forks: a child uses only the handle it opens itself.
 *
 * --csv FILE writes this program's own columns (the mode column keeps
 * its old names: "processes, wake-ups", "processes, polling", ...).
 * --results FILE appends to FILE in the common format of bench/README.md
 * (the header only when FILE is empty or new), suite `contended`: per
 * driver a `floor` row (the uncontended pair, 1 client: pairs/s, p50,
 * p99) and a row per mode, whose scenario is the mode and the critical
 * section ("processes, wake-ups on, critical section 1 ms"; ", barging"
 * with --barge), clients = the workers, ops_per_s = handovers/s, p50_us
 * and p99_us the handoff's, ratio = handovers/s over the floor's pairs/s,
 * value = the wait p99 in ms.
 *
 * This is a measuring program, not a test. The lock names are
 * "sqllock-handoff:<pid>:<mode>"; their rows are released at the end
 * (MySQL's per-name token rows are deleted too).
 */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <sqllock.h>

#include "bench_util.h"

#if defined(SQLLOCK_HAVE_MYSQL)
#include <mysql.h>
#endif

#define MAX_WAITERS 64
#define MAX_REPS 15
#define MAX_GRANTS (1 << 18)
#define WAIT_MS 60000           /* a wait longer than this is a failure */
#define WARMUP_NS INT64_C(1000000000)  /* --smoke: 0.1 s */
#define FLOOR_NS INT64_C(1000000000)   /* --smoke: 0.2 s */
#define FLOOR_WARMUP 20

/* One grant of the lock, written only by its holder. */
typedef struct grant {
    int64_t call_ns;             /* sqllock_lease_acquire() called */
    int64_t acq_ns;              /* sqllock_lease_acquire() returned */
    int64_t rel_start_ns;        /* sqllock_lease_release() called */
    int64_t rel_end_ns;          /* sqllock_lease_release() returned */
    int32_t worker;
    int32_t done;                /* 1 once the three times are written */
} grant;

/* The memory the workers share, processes or threads. The mutex and the
 * condition variable are process-shared and guard everything but the
 * grant slots (each written by its holder alone) and `counter` (guarded
 * by the lease, which is what it checks). */
typedef struct shared {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int ready;                   /* workers connected */
    int go;
    volatile int failed;         /* read without the mutex to stop */
    int64_t window_ns;           /* measurement starts */
    int64_t end_ns;              /* and ends */
    int64_t seq;                 /* grants so far */
    volatile long counter;
    char err[600];
    grant g[MAX_GRANTS];
} shared;

typedef struct config {
    double secs;
    int reps;                    /* runs of each mode; the median is shown */
    int waiters;
    int64_t hold_ms;
    int64_t ttl_ms;
    int barge;
    int fair;                    /* --fair: the fair modes too */
    int64_t warmup_ns, floor_ns;     /* WARMUP_NS, FLOOR_NS; less for --smoke */
    const char *csv_path;
    FILE *csv;
    const char *results_path;    /* --results: the common CSV */
    FILE *results;
} config;

/* One mode, as each worker sees it. */
typedef struct run {
    const config *cfg;
    const char *url;
    char name[96];
    unsigned flags;
    shared *sh;
    int index;                   /* threads: the worker's own number */
} run;

typedef struct mode {
    const char *label;           /* the table's and the results' */
    const char *csv_label;       /* --csv's, as it always was */
    int processes;
    unsigned flags;
} mode;

static const mode modes[] = {
    { "processes, wake-ups on", "processes, wake-ups", 1, 0 },
    { "processes, wake-ups off", "processes, polling", 1,
      SQLLOCK_LEASE_NO_WAKEUP },
    { "threads, wake-ups on", "threads, wake-ups", 0, 0 },
    { "threads, wake-ups off", "threads, polling", 0,
      SQLLOCK_LEASE_NO_WAKEUP },
    /* --fair only: */
    { "processes, wake-ups on, fair", "processes, wake-ups, fair", 1,
      SQLLOCK_LEASE_FAIR },
    { "processes, wake-ups off, fair", "processes, polling, fair", 1,
      SQLLOCK_LEASE_NO_WAKEUP | SQLLOCK_LEASE_FAIR },
    { "threads, wake-ups on, fair", "threads, wake-ups, fair", 0,
      SQLLOCK_LEASE_FAIR },
    { "threads, wake-ups off, fair", "threads, polling, fair", 0,
      SQLLOCK_LEASE_NO_WAKEUP | SQLLOCK_LEASE_FAIR },
};
#define MAXMODES (int)(sizeof modes / sizeof modes[0])
#define NMODES (cfg->fair ? MAXMODES : MAXMODES / 2)

/* One row of the results. */
typedef struct row {
    char driver[16];
    int mi;                      /* the mode */
    char scenario[96];           /* its label with the critical section */
    long n;                      /* handoffs measured */
    double rate;                 /* grants/s (--csv) */
    double cs_rate;              /* handovers: critical sections done/s */
    double p50, p90, p99, max, end_p50, end_p99, self, floor;
    double wait_p50, wait_p99, wait_max;   /* in sqllock_lease_acquire() */
} row;

/* The uncontended pair of one URL, 1 client. */
typedef struct floor_pt {
    char driver[16];
    double rate, p50_ms, p99_ms;
} floor_pt;

/* ------------------------------------------------------------------------ */
/* Shared memory                                                            */
/* ------------------------------------------------------------------------ */

static shared *shared_new(void)
{
    pthread_mutexattr_t ma;
    pthread_condattr_t ca;
    shared *sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE,
                      MAP_SHARED | MAP_ANONYMOUS, -1, 0);

    if (sh == MAP_FAILED)
        bu_die("mmap: %s", strerror(errno));
    if (pthread_mutexattr_init(&ma) != 0 || pthread_condattr_init(&ca) != 0 ||
        pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED) != 0 ||
        pthread_condattr_setpshared(&ca, PTHREAD_PROCESS_SHARED) != 0 ||
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) != 0 ||
        pthread_mutex_init(&sh->mu, &ma) != 0 ||
        pthread_cond_init(&sh->cv, &ca) != 0)
        bu_die("cannot make a process-shared mutex and condition variable");
    pthread_mutexattr_destroy(&ma);
    pthread_condattr_destroy(&ca);
    return sh;
}

static void shared_free(shared *sh)
{
    pthread_cond_destroy(&sh->cv);
    pthread_mutex_destroy(&sh->mu);
    if (munmap(sh, sizeof *sh) != 0)
        bu_die("munmap: %s", strerror(errno));
}

/* Waits on the shared condition until `until` (ns, monotonic). */
static void shared_wait(shared *sh, int64_t until)
{
    struct timespec ts;

    ts.tv_sec = (time_t)(until / 1000000000);
    ts.tv_nsec = (long)(until % 1000000000);
    pthread_cond_timedwait(&sh->cv, &sh->mu, &ts);
}

/* Records the first failure, and wakes everyone so that they stop. */
static int fail(shared *sh, const char *fmt, ...)
{
    va_list ap;

    pthread_mutex_lock(&sh->mu);
    if (!sh->failed) {
        va_start(ap, fmt);
        vsnprintf(sh->err, sizeof sh->err, fmt, ap);
        va_end(ap);
    }
    sh->failed = 1;
    pthread_cond_broadcast(&sh->cv);
    pthread_mutex_unlock(&sh->mu);
    return -1;
}

/* ------------------------------------------------------------------------ */
/* Workers                                                                  */
/* ------------------------------------------------------------------------ */

static int lease_open(const run *r, unsigned flags, const char *name,
                      sqllock_db **db, sqllock_lease **lease)
{
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    int rc;

    *lease = NULL;
    rc = sqllock_open(r->url, NULL, db);
    if (rc != SQLLOCK_OK)
        return fail(r->sh, "cannot open the database: %s: %s",
                    sqllock_errname(rc), sqllock_errmsg(*db));
    o.ttl_ms = r->cfg->ttl_ms;
    o.flags = flags;
    o.holder = "bench_handoff";
    rc = sqllock_lease_new(*db, name, &o, lease);
    if (rc != SQLLOCK_OK)
        return fail(r->sh, "sqllock_lease_new: %s", sqllock_errmsg(*db));
    return 0;
}

/* Waits until another worker took the lock after grant k, or the run is
 * over. */
static void stand_aside(shared *sh, int64_t k)
{
    pthread_mutex_lock(&sh->mu);
    while (sh->seq <= k + 1 && !sh->failed && bu_now_ns() < sh->end_ns)
        shared_wait(sh, sh->end_ns);
    pthread_mutex_unlock(&sh->mu);
}

/* One grant: acquire, hold (checking mutual exclusion), release. */
static int one_grant(const run *r, sqllock_db *db, sqllock_lease *lease,
                     int64_t *k_out)
{
    shared *sh = r->sh;
    int64_t k, t_call = bu_now_ns(), t_acq, t_rs, t_re;
    long v;
    int rc = sqllock_lease_acquire(lease, WAIT_MS);

    t_acq = bu_now_ns();
    if (rc != SQLLOCK_OK)
        return fail(sh, "worker %d: sqllock_lease_acquire: %s: %s", r->index,
                    sqllock_errname(rc), sqllock_errmsg(db));
    pthread_mutex_lock(&sh->mu);
    k = sh->seq++;
    if (k < MAX_GRANTS) {
        sh->g[k].call_ns = t_call;
        sh->g[k].acq_ns = t_acq;
        sh->g[k].worker = r->index;
    }
    pthread_cond_broadcast(&sh->cv);        /* for the one standing aside */
    pthread_mutex_unlock(&sh->mu);
    v = sh->counter;
    bu_sleep_ns(r->cfg->hold_ms * 1000000);
    sh->counter = v + 1;
    t_rs = bu_now_ns();
    rc = sqllock_lease_release(lease);
    t_re = bu_now_ns();
    if (rc != SQLLOCK_OK)
        return fail(sh, "worker %d: sqllock_lease_release: %s: %s", r->index,
                    sqllock_errname(rc), sqllock_errmsg(db));
    if (k < MAX_GRANTS) {
        sh->g[k].rel_start_ns = t_rs;
        sh->g[k].rel_end_ns = t_re;
        sh->g[k].done = 1;
    }
    *k_out = k;
    return 0;
}

static int worker_main(const run *r)
{
    shared *sh = r->sh;
    sqllock_db *db = NULL;
    sqllock_lease *lease = NULL;
    int64_t k = 0;
    int rc = lease_open(r, r->flags, r->name, &db, &lease);

    pthread_mutex_lock(&sh->mu);
    sh->ready++;
    pthread_cond_broadcast(&sh->cv);
    while (!sh->go && !sh->failed)
        pthread_cond_wait(&sh->cv, &sh->mu);
    pthread_mutex_unlock(&sh->mu);
    while (rc == 0 && !sh->failed) {
        rc = one_grant(r, db, lease, &k);
        if (rc != 0 || bu_now_ns() >= sh->end_ns || k + 1 >= MAX_GRANTS)
            break;
        if (!r->cfg->barge)
            stand_aside(sh, k);
        if (bu_now_ns() >= sh->end_ns)
            break;
    }
    if (sqllock_lease_count(lease) > 0)     /* after a failure */
        sqllock_lease_release(lease);
    sqllock_lease_free(lease);
    sqllock_close(db);
    return rc;
}

static void *thread_main(void *arg)
{
#if defined(SQLLOCK_HAVE_MYSQL)
    mysql_thread_init();
#endif
    worker_main(arg);
#if defined(SQLLOCK_HAVE_MYSQL)
    mysql_thread_end();
#endif
    return NULL;
}

/* ------------------------------------------------------------------------ */
/* One mode                                                                 */
/* ------------------------------------------------------------------------ */

/* Waits for every worker to connect, then starts the clock. */
static void start_run(const config *cfg, shared *sh)
{
    int64_t t;

    pthread_mutex_lock(&sh->mu);
    while (sh->ready < cfg->waiters && !sh->failed)
        pthread_cond_wait(&sh->cv, &sh->mu);
    t = bu_now_ns();
    sh->window_ns = t + cfg->warmup_ns;
    sh->end_ns = sh->window_ns + (int64_t)(cfg->secs * 1e9);
    sh->go = 1;
    pthread_cond_broadcast(&sh->cv);
    pthread_mutex_unlock(&sh->mu);
}

static void run_processes(const config *cfg, run *r)
{
    pid_t pids[MAX_WAITERS];
    int i, status, bad = 0;

    fflush(stdout);
    fflush(stderr);
    if (cfg->csv != NULL)
        fflush(cfg->csv);
    if (cfg->results != NULL)
        fflush(cfg->results);
    for (i = 0; i < cfg->waiters; i++) {
        pids[i] = fork();
        if (pids[i] < 0) {
            fail(r->sh, "fork: %s", strerror(errno));
            break;
        }
        if (pids[i] == 0) {
            r->index = i;
            _exit(worker_main(r) == 0 ? 0 : 1);
        }
    }
    if (i == cfg->waiters)
        start_run(cfg, r->sh);
    while (i-- > 0) {
        if (waitpid(pids[i], &status, 0) < 0)
            bu_die("waitpid: %s", strerror(errno));
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
            bad = 1;
    }
    if (bad && !r->sh->failed)
        fail(r->sh, "a worker process died without saying why");
}

static void run_threads(const config *cfg, run *r)
{
    pthread_t tids[MAX_WAITERS];
    run rs[MAX_WAITERS];
    int i, rc;

    for (i = 0; i < cfg->waiters; i++) {
        rs[i] = *r;
        rs[i].index = i;
        rc = pthread_create(&tids[i], NULL, thread_main, &rs[i]);
        if (rc != 0) {
            fail(r->sh, "pthread_create: %s", strerror(rc));
            break;
        }
    }
    if (i == cfg->waiters)
        start_run(cfg, r->sh);
    while (i-- > 0)
        pthread_join(tids[i], NULL);
}

/* The handoffs whose grant fell in the measured window. */
static void summarize(const config *cfg, const shared *sh, row *out)
{
    int64_t n = sh->seq < MAX_GRANTS ? sh->seq : MAX_GRANTS, k;
    double *h = malloc(sizeof *h * (size_t)(n > 0 ? n : 1));
    double *e = malloc(sizeof *e * (size_t)(n > 0 ? n : 1));
    double *w = malloc(sizeof *w * (size_t)(n > 0 ? n : 1));
    long m = 0, self = 0, grants = 0, done = 0;

    if (h == NULL || e == NULL || w == NULL)
        bu_die("out of memory");
    for (k = 0; k < n; k++) {
        const grant *g = &sh->g[k], *p;
        /* A handover: a critical section that ended in the window. */
        if (g->done && g->rel_end_ns >= sh->window_ns &&
            g->rel_end_ns < sh->end_ns)
            done++;
        if (g->acq_ns < sh->window_ns || g->acq_ns >= sh->end_ns)
            continue;
        w[grants++] = (double)(g->acq_ns - g->call_ns) / 1e6;
        if (k == 0 || !(p = &sh->g[k - 1])->done)
            continue;
        h[m] = (double)(g->acq_ns - p->rel_start_ns) / 1e6;
        e[m] = (double)(g->acq_ns - p->rel_end_ns) / 1e6;
        self += g->worker == p->worker;
        m++;
    }
    qsort(h, (size_t)m, sizeof *h, bu_cmp_double);
    qsort(e, (size_t)m, sizeof *e, bu_cmp_double);
    qsort(w, (size_t)grants, sizeof *w, bu_cmp_double);
    out->n = m;
    out->rate = (double)grants / cfg->secs;
    out->cs_rate = (double)done / cfg->secs;
    out->p50 = bu_percentile(h, (size_t)m, 0.50);
    out->p90 = bu_percentile(h, (size_t)m, 0.90);
    out->p99 = bu_percentile(h, (size_t)m, 0.99);
    out->max = m > 0 ? h[m - 1] : 0;
    out->end_p50 = bu_percentile(e, (size_t)m, 0.50);
    out->end_p99 = bu_percentile(e, (size_t)m, 0.99);
    out->self = m > 0 ? (double)self / (double)m : 0;
    out->wait_p50 = bu_percentile(w, (size_t)grants, 0.50);
    out->wait_p99 = bu_percentile(w, (size_t)grants, 0.99);
    out->wait_max = grants > 0 ? w[grants - 1] : 0;
    free(h);
    free(e);
    free(w);
}

static void run_mode(const config *cfg, const char *url, int mi, row *out)
{
    shared *sh = shared_new();
    run r;

    memset(&r, 0, sizeof r);
    r.cfg = cfg;
    r.url = url;
    r.flags = modes[mi].flags;
    r.sh = sh;
    snprintf(r.name, sizeof r.name, "sqllock-handoff:%ld:%d", (long)getpid(),
             mi);
    if (modes[mi].processes)
        run_processes(cfg, &r);
    else
        run_threads(cfg, &r);
    if (sh->failed)
        bu_die("%s: %s", modes[mi].label, sh->err);
    if (sh->counter != (long)sh->seq)
        bu_die("%s: MUTUAL EXCLUSION VIOLATED: the counter is %ld after %lld "
            "grants", modes[mi].label, sh->counter, (long long)sh->seq);
    out->mi = mi;
    snprintf(out->scenario, sizeof out->scenario,
             "%s, critical section %lld ms%s", modes[mi].label,
             (long long)cfg->hold_ms, cfg->barge ? ", barging" : "");
    summarize(cfg, sh, out);
    shared_free(sh);
}

/* ------------------------------------------------------------------------ */
/* Per URL                                                                  */
/* ------------------------------------------------------------------------ */

/* One uncontended acquire+release pair, 1 client, for 1 s: its rate and
 * its p50 and p99 in ms. */
static void measure_floor(const config *cfg, const char *url, shared *sh,
                          floor_pt *out)
{
    sqllock_db *db = NULL;
    sqllock_lease *lease = NULL;
    run r;
    double *lat = NULL;
    size_t n = 0, cap = 0;
    int64_t t0, start = 0, end = 0;
    int i, rc;

    memset(&r, 0, sizeof r);
    r.cfg = cfg;
    r.url = url;
    r.sh = sh;
    snprintf(r.name, sizeof r.name, "sqllock-handoff:%ld:floor",
             (long)getpid());
    if (lease_open(&r, 0, r.name, &db, &lease) != 0)
        bu_die("%s", sh->err);
    rc = sqllock_init(db);
    if (rc != SQLLOCK_OK)
        bu_die("sqllock_init: %s: %s", sqllock_errname(rc), sqllock_errmsg(db));
    snprintf(out->driver, sizeof out->driver, "%s", sqllock_db_driver(db));
    for (i = 0; end == 0 || bu_now_ns() < end; i++) {
        if (i == FLOOR_WARMUP) {
            start = bu_now_ns();
            end = start + cfg->floor_ns;
        }
        t0 = bu_now_ns();
        rc = sqllock_lease_acquire(lease, 0);
        if (rc == SQLLOCK_OK)
            rc = sqllock_lease_release(lease);
        if (rc != SQLLOCK_OK)
            bu_die("floor: %s: %s", sqllock_errname(rc), sqllock_errmsg(db));
        if (end == 0)
            continue;
        if (n == cap) {
            double *p = realloc(lat, (cap = cap ? cap * 2 : 4096) * sizeof *p);
            if (p == NULL)
                bu_die("out of memory");
            lat = p;
        }
        lat[n++] = (double)(bu_now_ns() - t0) / 1e6;
    }
    out->rate = (double)n / ((double)(bu_now_ns() - start) / 1e9);
    qsort(lat, n, sizeof *lat, bu_cmp_double);
    out->p50_ms = bu_percentile(lat, n, 0.50);
    out->p99_ms = bu_percentile(lat, n, 0.99);
    free(lat);
    sqllock_lease_free(lease);
    sqllock_close(db);
}

/* MySQL keeps a token row per name; remove those of this run. */
static void cleanup(const char *url)
{
#if defined(SQLLOCK_HAVE_MYSQL)
    sqllock_db *db = NULL;
    char sql[128];

    if (sqllock_open(url, NULL, &db) == SQLLOCK_OK &&
        strcmp(sqllock_db_driver(db), "mysql") == 0) {
        snprintf(sql, sizeof sql, "DELETE FROM sqllock_token WHERE name "
                 "LIKE 'sqllock-handoff:%ld:%%'", (long)getpid());
        if (mysql_query(sqllock_db_native(db), sql) != 0)
            fprintf(stderr, "bench_handoff: cleanup: %s\n",
                    mysql_error(sqllock_db_native(db)));
    }
    sqllock_close(db);
#else
    (void)url;
#endif
}

/* ------------------------------------------------------------------------ */
/* Output                                                                   */
/* ------------------------------------------------------------------------ */

/* One row of suite `contended`: rates per second, latencies in ms (written
 * in us); ratio NAN and vs NULL when there is none. */
static void res_write(FILE *f, const char *driver, const char *scenario,
                      int clients, double rate, double p50_ms, double p99_ms,
                      double ratio, const char *vs, double value,
                      const char *unit)
{
    bu_result r = { "contended", driver, scenario, clients, -1, rate,
                    p50_ms * 1000, p99_ms * 1000, ratio, vs, value, unit };

    bu_results_put(f, &r);         /* no `rows` in this suite */
}

static void print_row(const config *cfg, const row *r)
{
    printf("| %s | %s | %.0f | %ld | %.2f | %.2f | %.2f | %.2f | %.2f | "
           "%.2f |", r->driver, r->scenario, r->cs_rate, r->n, r->p50,
           r->p90, r->p99, r->max, r->end_p50, r->end_p99);
    if (cfg->barge)
        printf(" %.0f%% |", 100 * r->self);
    printf(" %.2f | %.1f | %.0f | %.0f | %.0f |\n", r->floor,
           r->floor > 0 ? r->p50 / r->floor : 0, r->wait_p50, r->wait_p99,
           r->wait_max);
    fflush(stdout);
    if (cfg->csv != NULL)
        fprintf(cfg->csv, "%s,\"%s\",%d,%lld,%g,%d,%.1f,%ld,%.3f,%.3f,"
                "%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.2f,%.1f,%.1f,%.1f\n",
                r->driver, modes[r->mi].csv_label, cfg->waiters,
                (long long)cfg->hold_ms, cfg->secs, cfg->barge,
                r->rate, r->n, r->p50, r->p90, r->p99, r->max, r->end_p50,
                r->end_p99, r->self, r->floor,
                r->floor > 0 ? r->p50 / r->floor : 0, r->wait_p50,
                r->wait_p99, r->wait_max);
}

/* The bu_median, field by field, of the reps runs of one mode, as the other
 * programs of bench/ do: each percentile is the median of the runs'. */
static void median_row(row *runs, int reps, row *out)
{
    static const size_t fields[] = {
        offsetof(row, rate), offsetof(row, cs_rate), offsetof(row, p50),
        offsetof(row, p90), offsetof(row, p99), offsetof(row, max),
        offsetof(row, end_p50), offsetof(row, end_p99), offsetof(row, self),
        offsetof(row, wait_p50), offsetof(row, wait_p99),
        offsetof(row, wait_max),
    };
    double v[MAX_REPS];
    long n[MAX_REPS];
    size_t f;
    int k, j;

    *out = runs[0];
    for (f = 0; f < sizeof fields / sizeof fields[0]; f++) {
        for (k = 0; k < reps; k++)
            v[k] = *(const double *)((const char *)&runs[k] + fields[f]);
        qsort(v, (size_t)reps, sizeof v[0], bu_cmp_double);
        *(double *)((char *)out + fields[f]) = reps % 2 ? v[reps / 2]
            : (v[reps / 2 - 1] + v[reps / 2]) / 2;
    }
    for (k = 0; k < reps; k++)          /* handoffs: the median count */
        n[k] = runs[k].n;
    for (k = 1; k < reps; k++)
        for (j = k; j > 0 && n[j - 1] > n[j]; j--) {
            long t = n[j];
            n[j] = n[j - 1];
            n[j - 1] = t;
        }
    out->n = n[reps / 2];
}

/* The floor and the four modes of one URL, each mode --reps times (the
 * modes in turn, so that a slow spell of the machine does not fall on
 * one mode's runs only); the results rows are written only once all are
 * measured, so a run cut short leaves none of the URL's (ratios always
 * have their floor). */
static void bench_url(const config *cfg, const char *url, floor_pt *fl)
{
    shared *sh = shared_new();
    row rs[MAXMODES], runs[MAXMODES][MAX_REPS];
    int mi, k;

    measure_floor(cfg, url, sh, fl);
    shared_free(sh);
    for (k = 0; k < cfg->reps; k++)
        for (mi = 0; mi < NMODES; mi++) {
            row *r = &runs[mi][k];
            memset(r, 0, sizeof *r);
            run_mode(cfg, url, mi, r);
            snprintf(r->driver, sizeof r->driver, "%s", fl->driver);
            fprintf(stderr, "bench_handoff: %s, %s, run %d: %.0f "
                    "handovers/s, handoff p50 %.2f ms p99 %.2f ms\n",
                    fl->driver, modes[mi].label, k + 1, r->cs_rate, r->p50,
                    r->p99);
        }
    for (mi = 0; mi < NMODES; mi++) {
        median_row(runs[mi], cfg->reps, &rs[mi]);
        rs[mi].floor = fl->p50_ms;
        print_row(cfg, &rs[mi]);
    }
    cleanup(url);
    res_write(cfg->results, fl->driver, "floor", 1, fl->rate, fl->p50_ms,
              fl->p99_ms, NAN, NULL, NAN, NULL);
    for (mi = 0; mi < NMODES; mi++)
        res_write(cfg->results, rs[mi].driver, rs[mi].scenario,
                  cfg->waiters, rs[mi].cs_rate, rs[mi].p50, rs[mi].p99,
                  fl->rate > 0 ? rs[mi].cs_rate / fl->rate : NAN, "floor",
                  rs[mi].wait_p99, "ms wait p99");
    if (cfg->results != NULL)
        fflush(cfg->results);
}

/* The floors, after the table. */
static void print_floors(const floor_pt *fl, int n)
{
    int i;

    printf("\nfloor: one uncontended sqllock acquire+release pair, 1 "
           "client, 1 s, same driver\n\n"
           "| driver | scenario | clients | pairs/s | p50 ms | p99 ms |\n"
           "|---|---|--:|--:|--:|--:|\n");
    for (i = 0; i < n; i++)
        printf("| %s | floor | 1 | %.0f | %.2f | %.2f |\n", fl[i].driver,
               fl[i].rate, fl[i].p50_ms, fl[i].p99_ms);
    printf("\nhandovers/s: critical sections completed per second; p50, "
           "p90, p99, max: the handoff,\nfrom the release's start to the "
           "next holder's acquire return; wake-ups off:\n"
           "SQLLOCK_LEASE_NO_WAKEUP (polling with backoff only)\n");
    fflush(stdout);
}

/* ------------------------------------------------------------------------ */
/* main                                                                     */
/* ------------------------------------------------------------------------ */

static void usage(void)
{
    fprintf(stderr,
        "usage: bench_handoff [--seconds N] [--quick] [--reps N] "
        "[--waiters N]\n"
        "                     [--hold-ms N] [--ttl-ms N] [--barge] "
        "[--fair] [--csv FILE]\n"
        "                     [--results FILE] [--smoke] URL...\n"
        "  --seconds N     measured time per run, after 1 s of warm-up "
        "(default 10)\n"
        "  --quick         runs of 2 s\n"
        "  --reps N        runs of each mode, 1..%d; the median is shown "
        "(default 3)\n"
        "  --waiters N     workers contending for one lock name, 2..%d "
        "(default 8)\n"
        "  --hold-ms N     the critical section: time each holder keeps "
        "the lock, 0..10000\n"
        "                  (default 2; the benchmarks' contended scenario "
        "is 1)\n"
        "  --ttl-ms N      lease ttl (default 10000)\n"
        "  --barge         the releaser queues again at once instead of "
        "standing aside\n"
        "  --fair          the four modes again with SQLLOCK_LEASE_FAIR "
        "(fair waiting, M3)\n"
        "  --csv FILE      also write the rows as CSV, in this program's own "
        "columns\n"
        "  --results FILE  also append the rows to FILE in the common results "
        "format of\n"
        "                  bench/README.md (suite contended: handovers/s, "
        "handoff p50/p99)\n"
        "  --smoke         every mode once, 0.2 s each after 0.1 s of warm-up, "
        "3 waiters:\n"
        "                  a check that the program runs (ctest's "
        "bench_smoke_handoff_*);\n"
        "                  the URLs default to the tests' (bench_util.h)\n"
        "Modes: processes and threads, each with wake-ups on (the default "
        "lease options)\n"
        "and off (SQLLOCK_LEASE_NO_WAKEUP: polling with backoff only).\n"
        "URLs: sqlite:///path.db postgres://... mysql://...\n", MAX_REPS,
        MAX_WAITERS);
    exit(2);
}

int main(int argc, char **argv)
{
    config cfg;
    bu_args args = { 10, 3, MAX_REPS, NULL, 0, { NULL }, 0 };
    floor_pt floors[BU_MAX_URLS];
    int i, took;

    memset(&cfg, 0, sizeof cfg);
    cfg.waiters = 8;
    cfg.hold_ms = 2;
    cfg.ttl_ms = 10000;
    cfg.warmup_ns = WARMUP_NS;
    cfg.floor_ns = FLOOR_NS;
    bu_init("bench_handoff", NULL);
    for (i = 1; i < argc; i++) {
        const char *a = argv[i];
        if ((took = bu_args_take(&args, argc, argv, &i)) != 0) {
            if (took < 0)
                usage();
        } else if (strcmp(a, "--waiters") == 0 && i + 1 < argc) {
            cfg.waiters = (int)bu_parse_long(argv[++i], 2, MAX_WAITERS, "--waiters");
        } else if (strcmp(a, "--hold-ms") == 0 && i + 1 < argc) {
            cfg.hold_ms = bu_parse_long(argv[++i], 0, 10000, "--hold-ms");
        } else if (strcmp(a, "--ttl-ms") == 0 && i + 1 < argc) {
            cfg.ttl_ms = bu_parse_long(argv[++i], 1000, 86400000L, "--ttl-ms");
        } else if (strcmp(a, "--barge") == 0) {
            cfg.barge = 1;
        } else if (strcmp(a, "--fair") == 0) {
            cfg.fair = 1;
        } else if (strcmp(a, "--csv") == 0 && i + 1 < argc) {
            cfg.csv_path = argv[++i];
        } else {
            usage();
        }
    }
    if (args.smoke) {
        cfg.waiters = 3;
        cfg.warmup_ns = INT64_C(100000000);
        cfg.floor_ns = INT64_C(200000000);
    }
    bu_args_finish(&args, 1);
    if (args.nurls == 0)
        usage();
    cfg.secs = args.secs;
    cfg.reps = args.reps;
    cfg.results_path = args.results;
    if (cfg.hold_ms * 20 >= cfg.ttl_ms)
        bu_die("--ttl-ms must be well above --hold-ms (20x), or leases expire "
            "while held");
    if (cfg.csv_path != NULL) {
        cfg.csv = fopen(cfg.csv_path, "w");
        if (cfg.csv == NULL)
            bu_die("cannot write %s: %s", cfg.csv_path, strerror(errno));
        fprintf(cfg.csv, "driver,mode,waiters,hold_ms,seconds,barge,"
                "grants_per_s,handoffs,p50_ms,p90_ms,p99_ms,max_ms,"
                "end_p50_ms,end_p99_ms,self_share,floor_p50_ms,"
                "p50_vs_floor,wait_p50_ms,wait_p99_ms,wait_max_ms\n");
    }
    if (cfg.results_path != NULL)
        cfg.results = bu_results_open(cfg.results_path);
    printf("bench_handoff: sqllock %s, %d waiters on one name, critical "
           "section (hold) %lld ms, %g s per run after 1 s of warm-up, %d runs "
           "of each mode, medians%s\n\n",
           sqllock_version_string(), cfg.waiters, (long long)cfg.hold_ms,
           cfg.secs, cfg.reps, cfg.barge ? ", releaser barges" : "");
    printf("| driver | mode | handovers/s | handoffs | p50 ms | p90 ms | "
           "p99 ms | max ms | from release end p50 | p99 |%s "
           "floor pair p50 ms | p50 / floor | wait p50 ms | wait p99 | "
           "wait max |\n",
           cfg.barge ? " self |" : "");
    printf("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|%s--:|--:|--:|--:|--:|\n",
           cfg.barge ? "--:|" : "");
    fflush(stdout);
    for (i = 0; i < args.nurls; i++)
        bench_url(&cfg, args.urls[i], &floors[i]);
    print_floors(floors, args.nurls);
    if (cfg.csv != NULL && (ferror(cfg.csv) | fclose(cfg.csv)) != 0)
        bu_die("writing %s failed", cfg.csv_path);
    if (cfg.results != NULL &&
        (ferror(cfg.results) | fclose(cfg.results)) != 0)
        bu_die("writing %s failed", cfg.results_path);
    bu_smoke_done();
    return 0;
}
