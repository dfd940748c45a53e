/*
 * bench_redis.c -- the common Redis lock, measured on this machine, so that
 * sqllock's figures have a peer to be read against.
 *
 *   bench_redis [--seconds N] [--quick] [--reps N] [--clients 1,8]
 *               [--contenders N] [--hold-ms N] [--ttl-ms N] [--barge]
 *               [--only peer|contended] [--results FILE] [redis://host:port]
 *
 *   e.g. scripts/redis.sh start /tmp/r && . /tmp/r/env &&
 *        bench_redis --results out.csv "$SQLLOCK_BENCH_REDIS_URL"
 *
 * The lock is the one most Redis users write (and the one redis-py, tooz
 * and Redlock's single-instance step use):
 *
 *   acquire   SET key <random owner> NX PX 30000
 *   release   EVALSHA of  if redis.call('get',KEYS[1])==ARGV[1] then
 *                           return redis.call('del',KEYS[1]) else return 0 end
 *
 * with a fresh 128-bit random owner per acquire, as sqllock makes its own.
 *
 * Uncontended (suite "peer" in the results file): for each client count,
 * every client a thread with one connection of its own and its own key,
 *
 *   floor     two PING round trips: what any pair of commands costs on
 *             this connection;
 *   redis SET NX PX + Lua
 *             the acquire and the release above; a SET that does not
 *             answer OK, or a release that does not delete, aborts the run.
 *
 * It reports PAIRS per second, the p50 and p99 latency of one pair, and the
 * ratio to the floor. Each point runs for a fixed time, repeated (3 times
 * by default, the scenarios in a rotating order); the table shows the
 * median of each figure.
 *
 * Contended (suite "contended"): --contenders clients (8) on ONE key. Each
 * loops: SET NX PX until it succeeds, hold the lock for --hold-ms (1 ms,
 * asleep), release. A failed SET is retried under one of two policies:
 *
 *   spin      at once;
 *   backoff   after a sleep drawn uniformly from [0, cap], cap = 5 ms
 *             doubling per failed try up to 500 ms: exponential backoff
 *             with full jitter, as sqllock_lease_acquire() polls by default
 *             (core/lease.c backoff_ms()).
 *
 * The HANDOFF of a grant is its SET's return time minus the previous
 * grant's release-start time (CLOCK_MONOTONIC, shared by the threads): how
 * long the lock was out of the application's hands. The WAIT of a grant is
 * the time from the first SET to the successful one, queueing included.
 * Like bench_handoff, a worker STANDS ASIDE after its release until another
 * worker has taken the lock, so that every release has N - 1 waiters and
 * the figures measure a handoff, not the releaser taking the lock straight
 * back; --barge drops that rule. Each point has 1 s of warm-up before its
 * measured time. The table shows HANDOVERS per second (critical sections
 * completed in the measured time), the handoff p50 and p99, the ratio to
 * the suite's floor (the uncontended pair, one client, 1 s per
 * repetition, as bench_handoff has one), the SET commands sent per
 * handover, and the wait's p99 and maximum.
 *
 * Mutual exclusion is checked on every contended point: under the lock each
 * holder reads a shared counter, sleeps for the hold, and writes it back
 * plus one. If the counter does not end equal to the number of grants, two
 * holders overlapped and the program aborts with status 1; so does a
 * release that finds the key no longer holds its owner. --ttl-ms shorter
 * than --hold-ms lets the key expire under its holder, and the run fails
 * (the release check fires first; the counter check was seen to fire too
 * in a copy without it).
 *
 * --results FILE appends the rows to FILE in the common format of
 * bench/README.md (the header only when FILE is empty or new). Suite
 * "peer": "floor" and "redis SET NX PX + Lua" per client count, the
 * latter with its ratio to the floor. Suite "contended", as bench_handoff
 * writes it: a "floor" row (1 client), and per policy a row named
 * "SET NX PX + Lua, spin, critical section 1 ms" (", barging" with
 * --barge): ops_per_s = handovers/s, p50_us and p99_us the handoff's,
 * ratio to the floor, value = the wait p99 in ms ("ms wait p99").
 *
 * Keys are "sqllock-bench:redis:<pid>:<client>" and "...:<pid>:contended";
 * every one is released at the end, and a run that aborts leaves keys that
 * expire after 30 s. This is a measuring program, not a test: any failed
 * command aborts the run with a message.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "bench_util.h"

#define TTL_MS 30000
#define OWNER_LEN SQLLOCK_OWNER_LEN   /* hex digits: 128 random bits */
#define WARMUP_PAIRS 10
#define WARMUP_NS INT64_C(1000000000)   /* contended: before each point
                                          * (--smoke: 0.1 s) */
#define WAIT_NS INT64_C(60000000000)    /* a longer wait fails the run */
#define BACKOFF_MIN_MS 5             /* sqllock's defaults (core/lease.c) */
#define BACKOFF_MAX_MS 500
#define MAX_CLIENTS 64
#define MAX_REPS 15

/* The usual owner-checked release: delete the key only if it still holds
 * our owner, in one atomic step on the server. */
static const char RELEASE_LUA[] =
    "if redis.call('get',KEYS[1])==ARGV[1] then "
    "return redis.call('del',KEYS[1]) else return 0 end";

