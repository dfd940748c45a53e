/*
 * test_fair.c -- fair (FIFO) waiting, SQLLOCK_LEASE_FAIR (DESIGN M3:
 * waiters are leases in a queue; the oldest live waiter gets the lock
 * next and only it is woken; a dead waiter leaves by expiry).
 *
 * Real processes (and, for the count of wake-ups, threads with handles of
 * their own) contend on every driver of SQLLOCK_TEST_URLS. Arrival order
 * is made known by the database itself: the next waiter is started only
 * once the previous one's queue row is there, so no case depends on
 * timing for its order. Bounds that depend on timing are scaled with
 * tu_scaled_ms(). The exclusion case runs SQLLOCK_FAIR_SECONDS (8 s by
 * default, 4 s under ASan and TSan; not under valgrind,
 * tests/CMakeLists.txt).
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

#define WAITERS 8
#define MAXPROCS 16

static const char *g_url;

typedef struct shm {
    _Atomic int next;                   /* grants so far */
    _Atomic int in_lock;
    _Atomic int overlaps;
    _Atomic int failures;
    int64_t counter;                    /* read, sleep, write + 1 */
    int order[256];                     /* waiter index per grant */
    int64_t token[256];
    _Atomic int64_t granted_at[MAXPROCS];
    _Atomic int64_t grants[MAXPROCS];
} shm;

static sqllock_lease *new_lease(sqllock_db *db, const char *name,
                                int64_t ttl_ms, int64_t backoff_max_ms,
                                unsigned flags)
{
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_lease *l = NULL;

    o.ttl_ms = ttl_ms;
    o.backoff_min_ms = backoff_max_ms;     /* 0: the defaults */
    o.backoff_max_ms = backoff_max_ms;
    o.flags = flags;
    if (sqllock_lease_new(db, name, &o, &l) != SQLLOCK_OK)
        return NULL;
    return l;
}

/* The queue rows of `name` (NAME 0x1f 'q' ...): live ones in *live, all
 * (expired ones too) returned. */
typedef struct qcount {
    const char *prefix;
    size_t len;
    int live, all;
} qcount;

static int count_row(void *ctx, const sqllock_lease_info *in)
{
    qcount *q = ctx;

    if (strncmp(in->name, q->prefix, q->len) == 0) {
        q->all++;
        if (in->remaining_ms > 0)
            q->live++;
    }
    return 0;
}

static int count_row_any(void *ctx, const sqllock_lease_info *in)
{
    (void)ctx;
    (void)in;
    return 0;
}

static int queue_rows(sqllock_db *db, const char *name, int *live)
{
    char lo[SQLLOCK__DERIVED_MAX + 1], hi[SQLLOCK__DERIVED_MAX + 1],
         prefix[SQLLOCK__DERIVED_MAX + 2];
    qcount q;
    int rc;

    snprintf(prefix, sizeof prefix, "%s%cq", name, SQLLOCK__SEP);
    q.prefix = prefix;
    q.len = strlen(prefix);
    q.live = q.all = 0;
    sqllock__derived_range(name, lo, hi);
    rc = sqllock__lease_range(db, lo, hi, count_row, &q, "test");
    if (rc != SQLLOCK_OK)
        fail_msg("range: %s", sqllock_errmsg(db));
    if (live != NULL)
        *live = q.live;
    return q.all;
}

/* Waits (up to a scaled 20 s) until `name` has `n` live queue rows. */
static void await_queue(sqllock_db *db, const char *name, int n)
{
    int64_t end = tu_now_ms() + tu_scaled_ms(20000);
    int live = 0;

    for (;;) {
        queue_rows(db, name, &live);
        if (live == n)
            return;
        if (tu_now_ms() > end)
            fail_msg("queue of '%s' has %d live rows, want %d", name, live,
                     n);
        tu_sleep_ms(5);
    }
}

/* A holder whose handle is closed: the parent forks waiters with no
 * handle of its own open (a forked child would inherit its connection and
 * memory). The lease row is held; release_detached() attaches to it by
 * owner and token and releases it. */
typedef struct detached {
    char owner[SQLLOCK_OWNER_LEN + 1];
    int64_t token;
} detached;

static void hold_detached(const char *name, detached *d)
{
    sqllock_db *db = tu_open_or_fail(g_url);
    sqllock_lease *h = new_lease(db, name, 60000, 0, 0);

    assert_non_null(h);
    EXPECT_RC(db, sqllock_lease_try_acquire(h), SQLLOCK_OK, "holder");
    snprintf(d->owner, sizeof d->owner, "%s", sqllock_lease_owner(h));
    d->token = sqllock_lease_token(h);
    sqllock_lease_free(h);
    sqllock_close(db);
}

