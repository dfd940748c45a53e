/*
 * test_wakeup.c -- waiting for a lease (DESIGN L9) on every database: a
 * release wakes a waiter at once instead of at its next poll -- through a
 * condition variable for waiters in the same process (all databases), and
 * through LISTEN/NOTIFY across processes (PostgreSQL) and through the
 * holder's companion session lock (MySQL/MariaDB: woken by a release and
 * by the holder's death, falling back to backoff without a spin when the
 * holder lost its companion, none for a NO_WAKEUP lease); on SQLite
 * waiters in other processes still get the lock by polling; a waiter on
 * PostgreSQL survives losing its listening connection; waiting stays
 * mutually exclusive.
 *
 * A wake-up is told from a poll by giving the waiters a backoff of 20 s:
 * a poll lands within the 2 s allowed after a release by chance only
 * about one time in ten, so three handoffs in a row within 2 s are not
 * luck. (These are functional checks of the wake-up, not speed figures:
 * those are in bench/bench_handoff.c.)
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
#include <stdatomic.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "test_util.h"
#include "test_run.h"
#include "test_spawn.h"

#define SLOW_POLL_MS 20000      /* the waiters' backoff, min and max */
#define WAKE_WITHIN_MS 2000     /* a handoff slower than this was a poll */
#define ROUNDS 3

static const char *g_url;

static int is_postgres(void)
{
    return strcmp(tu_url_driver(g_url), "postgres") == 0;
}

/* The server wakes waiters in other processes: NOTIFY on PostgreSQL, the
 * companion session lock on MySQL/MariaDB. */
static int pushes(void)
{
    return is_postgres() || strcmp(tu_url_driver(g_url), "mysql") == 0;
}

static sqllock_lease *new_lease(sqllock_db *db, const char *name,
                                int64_t backoff_ms, unsigned flags)
{
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_lease *l = NULL;

    o.ttl_ms = 60000;
    o.backoff_min_ms = backoff_ms;
    o.backoff_max_ms = backoff_ms;
    o.flags = flags;
    EXPECT_RC(db, sqllock_lease_new(db, name, &o, &l), SQLLOCK_OK, "new");
    return l;
}

/* Shared between the holder and a waiter (thread or process). */
typedef struct handoff {
    char name[160];
    unsigned flags;
    int64_t backoff_ms;
    _Atomic int holder_round;     /* the holder holds for this round */
    _Atomic int waiting;          /* the waiter has started its round */
    _Atomic int got;              /* rounds the waiter acquired */
    _Atomic int64_t released_at;  /* ms, when the holder's release began */
    _Atomic int64_t acquired_at;  /* ms, when the waiter's acquire returned */
    _Atomic int rc;               /* the waiter's failure, if any */
    _Atomic int in_lock;          /* overlap detector */
    _Atomic int overlaps;
} handoff;

/* The waiter: ROUNDS times, wait for the lock, note when it came, hold it
 * briefly and let it go. */
static int waiter_rounds(handoff *h)
{
    sqllock_db *db = NULL;
    sqllock_lease *l = NULL;
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    int i, rc = 0;

    if (sqllock_open(g_url, NULL, &db) != SQLLOCK_OK)
        return SQLLOCK_ECONNECT;
    o.ttl_ms = 60000;
    o.backoff_min_ms = h->backoff_ms;
    o.backoff_max_ms = h->backoff_ms;
    o.flags = h->flags;
    rc = sqllock_lease_new(db, h->name, &o, &l);
    for (i = 0; rc == SQLLOCK_OK && i < ROUNDS; i++) {
        int64_t end = tu_now_ms() + 60000;
        TU_WAIT_WHILE(atomic_load(&h->holder_round) < i + 1, end, 1);
        atomic_store(&h->waiting, i + 1);
        rc = sqllock_lease_acquire(l, 60000);
        if (rc != SQLLOCK_OK)
            break;
        atomic_store(&h->acquired_at, tu_now_ms());
        if (atomic_fetch_add(&h->in_lock, 1) != 0)
            atomic_fetch_add(&h->overlaps, 1);
        atomic_fetch_add(&h->got, 1);
        tu_sleep_ms(5);
        atomic_fetch_sub(&h->in_lock, 1);
        rc = sqllock_lease_release(l);
    }
    if (rc != SQLLOCK_OK)
        fprintf(stderr, "waiter: %s: %s\n", sqllock_errname(rc),
                sqllock_errmsg(db));
    atomic_store(&h->rc, rc);
    sqllock_lease_free(l);
    sqllock_close(db);
    return rc;
}

static void *waiter_thread(void *p)
{
    waiter_rounds(p);
    return NULL;
}

/* The holder's side of ROUNDS handoffs: take the lock before the waiter
 * asks, let the waiter settle into its wait, release, and check how soon
 * the waiter had it. Returns the slowest handoff in ms. */