/* The scenario labels, as printed and as written to the results file. */
static const char LABEL_FLOOR[] = "floor";
static const char LABEL_LOCK[] = "redis SET NX PX + Lua";
/* Contended: the policy's name; the scenario adds the critical section
 * (as bench_handoff names its rows): "SET NX PX + Lua, spin, critical
 * section 1 ms". */
static const char *const POLICY_NAMES[2] = { "spin", "backoff 5-500 ms" };

typedef struct config {
    double secs;
    int reps;
    int clients[8];
    int nclients;
    int max_clients;
    int contenders;
    int64_t hold_ms;
    int64_t ttl_ms;                  /* contended only; 30 s unless told */
    int barge;
    int only;                        /* 0 both, 1 peer, 2 contended */
    int64_t warmup_ns;               /* WARMUP_NS; less for --smoke */
    double floor_secs;               /* CONTENDED_FLOOR_SECS; likewise */
    const char *url;
    char host[256];
    int port;
    const char *results_path;
    FILE *results;
} config;

/* ------------------------------------------------------------------------ */
/* Helpers                                                                  */
/* ------------------------------------------------------------------------ */

/* Jitter needs independence between threads, not strength: xorshift64*,
 * one state per thread, seeded from the OS (as core/util.c). */
static uint64_t rng_next(uint64_t *state)
{
    uint64_t x = *state;

    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    return x * 0x2545F4914F6CDD1Dull;
}

static void rng_seed(uint64_t *state)
{
    if (getrandom(state, sizeof *state, 0) != (ssize_t)sizeof *state ||
        *state == 0)
        *state = (uint64_t)bu_now_ns() | 1;
}

/* The sleep before retry `attempt` (from 0), in ms: sqllock's default
 * policy, exponential from 5 to 500 ms with full jitter. */
static int64_t backoff_ms(uint64_t *rng, int attempt)
{
    int64_t cap = BACKOFF_MIN_MS;
    int i;

    for (i = 0; i < attempt && cap < BACKOFF_MAX_MS; i++)
        cap *= 2;
    if (cap > BACKOFF_MAX_MS)
        cap = BACKOFF_MAX_MS;
    return (int64_t)(rng_next(rng) % (uint64_t)(cap + 1));
}

/* ------------------------------------------------------------------------ */
/* Redis                                                                    */
/* ------------------------------------------------------------------------ */

/* redis://host[:port][/], nothing else: the bench has no use for a
 * password or a database number, and silently ignoring one would measure
 * something else than was asked. */
static void parse_url(config *cfg, const char *url)
{
    const char *p, *colon, *end;
    size_t hostlen;
    long port = 6379;

    if (strncmp(url, "redis://", 8) != 0)
        bu_die("%s: not a redis://host:port URL", url);
    p = url + 8;
    end = p + strcspn(p, "/?#@");
    if (*end == '@' || *end == '?' || *end == '#' ||
        (*end == '/' && end[1] != '\0'))
        bu_die("%s: only redis://host[:port] is understood (no user, "
            "password, database or options)", url);
    colon = memchr(p, ':', (size_t)(end - p));
    hostlen = (size_t)((colon ? colon : end) - p);
    if (hostlen == 0 || hostlen >= sizeof cfg->host)
        bu_die("%s: no host", url);
    if (colon != NULL) {
        char *e;
        port = strtol(colon + 1, &e, 10);
        if (e != end || port < 1 || port > 65535)
            bu_die("%s: bad port", url);
    }
    memcpy(cfg->host, p, hostlen);
    cfg->host[hostlen] = '\0';
    cfg->port = (int)port;
    cfg->url = url;
}

/* A connection with a 5 s connect timeout and a 10 s command timeout, so
 * that a server that stops answering fails the run instead of hanging it.
 * hiredis turns Nagle's algorithm off on TCP connections. */
static redisContext *redis_open(const config *cfg)
{
    struct timeval connect_tv = { 5, 0 }, cmd_tv = { 10, 0 };
    redisContext *c = redisConnectWithTimeout(cfg->host, cfg->port,
                                              connect_tv);

    if (c == NULL)
        bu_die("cannot connect to %s: out of memory", cfg->url);
    if (c->err)
        bu_die("cannot connect to %s: %s", cfg->url, c->errstr);
    if (redisSetTimeout(c, cmd_tv) != REDIS_OK)
        bu_die("%s: cannot set the command timeout: %s", cfg->url, c->errstr);
    return c;
}

/* Runs a command. Returns its reply, or NULL with `err` set when the
 * connection failed or the server answered with an error. */
static redisReply *redis_cmd(redisContext *c, char *err, size_t errlen,
                             const char *fmt, ...)
{
    redisReply *r;
    va_list ap;

    va_start(ap, fmt);
    r = redisvCommand(c, fmt, ap);
    va_end(ap);
    if (r == NULL) {
        snprintf(err, errlen, "%s: %s", fmt, c->errstr);
        return NULL;
    }
    if (r->type == REDIS_REPLY_ERROR) {
        snprintf(err, errlen, "%s: %s", fmt, r->str);
        freeReplyObject(r);
        return NULL;
    }
    return r;
}

