/*
 * bench_many.c -- several names at once (issue 18 item 4, contract L12):
 *
 *   round trips  statements the library sends for one acquire_many of 10
 *                names and for its release_many, against 10 single
 *                acquires and releases (core/db.c counts every execute,
 *                begin, commit and rollback; prepares, once per
 *                connection, are done before counting);
 *   sets/s       one client: acquire_many(10) + release_many, against
 *                10 x (acquire + release) of the same names, in turn,
 *                the median of --reps rounds of --secs each;
 *   contention   8 processes taking random overlapping sets of 3 of 20
 *                names for --contend-secs, each doing an unlocked
 *                read-increment-write of each name's counter in shared
 *                memory while it holds the set: counters exact, and no
 *                call failed (a deadlock would show as an error).
 *
 * Usage: bench_many [--reps N] [--seconds S] [--contend-secs S] [--quick]
 *                   [--results FILE] URL...
 * (URLs default to $SQLLOCK_BENCH_URLS; --secs is --seconds); --quick:
 * 2 s rounds and 10 s of contention; --results: three rows per URL in
 * the common CSV (suite many); --smoke: each part once, for a fraction of
 * a second, on the tests' URLs (bench_util.h). Each URL's schema is
 * created. It exits 1 when a counter is not exact or a call failed in the
 * contention (exclusion or all-or-none broken), after printing it.
 * Figures are ratios measured in the same run; nothing here is a test.
 */
#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sqllock.h"
#include "internal.h"
#include "bench_util.h"

#define N10 10
#define KIDS 8
#define NAMES 20
#define SET 3

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void die(const char *what, sqllock_db *db, int rc)
{
    fprintf(stderr, "bench_many: %s: %s: %s\n", what, sqllock_errname(rc),
            db != NULL ? sqllock_errmsg(db) : "");
    exit(1);
}

static sqllock_lease *lease(sqllock_db *db, const char *name)
{
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_lease *l = NULL;
    int rc;

    o.ttl_ms = 30000;
    o.backoff_min_ms = 1;
    o.backoff_max_ms = 20;
    if ((rc = sqllock_lease_new(db, name, &o, &l)) != SQLLOCK_OK)
        die("lease_new", db, rc);
    return l;
}

static void many_pair(sqllock_db *db, sqllock_lease **l)
{
    int rc = sqllock_lease_acquire_many(db, l, N10, 0);

    if (rc != SQLLOCK_OK)
        die("acquire_many", db, rc);
    if ((rc = sqllock_lease_release_many(db, l, N10)) != SQLLOCK_OK)
        die("release_many", db, rc);
}

