/*
 * test_suspend.c -- DESIGN T1: every timed wait of the library ends at a
 * deadline of one clock, the deadline clock of L6 (CLOCK_BOOTTIME), and
 * time the host spends suspended never lengthens a wait past its
 * deadline: after a resume, a wait whose deadline passed meanwhile ends
 * within one slice (SQLLOCK__WAIT_SLICE_MS) and the test's allowance.
 *
 * The suspend is simulated in this process by the shim of
 * harness/tu_suspend.h, linked into this program: CLOCK_BOOTTIME reads
 * ahead of CLOCK_MONOTONIC by an offset the test sets, while every
 * blocking call (condition variables, poll(), nanosleep()) keeps counting
 * CLOCK_MONOTONIC time -- exactly what a resume from a real suspend
 * leaves behind. The first case checks that the library's own clock
 * readings go through the shim, so no case can pass vacuously. The
 * times the test measures are CLOCK_MONOTONIC (tu_now_ms()), the time
 * that really passed.
 *
 *   - a waiting acquire with CLOCK_BOOTTIME 8 s (and more) ahead before
 *     the call ends at its 1 s deadline (issue 26: it took 8 s more,
 *     the in-process wake-up wait turning a deadline of one clock into a
 *     time of the other);
 *   - a suspend in the middle of a waiting acquire's pause -- with
 *     wake-ups (SQLite: the in-process condition variable; PostgreSQL:
 *     LISTEN; MySQL: the companion session lock) and polling
 *     (SQLLOCK_LEASE_NO_WAKEUP: a plain sleep) -- ends the wait soon
 *     after the "resume";
 *   - L6 still counts the suspend: a watched lease whose local deadline
 *     passed during a suspend is LOST at once and its callback follows
 *     within the bound (not at the renewer's next due time); a leader
 *     (M4) stops at once and reports the loss within the bound; the
 *     reaper's next pass comes within the bound after a suspend longer
 *     than its interval;
 *   - PostgreSQL: a round trip whose bound passed during a suspend gives
 *     up soon after the resume (its poll() was cut at 60 s before).
 *
 * The allowance is SQLLOCK__WAIT_SLICE_MS plus 1.5 s scaled by the
 * harness's slowdown factor (tu_scaled_ms); the waits that must not
 * happen are longer than that in every build but those slowed down the
 * most (valgrind), where the cases still run the same calls. Nothing
 * waits for a fixed time: the test waits for the waiter's pause (the
 * backoff hook), the threads' sleep (/proc/self/task/N/syscall: blocked
 * in futex()), the leader's election, the reaper's pass.
 *
 * Runs once per URL in SQLLOCK_TEST_URLS, or on a fresh temporary SQLite
 * file; the round-trip case on PostgreSQL only.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <cmocka.h>

#include "test_util.h"
#include "test_run.h"
#include "tu_suspend.h"

static const char *g_url;

/* The report's offset: BOOTTIME 8 s ahead of MONOTONIC. */
#define AHEAD_MS 8000
/* Tries of a case whose timing precondition failed. */
#define TRIES 3

/* How long after its deadline (or the "resume") a wait may end. */
static int64_t allowance_ms(void)
{
    return SQLLOCK__WAIT_SLICE_MS + tu_scaled_ms(1500);
}

/* Every case leaves the clock as it found it, and the hook unset. */
static int reset(void **state)
{
    (void)state;
    tu_suspend_set_ahead_ms(0);
    atomic_store(&sqllock__on_backoff, NULL);
    return 0;
}

static sqllock_lease *new_lease(sqllock_db *db, const char *name,
                                int64_t ttl_ms, int64_t backoff_ms,
                                unsigned flags)
{
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_lease *l = NULL;

    o.ttl_ms = ttl_ms;
    if (backoff_ms > 0) {
        o.backoff_min_ms = backoff_ms;
        o.backoff_max_ms = backoff_ms;
    }
    o.flags = flags;
    EXPECT_RC(db, sqllock_lease_new(db, name, &o, &l), SQLLOCK_OK, "new");
    return l;
}

