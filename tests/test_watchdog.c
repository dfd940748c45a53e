/*
 * test_watchdog.c -- automatic renewal of held leases (DESIGN L6, L7, E3,
 * E4) on every database: a job that outlives its ttl many times keeps the
 * lock; a holder that is stopped past its ttl loses it to another process
 * and, when it resumes, reports LOST with an older fencing token; renewals
 * that fail go UNCERTAIN and recover; a renewal that hangs past the local
 * deadline is LOST; release stops renewal first; bad input is refused.
 *
 * Runs once per URL in SQLLOCK_TEST_URLS, or on a fresh temporary SQLite
 * file; SQLLOCK_TEST_REQUIRE as in test_conformance.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "test_util.h"
#include "test_run.h"
#include "test_spawn.h"

static const char *g_url;

/* What a watch callback saw, written from the renewer thread (or, in a
 * forked child, read by the parent through shared memory). */
typedef struct seen {
    _Atomic int calls;
    _Atomic int uncertain;     /* changes to UNCERTAIN */
    _Atomic int held;          /* changes back to HELD */
    _Atomic int lost;          /* changes to LOST */
    _Atomic int lost_taken;    /* ... with SQLLOCK_LOST: a renewal found
                                  the row taken or removed */
    _Atomic int lost_late;     /* ... with SQLLOCK_TIMEOUT: the local
                                  deadline passed first (a starved
                                  renewer, rightly told, L6) */
    _Atomic int last_state;
    _Atomic int last_status;
    _Atomic int bad_state;     /* the callback's `state` disagreed with
                                  sqllock_lease_state() */
    int unwatch_on_change;     /* the callback unwatches its lease */
    char first_msg[256];       /* the first change's message (read only
                                  to explain a failure) */
} seen;

static void on_change(void *ctx, sqllock_lease *l, int state, int status,
                      const char *msg)
{
    seen *s = ctx;

    if (atomic_fetch_add(&s->calls, 1) == 0)
        snprintf(s->first_msg, sizeof s->first_msg, "%s: %s",
                 sqllock_errname(status), msg ? msg : "(null)");
    if (state == SQLLOCK_STATE_UNCERTAIN)
        atomic_fetch_add(&s->uncertain, 1);
    else if (state == SQLLOCK_STATE_HELD)
        atomic_fetch_add(&s->held, 1);
    else if (state == SQLLOCK_STATE_LOST) {
        atomic_fetch_add(&s->lost, 1);
        atomic_fetch_add(status == SQLLOCK_TIMEOUT ? &s->lost_late
                                                   : &s->lost_taken, 1);
    }
    /* The state is written before the callback runs; LOST and HELD are
     * final for that moment; UNCERTAIN may already read LOST if the local
     * deadline passed meanwhile. */
    if (state != SQLLOCK_STATE_UNCERTAIN && sqllock_lease_state(l) != state)
        atomic_fetch_add(&s->bad_state, 1);
    atomic_store(&s->last_state, state);
    atomic_store(&s->last_status, status);
    /* Allowed from the callback: stops renewal without waiting for the
     * callback itself. */
    if (s->unwatch_on_change && state != SQLLOCK_STATE_UNCERTAIN)
        sqllock_lease_unwatch(l);
}

static sqllock_db *open_db(int64_t busy_ms)
{
    sqllock_options o = SQLLOCK_OPTIONS_INIT;
    sqllock_db *db = NULL;

    o.busy_timeout_ms = busy_ms;
    if (sqllock_open(g_url, &o, &db) != SQLLOCK_OK)
        fail_msg("open %s: %s", g_url, sqllock_errmsg(db));
    return db;
}

static void unique_name(char *buf, size_t size, const char *what)
{
    snprintf(buf, size, "watchdog-%s-%ld-%lld", what, (long)getpid(),
             (long long)tu_now_ms());
}

static sqllock_lease *take(sqllock_db *db, const char *name, int64_t ttl_ms)
{
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_lease *l = NULL;

    o.ttl_ms = ttl_ms;
    /* Every lease taken here is watched: the renewer connects first, so
     * that its connect (a second and more for PostgreSQL's SCRAM under
     * valgrind on a loaded host) does not spend the short ttls used here. */
    EXPECT_RC(db, sqllock_watch_prepare(db), SQLLOCK_OK, "watch prepare");
    EXPECT_RC(db, sqllock_lease_new(db, name, &o, &l), SQLLOCK_OK, "new");
    EXPECT_RC(db, sqllock_lease_acquire(l, 10000), SQLLOCK_OK, "acquire");
    return l;
}

static void watch(sqllock_lease *l, sqllock_db *db, int64_t interval_ms,
                  seen *s)
{
    sqllock_watch_options w = SQLLOCK_WATCH_OPTIONS_INIT;

    w.interval_ms = interval_ms;
    w.callback = s != NULL ? on_change : NULL;
    w.ctx = s;
    EXPECT_RC(db, sqllock_lease_watch(l, &w), SQLLOCK_OK, "watch");
}

/* Waits up to ms for *v to reach at least `want`. */
static int wait_for(_Atomic int *v, int want, int64_t ms)
{
    TU_WAIT_WHILE(atomic_load(v) < want, tu_now_ms() + ms, 5);
    return atomic_load(v) >= want;
}

/* The other process of the 5x case: once *go, tries the lease every
 * 20 ms for 5 ttls, counting its tries, grants and failures. */
typedef struct tryer {
    const char *name;
    int64_t ttl;
    int *got_it, *tries, *fail, *go;
} tryer;