static void release_detached(const char *name, const detached *d)
{
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_db *db = tu_open_or_fail(g_url);
    sqllock_lease *h = NULL;

    o.ttl_ms = 60000;
    EXPECT_RC(db, sqllock_lease_attach(db, name, d->owner, d->token, &o, &h),
              SQLLOCK_OK, "attach");
    EXPECT_RC(db, sqllock_lease_release(h), SQLLOCK_OK, "holder release");
    sqllock_lease_free(h);
    sqllock_close(db);
}

/* await_queue() on a handle of its own, closed before it returns. */
static void await_queue_own(const char *name, int n)
{
    sqllock_db *db = tu_open_or_fail(g_url);

    await_queue(db, name, n);
    sqllock_close(db);
}

typedef struct waiter_arg {
    shm *m;
    const char *name;
    int idx;
    int64_t ttl_ms, hold_ms;
} waiter_arg;

/* A waiter process: a fair acquire, its grant recorded, `hold_ms` inside,
 * the release. Exit 0, or 1 after saying why. */
static int waiter_child(void *arg, int i)
{
    const waiter_arg *a = arg;
    shm *m = a->m;
    int idx = a->idx;
    sqllock_db *db = tu_child_open(g_url, "fair waiter");
    sqllock_lease *l;
    int rc, pos;

    (void)i;
    if (db == NULL)
        return 1;
    l = new_lease(db, a->name, a->ttl_ms, 0, SQLLOCK_LEASE_FAIR);
    if (l == NULL)
        return 1;
    rc = sqllock_lease_acquire(l, 60000);
    if (rc != SQLLOCK_OK) {
        fprintf(stderr, "waiter %d: %s: %s\n", idx, sqllock_errname(rc),
                sqllock_errmsg(db));
        return 1;
    }
    atomic_store(&m->granted_at[idx], tu_now_ms());
    if (atomic_fetch_add(&m->in_lock, 1) != 0)
        atomic_fetch_add(&m->overlaps, 1);
    pos = atomic_fetch_add(&m->next, 1);
    if (pos < 256) {
        m->order[pos] = idx;
        m->token[pos] = sqllock_lease_token(l);
    }
    tu_sleep_ms(a->hold_ms);
    atomic_fetch_sub(&m->in_lock, 1);
    if (sqllock_lease_release(l) != SQLLOCK_OK) {
        fprintf(stderr, "waiter %d: release: %s\n", idx, sqllock_errmsg(db));
        return 1;
    }
    sqllock_lease_free(l);
    sqllock_close(db);
    return 0;
}

static pid_t spawn_waiter(shm *m, const char *name, int idx, int64_t ttl_ms,
                          int64_t hold_ms)
{
    waiter_arg a = { m, name, idx, ttl_ms, hold_ms };

    return tu_fork(waiter_child, &a);
}

static void expect_exit0(pid_t pid, const char *what)
{
    int code = tu_wait(pid);

    if (code != 0)
        fail_msg("%s: ended with %s %d", what,
                 code >= 1000 ? "signal" : "status",
                 code >= 1000 ? code - 1000 : code);
}

/*
 * M3: 8 waiter processes arriving in a known order (each started once the
 * previous one's queue row is in the database, while one holder holds)
 * are served in that order, their grants' tokens increasing; none
 * overlaps another.
 */
static void test_fair_M3_served_in_arrival_order(void **state)
{
    shm *m = tu_shared_map(sizeof *m);
    sqllock_db *db;
    detached h;
    char name[64];
    pid_t pid[WAITERS];
    int i;
    (void)state;

    snprintf(name, sizeof name, "fair-order-%ld", (long)getpid());
    hold_detached(name, &h);
    for (i = 0; i < WAITERS; i++) {
        pid[i] = spawn_waiter(m, name, i, tu_scaled_ms(10000), 20);
        await_queue_own(name, i + 1);
    }
    release_detached(name, &h);
    for (i = 0; i < WAITERS; i++)
        expect_exit0(pid[i], "waiter");
    assert_int_equal(atomic_load(&m->next), WAITERS);
    assert_int_equal(atomic_load(&m->overlaps), 0);
    for (i = 0; i < WAITERS; i++) {
        if (m->order[i] != i)
            fail_msg("grant %d went to waiter %d (arrival order broken)", i,
                     m->order[i]);
        if (i > 0)
            assert_true(m->token[i] > m->token[i - 1]);
    }
    /* Each granted waiter deleted its row. */
    db = tu_open_or_fail(g_url);
    assert_int_equal(queue_rows(db, name, NULL), 0);
    sqllock_close(db);
    munmap(m, sizeof *m);
}

