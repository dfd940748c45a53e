/*
 * test_restart.c -- database server crashes and restarts (DESIGN L10, L5,
 * and reconnecting after a lost connection, E1), and clients that keep
 * working across them (issue 7, fault 3: L1, L5, L7, L9, P1, P3).
 *
 * L10: only a commit that grants or extends a lease must be durable. A
 * lease granted before a crash is still there after it; a release that
 * committed asynchronously may be forgotten, but a later grant's durable
 * commit flushes the log past it, so a crash can never admit two owners.
 * L5: tokens issued after a restart are greater than every token before.
 *
 * This test crashes servers, so it runs only on servers it may crash: the
 * ones scripts/servers.sh started in $SQLLOCK_TEST_SERVERS_DIR, restarted
 * with `$SQLLOCK_TEST_SERVERS_SCRIPT restart-pg DIR immediate` (PostgreSQL
 * stopped with `pg_ctl stop -m immediate`: no checkpoint, recovery from
 * the WAL) and `restart-my DIR` (mariadbd killed with SIGKILL), or
 * gracefully with `restart-pg DIR fast` (`pg_ctl stop -m fast`) and
 * `restart-my DIR graceful` (SIGTERM, mariadbd's normal shutdown). Their
 * URLs are $SQLLOCK_TEST_PG_URL and $SQLLOCK_TEST_MYSQL_URL. scripts/test.sh
 * exports all four when it starts its own servers; without them the test
 * skips, saying so (and fails under CI). The servers are left
 * running.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "test_util.h"
#include "test_run.h"
#include "test_spawn.h"

typedef struct server {
    const char *drv;           /* "postgres" or "mysql" */
    const char *url;
    const char *restart_cmd;   /* "restart-pg" or "restart-my" */
    const char *restart_arg;   /* a crash: "immediate" or "" (SIGKILL) */
    const char *graceful_arg;  /* a graceful restart: "fast" or "graceful" */
} server;

static const server *g_srv;
static const char *g_dir, *g_script;
static int64_t g_max_token;    /* the largest token seen on g_srv */

#define ASSERT_RC(expr, want, db)                                              \
    do {                                                                       \
        int rc_ = (expr);                                                      \
        if (rc_ != (want))                                                     \
            fail_msg("%s = %s, want %s (%s)", #expr, sqllock_errname(rc_),     \
                     sqllock_errname(want), sqllock_errmsg(db));               \
    } while (0)

static sqllock_db *open_db(void)
{
    sqllock_db *db = NULL;
    int rc = sqllock_open(g_srv->url, NULL, &db), i;

    /* Right after a restart the server may still be finishing recovery. */
    for (i = 0; i < 100 && rc == SQLLOCK_ECONNECT; i++) {
        sqllock_close(db);
        tu_sleep_ms(100);
        rc = sqllock_open(g_srv->url, NULL, &db);
    }
    if (rc != SQLLOCK_OK)
        fail_msg("open(%s): %s: %s", g_srv->drv, sqllock_errname(rc),
                 sqllock_errmsg(db));
    return db;
}

static sqllock_lease *new_lease(sqllock_db *db, const char *name)
{
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_lease *l = NULL;

    o.ttl_ms = 60000;
    ASSERT_RC(sqllock_lease_new(db, name, &o, &l), SQLLOCK_OK, db);
    return l;
}

static const char *lock_name(char *buf, size_t size, const char *tag)
{
    snprintf(buf, size, "restart-%ld-%s", (long)getpid(), tag);
    return buf;
}

static void saw_token(const sqllock_lease *l)
{
    if (sqllock_lease_token(l) > g_max_token)
        g_max_token = sqllock_lease_token(l);
}

/* Crashes the server and starts it again. */
static void crash_and_restart(void)
{
    char cmd[9000];
    int rc;

    snprintf(cmd, sizeof cmd, "bash '%s' %s '%s' %s >&2", g_script,
             g_srv->restart_cmd, g_dir, g_srv->restart_arg);
    rc = system(cmd);
    if (rc != 0)
        fail_msg("%s failed (status %d)", cmd, rc);
}

/* The holder's row is there with its owner and token. */
static void expect_row(sqllock_db *db, const char *name,
                       const sqllock_lease *holder)
{
    tu_row r;

    ASSERT_RC(tu_find(db, name, &r), SQLLOCK_OK, db);
    if (r.found != 1)
        fail_msg("after the restart there are %d rows named %s, want 1",
                 r.found, name);
    assert_string_equal(r.owner, sqllock_lease_owner(holder));
    assert_int_equal(r.token, sqllock_lease_token(holder));
}

/* L10 (a): a granted lease survives a crash. The holder's first call
 * after it reports SQLLOCK_ECONNECT (its connection died with the server)
 * and the next one reconnects and renews. */
static void test_restart_L10_granted_lease_survives_crash(void **state)
{
    int64_t ta;
    char name[200];
    sqllock_db *a, *b;
    sqllock_lease *la, *lb;

    (void)state;
    lock_name(name, sizeof name, "granted");
    a = open_db();
    la = new_lease(a, name);
    ASSERT_RC(sqllock_lease_try_acquire(la), SQLLOCK_OK, a);
    saw_token(la);

    crash_and_restart();

    b = open_db();
    lb = new_lease(b, name);
    ASSERT_RC(sqllock_lease_try_acquire(lb), SQLLOCK_BUSY, b);
    expect_row(b, name, la);
    /* The crash cut A's connection; the renewal finds it dead and runs
     * again on a fresh one (DESIGN C3). */
    ASSERT_RC(sqllock_lease_renew(la), SQLLOCK_OK, a);
    assert_int_equal(sqllock_lease_count(la), 1);
    ASSERT_RC(sqllock_lease_try_acquire(lb), SQLLOCK_BUSY, b);
    /* L5 across the crash: B's token is above A's (read before the
     * release, after which the handle reports none). */
    ta = sqllock_lease_token(la);
    assert_true(ta > 0);
    ASSERT_RC(sqllock_lease_release(la), SQLLOCK_OK, a);
    ASSERT_RC(sqllock_lease_try_acquire(lb), SQLLOCK_OK, b);
    assert_true(sqllock_lease_token(lb) > ta);
    saw_token(lb);
    ASSERT_RC(sqllock_lease_release(lb), SQLLOCK_OK, b);
    sqllock_lease_free(la);
    sqllock_lease_free(lb);
    sqllock_close(a);
    sqllock_close(b);
}

/* L10 (b): A acquires and releases (the release may commit
 * asynchronously), B acquires (a durable commit), the server crashes: B's
 * row is there with B's token and C is refused. Never two holders. */
static void test_restart_L10_async_release_never_two_holders(void **state)
{
    char name[200];
    sqllock_db *a, *b, *c;
    sqllock_lease *la, *lb, *lc;
    int64_t ta;

    (void)state;
    lock_name(name, sizeof name, "async");
    a = open_db();
    b = open_db();
    la = new_lease(a, name);
    lb = new_lease(b, name);
    ASSERT_RC(sqllock_lease_try_acquire(la), SQLLOCK_OK, a);
    saw_token(la);
    /* A's token, read before the release (the handle reports none after
     * it): B's is above it (L5). */
    ta = sqllock_lease_token(la);
    assert_true(ta > 0);
    ASSERT_RC(sqllock_lease_release(la), SQLLOCK_OK, a);
    ASSERT_RC(sqllock_lease_try_acquire(lb), SQLLOCK_OK, b);
    saw_token(lb);
    assert_true(sqllock_lease_token(lb) > ta);

    crash_and_restart();

    c = open_db();
    lc = new_lease(c, name);
    ASSERT_RC(sqllock_lease_try_acquire(lc), SQLLOCK_BUSY, c);
    expect_row(c, name, lb);
    /* A, which released, cannot get it back either. */
    ASSERT_RC(sqllock_lease_try_acquire(la), SQLLOCK_ECONNECT, a);
    ASSERT_RC(sqllock_lease_try_acquire(la), SQLLOCK_BUSY, a);
    /* B's renewal reconnects (C3) and B still holds it. */
    ASSERT_RC(sqllock_lease_renew(lb), SQLLOCK_OK, b);
    ASSERT_RC(sqllock_lease_release(lb), SQLLOCK_OK, b);
    ASSERT_RC(sqllock_lease_try_acquire(lc), SQLLOCK_OK, c);
    saw_token(lc);
    ASSERT_RC(sqllock_lease_release(lc), SQLLOCK_OK, c);
    sqllock_lease_free(la);
    sqllock_lease_free(lb);
    sqllock_lease_free(lc);
    sqllock_close(a);
    sqllock_close(b);
    sqllock_close(c);
}