/* The same, for the main thread: a failure ends the run. */
static redisReply *redis_must(redisContext *c, const char *fmt, ...)
{
    char err[512];
    redisReply *r;
    va_list ap;

    va_start(ap, fmt);
    r = redisvCommand(c, fmt, ap);
    va_end(ap);
    if (r == NULL)
        bu_die("%s: %s", fmt, c->errstr);
    if (r->type == REDIS_REPLY_ERROR) {
        snprintf(err, sizeof err, "%s", r->str);
        freeReplyObject(r);
        bu_die("%s: %s", fmt, err);
    }
    return r;
}

/* Loads the release script; the SHA1 it answers is what EVALSHA names. */
static void load_release(redisContext *c, char sha[41])
{
    redisReply *r = redis_must(c, "SCRIPT LOAD %s", RELEASE_LUA);

    if (r->type != REDIS_REPLY_STRING || r->len != 40)
        bu_die("SCRIPT LOAD answered something else than a SHA1");
    memcpy(sha, r->str, 41);
    freeReplyObject(r);
}

/* "Redis 7.0.15, 127.0.0.1:63799, appendonly no, save '3600 1 ...'":
 * what was measured, and what durability its locks have. A server that
 * refuses CONFIG GET (managed services rename it) says so. */
static void describe(const config *cfg, redisContext *c, char *buf,
                     size_t n)
{
    char version[32] = "?", aof[16] = "?", save[128] = "?";
    redisReply *r = redis_must(c, "INFO server");
    const char *v = r->type == REDIS_REPLY_STRING
                    ? strstr(r->str, "redis_version:") : NULL;

    if (v != NULL)
        sscanf(v + 14, "%31[^\r\n]", version);
    freeReplyObject(r);
    r = redisCommand(c, "CONFIG GET appendonly");
    if (r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements == 2)
        snprintf(aof, sizeof aof, "%s", r->element[1]->str);
    freeReplyObject(r);
    r = redisCommand(c, "CONFIG GET save");
    if (r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements == 2)
        snprintf(save, sizeof save, "%s", r->element[1]->str);
    freeReplyObject(r);
    if (c->err)
        bu_die("%s: %s", cfg->url, c->errstr);
    snprintf(buf, n, "Redis %s, %s:%d, appendonly %s, save '%s'", version,
             cfg->host, cfg->port, aof, save);
}

/* ------------------------------------------------------------------------ */
/* The results file                                                         */
/* ------------------------------------------------------------------------ */

static void results_row(const config *cfg, const char *suite,
                        const char *scenario, int clients, double rate,
                        double p50, double p99, double ratio, const char *vs,
                        double value, const char *unit)
{
    bu_result r = { suite, "redis", scenario, clients, -1, rate, p50, p99,
                    ratio, vs, value, unit };

    bu_results_put(cfg->results, &r);     /* rows: not varied here */
}

/* ------------------------------------------------------------------------ */
/* Uncontended: one key per client                                          */
/* ------------------------------------------------------------------------ */

/* One client: a thread with its own connection and key (bench_util.h's
 * bu_client first, for bu_point_run()). */
typedef struct client {
    bu_client bc;
    redisContext *rc;
    char key[96];
    char owner[OWNER_LEN + 1];
    const char *sha;                 /* the release script's SHA1 */
} client;

/* One row of a table: every repetition, and the medians. */
typedef struct row {
    const char *label;
    int clients;
    int nreps;
    bu_point reps[MAX_REPS];
    bu_point med;
} row;

static int floor_pair(bu_client *bc)
{
    client *c = (client *)bc;
    int i;

    for (i = 0; i < 2; i++) {
        redisReply *r = redis_cmd(c->rc, c->bc.err, sizeof c->bc.err, "PING");
        int ok;
        if (r == NULL)
            return -1;
        ok = r->type == REDIS_REPLY_STATUS && strcmp(r->str, "PONG") == 0;
        freeReplyObject(r);
        if (!ok) {
            snprintf(c->bc.err, sizeof c->bc.err, "PING did not answer PONG");
            return -1;
        }
    }
    return 0;
}

static int lock_pair(bu_client *bc)
{
    client *c = (client *)bc;
    redisReply *r;
    int ok;

    if (bu_new_owner(c->owner) != 0) {
        snprintf(c->bc.err, sizeof c->bc.err, "getrandom: %s", strerror(errno));
        return -1;
    }
    r = redis_cmd(c->rc, c->bc.err, sizeof c->bc.err, "SET %s %s NX PX %d",
                  c->key, c->owner, TTL_MS);
    if (r == NULL)
        return -1;
    ok = r->type == REDIS_REPLY_STATUS && strcmp(r->str, "OK") == 0;
    freeReplyObject(r);
    if (!ok) {
        snprintf(c->bc.err, sizeof c->bc.err, "SET NX on %s did not answer OK: "
                 "the key is held by someone else", c->key);
        return -1;
    }
    r = redis_cmd(c->rc, c->bc.err, sizeof c->bc.err, "EVALSHA %s 1 %s %s", c->sha,
                  c->key, c->owner);
    if (r == NULL)
        return -1;
    ok = r->type == REDIS_REPLY_INTEGER && r->integer == 1;
    freeReplyObject(r);
    if (!ok) {
        snprintf(c->bc.err, sizeof c->bc.err, "the release of %s deleted nothing: "
                 "the lock was lost", c->key);
        return -1;
    }
    return 0;
}