static int try_all_along(void *arg, int i)
{
    const tryer *t = arg;
    sqllock_db *cdb = tu_child_open(g_url, "contender");
    sqllock_lease *cl = NULL;
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    int64_t stop, end;
    int rc;

    (void)i;
    o.ttl_ms = t->ttl;
    if (cdb == NULL || sqllock_lease_new(cdb, t->name, &o, &cl) != 0)
        return 2;
    stop = tu_now_ms() + 30000;
    TU_WAIT_WHILE(__atomic_load_n(t->go, __ATOMIC_SEQ_CST) == 0, stop, 1);
    end = tu_now_ms() + 5 * t->ttl;
    while (tu_now_ms() < end - 100) {
        rc = sqllock_lease_try_acquire(cl);
        (*t->tries)++;
        if (rc == SQLLOCK_OK) {
            (*t->got_it)++;
            sqllock_lease_release(cl);
        } else if (rc != SQLLOCK_BUSY && rc != SQLLOCK_EDBBUSY) {
            fprintf(stderr, "contender: %s: %s\n", sqllock_errname(rc),
                    sqllock_errmsg(cdb));
            (*t->fail)++;
        }
        tu_sleep_ms(20);
    }
    sqllock_lease_free(cl);
    sqllock_close(cdb);
    return 0;
}

/*
 * L7: a job that runs for 5x its ttl under automatic renewal keeps the
 * lock the whole time -- the holder's state stays HELD and another
 * process, trying all along, never gets it -- and releases it cleanly.
 */
static void test_watch_L7_job_runs_5x_ttl(void **state)
{
    /* The ttl grows with the machine's slowdown (at most 4 s): at a load
     * of 4 per core a 1 s lease's renewal once answered after its local
     * deadline -- the library said so (TIMEOUT), rightly, but the case is
     * a holder that keeps its lease, not a starved one. */
    int slow = tu_slowdown();
    const int64_t ttl = 1000 * (slow < 4 ? slow : 4);
    sqllock_db *db;
    sqllock_lease *l;
    seen s;
    char name[128];
    int *got_it, *tries, *fail, *go;
    tryer t;
    pid_t pid;
    int64_t end;
    int not_held = 0;
    (void)state;

    memset(&s, 0, sizeof s);
    unique_name(name, sizeof name, "5x");
    got_it = tu_shared_map(4 * sizeof(int));
    tries = got_it + 1;
    fail = got_it + 2;
    go = got_it + 3;
    t.name = name;
    t.ttl = ttl;
    t.got_it = got_it;
    t.tries = tries;
    t.fail = fail;
    t.go = go;
    /* Fork before this process opens anything or starts the renewer: a
     * child would inherit database state (and memory only the renewer
     * thread's stack refers to) that valgrind reports as lost in it. */
    pid = tu_fork(try_all_along, &t);
    db = open_db(0);
    l = take(db, name, ttl);
    watch(l, db, 0, &s);
    end = tu_now_ms() + 5 * ttl;
    __atomic_store_n(go, 1, __ATOMIC_SEQ_CST);
    /* The job: checks every 10 ms that it may still act as the holder. */
    while (tu_now_ms() < end) {
        if (sqllock_lease_state(l) != SQLLOCK_STATE_HELD ||
            !sqllock_lease_held(l))
            not_held++;
        tu_sleep_ms(10);
    }
    assert_int_equal(tu_wait(pid), 0);
    if (not_held != 0)
        fail_msg("L7: the renewed job lost its lease (%d checks found it "
                 "not held; %d callbacks, the first: %s); the other process "
                 "then acquired it %d times", not_held,
                 atomic_load(&s.calls), s.first_msg, *got_it);
    if (*got_it != 0)
        fail_msg("L7 broken: another process acquired the lock %d times "
                 "while the renewed job held it", *got_it);
    assert_true(*tries > 10);
    assert_int_equal(*fail, 0);
    assert_int_equal(not_held, 0);
    assert_int_equal(atomic_load(&s.calls), 0);
    EXPECT_RC(db, sqllock_lease_release(l), SQLLOCK_OK, "release after 5x");
    assert_int_equal(sqllock_lease_state(l), SQLLOCK_STATE_NOT_HELD);
    munmap(got_it, 4 * sizeof(int));
    sqllock_lease_free(l);
    sqllock_close(db);
}

/* Shared between the stopped holder and the test. */
typedef struct stop_shared {
    int64_t token;             /* the first holder's token */
    int ready;                 /* it holds the lease and watches it */
    seen s;                    /* its callback's record */
    int state_after;           /* its sqllock_lease_state() on resuming */
    int held_after;
    int release_rc;            /* its release after resuming */
    int exit_why;
} stop_shared;

typedef struct stop_arg {
    const char *name;
    int64_t ttl;
    stop_shared *sh;
} stop_arg;

/* The holder that is stopped: takes and watches the lease, says so, and
 * once resumed (ready 2) records what its lease says. */
static int stopped_holder(void *arg, int i)
{
    const stop_arg *a = arg;
    stop_shared *sh = a->sh;
    sqllock_db *cdb = tu_child_open(g_url, "stopped holder");
    sqllock_lease *cl = NULL;
    sqllock_watch_options w = SQLLOCK_WATCH_OPTIONS_INIT;
    sqllock_lease_options co = SQLLOCK_LEASE_OPTIONS_INIT;
    int64_t end;

    (void)i;
    co.ttl_ms = a->ttl;
    w.callback = on_change;
    w.ctx = &sh->s;
    if (cdb == NULL || sqllock_watch_prepare(cdb) != 0 ||
        sqllock_lease_new(cdb, a->name, &co, &cl) != 0 ||
        sqllock_lease_acquire(cl, 10000) != 0 ||
        sqllock_lease_watch(cl, &w) != 0) {
        fprintf(stderr, "stopped holder: %s\n",
                cdb ? sqllock_errmsg(cdb) : "cannot open");
        return 2;
    }
    sh->token = sqllock_lease_token(cl);
    __atomic_store_n(&sh->ready, 1, __ATOMIC_SEQ_CST);
    /* Stopped somewhere in here; on resuming, the lease must read
     * LOST without waiting for anything. */
    while (__atomic_load_n(&sh->ready, __ATOMIC_SEQ_CST) != 2)
        tu_sleep_ms(1);
    sh->state_after = sqllock_lease_state(cl);
    sh->held_after = sqllock_lease_held(cl);
    end = tu_now_ms() + 5000;
    TU_WAIT_WHILE(atomic_load(&sh->s.lost) == 0, end, 5);
    sh->release_rc = sqllock_lease_release(cl);
    sqllock_lease_free(cl);
    sqllock_close(cdb);
    return 0;
}