/*
 * M3: waiters SIGKILLed in the middle of the queue delay the rest by at
 * most their ttl (their rows expire by the server's clock; two dead
 * waiters expire side by side, not one after the other), and the order of
 * the live ones holds.
 */
static void test_fair_M3_dead_waiters_delay_at_most_ttl(void **state)
{
    enum { N = 5 };       /* 0, 3, 4 live; 1 and 2 killed */
    shm *m = tu_shared_map(sizeof *m);
    detached h;
    char name[64];
    pid_t pid[N];
    int64_t ttl = tu_scaled_ms(1000), margin = tu_scaled_ms(1500),
            killed_at, delay;
    int i, st;
    (void)state;

    snprintf(name, sizeof name, "fair-dead-%ld", (long)getpid());
    hold_detached(name, &h);
    for (i = 0; i < N; i++) {
        pid[i] = spawn_waiter(m, name, i, i == 1 || i == 2 ? ttl : 60000, 10);
        await_queue_own(name, i + 1);
    }
    kill(pid[1], SIGKILL);
    kill(pid[2], SIGKILL);
    killed_at = tu_now_ms();
    waitpid(pid[1], &st, 0);
    waitpid(pid[2], &st, 0);
    release_detached(name, &h);
    expect_exit0(pid[0], "waiter 0");
    expect_exit0(pid[3], "waiter 3");
    expect_exit0(pid[4], "waiter 4");
    assert_int_equal(atomic_load(&m->next), 3);
    assert_int_equal(m->order[0], 0);
    assert_int_equal(m->order[1], 3);
    assert_int_equal(m->order[2], 4);
    assert_int_equal(atomic_load(&m->overlaps), 0);
    delay = atomic_load(&m->granted_at[3]) - killed_at;
    printf("fair: waiter 3 granted %lld ms after two waiters ahead were "
           "killed (their ttl %lld ms)\n", (long long)delay, (long long)ttl);
    if (delay > ttl + margin)
        fail_msg("two dead waiters delayed the next by %lld ms; at most "
                 "their ttl %lld ms (+ %lld ms) allowed", (long long)delay,
                 (long long)ttl, (long long)margin);
    munmap(m, sizeof *m);
}

/* Waits until NAME holds no lease of at most `ttl` ms: a try of the
 * waiter killed below may still be in the server's hands (MySQL runs a
 * dead client's statement to its end), and granted after the holder's
 * release it leaves NAME held by the dead waiter until its ttl runs out
 * -- the library doing right, which this test must wait out, not call
 * a failure. The detached holder's 60 s lease is not waited for. */
static int name_ttl_cb(void *ctx, const sqllock_lease_info *info)
{
    int64_t *ttl_left = ctx;

    ttl_left[0] = info->expires_at_ms - info->acquired_at_ms;
    ttl_left[1] = info->remaining_ms;
    return 0;
}

static void await_no_dead_grant(sqllock_db *db, const char *name,
                                int64_t ttl)
{
    int64_t end = tu_now_ms() + ttl + tu_scaled_ms(5000), tl[2];

    for (;;) {
        tl[0] = tl[1] = 0;
        if (sqllock_lease_lookup(db, name, name_ttl_cb, tl) != SQLLOCK_OK ||
            tl[0] > ttl + 1000 || tl[1] <= 0)
            return;             /* none, the holder's own, or expired */
        if (tu_now_ms() >= end)
            fail_msg("'%s' is still held by a lease of %lld ms", name,
                     (long long)tl[0]);
        tu_sleep_ms(20);
    }
}

/*
 * M3: a fair try (and an acquire with wait 0) is BUSY while a live waiter
 * is queued, even with the lock itself free; an unfair handle barges (as
 * documented); once the queue row has expired the fair try succeeds.
 */