/* The threads of this process: their ids into tids[0..max); the count. */
static int list_threads(long *tids, int max)
{
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;
    int n = 0;

    if (d == NULL)
        return 0;
    while ((e = readdir(d)) != NULL && n < max)
        if (e->d_name[0] >= '1' && e->d_name[0] <= '9')
            tids[n++] = strtol(e->d_name, NULL, 10);
    closedir(d);
    return n;
}

/* 1 when at least one thread has started since before[0..nb) was taken,
 * and every such thread is blocked in futex(): asleep on its condition
 * variable. A suspend simulated after that comes during the wait, not
 * before it has begun. */
static int new_threads_asleep(const long *before, int nb)
{
    long now[64];
    int n = list_threads(now, 64), i, k, fresh = 0;

    for (i = 0; i < n; i++) {
        char path[64], buf[64];
        FILE *fp;
        long sysno;

        for (k = 0; k < nb && before[k] != now[i]; k++)
            ;
        if (k < nb)
            continue;
        fresh++;
        snprintf(path, sizeof path, "/proc/self/task/%ld/syscall", now[i]);
        fp = fopen(path, "r");
        if (fp == NULL)
            return 0;
        buf[0] = '\0';
        if (fgets(buf, sizeof buf, fp) == NULL)
            buf[0] = '\0';
        fclose(fp);
        /* "running", or the number of the call it is blocked in. */
        sysno = strtol(buf, NULL, 10);
        if (buf[0] < '0' || buf[0] > '9' || sysno != SYS_futex)
            return 0;
    }
    return fresh > 0;
}

/* The shim is in effect for the library: its deadline clock (internal
 * and public) moves by the offset, CLOCK_MONOTONIC does not. */
static void test_suspend_T1_shim_moves_the_deadline_clock(void **state)
{
    int64_t m0, m1, b0, b1, p0, p1;
    (void)state;

    m0 = tu_now_ms();
    b0 = sqllock__now_us();
    p0 = sqllock_now_us();
    tu_suspend_set_ahead_ms(3600000);
    b1 = sqllock__now_us();
    p1 = sqllock_now_us();
    m1 = tu_now_ms();
    tu_suspend_set_ahead_ms(0);
    if ((b1 - b0) / 1000 < 3600000 || (b1 - b0) / 1000 > 3600000 + m1 - m0 + 1
        || (p1 - p0) / 1000 < 3600000)
        fail_msg("the shim did not move the library's deadline clock by "
                 "1 h: it moved %lld ms (sqllock_now_us(): %lld ms) in "
                 "%lld ms of CLOCK_MONOTONIC",
                 (long long)((b1 - b0) / 1000), (long long)((p1 - p0) / 1000),
                 (long long)(m1 - m0));
}

/*
 * T1, the report: with CLOCK_BOOTTIME ahead of CLOCK_MONOTONIC (a host
 * that was suspended before), sqllock_lease_acquire(wait 1000 ms) on a
 * held name returns SQLLOCK_TIMEOUT after about 1 s. The offset is larger
 * than the allowance, so a wait that mixed the two clocks (8 s and more)
 * fails here.
 */
static void test_suspend_T1_acquire_wait_with_boottime_ahead(void **state)
{
    sqllock_db *holder = tu_open_or_fail(g_url), *db = tu_open_or_fail(g_url);
    sqllock_lease *h, *w;
    int64_t ahead = AHEAD_MS + 2 * allowance_ms(), t0, took;
    char name[128];
    int rc;
    (void)state;

    snprintf(name, sizeof name, "suspend-ahead-%ld", (long)getpid());
    h = new_lease(holder, name, 60000, 0, 0);
    w = new_lease(db, name, 60000, 0, 0);
    EXPECT_RC(holder, sqllock_lease_try_acquire(h), SQLLOCK_OK, "hold");
    /* The waiter's connection is open before the timed call. */
    EXPECT_RC(db, sqllock_lease_try_acquire(w), SQLLOCK_BUSY, "try");
    tu_suspend_set_ahead_ms(ahead);
    t0 = tu_now_ms();
    rc = sqllock_lease_acquire(w, 1000);
    took = tu_now_ms() - t0;
    tu_suspend_set_ahead_ms(0);
    printf("acquire, wait 1000 ms, CLOCK_BOOTTIME %lld ms ahead: %lld ms\n",
           (long long)ahead, (long long)took);
    EXPECT_RC(db, rc, SQLLOCK_TIMEOUT, "acquire, wait 1000 ms");
    if (took < 990 || took > 1000 + allowance_ms())
        fail_msg("T1: sqllock_lease_acquire(wait 1000 ms) with "
                 "CLOCK_BOOTTIME %lld ms ahead of CLOCK_MONOTONIC returned "
                 "after %lld ms (allowed: 990 to %lld ms)", (long long)ahead,
                 (long long)took, (long long)(1000 + allowance_ms()));
    EXPECT_RC(holder, sqllock_lease_release(h), SQLLOCK_OK, "release");
    sqllock_lease_free(w);
    sqllock_lease_free(h);
    sqllock_close(db);
    sqllock_close(holder);
}