/* L5 (c): tokens issued after a restart are greater than every token
 * issued before it, for the same names and for a fresh name. Some names
 * were released before the crash: L10 lets a crash forget such a release
 * (it committed asynchronously), so such a name is either free again (and
 * then its new token is larger) or still held by exactly its old owner
 * and token until that lease expires -- never by anyone else. */
static void test_restart_L5_tokens_increase_across_restart(void **state)
{
    enum { N = 5 };
    char name[200], owner[N][SQLLOCK_OWNER_LEN + 1];
    int64_t token[N];
    sqllock_db *a;
    sqllock_lease *l, *n;
    int i, forgotten = 0;

    (void)state;
    a = open_db();
    for (i = 0; i < N; i++) {
        char tag[16];
        snprintf(tag, sizeof tag, "tok%d", i);
        l = new_lease(a, lock_name(name, sizeof name, tag));
        ASSERT_RC(sqllock_lease_try_acquire(l), SQLLOCK_OK, a);
        saw_token(l);
        snprintf(owner[i], sizeof owner[i], "%s", sqllock_lease_owner(l));
        token[i] = sqllock_lease_token(l);
        if (i % 2 == 0)
            ASSERT_RC(sqllock_lease_release(l), SQLLOCK_OK, a);
        sqllock_lease_free(l);
    }
    sqllock_close(a);

    crash_and_restart();

    a = open_db();
    for (i = 0; i < N; i++) {
        char tag[16];
        int rc;
        snprintf(tag, sizeof tag, "tok%d", i);
        l = new_lease(a, lock_name(name, sizeof name, tag));
        rc = sqllock_lease_try_acquire(l);
        if (rc == SQLLOCK_OK) {
            assert_true(i % 2 == 0);
            if (sqllock_lease_token(l) <= g_max_token)
                fail_msg("token %lld after the restart is not above %lld, "
                         "the largest before it",
                         (long long)sqllock_lease_token(l),
                         (long long)g_max_token);
            ASSERT_RC(sqllock_lease_release(l), SQLLOCK_OK, a);
        } else {
            tu_row r;
            ASSERT_RC(rc, SQLLOCK_BUSY, a);
            ASSERT_RC(tu_find(a, name, &r), SQLLOCK_OK, a);
            assert_int_equal(r.found, 1);
            assert_string_equal(r.owner, owner[i]);
            assert_int_equal(r.token, token[i]);
            if (i % 2 == 0)
                forgotten++;
        }
        sqllock_lease_free(l);
    }
    if (forgotten > 0)
        printf("restart [%s]: the crash forgot %d asynchronous release(s); "
               "those leases stay with their old owner until they expire "
               "(L10)\n", g_srv->drv, forgotten);
    n = new_lease(a, lock_name(name, sizeof name, "fresh"));
    ASSERT_RC(sqllock_lease_try_acquire(n), SQLLOCK_OK, a);
    if (sqllock_lease_token(n) <= g_max_token)
        fail_msg("token %lld after the restart is not above %lld",
                 (long long)sqllock_lease_token(n), (long long)g_max_token);
    ASSERT_RC(sqllock_lease_release(n), SQLLOCK_OK, a);
    sqllock_lease_free(n);
    /* Clean up the rows left behind. */
    for (i = 0; i < N; i++) {
        char tag[16];
        const tu_sql *sql = tu_sql_for(g_srv->drv);
        sqllock_value v;
        snprintf(tag, sizeof tag, "tok%d", i);
        v = sqllock__text(lock_name(name, sizeof name, tag));
        ASSERT_RC(sqllock__exec_sql(a, sql->delete_lease, &v, 1, NULL, NULL,
                                    NULL),
                  SQLLOCK_OK, a);
    }
    sqllock_close(a);
}

/* L10's fast mode (SQLLOCK_LEASE_FAST, PostgreSQL) beside durable leases,
 * across a crash right after many fast grants: a fast lease may be
 * forgotten -- its holder then hears LOST, never a silent success -- and
 * the tokens of durable leases still increase past the crash (L5), since
 * every durable grant flushed the log past every earlier draw. Whether the
 * sequence drew a fast lease's token again is printed: that is why fast
 * leases report no token. */
static void test_restart_L5_L10_fast_mode_beside_durable(void **state)
{
    enum { N = 100 };
    char name[200], prefix[200];
    sqllock_db *a, *b;
    sqllock_lease *d, *f[N];
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_value v;
    int64_t fast_max = 0, kept = 0;
    int i, has = 0, lost = 0, renewed = 0, rc;
    tu_row r;

    (void)state;
    a = open_db();
    d = new_lease(a, lock_name(name, sizeof name, "durable-beside-fast"));
    ASSERT_RC(sqllock_lease_try_acquire(d), SQLLOCK_OK, a);
    saw_token(d);
    o.ttl_ms = 60000;
    o.flags = SQLLOCK_LEASE_FAST;
    for (i = 0; i < N; i++) {
        char tag[32];
        snprintf(tag, sizeof tag, "fast%d", i);
        f[i] = NULL;
        ASSERT_RC(sqllock_lease_new(a, lock_name(name, sizeof name, tag), &o,
                                    &f[i]), SQLLOCK_OK, a);
        ASSERT_RC(sqllock_lease_try_acquire(f[i]), SQLLOCK_OK, a);
        assert_int_equal(sqllock_lease_token(f[i]), 0);
    }
    snprintf(prefix, sizeof prefix, "restart-%ld-fast%%", (long)getpid());
    v = sqllock__text(prefix);
    ASSERT_RC(sqllock__exec_sql(a, "SELECT max(token) FROM sqllock_lease "
                                "WHERE name LIKE $1", &v, 1, &has, &fast_max,
                                NULL), SQLLOCK_OK, a);

    crash_and_restart();

    b = open_db();
    ASSERT_RC(sqllock__exec_sql(b, "SELECT count(*) FROM sqllock_lease "
                                "WHERE name LIKE $1", &v, 1, &has, &kept,
                                NULL), SQLLOCK_OK, b);
    /* Each fast holder: the first call reports the dead connection; the
     * next renews a lease the server kept, or says LOST for one it
     * forgot. */
    for (i = 0; i < N; i++) {
        char tag[32];
        snprintf(tag, sizeof tag, "fast%d", i);
        ASSERT_RC(tu_find(b, lock_name(name, sizeof name, tag), &r),
                  SQLLOCK_OK, b);
        rc = sqllock_lease_renew(f[i]);
        if (rc == SQLLOCK_ECONNECT)
            rc = sqllock_lease_renew(f[i]);
        if (r.found) {
            assert_string_equal(r.owner, sqllock_lease_owner(f[i]));
            ASSERT_RC(rc, SQLLOCK_OK, a);
            renewed++;
            ASSERT_RC(sqllock_lease_release(f[i]), SQLLOCK_OK, a);
        } else {
            ASSERT_RC(rc, SQLLOCK_LOST, a);
            lost++;
        }
        sqllock_lease_free(f[i]);
    }
    assert_int_equal(renewed, (int)kept);
    /* L5 for durable leases. The durable grant survived the crash (the
     * handle reconnected for the fast leases above). */
    ASSERT_RC(sqllock_lease_renew(d), SQLLOCK_OK, a);
    ASSERT_RC(sqllock_lease_release(d), SQLLOCK_OK, a);
    ASSERT_RC(sqllock_lease_try_acquire(d), SQLLOCK_OK, a);
    if (sqllock_lease_token(d) <= g_max_token)
        fail_msg("L5: a durable token %lld after the crash is not above "
                 "%lld, the largest durable token before it",
                 (long long)sqllock_lease_token(d), (long long)g_max_token);
    printf("restart [postgres]: fast mode: the crash forgot %d of %d fast "
           "grants; the largest fast token before it was %lld, the first "
           "durable token after it %lld%s\n", lost, N, (long long)fast_max,
           (long long)sqllock_lease_token(d),
           sqllock_lease_token(d) <= fast_max
               ? " (the sequence went back: a fast token was drawn again)"
               : "");
    saw_token(d);
    ASSERT_RC(sqllock_lease_release(d), SQLLOCK_OK, a);
    sqllock_lease_free(d);
    sqllock_close(a);
    sqllock_close(b);
}