static void test_fair_M3_try_busy_while_queued(void **state)
{
    shm *m = tu_shared_map(sizeof *m);
    sqllock_db *db = tu_open_or_fail(g_url);
    sqllock_lease *f, *u;
    detached d;
    char name[64];
    pid_t pid;
    int st, live = -1, rc;
    int64_t ttl = tu_scaled_ms(500), end;
    (void)state;

    snprintf(name, sizeof name, "fair-try-%ld", (long)getpid());
    f = new_lease(db, name, 60000, 0, SQLLOCK_LEASE_FAIR);
    u = new_lease(db, name, 60000, 0, 0);
    assert_non_null(f);
    assert_non_null(u);
    /* An empty queue: a fair try is an ordinary one. */
    EXPECT_RC(db, sqllock_lease_try_acquire(f), SQLLOCK_OK, "fair try");
    EXPECT_RC(db, sqllock_lease_try_acquire(f), SQLLOCK_OK, "reentrant");
    assert_int_equal(sqllock_lease_count(f), 2);
    EXPECT_RC(db, sqllock_lease_release(f), SQLLOCK_OK, "release");
    EXPECT_RC(db, sqllock_lease_release(f), SQLLOCK_OK, "release");

    sqllock_lease_free(f);
    sqllock_lease_free(u);
    sqllock_close(db);
    hold_detached(name, &d);
    pid = spawn_waiter(m, name, 0, ttl, 10);
    await_queue_own(name, 1);
    kill(pid, SIGKILL);
    waitpid(pid, &st, 0);
    release_detached(name, &d);
    db = tu_open_or_fail(g_url);
    f = new_lease(db, name, 60000, 0, SQLLOCK_LEASE_FAIR);
    u = new_lease(db, name, 60000, 0, 0);
    assert_non_null(f);
    assert_non_null(u);
    /* The lock is free, a (dead) waiter is queued. A late grant to the
     * dead waiter (await_no_dead_grant()) is waited out, once, where it
     * would show. */
    await_no_dead_grant(db, name, ttl);
    rc = sqllock_lease_try_acquire(f);
    if (rc == SQLLOCK_BUSY && strstr(sqllock_errmsg(db), "queued") == NULL) {
        await_no_dead_grant(db, name, ttl);
        rc = sqllock_lease_try_acquire(f);
    }
    EXPECT_RC(db, rc, SQLLOCK_BUSY, "fair try");
    assert_non_null(strstr(sqllock_errmsg(db), "queued"));
    EXPECT_RC(db, sqllock_lease_acquire(f, 0), SQLLOCK_BUSY, "fair wait 0");
    rc = sqllock_lease_try_acquire(u);
    if (rc == SQLLOCK_BUSY) {
        await_no_dead_grant(db, name, ttl);
        rc = sqllock_lease_try_acquire(u);
    }
    EXPECT_RC(db, rc, SQLLOCK_OK, "unfair barges");
    EXPECT_RC(db, sqllock_lease_release(u), SQLLOCK_OK, "release");
    /* Its row expires within its ttl; then the fair try gets the lock. */
    end = tu_now_ms() + ttl + tu_scaled_ms(3000);
    do {
        tu_sleep_ms(20);
        queue_rows(db, name, &live);
    } while (live > 0 && tu_now_ms() < end);
    assert_int_equal(live, 0);
    EXPECT_RC(db, sqllock_lease_try_acquire(f), SQLLOCK_OK, "fair try");
    EXPECT_RC(db, sqllock_lease_release(f), SQLLOCK_OK, "release");
    sqllock_lease_free(f);
    sqllock_lease_free(u);
    sqllock_close(db);
    munmap(m, sizeof *m);
}

/* M3: a waiter that times out deletes its queue row (not left to
 * expire), and the waiter behind it moves up. */
static void test_fair_M3_timeout_removes_entry(void **state)
{
    sqllock_db *db = tu_open_or_fail(g_url), *w = tu_open_or_fail(g_url);
    sqllock_lease *h, *f;
    char name[64];
    int64_t t0, took;
    (void)state;

    snprintf(name, sizeof name, "fair-timeout-%ld", (long)getpid());
    h = new_lease(db, name, 60000, 0, 0);
    f = new_lease(w, name, 60000, 0, SQLLOCK_LEASE_FAIR);
    assert_non_null(h);
    assert_non_null(f);
    EXPECT_RC(db, sqllock_lease_try_acquire(h), SQLLOCK_OK, "holder");
    t0 = tu_now_ms();
    EXPECT_RC(w, sqllock_lease_acquire(f, tu_scaled_ms(300)), SQLLOCK_TIMEOUT,
              "fair wait");
    took = tu_now_ms() - t0;
    assert_true(took >= tu_scaled_ms(300) - 5);
    assert_non_null(strstr(sqllock_errmsg(w), "fair"));
    assert_int_equal(sqllock_lease_count(f), 0);
    /* The row is gone, not merely expired (its ttl is 60 s). */
    assert_int_equal(queue_rows(db, name, NULL), 0);
    EXPECT_RC(db, sqllock_lease_release(h), SQLLOCK_OK, "release");
    /* Nothing queued: the fair try succeeds at once. */
    EXPECT_RC(w, sqllock_lease_acquire(f, 0), SQLLOCK_OK, "fair try");
    EXPECT_RC(w, sqllock_lease_release(f), SQLLOCK_OK, "release");
    sqllock_lease_free(h);
    sqllock_lease_free(f);
    sqllock_close(db);
    sqllock_close(w);
}