/*
 * L6/L7/L5: a holder stopped (SIGSTOP, renewer thread and all) past its
 * ttl loses the lease to another process; when it resumes it reports
 * LOST at once, its callback says LOST, its release says LOST, and its
 * fencing token is smaller than the new holder's.
 */
static void test_watch_L6_L7_stopped_holder_loses(void **state)
{
    const int64_t ttl = 1000;
    sqllock_db *db;
    sqllock_lease *l = NULL;
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    stop_shared *sh;
    stop_arg a;
    char name[128];
    pid_t pid;
    (void)state;

    unique_name(name, sizeof name, "stop");
    sh = tu_shared_map(sizeof *sh);
    a.name = name;
    a.ttl = ttl;
    a.sh = sh;
    pid = tu_fork(stopped_holder, &a);
    TU_WAIT_WHILE(__atomic_load_n(&sh->ready, __ATOMIC_SEQ_CST) != 1,
                  tu_now_ms() + 10000, 5);
    assert_int_equal(sh->ready, 1);
    db = open_db(0);
    assert_int_equal(kill(pid, SIGSTOP), 0);
    o.ttl_ms = 60000;
    EXPECT_RC(db, sqllock_lease_new(db, name, &o, &l), SQLLOCK_OK, "new");
    /* While the holder is stopped its lease expires by the server's clock
     * and this acquire, waiting for it, takes it over. */
    EXPECT_RC(db, sqllock_lease_acquire(l, 3 * ttl + 5000), SQLLOCK_OK,
              "take over from the stopped holder");
    __atomic_store_n(&sh->ready, 2, __ATOMIC_SEQ_CST);
    assert_int_equal(kill(pid, SIGCONT), 0);
    assert_int_equal(tu_wait(pid), 0);
    assert_int_equal(sh->state_after, SQLLOCK_STATE_LOST);
    assert_int_equal(sh->held_after, 0);
    if (atomic_load(&sh->s.lost) != 1)
        fail_msg("L7: the resumed holder's callback reported LOST %d times",
                 atomic_load(&sh->s.lost));
    assert_int_equal(atomic_load(&sh->s.bad_state), 0);
    assert_int_equal(sh->release_rc, SQLLOCK_LOST);
    if (!(sh->token < sqllock_lease_token(l)))
        fail_msg("L5: the stopped holder's token %lld is not smaller than "
                 "the new holder's %lld", (long long)sh->token,
                 (long long)sqllock_lease_token(l));
    EXPECT_RC(db, sqllock_lease_release(l), SQLLOCK_OK, "new holder release");
    munmap(sh, sizeof *sh);
    sqllock_lease_free(l);
    sqllock_close(db);
}

/*
 * L7/L4: another owner takes the row (here: the row is deleted and
 * acquired anew behind the holder's back, as a reaper plus a new holder
 * would): the renewer's next renewal finds it gone, the lease is LOST at
 * once with status SQLLOCK_LOST, and the new owner's row is untouched.
 */
static void test_watch_L7_takeover_is_lost(void **state)
{
    sqllock_db *db = open_db(0), *other = open_db(0);
    sqllock_lease *l, *l2 = NULL;
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    const tu_sql *sql = tu_sql_for(sqllock_db_driver(db));
    sqllock_value arg;
    char name[128];
    seen s;
    tu_row row;
    (void)state;

    memset(&s, 0, sizeof s);
    s.unwatch_on_change = 1;
    unique_name(name, sizeof name, "takeover");
    l = take(db, name, 3000);
    watch(l, db, 100, &s);
    arg = sqllock__text(name);
    EXPECT_RC(other, sqllock__exec_sql(other, sql->delete_lease, &arg, 1,
                                       NULL, NULL, NULL), SQLLOCK_OK,
              "delete behind the holder's back");
    o.ttl_ms = 60000;
    EXPECT_RC(other, sqllock_lease_new(other, name, &o, &l2), SQLLOCK_OK,
              "new");
    EXPECT_RC(other, sqllock_lease_try_acquire(l2), SQLLOCK_OK, "take");
    if (!wait_for(&s.lost, 1, 2000))
        fail_msg("L7: the renewer did not report the takeover as LOST");
    assert_int_equal(atomic_load(&s.last_status), SQLLOCK_LOST);
    assert_int_equal(atomic_load(&s.uncertain), 0);
    assert_int_equal(sqllock_lease_state(l), SQLLOCK_STATE_LOST);
    assert_int_equal(sqllock_lease_held(l), 0);
    assert_int_equal(sqllock_lease_remaining_ms(l), 0);
    /* Nothing more is reported for this hold. */
    tu_sleep_ms(300);
    assert_int_equal(atomic_load(&s.calls), 1);
    assert_int_equal(tu_find(other, name, &row), SQLLOCK_OK);
    assert_true(row.found);
    assert_string_equal(row.owner, sqllock_lease_owner(l2));
    EXPECT_RC(db, sqllock_lease_release(l), SQLLOCK_LOST, "release (L4)");
    EXPECT_RC(other, sqllock_lease_release(l2), SQLLOCK_OK, "release");
    sqllock_lease_free(l2);
    sqllock_lease_free(l);
    sqllock_close(other);
    sqllock_close(db);
}