static void print_row(const row *r, double vs_floor)
{
    printf("%-40s %7d %9.0f %9.0f %9.0f", r->label, r->clients, r->med.rate,
           r->med.p50, r->med.p99);
    if (vs_floor > 0)
        printf(" %9.2f", vs_floor);
    printf("\n");
}

static void client_open(const config *cfg, client *c, int index,
                        char sha[41])
{
    memset(c, 0, sizeof *c);
    c->bc.index = index;
    c->rc = redis_open(cfg);
    load_release(c->rc, sha);
    c->sha = sha;
    snprintf(c->key, sizeof c->key, "sqllock-bench:redis:%ld:%d",
             (long)getpid(), index);
}

static void client_close(client *c)
{
    redisFree(c->rc);
    bu_lat_free(&c->bc.lat);
    memset(c, 0, sizeof *c);
}

static void bench_peer(const config *cfg, const char *desc)
{
    client *cs = calloc((size_t)cfg->max_clients, sizeof *cs);
    row rows[8][2];
    bu_pair_fn fns[2] = { floor_pair, lock_pair };
    bu_client *bcs[BU_MAX_CLIENTS];
    char sha[41];
    int c, s, i, rep;

    if (cs == NULL)
        bu_die("out of memory");
    for (c = 0; c < cfg->nclients; c++) {
        int n = cfg->clients[c];

        for (i = 0; i < n; i++) {
            client_open(cfg, &cs[i], i, sha);
            bcs[i] = &cs[i].bc;
        }
        for (s = 0; s < 2; s++) {
            memset(&rows[c][s], 0, sizeof rows[c][s]);
            rows[c][s].label = s == 0 ? LABEL_FLOOR : LABEL_LOCK;
            rows[c][s].clients = n;
            rows[c][s].nreps = cfg->reps;
        }
        for (rep = 0; rep < cfg->reps; rep++) {
            for (s = 0; s < 2; s++) {
                /* A rotating order, so no scenario always runs first. */
                int k = (s + rep) % 2;
                bu_point *res = &rows[c][k].reps[rep];
                bu_run run = { fns[k], cfg->secs, WARMUP_PAIRS, NULL, NULL,
                               NULL };
                bu_point_run(bcs, n, &run, res);
                fprintf(stderr, "  redis %d clients, run %d: %-24s %8.0f "
                        "pairs/s (%ld pairs, slowest %.1f ms)\n", n, rep + 1,
                        rows[c][k].label, res->rate, res->pairs,
                        res->max / 1000);
            }
        }
        for (s = 0; s < 2; s++)
            bu_point_median(rows[c][s].reps, rows[c][s].nreps,
                            &rows[c][s].med);
        for (i = 0; i < n; i++)
            client_close(&cs[i]);
    }
    free(cs);

    printf("\nredis uncontended (%s), %g s x %d, median\n", desc, cfg->secs,
           cfg->reps);
    printf("%-40s %7s %9s %9s %9s %9s\n", "scenario", "clients", "pairs/s",
           "p50 us", "p99 us", "vs floor");
    for (c = 0; c < cfg->nclients; c++) {
        double fl = rows[c][0].med.rate;
        print_row(&rows[c][0], 0);
        print_row(&rows[c][1], rows[c][1].med.rate / fl);
        results_row(cfg, "peer", LABEL_FLOOR, rows[c][0].clients, fl,
                    rows[c][0].med.p50, rows[c][0].med.p99, NAN, "", NAN, "");
        results_row(cfg, "peer", LABEL_LOCK, rows[c][1].clients,
                    rows[c][1].med.rate, rows[c][1].med.p50,
                    rows[c][1].med.p99, rows[c][1].med.rate / fl, "floor",
                    NAN, "");
    }
    printf("  floor: two PING round trips; a pair: SET NX PX 30000 with a "
           "random owner, then\n  EVALSHA of the compare-and-delete script. "
           "Each client: one thread, one connection, its own key.\n");
    fflush(stdout);
}

/* ------------------------------------------------------------------------ */
/* Contended: every client on one key                                       */
/* ------------------------------------------------------------------------ */

enum { POLICY_SPIN, POLICY_BACKOFF };

/* One grant of the lock. */
typedef struct grant {
    int64_t call_ns;                 /* first SET of this acquire sent */
    int64_t acq_ns;                  /* the successful SET returned */
    int64_t rel_start_ns;            /* release sent */
    int64_t rel_end_ns;              /* release answered */
    int32_t worker;
    int32_t tries;                   /* SET commands this acquire sent */
} grant;

/* What the contenders share. The mutex guards everything but `counter`,
 * which the Redis lock guards: it is what the run checks. The grant log
 * is kept under the mutex rather than under the lock under test, so that
 * a broken lock cannot corrupt the figures that are to show it. */
typedef struct arena {
    pthread_mutex_t mu;
    pthread_cond_t cv;               /* CLOCK_MONOTONIC */
    const config *cfg;
    int policy;
    const char *key;
    const char *sha;
    int go;
    int failed;
    char err[600];
    int64_t window_ns;               /* measurement starts */
    int64_t end_ns;                  /* and ends; no SET is sent after */
    grant *g;
    size_t ng, cap;
    volatile long counter;
} arena;

