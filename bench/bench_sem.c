/*
 * bench_sem.c -- semaphores (issue 19 item 1, contract M1): acquire +
 * release pairs per second of a permit, beside the exclusive lease's
 * pairs in the same run, with 1 and 8 client threads (--clients), each
 * with a connection of its own:
 *
 *   lease        sqllock_lease_try_acquire() + sqllock_lease_release(),
 *                each client on a name of its own (no contention);
 *   sem own      sqllock_sem_try_acquire() + sqllock_sem_release(), each
 *                client on a semaphore of its own with 8 permits (the
 *                random first permit is always free: the cost of the
 *                semaphore itself against a lease);
 *   sem shared   sqllock_sem_acquire(wait) + release, every client on ONE
 *                semaphore with as many permits as clients (nobody waits
 *                for long, but clients meet on permits: a random first
 *                try that finds its permit held reads the rows and tries
 *                a free one);
 *   ... range first  the two sem scenarios with the other order of a try
 *                (core/sem.c sqllock__sem_range_first): read the rows
 *                first, then try a free permit -- the measurement behind
 *                the library's choice of a direct try first.
 *
 * Usage: bench_sem [--seconds S] [--reps N] [--quick] [--clients 1,8]
 *                  [--results FILE] [--smoke] URL...
 * The median of --reps points (3 by default) of --seconds (5) each; the
 * ratio column is pairs/s against the lease's at the same client count,
 * measured in the same run. --results appends rows of suite `sem` to the
 * common CSV (bench/README.md). Figures, not a test.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sqllock.h"
#include "internal.h"
#include "bench_util.h"

#define PROG "bench_sem"
#define OWN_PERMITS 8

/* core/sem.c: a try reads the rows first when set. */
extern int sqllock__sem_range_first;

typedef struct client {
    bu_client base;                  /* first: bu_point_run() casts */
    sqllock_db *db;
    sqllock_lease *lease;
    sqllock_sem *own, *shared;
    int waits;
} client;

static FILE *g_results;

static int pair_lease(bu_client *bc)
{
    client *c = (client *)bc;
    int rc = sqllock_lease_try_acquire(c->lease);

    if (rc == SQLLOCK_OK)
        rc = sqllock_lease_release(c->lease);
    return rc == SQLLOCK_OK ? 0 : bu_fail(bc, "lease: %s: %s",
                                          sqllock_errname(rc),
                                          sqllock_errmsg(c->db));
}

static int pair_own(bu_client *bc)
{
    client *c = (client *)bc;
    int rc = sqllock_sem_try_acquire(c->own);

    if (rc == SQLLOCK_OK)
        rc = sqllock_sem_release(c->own);
    return rc == SQLLOCK_OK ? 0 : bu_fail(bc, "sem own: %s: %s",
                                          sqllock_errname(rc),
                                          sqllock_errmsg(c->db));
}

static int pair_shared(bu_client *bc)
{
    client *c = (client *)bc;
    int rc = sqllock_sem_acquire(c->shared, 30000);

    if (rc == SQLLOCK_OK)
        rc = sqllock_sem_release(c->shared);
    return rc == SQLLOCK_OK ? 0 : bu_fail(bc, "sem shared: %s: %s",
                                          sqllock_errname(rc),
                                          sqllock_errmsg(c->db));
}

static const char *driver_of(const char *url)
{
    if (strncmp(url, "postgres", 8) == 0)
        return "postgres";
    if (strncmp(url, "mysql", 5) == 0 || strncmp(url, "mariadb", 7) == 0)
        return "mysql";
    return "sqlite";
}

/* The scenarios of one client count, in a rotating order from rep to
 * rep (so that a load that comes and goes on the machine falls on all
 * of them alike); out[k] is scenario k's median. */
#define NSCEN 5
static const char *const scen_name[NSCEN] = {
    "lease", "sem own", "sem shared", "sem own, range first",
    "sem shared, range first"
};

static void points(client *cs, int n, const bu_args *a, bu_point *out)
{
    static const bu_pair_fn fns[NSCEN] = {
        pair_lease, pair_own, pair_shared, pair_own, pair_shared
    };
    bu_client *bc[BU_MAX_CLIENTS];
    bu_point reps[NSCEN][16];
    bu_run run;
    int i, r, j, k;

    memset(&run, 0, sizeof run);
    run.secs = a->secs;
    /* The clock starts before the warm-up ends (bench_util.c): a short
     * one in smoke mode, whose points last 0.2 s. */
    run.warmup = a->smoke ? 2 : 20;
    for (i = 0; i < n; i++)
        bc[i] = &cs[i].base;
    for (r = 0; r < a->reps; r++)
        for (j = 0; j < NSCEN; j++) {
            k = (j + r) % NSCEN;
            run.pair = fns[k];
            sqllock__sem_range_first = k >= 3;
            bu_point_run(bc, n, &run, &reps[k][r]);
        }
    sqllock__sem_range_first = 0;
    for (k = 0; k < NSCEN; k++)
        bu_point_median(reps[k], a->reps, &out[k]);
}

