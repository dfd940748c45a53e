/*
 * bench_leader.c -- leader failover times (issue 19 item 4, DESIGN M4):
 * how long an election goes without a leader after a clean hand-over
 * (sqllock_leader_resign()) and after the leader's crash (SIGKILL), on
 * every driver.
 *
 *   bench_leader [--rounds 10] [--candidates 3] [--ttl-ms 2000] URL...
 *
 *   e.g. bench_leader --rounds 10 sqlite:///tmp/l.db \
 *            postgres://user:pw@127.0.0.1:5432/db mysql://user:pw@host/db
 *
 * For each URL (sqllock_init() is run on it first), --candidates forked
 * processes each run a sqllock_leader of one election (ttl --ttl-ms) and
 * note, in memory shared with this process, when they were elected
 * (sqllock_now_us(), the one clock of the host). Then --rounds times:
 * the leader is asked to resign, and the HAND-OVER time is from its call
 * of sqllock_leader_resign() to the next candidate's election; then
 * --rounds times the leader is SIGKILLed (and a fresh candidate forked
 * in its place), and the CRASH time is from the kill to the next
 * election. Printed per driver: p50 and max of each, the hand-over
 * against the FLOOR (the p50 of an uncontended acquire+release pair of
 * one lease on the same driver, measured in the same run), and the
 * crash against the ttl (a crash is noticed only by the lease's expiry:
 * the time left of the ttl when it died, plus at most one pause of the
 * waiting candidates, min(250 ms, ttl/8)).
 *
 * This is a measuring program, not a test. The election is
 * "sqllock-bench-leader:<pid>"; nothing is left behind but the token
 * counter's rows of MySQL.
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_util.h"

#define MAX_CAND 16

typedef struct cand_sh {
    pid_t pid;
    int resign;                 /* parent -> child */
    int64_t resign_us;          /* when it called resign */
} cand_sh;

typedef struct shared {
    int quit;
    int64_t elected_us;         /* the last election */
    int64_t elected_token;
    int leader;                 /* its candidate's slot */
    cand_sh c[MAX_CAND];
} shared;

static shared *g_sh;
static int g_me;

static void on_elected(void *ctx, sqllock_leader *l, int64_t token)
{
    (void)ctx;
    (void)l;
    __atomic_store_n(&g_sh->leader, g_me, __ATOMIC_SEQ_CST);
    __atomic_store_n(&g_sh->elected_us, sqllock_now_us(), __ATOMIC_SEQ_CST);
    __atomic_store_n(&g_sh->elected_token, token, __ATOMIC_SEQ_CST);
}

static void candidate(int me, const char *url, const char *name,
                      int64_t ttl)
{
    sqllock_leader_options o = SQLLOCK_LEADER_OPTIONS_INIT;
    sqllock_leader *l = NULL;
    char why[700];

    g_me = me;
    o.ttl_ms = ttl;
    o.on_elected = on_elected;
    if (sqllock_leader_start(url, name, &o, &l, why, sizeof why) !=
        SQLLOCK_OK) {
        fprintf(stderr, "candidate: %s\n", why);
        _exit(1);
    }
    while (!__atomic_load_n(&g_sh->quit, __ATOMIC_SEQ_CST)) {
        if (__atomic_load_n(&g_sh->c[me].resign, __ATOMIC_SEQ_CST)) {
            if (sqllock_leader_is_leader(l)) {
                g_sh->c[me].resign_us = sqllock_now_us();
                sqllock_leader_resign(l);
            }
            __atomic_store_n(&g_sh->c[me].resign, 0, __ATOMIC_SEQ_CST);
        }
        bu_sleep_ms(1);
    }
    sqllock_leader_stop(l);
    _exit(0);
}

static pid_t spawn(int me, const char *url, const char *name, int64_t ttl)
{
    pid_t pid;

    fflush(NULL);
    pid = fork();
    if (pid < 0)
        bu_die("fork: %s", strerror(errno));
    if (pid == 0)
        candidate(me, url, name, ttl);
    g_sh->c[me].pid = pid;
    return pid;
}

/* Waits for an election after `after_token`; its time, or dies. */
static int64_t wait_election(int64_t after_token, int64_t ms)
{
    int64_t end = bu_now_ms() + ms;

    while (__atomic_load_n(&g_sh->elected_token, __ATOMIC_SEQ_CST) <=
           after_token) {
        if (bu_now_ms() > end)
            bu_die("no leader elected within %lld ms", (long long)ms);
        bu_sleep_ms(1);
    }
    return __atomic_load_n(&g_sh->elected_us, __ATOMIC_SEQ_CST);
}