/* A waiting acquire on its own thread, and what the backoff hook saw of
 * its pauses. */
typedef struct sleeper {
    char name[128];
    sqllock_db *db;
    sqllock_lease *lease;
    int64_t wait_ms;
    _Atomic int64_t pause_ms;      /* the length of the latest pause */
    _Atomic int pauses;            /* pauses begun */
    _Atomic int rc;
    _Atomic int64_t ended_at;      /* tu_now_ms() when the acquire returned */
    _Atomic int done;
} sleeper;

static sleeper *_Atomic g_sleeper;

static void on_pause(const char *name, int64_t sleep_ms, int listening)
{
    sleeper *s = atomic_load(&g_sleeper);

    (void)listening;
    if (s == NULL || strcmp(name, s->name) != 0)
        return;
    /* The length before the count: who sees the count sees it. */
    atomic_store(&s->pause_ms, sleep_ms);
    atomic_fetch_add(&s->pauses, 1);
}

static void *sleeper_main(void *arg)
{
    sleeper *s = arg;
    int rc = sqllock_lease_acquire(s->lease, s->wait_ms);

    atomic_store(&s->ended_at, tu_now_ms());
    atomic_store(&s->rc, rc);
    atomic_store(&s->done, 1);
    return NULL;
}

/*
 * T1: a suspend in the middle of a waiting acquire's pause. The waiter
 * waits `wait` with a backoff of 40 times that, so that it sleeps in
 * long pauses (a polling pause is drawn from 0 to the backoff, and cut
 * to what is left of the wait: one of 60 is too short);
 * once it is in one longer than twice the allowance, the clock jumps by
 * twice the wait (the deadline passes during the "suspend"), and the
 * acquire must return SQLLOCK_TIMEOUT within the allowance. A pause that
 * counted only CLOCK_MONOTONIC time would run on for the rest of its
 * length. `flags` 0: the pause is the driver's wake-up wait; NO_WAKEUP: a
 * plain sleep. A try whose first pause is shorter than that (its
 * backoff's jitter) is inconclusive: the holder lets go, the waiter is
 * granted after that pause, and the case is tried again.
 */