static int64_t holder_rounds(handoff *h, int64_t settle_ms)
{
    sqllock_db *db = tu_open_or_fail(g_url);
    sqllock_lease *l = new_lease(db, h->name, 5, 0);
    int64_t slowest = 0, end, took;
    int i;

    for (i = 0; i < ROUNDS; i++) {
        /* Wait for the waiter to finish the previous round, then take
         * the lock before it starts the next. */
        end = tu_now_ms() + 30000;
        TU_WAIT_WHILE(atomic_load(&h->got) < i, end, 1);
        assert_int_equal(atomic_load(&h->got), i);
        EXPECT_RC(db, sqllock_lease_acquire(l, 30000), SQLLOCK_OK,
                  "holder acquire");
        if (atomic_fetch_add(&h->in_lock, 1) != 0)
            atomic_fetch_add(&h->overlaps, 1);
        atomic_store(&h->holder_round, i + 1);
        TU_WAIT_WHILE(atomic_load(&h->waiting) < i + 1, end, 1);
        tu_sleep_ms(settle_ms);          /* the waiter is asleep by now */
        atomic_fetch_sub(&h->in_lock, 1);
        atomic_store(&h->released_at, tu_now_ms());
        EXPECT_RC(db, sqllock_lease_release(l), SQLLOCK_OK, "release");
        end = tu_now_ms() + SLOW_POLL_MS + 30000;
        TU_WAIT_WHILE(atomic_load(&h->got) < i + 1 &&
                      atomic_load(&h->rc) == 0, end, 1);
        assert_int_equal(atomic_load(&h->rc), SQLLOCK_OK);
        assert_int_equal(atomic_load(&h->got), i + 1);
        took = atomic_load(&h->acquired_at) - atomic_load(&h->released_at);
        if (took > slowest)
            slowest = took;
    }
    sqllock_lease_free(l);
    sqllock_close(db);
    return slowest;
}

/*
 * L9: in one process, a release wakes a waiting acquire of the same lock
 * on another handle at once (condition variable), on every database --
 * three handoffs each well inside the waiter's 20 s backoff.
 */
static void test_wakeup_L9_same_process(void **state)
{
    handoff *h = calloc(1, sizeof *h);
    pthread_t th;
    int64_t slowest;
    (void)state;

    assert_non_null(h);
    snprintf(h->name, sizeof h->name, "wakeup-thread-%ld", (long)getpid());
    h->backoff_ms = SLOW_POLL_MS;
    assert_int_equal(pthread_create(&th, NULL, waiter_thread, h), 0);
    slowest = holder_rounds(h, 300);
    pthread_join(th, NULL);
    assert_int_equal(atomic_load(&h->overlaps), 0);
    if (slowest > WAKE_WITHIN_MS)
        fail_msg("L9: a release in this process took %lld ms to wake a "
                 "waiter whose backoff is %d ms: it was not woken",
                 (long long)slowest, SLOW_POLL_MS);
    free(h);
}

/*
 * L9 across processes. PostgreSQL: the release's NOTIFY wakes the waiter
 * in another process at once, even for a name with quotes and non-ASCII
 * characters (the channel is a hash); MySQL/MariaDB: the holder's
 * release lets go of the companion session lock the waiter is blocked
 * on. SQLite has no push from the server: the waiter in another process
 * gets the lock by polling, and the handoffs are checked only for coming
 * at all and never overlapping.
 */
static int waiter_process(void *arg, int i)
{
    (void)i;
    return waiter_rounds(arg) == SQLLOCK_OK ? 0 : 1;
}

static void test_wakeup_L9_other_process(void **state)
{
    handoff *h = tu_shared_map(sizeof *h);
    int64_t slowest;
    pid_t pid;
    (void)state;

    snprintf(h->name, sizeof h->name, "wakeup \"proc\" \xc3\xbc %ld",
             (long)getpid());
    h->backoff_ms = pushes() ? SLOW_POLL_MS : 50;
    pid = tu_fork(waiter_process, h);
    slowest = holder_rounds(h, 300);
    assert_int_equal(tu_wait(pid), 0);
    assert_int_equal(atomic_load(&h->overlaps), 0);
    if (pushes() && slowest > WAKE_WITHIN_MS)
        fail_msg("L9: a release took %lld ms to wake a waiter in another "
                 "process (backoff %d ms): NOTIFY (PostgreSQL) or the "
                 "companion lock (MySQL) did not wake it",
                 (long long)slowest, SLOW_POLL_MS);
    munmap(h, sizeof *h);
}

/*
 * L9: SQLLOCK_LEASE_NO_WAKEUP turns wake-ups off; the waiter still gets
 * the lock by polling (here with a short backoff).
 */
static void test_wakeup_L9_no_wakeup_still_polls(void **state)
{
    handoff *h = calloc(1, sizeof *h);
    pthread_t th;
    (void)state;

    assert_non_null(h);
    snprintf(h->name, sizeof h->name, "wakeup-poll-%ld", (long)getpid());
    h->backoff_ms = 30;
    h->flags = SQLLOCK_LEASE_NO_WAKEUP;
    assert_int_equal(pthread_create(&th, NULL, waiter_thread, h), 0);
    holder_rounds(h, 100);
    pthread_join(th, NULL);
    assert_int_equal(atomic_load(&h->overlaps), 0);
    assert_int_equal(atomic_load(&h->got), ROUNDS);
    free(h);
}