/*
 * Blocks the renewer's UPDATE of `name` with a transaction on `blocker`
 * that locks the row (SQLite: the database's write lock).
 */
static void block_row(sqllock_db *blocker, const char *name)
{
    const char *drv = sqllock_db_driver(blocker);
    sqllock_value arg = sqllock__text(name);
    const char *sql;

    EXPECT_RC(blocker, sqllock__begin(blocker, "blocking the renewer"),
              SQLLOCK_OK, "begin");
    if (strcmp(drv, "postgres") == 0)
        sql = "SELECT name FROM sqllock_lease WHERE name = $1 FOR UPDATE";
    else if (strcmp(drv, "mysql") == 0)
        sql = "SELECT name FROM sqllock_lease WHERE name = ? FOR UPDATE";
    else
        sql = "UPDATE sqllock_lease SET holder = holder WHERE name = ?";
    EXPECT_RC(blocker, sqllock__exec_sql(blocker, sql, &arg, 1, NULL, NULL,
                                         NULL), SQLLOCK_OK, "lock the row");
}

/* Kills the connection of the session waiting for `blocker`'s row lock
 * (the renewer's); returns how many were killed. SQLite has none: its
 * renewer gives up after its busy timeout by itself. */
static int64_t kill_blocked(sqllock_db *blocker, sqllock_db *admin)
{
    const char *drv = sqllock_db_driver(blocker);
    int64_t n = 0, id = 0, end = tu_now_ms() + 5000;
    int has = 0;
    char sql[64];

    while (n == 0 && tu_now_ms() < end) {
        if (strcmp(drv, "postgres") == 0) {
            EXPECT_RC(blocker, sqllock__exec_sql(blocker,
                "SELECT count(pg_catalog.pg_terminate_backend(pid)) FROM "
                "pg_stat_activity WHERE pid <> pg_catalog.pg_backend_pid() AND "
                "pg_catalog.pg_blocking_pids(pid) @> ARRAY[pg_catalog.pg_backend_pid()]",
                NULL, 0, &has, &n, NULL), SQLLOCK_OK, "terminate");
        } else if (strcmp(drv, "mysql") == 0) {
            has = 0;
            EXPECT_RC(admin, sqllock__exec_sql(admin,
                "SELECT id FROM information_schema.PROCESSLIST "
                "WHERE id <> CONNECTION_ID() AND db = DATABASE() "
                "AND info LIKE 'UPDATE sqllock_lease%' LIMIT 1",
                NULL, 0, &has, &id, NULL), SQLLOCK_OK, "find renewer");
            if (has) {
                snprintf(sql, sizeof sql, "KILL %lld", (long long)id);
                EXPECT_RC(admin, sqllock__exec_sql(admin, sql, NULL, 0,
                                                   NULL, NULL, NULL),
                          SQLLOCK_OK, "kill");
                n = 1;
            }
        } else {
            return 0;
        }
        if (n == 0)
            tu_sleep_ms(10);
    }
    return n;
}

/*
 * L7: renewals that fail for a transient reason (the renewer's connection
 * killed on PostgreSQL and MySQL; the database locked past the busy
 * timeout on SQLite) make the lease UNCERTAIN -- still ours until the
 * local deadline -- and the next successful renewal makes it HELD again;
 * the callback reports both changes, and the lease was never lost.
 */
static void test_watch_L7_uncertain_then_held(void **state)
{
    sqllock_db *db = open_db(200), *blocker = open_db(0), *admin = open_db(0);
    sqllock_lease *l;
    char name[128];
    seen s;
    (void)state;

    memset(&s, 0, sizeof s);
    s.unwatch_on_change = 1;
    unique_name(name, sizeof name, "uncertain");
    l = take(db, name, 6000);
    watch(l, db, 500, &s);
    block_row(blocker, name);
    if (strcmp(sqllock_db_driver(db), "sqlite") != 0)
        assert_int_equal(kill_blocked(blocker, admin), 1);
    if (!wait_for(&s.uncertain, 1, 4000))
        fail_msg("L7: a failing renewal did not make the lease UNCERTAIN");
    assert_int_equal(atomic_load(&s.lost), 0);
    assert_true(sqllock_lease_held(l));
    sqllock__rollback(blocker);
    if (!wait_for(&s.held, 1, 3000))
        fail_msg("L7: the lease did not return to HELD after a renewal "
                 "succeeded again");
    assert_int_equal(atomic_load(&s.lost), 0);
    assert_int_equal(atomic_load(&s.bad_state), 0);
    assert_int_equal(sqllock_lease_state(l), SQLLOCK_STATE_HELD);
    /* The callback unwatched the lease on HELD: nothing more comes. */
    tu_sleep_ms(1200);
    assert_int_equal(atomic_load(&s.calls), 2);
    EXPECT_RC(db, sqllock_lease_release(l), SQLLOCK_OK, "release");
    sqllock_lease_free(l);
    sqllock_close(admin);
    sqllock_close(blocker);
    sqllock_close(db);
}

/*
 * L6/L7: a renewal that hangs (the row stays locked by another
 * transaction) does not keep the lease alive in the holder's eyes: once
 * the local deadline passes, sqllock_lease_state() says LOST even while the
 * renewer is still stuck, and when the renewal finally answers the
 * callback reports LOST (SQLLOCK_TIMEOUT), not HELD.
 */