/* ------------------------------------------------------------------ */
/* Clients across restarts (issue 7, fault 3)                          */
/* ------------------------------------------------------------------ */

/*
 * Real processes and threads use the server while it is restarted, each
 * with handles it opened itself after fork():
 *
 *   the holder     holds a lease under the watchdog (L7) across every
 *                  restart, and renews a second lease itself;
 *   two waiters    block in sqllock_lease_acquire() on the holder's name,
 *                  one with a long wait, one with short ones;
 *   the counters   3 processes x 2 threads take turns on one lease and
 *                  run a read-increment-write of a counter in shared
 *                  memory under it (the exclusion invariant);
 *   the reapers    a reaper thread (sqllock_reaper_start) and a thread
 *                  that runs sqllock_reap() and leaves expired leases
 *                  behind for them.
 *
 * The parent restarts the server several times while they run. Its
 * progress is one atomic word, the epoch: 2g while the server is up after
 * restart g (0 before the first), 2g - 1 while restart g runs. A call
 * that starts and ends in the same even epoch ran wholly while the server
 * was up: there a client may see SQLLOCK_ECONNECT only on its first call
 * after a restart (the connection the restart cut is found dead when it
 * is used) and never again, since that call dropped it and the next one
 * connects again (E1, docs/contract.md "Lost connections"). During a
 * restart every call must end with ECONNECT or a status of its own kind,
 * never an unclear one, and within its bound.
 */

#define CL_COUNTER_PROCS 3
#define CL_COUNTER_THREADS 2
#define CL_HOLDER 0
#define CL_WAIT_LONG 1
#define CL_WAIT_SHORT 2
#define CL_COUNTER0 3
#define CL_REAP (CL_COUNTER0 + CL_COUNTER_PROCS * CL_COUNTER_THREADS)
#define CL_CLIENTS (CL_REAP + 1)
#define CL_GEN_MAX 8               /* restarts + 1 */
#define CL_HOLDS_MAX 60000
#define CL_EVENTS_MAX 256
#define CL_NSTATUS SQLLOCK_STATUS_END_

#define CL_LD(p) __atomic_load_n((p), __ATOMIC_SEQ_CST)
#define CL_ST(p, v) __atomic_store_n((p), (v), __ATOMIC_SEQ_CST)
#define CL_ADD(p, v) __atomic_fetch_add((p), (v), __ATOMIC_SEQ_CST)
#define CL_MASK(s) (1u << (s))

typedef struct cl_hold {
    int64_t start_us, end_us, token;
    int who;
} cl_hold;

typedef struct cl_event {
    int64_t t_ms;
    int state, status;
    char msg[120];
} cl_event;

/* One client thread's account; written by that thread only. */
typedef struct cl_client {
    const char *role;
    int64_t calls, by_status[CL_NSTATUS];
    int64_t up_calls[CL_GEN_MAX];      /* calls wholly inside up period g */
    int64_t econnect[CL_GEN_MAX];      /* ECONNECTs that came during restart
                                          g or in the up period after it */
    int resumed[CL_GEN_MAX];           /* after its ECONNECT from restart
                                          g, a call reached the server */
    int64_t resume_at[CL_GEN_MAX];     /* when that call ended (ms) */
    int64_t longest_ms;
    char longest_what[40];
    int64_t in_call_since;             /* ms; 0 outside a call */
    char in_call[40];
    char first_econnect[200];
    char bad[400];
    int retried;                       /* its calls are renewals, which the
                                          library runs again on a fresh
                                          connection after a lost one
                                          (DESIGN C3): a restart that is
                                          over by its next call passes
                                          unheard */
} cl_client;

typedef struct cl_shared {
    int epoch, stop, ready, failed;
    int64_t down_ms[CL_GEN_MAX], up_ms[CL_GEN_MAX];
    /* (c) the counter */
    int counter_owner, overlaps, token_back;
    int64_t counter, increments, skipped, last_token;
    int64_t gen_tok_min[CL_GEN_MAX], gen_tok_max[CL_GEN_MAX];
    int nholds;
    cl_hold holds[CL_HOLDS_MAX];
    /* (a) the watched lease and (b) its waiters */
    int hold_owner, hold_releasing, hold_grants;
    int64_t hold_token, hold_last_token, hold_tokens[4];
    int w_notheld, w_nev;
    cl_event w_ev[CL_EVENTS_MAX];
    char w_bad[300];
    /* (d) the reapers */
    int r_resumed[CL_GEN_MAX];
    int64_t r_resume_ms[CL_GEN_MAX];
    int64_t r_passes, r_errors, r_reaped, r_err_status[CL_NSTATUS];
    int64_t r_oneshot_reaped, r_orphans, r_stop_ms, r_left;
    cl_client c[CL_CLIENTS];
} cl_shared;

typedef struct cl_call {
    cl_client *c;
    const char *what;
    int epoch;
    int64_t t0;
    int64_t econnect_before;   /* the client's ECONNECTs in this call's
                                  generation when it began */
} cl_call;

static cl_shared *g_cl;
static int g_slow = 1;
static char g_cl_hold[200], g_cl_manual[200], g_cl_counter[200],
    g_cl_orphan[200];

/* The counters' lease times grow less than the other bounds: a hold
 * lasts a fraction of a millisecond, and a crash that forgets a release
 * leaves the name busy for the whole ttl. */
static int64_t cl_counter_ms(int64_t ms)
{
    return g_slow > 1 ? 2 * ms : ms;
}

static void cl_bad(cl_client *c, const char *fmt, ...)
{
    va_list ap;

    CL_ADD(&g_cl->failed, 1);
    if (c->bad[0] != '\0')
        return;
    va_start(ap, fmt);
    vsnprintf(c->bad, sizeof c->bad, fmt, ap);
    va_end(ap);
}

static int cl_gen(int epoch)
{
    return (epoch + 1) / 2;
}

static sqllock_db *cl_open(cl_client *c)
{
    sqllock_options o = SQLLOCK_OPTIONS_INIT;
    sqllock_db *db = NULL;
    int rc;

    o.statement_timeout_ms = 10000;
    rc = sqllock_open(g_srv->url, &o, &db);
    if (rc != SQLLOCK_OK) {
        cl_bad(c, "open: %s: %s", sqllock_errname(rc), sqllock_errmsg(db));
        sqllock_close(db);
        return NULL;
    }
    return db;
}

static void cl_begin(cl_call *k, cl_client *c, const char *what)
{
    k->c = c;
    k->what = what;
    k->epoch = CL_LD(&g_cl->epoch);
    k->t0 = tu_now_ms();
    k->econnect_before = c->econnect[cl_gen(k->epoch)];
    snprintf(c->in_call, sizeof c->in_call, "%s", what);
    CL_ST(&c->in_call_since, k->t0);
}

/*
 * Accounts for one call that returned `rc`: `ok` is the mask of the
 * statuses a call of its kind may return once it reached the server;
 * ECONNECT is judged by the epoch (see above); anything else is an
 * unclear status. A call that reached the server after the client heard
 * ECONNECT from restart g, and before the next restart, shows that the
 * client connected again (its resume time). Every call must end within
 * its wait and a few seconds.
 */