/* The waiter for the connection-loss test: one acquire, reported. */
typedef struct lone {
    char name[160];
    char url[1024];
    _Atomic int rc;
    _Atomic int done;
    _Atomic int64_t at;
} lone;

static void *lone_waiter(void *p)
{
    lone *w = p;
    sqllock_db *db = NULL;
    sqllock_lease *l = NULL;
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    int rc;

    o.ttl_ms = 60000;
    o.backoff_min_ms = SLOW_POLL_MS;
    o.backoff_max_ms = SLOW_POLL_MS;
    rc = sqllock_open(w->url, NULL, &db);
    if (rc == SQLLOCK_OK)
        rc = sqllock_lease_new(db, w->name, &o, &l);
    if (rc == SQLLOCK_OK)
        rc = sqllock_lease_acquire(l, 60000);
    atomic_store(&w->at, tu_now_ms());
    if (rc == SQLLOCK_OK)
        rc = sqllock_lease_release(l);
    atomic_store(&w->rc, rc);
    atomic_store(&w->done, 1);
    sqllock_lease_free(l);
    sqllock_close(db);
    return NULL;
}

/*
 * L9 on PostgreSQL: notifications are lost with a connection. A waiter
 * whose listening connection is killed while it sleeps reconnects at its
 * next try and listens again -- here at once, since the failed wait ends
 * its sleep -- so the next release still wakes it quickly. (On the other
 * databases there is no listening connection; the same kill during a try
 * ends the wait with SQLLOCK_ECONNECT, which test_netbad covers.)
 */
static void test_wakeup_L9_pg_listener_killed(void **state)
{
    sqllock_db *db = tu_open_or_fail(g_url), *admin = tu_open_or_fail(g_url);
    sqllock_lease *l;
    lone w;
    pthread_t th;
    int64_t killed = 0, has = 0, end, released;
    int got_row = 0;
    (void)state;

    memset(&w, 0, sizeof w);
    snprintf(w.name, sizeof w.name, "wakeup-kill-%ld", (long)getpid());
    snprintf(w.url, sizeof w.url, "%s%capplication_name=sqllock-test-waiter",
             g_url, strchr(g_url, '?') ? '&' : '?');
    l = new_lease(db, w.name, 5, 0);
    EXPECT_RC(db, sqllock_lease_acquire(l, 10000), SQLLOCK_OK, "acquire");
    assert_int_equal(pthread_create(&th, NULL, lone_waiter, &w), 0);
    /* Find the waiter's connection by its application name in this
     * database (tests of other units may run on the server meanwhile),
     * and kill it while it waits. */
    end = tu_now_ms() + 10000;
    while (killed == 0 && tu_now_ms() < end) {
        EXPECT_RC(admin, sqllock__exec_sql(admin,
            "SELECT count(pg_catalog.pg_terminate_backend(pid)) FROM pg_stat_activity "
            "WHERE application_name = 'sqllock-test-waiter' AND state = 'idle' "
            "AND datname = current_database() "
            "AND state_change < pg_catalog.now() - interval '200 ms'", NULL, 0, &got_row,
            &killed, NULL), SQLLOCK_OK, "kill the listener");
        if (killed == 0)
            tu_sleep_ms(10);
    }
    assert_int_equal(killed, 1);
    /* It reconnects, tries, LISTENs again, tries again and sleeps: wait
     * until its new connection has been idle for a while. */
    end = tu_now_ms() + 5000;
    do {
        tu_sleep_ms(50);
        EXPECT_RC(admin, sqllock__exec_sql(admin,
            "SELECT count(*) FROM pg_stat_activity WHERE "
            "application_name = 'sqllock-test-waiter' AND state = 'idle' "
            "AND datname = current_database() "
            "AND state_change < pg_catalog.now() - interval '300 ms'", NULL, 0,
            &got_row, &has, NULL), SQLLOCK_OK, "waiting again?");
    } while (has == 0 && tu_now_ms() < end);
    if (has != 1)
        fail_msg("the waiter did not reconnect and wait again (done %d, %s)",
                 atomic_load(&w.done), sqllock_errname(atomic_load(&w.rc)));
    assert_int_equal(atomic_load(&w.done), 0);
    released = tu_now_ms();
    EXPECT_RC(db, sqllock_lease_release(l), SQLLOCK_OK, "release");
    pthread_join(th, NULL);
    assert_int_equal(atomic_load(&w.rc), SQLLOCK_OK);
    if (atomic_load(&w.at) - released > WAKE_WITHIN_MS)
        fail_msg("L9: after losing its connection the waiter took %lld ms "
                 "to notice a release", (long long)(w.at - released));
    sqllock_lease_free(l);
    sqllock_close(admin);
    sqllock_close(db);
}

/*
 * L9 on PostgreSQL: a release notifies the name's channel exactly when it
 * deleted the lease and the lease takes part in wake-ups -- not for a
 * SQLLOCK_LEASE_NO_WAKEUP lease, and not for a release that found the
 * lease lost.
 */