static void test_watch_L6_hung_renewal_is_lost(void **state)
{
    const int64_t ttl = 1500;
    sqllock_db *db = open_db(10000), *blocker = open_db(0);
    sqllock_lease *l;
    char name[128];
    seen s;
    int64_t end;
    (void)state;

    memset(&s, 0, sizeof s);
    unique_name(name, sizeof name, "hung");
    l = take(db, name, ttl);
    watch(l, db, 300, &s);
    block_row(blocker, name);
    end = tu_now_ms() + 3 * ttl;
    TU_WAIT_WHILE(sqllock_lease_state(l) != SQLLOCK_STATE_LOST, end, 5);
    assert_int_equal(sqllock_lease_state(l), SQLLOCK_STATE_LOST);
    assert_int_equal(sqllock_lease_held(l), 0);
    assert_int_equal(atomic_load(&s.held), 0);
    sqllock__rollback(blocker);
    if (!wait_for(&s.lost, 1, 12000))
        fail_msg("L7: the hung renewal never reported LOST");
    assert_int_equal(atomic_load(&s.last_status), SQLLOCK_TIMEOUT);
    assert_int_equal(atomic_load(&s.held), 0);
    assert_int_equal(sqllock_lease_state(l), SQLLOCK_STATE_LOST);
    /* The row was still ours: releasing it works and admits no one
     * else's loss. */
    EXPECT_RC(db, sqllock_lease_release(l), SQLLOCK_OK, "release");
    sqllock_lease_free(l);
    sqllock_close(blocker);
    sqllock_close(db);
}

/*
 * L7: stopping renewal does not wait for a renewal that hangs: unwatch
 * (and so release and free) returns at once, and when the hung statement
 * finally returns the renewer drops the lease without touching it or
 * calling back.
 */
static void test_watch_L7_unwatch_does_not_wait_for_hung_renewal(void **state)
{
    sqllock_db *db = open_db(10000), *blocker = open_db(0);
    sqllock_lease *l;
    char name[128];
    seen s;
    int64_t t0, took;
    (void)state;

    memset(&s, 0, sizeof s);
    unique_name(name, sizeof name, "unwatch-hung");
    l = take(db, name, 6000);
    watch(l, db, 200, &s);
    block_row(blocker, name);
    tu_sleep_ms(700);                   /* the renewer is stuck by now */
    t0 = tu_now_ms();
    EXPECT_RC(db, sqllock_lease_unwatch(l), SQLLOCK_OK, "unwatch");
    took = tu_now_ms() - t0;
    sqllock__rollback(blocker);
    if (took > 1000)
        fail_msg("L7: unwatch waited %lld ms for a hung renewal",
                 (long long)took);
    tu_sleep_ms(400);                   /* the hung renewal has returned */
    assert_int_equal(atomic_load(&s.calls), 0);
    assert_int_equal(sqllock_lease_state(l), SQLLOCK_STATE_HELD);
    EXPECT_RC(db, sqllock_lease_release(l), SQLLOCK_OK, "release");
    sqllock_lease_free(l);
    sqllock_close(blocker);
    sqllock_close(db);
}

/*
 * L7: release stops renewal first. A lease renewed every few ms and
 * released at random moments is never found taken or removed by its
 * renewer (LOST with SQLLOCK_LOST: a renewal that raced the release),
 * every release succeeds, and no row is left behind (a renewer racing a
 * release must not resurrect or touch it). On a loaded machine the
 * renewer may be starved past the 2 s ttl: that lease is reported LOST
 * with SQLLOCK_TIMEOUT (L6, the library doing right), counted and said
 * apart; its release still succeeds (no one else took the row).
 */
static void test_watch_L7_release_stops_renewal(void **state)
{
    sqllock_db *db = open_db(0);
    sqllock_lease *l;
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    char name[128];
    seen s;
    tu_row row;
    int i;
    (void)state;

    memset(&s, 0, sizeof s);
    unique_name(name, sizeof name, "release");
    o.ttl_ms = 2000;
    /* The renewer connects before the first lease is watched, as take()
     * does: its connect (PostgreSQL's SCRAM under valgrind on a loaded
     * host took more than the 2 s ttl) must not spend the first lease's
     * ttl, which would report it lost (L6, rightly) at the first watch. */
    EXPECT_RC(db, sqllock_watch_prepare(db), SQLLOCK_OK, "watch prepare");
    EXPECT_RC(db, sqllock_lease_new(db, name, &o, &l), SQLLOCK_OK, "new");
    for (i = 0; i < 40; i++) {
        EXPECT_RC(db, sqllock_lease_acquire(l, 5000), SQLLOCK_OK, "acquire");
        watch(l, db, 5, &s);
        tu_sleep_us((long)(rand() % 20000));
        EXPECT_RC(db, sqllock_lease_release(l), SQLLOCK_OK, "release");
        assert_int_equal(tu_find(db, name, &row), SQLLOCK_OK);
        assert_false(row.found);
    }
    if (atomic_load(&s.lost_taken) != 0)
        fail_msg("a renewal racing a release reported the lease taken or "
                 "removed %d times: %s", atomic_load(&s.lost_taken),
                 s.first_msg);
    assert_int_equal(atomic_load(&s.bad_state), 0);
    /* Free while watched: the same, through free. */
    EXPECT_RC(db, sqllock_lease_acquire(l, 5000), SQLLOCK_OK, "acquire");
    watch(l, db, 5, &s);
    tu_sleep_ms(20);
    sqllock_lease_free(l);
    if (atomic_load(&s.lost_taken) != 0)
        fail_msg("freeing a watched lease: reported taken or removed: %s",
                 s.first_msg);
    if (atomic_load(&s.lost_late) != 0)
        printf("    the renewer was starved past the 2 s ttl %d times; "
               "each was reported LOST (SQLLOCK_TIMEOUT) as L6 wants, and "
               "released cleanly\n", atomic_load(&s.lost_late));
    sqllock_close(db);
}