/*
 * M3 "only it is woken": WAITERS threads (each with a handle of its own)
 * queue behind a holder, their backoff cap 60 s, so that a pause ends only
 * by a wake-up (PostgreSQL NOTIFY, MySQL companion lock, in-process key on
 * SQLite) or a renewal of the waiter's row. Each grant then wakes the new
 * holder and the new head only: every waiter pauses a small constant
 * number of times, however far back in the queue it stood. Were all
 * waiters woken by each release (a herd), the last would pause at least
 * once per grant ahead of it.
 */
typedef struct herd {
    const char *name;
    int idx;
    shm *m;
    int pauses;
} herd;

static _Thread_local int t_pauses;

static void count_pause(const char *name, int64_t sleep_ms, int listening)
{
    (void)name;
    (void)sleep_ms;
    (void)listening;
    t_pauses++;
}

static _Atomic int g_herd_started;

static void *herd_thread(void *p)
{
    herd *h = p;
    sqllock_db *db = NULL;
    sqllock_lease *l;
    int rc, pos;

    if (sqllock_open(g_url, NULL, &db) != SQLLOCK_OK) {
        atomic_fetch_add(&h->m->failures, 1);
        sqllock_close(db);
        return NULL;
    }
    l = new_lease(db, h->name, 60000, 60000, SQLLOCK_LEASE_FAIR);
    if (l == NULL) {
        atomic_fetch_add(&h->m->failures, 1);
        sqllock_close(db);
        return NULL;
    }
    t_pauses = 0;
    atomic_fetch_add(&g_herd_started, 1);
    rc = sqllock_lease_acquire(l, 60000);
    h->pauses = t_pauses;
    if (rc != SQLLOCK_OK) {
        fprintf(stderr, "herd %d: %s\n", h->idx, sqllock_errmsg(db));
        atomic_fetch_add(&h->m->failures, 1);
    } else {
        pos = atomic_fetch_add(&h->m->next, 1);
        h->m->order[pos] = h->idx;
        tu_sleep_ms(20);
        if (sqllock_lease_release(l) != SQLLOCK_OK)
            atomic_fetch_add(&h->m->failures, 1);
    }
    sqllock_lease_free(l);
    sqllock_close(db);
    return NULL;
}

static void test_fair_M3_only_head_woken(void **state)
{
    shm *m = tu_shared_map(sizeof *m);
    sqllock_db *db = tu_open_or_fail(g_url);
    sqllock_lease *h;
    char name[64];
    pthread_t t[WAITERS];
    herd hs[WAITERS];
    int i, total = 0;
    (void)state;

    snprintf(name, sizeof name, "fair-herd-%ld", (long)getpid());
    h = new_lease(db, name, 60000, 0, 0);
    assert_non_null(h);
    EXPECT_RC(db, sqllock_lease_try_acquire(h), SQLLOCK_OK, "holder");
    atomic_store(&sqllock__on_backoff, count_pause);
    for (i = 0; i < WAITERS; i++) {
        hs[i].name = name;
        hs[i].idx = i;
        hs[i].m = m;
        hs[i].pauses = 0;
        assert_int_equal(pthread_create(&t[i], NULL, herd_thread, &hs[i]), 0);
        await_queue(db, name, i + 1);
    }
    tu_sleep_ms(tu_scaled_ms(100));   /* all asleep */
    EXPECT_RC(db, sqllock_lease_release(h), SQLLOCK_OK, "holder release");
    for (i = 0; i < WAITERS; i++)
        pthread_join(t[i], NULL);
    atomic_store(&sqllock__on_backoff, NULL);
    assert_int_equal(atomic_load(&m->failures), 0);
    assert_int_equal(atomic_load(&m->next), WAITERS);
    printf("fair: pauses per waiter (arrival order):");
    for (i = 0; i < WAITERS; i++) {
        printf(" %d", hs[i].pauses);
        total += hs[i].pauses;
        assert_int_equal(m->order[i], i);
    }
    printf("\n");
    /* A waiter pauses on the one ahead and is woken once when it is
     * granted, then pauses on the lock as the head and is woken by its
     * release: 2 (1 for the first), 15 in all. A herd (every waiter woken
     * by every grant) makes the k-th pause about k times: 36 and more.
     * In-process wake-up keys share 256 slots (core/wake.c): a waiter
     * whose key shares the lock's slot is woken, spuriously, by each
     * release (up to 7 more); 3 per waiter allows one such. */
    if (total > 3 * WAITERS)
        fail_msg("the waiters paused %d times in all, more than %d: woken "
                 "by grants that were not their turn (a herd)", total,
                 3 * WAITERS);
    sqllock_lease_free(h);
    sqllock_close(db);
    munmap(m, sizeof *m);
}