/* The p50 of an uncontended acquire+release pair, in ms. */
static double floor_ms(const char *url)
{
    sqllock_lease_options lo = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_db *db = NULL;
    sqllock_lease *l = NULL;
    double v[64];
    char name[80];
    int i;

    snprintf(name, sizeof name, "sqllock-bench-leader-floor:%ld",
             (long)getpid());
    lo.ttl_ms = 10000;
    if (sqllock_open(url, NULL, &db) != SQLLOCK_OK ||
        sqllock_lease_new(db, name, &lo, &l) != SQLLOCK_OK)
        bu_die("floor: %s", sqllock_errmsg(db));
    for (i = 0; i < 64; i++) {
        int64_t t = bu_now_ns();
        if (sqllock_lease_try_acquire(l) != SQLLOCK_OK ||
            sqllock_lease_release(l) != SQLLOCK_OK)
            bu_die("floor: %s", sqllock_errmsg(db));
        v[i] = (double)(bu_now_ns() - t) / 1e6;
    }
    sqllock_lease_free(l);
    sqllock_close(db);
    return bu_median(v, 64);
}

static void stats(double *v, int n, double *p50, double *max)
{
    qsort(v, (size_t)n, sizeof *v, bu_cmp_double);
    *p50 = bu_percentile(v, (size_t)n, 0.5);
    *max = v[n - 1];
}

static void bench_url(const char *url, int rounds, int ncand, int64_t ttl)
{
    double hand[256], crash[256], fl, h50, hmax, c50, cmax;
    char name[80];
    sqllock_db *db = NULL;
    int64_t tok, t;
    int i, r, who, ws;

    if (sqllock_open(url, NULL, &db) != SQLLOCK_OK ||
        sqllock_init(db) != SQLLOCK_OK)
        bu_die("%s", sqllock_errmsg(db));
    printf("%s:\n", sqllock_db_driver(db));
    sqllock_close(db);
    fl = floor_ms(url);
    snprintf(name, sizeof name, "sqllock-bench-leader:%ld", (long)getpid());
    memset(g_sh, 0, sizeof *g_sh);
    for (i = 0; i < ncand; i++)
        spawn(i, url, name, ttl);
    wait_election(0, 30000);
    for (r = 0; r < rounds; r++) {
        bu_sleep_ms(100);
        tok = __atomic_load_n(&g_sh->elected_token, __ATOMIC_SEQ_CST);
        who = __atomic_load_n(&g_sh->leader, __ATOMIC_SEQ_CST);
        __atomic_store_n(&g_sh->c[who].resign, 1, __ATOMIC_SEQ_CST);
        t = wait_election(tok, 10 * ttl);
        hand[r] = (double)(t - g_sh->c[who].resign_us) / 1000.0;
    }
    for (r = 0; r < rounds; r++) {
        /* Somewhere in the renewal cycle. */
        bu_sleep_ms(100 + (long)(bu_now_ns() % (ttl / 3)));
        tok = __atomic_load_n(&g_sh->elected_token, __ATOMIC_SEQ_CST);
        who = __atomic_load_n(&g_sh->leader, __ATOMIC_SEQ_CST);
        t = sqllock_now_us();
        kill(g_sh->c[who].pid, SIGKILL);
        waitpid(g_sh->c[who].pid, &ws, 0);
        crash[r] = (double)(wait_election(tok, 10 * ttl) - t) / 1000.0;
        spawn(who, url, name, ttl);
    }
    __atomic_store_n(&g_sh->quit, 1, __ATOMIC_SEQ_CST);
    for (i = 0; i < ncand; i++)
        waitpid(g_sh->c[i].pid, &ws, 0);
    stats(hand, rounds, &h50, &hmax);
    stats(crash, rounds, &c50, &cmax);
    printf("  floor (acquire+release pair p50)  %8.2f ms\n", fl);
    printf("  hand-over  p50 %8.2f ms  max %8.2f ms  (p50 = %.1fx the "
           "floor)\n", h50, hmax, h50 / fl);
    printf("  crash      p50 %8.2f ms  max %8.2f ms  (p50 = %.2fx the "
           "ttl of %lld ms)\n", c50, cmax, c50 / (double)ttl,
           (long long)ttl);
}

int main(int argc, char **argv)
{
    int rounds = 10, ncand = 3, i;
    int64_t ttl = 2000;

    bu_init("bench_leader", NULL);
    for (i = 1; i < argc && strncmp(argv[i], "--", 2) == 0; i += 2) {
        if (i + 1 >= argc)
            bu_die("%s needs a value", argv[i]);
        if (strcmp(argv[i], "--rounds") == 0)
            rounds = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--candidates") == 0)
            ncand = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--ttl-ms") == 0)
            ttl = atoll(argv[i + 1]);
        else
            bu_die("unknown option %s", argv[i]);
    }
    if (rounds < 1 || rounds > 256 || ncand < 2 || ncand > MAX_CAND ||
        ttl < 100 || i >= argc)
        bu_die("usage: bench_leader [--rounds 1..256] [--candidates "
               "2..16] [--ttl-ms >= 100] URL...");
    g_sh = mmap(NULL, sizeof *g_sh, PROT_READ | PROT_WRITE,
                MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (g_sh == MAP_FAILED)
        bu_die("mmap: %s", strerror(errno));
    printf("leader failover: %d candidates, ttl %lld ms, %d rounds each\n",
           ncand, (long long)ttl, rounds);
    for (; i < argc; i++)
        bench_url(argv[i], rounds, ncand, ttl);
    return 0;
}