typedef struct contender {
    arena *a;
    int index;
    redisContext *rc;
    uint64_t rng;
    char owner[OWNER_LEN + 1];
} contender;

/* Records the first failure, and wakes everyone so that they stop. */
static void afail(arena *a, const char *fmt, ...)
{
    va_list ap;

    pthread_mutex_lock(&a->mu);
    if (!a->failed) {
        va_start(ap, fmt);
        vsnprintf(a->err, sizeof a->err, fmt, ap);
        va_end(ap);
    }
    a->failed = 1;
    pthread_cond_broadcast(&a->cv);
    pthread_mutex_unlock(&a->mu);
}

static int a_failed(arena *a)
{
    int f;

    pthread_mutex_lock(&a->mu);
    f = a->failed;
    pthread_mutex_unlock(&a->mu);
    return f;
}

static void timed_wait(arena *a, int64_t until)
{
    struct timespec ts;

    ts.tv_sec = (time_t)(until / 1000000000);
    ts.tv_nsec = (long)(until % 1000000000);
    pthread_cond_timedwait(&a->cv, &a->mu, &ts);
}

/* Sends SET NX until it succeeds. Returns 1 when the lock is held, 0 when
 * the run ended first, -1 on a failure. */
static int contend_acquire(contender *w, int64_t *call_ns, int *tries)
{
    arena *a = w->a;
    int attempt = 0;

    *call_ns = bu_now_ns();
    *tries = 0;
    for (;;) {
        char err[512];
        redisReply *r;
        int got;
        int64_t t;

        if (bu_new_owner(w->owner) != 0) {
            afail(a, "getrandom: %s", strerror(errno));
            return -1;
        }
        r = redis_cmd(w->rc, err, sizeof err, "SET %s %s NX PX %lld",
                      a->key, w->owner, (long long)a->cfg->ttl_ms);
        if (r == NULL) {
            afail(a, "contender %d: %s", w->index, err);
            return -1;
        }
        got = r->type == REDIS_REPLY_STATUS && strcmp(r->str, "OK") == 0;
        freeReplyObject(r);
        (*tries)++;
        if (got)
            return 1;
        t = bu_now_ns();
        if (t >= a->end_ns || a_failed(a))
            return 0;
        if (t - *call_ns > WAIT_NS) {
            afail(a, "contender %d waited more than %lld s for the lock",
                  w->index, (long long)(WAIT_NS / 1000000000));
            return -1;
        }
        if (a->policy == POLICY_BACKOFF) {
            bu_sleep_ns(backoff_ms(&w->rng, attempt) * 1000000);
            if (attempt < 62)
                attempt++;
        }
    }
}

static void *contender_main(void *arg)
{
    contender *w = arg;
    arena *a = w->a;

    pthread_mutex_lock(&a->mu);
    while (!a->go && !a->failed)
        pthread_cond_wait(&a->cv, &a->mu);
    pthread_mutex_unlock(&a->mu);
    for (;;) {
        char err[512];
        redisReply *r;
        int64_t call_ns, acq_ns, rs_ns, re_ns;
        size_t k;
        long v;
        int tries, ok, got = contend_acquire(w, &call_ns, &tries);

        if (got <= 0)
            break;
        acq_ns = bu_now_ns();
        pthread_mutex_lock(&a->mu);
        if (a->ng == a->cap) {
            size_t cap = a->cap ? a->cap * 2 : 4096;
            grant *g = realloc(a->g, cap * sizeof *g);
            if (g == NULL) {
                pthread_mutex_unlock(&a->mu);
                afail(a, "out of memory");
                break;
            }
            a->g = g;
            a->cap = cap;
        }
        k = a->ng++;
        a->g[k].call_ns = call_ns;
        a->g[k].acq_ns = acq_ns;
        a->g[k].rel_start_ns = 0;
        a->g[k].rel_end_ns = 0;
        a->g[k].worker = w->index;
        a->g[k].tries = tries;
        pthread_cond_broadcast(&a->cv);  /* for the one standing aside */
        pthread_mutex_unlock(&a->mu);

        /* The critical section: a read, a deliberate gap, a write. */
        v = a->counter;
        bu_sleep_ns(a->cfg->hold_ms * 1000000);
        a->counter = v + 1;

        rs_ns = bu_now_ns();
        pthread_mutex_lock(&a->mu);
        a->g[k].rel_start_ns = rs_ns;
        pthread_mutex_unlock(&a->mu);
        r = redis_cmd(w->rc, err, sizeof err, "EVALSHA %s 1 %s %s", a->sha,
                      a->key, w->owner);
        if (r == NULL) {
            afail(a, "contender %d: %s", w->index, err);
            break;
        }
        ok = r->type == REDIS_REPLY_INTEGER && r->integer == 1;
        freeReplyObject(r);
        if (!ok) {
            afail(a, "contender %d: the release deleted nothing: the lock "
                  "was lost while held", w->index);
            break;
        }
        re_ns = bu_now_ns();
        pthread_mutex_lock(&a->mu);
        a->g[k].rel_end_ns = re_ns;
        /* Stand aside until another worker has taken the lock. */
        while (!a->cfg->barge && a->ng <= k + 1 && !a->failed &&
               bu_now_ns() < a->end_ns)
            timed_wait(a, a->end_ns);
        ok = !a->failed && bu_now_ns() < a->end_ns;
        pthread_mutex_unlock(&a->mu);
        if (!ok)
            break;
    }
    return NULL;
}

