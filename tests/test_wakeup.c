/*
 * test_wakeup.c -- waiting for a lease (DESIGN L9) on every database: a
 * release wakes a waiter at once instead of at its next poll -- through a
 * condition variable for waiters in the same process (all databases), and
 * through LISTEN/NOTIFY across processes (PostgreSQL); elsewhere waiters
 * in other processes still get the lock by polling; a waiter on
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
#include <sys/wait.h>
#include <cmocka.h>

#include "test_util.h"
#include "test_run.h"

#define SLOW_POLL_MS 20000      /* the waiters' backoff, min and max */
#define WAKE_WITHIN_MS 2000     /* a handoff slower than this was a poll */
#define ROUNDS 3

static const char *g_url;

static int is_postgres(void)
{
    return strcmp(tu_url_driver(g_url), "postgres") == 0;
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

static sqllock_db *open_db(void)
{
    sqllock_db *db = NULL;

    if (sqllock_open(g_url, NULL, &db) != SQLLOCK_OK)
        fail_msg("open %s: %s", g_url, sqllock_errmsg(db));
    return db;
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
        while (atomic_load(&h->holder_round) < i + 1 && tu_now_ms() < end)
            tu_sleep_ms(1);
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
    sqllock_db *db = open_db();
    sqllock_lease *l = new_lease(db, h->name, 5, 0);
    int64_t slowest = 0, end, took;
    int i;

    for (i = 0; i < ROUNDS; i++) {
        /* Wait for the waiter to finish the previous round, then take
         * the lock before it starts the next. */
        end = tu_now_ms() + 30000;
        while (atomic_load(&h->got) < i && tu_now_ms() < end)
            tu_sleep_ms(1);
        assert_int_equal(atomic_load(&h->got), i);
        EXPECT_RC(db, sqllock_lease_acquire(l, 30000), SQLLOCK_OK,
                  "holder acquire");
        if (atomic_fetch_add(&h->in_lock, 1) != 0)
            atomic_fetch_add(&h->overlaps, 1);
        atomic_store(&h->holder_round, i + 1);
        while (atomic_load(&h->waiting) < i + 1 && tu_now_ms() < end)
            tu_sleep_ms(1);
        tu_sleep_ms(settle_ms);          /* the waiter is asleep by now */
        atomic_fetch_sub(&h->in_lock, 1);
        atomic_store(&h->released_at, tu_now_ms());
        EXPECT_RC(db, sqllock_lease_release(l), SQLLOCK_OK, "release");
        end = tu_now_ms() + SLOW_POLL_MS + 30000;
        while (atomic_load(&h->got) < i + 1 && atomic_load(&h->rc) == 0 &&
               tu_now_ms() < end)
            tu_sleep_ms(1);
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
 * characters (the channel is a hash). Other databases have no push from
 * the server: the waiter in another process gets the lock by polling, and
 * the handoffs are checked only for coming at all and never overlapping.
 */
static void test_wakeup_L9_other_process(void **state)
{
    handoff *h = tu_shared_map(sizeof *h);
    int64_t slowest;
    pid_t pid;
    int st = 0;
    (void)state;

    snprintf(h->name, sizeof h->name, "wakeup \"proc\" \xc3\xbc %ld",
             (long)getpid());
    h->backoff_ms = is_postgres() ? SLOW_POLL_MS : 50;
    fflush(stdout);
    fflush(stderr);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        _exit(waiter_rounds(h) == SQLLOCK_OK ? 0 : 1);
    slowest = holder_rounds(h, 300);
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    assert_int_equal(atomic_load(&h->overlaps), 0);
    if (is_postgres() && slowest > WAKE_WITHIN_MS)
        fail_msg("L9: a release took %lld ms to wake a waiter in another "
                 "process (backoff %d ms): NOTIFY did not wake it",
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
    sqllock_db *db = open_db(), *admin = open_db();
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
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
            "WHERE application_name = 'sqllock-test-waiter' AND state = 'idle' "
            "AND datname = current_database() "
            "AND state_change < now() - interval '200 ms'", NULL, 0, &got_row,
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
            "AND state_change < now() - interval '300 ms'", NULL, 0,
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
    sqllock_db *db = open_db(), *admin = open_db();
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
    assert_int_equal(sqllock__wait_notify(admin, 300, &woke), SQLLOCK_OK);
    assert_int_equal(woke, 0);

    EXPECT_RC(db, sqllock_lease_acquire(plain, 5000), SQLLOCK_OK, "acquire");
    arg = sqllock__text(name);
    EXPECT_RC(db, sqllock__exec_sql(db, "DELETE FROM sqllock_lease WHERE "
                                    "name = $1", &arg, 1, NULL, NULL, NULL),
              SQLLOCK_OK, "delete behind the holder's back");
    EXPECT_RC(db, sqllock_lease_release(plain), SQLLOCK_LOST, "lost release");
    assert_int_equal(sqllock__wait_notify(admin, 300, &woke), SQLLOCK_OK);
    assert_int_equal(woke, 0);

    EXPECT_RC(db, sqllock_lease_acquire(plain, 5000), SQLLOCK_OK, "acquire");
    EXPECT_RC(db, sqllock_lease_release(plain), SQLLOCK_OK, "release");
    assert_int_equal(sqllock__wait_notify(admin, 5000, &woke), SQLLOCK_OK);
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
static void test_wakeup_L9_many_waiters_exclusive(void **state)
{
    enum { PROCS = 4, ITERS = 10 };
    typedef struct many {
        _Atomic int in_lock;
        _Atomic int overlaps;
        _Atomic int entries;
        _Atomic int failures;
    } many;
    many *m = tu_shared_map(sizeof *m);
    char name[128];
    pid_t pids[PROCS];
    int i, st;
    (void)state;

    snprintf(name, sizeof name, "wakeup-many-%ld", (long)getpid());
    fflush(stdout);
    fflush(stderr);
    for (i = 0; i < PROCS; i++) {
        pids[i] = fork();
        assert_true(pids[i] >= 0);
        if (pids[i] == 0) {
            sqllock_db *db = tu_child_open(g_url, "many waiters");
            sqllock_lease *l = NULL;
            sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
            int k, rc;

            o.ttl_ms = 60000;
            if (db == NULL || sqllock_lease_new(db, name, &o, &l) != 0)
                _exit(2);
            for (k = 0; k < ITERS; k++) {
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
            _exit(0);
        }
    }
    for (i = 0; i < PROCS; i++) {
        st = 0;
        assert_int_equal(waitpid(pids[i], &st, 0), pids[i]);
        assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }
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
static void test_wakeup_L9_jitter_differs_after_fork(void **state)
{
    enum { KIDS = 2, DRAWS = 8 };
    int64_t *seq = tu_shared_map(sizeof(int64_t) * KIDS * DRAWS);
    pid_t pid[KIDS];
    int i, k, st, same = 1;
    (void)state;

    (void)sqllock__rand_upto(1000000);      /* the parent is seeded */
    fflush(stdout);
    fflush(stderr);
    for (k = 0; k < KIDS; k++) {
        pid[k] = fork();
        assert_true(pid[k] >= 0);
        if (pid[k] == 0) {
            for (i = 0; i < DRAWS; i++)
                seq[k * DRAWS + i] = sqllock__rand_upto(INT64_C(1) << 40);
            _exit(0);
        }
    }
    for (k = 0; k < KIDS; k++) {
        st = 0;
        assert_int_equal(waitpid(pid[k], &st, 0), pid[k]);
        assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }
    for (i = 0; i < DRAWS; i++)
        if (seq[i] != seq[DRAWS + i])
            same = 0;
    munmap(seq, sizeof(int64_t) * KIDS * DRAWS);
    if (same)
        fail_msg("L9: two forked children drew the same jitter sequence");
}

static void test_wakeup_bad_flags(void **state)
{
    sqllock_db *db = open_db();
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

/* Creates the schema once per database (idempotent). */
static int group_setup(void **state)
{
    (void)state;
    return tu_init_schema(g_url);
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
    rc = TU_RUN_PER_URL("wakeup", &g_url, tests, group_setup, NULL);

    /* LISTEN exists only on PostgreSQL. */
    rc = tu_status_merge(rc, TU_RUN_ON_DRIVER("wakeup listener", "postgres",
                                              &g_url, pg_tests, group_setup));
    return rc;
}