static void cl_end(cl_call *k, int rc, unsigned ok, int64_t wait_ms,
                   sqllock_db *db)
{
    cl_client *c = k->c;
    int64_t end = tu_now_ms(), took = end - k->t0;
    int epoch = CL_LD(&g_cl->epoch), g = cl_gen(k->epoch);
    int up = k->epoch == epoch && k->epoch % 2 == 0;

    CL_ST(&c->in_call_since, 0);
    c->calls++;
    c->by_status[rc >= 0 && rc < CL_NSTATUS ? rc : 0]++;
    if (took > c->longest_ms) {
        c->longest_ms = took;
        snprintf(c->longest_what, sizeof c->longest_what, "%s", k->what);
    }
    /* The handles' bounds are 10 s per statement and per connect; a
     * restart takes about a second, so 5 s past the wait is a hang. */
    if (took > wait_ms + 5000 * g_slow)
        cl_bad(c, "%s took %lld ms (wait %lld ms): a call hung in the "
               "restart", k->what, (long long)took, (long long)wait_ms);
    if (rc == SQLLOCK_ECONNECT) {
        c->econnect[cl_gen(epoch)]++;
        if (c->first_econnect[0] == '\0')
            snprintf(c->first_econnect, sizeof c->first_econnect, "%s: %s",
                     k->what, sqllock_errmsg(db));
        if (up && g == 0)
            cl_bad(c, "%s: ECONNECT before any restart: %s", k->what,
                   sqllock_errmsg(db));
        else if (up && c->up_calls[g] > 0)
            cl_bad(c, "%s: ECONNECT again after restart %d, with the "
                   "server up and its call before already made (it did "
                   "not reconnect on its next call): %s", k->what, g,
                   sqllock_errmsg(db));
    } else if (ok & CL_MASK(rc)) {
        if (g > 0 && cl_gen(epoch) == g && !c->resumed[g] &&
            (k->econnect_before > 0 ||
             (c->retried && k->epoch >= 2 * g - 1))) {
            c->resumed[g] = 1;
            c->resume_at[g] = end;
        }
    } else {
        cl_bad(c, "%s: unexpected status %s%s: %s", k->what,
               sqllock_errname(rc), up ? " with the server up"
               : " during a restart", sqllock_errmsg(db));
    }
    if (up)
        c->up_calls[g]++;
}

/* After ECONNECT a client pauses a little, as an application would,
 * rather than spin on connects to a server that is down. */
static void cl_pause_after(int rc)
{
    if (rc == SQLLOCK_ECONNECT)
        tu_sleep_ms(20);
}

static void cl_ready(void)
{
    CL_ADD(&g_cl->ready, 1);
}

/* (a) The watchdog's callback: a log of the lease's changes (only the
 * renewer thread writes it; the parent reads it after the end). */
static void cl_on_watch(void *ctx, sqllock_lease *l, int state, int status,
                        const char *msg)
{
    cl_shared *sh = ctx;
    int i = sh->w_nev;

    (void)l;
    if (i < CL_EVENTS_MAX) {
        sh->w_ev[i].t_ms = tu_now_ms();
        sh->w_ev[i].state = state;
        sh->w_ev[i].status = status;
        snprintf(sh->w_ev[i].msg, sizeof sh->w_ev[i].msg, "%s",
                 msg != NULL ? msg : "");
        CL_ST(&sh->w_nev, i + 1);
    }
    if (state != SQLLOCK_STATE_HELD && status != SQLLOCK_ECONNECT &&
        sh->w_bad[0] == '\0')
        snprintf(sh->w_bad, sizeof sh->w_bad, "%s (%s): %s",
                 sqllock_lease_state_name(state), sqllock_errname(status),
                 msg != NULL ? msg : "");
}

/* (a) The holder: a watched lease held across every restart (renewed by
 * the watchdog's own connection), and a second lease it renews itself
 * every 100 ms. At the end its release must be OK: no other owner held
 * the lease at any moment since the acquire (L4). */
static int cl_holder(void)
{
    cl_client *c = &g_cl->c[CL_HOLDER];
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_watch_options w = SQLLOCK_WATCH_OPTIONS_INIT;
    sqllock_lease *h = NULL, *m = NULL;
    sqllock_db *db = cl_open(c);
    cl_call k;
    int rc;

    c->retried = 1;
    if (db == NULL)
        return 1;
    o.ttl_ms = 15000 * g_slow;
    w.interval_ms = 500;
    w.retry_ms = 50;
    w.callback = cl_on_watch;
    w.ctx = g_cl;
    if (sqllock_lease_new(db, g_cl_hold, &o, &h) != SQLLOCK_OK ||
        sqllock_lease_new(db, g_cl_manual, &o, &m) != SQLLOCK_OK ||
        sqllock_watch_prepare(db) != SQLLOCK_OK ||
        sqllock_lease_try_acquire(h) != SQLLOCK_OK ||
        sqllock_lease_try_acquire(m) != SQLLOCK_OK ||
        sqllock_lease_watch(h, &w) != SQLLOCK_OK) {
        cl_bad(c, "holder: setting up: %s", sqllock_errmsg(db));
        goto out;
    }
    g_cl->hold_token = g_cl->hold_last_token = sqllock_lease_token(h);
    g_cl->hold_tokens[0] = g_cl->hold_token;
    g_cl->hold_grants = 1;
    CL_ST(&g_cl->hold_owner, CL_HOLDER + 1);
    cl_ready();
    while (!CL_LD(&g_cl->stop)) {
        if (!sqllock_lease_held(h))
            CL_ADD(&g_cl->w_notheld, 1);
        cl_begin(&k, c, "renew");
        rc = sqllock_lease_renew(m);
        cl_end(&k, rc, CL_MASK(SQLLOCK_OK), 0, db);
        cl_pause_after(rc);
        tu_sleep_ms(100);
    }
    if (sqllock_lease_state(h) != SQLLOCK_STATE_HELD)
        cl_bad(c, "L7: the watched lease is %s at the end, want held",
               sqllock_lease_state_name(sqllock_lease_state(h)));
    CL_ST(&g_cl->hold_releasing, 1);
    CL_ST(&g_cl->hold_owner, 0);
    cl_begin(&k, c, "release (watched)");
    rc = sqllock_lease_release(h);
    cl_end(&k, rc, CL_MASK(SQLLOCK_OK), 0, db);
    cl_begin(&k, c, "release");
    rc = sqllock_lease_release(m);
    cl_end(&k, rc, CL_MASK(SQLLOCK_OK), 0, db);
out:
    sqllock_lease_free(h);
    sqllock_lease_free(m);
    sqllock_close(db);
    return c->bad[0] != '\0';
}

/* (b) A waiter on the holder's name: the long one waits up to 60 s per
 * call, the short one 300 ms. Neither may get the lease before the
 * holder lets it go; one of them gets it then, with a larger token. */
static void *cl_waiter(void *arg)
{
    int idx = (int)(intptr_t)arg;
    cl_client *c = &g_cl->c[idx];
    int64_t wait = idx == CL_WAIT_LONG ? 60000 : 300, stopped = 0;
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_lease *l = NULL;
    sqllock_db *db = cl_open(c);
    unsigned ok = CL_MASK(SQLLOCK_OK);
    cl_call k;
    int rc;

    if (db == NULL)
        return NULL;
    if (idx == CL_WAIT_SHORT)
        ok |= CL_MASK(SQLLOCK_TIMEOUT);
    o.ttl_ms = 15000 * g_slow;
    if (sqllock_lease_new(db, g_cl_hold, &o, &l) != SQLLOCK_OK) {
        cl_bad(c, "waiter: %s", sqllock_errmsg(db));
        goto out;
    }
    cl_ready();
    for (;;) {
        if (CL_LD(&g_cl->stop)) {
            if (idx == CL_WAIT_SHORT)
                break;
            if (stopped == 0)
                stopped = tu_now_ms();
            else if (tu_now_ms() - stopped > 30000 * g_slow) {
                cl_bad(c, "L9: the long waiter did not get the lease within "
                       "30 s of its release");
                break;
            }
        }
        cl_begin(&k, c, "acquire (wait)");
        rc = sqllock_lease_acquire(l, wait);
        cl_end(&k, rc, ok, wait, db);
        cl_pause_after(rc);
        if (rc != SQLLOCK_OK)
            continue;
        if (!CL_LD(&g_cl->hold_releasing))
            cl_bad(c, "L1: granted the lease while the holder still held "
                   "it (two owners)");
        else if (!__atomic_compare_exchange_n(&g_cl->hold_owner,
                                              &(int){ 0 }, idx + 1, 0,
                                              __ATOMIC_SEQ_CST,
                                              __ATOMIC_SEQ_CST))
            cl_bad(c, "L1: granted the lease while client %d held it",
                   CL_LD(&g_cl->hold_owner) - 1);
        else {
            if (sqllock_lease_token(l) <= g_cl->hold_last_token)
                cl_bad(c, "L5: token %lld after %lld",
                       (long long)sqllock_lease_token(l),
                       (long long)g_cl->hold_last_token);
            g_cl->hold_last_token = sqllock_lease_token(l);
            if (g_cl->hold_grants < 4)
                g_cl->hold_tokens[g_cl->hold_grants++] =
                    sqllock_lease_token(l);
            CL_ST(&g_cl->hold_owner, 0);
        }
        cl_begin(&k, c, "release");
        rc = sqllock_lease_release(l);
        cl_end(&k, rc, CL_MASK(SQLLOCK_OK), 0, db);
        break;
    }
out:
    sqllock_lease_free(l);
    sqllock_close(db);
    return NULL;
}