static void suspend_during_pause(unsigned flags, const char *what)
{
    int64_t allow = allowance_ms(), wait = 30000, t0, took, longest = 0;
    int tries = 0;

    if (wait < 6 * allow)
        wait = 6 * allow;
    for (;;) {
        sqllock_db *holder = tu_open_or_fail(g_url);
        sqllock_lease *h;
        sleeper *s = calloc(1, sizeof *s);
        pthread_t th;
        int jumped = 0, released = 0, rc;

        assert_non_null(s);
        snprintf(s->name, sizeof s->name, "suspend-pause-%ld-%u-%d",
                 (long)getpid(), flags, tries);
        s->db = tu_open_or_fail(g_url);
        s->lease = new_lease(s->db, s->name, 60000, 40 * wait, flags);
        s->wait_ms = wait;
        h = new_lease(holder, s->name, 3 * wait, 0, 0);
        EXPECT_RC(holder, sqllock_lease_try_acquire(h), SQLLOCK_OK, "hold");
        atomic_store(&g_sleeper, s);
        atomic_store(&sqllock__on_backoff, on_pause);
        assert_int_equal(pthread_create(&th, NULL, sleeper_main, s), 0);
        /* Wait for a pause of more than twice the allowance (the hook
         * runs just before it, after its end was fixed). */
        t0 = 0;
        while (!atomic_load(&s->done)) {
            int n = atomic_load(&s->pauses);
            int64_t len = atomic_load(&s->pause_ms);

            if (n > 0 && len > longest)
                longest = len;
            if (n > 0 && len > 2 * allow) {
                t0 = tu_now_ms();
                tu_suspend_set_ahead_ms(tu_suspend_ahead_ms() + 2 * wait);
                jumped = 1;
                break;
            }
            if (n > 0 && !released) {
                /* Too short a pause (its jitter): this try is
                 * inconclusive. The holder lets go, so that the waiter
                 * is granted after this pause instead of waiting out
                 * the whole `wait` (minutes at a high slowdown). */
                EXPECT_RC(holder, sqllock_lease_release(h), SQLLOCK_OK,
                          "release");
                released = 1;
            }
            tu_sleep_ms(2);
        }
        pthread_join(th, NULL);
        atomic_store(&sqllock__on_backoff, NULL);
        atomic_store(&g_sleeper, NULL);
        tu_suspend_set_ahead_ms(0);
        rc = atomic_load(&s->rc);
        took = atomic_load(&s->ended_at) - t0;
        if (jumped)
            EXPECT_RC(s->db, rc, SQLLOCK_TIMEOUT, what);
        else if (rc == SQLLOCK_OK)
            EXPECT_RC(s->db, sqllock_lease_release(s->lease), SQLLOCK_OK,
                      "release the waiter's grant");
        if (!released)
            EXPECT_RC(holder, sqllock_lease_release(h), SQLLOCK_OK,
                      "release");
        sqllock_lease_free(h);
        sqllock_lease_free(s->lease);
        sqllock_close(s->db);
        sqllock_close(holder);
        free(s);
        if (!jumped) {
            tu_too_slow(&tries, TRIES, "%s: the waiter timed out before it "
                        "paused for more than %lld ms (longest pause %lld "
                        "ms)", what, (long long)(2 * allow),
                        (long long)longest);
            continue;
        }
        printf("%s: ended %lld ms after a suspend during a pause of %lld "
               "ms\n", what, (long long)took, (long long)longest);
        if (took > allow)
            fail_msg("T1: %s: a suspend of %lld ms past the wait's deadline "
                     "came during a pause; the wait ended %lld ms after the "
                     "resume (allowed: %lld ms)", what, (long long)(2 * wait),
                     (long long)took, (long long)allow);
        return;
    }
}

static void test_suspend_T1_suspend_during_wakeup_wait(void **state)
{
    (void)state;
    suspend_during_pause(0, "acquire with wake-ups");
}

static void test_suspend_T1_suspend_during_polling_wait(void **state)
{
    (void)state;
    suspend_during_pause(SQLLOCK_LEASE_NO_WAKEUP, "acquire that polls");
}

/* What the watch callback saw. */
typedef struct lost_note {
    _Atomic int lost;
    _Atomic int status;
    _Atomic int64_t at;            /* tu_now_ms() */
} lost_note;

static void on_watch(void *ctx, sqllock_lease *lease, int state, int status,
                     const char *msg)
{
    lost_note *n = ctx;

    (void)lease;
    (void)msg;
    if (state != SQLLOCK_STATE_LOST || atomic_load(&n->lost))
        return;
    atomic_store(&n->status, status);
    atomic_store(&n->at, tu_now_ms());
    atomic_store(&n->lost, 1);
}

/*
 * L6 with T1: a suspend longer than the ttl ends a watched lease. The
 * holder's view turns LOST at once (the deadline clock counts the
 * suspend), and the watchdog, asleep until the next renewal is due
 * (ttl/3 away), reports the loss within the allowance, not at that time.
 */