typedef struct cresult {
    double rate;                     /* handovers (critical sections
                                      * completed) per second */
    double p50, p99;                 /* handoff, microseconds */
    double tries;                    /* SET commands per handover */
    double wait_p99, wait_max;       /* milliseconds */
    double self;                     /* share the releaser took back */
    long n;                          /* handoffs measured */
    long grants;                     /* all grants, warm-up included */
} cresult;

/* Runs one contended point and checks the counter. */
static void run_contended(const config *cfg, contender *ws, int policy,
                          const char *key, const char *sha, cresult *out)
{
    pthread_t tids[MAX_CLIENTS];
    pthread_condattr_t ca;
    arena a;
    double *hand, *wait;
    double tries = 0;
    size_t k, n = 0;
    long self = 0, done = 0;
    int i, rc;

    memset(&a, 0, sizeof a);
    if (pthread_mutex_init(&a.mu, NULL) != 0 ||
        pthread_condattr_init(&ca) != 0 ||
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) != 0 ||
        pthread_cond_init(&a.cv, &ca) != 0)
        bu_die("cannot make a mutex and a condition variable");
    pthread_condattr_destroy(&ca);
    a.cfg = cfg;
    a.policy = policy;
    a.key = key;
    a.sha = sha;
    for (i = 0; i < cfg->contenders; i++) {
        ws[i].a = &a;
        rc = pthread_create(&tids[i], NULL, contender_main, &ws[i]);
        if (rc != 0)
            bu_die("pthread_create: %s", strerror(rc));
    }
    pthread_mutex_lock(&a.mu);
    a.window_ns = bu_now_ns() + cfg->warmup_ns;
    a.end_ns = a.window_ns + (int64_t)(cfg->secs * 1e9);
    a.go = 1;
    pthread_cond_broadcast(&a.cv);
    pthread_mutex_unlock(&a.mu);
    for (i = 0; i < cfg->contenders; i++) {
        rc = pthread_join(tids[i], NULL);
        if (rc != 0)
            bu_die("pthread_join: %s", strerror(rc));
    }
    pthread_cond_destroy(&a.cv);
    pthread_mutex_destroy(&a.mu);
    if (a.failed)
        bu_die("%s", a.err);
    /* Every grant incremented the counter once; if two holders overlapped,
     * one of the increments was lost. */
    if (a.counter != (long)a.ng)
        bu_die("MUTUAL EXCLUSION BROKEN: the counter is %ld after %zu grants "
            "(%s, %s)", a.counter, a.ng, key,
            policy == POLICY_SPIN ? "spin" : "backoff");

    hand = malloc((a.ng + 1) * sizeof *hand);
    wait = malloc((a.ng + 1) * sizeof *wait);
    if (hand == NULL || wait == NULL)
        bu_die("out of memory");
    for (k = 0; k < a.ng; k++) {
        const grant *g = &a.g[k], *prev = &a.g[k > 0 ? k - 1 : 0];
        /* A handover: a critical section that ended in the window (as
         * bench_handoff counts them). */
        if (g->rel_end_ns >= a.window_ns && g->rel_end_ns < a.end_ns)
            done++;
        if (k == 0 || g->acq_ns < a.window_ns || g->acq_ns >= a.end_ns)
            continue;
        hand[n] = (double)(g->acq_ns - prev->rel_start_ns) / 1e3;
        wait[n] = (double)(g->acq_ns - g->call_ns) / 1e6;
        tries += g->tries;
        self += g->worker == prev->worker;
        n++;
    }
    qsort(hand, n, sizeof *hand, bu_cmp_double);
    qsort(wait, n, sizeof *wait, bu_cmp_double);
    out->n = (long)n;
    out->grants = (long)a.ng;
    out->rate = (double)done / cfg->secs;
    out->p50 = bu_percentile(hand, n, 0.50);
    out->p99 = bu_percentile(hand, n, 0.99);
    out->tries = n > 0 ? tries / (double)n : NAN;
    out->wait_p99 = bu_percentile(wait, n, 0.99);
    out->wait_max = n > 0 ? wait[n - 1] : 0;
    out->self = n > 0 ? (double)self / (double)n : 0;
    free(hand);
    free(wait);
    free(a.g);
}

/* The contended suite's floor, as bench_handoff has one: the uncontended
 * pair, one client, 1 s per repetition. */
#define CONTENDED_FLOOR_SECS 1.0     /* --smoke: BU_SMOKE_SECS */

