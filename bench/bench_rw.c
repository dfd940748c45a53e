/*
 * bench_rw.c -- shared and exclusive holds (issue 19 item 2, contract
 * M2) beside the plain lease, in the same run, with 1 and 8 client
 * processes (each its own connection):
 *
 *   lease      acquire + release of a plain lease, each client its own
 *              name (the floor: one statement each way);
 *   shared     sqllock_rw_try_acquire + release of a shared hold, every
 *              client on ONE name (readers share: no waiting);
 *   exclusive  the same for an exclusive hold, each client its own name
 *              (the writer's row, the check that no reader is inside,
 *              the release).
 *
 * Pairs per second over all clients, the median of --reps rounds of
 * --seconds each, and each mode's ratio to the lease's. Nothing here is
 * a test; a failed call ends the program with status 1.
 *
 * Usage: bench_rw [--reps N] [--seconds S] [--smoke] URL...
 * (URLs default to $SQLLOCK_BENCH_URLS; --smoke: each mode once for a
 * fraction of a second on the tests' URLs, bench_util.h.)
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sqllock.h"
#include "bench_util.h"

#define MAX_CLIENTS 8

enum { MODE_LEASE, MODE_SHARED, MODE_EXCLUSIVE, MODES };
static const char *const mode_name[MODES] = { "lease", "shared",
                                              "exclusive" };

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void die(const char *what, sqllock_db *db, int rc)
{
    fprintf(stderr, "bench_rw: %s: %s: %s\n", what, sqllock_errname(rc),
            db != NULL ? sqllock_errmsg(db) : "");
    exit(1);
}

/* One client: pairs of `mode` for `secs`; the count into *out. */
static void client(const char *url, int mode, int id, double secs,
                   _Atomic int64_t *out)
{
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_db *db = NULL;
    sqllock_lease *l = NULL;
    sqllock_rw *rw = NULL;
    char name[96];
    int64_t n = 0;
    double end;
    int rc;

    if ((rc = sqllock_open(url, NULL, &db)) != SQLLOCK_OK)
        die("open", db, rc);
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
        die("new", db, rc);
    end = now_s() + secs;
    while (now_s() < end) {
        if (mode == MODE_LEASE) {
            if ((rc = sqllock_lease_try_acquire(l)) != SQLLOCK_OK)
                die("lease acquire", db, rc);
            if ((rc = sqllock_lease_release(l)) != SQLLOCK_OK)
                die("lease release", db, rc);
        } else {
            if ((rc = sqllock_rw_try_acquire(rw)) != SQLLOCK_OK)
                die("rw acquire", db, rc);
            if ((rc = sqllock_rw_release(rw)) != SQLLOCK_OK)
                die("rw release", db, rc);
        }
        n++;
    }
    atomic_store(out, n);
    sqllock_lease_free(l);
    sqllock_rw_free(rw);
    sqllock_close(db);
}

/* One round: `clients` processes of `mode`; pairs per second. */
static double round_of(const char *url, int mode, int clients, double secs,
                       _Atomic int64_t *counts)
{
    pid_t pid[MAX_CLIENTS];
    int64_t total = 0;
    int i, st;

    fflush(stdout);
    for (i = 0; i < clients; i++) {
        atomic_store(&counts[i], 0);
        pid[i] = fork();
        if (pid[i] < 0) {
            perror("fork");
            exit(1);
        }
        if (pid[i] == 0) {
            client(url, mode, i, secs, &counts[i]);
            _exit(0);
        }
    }
    for (i = 0; i < clients; i++) {
        if (waitpid(pid[i], &st, 0) != pid[i] || !WIFEXITED(st) ||
            WEXITSTATUS(st) != 0) {
            fprintf(stderr, "bench_rw: a client failed\n");
            exit(1);
        }
        total += atomic_load(&counts[i]);
    }
    return (double)total / secs;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    static const int client_counts[2] = { 1, 8 };
    _Atomic int64_t *counts;
    const char *env = getenv("SQLLOCK_BENCH_URLS");
    char *urls[16], *envcopy = NULL, *save = NULL, *tok;
    int nurls = 0, reps = 3, smoke = 0, u, c, m, r;
    double secs = 2, v[16], med[MODES];

    for (r = 1; r < argc; r++) {
        if (strcmp(argv[r], "--reps") == 0 && r + 1 < argc)
            reps = atoi(argv[++r]);
        else if ((strcmp(argv[r], "--seconds") == 0 ||
                  strcmp(argv[r], "--secs") == 0) && r + 1 < argc)
            secs = atof(argv[++r]);
        else if (strcmp(argv[r], "--smoke") == 0)
            smoke = 1;
        else if (nurls < 16)
            urls[nurls++] = argv[r];
    }
    if (smoke) {
        nurls = bu_smoke_urls(urls, 16);
        reps = 1;
        secs = BU_SMOKE_SECS;
    }
    if (nurls == 0 && env != NULL) {
        envcopy = strdup(env);
        for (tok = strtok_r(envcopy, " ", &save); tok != NULL && nurls < 16;
             tok = strtok_r(NULL, " ", &save))
            urls[nurls++] = tok;
    }
    if (nurls == 0 || reps < 1 || reps > 16 || secs <= 0) {
        fprintf(stderr, "usage: bench_rw [--reps N] [--seconds S] URL...\n");
        return 64;
    }
    counts = mmap(NULL, sizeof *counts * MAX_CLIENTS, PROT_READ | PROT_WRITE,
                  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (counts == MAP_FAILED)
        return 1;
    printf("driver,clients,mode,pairs_per_s,ratio_to_lease\n");
    for (u = 0; u < nurls; u++) {
        sqllock_db *db = NULL;
        int rc = sqllock_open(urls[u], NULL, &db);

        if (rc == SQLLOCK_OK)
            rc = sqllock_init(db);
        if (rc != SQLLOCK_OK)
            die("init", db, rc);
        for (c = 0; c < 2; c++) {
            for (m = 0; m < MODES; m++) {
                for (r = 0; r < reps; r++)
                    v[r] = round_of(urls[u], m, client_counts[c], secs,
                                    counts);
                qsort(v, (size_t)reps, sizeof v[0], cmp_double);
                med[m] = v[reps / 2];
            }
            for (m = 0; m < MODES; m++)
                printf("%s,%d,%s,%.0f,%.2f\n", sqllock_db_driver(db),
                       client_counts[c], mode_name[m], med[m],
                       med[m] / med[MODE_LEASE]);
            fflush(stdout);
        }
        sqllock_close(db);
    }
    free(envcopy);
    if (smoke)
        bu_smoke_done();
    return 0;
}