/*
 * L7/E3: one renewer serves many leases of a handle, each on its own
 * schedule, for several ttls; freeing watched leases and closing the
 * handle stops it (no hang, no leak under valgrind).
 */
static void test_watch_L7_many_leases_one_renewer(void **state)
{
    enum { N = 12 };
    sqllock_db *db = open_db(0), *other = open_db(0);
    sqllock_lease *l[N];
    sqllock_lease *probe = NULL;
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    char name[N][128];
    seen s;
    int i, k, rc;
    (void)state;

    memset(&s, 0, sizeof s);
    for (i = 0; i < N; i++) {
        char what[16];
        snprintf(what, sizeof what, "many%d", i);
        unique_name(name[i], sizeof name[i], what);
        /* Short leases, so that each is renewed several times below;
         * scaled, as the harness's other bounds are, so that a loaded
         * machine or valgrind does not make a renewal late by itself. */
        l[i] = take(db, name[i], tu_scaled_ms(600 + 100 * i));
        watch(l[i], db, 0, &s);
    }
    o.ttl_ms = 1000;
    for (k = 0; k < 30; k++) {
        tu_sleep_ms(100);
        for (i = 0; i < N; i++)
            if (sqllock_lease_state(l[i]) != SQLLOCK_STATE_HELD)
                fail_msg("L7: lease %d is %s after %d ms (first "
                         "callback: %s)", i, sqllock_lease_state_name(
                             sqllock_lease_state(l[i])), (k + 1) * 100,
                         s.first_msg);
        /* And nobody else can take any of them. */
        i = k % N;
        EXPECT_RC(other, sqllock_lease_new(other, name[i], &o, &probe),
                  SQLLOCK_OK, "new");
        rc = sqllock_lease_try_acquire(probe);
        if (rc != SQLLOCK_BUSY && rc != SQLLOCK_EDBBUSY)
            fail_msg("L7: another handle got %s on watched lease %d",
                     sqllock_errname(rc), i);
        sqllock_lease_free(probe);
    }
    assert_int_equal(atomic_load(&s.calls), 0);
    for (i = 0; i < N / 2; i++) {
        EXPECT_RC(db, sqllock_lease_release(l[i]), SQLLOCK_OK, "release");
        sqllock_lease_free(l[i]);
    }
    /* Unwatch some, watch one again, and free them all while the renewer
     * may be renewing them: free stops renewal first (no use after free
     * under the sanitizers); closing the handle then stops the renewer. */
    for (i = N / 2; i < N - 1; i++)
        EXPECT_RC(db, sqllock_lease_unwatch(l[i]), SQLLOCK_OK, "unwatch");
    EXPECT_RC(db, sqllock_lease_unwatch(l[N - 1]), SQLLOCK_OK, "unwatch");
    watch(l[N - 1], db, 0, &s);
    for (i = N / 2; i < N; i++)
        sqllock_lease_free(l[i]);
    sqllock_close(db);
    sqllock_close(other);
}

#define BATCH_N 20

/* BATCH_N leases of `ttl` on `db`, each watched every `interval` ms with
 * its own callback record; they are due together, so the renewer sends
 * their renewals in one batch (LEASE_RENEW_MANY). */
static void take_batch(sqllock_db *db, const char *what, int64_t ttl,
                       int64_t interval, sqllock_lease **l, seen *s)
{
    char name[128];
    int i;

    memset(s, 0, sizeof *s * BATCH_N);
    for (i = 0; i < BATCH_N; i++) {
        char part[64];
        snprintf(part, sizeof part, "%s-%d", what, i);
        unique_name(name, sizeof name, part);
        l[i] = take(db, name, ttl);
    }
    for (i = 0; i < BATCH_N; i++)
        watch(l[i], db, interval, &s[i]);
}

/*
 * L11 (L7 batched): one lease of a batch taken over behind its
 * holder's back is reported LOST (SQLLOCK_LOST) alone; the others of the
 * same batch are renewed by it and stay HELD with no callback at all,
 * well past the point where their acquire alone would have run out, and
 * each is still its holder's row (release OK).
 */