static void single_pairs(sqllock_db *db, sqllock_lease **l)
{
    int i, rc;

    for (i = 0; i < N10; i++)
        if ((rc = sqllock_lease_try_acquire(l[i])) != SQLLOCK_OK)
            die("acquire", db, rc);
    for (i = 0; i < N10; i++)
        if ((rc = sqllock_lease_release(l[i])) != SQLLOCK_OK)
            die("release", db, rc);
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

typedef struct shared {
    char names[NAMES][64];
    int64_t counter[NAMES];
    _Atomic int64_t done[NAMES];
    _Atomic int failures;
    _Atomic int deadlocks;
    _Atomic int64_t sets;
} shared;

static int contender(const char *url, shared *sh, int k, double secs)
{
    sqllock_db *db = NULL;
    sqllock_lease *l[NAMES], *set[SET];
    unsigned seed = (unsigned)getpid() * 2654435761u + (unsigned)k;
    double end;
    int i, j, idx[SET], rc;

    if (sqllock_open(url, NULL, &db) != SQLLOCK_OK)
        return 1;
    for (i = 0; i < NAMES; i++)
        l[i] = lease(db, sh->names[i]);
    end = now_s() + secs;
    while (now_s() < end) {
        for (i = 0; i < SET; i++) {
            int again;
            do {
                idx[i] = (int)(rand_r(&seed) % NAMES);
                again = 0;
                for (j = 0; j < i; j++)
                    again |= idx[j] == idx[i];
            } while (again);
            set[i] = l[idx[i]];
        }
        rc = sqllock_lease_acquire_many(db, set, SET, 60000);
        if (rc != SQLLOCK_OK) {
            fprintf(stderr, "contender %d: %s: %s\n", k, sqllock_errname(rc),
                    sqllock_errmsg(db));
            atomic_fetch_add(&sh->failures, 1);
            if (rc == SQLLOCK_EDEADLOCK)
                atomic_fetch_add(&sh->deadlocks, 1);
            continue;
        }
        for (i = 0; i < SET; i++) {
            int64_t v = sh->counter[idx[i]];
            sched_yield();
            sh->counter[idx[i]] = v + 1;
            atomic_fetch_add(&sh->done[idx[i]], 1);
        }
        rc = sqllock_lease_release_many(db, set, SET);
        if (rc != SQLLOCK_OK) {
            atomic_fetch_add(&sh->failures, 1);
            fprintf(stderr, "contender %d release: %s: %s\n", k,
                    sqllock_errname(rc), sqllock_errmsg(db));
        }
        atomic_fetch_add(&sh->sets, 1);
    }
    for (i = 0; i < NAMES; i++)
        sqllock_lease_free(l[i]);
    sqllock_close(db);
    return 0;
}

static FILE *g_results;
static int g_bad;

static void bench_url(const char *url, int reps, double secs,
                      double contend_secs)
{
    sqllock_db *db = NULL;
    sqllock_lease *l[N10];
    char name[64], *red = NULL;
    uint64_t s0, s1, s2, s3;
    double many_r[64], single_r[64], t, end, many_med, single_med;
    long count;
    int i, r, rc, exact = 1;
    int64_t total = 0;
    shared *sh;
    pid_t pid[KIDS];

    if ((rc = sqllock_open(url, NULL, &db)) != SQLLOCK_OK)
        die("open", db, rc);
    if ((rc = sqllock_init(db)) != SQLLOCK_OK)
        die("init", db, rc);
    sqllock_url_redact(url, &red);
    for (i = 0; i < N10; i++) {
        snprintf(name, sizeof name, "bench-many-%ld-%02d", (long)getpid(), i);
        l[i] = lease(db, name);
    }
    /* Warm: every statement prepared. */
    many_pair(db, l);
    single_pairs(db, l);
    s0 = atomic_load(&sqllock__statements_sent);
    rc = sqllock_lease_acquire_many(db, l, N10, 0);
    if (rc != SQLLOCK_OK)
        die("acquire_many", db, rc);
    s1 = atomic_load(&sqllock__statements_sent);
    if ((rc = sqllock_lease_release_many(db, l, N10)) != SQLLOCK_OK)
        die("release_many", db, rc);
    s2 = atomic_load(&sqllock__statements_sent);
    single_pairs(db, l);
    s3 = atomic_load(&sqllock__statements_sent);
    printf("%s\n", red != NULL ? red : "?");
    sqllock_free(red);
    printf("  round trips, 10 names: acquire_many %llu, release_many %llu; "
           "10 single acquires + releases %llu\n",
           (unsigned long long)(s1 - s0), (unsigned long long)(s2 - s1),
           (unsigned long long)(s3 - s2));
    for (r = 0; r < reps; r++) {
        count = 0;
        t = now_s();
        end = t + secs;
        while (now_s() < end) {
            many_pair(db, l);
            count++;
        }
        many_r[r] = count / (now_s() - t);
        count = 0;
        t = now_s();
        end = t + secs;
        while (now_s() < end) {
            single_pairs(db, l);
            count++;
        }
        single_r[r] = count / (now_s() - t);
    }
    qsort(many_r, (size_t)reps, sizeof *many_r, cmp_d);
    qsort(single_r, (size_t)reps, sizeof *single_r, cmp_d);
    many_med = many_r[reps / 2];
    single_med = single_r[reps / 2];
    printf("  sets of 10 per second, 1 client (median of %d x %.0f s): "
           "acquire_many+release_many %.0f, 10 x (acquire+release) %.0f, "
           "ratio %.2fx\n", reps, secs, many_med, single_med,
           single_med > 0 ? many_med / single_med : 0.0);
    {
        bu_result row = { "many", sqllock_db_driver(db),
                          "acquire_many(10)+release_many", 1, 0, many_med,
                          NAN, NAN, single_med > 0 ? many_med / single_med
                          : NAN, "10 single pairs", (double)(s1 - s0),
                          "statements/acquire" };

        bu_results_put(g_results, &row);
        row.scenario = "10 single pairs";
        row.ops_per_s = single_med;
        row.ratio = NAN;
        row.vs = NULL;
        row.value = (double)(s3 - s2) / 2.0;
        row.unit = "statements/10 acquires";
        bu_results_put(g_results, &row);
    }
    for (i = 0; i < N10; i++)
        sqllock_lease_free(l[i]);
    sqllock_close(db);

    if (contend_secs <= 0)
        return;
    sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE,
              MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED)
        die("mmap", NULL, 0);
    memset(sh, 0, sizeof *sh);
    for (i = 0; i < NAMES; i++)
        snprintf(sh->names[i], sizeof sh->names[i], "bench-many-c-%ld-%02d",
                 (long)getpid(), i);
    fflush(stdout);
    for (i = 0; i < KIDS; i++) {
        pid[i] = fork();
        if (pid[i] == 0)
            _exit(contender(url, sh, i, contend_secs));
    }
    for (i = 0; i < KIDS; i++)
        waitpid(pid[i], NULL, 0);
    for (i = 0; i < NAMES; i++) {
        if (sh->counter[i] != atomic_load(&sh->done[i]))
            exact = 0;
        total += sh->counter[i];
    }
    printf("  8 processes, random sets of 3 of 20 names, %.0f s: %lld sets "
           "(%.0f/s), %lld increments, counters %s, %d failed calls (%d "
           "deadlock errors)\n", contend_secs,
           (long long)atomic_load(&sh->sets),
           atomic_load(&sh->sets) / contend_secs, (long long)total,
           exact ? "exact" : "WRONG", atomic_load(&sh->failures),
           atomic_load(&sh->deadlocks));
    {
        const char *drv = strncmp(url, "postgres", 8) == 0 ? "postgres"
                          : strncmp(url, "mysql", 5) == 0 ||
                            strncmp(url, "mariadb", 7) == 0 ? "mysql"
                          : "sqlite";
        bu_result row = { "many", drv, "8 processes, 3 of 20 names", KIDS,
                          0, atomic_load(&sh->sets) / contend_secs, NAN, NAN,
                          NAN, NULL, (double)atomic_load(&sh->deadlocks),
                          "deadlock errors" };

        bu_results_put(g_results, &row);
    }
    if (!exact || atomic_load(&sh->failures) > 0)
        g_bad = 1;
    munmap(sh, sizeof *sh);
}