static void bench_contended(const config *cfg, const char *desc)
{
    contender *ws = calloc((size_t)cfg->contenders, sizeof *ws);
    cresult res[2][MAX_REPS], med[2];
    row floor;
    client fc;
    char labels[2][96], key[96], sha[41];
    long grants = 0;
    int i, s, rep, width = 24;

    if (ws == NULL)
        bu_die("out of memory");
    for (s = 0; s < 2; s++)
        snprintf(labels[s], sizeof labels[s], "SET NX PX + Lua, %s, critical "
                 "section %lld ms%s", POLICY_NAMES[s],
                 (long long)cfg->hold_ms, cfg->barge ? ", barging" : "");
    for (s = 0; s < 2; s++)
        if ((int)strlen(labels[s]) > width)
            width = (int)strlen(labels[s]);
    memset(&floor, 0, sizeof floor);
    floor.label = LABEL_FLOOR;
    floor.clients = 1;
    floor.nreps = cfg->reps;
    client_open(cfg, &fc, 0, sha);
    for (rep = 0; rep < cfg->reps; rep++) {
        bu_client *one = &fc.bc;
        bu_run run = { lock_pair, cfg->floor_secs, WARMUP_PAIRS, NULL, NULL,
                       NULL };
        bu_point_run(&one, 1, &run, &floor.reps[rep]);
    }
    client_close(&fc);
    bu_point_median(floor.reps, floor.nreps, &floor.med);
    snprintf(key, sizeof key, "sqllock-bench:redis:%ld:contended",
             (long)getpid());
    for (i = 0; i < cfg->contenders; i++) {
        ws[i].index = i;
        ws[i].rc = redis_open(cfg);
        load_release(ws[i].rc, sha);
        rng_seed(&ws[i].rng);
    }
    for (rep = 0; rep < cfg->reps; rep++) {
        for (s = 0; s < 2; s++) {
            int p = (s + rep) % 2;
            cresult *r = &res[p][rep];
            run_contended(cfg, ws, p, key, sha, r);
            grants += r->grants;
            fprintf(stderr, "  redis %d contenders, run %d: %-*s %6.0f "
                    "handovers/s, handoff p50 %.0f us, %.1f SET/handover, "
                    "wait max %.0f ms\n", cfg->contenders, rep + 1, width,
                    labels[p],
                    r->rate, r->p50, r->tries, r->wait_max);
        }
    }
    {
        /* Nothing may be left: every grant was released. */
        redisReply *r = redis_must(ws[0].rc, "EXISTS %s", key);
        if (r->type != REDIS_REPLY_INTEGER || r->integer != 0)
            bu_die("%s still exists after the last release", key);
        freeReplyObject(r);
    }
    for (i = 0; i < cfg->contenders; i++)
        redisFree(ws[i].rc);
    free(ws);

    for (s = 0; s < 2; s++) {
        double v[MAX_REPS];
#define MEDIAN_OF(field)                                                   \
        do {                                                               \
            for (rep = 0; rep < cfg->reps; rep++)                          \
                v[rep] = res[s][rep].field;                                \
            med[s].field = bu_median(v, cfg->reps);                           \
        } while (0)
        MEDIAN_OF(rate);
        MEDIAN_OF(p50);
        MEDIAN_OF(p99);
        MEDIAN_OF(tries);
        MEDIAN_OF(wait_p99);
        MEDIAN_OF(wait_max);
        MEDIAN_OF(self);
#undef MEDIAN_OF
    }

    printf("\nredis contended (%s): %d clients on one key, hold %lld ms, "
           "ttl %lld ms%s, %g s x %d after 1 s warm-up, median\n", desc,
           cfg->contenders, (long long)cfg->hold_ms, (long long)cfg->ttl_ms,
           cfg->barge ? ", barging" : "", cfg->secs, cfg->reps);
    printf("%-*s %7s %11s %9s %9s %9s %9s %9s %9s%s\n", width, "scenario",
           "clients", "handovers/s", "p50 us", "p99 us", "vs floor",
           "SET/hand", "wait p99", "wait max", cfg->barge ? "      self" : "");
    printf("%-*s %7d %11.0f %9.0f %9.0f\n", width, LABEL_FLOOR, 1,
           floor.med.rate, floor.med.p50, floor.med.p99);
    results_row(cfg, "contended", LABEL_FLOOR, 1, floor.med.rate,
                floor.med.p50, floor.med.p99, NAN, "", NAN, "");
    for (s = 0; s < 2; s++) {
        printf("%-*s %7d %11.0f %9.0f %9.0f %9.2f %9.1f %9.0f %9.0f",
               width, labels[s], cfg->contenders, med[s].rate, med[s].p50,
               med[s].p99, med[s].rate / floor.med.rate, med[s].tries,
               med[s].wait_p99, med[s].wait_max);
        if (cfg->barge)
            printf(" %8.0f%%", 100 * med[s].self);
        printf("\n");
        results_row(cfg, "contended", labels[s], cfg->contenders, med[s].rate,
                    med[s].p50, med[s].p99, med[s].rate / floor.med.rate,
                    "floor", med[s].wait_p99, "ms wait p99");
    }
    printf("  floor: the uncontended pair (SET NX PX + EVALSHA), 1 client, "
           "%g s per run;\n  handovers/s: critical sections completed per "
           "second; p50/p99: handoff, from a release's\n  start to the next "
           "SET that succeeds (us); vs floor: handovers/s over the floor's "
           "pairs/s;\n", cfg->floor_secs);
    printf(
           "  SET/hand: SET commands sent per handover; wait: from an "
           "acquire's first SET to its success (ms).\n");
    printf("  exclusion: the counter matched the grants on every run (%ld "
           "grants in all)\n", grants);
    fflush(stdout);
}

/* ------------------------------------------------------------------------ */
/* main                                                                     */
/* ------------------------------------------------------------------------ */

