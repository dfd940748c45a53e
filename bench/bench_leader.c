/*
 * bench_leader.c -- leader failover times (issue 19 item 4, DESIGN M4):
 * how long an election goes without a leader after a clean hand-over
 * (sqllock_leader_resign()) and after the leader's crash (SIGKILL), on
 * every driver.
 *
 *   bench_leader [--rounds 10] [--candidates 3] [--ttl-ms 2000]
 *                [--reps N] [--quick] [--seconds S] [--results FILE]
 *                [--smoke] URL...
 *
 *   e.g. bench_leader --rounds 10 sqlite:///tmp/l.db \
 *            postgres://user:pw@127.0.0.1:5432/db mysql://user:pw@host/db
 *
 * For each URL (sqllock_init() is run on it first), --reps times (3): the
 * FLOOR, the p50 of an uncontended acquire+release pair of one lease on
 * the same driver; then --candidates forked processes each run a
 * sqllock_leader of one election (ttl --ttl-ms) and note, in memory
 * shared with this process, when they were elected (sqllock_now_us(), the
 * one clock of the host). Then --rounds times the leader is asked to
 * resign, and the HAND-OVER time is from its call of
 * sqllock_leader_resign() to the next candidate's election; then --rounds
 * times the leader is SIGKILLed (and a fresh candidate forked in its
 * place), and the CRASH time is from the kill to the next election; then
 * the candidates stop. A round whose leader had lost its term on its own
 * before the resign or the kill (a late renewal on a loaded machine) is
 * run again, and counted.
 *
 * Printed per driver: p50 (the median of the reps' p50s) and max (of all
 * rounds) of each, the hand-over against the floor (p50 over p50), and
 * the crash against the ttl (a crash is noticed only by the lease's
 * expiry: the time left of the ttl when it died, plus at most one pause
 * of the waiting candidates, min(250 ms, ttl/8)). --results appends rows
 * of suite `leader` to the common CSV (bench/README.md): `floor`,
 * `hand-over, ttl N ms` and `crash, ttl N ms`.
 *
 * Failover times are counted in rounds, not seconds: --seconds is taken
 * (every program of bench/ takes it) and changes nothing; --quick runs 5
 * rounds instead of 10. --smoke: one rep of one round of each, ttl
 * 1000 ms, on the tests' URLs (bench_util.h; ctest's
 * bench_smoke_leader_<driver>), a few seconds a driver.
 *
 * This is a measuring program, not a test. The election is
 * "sqllock-bench-leader:<pid>"; nothing is left behind but the token
 * counter's rows of MySQL and the election's term record (a row of
 * sqllock_record, which every election keeps).
 */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_util.h"

#define PROG "bench_leader"
#define MAX_CAND 16
#define MAX_ROUNDS 256
#define FLOOR_PAIRS 64

typedef struct cand_sh {
    pid_t pid;
    int resign;                 /* parent -> child; the child clears it */
    int64_t resign_us;          /* when it called resign; 0: did not */
} cand_sh;

typedef struct shared {
    int quit;
    int failed;                 /* a candidate could not start */
    char err[700];
    int64_t elected_us;         /* the last election */
    int64_t elected_token;
    int leader;                 /* its candidate's slot */
    cand_sh c[MAX_CAND];
} shared;

typedef struct cfg {
    int rounds, ncand, reps;
    int64_t ttl;
} cfg;

static shared *g_sh;
static int g_me;
static pid_t g_parent;
static FILE *g_results;

static void on_elected(void *ctx, sqllock_leader *l, int64_t token)
{
    (void)ctx;
    (void)l;
    /* The token last: who reads it new reads this election's slot and
     * time. */
    __atomic_store_n(&g_sh->leader, g_me, __ATOMIC_SEQ_CST);
    __atomic_store_n(&g_sh->elected_us, sqllock_now_us(), __ATOMIC_SEQ_CST);
    __atomic_store_n(&g_sh->elected_token, token, __ATOMIC_SEQ_CST);
}