static void test_watch_L11_batch_one_lost_others_held(void **state)
{
    const int64_t ttl = 3000;
    const int victim = 7;
    sqllock_db *db = open_db(0), *other = open_db(0);
    sqllock_lease *l[BATCH_N], *l2 = NULL;
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    const tu_sql *sql = tu_sql_for(sqllock_db_driver(db));
    sqllock_value arg;
    seen s[BATCH_N];
    int64_t t0;
    int i;
    (void)state;

    t0 = tu_now_ms();
    take_batch(db, "batchlost", ttl, 1000, l, s);
    arg = sqllock__text(sqllock_lease_name(l[victim]));
    EXPECT_RC(other, sqllock__exec_sql(other, sql->delete_lease, &arg, 1,
                                       NULL, NULL, NULL), SQLLOCK_OK,
              "delete behind the holder's back");
    o.ttl_ms = 60000;
    EXPECT_RC(other, sqllock_lease_new(other, sqllock_lease_name(l[victim]),
                                       &o, &l2), SQLLOCK_OK, "new");
    EXPECT_RC(other, sqllock_lease_try_acquire(l2), SQLLOCK_OK, "take");
    if (!wait_for(&s[victim].lost, 1, tu_scaled_ms(3000)))
        fail_msg("L7: the renewer did not report the taken lease LOST");
    assert_int_equal(atomic_load(&s[victim].last_status), SQLLOCK_LOST);
    assert_int_equal(atomic_load(&s[victim].uncertain), 0);
    assert_int_equal(sqllock_lease_state(l[victim]), SQLLOCK_STATE_LOST);
    /* Past the local deadline their acquire gave (ttl - margin = 2.7 s)
     * the others are held only if renewals went on for them. */
    while (tu_now_ms() < t0 + 4000)
        tu_sleep_ms(20);
    for (i = 0; i < BATCH_N; i++) {
        if (i == victim)
            continue;
        if (atomic_load(&s[i].calls) != 0)
            fail_msg("L7: lease %d of the batch was reported %s (%s) "
                     "because another one was lost", i,
                     sqllock_lease_state_name(atomic_load(&s[i].last_state)),
                     s[i].first_msg);
        assert_int_equal(sqllock_lease_state(l[i]), SQLLOCK_STATE_HELD);
    }
    assert_int_equal(atomic_load(&s[victim].calls), 1);
    for (i = 0; i < BATCH_N; i++) {
        EXPECT_RC(db, sqllock_lease_release(l[i]),
                  i == victim ? SQLLOCK_LOST : SQLLOCK_OK, "release");
        sqllock_lease_free(l[i]);
    }
    EXPECT_RC(other, sqllock_lease_release(l2), SQLLOCK_OK, "release");
    sqllock_lease_free(l2);
    sqllock_close(other);
    sqllock_close(db);
}

/*
 * L11 (L7 batched), issue 26 item 8: the same lease (name, owner, token)
 * watched twice in one process -- its handle and a handle attached to it
 * (sqllock_lease_attach(), as a supervisor does for a lease it took
 * elsewhere) -- is renewed by the one renewer in one batch, and both
 * stay HELD through two batches, with no callback. (A batch that carried the
 * row twice renewed it once and read the second as not renewed: LOST.)
 */
static void test_watch_L11_same_lease_watched_twice(void **state)
{
    const int64_t ttl = tu_scaled_ms(1500);
    sqllock_db *db = open_db(0);
    sqllock_lease *l, *twin = NULL;
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    char name[96];
    seen s[2];
    int64_t t0, last[2];
    int i, moved[2] = {0, 0};
    (void)state;

    memset(s, 0, sizeof s);
    snprintf(name, sizeof name, "wd-%ld-twice", (long)getpid());
    l = take(db, name, ttl);
    o.ttl_ms = ttl;
    EXPECT_RC(db, sqllock_lease_attach(db, name, sqllock_lease_owner(l),
                                       sqllock_lease_token(l), &o, &twin),
              SQLLOCK_OK, "attach");
    /* An attached handle's local deadline is unknown until it renews. */
    EXPECT_RC(db, sqllock_lease_renew(twin), SQLLOCK_OK, "renew the twin");
    t0 = tu_now_ms();
    last[0] = sqllock_lease_deadline_us(l);
    last[1] = sqllock_lease_deadline_us(twin);
    watch(l, db, ttl / 10, &s[0]);
    watch(twin, db, ttl / 10, &s[1]);
    /* Until each handle's local deadline has moved twice (two batches
     * renewed both: the first that carried the row twice already read
     * the second as LOST), or 3 ttls. */
    while (tu_now_ms() < t0 + 3 * ttl && (moved[0] < 2 || moved[1] < 2) &&
           atomic_load(&s[0].calls) == 0 && atomic_load(&s[1].calls) == 0) {
        tu_sleep_ms(10);
        for (i = 0; i < 2; i++) {
            int64_t d = sqllock_lease_deadline_us(i == 0 ? l : twin);
            if (d != last[i]) {
                last[i] = d;
                moved[i]++;
            }
        }
    }
    for (i = 0; i < 2; i++) {
        if (atomic_load(&s[i].calls) != 0)
            fail_msg("L11: the %s of a lease watched twice was reported %s "
                     "(%s)", i == 0 ? "handle" : "attached handle",
                     sqllock_lease_state_name(atomic_load(&s[i].last_state)),
                     s[i].first_msg);
    }
    for (i = 0; i < 2; i++) {
        if (moved[i] < 2)
            fail_msg("L11: the %s of a lease watched twice was renewed %d "
                     "times in 3 ttls", i == 0 ? "handle" : "attached handle",
                     moved[i]);
    }
    assert_int_equal(sqllock_lease_state(l), SQLLOCK_STATE_HELD);
    assert_int_equal(sqllock_lease_state(twin), SQLLOCK_STATE_HELD);
    EXPECT_RC(db, sqllock_lease_unwatch(twin), SQLLOCK_OK, "unwatch twin");
    EXPECT_RC(db, sqllock_lease_release(l), SQLLOCK_OK, "release");
    sqllock_lease_free(twin);
    sqllock_lease_free(l);
    sqllock_close(db);
}

/*
 * L11 (L7 batched), renewal cut by a lost connection: a batch whose statement
 * waits on one of its rows (locked by another transaction) and whose
 * connection is then killed (SQLite: the busy timeout runs out) leaves
 * EVERY lease of the batch as a single renewal's ECONNECT leaves one:
 * UNCERTAIN, still held until its local deadline, none LOST; once the
 * row is free, the next batch makes every one HELD again.
 */