/* (c) The exclusion invariant: a read-increment-write of a counter in
 * shared memory under the lease, with the holder's interval recorded and
 * its token compared with the last one granted on the name. */
static void *cl_counter(void *arg)
{
    int idx = (int)(intptr_t)arg;
    cl_client *c = &g_cl->c[idx];
    const int64_t wait = cl_counter_ms(700);
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_lease *l = NULL;
    sqllock_db *db = cl_open(c);
    unsigned seed = (unsigned)getpid() * 31u + (unsigned)idx;
    cl_call k;
    int rc;

    if (db == NULL)
        return NULL;
    o.ttl_ms = cl_counter_ms(1500);
    if (sqllock_lease_new(db, g_cl_counter, &o, &l) != SQLLOCK_OK) {
        cl_bad(c, "counter: %s", sqllock_errmsg(db));
        goto out;
    }
    cl_ready();
    while (!CL_LD(&g_cl->stop) && c->bad[0] == '\0') {
        int expected = 0, wrote = 0, n;
        int64_t t0, token;

        cl_begin(&k, c, "acquire (wait)");
        rc = sqllock_lease_acquire(l, wait);
        cl_end(&k, rc, CL_MASK(SQLLOCK_OK) | CL_MASK(SQLLOCK_TIMEOUT), wait,
               db);
        cl_pause_after(rc);
        if (rc != SQLLOCK_OK)
            continue;
        if (__atomic_compare_exchange_n(&g_cl->counter_owner, &expected,
                                        idx + 1, 0, __ATOMIC_SEQ_CST,
                                        __ATOMIC_SEQ_CST)) {
            int g = cl_gen(CL_LD(&g_cl->epoch));
            int64_t v;

            t0 = tu_now_us();
            token = sqllock_lease_token(l);
            if (token <= g_cl->last_token) {
                g_cl->token_back++;
                cl_bad(c, "L5: token %lld granted after %lld",
                       (long long)token, (long long)g_cl->last_token);
            }
            g_cl->last_token = token;
            if (g_cl->gen_tok_min[g] == 0)
                g_cl->gen_tok_min[g] = token;
            g_cl->gen_tok_max[g] = token;
            if (sqllock_lease_held(l)) {
                v = g_cl->counter;
                tu_sleep_us((long)(rand_r(&seed) % 300));
                g_cl->counter = v + 1;
                g_cl->increments++;
                wrote = 1;
            } else {
                g_cl->skipped++;
            }
            n = CL_ADD(&g_cl->nholds, 1);
            if (n < CL_HOLDS_MAX) {
                g_cl->holds[n].start_us = t0;
                g_cl->holds[n].end_us = tu_now_us();
                g_cl->holds[n].token = token;
                g_cl->holds[n].who = idx;
            }
            CL_ST(&g_cl->counter_owner, 0);
        } else {
            CL_ADD(&g_cl->overlaps, 1);
            cl_bad(c, "L1: granted the counter's lease while client %d "
                   "held it (two owners)", expected - 1);
        }
        /* A release whose answer the restart cut off keeps the hold in
         * the handle: it is sent again (its effect may have happened, so
         * LOST is a possible answer then). */
        for (n = 0;; n++) {
            unsigned okr = CL_MASK(SQLLOCK_OK);
            if (n > 0 || !wrote)
                okr |= CL_MASK(SQLLOCK_LOST);
            cl_begin(&k, c, n == 0 ? "release" : "release (again)");
            rc = sqllock_lease_release(l);
            cl_end(&k, rc, okr, 0, db);
            if (rc != SQLLOCK_ECONNECT)
                break;
            cl_pause_after(rc);
            if (tu_now_ms() - k.t0 > 30000 * g_slow) {
                cl_bad(c, "the release did not reach the server in 30 s");
                goto out;
            }
        }
        tu_sleep_us((long)(rand_r(&seed) % 1000));
    }
out:
    sqllock_lease_free(l);
    sqllock_close(db);
    return NULL;
}

/* (d) Leaves expired leases behind (a 200 ms lease freed unreleased)
 * and runs one-shot reaps, every 50 ms. */
static void *cl_orphans(void *arg)
{
    cl_client *c = &g_cl->c[CL_REAP];
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_db *db = cl_open(c);
    char name[260];
    cl_call k;
    int rc, i;

    (void)arg;
    if (db == NULL)
        return NULL;
    o.ttl_ms = 200;
    cl_ready();
    for (i = 0; !CL_LD(&g_cl->stop); i++) {
        sqllock_lease *l = NULL;
        int64_t n = 0;

        snprintf(name, sizeof name, "%s%d", g_cl_orphan, i);
        if (sqllock_lease_new(db, name, &o, &l) != SQLLOCK_OK) {
            cl_bad(c, "orphan: %s", sqllock_errmsg(db));
            break;
        }
        cl_begin(&k, c, "acquire (orphan)");
        rc = sqllock_lease_try_acquire(l);
        cl_end(&k, rc, CL_MASK(SQLLOCK_OK), 0, db);
        if (rc == SQLLOCK_OK)
            g_cl->r_orphans++;
        sqllock_lease_free(l);
        cl_pause_after(rc);
        cl_begin(&k, c, "reap");
        rc = sqllock_reap(db, 0, 100, &n);
        cl_end(&k, rc, CL_MASK(SQLLOCK_OK), 0, db);
        if (rc == SQLLOCK_OK)
            g_cl->r_oneshot_reaped += n;
        cl_pause_after(rc);
        tu_sleep_ms(50);
    }
    sqllock_close(db);
    return NULL;
}

static int cl_orphan_row(void *ctx, const sqllock_lease_info *info)
{
    if (strncmp(info->name, g_cl_orphan, strlen(g_cl_orphan)) == 0)
        (*(int64_t *)ctx)++;
    return 0;
}

/* (d) The reaper thread, watched through its counters: after each
 * restart a pass must succeed again; its failed passes must say
 * ECONNECT; it must stop promptly (P3); and no expired orphan may be
 * left once it and a last one-shot pass have run. */