static void report(const char *url, const char *scenario, int n,
                   const bu_point *p, double lease_rate)
{
    bu_result res;

    printf("  %-26s %2d clients %9.0f pairs/s  p50 %7.0f us  p99 %7.0f us"
           "  x%.2f of the lease\n", scenario, n, p->rate, p->p50, p->p99,
           lease_rate > 0 ? p->rate / lease_rate : NAN);
    fflush(stdout);
    memset(&res, 0, sizeof res);
    res.suite = "sem";
    res.driver = driver_of(url);
    res.scenario = scenario;
    res.clients = n;
    res.rows = -1;
    res.ops_per_s = p->rate;
    res.p50_us = p->p50;
    res.p99_us = p->p99;
    res.ratio = lease_rate > 0 ? p->rate / lease_rate : NAN;
    res.vs = "lease";
    res.value = NAN;
    bu_results_put(g_results, &res);
}

static void bench_url(const char *url, const int *clients, int nclients,
                      int max, const bu_args *a)
{
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    client *cs = calloc((size_t)max, sizeof *cs);
    char name[128], shared_name[128];
    int k, i, j, n, rc;

    if (cs == NULL)
        bu_die("out of memory");
    printf("%s\n", driver_of(url));
    o.ttl_ms = 30000;
    o.backoff_min_ms = 1;
    o.backoff_max_ms = 50;
    for (i = 0; i < max; i++) {
        cs[i].base.index = i;
        cs[i].db = bu_open(url);
        if (i == 0 && (rc = sqllock_init(cs[i].db)) != SQLLOCK_OK)
            bu_die("init: %s", sqllock_errmsg(cs[i].db));
        /* The lease and the semaphore on names of their own: one name
         * is one kind of lock (contract N1). */
        snprintf(name, sizeof name, "bench-sem-%ld-%d", (long)getpid(), i);
        if (sqllock_lease_new(cs[i].db, name, &o, &cs[i].lease) != SQLLOCK_OK)
            bu_die("new: %s", sqllock_errmsg(cs[i].db));
        snprintf(name, sizeof name, "bench-sem-%ld-%d-own", (long)getpid(),
                 i);
        if (sqllock_sem_new(cs[i].db, name, OWN_PERMITS, &o, &cs[i].own)
            != SQLLOCK_OK)
            bu_die("new: %s", sqllock_errmsg(cs[i].db));
    }
    for (k = 0; k < nclients; k++) {
        bu_point p[NSCEN];

        n = clients[k];
        snprintf(shared_name, sizeof shared_name, "bench-sem-%ld-shared-%d",
                 (long)getpid(), n);
        for (i = 0; i < n; i++) {
            sqllock_sem_free(cs[i].shared);
            cs[i].shared = NULL;
            if (sqllock_sem_new(cs[i].db, shared_name, n, &o,
                                &cs[i].shared) != SQLLOCK_OK)
                bu_die("new: %s", sqllock_errmsg(cs[i].db));
        }
        points(cs, n, a, p);
        for (j = 0; j < NSCEN; j++)
            report(url, scen_name[j], n, &p[j], p[0].rate);
    }
    for (i = 0; i < max; i++) {
        bu_lat_free(&cs[i].base.lat);
        sqllock_lease_free(cs[i].lease);
        sqllock_sem_free(cs[i].own);
        sqllock_sem_free(cs[i].shared);
        sqllock_close(cs[i].db);
    }
    free(cs);
}

static void usage(void)
{
    fprintf(stderr, "usage: " PROG " [--seconds S] [--reps N] [--quick] "
            "[--clients 1,8] [--results FILE] [--smoke] URL...\n");
    exit(2);
}

int main(int argc, char **argv)
{
    bu_args args = { 5, 3, 16, NULL, 0, { NULL }, 0 };
    int clients[8] = { 1, 8 }, nclients = 2, max = 8, i, took;

    bu_init(PROG, "run aborted (its leases expire after 30 s)");
    for (i = 1; i < argc; i++) {
        if ((took = bu_args_take(&args, argc, argv, &i)) != 0) {
            if (took < 0)
                usage();
        } else if (strcmp(argv[i], "--clients") == 0 && i + 1 < argc) {
            nclients = bu_parse_clients(argv[++i], clients, &max);
        } else {
            usage();
        }
    }
    bu_args_finish(&args, 1);
    if (args.nurls == 0)
        usage();
    if (args.results != NULL)
        g_results = bu_results_open(args.results);
    printf(PROG ": sqllock %s, %d rep(s) of %g s a point\n",
           sqllock_version_string(), args.reps, args.secs);
    for (i = 0; i < args.nurls; i++)
        bench_url(args.urls[i], clients, nclients, max, &args);
    if (g_results != NULL && (ferror(g_results) | fclose(g_results)) != 0)
        bu_die("writing %s failed", args.results);
    bu_smoke_done();
    return 0;
}