static void test_wakeup_L9_pg_notify_only_when_wanted(void **state)
{
    sqllock_db *db = tu_open_or_fail(g_url), *admin = tu_open_or_fail(g_url);
    sqllock_lease *plain, *quiet;
    char name[128], channel[SQLLOCK__CHANNEL_MAX];
    sqllock_value arg;
    int woke = 0;
    (void)state;

    snprintf(name, sizeof name, "wakeup-notify-%ld", (long)getpid());
    sqllock__wake_channel(name, channel);
    assert_int_equal(sqllock__listen(admin, channel, 1), SQLLOCK_OK);
    plain = new_lease(db, name, 5, 0);
    quiet = new_lease(db, name, 5, SQLLOCK_LEASE_NO_WAKEUP);

    EXPECT_RC(db, sqllock_lease_acquire(quiet, 5000), SQLLOCK_OK, "acquire");
    EXPECT_RC(db, sqllock_lease_release(quiet), SQLLOCK_OK, "release");
    assert_int_equal(sqllock__wait_notify(admin, sqllock__now_us() + 300000,
                                           &woke), SQLLOCK_OK);
    assert_int_equal(woke, 0);

    EXPECT_RC(db, sqllock_lease_acquire(plain, 5000), SQLLOCK_OK, "acquire");
    arg = sqllock__text(name);
    EXPECT_RC(db, sqllock__exec_sql(db, "DELETE FROM sqllock_lease WHERE "
                                    "name = $1", &arg, 1, NULL, NULL, NULL),
              SQLLOCK_OK, "delete behind the holder's back");
    EXPECT_RC(db, sqllock_lease_release(plain), SQLLOCK_LOST, "lost release");
    assert_int_equal(sqllock__wait_notify(admin, sqllock__now_us() + 300000,
                                           &woke), SQLLOCK_OK);
    assert_int_equal(woke, 0);

    EXPECT_RC(db, sqllock_lease_acquire(plain, 5000), SQLLOCK_OK, "acquire");
    EXPECT_RC(db, sqllock_lease_release(plain), SQLLOCK_OK, "release");
    assert_int_equal(sqllock__wait_notify(admin, sqllock__now_us() + 5000000,
                                           &woke), SQLLOCK_OK);
    if (!woke)
        fail_msg("L9: a release did not notify the name's channel");

    sqllock__listen(admin, channel, 0);
    sqllock_lease_free(quiet);
    sqllock_lease_free(plain);
    sqllock_close(admin);
    sqllock_close(db);
}

/*
 * L9/L1: many waiters in several processes and threads on one name with
 * wake-ups on: every one of them gets the lock in turn, never two at once.
 */
enum { MANY_PROCS = 4, MANY_ITERS = 10 };

typedef struct many {
    char name[128];
    _Atomic int in_lock;
    _Atomic int overlaps;
    _Atomic int entries;
    _Atomic int failures;
} many;

/* One of the processes: MANY_ITERS turns inside, each counted. */
static int many_waiter(void *arg, int i)
{
    many *m = arg;
    sqllock_db *db = tu_child_open(g_url, "many waiters");
    sqllock_lease *l = NULL;
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    int k, rc;

    (void)i;
    o.ttl_ms = 60000;
    if (db == NULL || sqllock_lease_new(db, m->name, &o, &l) != 0)
        return 2;
    for (k = 0; k < MANY_ITERS; k++) {
        rc = sqllock_lease_acquire(l, 60000);
        if (rc != SQLLOCK_OK) {
            fprintf(stderr, "many: %s\n", sqllock_errmsg(db));
            atomic_fetch_add(&m->failures, 1);
            break;
        }
        if (atomic_fetch_add(&m->in_lock, 1) != 0)
            atomic_fetch_add(&m->overlaps, 1);
        tu_sleep_ms(2);
        atomic_fetch_add(&m->entries, 1);
        atomic_fetch_sub(&m->in_lock, 1);
        if (sqllock_lease_release(l) != SQLLOCK_OK)
            atomic_fetch_add(&m->failures, 1);
    }
    sqllock_lease_free(l);
    sqllock_close(db);
    return 0;
}

static void test_wakeup_L9_many_waiters_exclusive(void **state)
{
    enum { PROCS = MANY_PROCS, ITERS = MANY_ITERS };
    many *m = tu_shared_map(sizeof *m);
    pid_t pids[PROCS];
    (void)state;

    snprintf(m->name, sizeof m->name, "wakeup-many-%ld", (long)getpid());
    tu_fork_n(pids, PROCS, many_waiter, m);
    assert_int_equal(tu_wait_all(pids, PROCS), 0);
    assert_int_equal(atomic_load(&m->failures), 0);
    assert_int_equal(atomic_load(&m->overlaps), 0);
    assert_int_equal(atomic_load(&m->entries), PROCS * ITERS);
    munmap(m, sizeof *m);
}

/*
 * L9: full jitter must differ between processes even when they were
 * forked from one parent that had already drawn jitter of its own (the
 * generator reseeds in a new process); otherwise such children would back
 * off in lockstep.
 */
enum { JITTER_DRAWS = 8 };