static void test_suspend_L6_T1_watched_lease_lost_after_suspend(void **state)
{
    sqllock_db *db = tu_open_or_fail(g_url);
    sqllock_watch_options wo = SQLLOCK_WATCH_OPTIONS_INIT;
    lost_note note;
    sqllock_lease *l;
    int64_t ttl = 30000, allow = allowance_ms(), t0, took;
    long before[64];
    char name[128];
    int rc, nb;
    (void)state;

    if (ttl < 6 * allow)
        ttl = 6 * allow;
    memset(&note, 0, sizeof note);
    snprintf(name, sizeof name, "suspend-watch-%ld", (long)getpid());
    l = new_lease(db, name, ttl, 0, 0);
    EXPECT_RC(db, sqllock_lease_try_acquire(l), SQLLOCK_OK, "acquire");
    wo.callback = on_watch;
    wo.ctx = &note;
    nb = list_threads(before, 64);
    EXPECT_RC(db, sqllock_lease_watch(l, &wo), SQLLOCK_OK, "watch");
    /* The renewer asleep until the renewal is due, ttl/3 away. */
    TU_WAIT_WHILE(!new_threads_asleep(before, nb),
                  tu_now_ms() + tu_scaled_ms(10000), 1);
    assert_true(new_threads_asleep(before, nb));
    assert_int_equal(sqllock_lease_state(l), SQLLOCK_STATE_HELD);
    t0 = tu_now_ms();
    tu_suspend_set_ahead_ms(2 * ttl);
    /* L6: the holder's own view counts the suspend, at once. */
    assert_int_equal(sqllock_lease_state(l), SQLLOCK_STATE_LOST);
    assert_int_equal(sqllock_lease_held(l), 0);
    assert_int_equal(sqllock_lease_remaining_ms(l), 0);
    TU_WAIT_WHILE(!atomic_load(&note.lost), t0 + ttl, 2);
    took = atomic_load(&note.lost) ? atomic_load(&note.at) - t0 : -1;
    if (took < 0 || took > allow)
        fail_msg("T1, L6: the watch callback reported the loss %lld ms after "
                 "a suspend past the lease's local deadline (allowed: %lld "
                 "ms; -1: not at all)", (long long)took, (long long)allow);
    assert_int_equal(atomic_load(&note.status), SQLLOCK_TIMEOUT);
    /* The row is still ours by the server's clock: release says so, or
     * LOST; either way the handle lets it go. */
    rc = sqllock_lease_release(l);
    if (rc != SQLLOCK_OK && rc != SQLLOCK_LOST)
        EXPECT_RC(db, rc, SQLLOCK_OK, "release");
    sqllock_lease_free(l);
    sqllock_close(db);
}

/* What a leader's callbacks saw. */
typedef struct leader_note {
    _Atomic int64_t elected;       /* the token of the first term, 0 before */
    _Atomic int lost;
    _Atomic int status;
    _Atomic int64_t at;            /* tu_now_ms() of the first loss */
} leader_note;

static void on_elected(void *ctx, sqllock_leader *L, int64_t token)
{
    leader_note *n = ctx;
    int64_t zero = 0;

    (void)L;
    atomic_compare_exchange_strong(&n->elected, &zero, token);
}

static void on_lost(void *ctx, sqllock_leader *L, int64_t token, int status,
                    const char *msg)
{
    leader_note *n = ctx;

    (void)L;
    (void)msg;
    if (token != atomic_load(&n->elected) || atomic_load(&n->lost))
        return;
    atomic_store(&n->status, status);
    atomic_store(&n->at, tu_now_ms());
    atomic_store(&n->lost, 1);
}

/*
 * M4 with T1: a leader stops leading at its local deadline, also when
 * that passed during a suspend: sqllock_leader_is_leader() is 0 at once,
 * and the loss is reported within the allowance (the leader slept until
 * its deadline, by CLOCK_MONOTONIC, and its renewer until its next
 * renewal).
 */