static void test_watch_L11_batch_cut_by_lost_connection(void **state)
{
    sqllock_db *db = open_db(200), *blocker = open_db(0), *admin = open_db(0);
    sqllock_lease *l[BATCH_N];
    seen s[BATCH_N];
    int i;
    (void)state;

    take_batch(db, "batchcut", 6000, 500, l, s);
    block_row(blocker, sqllock_lease_name(l[BATCH_N / 2]));
    if (strcmp(sqllock_db_driver(db), "sqlite") != 0)
        assert_int_equal(kill_blocked(blocker, admin), 1);
    for (i = 0; i < BATCH_N; i++)
        if (!wait_for(&s[i].uncertain, 1, tu_scaled_ms(4000)))
            fail_msg("L7: lease %d of the cut batch did not become "
                     "UNCERTAIN (calls %d: %s)", i,
                     atomic_load(&s[i].calls), s[i].first_msg);
    for (i = 0; i < BATCH_N; i++) {
        assert_int_equal(atomic_load(&s[i].lost), 0);
        assert_true(sqllock_lease_held(l[i]));
    }
    sqllock__rollback(blocker);
    for (i = 0; i < BATCH_N; i++)
        if (!wait_for(&s[i].held, 1, tu_scaled_ms(3000)))
            fail_msg("L7: lease %d did not return to HELD after the batch "
                     "succeeded again", i);
    for (i = 0; i < BATCH_N; i++) {
        assert_int_equal(atomic_load(&s[i].lost), 0);
        assert_int_equal(atomic_load(&s[i].bad_state), 0);
        assert_int_equal(sqllock_lease_state(l[i]), SQLLOCK_STATE_HELD);
    }
    for (i = 0; i < BATCH_N; i++) {
        EXPECT_RC(db, sqllock_lease_release(l[i]), SQLLOCK_OK, "release");
        sqllock_lease_free(l[i]);
    }
    sqllock_close(admin);
    sqllock_close(blocker);
    sqllock_close(db);
}

/* E2/L7: bad input to the watch API gets a clear status and message. */
static void test_watch_bad_input(void **state)
{
    sqllock_db *db = open_db(0);
    sqllock_lease *l = NULL;
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_watch_options w = SQLLOCK_WATCH_OPTIONS_INIT;
    char name[128];
    (void)state;

    assert_int_equal(sqllock_lease_watch(NULL, NULL), SQLLOCK_EINVAL);
    assert_int_equal(sqllock_lease_unwatch(NULL), SQLLOCK_EINVAL);
    assert_int_equal(sqllock_watch_prepare(NULL), SQLLOCK_EINVAL);
    assert_int_equal(sqllock_lease_state(NULL), SQLLOCK_STATE_NOT_HELD);
    assert_string_equal(sqllock_lease_state_name(SQLLOCK_STATE_UNCERTAIN),
                        "uncertain");
    assert_string_equal(sqllock_lease_state_name(99), "?");
    unique_name(name, sizeof name, "bad");
    o.ttl_ms = 3000;
    EXPECT_RC(db, sqllock_lease_new(db, name, &o, &l), SQLLOCK_OK, "new");
    assert_int_equal(sqllock_lease_state(l), SQLLOCK_STATE_NOT_HELD);
    EXPECT_RC(db, sqllock_lease_watch(l, NULL), SQLLOCK_ENOTHELD,
              "watch before acquire");
    expect_msg_any(db, "watch before acquire", "does not hold");
    EXPECT_RC(db, sqllock_lease_unwatch(l), SQLLOCK_OK, "unwatch unwatched");
    EXPECT_RC(db, sqllock_lease_acquire(l, 5000), SQLLOCK_OK, "acquire");
    w.interval_ms = -1;
    EXPECT_RC(db, sqllock_lease_watch(l, &w), SQLLOCK_EINVAL, "negative");
    expect_msg_any(db, "negative interval", "negative");
    w.interval_ms = 2700;       /* ttl 3000 - margin 300 */
    EXPECT_RC(db, sqllock_lease_watch(l, &w), SQLLOCK_EINVAL, "too long");
    expect_msg_any(db, "interval too long", "shorter than the ttl");
    w.interval_ms = 0;
    w.retry_ms = -5;
    EXPECT_RC(db, sqllock_lease_watch(l, &w), SQLLOCK_EINVAL, "retry");
    w.retry_ms = 0;
    EXPECT_RC(db, sqllock_lease_watch(l, &w), SQLLOCK_OK, "watch");
    EXPECT_RC(db, sqllock_lease_watch(l, &w), SQLLOCK_EINVAL, "twice");
    expect_msg_any(db, "watched twice", "already watched");
    EXPECT_RC(db, sqllock_lease_unwatch(l), SQLLOCK_OK, "unwatch");
    EXPECT_RC(db, sqllock_lease_watch(l, &w), SQLLOCK_OK, "watch again");
    EXPECT_RC(db, sqllock_lease_release(l), SQLLOCK_OK, "release");
    EXPECT_RC(db, sqllock_lease_watch(l, &w), SQLLOCK_ENOTHELD,
              "watch after release");
    sqllock_lease_free(l);
    sqllock_close(db);
}


int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_watch_bad_input),
        cmocka_unit_test(test_watch_L7_job_runs_5x_ttl),
        cmocka_unit_test(test_watch_L6_L7_stopped_holder_loses),
        cmocka_unit_test(test_watch_L7_takeover_is_lost),
        cmocka_unit_test(test_watch_L7_uncertain_then_held),
        cmocka_unit_test(test_watch_L6_hung_renewal_is_lost),
        cmocka_unit_test(test_watch_L7_unwatch_does_not_wait_for_hung_renewal),
        cmocka_unit_test(test_watch_L7_release_stops_renewal),
        cmocka_unit_test(test_watch_L7_many_leases_one_renewer),
        cmocka_unit_test(test_watch_L11_batch_one_lost_others_held),
        cmocka_unit_test(test_watch_L11_batch_cut_by_lost_connection),
        cmocka_unit_test(test_watch_L11_same_lease_watched_twice),
    };
    return TU_RUN_PER_URL("watchdog", &g_url, tests, tu_group_schema, NULL);
}