static void __attribute__((noreturn))
candidate(int me, const char *url, const char *name, int64_t ttl)
{
    sqllock_leader_options o = SQLLOCK_LEADER_OPTIONS_INIT;
    sqllock_leader *l = NULL;
    char why[600];

    g_me = me;
    o.ttl_ms = ttl;
    o.on_elected = on_elected;
    if (sqllock_leader_start(url, name, &o, &l, why, sizeof why) !=
        SQLLOCK_OK) {
        if (!__atomic_exchange_n(&g_sh->failed, 1, __ATOMIC_SEQ_CST))
            snprintf(g_sh->err, sizeof g_sh->err, "candidate %d: %s", me,
                     why);
        _exit(1);
    }
    /* Until told, or until this program is gone (killed: nobody would
     * tell). */
    while (!__atomic_load_n(&g_sh->quit, __ATOMIC_SEQ_CST) &&
           getppid() == g_parent) {
        if (__atomic_load_n(&g_sh->c[me].resign, __ATOMIC_SEQ_CST)) {
            if (sqllock_leader_is_leader(l)) {
                __atomic_store_n(&g_sh->c[me].resign_us, sqllock_now_us(),
                                 __ATOMIC_SEQ_CST);
                sqllock_leader_resign(l);
            }
            __atomic_store_n(&g_sh->c[me].resign, 0, __ATOMIC_SEQ_CST);
        }
        bu_sleep_ms(1);
    }
    sqllock_leader_stop(l);
    _exit(0);
}

static void spawn(int me, const char *url, const char *name, int64_t ttl)
{
    pid_t pid;

    fflush(NULL);
    pid = fork();
    if (pid < 0)
        bu_die("fork: %s", strerror(errno));
    if (pid == 0)
        candidate(me, url, name, ttl);
    g_sh->c[me].pid = pid;
}

/* bu_die() in this process: the candidates stop too (none is left
 * campaigning, or holding the output of whoever ran this). */
static void kill_candidates(void)
{
    int i;

    if (g_sh == NULL || getpid() != g_parent)
        return;
    __atomic_store_n(&g_sh->quit, 1, __ATOMIC_SEQ_CST);
    for (i = 0; i < MAX_CAND; i++)
        if (g_sh->c[i].pid > 0) {
            kill(g_sh->c[i].pid, SIGKILL);
            waitpid(g_sh->c[i].pid, NULL, 0);
        }
}

static void check_candidates(void)
{
    if (__atomic_load_n(&g_sh->failed, __ATOMIC_SEQ_CST))
        bu_die("%s", g_sh->err);
}

/* Waits for an election after `after_token`; its time, or dies. */
static int64_t wait_election(int64_t after_token, int64_t ms)
{
    int64_t end = bu_now_ms() + ms;

    while (__atomic_load_n(&g_sh->elected_token, __ATOMIC_SEQ_CST) <=
           after_token) {
        check_candidates();
        if (bu_now_ms() > end)
            bu_die("no leader elected within %lld ms", (long long)ms);
        bu_sleep_ms(1);
    }
    return __atomic_load_n(&g_sh->elected_us, __ATOMIC_SEQ_CST);
}

/* The p50 of an uncontended acquire+release pair, in ms; the pairs per
 * second of the whole series into *rate. */
static double floor_ms(const char *url, double *rate)
{
    sqllock_lease_options lo = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_db *db = bu_open(url);
    sqllock_lease *l = NULL;
    double v[FLOOR_PAIRS];
    int64_t t0 = bu_now_ns(), t;
    char name[80];
    int i;

    snprintf(name, sizeof name, "sqllock-bench-leader-floor:%ld",
             (long)getpid());
    lo.ttl_ms = 10000;
    if (sqllock_lease_new(db, name, &lo, &l) != SQLLOCK_OK)
        bu_die("floor: %s", sqllock_errmsg(db));
    for (i = 0; i < FLOOR_PAIRS; i++) {
        t = bu_now_ns();
        if (sqllock_lease_try_acquire(l) != SQLLOCK_OK ||
            sqllock_lease_release(l) != SQLLOCK_OK)
            bu_die("floor: %s", sqllock_errmsg(db));
        v[i] = (double)(bu_now_ns() - t) / 1e6;
    }
    *rate = FLOOR_PAIRS / ((double)(bu_now_ns() - t0) / 1e9);
    sqllock_lease_free(l);
    sqllock_close(db);
    return bu_median(v, FLOOR_PAIRS);
}

static void stats(double *v, int n, double *p50, double *max)
{
    qsort(v, (size_t)n, sizeof *v, bu_cmp_double);
    *p50 = bu_percentile(v, (size_t)n, 0.5);
    *max = v[n - 1];
}

/* A round that found its leader gone already is run again, up to
 * this many times in a rep. */
#define MAX_REDO(rounds) (3 * (rounds) + 3)