static void usage(void)
{
    fprintf(stderr,
        "usage: bench_redis [--seconds N] [--quick] [--reps N] "
        "[--clients 1,8]\n"
        "                   [--contenders N] [--hold-ms N] [--ttl-ms N] "
        "[--barge]\n"
        "                   [--only peer|contended] [--results FILE] "
        "[--smoke]\n                   [redis://host:port]\n"
        "  --seconds N        length of each run (default 10)\n"
        "  --quick            runs of 2 s\n"
        "  --reps N           repetitions of each run; the median is shown "
        "(default 3)\n"
        "  --clients LIST     uncontended client counts, each a thread "
        "with its own\n"
        "                     connection and key (default 1,8)\n"
        "  --contenders N     contended: clients on the one key (default "
        "8)\n"
        "  --hold-ms N        contended: time the lock is held (default "
        "1)\n"
        "  --ttl-ms N         contended: the keys' expiry (default 30000; "
        "shorter than\n"
        "                     the hold, it shows the exclusion check "
        "failing)\n"
        "  --barge            contended: a releaser queues again at once "
        "instead of\n"
        "                     standing aside until another took the lock\n"
        "  --only SUITE       peer (uncontended) or contended only\n"
        "  --results FILE     append the rows to FILE (the common CSV of "
        "bench/README.md)\n"
        "  --smoke            both suites once, 0.2 s a point, 1 and 2 "
        "clients, 3 contenders:\n"
        "                     a check that the program runs (ctest's "
        "bench_smoke_redis_redis)\n"
        "The URL defaults to $SQLLOCK_BENCH_REDIS_URL (scripts/redis.sh "
        "writes it).\n");
    exit(2);
}

static void parse_clients(config *cfg, const char *list)
{
    cfg->nclients = bu_parse_clients(list, cfg->clients, &cfg->max_clients);
}

int main(int argc, char **argv)
{
    config cfg;
    redisContext *c;
    char desc[512];
    const char *url = NULL;
    bu_args args = { 10, 3, MAX_REPS, NULL, 0, { NULL }, 0 };
    int i, took;

    memset(&cfg, 0, sizeof cfg);
    cfg.contenders = 8;
    cfg.hold_ms = 1;
    cfg.ttl_ms = TTL_MS;
    cfg.warmup_ns = WARMUP_NS;
    cfg.floor_secs = CONTENDED_FLOOR_SECS;
    bu_init("bench_redis", "run aborted (keys left behind expire after 30 s)");
    parse_clients(&cfg, "1,8");
    for (i = 1; i < argc; i++) {
        const char *a = argv[i];
        if ((took = bu_args_take(&args, argc, argv, &i)) != 0) {
            if (took < 0 || args.nurls > 1)
                usage();
        } else if (strcmp(a, "--clients") == 0 && i + 1 < argc) {
            parse_clients(&cfg, argv[++i]);
        } else if (strcmp(a, "--contenders") == 0 && i + 1 < argc) {
            cfg.contenders = (int)bu_parse_long(argv[++i], 2, MAX_CLIENTS, "--contenders");
        } else if (strcmp(a, "--hold-ms") == 0 && i + 1 < argc) {
            cfg.hold_ms = bu_parse_long(argv[++i], 0, 10000, "--hold-ms");
        } else if (strcmp(a, "--ttl-ms") == 0 && i + 1 < argc) {
            cfg.ttl_ms = bu_parse_long(argv[++i], 1, 86400000, "--ttl-ms");
        } else if (strcmp(a, "--barge") == 0) {
            cfg.barge = 1;
        } else if (strcmp(a, "--only") == 0 && i + 1 < argc) {
            const char *v = argv[++i];
            cfg.only = strcmp(v, "peer") == 0 ? 1
                       : strcmp(v, "contended") == 0 ? 2 : -1;
            if (cfg.only < 0)
                usage();
        } else {
            usage();
        }
    }
    bu_args_finish(&args, 0);
    if (args.smoke) {
        cfg.contenders = 3;
        cfg.warmup_ns = INT64_C(100000000);
        cfg.floor_secs = BU_SMOKE_SECS;
        parse_clients(&cfg, "1,2");
    }
    cfg.secs = args.secs;
    cfg.reps = args.reps;
    cfg.results_path = args.results;
    url = args.nurls > 0 ? args.urls[0] : NULL;
    if (url == NULL)
        url = getenv("SQLLOCK_BENCH_REDIS_URL");
    if (url == NULL || *url == '\0') {
        fprintf(stderr, "bench_redis: no URL given and "
                "SQLLOCK_BENCH_REDIS_URL is not set\n");
        usage();
    }
    parse_url(&cfg, url);
    if (cfg.results_path != NULL)
        cfg.results = bu_results_open(cfg.results_path);

    c = redis_open(&cfg);
    describe(&cfg, c, desc, sizeof desc);
    redisFree(c);
    printf("bench_redis: %s, %g s per run, %d runs\n", desc, cfg.secs,
           cfg.reps);
    fflush(stdout);
    if (cfg.only != 2)
        bench_peer(&cfg, desc);
    if (cfg.only != 1)
        bench_contended(&cfg, desc);
    if (cfg.results != NULL && (ferror(cfg.results) | fclose(cfg.results)))
        bu_die("writing %s failed", cfg.results_path);
    return 0;
}