static int cl_reaper(void)
{
    sqllock_reaper_options ro = SQLLOCK_REAPER_OPTIONS_INIT;
    sqllock_options dbo = SQLLOCK_OPTIONS_INIT;
    cl_client *c = &g_cl->c[CL_REAP];
    sqllock_reaper *r = NULL;
    sqllock_reaper_stats st;
    int64_t errors = 0, base = -1, t, n = 0;
    int seen_epoch = 0, epoch, g, rc;
    pthread_t th;
    sqllock_db *db;
    char why[300];

    dbo.statement_timeout_ms = 10000;
    ro.interval_ms = 50;
    ro.batch = 100;
    ro.db_options = &dbo;
    rc = sqllock_reaper_start(g_srv->url, &ro, &r, why, sizeof why);
    if (rc != SQLLOCK_OK) {
        cl_bad(c, "reaper_start: %s: %s", sqllock_errname(rc), why);
        return 1;
    }
    if (pthread_create(&th, NULL, cl_orphans, NULL) != 0) {
        cl_bad(c, "cannot start a thread");
        sqllock_reaper_stop(r);
        return 1;
    }
    while (!CL_LD(&g_cl->stop)) {
        sqllock_reaper_stats_get(r, &st);
        if (st.errors > errors) {
            g_cl->r_err_status[st.last_status >= 0 &&
                               st.last_status < CL_NSTATUS
                                   ? st.last_status : 0]++;
            if (st.last_status != SQLLOCK_ECONNECT &&
                st.last_status != SQLLOCK_OK)
                cl_bad(c, "P1: a reaper pass failed with %s: %s",
                       sqllock_errname(st.last_status), st.last_error);
            errors = st.errors;
        }
        epoch = CL_LD(&g_cl->epoch);
        if (epoch != seen_epoch) {
            seen_epoch = epoch;
            base = epoch % 2 == 0 ? st.passes : -1;
        }
        g = cl_gen(epoch);
        if (base >= 0 && st.passes > base &&
            st.last_status == SQLLOCK_OK && !g_cl->r_resumed[g]) {
            g_cl->r_resumed[g] = 1;
            g_cl->r_resume_ms[g] = tu_now_ms() - g_cl->up_ms[g];
        }
        tu_sleep_ms(10);
    }
    pthread_join(th, NULL);
    sqllock_reaper_stats_get(r, &st);
    g_cl->r_passes = st.passes;
    g_cl->r_errors = st.errors;
    g_cl->r_reaped = st.reaped;
    t = tu_now_ms();
    sqllock_reaper_stop(r);
    g_cl->r_stop_ms = tu_now_ms() - t;
    /* The last orphans expire; one pass deletes them all. */
    tu_sleep_ms(300);
    db = cl_open(c);
    if (db == NULL)
        return 1;
    rc = sqllock_reap(db, 0, 1000, &n);
    if (rc == SQLLOCK_OK)
        g_cl->r_oneshot_reaped += n;
    n = 0;
    if (rc == SQLLOCK_OK)
        rc = sqllock_list(db, cl_orphan_row, &n);
    if (rc != SQLLOCK_OK)
        cl_bad(c, "the last reap: %s: %s", sqllock_errname(rc),
               sqllock_errmsg(db));
    g_cl->r_left = n;
    sqllock_close(db);
    return 0;
}