static void test_suspend_M4_T1_leader_lost_after_suspend(void **state)
{
    sqllock_leader_options lo = SQLLOCK_LEADER_OPTIONS_INIT;
    sqllock_leader *L = NULL;
    leader_note note;
    char name[128], why[256];
    int64_t ttl = 30000, allow = allowance_ms(), t0, took;
    long before[64];
    int nb;
    (void)state;

    if (ttl < 6 * allow)
        ttl = 6 * allow;
    memset(&note, 0, sizeof note);
    snprintf(name, sizeof name, "suspend-leader-%ld", (long)getpid());
    lo.ttl_ms = ttl;
    lo.on_elected = on_elected;
    lo.on_lost = on_lost;
    lo.ctx = &note;
    nb = list_threads(before, 64);
    if (sqllock_leader_start(g_url, name, &lo, &L, why, sizeof why)
        != SQLLOCK_OK)
        fail_msg("sqllock_leader_start: %s", why);
    TU_WAIT_WHILE(atomic_load(&note.elected) == 0,
                  tu_now_ms() + tu_scaled_ms(20000), 2);
    assert_true(atomic_load(&note.elected) != 0);
    /* The leader asleep until its deadline, its renewer until the
     * renewal is due. */
    TU_WAIT_WHILE(!new_threads_asleep(before, nb),
                  tu_now_ms() + tu_scaled_ms(10000), 1);
    assert_true(new_threads_asleep(before, nb));
    assert_true(sqllock_leader_is_leader(L));
    t0 = tu_now_ms();
    tu_suspend_set_ahead_ms(2 * ttl);
    assert_false(sqllock_leader_is_leader(L));
    TU_WAIT_WHILE(!atomic_load(&note.lost), t0 + ttl, 2);
    took = atomic_load(&note.lost) ? atomic_load(&note.at) - t0 : -1;
    sqllock_leader_stop(L);
    if (took < 0 || took > allow)
        fail_msg("T1, M4: the leader reported its loss %lld ms after a "
                 "suspend past its local deadline (allowed: %lld ms; -1: "
                 "not at all)", (long long)took, (long long)allow);
    assert_int_equal(atomic_load(&note.status), SQLLOCK_TIMEOUT);
}

/*
 * T1 for the reaper: a pass at once, then one every interval (60 s); a
 * suspend longer than the interval brings the next pass within the
 * allowance of the resume, not an interval later.
 */
static void test_suspend_T1_reaper_pass_after_suspend(void **state)
{
    sqllock_reaper_options ro = SQLLOCK_REAPER_OPTIONS_INIT;
    sqllock_reaper_stats st;
    sqllock_reaper *r = NULL;
    int64_t allow = allowance_ms(), t0, took, interval = 60000;
    char why[256];
    (void)state;

    if (interval < 6 * allow)
        interval = 6 * allow;
    ro.interval_ms = interval;
    if (sqllock_reaper_start(g_url, &ro, &r, why, sizeof why) != SQLLOCK_OK)
        fail_msg("sqllock_reaper_start: %s", why);
    memset(&st, 0, sizeof st);
    t0 = tu_now_ms() + tu_scaled_ms(20000);
    while (st.passes < 1 && tu_now_ms() < t0) {
        assert_int_equal(sqllock_reaper_stats_get(r, &st), SQLLOCK_OK);
        tu_sleep_ms(2);
    }
    assert_true(st.passes >= 1);
    t0 = tu_now_ms();
    tu_suspend_set_ahead_ms(2 * interval);
    took = -1;
    while (tu_now_ms() < t0 + interval) {
        assert_int_equal(sqllock_reaper_stats_get(r, &st), SQLLOCK_OK);
        if (st.passes >= 2) {
            took = tu_now_ms() - t0;
            break;
        }
        tu_sleep_ms(2);
    }
    sqllock_reaper_stop(r);
    if (took < 0 || took > allow)
        fail_msg("T1: the reaper's next pass came %lld ms after a suspend "
                 "longer than its interval (allowed: %lld ms; -1: not "
                 "within the interval)", (long long)took, (long long)allow);
}

/* A statement on its own thread. */
typedef struct stmt_run {
    sqllock_db *db;
    const char *sql;
    _Atomic int rc;
    _Atomic int done;
    _Atomic int64_t ended_at;
} stmt_run;

static void *stmt_main(void *arg)
{
    stmt_run *s = arg;
    int rc = sqllock__exec_sql(s->db, s->sql, NULL, 0, NULL, NULL, NULL);

    atomic_store(&s->ended_at, tu_now_ms());
    atomic_store(&s->rc, rc);
    atomic_store(&s->done, 1);
    return NULL;
}

/* The statements on the test's pg_sleep(), which names itself by the
 * column alias `tag` (this process's): how many sleep (count), or cancel
 * them (cancel), on `db` (PostgreSQL). A count takes only a backend in
 * the sleep itself (wait_event PgSleep): the statement's text shows as
 * active while the server parses and describes it too, round trips of
 * their own before the one the test bounds, and a clock moved then would
 * be moved before that round trip took its deadline. */