int main(int argc, char **argv)
{
    int reps = 3, i, nurls = 0, smoke = 0;
    double secs = 3, contend_secs = 30;
    const char *urls[16], *results = NULL;
    char *env, *tok, *save = NULL, *smoke_urls[16];

    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc)
            reps = atoi(argv[++i]);
        else if ((strcmp(argv[i], "--secs") == 0 ||
                  strcmp(argv[i], "--seconds") == 0) && i + 1 < argc)
            secs = atof(argv[++i]);
        else if (strcmp(argv[i], "--quick") == 0) {
            secs = 2;
            contend_secs = 10;
        } else if (strcmp(argv[i], "--results") == 0 && i + 1 < argc)
            results = argv[++i];
        else if (strcmp(argv[i], "--contend-secs") == 0 && i + 1 < argc)
            contend_secs = atof(argv[++i]);
        else if (strcmp(argv[i], "--smoke") == 0)
            smoke = 1;
        else if (nurls < 16)
            urls[nurls++] = argv[i];
    }
    if (reps < 1 || reps > 64)
        reps = 3;
    if (smoke) {
        reps = 1;
        secs = BU_SMOKE_SECS;
        contend_secs = 2 * BU_SMOKE_SECS;
        if (nurls == 0) {
            nurls = bu_smoke_urls(smoke_urls, 16);
            for (i = 0; i < nurls; i++)
                urls[i] = smoke_urls[i];
        }
    }
    if (nurls == 0 && (env = getenv("SQLLOCK_BENCH_URLS")) != NULL) {
        env = strdup(env);
        for (tok = strtok_r(env, " ", &save); tok != NULL && nurls < 16;
             tok = strtok_r(NULL, " ", &save))
            urls[nurls++] = tok;
    }
    if (nurls == 0) {
        fprintf(stderr, "usage: bench_many [--reps N] [--seconds S] "
                "[--contend-secs S] [--quick] [--results FILE] URL...\n");
        return 64;
    }
    if (results != NULL)
        g_results = bu_results_open(results);
    for (i = 0; i < nurls; i++)
        bench_url(urls[i], reps, secs, contend_secs);
    if (g_results != NULL && (ferror(g_results) | fclose(g_results)) != 0) {
        fprintf(stderr, "bench_many: writing %s failed\n", results);
        return 1;
    }
    if (g_bad) {
        fprintf(stderr, "bench_many: a counter was not exact or a call "
                "failed under contention (see above)\n");
        return 1;
    }
    if (smoke)
        bu_smoke_done();
    return 0;
}