/* Child k: JITTER_DRAWS draws into seq[k * JITTER_DRAWS ...]. */
static int draw_jitter(void *arg, int k)
{
    int64_t *seq = arg;
    int i;

    for (i = 0; i < JITTER_DRAWS; i++)
        seq[k * JITTER_DRAWS + i] = sqllock__rand_upto(INT64_C(1) << 40);
    return 0;
}

static void test_wakeup_L9_jitter_differs_after_fork(void **state)
{
    enum { KIDS = 2, DRAWS = JITTER_DRAWS };
    int64_t *seq = tu_shared_map(sizeof(int64_t) * KIDS * DRAWS);
    pid_t pid[KIDS];
    int i, same = 1;
    (void)state;

    (void)sqllock__rand_upto(1000000);      /* the parent is seeded */
    tu_fork_n(pid, KIDS, draw_jitter, seq);
    assert_int_equal(tu_wait_all(pid, KIDS), 0);
    for (i = 0; i < DRAWS; i++)
        if (seq[i] != seq[DRAWS + i])
            same = 0;
    munmap(seq, sizeof(int64_t) * KIDS * DRAWS);
    if (same)
        fail_msg("L9: two forked children drew the same jitter sequence");
}

static void test_wakeup_bad_flags(void **state)
{
    sqllock_db *db = tu_open_or_fail(g_url);
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_lease *l = NULL;
    (void)state;

    o.ttl_ms = 1000;
    o.flags = 0x80;
    EXPECT_RC(db, sqllock_lease_new(db, "wakeup-flags", &o, &l),
              SQLLOCK_EINVAL, "unknown flag");
    expect_msg_any(db, "unknown flag", "flags");
    assert_null(l);
    /* A version-1 options struct has no flags field: it is not read. */
    o.struct_version = 1;
    EXPECT_RC(db, sqllock_lease_new(db, "wakeup-flags", &o, &l), SQLLOCK_OK,
              "version 1 options");
    sqllock_lease_free(l);
    sqllock_close(db);
}

/* ------------------------------------------------------------------ */
/* MySQL/MariaDB: wake-ups through the companion session lock          */
/* ------------------------------------------------------------------ */

/* What a waiter's pauses were (sqllock__on_backoff), for one lock name;
 * in memory shared with the process that reads it. */
typedef struct pauses {
    char name[160];
    _Atomic int n;                /* pauses */
    _Atomic int on_lock;          /* of which blocked on the companion */
    _Atomic int64_t first_at;     /* ms, the first pause began */
    _Atomic int64_t first_ms;     /* how long the first was to last */
    _Atomic int64_t last_at;      /* ms, the latest pause began */
    _Atomic int64_t at[8];        /* ms, when each of the first 8 began */
} pauses;

static pauses *g_pauses;

static void count_pause(const char *name, int64_t sleep_ms, int listening)
{
    pauses *p = g_pauses;
    int i;

    if (p == NULL || strcmp(name, p->name) != 0)
        return;
    /* One waiter per record: the times are stored before the count, so
     * that a reader that sees the count sees them too. */
    i = atomic_load(&p->n);
    if (i == 0) {
        atomic_store(&p->first_at, tu_now_ms());
        atomic_store(&p->first_ms, sleep_ms);
    }
    if (i < 8)
        atomic_store(&p->at[i], tu_now_ms());
    atomic_store(&p->last_at, tu_now_ms());
    if (listening)
        atomic_fetch_add(&p->on_lock, 1);
    atomic_fetch_add(&p->n, 1);
}

/* The companion lock of `name` is held by some session (1) or not (0),
 * asked on `db`: the same name the driver derives (drivers/mysql/my_sql.c). */
static int companion_held(sqllock_db *db, const char *name)
{
    sqllock_value v = sqllock__text(name);
    int64_t held = -1;
    int has_row = 0;

    EXPECT_RC(db, sqllock__exec_sql(db, "SELECT IS_USED_LOCK(CONCAT("
                                    "'sqllock_', LEFT(SHA2(CONCAT("
                                    "DATABASE(), '/', CAST(? AS BINARY)), "
                                    "256), 40))) IS NOT NULL", &v, 1,
                                    &has_row, &held, NULL),
              SQLLOCK_OK, "IS_USED_LOCK");
    assert_true(has_row);
    return held == 1;
}

/* A waiter of the MySQL cases, in a process of its own: its pauses
 * counted in `p`, backoff `backoff_ms` (min = max), an acquire waiting
 * `wait_ms`, the time it returned in *got_at (when not NULL), then the
 * release. Exit 0, or 1 after saying why. */
typedef struct my_waiter_arg {
    pauses *p;
    int64_t backoff_ms, wait_ms;
    _Atomic int64_t *got_at;
} my_waiter_arg;