/*
 * M3 with L1: fair waiter processes contend for a fixed time on one name
 * with a short critical section; a counter read, held and written back
 * under the lock ends exactly at the number of grants; every process was
 * served.
 */
typedef struct excl {
    shm *m;
    const char *name;
    int seconds;
} excl;

/* Contender i: fair acquires, an unlocked read-sleep-write of the counter
 * inside, for x->seconds. */
static int contender(void *arg, int i)
{
    const excl *x = arg;
    shm *m = x->m;
    sqllock_db *db = tu_child_open(g_url, "fair contender");
    sqllock_lease *l;
    int64_t end = tu_now_ms() + x->seconds * 1000, v;
    int rc;

    if (db == NULL)
        return 1;
    l = new_lease(db, x->name, tu_scaled_ms(5000), 0, SQLLOCK_LEASE_FAIR);
    if (l == NULL)
        return 1;
    while (tu_now_ms() < end) {
        rc = sqllock_lease_acquire(l, 60000);
        if (rc != SQLLOCK_OK) {
            fprintf(stderr, "contender %d: %s\n", i, sqllock_errmsg(db));
            return 1;
        }
        if (atomic_fetch_add(&m->in_lock, 1) != 0)
            atomic_fetch_add(&m->overlaps, 1);
        v = m->counter;
        tu_sleep_us(1000);
        m->counter = v + 1;
        atomic_fetch_sub(&m->in_lock, 1);
        atomic_fetch_add(&m->grants[i], 1);
        if (sqllock_lease_release(l) != SQLLOCK_OK) {
            fprintf(stderr, "contender %d: release: %s\n", i,
                    sqllock_errmsg(db));
            return 1;
        }
    }
    sqllock_lease_free(l);
    sqllock_close(db);
    return 0;
}

static void test_fair_M3_exclusion_counter(void **state)
{
    enum { PROCS = 6 };
    shm *m = tu_shared_map(sizeof *m);
    const char *env = getenv("SQLLOCK_FAIR_SECONDS");
    int seconds = env != NULL && atoi(env) > 0 ? atoi(env)
                  : tu_slowdown_tool() > 1 ? 4 : 8;
    char name[64];
    excl x;
    pid_t pid[PROCS];
    int64_t total = 0;
    int i;
    (void)state;

    snprintf(name, sizeof name, "fair-excl-%ld", (long)getpid());
    x.m = m;
    x.name = name;
    x.seconds = seconds;
    tu_fork_n(pid, PROCS, contender, &x);
    for (i = 0; i < PROCS; i++)
        expect_exit0(pid[i], "contender");
    printf("fair: grants per process in %d s:", seconds);
    for (i = 0; i < PROCS; i++) {
        printf(" %lld", (long long)atomic_load(&m->grants[i]));
        total += atomic_load(&m->grants[i]);
        assert_true(atomic_load(&m->grants[i]) > 0);
    }
    printf("\n");
    assert_int_equal(atomic_load(&m->overlaps), 0);
    assert_int_equal(m->counter, total);
    munmap(m, sizeof *m);
}

/* E2: what fair leases refuse. */
/*
 * L9, E3 (sqllock_lease_cancel()): a wait ended from another thread.
 * A waiter thread waits without a deadline behind a holder; the main
 * thread cancels it once it is queued (a fair waiter: its queue row is
 * there) or has tried (a plain one: it paused once). The wait returns
 * SQLLOCK_ECANCELED within a pause of its backoff (500 ms by default;
 * the bound below is scaled and generous), holds nothing, and a fair
 * waiter's queue row is gone, not left to expire (its ttl is 60 s). The
 * request was used up: the handle's next wait takes the lock.
 */