/* One rep: a fresh group of candidates, the hand-overs and the crashes;
 * their p50s and maxima. Returns the rounds run again. */
static int rep(const char *url, const cfg *c, double *h50, double *hmax,
               double *c50, double *cmax)
{
    double hand[MAX_ROUNDS], crash[MAX_ROUNDS];
    int64_t tok, t, e, bound = c->ttl * 10 > 10000 ? c->ttl * 10 : 10000;
    char name[80];
    int i, r, who, ws, redo = 0;

    snprintf(name, sizeof name, "sqllock-bench-leader:%ld", (long)getpid());
    memset(g_sh, 0, sizeof *g_sh);
    for (i = 0; i < c->ncand; i++)
        spawn(i, url, name, c->ttl);
    wait_election(0, 30000 + bound);
    for (r = 0; r < c->rounds;) {
        bu_sleep_ms(100);
        tok = __atomic_load_n(&g_sh->elected_token, __ATOMIC_SEQ_CST);
        who = __atomic_load_n(&g_sh->leader, __ATOMIC_SEQ_CST);
        __atomic_store_n(&g_sh->c[who].resign_us, 0, __ATOMIC_SEQ_CST);
        __atomic_store_n(&g_sh->c[who].resign, 1, __ATOMIC_SEQ_CST);
        t = wait_election(tok, bound);
        /* The candidate is done with the request (resigned, or found
         * itself no longer the leader). */
        e = bu_now_ms() + bound;
        while (__atomic_load_n(&g_sh->c[who].resign, __ATOMIC_SEQ_CST)) {
            check_candidates();
            if (bu_now_ms() > e)
                bu_die("candidate %d did not take the resign request", who);
            bu_sleep_ms(1);
        }
        e = __atomic_load_n(&g_sh->c[who].resign_us, __ATOMIC_SEQ_CST);
        if (e == 0 || t < e) {
            if (++redo > MAX_REDO(c->rounds))
                bu_die("%d rounds found their leader gone before the "
                       "resign", redo);
            continue;
        }
        hand[r++] = (double)(t - e) / 1000.0;
    }
    for (r = 0; r < c->rounds;) {
        /* Somewhere in the renewal cycle. */
        bu_sleep_ms(100 + (long)(bu_now_ns() % (c->ttl / 3)));
        tok = __atomic_load_n(&g_sh->elected_token, __ATOMIC_SEQ_CST);
        who = __atomic_load_n(&g_sh->leader, __ATOMIC_SEQ_CST);
        t = sqllock_now_us();
        kill(g_sh->c[who].pid, SIGKILL);
        waitpid(g_sh->c[who].pid, &ws, 0);
        g_sh->c[who].pid = 0;
        e = wait_election(tok, bound);
        spawn(who, url, name, c->ttl);
        if (e < t) {
            /* Elected before the kill: `who` was not the leader. */
            if (++redo > MAX_REDO(c->rounds))
                bu_die("%d rounds found their leader gone before the "
                       "kill", redo);
            continue;
        }
        crash[r++] = (double)(e - t) / 1000.0;
    }
    __atomic_store_n(&g_sh->quit, 1, __ATOMIC_SEQ_CST);
    for (i = 0; i < c->ncand; i++) {
        waitpid(g_sh->c[i].pid, &ws, 0);
        g_sh->c[i].pid = 0;
    }
    stats(hand, c->rounds, h50, hmax);
    stats(crash, c->rounds, c50, cmax);
    return redo;
}

static void put(const char *driver, const char *scenario, int clients,
                double rate, double p50_ms, double ratio, const char *vs,
                double max_ms)
{
    bu_result res;

    memset(&res, 0, sizeof res);
    res.suite = "leader";
    res.driver = driver;
    res.scenario = scenario;
    res.clients = clients;
    res.rows = -1;
    res.ops_per_s = rate;
    res.p50_us = p50_ms * 1000.0;
    res.p99_us = NAN;
    res.ratio = ratio;
    res.vs = vs;
    res.value = max_ms;
    res.unit = isnan(max_ms) ? NULL : "ms max";
    bu_results_put(g_results, &res);
}