static int my_waiter(void *arg, int i)
{
    const my_waiter_arg *a = arg;
    sqllock_db *cdb = tu_child_open(g_url, "waiter");
    sqllock_lease *cl = NULL;
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    int rc;

    (void)i;
    if (cdb == NULL)
        return 2;
    g_pauses = a->p;
    atomic_store(&sqllock__on_backoff, count_pause);
    o.ttl_ms = 60000;
    o.backoff_min_ms = a->backoff_ms;
    o.backoff_max_ms = a->backoff_ms;
    rc = sqllock_lease_new(cdb, a->p->name, &o, &cl);
    if (rc == SQLLOCK_OK)
        rc = sqllock_lease_acquire(cl, a->wait_ms);
    if (a->got_at != NULL)
        atomic_store(a->got_at, tu_now_ms());
    if (rc == SQLLOCK_OK)
        rc = sqllock_lease_release(cl);
    if (rc != SQLLOCK_OK)
        fprintf(stderr, "waiter: %s: %s\n", sqllock_errname(rc),
                sqllock_errmsg(cdb));
    sqllock_lease_free(cl);
    sqllock_close(cdb);
    return rc == SQLLOCK_OK ? 0 : 1;
}

/* A holder of the MySQL cases: takes p->name with a 2 s ttl, sets
 * *ready, and holds it until killed. */
typedef struct my_holder_arg {
    pauses *p;
    _Atomic int *ready;
} my_holder_arg;

static int my_holder(void *arg, int i)
{
    const my_holder_arg *a = arg;
    sqllock_db *cdb = tu_child_open(g_url, "holder");
    sqllock_lease *cl = NULL;
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;

    (void)i;
    if (cdb == NULL)
        return 2;
    o.ttl_ms = 2000;
    if (sqllock_lease_new(cdb, a->p->name, &o, &cl) != SQLLOCK_OK ||
        sqllock_lease_try_acquire(cl) != SQLLOCK_OK)
        return 1;
    atomic_store(a->ready, 1);
    for (;;)
        pause();
}

/*
 * L9 on MySQL/MariaDB: a release wakes a waiter in another process at
 * once. The waiter's backoff is 2 s (min = max), so each pause is one 2 s
 * wait on the companion lock; the release comes 300 ms into it, and the
 * waiter has the lock before that pause would have ended -- a poll could
 * not have -- ROUNDS times in a row, the handoff within 1 s each (scaled
 * on a slow machine, tu_scaled_ms).
 */
static void test_wakeup_L9_my_release_wakes_other_process(void **state)
{
    sqllock_db *db = tu_open_or_fail(g_url);
    sqllock_lease *l;
    pauses *p = tu_shared_map(sizeof *p);
    _Atomic int64_t *got_at = tu_shared_map(sizeof(int64_t) * 2);
    my_waiter_arg wa = { p, 2000, 30000, got_at };
    int i;
    pid_t pid;
    (void)state;

    snprintf(p->name, sizeof p->name, "mywake-release-%ld", (long)getpid());
    l = new_lease(db, p->name, 5, 0);
    for (i = 0; i < ROUNDS; i++) {
        int64_t end, released, began;
        int n0;

        EXPECT_RC(db, sqllock_lease_acquire(l, 10000), SQLLOCK_OK, "hold");
        assert_true(companion_held(db, p->name));
        n0 = atomic_load(&p->n);
        pid = tu_fork(my_waiter, &wa);
        end = tu_now_ms() + 30000;
        TU_WAIT_WHILE(atomic_load(&p->n) == n0, end, 1);
        assert_true(atomic_load(&p->n) > n0);
        began = atomic_load(&p->last_at);
        tu_sleep_ms(300);               /* the waiter is blocked by now */
        released = tu_now_ms();
        EXPECT_RC(db, sqllock_lease_release(l), SQLLOCK_OK, "release");
        assert_int_equal(tu_wait(pid), 0);
        /* One pause, on the companion, for the whole backoff (no jitter:
         * it ends when the holder lets go). */
        assert_int_equal(atomic_load(&p->n), n0 + 1);
        assert_int_equal(atomic_load(&p->on_lock), atomic_load(&p->n));
        assert_int_equal(atomic_load(&p->first_ms), 2000);
        if (atomic_load(&got_at[0]) - released > tu_scaled_ms(1000) ||
            atomic_load(&got_at[0]) >= began + 2000)
            fail_msg("L9: round %d: the waiter had the lock %lld ms after "
                     "the release, %lld ms after its 2 s pause began: it "
                     "was not woken", i,
                     (long long)(atomic_load(&got_at[0]) - released),
                     (long long)(atomic_load(&got_at[0]) - began));
    }
    sqllock_lease_free(l);
    sqllock_close(db);
    munmap(got_at, sizeof(int64_t) * 2);
    munmap(p, sizeof *p);
}

/*
 * L9 on MySQL/MariaDB: a holder killed with SIGKILL loses its session,
 * and with it the companion lock: the waiter blocked on it wakes and
 * tries at once (it finds the lease still held: only its expiry, by the
 * server's clock, frees it; the companion is never a grant). The waiter's
 * backoff is 4 s and the kill comes 300 ms into its first pause, so a
 * try before that pause would have ended (and within 1 s of the kill,
 * scaled on a slow machine) was a wake-up; it then gets the lock after
 * the dead holder's 2 s ttl, by its polls.
 */