typedef struct cancel_arg {
    sqllock_lease *l;
    _Atomic int rc;
    _Atomic int done;
} cancel_arg;

static _Atomic int g_cancel_pauses;

static void cancel_count_pause(const char *name, int64_t sleep_ms,
                               int listening)
{
    (void)name;
    (void)sleep_ms;
    (void)listening;
    atomic_fetch_add(&g_cancel_pauses, 1);
}

static void *cancel_waiter(void *p)
{
    cancel_arg *a = p;

    atomic_store(&a->rc, sqllock_lease_acquire(a->l, SQLLOCK_WAIT_FOREVER));
    atomic_store(&a->done, 1);
    return NULL;
}

static void cancel_case(unsigned flags)
{
    sqllock_db *db = tu_open_or_fail(g_url), *w = tu_open_or_fail(g_url);
    sqllock_lease *h, *f;
    cancel_arg a;
    pthread_t th;
    char name[64];
    int64_t t0, took, end;

    snprintf(name, sizeof name, "fair-cancel-%u-%ld", flags, (long)getpid());
    h = new_lease(db, name, 60000, 0, 0);
    f = new_lease(w, name, 60000, 0, flags);
    assert_non_null(h);
    assert_non_null(f);
    EXPECT_RC(db, sqllock_lease_try_acquire(h), SQLLOCK_OK, "holder");
    memset(&a, 0, sizeof a);
    a.l = f;
    atomic_store(&g_cancel_pauses, 0);
    atomic_store(&sqllock__on_backoff, cancel_count_pause);
    assert_int_equal(pthread_create(&th, NULL, cancel_waiter, &a), 0);
    if (flags & SQLLOCK_LEASE_FAIR) {
        await_queue(db, name, 1);
    } else {
        end = tu_now_ms() + tu_scaled_ms(20000);
        while (atomic_load(&g_cancel_pauses) == 0) {
            if (tu_now_ms() > end)
                fail_msg("the waiter never paused");
            tu_sleep_ms(5);
        }
    }
    assert_int_equal(atomic_load(&a.done), 0);
    t0 = tu_now_ms();
    assert_int_equal(sqllock_lease_cancel(f, 1), SQLLOCK_OK);
    end = t0 + tu_scaled_ms(10000);
    while (!atomic_load(&a.done)) {
        if (tu_now_ms() > end)
            fail_msg("a canceled wait went on for %lld ms",
                     (long long)(tu_now_ms() - t0));
        tu_sleep_ms(2);
    }
    took = tu_now_ms() - t0;
    pthread_join(th, NULL);
    atomic_store(&sqllock__on_backoff, NULL);
    printf("canceled (%s) after %lld ms\n",
           flags & SQLLOCK_LEASE_FAIR ? "fair" : "plain", (long long)took);
    assert_int_equal(atomic_load(&a.rc), SQLLOCK_ECANCELED);
    assert_non_null(strstr(sqllock_errmsg(w), "canceled"));
    assert_int_equal(sqllock_lease_count(f), 0);
    assert_int_equal(queue_rows(db, name, NULL), 0);
    EXPECT_RC(db, sqllock_lease_release(h), SQLLOCK_OK, "release");
    /* Used up: the next wait is an ordinary one. */
    EXPECT_RC(w, sqllock_lease_acquire(f, tu_scaled_ms(5000)), SQLLOCK_OK,
              "the next wait");
    EXPECT_RC(w, sqllock_lease_release(f), SQLLOCK_OK, "release");
    sqllock_lease_free(h);
    sqllock_lease_free(f);
    sqllock_close(db);
    sqllock_close(w);
}

static void test_fair_L9_cancel_fair_wait(void **state)
{
    (void)state;
    cancel_case(SQLLOCK_LEASE_FAIR);
}

static void test_fair_L9_cancel_plain_wait(void **state)
{
    (void)state;
    cancel_case(0);
}

/*
 * L9, E3: a request made before the wait began ends it before its first
 * try (the name is free and stays free); one withdrawn (cancel 0) ends
 * nothing; the try and a wait of 0 do not look at it, and it stays for
 * the next wait. NULL is EINVAL.
 */