static void bench_url(const char *url, const cfg *c)
{
    double fl[16], frate[16], h50[16], c50[16], hmax = 0, cmax = 0;
    double f, fr, h, cr, hm, cm;
    char driver[32], scen[80];
    sqllock_db *db = bu_open(url);
    int k, redo = 0;

    if (sqllock_init(db) != SQLLOCK_OK)
        bu_die("init: %s", sqllock_errmsg(db));
    snprintf(driver, sizeof driver, "%s", sqllock_db_driver(db));
    sqllock_close(db);
    printf("%s:\n", driver);
    fflush(stdout);
    for (k = 0; k < c->reps; k++) {
        fl[k] = floor_ms(url, &frate[k]);
        redo += rep(url, c, &h50[k], &hm, &c50[k], &cm);
        hmax = hm > hmax ? hm : hmax;
        cmax = cm > cmax ? cm : cmax;
    }
    f = bu_median(fl, c->reps);
    fr = bu_median(frate, c->reps);
    h = bu_median(h50, c->reps);
    cr = bu_median(c50, c->reps);
    printf("  floor (acquire+release pair p50)  %8.2f ms\n", f);
    printf("  hand-over  p50 %8.2f ms  max %8.2f ms  (p50 = %.1fx the "
           "floor)\n", h, hmax, h / f);
    printf("  crash      p50 %8.2f ms  max %8.2f ms  (p50 = %.2fx the "
           "ttl of %lld ms)\n", cr, cmax, cr / (double)c->ttl,
           (long long)c->ttl);
    if (redo > 0)
        printf("  (%d round(s) run again: the leader had lost its term on "
               "its own before the resign or the kill)\n", redo);
    fflush(stdout);
    put(driver, "floor", 1, fr, f, NAN, NULL, NAN);
    snprintf(scen, sizeof scen, "hand-over, ttl %lld ms", (long long)c->ttl);
    put(driver, scen, c->ncand, NAN, h, h / f, "floor", hmax);
    snprintf(scen, sizeof scen, "crash, ttl %lld ms", (long long)c->ttl);
    put(driver, scen, c->ncand, NAN, cr, cr / (double)c->ttl, "ttl", cmax);
}

static void usage(void)
{
    fprintf(stderr, "usage: " PROG " [--rounds 1..256] [--candidates 2..16] "
            "[--ttl-ms >= 100]\n"
            "                    [--reps N] [--quick] [--seconds S] "
            "[--results FILE] [--smoke] URL...\n");
    exit(2);
}

int main(int argc, char **argv)
{
    bu_args args = { 10, 3, 16, NULL, 0, { NULL }, 0 };
    cfg c = { 10, 3, 3, 2000 };
    int i, took, rounds_set = 0, ttl_set = 0, quick = 0;

    bu_init(PROG, NULL);
    g_parent = getpid();
    bu_on_die(kill_candidates);
    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0)
            quick = 1;
        if ((took = bu_args_take(&args, argc, argv, &i)) != 0) {
            if (took < 0)
                usage();
        } else if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc) {
            c.rounds = (int)bu_parse_long(argv[++i], 1, MAX_ROUNDS,
                                          "--rounds");
            rounds_set = 1;
        } else if (strcmp(argv[i], "--candidates") == 0 && i + 1 < argc) {
            c.ncand = (int)bu_parse_long(argv[++i], 2, MAX_CAND,
                                         "--candidates");
        } else if (strcmp(argv[i], "--ttl-ms") == 0 && i + 1 < argc) {
            c.ttl = bu_parse_long(argv[++i], 100, 3600000, "--ttl-ms");
            ttl_set = 1;
        } else {
            usage();
        }
    }
    bu_args_finish(&args, 1);
    if (args.nurls == 0)
        usage();
    if (quick && !rounds_set)
        c.rounds = 5;
    if (args.smoke) {
        if (!rounds_set)
            c.rounds = 1;
        if (!ttl_set)
            c.ttl = 1000;
    }
    c.reps = args.reps;
    g_sh = mmap(NULL, sizeof *g_sh, PROT_READ | PROT_WRITE,
                MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (g_sh == MAP_FAILED)
        bu_die("mmap: %s", strerror(errno));
    if (args.results != NULL)
        g_results = bu_results_open(args.results);
    printf(PROG ": sqllock %s, leader failover: %d candidates, ttl %lld ms, "
           "%d rep(s) of %d rounds each\n", sqllock_version_string(), c.ncand,
           (long long)c.ttl, c.reps, c.rounds);
    for (i = 0; i < args.nurls; i++)
        bench_url(args.urls[i], &c);
    if (g_results != NULL && (ferror(g_results) | fclose(g_results)) != 0)
        bu_die("writing %s failed", args.results);
    munmap(g_sh, sizeof *g_sh);
    bu_smoke_done();
    return 0;
}