static void test_wakeup_L9_my_holder_death_wakes(void **state)
{
    sqllock_db *db = tu_open_or_fail(g_url);
    pauses *p = tu_shared_map(sizeof *p);
    _Atomic int *ready = tu_shared_map(sizeof(int));
    my_holder_arg ha = { p, ready };
    my_waiter_arg wa = { p, 4000, 60000, NULL };
    int64_t end, killed;
    int st;
    pid_t holder, waiter;
    (void)state;

    snprintf(p->name, sizeof p->name, "mywake-death-%ld", (long)getpid());
    holder = tu_fork(my_holder, &ha);
    end = tu_now_ms() + 30000;
    TU_WAIT_WHILE(!atomic_load(ready), end, 1);
    assert_true(atomic_load(ready));
    assert_true(companion_held(db, p->name));
    waiter = tu_fork(my_waiter, &wa);
    TU_WAIT_WHILE(atomic_load(&p->n) == 0, end, 1);
    assert_true(atomic_load(&p->n) > 0);
    tu_sleep_ms(300);                   /* the waiter is blocked by now */
    killed = tu_now_ms();
    assert_int_equal(kill(holder, SIGKILL), 0);
    assert_int_equal(waitpid(holder, &st, 0), holder);
    assert_int_equal(waitpid(waiter, &st, 0), waiter);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        fail_msg("the waiter ended with status 0x%x", st);
    assert_true(atomic_load(&p->n) >= 2);
    assert_int_equal(atomic_load(&p->first_ms), 4000);
    if (atomic_load(&p->at[1]) - killed > tu_scaled_ms(1000) ||
        atomic_load(&p->at[1]) >= atomic_load(&p->at[0]) + 4000)
        fail_msg("L9: the waiter tried again %lld ms after its holder was "
                 "killed, %lld ms after a 4 s pause began: the end of the "
                 "holder's session did not wake it",
                 (long long)(atomic_load(&p->at[1]) - killed),
                 (long long)(atomic_load(&p->at[1]) - atomic_load(&p->at[0])));
    sqllock_close(db);
    munmap(ready, sizeof(int));
    munmap(p, sizeof *p);
}

/* The waiter of the reconnect test: waits `wait_ms` for a lock that
 * stays held, counting its pauses. */
typedef struct spin_check {
    pauses p;
    char url[1024];
    _Atomic int rc;
} spin_check;

static void *spin_waiter(void *arg)
{
    spin_check *c = arg;
    sqllock_db *db = NULL;
    sqllock_lease *l = NULL;
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    int rc;

    o.ttl_ms = 60000;
    o.backoff_min_ms = 200;
    o.backoff_max_ms = 200;
    rc = sqllock_open(c->url, NULL, &db);
    if (rc == SQLLOCK_OK)
        rc = sqllock_lease_new(db, c->p.name, &o, &l);
    if (rc == SQLLOCK_OK)
        rc = sqllock_lease_acquire(l, 2000);
    atomic_store(&c->rc, rc);
    sqllock_lease_free(l);
    sqllock_close(db);
    return NULL;
}

/*
 * L9 on MySQL/MariaDB: a holder whose connection was lost and who
 * reconnected (its renewal sent again on a fresh connection, C3) still
 * holds the lease, but its companion lock went with the old session. A
 * waiter's wait on the companion then ends at once every time; it must
 * fall back to its backoff rather than spin: over 2 s with a 200 ms
 * backoff it pauses a few dozen times (each wait that ended at once is
 * followed by a plain backoff), not thousands, and times out.
 */
static void test_wakeup_L9_my_holder_reconnected_no_spin(void **state)
{
    sqllock_db *db = tu_open_or_fail(g_url), *admin = tu_open_or_fail(g_url);
    sqllock_lease *l;
    spin_check *c = calloc(1, sizeof *c);
    char sql[64];
    pthread_t th;
    int tries;
    (void)state;

    assert_non_null(c);
    snprintf(c->p.name, sizeof c->p.name, "mywake-reconnect-%ld",
             (long)getpid());
    snprintf(c->url, sizeof c->url, "%s", g_url);
    l = new_lease(db, c->p.name, 5, 0);
    /* The grant takes the companion if it can within 50 ms, and goes
     * without it otherwise (my_sql.c): once, on a loaded machine under
     * ASan, it went without. The case needs a holder that had it: the
     * grant is tried again until one took it. */
    for (tries = 1;; tries++) {
        EXPECT_RC(db, sqllock_lease_try_acquire(l), SQLLOCK_OK, "hold");
        if (companion_held(admin, c->p.name))
            break;
        if (tries == 5)
            fail_msg("L9: 5 grants in a row took no companion lock");
        EXPECT_RC(db, sqllock_lease_release(l), SQLLOCK_OK, "release");
    }
    if (tries > 1)
        printf("the companion lock was taken at the grant %d\n", tries);
    snprintf(sql, sizeof sql, "KILL %lld", (long long)tu_backend_id(db));
    EXPECT_RC(admin, sqllock__exec_sql(admin, sql, NULL, 0, NULL, NULL,
                                       NULL), SQLLOCK_OK, "KILL");
    EXPECT_RC(db, sqllock_lease_renew(l), SQLLOCK_OK,
              "renew on a fresh connection");
    assert_false(companion_held(admin, c->p.name));
    g_pauses = &c->p;
    atomic_store(&sqllock__on_backoff, count_pause);
    assert_int_equal(pthread_create(&th, NULL, spin_waiter, c), 0);
    pthread_join(th, NULL);
    atomic_store(&sqllock__on_backoff, NULL);
    g_pauses = NULL;
    assert_int_equal(atomic_load(&c->rc), SQLLOCK_TIMEOUT);
    assert_true(atomic_load(&c->p.on_lock) >= 1);
    if (atomic_load(&c->p.n) > 100)
        fail_msg("L9: a waiter whose holder has no companion lock paused "
                 "%d times in 2 s with a 200 ms backoff: it spun",
                 atomic_load(&c->p.n));
    EXPECT_RC(db, sqllock_lease_release(l), SQLLOCK_OK, "release");
    sqllock_lease_free(l);
    free(c);
    sqllock_close(admin);
    sqllock_close(db);
}