static void test_fair_L9_cancel_before_wait(void **state)
{
    sqllock_db *db = tu_open_or_fail(g_url);
    sqllock_lease *l, *p;
    char name[64];
    unsigned kinds[2] = { SQLLOCK_LEASE_FAIR, 0 };
    int k;
    (void)state;

    assert_int_equal(sqllock_lease_cancel(NULL, 1), SQLLOCK_EINVAL);
    for (k = 0; k < 2; k++) {
        snprintf(name, sizeof name, "fair-cancel-early-%d-%ld", k,
                 (long)getpid());
        l = new_lease(db, name, 60000, 0, kinds[k]);
        assert_non_null(l);
        assert_int_equal(sqllock_lease_cancel(l, 1), SQLLOCK_OK);
        EXPECT_RC(db, sqllock_lease_acquire(l, 1000), SQLLOCK_ECANCELED,
                  "a wait asked to end before it began");
        assert_int_equal(sqllock_lease_count(l), 0);
        assert_int_equal(sqllock_lease_lookup(db, name, count_row_any, NULL),
                         SQLLOCK_NOTFOUND);
        assert_int_equal(sqllock_lease_cancel(l, 1), SQLLOCK_OK);
        assert_int_equal(sqllock_lease_cancel(l, 0), SQLLOCK_OK);
        EXPECT_RC(db, sqllock_lease_acquire(l, 1000), SQLLOCK_OK,
                  "a wait whose request was withdrawn");
        EXPECT_RC(db, sqllock_lease_release(l), SQLLOCK_OK, "release");
        assert_int_equal(sqllock_lease_cancel(l, 1), SQLLOCK_OK);
        EXPECT_RC(db, sqllock_lease_try_acquire(l), SQLLOCK_OK,
                  "a try with a request pending");
        EXPECT_RC(db, sqllock_lease_release(l), SQLLOCK_OK, "release");
        EXPECT_RC(db, sqllock_lease_acquire(l, 0), SQLLOCK_OK,
                  "a wait of 0 with a request pending");
        EXPECT_RC(db, sqllock_lease_release(l), SQLLOCK_OK, "release");
        EXPECT_RC(db, sqllock_lease_acquire(l, 1000), SQLLOCK_ECANCELED,
                  "the request still pending");
        p = new_lease(db, name, 60000, 0, kinds[k]);
        assert_non_null(p);
        EXPECT_RC(db, sqllock_lease_try_acquire(p), SQLLOCK_OK,
                  "the name was left free");
        EXPECT_RC(db, sqllock_lease_release(p), SQLLOCK_OK, "release");
        sqllock_lease_free(p);
        sqllock_lease_free(l);
    }
    sqllock_close(db);
}

static void test_fair_E2_bad_input(void **state)
{
    sqllock_db *db = tu_open_or_fail(g_url);
    sqllock_lease *l = NULL, *ls[2];
    char longname[SQLLOCK_PRIMITIVE_NAME_MAX + 2];
    (void)state;

    memset(longname, 'a', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    assert_null(new_lease(db, longname, 1000, 0, SQLLOCK_LEASE_FAIR));
    assert_int_equal(sqllock_errcode(db), SQLLOCK_EINVAL);
    assert_non_null(strstr(sqllock_errmsg(db), "SQLLOCK_PRIMITIVE_NAME_MAX"));
    longname[SQLLOCK_PRIMITIVE_NAME_MAX] = '\0';
    l = new_lease(db, longname, 1000, 0, SQLLOCK_LEASE_FAIR);
    assert_non_null(l);
    ls[0] = l;
    ls[1] = new_lease(db, "fair-many-b", 1000, 0, 0);
    assert_non_null(ls[1]);
    EXPECT_RC(db, sqllock_lease_acquire_many(db, ls, 2, 0),
              SQLLOCK_EUNSUPPORTED, "many with a fair lease");
    assert_non_null(strstr(sqllock_errmsg(db), "SQLLOCK_LEASE_FAIR"));
    sqllock_lease_free(ls[1]);
    sqllock_lease_free(l);
    sqllock_close(db);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fair_E2_bad_input),
        cmocka_unit_test(test_fair_M3_served_in_arrival_order),
        cmocka_unit_test(test_fair_M3_dead_waiters_delay_at_most_ttl),
        cmocka_unit_test(test_fair_M3_try_busy_while_queued),
        cmocka_unit_test(test_fair_M3_timeout_removes_entry),
        cmocka_unit_test(test_fair_M3_only_head_woken),
        cmocka_unit_test(test_fair_M3_exclusion_counter),
        cmocka_unit_test(test_fair_L9_cancel_fair_wait),
        cmocka_unit_test(test_fair_L9_cancel_plain_wait),
        cmocka_unit_test(test_fair_L9_cancel_before_wait),
    };

    return TU_RUN_PER_URL("fair", &g_url, tests, tu_group_schema, NULL);
}