static int64_t pg_sleepers(sqllock_db *db, const char *tag, int cancel)
{
    char sql[320], pattern[64];
    sqllock_value arg;
    int64_t n = 0;
    int has_row = 0;

    snprintf(pattern, sizeof pattern, "%%AS %s", tag);
    snprintf(sql, sizeof sql, "SELECT %s FROM pg_stat_activity WHERE "
             "state = 'active' AND query LIKE $1 AND pid <> pg_backend_pid()"
             "%s", cancel ? "count(pg_cancel_backend(pid))" : "count(*)",
             cancel ? "" : " AND wait_event = 'PgSleep'");
    arg = sqllock__text(pattern);
    if (sqllock__exec_sql(db, sql, &arg, 1, &has_row, &n, NULL)
        != SQLLOCK_OK)
        return 0;
    return has_row ? n : 0;
}

/*
 * T1 on PostgreSQL: a round trip is bounded by the statement timeout on
 * the deadline clock. A statement still running when a suspend carried
 * the bound past gives up within the allowance of the resume (the
 * connection is dropped: SQLLOCK_ECONNECT), instead of waiting on in
 * poll() for the server's answer.
 */
static void test_suspend_T1_pg_round_trip_bound(void **state)
{
    sqllock_options o = SQLLOCK_OPTIONS_INIT;
    sqllock_db *admin = tu_open_or_fail(g_url);
    stmt_run s;
    pthread_t th;
    int64_t allow = allowance_ms(), bound = 20000, t0, took, end;
    char sql[96], tag[32];
    (void)state;

    if (bound < 6 * allow)
        bound = 6 * allow;
    memset(&s, 0, sizeof s);
    o.statement_timeout_ms = bound;
    EXPECT_RC(s.db, sqllock_open(g_url, &o, &s.db), SQLLOCK_OK, "open");
    snprintf(tag, sizeof tag, "suspend_%ld", (long)getpid());
    snprintf(sql, sizeof sql, "SELECT pg_sleep(%lld) AS %s",
             (long long)(bound * 3 / 4000), tag);
    s.sql = sql;
    assert_int_equal(pthread_create(&th, NULL, stmt_main, &s), 0);
    end = tu_now_ms() + bound / 2;
    while (!atomic_load(&s.done) && pg_sleepers(admin, tag, 0) == 0
           && tu_now_ms() < end)
        tu_sleep_ms(2);
    assert_false(atomic_load(&s.done));
    assert_true(pg_sleepers(admin, tag, 0) == 1);
    t0 = tu_now_ms();
    tu_suspend_set_ahead_ms(2 * bound);
    pthread_join(th, NULL);
    took = atomic_load(&s.ended_at) - t0;
    tu_suspend_set_ahead_ms(0);
    /* The server's backend sleeps on after the client gave up: end it. */
    pg_sleepers(admin, tag, 1);
    EXPECT_RC(s.db, atomic_load(&s.rc), SQLLOCK_ECONNECT, "the statement");
    if (took > allow)
        fail_msg("T1: a round trip whose bound passed during a suspend "
                 "ended %lld ms after the resume (allowed: %lld ms)",
                 (long long)took, (long long)allow);
    sqllock_close(s.db);
    sqllock_close(admin);
}

#define CASE(f) cmocka_unit_test_teardown(f, reset)

int main(void)
{
    const struct CMUnitTest tests[] = {
        CASE(test_suspend_T1_shim_moves_the_deadline_clock),
        CASE(test_suspend_T1_acquire_wait_with_boottime_ahead),
        CASE(test_suspend_T1_suspend_during_wakeup_wait),
        CASE(test_suspend_T1_suspend_during_polling_wait),
        CASE(test_suspend_L6_T1_watched_lease_lost_after_suspend),
        CASE(test_suspend_M4_T1_leader_lost_after_suspend),
        CASE(test_suspend_T1_reaper_pass_after_suspend),
    };
    const struct CMUnitTest pg_tests[] = {
        CASE(test_suspend_T1_pg_round_trip_bound),
    };
    int rc;

    rc = TU_RUN_PER_URL("suspend", &g_url, tests, tu_group_schema, NULL);
    rc = tu_status_merge(rc, TU_RUN_ON_DRIVER("suspend round trip",
                                              "postgres", &g_url, pg_tests,
                                              tu_group_schema));
    return rc;
}