/* Runs `fn` on `n` threads from `first` on, and joins them. */
static int cl_threads(void *(*fn)(void *), int first, int n)
{
    pthread_t th[CL_COUNTER_THREADS > 2 ? CL_COUNTER_THREADS : 2];
    int i, started = 0;

    for (i = 0; i < n; i++) {
        if (pthread_create(&th[i], NULL, fn, (void *)(intptr_t)(first + i))
            != 0) {
            cl_bad(&g_cl->c[first + i], "cannot start a thread");
            break;
        }
        started++;
    }
    for (i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    for (i = 0; i < n; i++)
        if (g_cl->c[first + i].bad[0] != '\0')
            return 1;
    return 0;
}

typedef enum cl_role { CL_R_HOLDER, CL_R_WAITERS, CL_R_COUNTER, CL_R_REAPER }
    cl_role;

/* A child process: its own handles, opened here, after fork(). The alarm
 * ends a child that hangs even if the parent is gone. */
static void cl_child(cl_role role, int first, unsigned alarm_s)
{
    int rc = 1;

    alarm(alarm_s);
    switch (role) {
    case CL_R_HOLDER:
        rc = cl_holder();
        break;
    case CL_R_WAITERS:
        rc = cl_threads(cl_waiter, CL_WAIT_LONG, 2);
        break;
    case CL_R_COUNTER:
        rc = cl_threads(cl_counter, first, CL_COUNTER_THREADS);
        break;
    case CL_R_REAPER:
        rc = cl_reaper();
        break;
    }
    fflush(stderr);
    _exit(rc);
}

static pid_t cl_fork(cl_role role, int first, unsigned alarm_s)
{
    pid_t pid;

    fflush(stdout);
    fflush(stderr);
    pid = fork();
    if (pid == 0)
        cl_child(role, first, alarm_s);
    if (pid < 0) {
        printf("    fork: %s\n", strerror(errno));
        CL_ADD(&g_cl->failed, 1);
    }
    return pid;
}

static int cl_hold_cmp(const void *a, const void *b)
{
    const cl_hold *x = a, *y = b;
    return x->start_us < y->start_us ? -1 : x->start_us > y->start_us;
}

/* The restart, as a status: a failure must not leave children behind. */
static int cl_restart(const char *mode)
{
    return tu_run_script(g_script, g_srv->restart_cmd, g_dir, mode);
}
/* What the clients were doing when a child hung: the calls they are
 * in. */
static void cl_on_hang(void)
{
    int j;

    for (j = 0; j < CL_CLIENTS; j++) {
        int64_t since = CL_LD(&g_cl->c[j].in_call_since);
        if (since != 0)
            printf("    client %d (%s) has been in %s for %lld ms\n",
                   j, g_cl->c[j].role, g_cl->c[j].in_call,
                   (long long)(tu_now_ms() - since));
    }
}

/* Waits up to `ms` for every child; kills the ones still running then.
 * Returns the number that hung or failed, naming the calls they hung in. */
static int cl_reap_children(pid_t *pids, int n, int64_t ms)
{
    return tu_reap_children(pids, n, ms, cl_on_hang);
}
/* Prints a client's statuses: "OK 120, ECONNECT 4, ...". */
static void cl_print_statuses(const char *label, const int64_t *by_status)
{
    tu_print_statuses(label, 26, by_status, CL_NSTATUS);
}
/* Runs the clients across `restarts` restarts with `mode`, each followed
 * by `up_ms` (times 2 under a sanitizer, 8 under valgrind) of the server
 * up. */
static void cl_run(const char *mode, int restarts, int64_t up_ms,
                   const char *label)
{
    unsigned alarm_s;
    pid_t pids[2 + CL_COUNTER_PROCS + 1];
    int npids = 0, i, g, j, failed_restart = 0, hung;
    int64_t all[CL_NSTATUS], t, sum;
    cl_shared *sh;

    g_slow = tu_slowdown();
    up_ms *= g_slow > 4 ? 8 : g_slow > 1 ? 2 : 1;
    if (restarts > CL_GEN_MAX - 1)
        restarts = CL_GEN_MAX - 1;
    alarm_s = (unsigned)(120 * g_slow + restarts * 70);
    sh = g_cl = tu_shared_map(sizeof *sh);
    snprintf(g_cl_hold, sizeof g_cl_hold, "restart-%ld-%s-hold",
             (long)getpid(), label);
    snprintf(g_cl_manual, sizeof g_cl_manual, "restart-%ld-%s-manual",
             (long)getpid(), label);
    snprintf(g_cl_counter, sizeof g_cl_counter, "restart-%ld-%s-counter",
             (long)getpid(), label);
    snprintf(g_cl_orphan, sizeof g_cl_orphan, "restart-%ld-%s-orphan-",
             (long)getpid(), label);
    sh->c[CL_HOLDER].role = "holder (renew)";
    sh->c[CL_WAIT_LONG].role = "waiter (60 s waits)";
    sh->c[CL_WAIT_SHORT].role = "waiter (300 ms waits)";
    for (i = CL_COUNTER0; i < CL_REAP; i++)
        sh->c[i].role = "counter";
    sh->c[CL_REAP].role = "orphans + sqllock_reap";

    /* The holder first, so that the waiters find its lease held. */
    pids[npids++] = cl_fork(CL_R_HOLDER, 0, alarm_s);
    t = tu_now_ms();
    while (CL_LD(&sh->ready) < 1 && !CL_LD(&sh->failed) &&
           tu_now_ms() - t < 60000 * g_slow)
        tu_sleep_ms(5);
    if (CL_LD(&sh->ready) >= 1) {
        pids[npids++] = cl_fork(CL_R_WAITERS, 0, alarm_s);
        for (i = 0; i < CL_COUNTER_PROCS; i++)
            pids[npids++] = cl_fork(CL_R_COUNTER,
                                    CL_COUNTER0 + i * CL_COUNTER_THREADS,
                                    alarm_s);
        pids[npids++] = cl_fork(CL_R_REAPER, 0, alarm_s);
        while (CL_LD(&sh->ready) < CL_CLIENTS && !CL_LD(&sh->failed) &&
               tu_now_ms() - t < 60000 * g_slow)
            tu_sleep_ms(5);
    }
    if (CL_LD(&sh->ready) == CL_CLIENTS && !CL_LD(&sh->failed)) {
        tu_sleep_ms(g_slow > 1 ? 2000 : 600);
        for (g = 1; g <= restarts && !CL_LD(&sh->failed); g++) {
            int rc;
            sh->down_ms[g] = tu_now_ms();
            CL_ST(&sh->epoch, 2 * g - 1);
            rc = cl_restart(mode);
            sh->up_ms[g] = tu_now_ms();
            CL_ST(&sh->epoch, 2 * g);
            if (rc != 0) {
                printf("    restart %d (%s %s) failed: status %d\n", g,
                       g_srv->restart_cmd, mode, rc);
                failed_restart = 1;
                break;
            }
            tu_sleep_ms(up_ms);
        }
        restarts = g - 1;
    } else {
        restarts = 0;
    }
    t = tu_now_ms();
    CL_ST(&sh->stop, 1);
    hung = cl_reap_children(pids, npids, 60000 * (int64_t)g_slow);
    printf("    the clients ended %lld ms after the stop\n",
           (long long)(tu_now_ms() - t));

    /* What each client said, and the first thing that went wrong. */
    memset(all, 0, sizeof all);
    for (j = 0; j < CL_CLIENTS; j++) {
        char label2[64];
        for (i = 0; i < CL_NSTATUS; i++)
            all[i] += sh->c[j].by_status[i];
        snprintf(label2, sizeof label2, "%d %s:", j, sh->c[j].role);
        cl_print_statuses(label2, sh->c[j].by_status);
        if (sh->c[j].bad[0] != '\0')
            printf("    client %d (%s) FAILED: %s\n", j, sh->c[j].role,
                   sh->c[j].bad);
    }
    cl_print_statuses("all clients:", all);
    for (g = 1; g <= restarts; g++)
        printf("    restart %d: from %lld to %lld ms\n", g,
               (long long)(sh->down_ms[g] - sh->down_ms[1]),
               (long long)(sh->up_ms[g] - sh->down_ms[1]));
    for (i = 0; i < sh->w_nev && i < CL_EVENTS_MAX; i++)
        printf("    watched lease at %lld ms: %s (%s) %s\n",
               (long long)(sh->w_ev[i].t_ms - sh->down_ms[1]),
               sqllock_lease_state_name(sh->w_ev[i].state),
               sqllock_errname(sh->w_ev[i].status), sh->w_ev[i].msg);
    printf("    the holder saw its watched lease not held %d time(s)\n",
           sh->w_notheld);
    for (j = 0; j < CL_CLIENTS; j++)
        if (sh->c[j].first_econnect[0] != '\0')
            printf("    %d's first ECONNECT: %.150s\n", j,
                   sh->c[j].first_econnect);
    if (failed_restart)
        fail_msg("the restart command failed");
    if (CL_LD(&sh->ready) != CL_CLIENTS)
        fail_msg("only %d of %d clients got ready", CL_LD(&sh->ready),
                 CL_CLIENTS);
    if (hung > 0 || CL_LD(&sh->failed) > 0)
        fail_msg("%d child process(es) hung or failed, %d failure(s) "
                 "recorded (see above)", hung, CL_LD(&sh->failed));

    /* Per restart: how long it took, and when each kind of client worked
     * again after it. */
    for (g = 1; g <= restarts; g++) {
        int64_t worst = INT64_MIN, w_first = -1, w_held = -1;
        int worst_c = -1, n_unc = 0, last_state = -1;
        int64_t win_end = g < restarts ? sh->down_ms[g + 1] : t;

        for (j = 0; j < CL_CLIENTS; j++) {
            if (j == CL_WAIT_LONG)
                continue;    /* it may wait through a restart in one call */
            /* The restart cut every client's connection: the first call
             * on it, or any call while the server was down, said so. */
            if (sh->c[j].econnect[g] == 0 && !sh->c[j].retried)
                fail_msg("E1: client %d (%s) never heard ECONNECT from "
                         "restart %d, which cut its connection", j,
                         sh->c[j].role, g);
            if (!sh->c[j].resumed[g])
                fail_msg("E1: client %d (%s) did not reach the server again "
                         "after restart %d, before the next one", j,
                         sh->c[j].role, g);
            if (sh->c[j].resume_at[g] - sh->up_ms[g] > worst) {
                worst = sh->c[j].resume_at[g] - sh->up_ms[g];
                worst_c = j;
            }
        }
        for (i = 0; i < sh->w_nev && i < CL_EVENTS_MAX; i++) {
            const cl_event *e = &sh->w_ev[i];
            if (e->t_ms < sh->down_ms[g] || e->t_ms >= win_end)
                continue;
            if (e->state == SQLLOCK_STATE_UNCERTAIN) {
                n_unc++;
                if (w_first < 0)
                    w_first = e->t_ms - sh->down_ms[g];
            }
            if (e->state == SQLLOCK_STATE_HELD)
                w_held = e->t_ms - sh->up_ms[g];
            last_state = e->state;
        }
        if (n_unc == 0)
            fail_msg("L7: restart %d: the watched lease never went "
                     "UNCERTAIN, though the renewer's connection was cut",
                     g);
        if (last_state != SQLLOCK_STATE_HELD)
            fail_msg("L7: restart %d: the watched lease did not come back "
                     "to HELD (last change: %s)", g,
                     sqllock_lease_state_name(last_state));
        if (!sh->r_resumed[g])
            fail_msg("P1: restart %d: no reaper pass succeeded after it", g);
        if (sh->gen_tok_min[g] == 0)
            fail_msg("restart %d: the counter's lease was never granted "
                     "after it", g);
        if (sh->gen_tok_min[g] <= sh->gen_tok_max[g - 1])
            fail_msg("L5: restart %d: token %lld after it, %lld before", g,
                     (long long)sh->gen_tok_min[g],
                     (long long)sh->gen_tok_max[g - 1]);
        printf("    restart %d: %s %s took %lld ms; after it (times from "
               "the command's end; negative: the server was up before the "
               "command saw it) every client reached the server again "
               "within %lld ms (slowest: %s); watched lease UNCERTAIN %lld "
               "ms after the stop began (%d time(s)), HELD again at %lld "
               "ms; reaper passed at %lld ms; counter tokens %lld..%lld "
               "before, %lld..%lld after\n", g,
               g_srv->restart_cmd, mode,
               (long long)(sh->up_ms[g] - sh->down_ms[g]), (long long)worst,
               worst_c >= 0 ? sh->c[worst_c].role : "-", (long long)w_first,
               n_unc, (long long)w_held, (long long)sh->r_resume_ms[g],
               (long long)sh->gen_tok_min[g - 1],
               (long long)sh->gen_tok_max[g - 1],
               (long long)sh->gen_tok_min[g], (long long)sh->gen_tok_max[g]);
    }
    if (restarts < 1)
        fail_msg("no restart was done");

    /* (a) and (b): the watched lease was never lost, and passed on with a
     * larger token only after its holder let it go. */
    if (sh->w_bad[0] != '\0')
        fail_msg("L7: the watched lease changed for an unclear reason: %s",
                 sh->w_bad);
    for (i = 0; i < sh->w_nev && i < CL_EVENTS_MAX; i++)
        if (sh->w_ev[i].state == SQLLOCK_STATE_LOST)
            fail_msg("L7: the watched lease was LOST (%s)",
                     sqllock_errname(sh->w_ev[i].status));
    if (sh->w_notheld > 0)
        fail_msg("L6: the holder saw its watched lease not held %d "
                 "time(s)", sh->w_notheld);
    if (sh->hold_grants < 2)
        fail_msg("L9: no waiter got the lease after the holder released it");
    for (i = 1; i < sh->hold_grants; i++)
        if (sh->hold_tokens[i] <= sh->hold_tokens[i - 1])
            fail_msg("L5: the held lease's tokens went %lld then %lld",
                     (long long)sh->hold_tokens[i - 1],
                     (long long)sh->hold_tokens[i]);

    /* (c) exclusion: no overlap, tokens up, the counter exact. */
    if (sh->overlaps > 0 || sh->token_back > 0)
        fail_msg("L1/L5: %d overlapping grants, %d tokens that did not "
                 "increase", sh->overlaps, sh->token_back);
    if (sh->counter != sh->increments)
        fail_msg("L1: the counter is %lld after %lld increments",
                 (long long)sh->counter, (long long)sh->increments);
    j = sh->nholds < CL_HOLDS_MAX ? sh->nholds : CL_HOLDS_MAX;
    qsort(sh->holds, (size_t)j, sizeof sh->holds[0], cl_hold_cmp);
    for (i = 1; i < j; i++)
        if (sh->holds[i].start_us < sh->holds[i - 1].end_us)
            fail_msg("L1: holds overlap: client %d (token %lld) from %lld "
                     "us, while client %d (token %lld) held until %lld us",
                     sh->holds[i].who, (long long)sh->holds[i].token,
                     (long long)sh->holds[i].start_us, sh->holds[i - 1].who,
                     (long long)sh->holds[i - 1].token,
                     (long long)sh->holds[i - 1].end_us);
    for (i = 1; i < j; i++)
        if (sh->holds[i].token <= sh->holds[i - 1].token)
            fail_msg("L5: token %lld held after token %lld",
                     (long long)sh->holds[i].token,
                     (long long)sh->holds[i - 1].token);

    /* (d) the reapers. */
    if (sh->r_errors < restarts)
        fail_msg("P1: the reaper counted %lld failed passes over %d "
                 "restarts: each restart cut its connection",
                 (long long)sh->r_errors, restarts);
    if (sh->r_stop_ms > 2000 * g_slow)
        fail_msg("P3: the reaper took %lld ms to stop",
                 (long long)sh->r_stop_ms);
    if (sh->r_left != 0)
        fail_msg("P1: %lld expired orphans were left after the last pass",
                 (long long)sh->r_left);
    for (i = 0, sum = 0; i < CL_NSTATUS; i++)
        sum += sh->r_err_status[i];

    printf("    %d restarts (%s): counter %lld = %lld increments in %d holds "
           "(%lld skipped as no longer held), no overlap; held lease tokens "
           "%lld -> %lld; reaper %lld passes, %lld failed (ECONNECT seen %lld "
           "of %lld), %lld + %lld rows reaped of %lld orphans, stopped in "
           "%lld ms\n", restarts, mode, (long long)sh->counter,
           (long long)sh->increments, sh->nholds, (long long)sh->skipped,
           (long long)sh->hold_tokens[0],
           (long long)sh->hold_tokens[sh->hold_grants - 1],
           (long long)sh->r_passes, (long long)sh->r_errors,
           (long long)sh->r_err_status[SQLLOCK_ECONNECT], (long long)sum,
           (long long)sh->r_reaped, (long long)sh->r_oneshot_reaped,
           (long long)sh->r_orphans, (long long)sh->r_stop_ms);
    for (j = 0; j < CL_CLIENTS; j++)
        printf("    %-26s longest call %lld ms (%s)\n", sh->c[j].role,
               (long long)sh->c[j].longest_ms, sh->c[j].longest_what);
    munmap(sh, sizeof *sh);
    g_cl = NULL;
}

/*
 * Issue 7, fault 3 (E1, L1, L4, L5, L7, L9, P1, P3): the server is
 * restarted gracefully (PostgreSQL `pg_ctl restart -m fast`, MariaDB
 * SIGTERM) several times while clients hold, wait, count and reap.
 * Every client sees ECONNECT (and the watched lease UNCERTAIN) during an
 * outage, and only then; its next call reconnects; the watched lease
 * comes back to HELD and is never lost; no lease has two owners at any
 * instant, the counter ends exact, tokens keep increasing across the
 * restarts; the reaper resumes and stops promptly; nothing hangs.
 */
static void test_restart_E1_L1_L5_L7_P1_clients_across_restart(void **state)
{
    (void)state;
    cl_run(g_srv->graceful_arg, tu_slowdown() > 1 ? 2 : 4, 1200,
           "graceful");
}

/* The same across crashes (PostgreSQL immediate stop, mariadbd SIGKILL),
 * fewer of them: a crash may forget a release (L10), which only keeps a
 * counter's lease busy until its ttl. */
static void test_restart_E1_L1_L5_L10_clients_across_crash(void **state)
{
    (void)state;
    cl_run(g_srv->restart_arg[0] ? g_srv->restart_arg : "kill",
           tu_slowdown() > 4 ? 1 : 2, 2000,
           "crash");
}

static int group_setup(void **state)
{
    sqllock_db *db = NULL;
    int rc;

    (void)state;
    g_max_token = 0;
    rc = sqllock_open(g_srv->url, NULL, &db);
    if (rc == SQLLOCK_OK)
        rc = sqllock_init(db);
    if (rc != SQLLOCK_OK)
        fprintf(stderr, "restart: %s: %s: %s\n", g_srv->drv,
                sqllock_errname(rc), sqllock_errmsg(db));
    sqllock_close(db);
    return rc == SQLLOCK_OK ? 0 : -1;
}

int main(void)
{
    const struct CMUnitTest pg_tests[] = {
        cmocka_unit_test(test_restart_L10_granted_lease_survives_crash),
        cmocka_unit_test(test_restart_L10_async_release_never_two_holders),
        cmocka_unit_test(test_restart_L5_tokens_increase_across_restart),
        cmocka_unit_test(test_restart_L5_L10_fast_mode_beside_durable),
        cmocka_unit_test(test_restart_E1_L1_L5_L7_P1_clients_across_restart),
        cmocka_unit_test(test_restart_E1_L1_L5_L10_clients_across_crash),
    };
    const struct CMUnitTest my_tests[] = {
        cmocka_unit_test(test_restart_L10_granted_lease_survives_crash),
        cmocka_unit_test(test_restart_L5_tokens_increase_across_restart),
        cmocka_unit_test(test_restart_E1_L1_L5_L7_P1_clients_across_restart),
        cmocka_unit_test(test_restart_E1_L1_L5_L10_clients_across_crash),
    };
    server pg = { "postgres", NULL, "restart-pg", "immediate", "fast" };
    server my = { "mysql", NULL, "restart-my", "", "graceful" };
    int rc = 0;

    g_dir = getenv("SQLLOCK_TEST_SERVERS_DIR");
    g_script = getenv("SQLLOCK_TEST_SERVERS_SCRIPT");
    pg.url = getenv("SQLLOCK_TEST_PG_URL");
    my.url = getenv("SQLLOCK_TEST_MYSQL_URL");
    if (g_dir == NULL || *g_dir == '\0' || g_script == NULL ||
        *g_script == '\0' || strchr(g_dir, '\'') || strchr(g_script, '\''))
        return tu_unit_cannot_run("restart", "SQLLOCK_TEST_SERVERS_DIR and "
                                  "SQLLOCK_TEST_SERVERS_SCRIPT name no servers "
                                  "this test may crash (scripts/test.sh sets "
                                  "them when it starts its own)");
    /* Each driver runs, or says why not: a driver that did not run is
     * never a pass (it was: 0 when neither ran). */
    if (pg.url != NULL && *pg.url != '\0' &&
        sqllock_driver_find("postgres") != NULL) {
        g_srv = &pg;
        rc = tu_status_merge(rc, tu_unit_result("restart", "postgres",
                 cmocka_run_group_tests_name("restart [postgres]", pg_tests,
                                             group_setup, NULL)));
    } else {
        rc = tu_status_merge(rc, tu_unit_cannot_run("restart", "no postgres "
                 "server to restart (SQLLOCK_TEST_PG_URL, and the postgres "
                 "driver built)"));
    }
    if (my.url != NULL && *my.url != '\0' &&
        sqllock_driver_find("mysql") != NULL) {
        g_srv = &my;
        rc = tu_status_merge(rc, tu_unit_result("restart", "mysql",
                 cmocka_run_group_tests_name("restart [mysql]", my_tests,
                                             group_setup, NULL)));
    } else {
        rc = tu_status_merge(rc, tu_unit_cannot_run("restart", "no mysql "
                 "server to restart (SQLLOCK_TEST_MYSQL_URL, and the mysql "
                 "driver built)"));
    }
    return rc;
}