/*
 * L9, D1b on MySQL/MariaDB: a lease with wake-ups holds its companion
 * lock exactly while it holds the lease (taken by the grant, let go by
 * the release, in their one round trip each); a NO_WAKEUP lease takes
 * none and runs none of the wake-up statements: it costs what it did.
 */
static void test_wakeup_L9_my_no_wakeup_no_companion(void **state)
{
    sqllock_db *db = tu_open_or_fail(g_url), *other = tu_open_or_fail(g_url);
    sqllock_lease *w, *n;
    char name[160];
    (void)state;

    snprintf(name, sizeof name, "mywake-flags-%ld", (long)getpid());
    w = new_lease(db, name, 5, 0);
    EXPECT_RC(db, sqllock_lease_try_acquire(w), SQLLOCK_OK, "acquire");
    assert_true(companion_held(other, name));
    EXPECT_RC(db, sqllock_lease_release(w), SQLLOCK_OK, "release");
    assert_false(companion_held(other, name));
    sqllock_lease_free(w);
    sqllock_close(db);

    db = tu_open_or_fail(g_url);
    n = new_lease(db, name, 5, SQLLOCK_LEASE_NO_WAKEUP);
    EXPECT_RC(db, sqllock_lease_try_acquire(n), SQLLOCK_OK, "acquire");
    assert_false(companion_held(other, name));
    assert_non_null(db->stmts[SQLLOCK_SQL_LEASE_ACQUIRE_ONE]);
    assert_null(db->stmts[SQLLOCK_SQL_LEASE_ACQUIRE_WAKE]);
    EXPECT_RC(db, sqllock_lease_release(n), SQLLOCK_OK, "release");
    assert_null(db->stmts[SQLLOCK_SQL_LEASE_RELEASE_WAKE]);
    assert_null(db->stmts[SQLLOCK_SQL_WAKE_WAIT]);
    sqllock_lease_free(n);
    sqllock_close(db);
    sqllock_close(other);
}


int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wakeup_bad_flags),
        cmocka_unit_test(test_wakeup_L9_jitter_differs_after_fork),
        cmocka_unit_test(test_wakeup_L9_same_process),
        cmocka_unit_test(test_wakeup_L9_other_process),
        cmocka_unit_test(test_wakeup_L9_no_wakeup_still_polls),
        cmocka_unit_test(test_wakeup_L9_many_waiters_exclusive),
    };
    const struct CMUnitTest my_tests[] = {
        cmocka_unit_test(test_wakeup_L9_my_release_wakes_other_process),
        cmocka_unit_test(test_wakeup_L9_my_holder_death_wakes),
        cmocka_unit_test(test_wakeup_L9_my_holder_reconnected_no_spin),
        cmocka_unit_test(test_wakeup_L9_my_no_wakeup_no_companion),
    };
    const struct CMUnitTest pg_tests[] = {
        cmocka_unit_test(test_wakeup_L9_pg_listener_killed),
        cmocka_unit_test(test_wakeup_L9_pg_notify_only_when_wanted),
    };
    int rc;

    /* It finds the waiter's one connection by its application name;
     * through a pooler the waiter has two (the pooled one and its
     * listener) and the pooled one is the pooler's. test_pooler b covers
     * wake-ups through poolers. */
    tu_not_on("pooled", "test_wakeup_L9_pg_listener_killed",
              "through a pooler the waiter's connection is the pooler's "
              "(test_pooler b covers wake-ups through poolers)");
    rc = TU_RUN_PER_URL("wakeup", &g_url, tests, tu_group_schema, NULL);

    /* LISTEN exists only on PostgreSQL. */
    rc = tu_status_merge(rc, TU_RUN_ON_DRIVER("wakeup listener", "postgres",
                                              &g_url, pg_tests,
                                              tu_group_schema));
    /* The companion session lock exists only on MySQL/MariaDB. */
    rc = tu_status_merge(rc, TU_RUN_ON_DRIVER("wakeup session lock", "mysql",
                                              &g_url, my_tests,
                                              tu_group_schema));
    return rc;
}
