/*
 * test_rw.c -- shared and exclusive holds on one name (contract M2), on
 * every database, with real processes:
 * - the basics: readers share, a writer excludes them and is excluded,
 *   bad calls refused, a plain lease on NAME refused (N1);
 * - readers never overlap a writer: reader and writer processes for a
 *   fixed time, each logging its enter/exit intervals on the monotonic
 *   clock, writers doing an unlocked read-increment-write of a counter
 *   that must end exact, and several readers inside at once at times;
 * - a writer is granted within a bound while readers keep arriving
 *   (readers overlapping without a gap: without writer preference it
 *   would wait forever);
 * - a SIGKILLed reader delays a writer by at most its ttl;
 * - L5: the exclusive grant's token grows with every exclusive grant,
 *   and a write fenced by an older one is refused.
 *
 * Runs once per URL in SQLLOCK_TEST_URLS (SQLLOCK_TEST_REQUIRE as in
 * test_conformance). SQLLOCK_RW_SECONDS sets the contention's length
 * (20 s; 8 s under ASan and TSan; not run under valgrind,
 * tests/CMakeLists.txt).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <inttypes.h>
#include <stdlib.h>
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <time.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "test_util.h"
#include "test_run.h"
#include "test_spawn.h"

static const char *g_url;

static void mkname(char *out, size_t size, const char *what)
{
    snprintf(out, size, "rw-%ld-%s", (long)getpid(), what);
}

static sqllock_rw *new_rw(sqllock_db *db, const char *name, int shared,
                          int64_t ttl_ms, int64_t backoff_max_ms)
{
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_rw *rw = NULL;

    o.ttl_ms = ttl_ms;
    o.backoff_min_ms = 2;
    o.backoff_max_ms = backoff_max_ms;
    EXPECT_RC(db, sqllock_rw_new(db, name, shared, &o, &rw), SQLLOCK_OK,
              "rw_new");
    return rw;
}

static int64_t mono_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* ---- the basics ---- */

/*
 * M2: two readers at once; a writer's try is BUSY while they hold (and
 * keeps nothing: a reader still gets in after it); once they leave the
 * writer gets it, and readers are then BUSY; a plain lease on NAME is
 * refused with SQLLOCK_EKIND (N1; test_kinds has the rest); a second
 * acquire on a holding handle counts its hold up (L8, as every kind:
 * the reader stays in after one release, and a writer stays out until
 * the second), a release of nothing is ENOTHELD.
 */
static void test_rw_M2_basics(void **state)
{
    sqllock_db *db = tu_open_or_fail(g_url), *db2 = tu_open_or_fail(g_url);
    sqllock_db *db3 = tu_open_or_fail(g_url);
    sqllock_rw *r1, *r2, *wr;
    sqllock_lease *plain = NULL;
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    char name[96];
    (void)state;

    mkname(name, sizeof name, "basics");
    r1 = new_rw(db, name, 1, 30000, 50);
    r2 = new_rw(db2, name, 1, 30000, 50);
    wr = new_rw(db3, name, 0, 30000, 50);
    assert_int_equal(sqllock_rw_shared(r1), 1);
    assert_int_equal(sqllock_rw_shared(wr), 0);
    EXPECT_RC(db, sqllock_rw_release(r1), SQLLOCK_ENOTHELD, "release idle");
    expect_msg_any(db, "release idle", "does not hold");
    EXPECT_RC(db, sqllock_rw_try_acquire(r1), SQLLOCK_OK, "r1");
    EXPECT_RC(db2, sqllock_rw_try_acquire(r2), SQLLOCK_OK, "r2");
    assert_true(sqllock_lease_token(sqllock_rw_lease(r1)) > 0);
    assert_true(sqllock_lease_token(sqllock_rw_lease(r2)) !=
                sqllock_lease_token(sqllock_rw_lease(r1)));
    assert_true(sqllock_lease_held(sqllock_rw_lease(r2)));
    {
        int64_t token = sqllock_lease_token(sqllock_rw_lease(r1));

        EXPECT_RC(db, sqllock_rw_try_acquire(r1), SQLLOCK_OK, "again");
        assert_int_equal(sqllock_lease_count(sqllock_rw_lease(r1)), 2);
        assert_int_equal(sqllock_lease_token(sqllock_rw_lease(r1)), token);
        EXPECT_RC(db, sqllock_rw_release(r1), SQLLOCK_OK, "count down");
        assert_int_equal(sqllock_lease_count(sqllock_rw_lease(r1)), 1);
        assert_true(sqllock_lease_held(sqllock_rw_lease(r1)));
    }
    EXPECT_RC(db3, sqllock_rw_try_acquire(wr), SQLLOCK_BUSY, "writer try");
    expect_msg_any(db3, "writer try", "readers");
    EXPECT_RC(db2, sqllock_rw_release(r2), SQLLOCK_OK, "r2 release");
    EXPECT_RC(db2, sqllock_rw_try_acquire(r2), SQLLOCK_OK, "r2 again");
    EXPECT_RC(db3, sqllock_rw_acquire(wr, 200), SQLLOCK_TIMEOUT, "writer wait");
    /* N1: a plain lease on NAME is not another lock beside the pair: it
     * is refused, naming the kind the name has. */
    o.ttl_ms = 30000;
    EXPECT_RC(db3, sqllock_lease_new(db3, name, &o, &plain), SQLLOCK_OK, "p");
    EXPECT_RC(db3, sqllock_lease_try_acquire(plain), SQLLOCK_EKIND, "plain");
    expect_msg_any(db3, "plain", "shared/exclusive");
    EXPECT_RC(db, sqllock_rw_release(r1), SQLLOCK_OK, "r1 release");
    EXPECT_RC(db2, sqllock_rw_release(r2), SQLLOCK_OK, "r2 release");
    EXPECT_RC(db3, sqllock_rw_acquire(wr, 5000), SQLLOCK_OK, "writer");
    assert_true(sqllock_lease_held(sqllock_rw_lease(wr)));
    EXPECT_RC(db, sqllock_rw_try_acquire(r1), SQLLOCK_BUSY, "reader vs writer");
    expect_msg_any(db, "reader vs writer", "writer");
    EXPECT_RC(db, sqllock_rw_acquire(r1, 100), SQLLOCK_TIMEOUT, "reader wait");
    /* L8 for the exclusive hold: counted up, the readers kept out until
     * the last release. */
    EXPECT_RC(db3, sqllock_rw_acquire(wr, 1000), SQLLOCK_OK, "writer again");
    assert_int_equal(sqllock_lease_count(sqllock_rw_lease(wr)), 2);
    EXPECT_RC(db3, sqllock_rw_release(wr), SQLLOCK_OK, "writer count down");
    EXPECT_RC(db, sqllock_rw_try_acquire(r1), SQLLOCK_BUSY, "still a writer");
    EXPECT_RC(db3, sqllock_rw_release(wr), SQLLOCK_OK, "writer release");
    EXPECT_RC(db3, sqllock_rw_release(wr), SQLLOCK_ENOTHELD, "twice");
    EXPECT_RC(db, sqllock_rw_acquire(r1, 5000), SQLLOCK_OK, "reader after");
    EXPECT_RC(db, sqllock_rw_release(r1), SQLLOCK_OK, "reader release");
    EXPECT_RC(db3, sqllock_lease_release(plain), SQLLOCK_ENOTHELD,
              "plain release");
    sqllock_lease_free(plain);
    sqllock_rw_free(r1);
    sqllock_rw_free(r2);
    sqllock_rw_free(wr);
    sqllock_close(db);
    sqllock_close(db2);
    sqllock_close(db3);
}

/* ---- readers never overlap a writer ---- */

#define READERS 4
#define WRITERS 2
#define LOG_MAX 60000

typedef struct interval {
    int64_t enter_us, exit_us, token;
    int writer;
} interval;

typedef struct contend {
    char name[96];
    int64_t run_ms;
    _Atomic int readers_in, writers_in, max_readers, overlaps, failures;
    _Atomic int nlog;
    _Atomic int64_t writes;
    int64_t counter;                    /* unlocked read-increment-write */
    interval log[LOG_MAX];
} contend;

static void note_max(_Atomic int *max, int v)
{
    int cur = atomic_load(max);

    while (cur < v && !atomic_compare_exchange_weak(max, &cur, v))
        ;
}

/* Contender i: a reader for i < READERS, then a writer. */
static int contend_child(void *arg, int i)
{
    contend *c = arg;
    int writer = i >= READERS;
    unsigned seed = 17u * (unsigned)i + 1;
    sqllock_db *db = tu_child_open(g_url, "rw contender");
    sqllock_rw *rw = NULL;
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    int64_t end = tu_now_ms() + c->run_ms;
    int rc, slot;

    if (db == NULL)
        return 2;
    o.ttl_ms = tu_scaled_ms(10000);
    o.backoff_min_ms = 2;
    o.backoff_max_ms = 40;
    if (sqllock_rw_new(db, c->name, !writer, &o, &rw) != SQLLOCK_OK) {
        fprintf(stderr, "rw_new: %s\n", sqllock_errmsg(db));
        return 2;
    }
    srand(seed);
    while (tu_now_ms() < end) {
        interval iv;

        rc = sqllock_rw_acquire(rw, 60000);
        if (rc != SQLLOCK_OK) {
            fprintf(stderr, "%s acquire: %s: %s\n", writer ? "writer" :
                    "reader", sqllock_errname(rc), sqllock_errmsg(db));
            atomic_fetch_add(&c->failures, 1);
            break;
        }
        iv.enter_us = mono_us();
        iv.writer = writer;
        iv.token = sqllock_lease_token(sqllock_rw_lease(rw));
        if (writer) {
            int64_t v;

            if (atomic_fetch_add(&c->writers_in, 1) != 0 ||
                atomic_load(&c->readers_in) != 0)
                atomic_fetch_add(&c->overlaps, 1);
            v = c->counter;
            tu_sleep_us(1000 + rand() % 2000);
            c->counter = v + 1;
            atomic_fetch_add(&c->writes, 1);
            if (atomic_load(&c->readers_in) != 0)
                atomic_fetch_add(&c->overlaps, 1);
            atomic_fetch_sub(&c->writers_in, 1);
        } else {
            int in = atomic_fetch_add(&c->readers_in, 1) + 1;

            note_max(&c->max_readers, in);
            if (atomic_load(&c->writers_in) != 0)
                atomic_fetch_add(&c->overlaps, 1);
            tu_sleep_us(2000 + rand() % 15000);
            if (atomic_load(&c->writers_in) != 0)
                atomic_fetch_add(&c->overlaps, 1);
            atomic_fetch_sub(&c->readers_in, 1);
        }
        iv.exit_us = mono_us();
        rc = sqllock_rw_release(rw);
        if (rc != SQLLOCK_OK) {
            fprintf(stderr, "release: %s: %s\n", sqllock_errname(rc),
                    sqllock_errmsg(db));
            atomic_fetch_add(&c->failures, 1);
            break;
        }
        slot = atomic_fetch_add(&c->nlog, 1);
        if (slot < LOG_MAX)
            c->log[slot] = iv;
        tu_sleep_us((writer ? 5000 : 0) + rand() % 8000);
    }
    sqllock_rw_free(rw);
    sqllock_close(db);
    return 0;
}

static int cmp_enter(const void *a, const void *b)
{
    const interval *x = a, *y = b;

    return x->enter_us < y->enter_us ? -1 : x->enter_us > y->enter_us;
}

static void test_rw_M2_readers_never_overlap_writer(void **state)
{
    contend *c = tu_shared_map(sizeof *c);
    const char *secs = getenv("SQLLOCK_RW_SECONDS");
    pid_t pid[READERS + WRITERS];
    int i, j, n, bad, reads = 0, writes = 0, overlaps = 0;
    int64_t last_token = 0, last_exit = 0;
    (void)state;

    mkname(c->name, sizeof c->name, "contend");
    /* A duration, not a bound: not scaled by the slowdown. 20 s in the
     * plain build, 8 s under ASan and TSan. */
    c->run_ms = (secs != NULL ? atoi(secs)
                 : tu_slowdown_tool() > 1 ? 8 : 20) * 1000;
    tu_fork_n(pid, READERS + WRITERS, contend_child, c);
    bad = tu_wait_all(pid, READERS + WRITERS);
    assert_int_equal(bad, 0);
    assert_int_equal(atomic_load(&c->failures), 0);
    n = atomic_load(&c->nlog);
    if (n > LOG_MAX)
        n = LOG_MAX;
    /* The interval log: a writer's interval meets no other interval. */
    qsort(c->log, (size_t)n, sizeof c->log[0], cmp_enter);
    for (i = 0; i < n; i++) {
        if (!c->log[i].writer) {
            reads++;
            continue;
        }
        writes++;
        /* L5: exclusive grants come in token order. */
        if (c->log[i].token <= last_token)
            fail_msg("L5: exclusive token %lld after %lld",
                     (long long)c->log[i].token, (long long)last_token);
        last_token = c->log[i].token;
        if (c->log[i].enter_us < last_exit)
            overlaps++;
        for (j = 0; j < n; j++)
            if (j != i && c->log[j].enter_us < c->log[i].exit_us &&
                c->log[i].enter_us < c->log[j].exit_us) {
                overlaps++;
                if (overlaps < 5)
                    print_message("    overlap: writer [%lld, %lld] and "
                                  "%s [%lld, %lld]\n",
                                  (long long)c->log[i].enter_us,
                                  (long long)c->log[i].exit_us,
                                  c->log[j].writer ? "writer" : "reader",
                                  (long long)c->log[j].enter_us,
                                  (long long)c->log[j].exit_us);
            }
        last_exit = c->log[i].exit_us;
    }
    print_message("    %d shared and %d exclusive holds in %lld s, at most "
                  "%d readers at once\n", reads, writes,
                  (long long)c->run_ms / 1000, atomic_load(&c->max_readers));
    if (overlaps != 0 || atomic_load(&c->overlaps) != 0)
        fail_msg("M2: %d overlapping intervals, %d overlaps seen inside",
                 overlaps, atomic_load(&c->overlaps));
    if (c->counter != atomic_load(&c->writes))
        fail_msg("M2: counter %lld after %lld exclusive increments",
                 (long long)c->counter, (long long)atomic_load(&c->writes));
    assert_true(writes >= WRITERS);
    assert_true(reads >= READERS);
    /* Readers did share. */
    assert_true(atomic_load(&c->max_readers) >= 2);
    munmap(c, sizeof *c);
}

/* ---- a writer within a bound while readers keep arriving ---- */

typedef struct stream {
    char name[96];
    int64_t hold_ms, run_until_ms;
    _Atomic int started, readers_in, max_readers, failures, stop;
    _Atomic int64_t holds;
} stream;

/* A reader that holds for hold_ms, lets go and comes back at once,
 * until run_until_ms; readers start staggered so that one is always
 * inside (without a writer). */
static int stream_child(void *arg, int i)
{
    stream *s = arg;
    sqllock_db *db = tu_child_open(g_url, "rw stream reader");
    sqllock_rw *rw = NULL;
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    int rc;

    if (db == NULL)
        return 2;
    o.ttl_ms = tu_scaled_ms(10000);
    o.backoff_min_ms = 2;
    o.backoff_max_ms = 20;
    if (sqllock_rw_new(db, s->name, 1, &o, &rw) != SQLLOCK_OK)
        return 2;
    tu_sleep_ms(i * s->hold_ms / 3);
    atomic_fetch_add(&s->started, 1);
    while (!atomic_load(&s->stop) && tu_now_ms() < s->run_until_ms) {
        rc = sqllock_rw_acquire(rw, 60000);
        if (rc != SQLLOCK_OK) {
            fprintf(stderr, "stream reader: %s\n", sqllock_errmsg(db));
            atomic_fetch_add(&s->failures, 1);
            break;
        }
        note_max(&s->max_readers, atomic_fetch_add(&s->readers_in, 1) + 1);
        atomic_fetch_add(&s->holds, 1);
        tu_sleep_ms(s->hold_ms);
        atomic_fetch_sub(&s->readers_in, 1);
        if (sqllock_rw_release(rw) != SQLLOCK_OK) {
            atomic_fetch_add(&s->failures, 1);
            break;
        }
    }
    sqllock_rw_free(rw);
    sqllock_close(db);
    return 0;
}

/*
 * M2 (no starvation): three readers, each holding 400 ms and coming back
 * at once, staggered so that the name is never free of readers. A writer
 * arriving in that stream is granted after at most the hold of the
 * readers inside when it came (plus a scaled margin for the polls), and
 * no reader is inside when it is.
 */
static void test_rw_M2_writer_bound_while_readers_arrive(void **state)
{
    stream *s = tu_shared_map(sizeof *s);
    sqllock_db *db;
    sqllock_rw *wr;
    pid_t pid[3];
    int inside;
    int64_t t0, waited, bound;
    (void)state;

    mkname(s->name, sizeof s->name, "stream");
    s->hold_ms = 400;
    bound = s->hold_ms + tu_scaled_ms(600);
    /* A cap: the readers stop once the writer is done. */
    s->run_until_ms = tu_now_ms() + tu_scaled_ms(5000) + 2 * bound + 2000;
    tu_fork_n(pid, 3, stream_child, s);
    db = tu_open_or_fail(g_url);
    wr = new_rw(db, s->name, 0, tu_scaled_ms(10000), 20);
    /* The stream is running: every reader in, and a few holds over. */
    while (atomic_load(&s->started) < 3 || atomic_load(&s->holds) < 6)
        tu_sleep_ms(10);
    assert_true(atomic_load(&s->readers_in) > 0);
    t0 = tu_now_ms();
    EXPECT_RC(db, sqllock_rw_acquire(wr, 60000), SQLLOCK_OK, "writer");
    waited = tu_now_ms() - t0;
    inside = atomic_load(&s->readers_in);
    tu_sleep_ms(50);
    inside += atomic_load(&s->readers_in);
    EXPECT_RC(db, sqllock_rw_release(wr), SQLLOCK_OK, "writer release");
    atomic_store(&s->stop, 1);
    assert_int_equal(tu_wait_all(pid, 3), 0);
    print_message("    writer granted after %lld ms in a stream of readers "
                  "holding %lld ms (bound %lld ms; %lld shared holds, at "
                  "most %d at once)\n", (long long)waited,
                  (long long)s->hold_ms, (long long)bound,
                  (long long)atomic_load(&s->holds),
                  atomic_load(&s->max_readers));
    assert_int_equal(inside, 0);
    assert_int_equal(atomic_load(&s->failures), 0);
    assert_true(atomic_load(&s->max_readers) >= 2);
    if (waited > bound)
        fail_msg("M2: the writer waited %lld ms, more than the readers' "
                 "hold %lld ms plus margin (bound %lld ms)",
                 (long long)waited, (long long)s->hold_ms, (long long)bound);
    sqllock_rw_free(wr);
    sqllock_close(db);
    munmap(s, sizeof *s);
}

/* ---- waiting writers under load ---- */

#define LOAD_READERS 6
#define LOAD_WRITERS 3

typedef struct load {
    char name[96];
    int64_t run_until_ms;                     /* set before go */
    _Atomic int ready, go;                    /* the start barrier */
    _Atomic int stop, readers_done;
    _Atomic int grants, reads, overstays;
    _Atomic int bad[LOAD_WRITERS];            /* per writer: bad statuses */
    _Atomic int bad_status[LOAD_WRITERS];     /* the first one */
    char bad_msg[LOAD_WRITERS][SQLLOCK__ERRMSG_MAX];
} load;

/* A child of the load, its handles made: says so and waits for the
 * parent's go, so that the window (run_until_ms) starts when every
 * child can take part -- under valgrind on a loaded machine a child's
 * start and connect can take longer than the window. */
static int load_start(load *ld)
{
    atomic_fetch_add(&ld->ready, 1);
    TU_WAIT_WHILE(!atomic_load(&ld->go), tu_now_ms() + tu_scaled_ms(60000),
                  2);
    return atomic_load(&ld->go);
}

/* A reader of the load: short holds back to back; now and then (one in
 * eight) a reader with a short ttl that overstays it, so that its row
 * expires under the writers' eyes and their check deletes it
 * (RW_EXPIRE) while other readers come and go. */
static int load_reader(void *arg, int i)
{
    load *ld = arg;
    sqllock_db *db = tu_child_open(g_url, "rw load reader");
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT, os;
    sqllock_rw *rw = NULL, *shortlived = NULL;
    int rc;

    if (db == NULL)
        return 2;
    srand(31u * (unsigned)i + 7);
    o.ttl_ms = tu_scaled_ms(10000);
    o.backoff_min_ms = 2;
    o.backoff_max_ms = 20;
    os = o;
    os.ttl_ms = 300;
    if (sqllock_rw_new(db, ld->name, 1, &o, &rw) != SQLLOCK_OK ||
        sqllock_rw_new(db, ld->name, 1, &os, &shortlived) != SQLLOCK_OK)
        return 2;
    if (!load_start(ld))
        return 5;
    while (!atomic_load(&ld->stop) && tu_now_ms() < ld->run_until_ms) {
        int overstay = rand() % 8 == 0;
        sqllock_rw *h = overstay ? shortlived : rw;

        rc = sqllock_rw_acquire(h, tu_scaled_ms(60000));
        if (rc != SQLLOCK_OK) {
            fprintf(stderr, "load reader: %s: %s\n", sqllock_errname(rc),
                    sqllock_errmsg(db));
            return 3;
        }
        atomic_fetch_add(&ld->reads, 1);
        if (overstay) {
            atomic_fetch_add(&ld->overstays, 1);
            tu_sleep_ms(350 + rand() % 100);
        } else {
            tu_sleep_us(1000 + rand() % 8000);
        }
        rc = sqllock_rw_release(h);
        if (rc != SQLLOCK_OK && !(overstay && rc == SQLLOCK_LOST)) {
            fprintf(stderr, "load reader release: %s: %s\n",
                    sqllock_errname(rc), sqllock_errmsg(db));
            return 4;
        }
        tu_sleep_us(rand() % 3000);
    }
    sqllock_rw_free(rw);
    sqllock_rw_free(shortlived);
    sqllock_close(db);
    return 0;
}

/* An exclusive waiter of the load: waits (a deadline far off), holds a
 * moment, lets go, again; W's ttl is short, so that it is renewed while
 * the writer waits for the readers, and a writer paused past it takes
 * W again. Any status but OK before the deadline is noted. */
static int load_writer(void *arg, int i)
{
    load *ld = arg;
    sqllock_db *db = tu_child_open(g_url, "rw load writer");
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_rw *rw = NULL;
    int64_t wait = tu_scaled_ms(60000), t0;
    int rc;

    if (db == NULL)
        return 2;
    srand(53u * (unsigned)i + 3);
    o.ttl_ms = tu_scaled_ms(600);
    o.backoff_min_ms = 2;
    o.backoff_max_ms = 20;
    if (sqllock_rw_new(db, ld->name, 0, &o, &rw) != SQLLOCK_OK)
        return 2;
    if (!load_start(ld))
        return 5;
    while (!atomic_load(&ld->stop) && tu_now_ms() < ld->run_until_ms) {
        t0 = tu_now_ms();
        rc = sqllock_rw_acquire(rw, wait);
        if (rc != SQLLOCK_OK) {
            if (atomic_fetch_add(&ld->bad[i], 1) == 0) {
                atomic_store(&ld->bad_status[i], rc);
                snprintf(ld->bad_msg[i], sizeof ld->bad_msg[i], "after %"
                         PRId64 " ms: %s", tu_now_ms() - t0,
                         sqllock_errmsg(db));
            }
            if (rc == SQLLOCK_TIMEOUT)
                break;
            continue;
        }
        atomic_fetch_add(&ld->grants, 1);
        tu_sleep_us(1000 + rand() % 3000);
        rc = sqllock_rw_release(rw);
        if (rc != SQLLOCK_OK && rc != SQLLOCK_LOST)
            return 4;
        tu_sleep_us(rand() % 20000);
    }
    sqllock_rw_free(rw);
    sqllock_close(db);
    return 0;
}

/*
 * M2 under load (issue 26 item 8d): exclusive waiters against a stream
 * of readers -- LOAD_READERS reader processes, LOAD_WRITERS writer
 * processes, some readers overstaying a short ttl so that the writers'
 * check deletes their rows while others come and go, the writers' W
 * renewed while they wait. A waiting sqllock_rw_acquire() may only end
 * granted while its deadline has not passed: never SQLLOCK_EDEADLOCK,
 * ELOCKED, ESERIALIZATION, EDBBUSY or another error (a statement the
 * database rolls back inside the wait is tried again).
 */
static void test_rw_M2_waiting_writer_never_fails_under_load(void **state)
{
    load *ld = tu_shared_map(sizeof *ld);
    pid_t pid[LOAD_READERS + LOAD_WRITERS];
    int i, bad = 0;
    (void)state;

    mkname(ld->name, sizeof ld->name, "load");
    tu_fork_n(pid, LOAD_READERS, load_reader, ld);
    for (i = 0; i < LOAD_WRITERS; i++)
        pid[LOAD_READERS + i] = tu_fork(load_writer, ld);
    TU_WAIT_WHILE(atomic_load(&ld->ready) < LOAD_READERS + LOAD_WRITERS,
                  tu_now_ms() + tu_scaled_ms(60000), 5);
    ld->run_until_ms = tu_now_ms() +
                       (tu_slowdown_tool() > 1 ? 4000 : 8000);
    atomic_store(&ld->go, 1);
    assert_int_equal(tu_wait_all(pid, LOAD_READERS + LOAD_WRITERS), 0);
    print_message("    %d exclusive grants, %d shared holds (%d overstayed "
                  "their ttl)\n", atomic_load(&ld->grants),
                  atomic_load(&ld->reads), atomic_load(&ld->overstays));
    for (i = 0; i < LOAD_WRITERS; i++)
        if (atomic_load(&ld->bad[i]) != 0) {
            bad++;
            print_message("    writer %d: %d waits failed, the first with "
                          "%s (%s)\n", i, atomic_load(&ld->bad[i]),
                          sqllock_errname(atomic_load(&ld->bad_status[i])),
                          ld->bad_msg[i]);
        }
    if (bad != 0)
        fail_msg("M2: a waiting exclusive acquire ended without the lock "
                 "before its deadline (see above)");
    assert_true(atomic_load(&ld->grants) >= LOAD_WRITERS);
    munmap(ld, sizeof *ld);
}

/* ---- a waiting writer and a locked database ---- */

typedef struct stuck {
    char name[96];
    _Atomic int go, ready, done, rc;
    _Atomic int64_t took_ms;
    char msg[SQLLOCK__ERRMSG_MAX];
} stuck;

/* The writer: its statements give up on a lock quickly (SQLite's busy
 * timeout 200 ms; PostgreSQL's lock_timeout 300 ms, MySQL's
 * innodb_lock_wait_timeout 1 s, set on its session), and its W lives
 * 1 s, so that it is renewed every ~half second while it waits. */
static int stuck_writer(void *arg, int i)
{
    stuck *s = arg;
    sqllock_options dbo = SQLLOCK_OPTIONS_INIT;
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    const char *drv = tu_url_driver(g_url);
    sqllock_db *db = NULL;
    sqllock_rw *rw = NULL;
    int64_t t0;
    int rc;

    (void)i;
    /* Forked before the parent opens its handles (a child that inherits
     * an open SQLite connection exits with its page cache "possibly
     * lost" to valgrind), it starts once the reader holds. */
    t0 = tu_now_ms() + tu_scaled_ms(20000);
    TU_WAIT_WHILE(!atomic_load(&s->go), t0, 2);
    if (!atomic_load(&s->go))
        return 2;
    dbo.busy_timeout_ms = 200;
    if (sqllock_open(g_url, &dbo, &db) != SQLLOCK_OK) {
        fprintf(stderr, "stuck writer: open: %s\n", sqllock_errmsg(db));
        return 2;
    }
    if (strcmp(drv, "postgres") == 0)
        rc = sqllock_db_exec(db, "SET lock_timeout = '300ms'", NULL, 0, NULL,
                             NULL, NULL);
    else if (strcmp(drv, "mysql") == 0)
        rc = sqllock_db_exec(db, "SET SESSION innodb_lock_wait_timeout = 1",
                             NULL, 0, NULL, NULL, NULL);
    else
        rc = SQLLOCK_OK;
    o.ttl_ms = 1000;
    o.backoff_min_ms = 5;
    o.backoff_max_ms = 50;
    if (rc != SQLLOCK_OK ||
        sqllock_rw_new(db, s->name, 0, &o, &rw) != SQLLOCK_OK) {
        fprintf(stderr, "stuck writer: %s\n", sqllock_errmsg(db));
        return 2;
    }
    atomic_store(&s->ready, 1);
    t0 = tu_now_ms();
    rc = sqllock_rw_acquire(rw, tu_scaled_ms(60000));
    atomic_store(&s->took_ms, tu_now_ms() - t0);
    snprintf(s->msg, sizeof s->msg, "%s", sqllock_errmsg(db));
    atomic_store(&s->rc, rc);
    atomic_store(&s->done, 1);
    if (rc == SQLLOCK_OK)
        sqllock_rw_release(rw);
    sqllock_rw_free(rw);
    sqllock_close(db);
    return 0;
}

/*
 * M2 and issue 26 item 8d, made to happen: a writer waits for a reader
 * inside while another session keeps the writer's row W locked for 6 s
 * (PostgreSQL and MySQL: SELECT ... FOR UPDATE in a transaction; SQLite:
 * the database's write lock, BEGIN IMMEDIATE), so that each renewal of W
 * the writer makes while it waits fails as the database gives up on the
 * lock (SQLLOCK_ELOCKED, SQLLOCK_EDBBUSY), and after every retry of
 * it. The waiting acquire must ride that out -- nothing was done, and W
 * is still its own -- and be granted once the lock and the reader are
 * gone, long before its deadline; it must not return the database's
 * status.
 */
static void test_rw_M2_waiting_writer_rides_out_a_locked_database(void **state)
{
    stuck *s = tu_shared_map(sizeof *s);
    const char *drv = tu_url_driver(g_url);
    sqllock_db *db, *db2;
    char wname[SQLLOCK__DERIVED_MAX + 1];
    sqllock_value arg;
    sqllock_rw *rd;
    tu_row r;
    int64_t end;
    pid_t pid;
    int rc;
    (void)state;

    mkname(s->name, sizeof s->name, "stuck");
    atomic_store(&s->rc, -1);
    pid = tu_fork(stuck_writer, s);
    db = tu_open_or_fail(g_url);
    db2 = tu_open_or_fail(g_url);
    EXPECT_RC(db, sqllock__derived_name(db, wname, s->name, "w",
                                        "shared/exclusive lock name"),
              SQLLOCK_OK, "W's name");
    rd = new_rw(db, s->name, 1, 30000, 50);
    EXPECT_RC(db, sqllock_rw_try_acquire(rd), SQLLOCK_OK, "reader");
    atomic_store(&s->go, 1);
    /* The writer holds W and waits for the reader. */
    end = tu_now_ms() + tu_scaled_ms(20000);
    for (;;) {
        EXPECT_RC(db2, tu_find(db2, wname, &r), SQLLOCK_OK, "find W");
        if ((r.found && r.remaining_ms > 0) || atomic_load(&s->done) ||
            tu_now_ms() >= end)
            break;
        tu_sleep_ms(10);
    }
    if (!r.found)
        fail_msg("the writer did not take W (done %d, %s: %s)",
                 atomic_load(&s->done), sqllock_errname(atomic_load(&s->rc)),
                 s->msg);
    /* Lock W's row (the whole database on SQLite) for 6 s. */
    EXPECT_RC(db2, sqllock__begin(db2, "locking W"), SQLLOCK_OK, "begin");
    if (strcmp(drv, "sqlite") != 0) {
        arg = sqllock__text(wname);
        rc = sqllock__exec_sql(db2, strcmp(drv, "postgres") == 0
                               ? "SELECT 1 FROM sqllock_lease WHERE name = $1 "
                                 "FOR UPDATE"
                               : "SELECT 1 FROM sqllock_lease WHERE name = ? "
                                 "FOR UPDATE", &arg, 1, NULL, NULL, NULL);
        EXPECT_RC(db2, rc, SQLLOCK_OK, "lock W");
    }
    tu_sleep_ms(6000);
    sqllock__rollback(db2);
    EXPECT_RC(db, sqllock_rw_release(rd), SQLLOCK_OK, "reader release");
    assert_int_equal(tu_wait(pid), 0);
    print_message("    the writer's wait ended with %s after %" PRId64
                  " ms\n", sqllock_errname(atomic_load(&s->rc)),
                  atomic_load(&s->took_ms));
    if (atomic_load(&s->rc) != SQLLOCK_OK)
        fail_msg("M2: a waiting exclusive acquire returned %s (%s) before "
                 "its deadline while the database was locked for a while",
                 sqllock_errname(atomic_load(&s->rc)), s->msg);
    sqllock_rw_free(rd);
    sqllock_close(db);
    sqllock_close(db2);
    munmap(s, sizeof *s);
}

/* ---- a killed reader ---- */

typedef struct killed {
    char name[96];
    int64_t ttl;
    _Atomic int ready;
    _Atomic int64_t granted_ms;
} killed;

/* Takes a shared hold with ttl k->ttl, says when, and holds it until
 * killed. */
static int killed_reader(void *arg, int i)
{
    killed *k = arg;
    sqllock_db *cdb = tu_child_open(g_url, "rw killed reader");
    sqllock_rw *rw = NULL;
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    int64_t sent;

    (void)i;
    o.ttl_ms = k->ttl;
    if (cdb == NULL || sqllock_rw_new(cdb, k->name, 1, &o, &rw) !=
                           SQLLOCK_OK)
        return 2;
    sent = tu_now_ms();
    if (sqllock_rw_try_acquire(rw) != SQLLOCK_OK)
        return 3;
    atomic_store(&k->granted_ms, sent);
    atomic_store(&k->ready, 1);
    for (;;)
        pause();
}

/*
 * M2 with L2: a reader SIGKILLed while it holds delays a writer until its
 * row expires by the server's clock -- not before, and at most its ttl
 * (plus a scaled margin) after its grant.
 */
static void test_rw_M2_killed_reader_delays_writer_at_most_ttl(void **state)
{
    killed *k = tu_shared_map(sizeof *k);
    /* Not scaled: a parent slower than the ttl to start its writer only
     * finds the row expired sooner (the lower bound still holds); the
     * upper bound's margin is scaled. */
    int64_t ttl = 2000, took;
    sqllock_db *db;
    sqllock_rw *wr;
    pid_t pid;
    (void)state;

    mkname(k->name, sizeof k->name, "killed");
    k->ttl = ttl;
    pid = tu_fork(killed_reader, k);
    while (!atomic_load(&k->ready))
        tu_sleep_ms(5);
    kill(pid, SIGKILL);
    assert_int_equal(tu_wait(pid), 1000 + SIGKILL);
    db = tu_open_or_fail(g_url);
    wr = new_rw(db, k->name, 0, tu_scaled_ms(10000), 50);
    EXPECT_RC(db, sqllock_rw_acquire(wr, ttl + tu_scaled_ms(5000)),
              SQLLOCK_OK, "writer after the killed reader");
    took = tu_now_ms() - atomic_load(&k->granted_ms);
    print_message("    writer granted %lld ms after the killed reader's "
                  "grant (ttl %lld ms)\n", (long long)took, (long long)ttl);
    if (took < ttl - 100)
        fail_msg("M2: writer granted %lld ms after the reader's grant, "
                 "before its ttl of %lld ms", (long long)took,
                 (long long)ttl);
    if (took > ttl + tu_scaled_ms(1000))
        fail_msg("M2: writer granted %lld ms after the reader's grant, "
                 "more than its ttl of %lld ms and a margin", (long long)took,
                 (long long)ttl);
    EXPECT_RC(db, sqllock_rw_release(wr), SQLLOCK_OK, "release");
    sqllock_rw_free(wr);
    sqllock_close(db);
    munmap(k, sizeof *k);
}

/* ---- fencing ---- */

/*
 * L5 for M2: each exclusive grant's token is greater than every earlier
 * one of the name (across a reader's hold in between, and a takeover of
 * a writer's expired hold), and a write fenced by an older exclusive
 * token is refused once a later exclusive holder wrote.
 */
static void test_rw_L5_exclusive_token_fences_writes(void **state)
{
    sqllock_db *db = tu_open_or_fail(g_url), *db2 = tu_open_or_fail(g_url);
    sqllock_rw *a, *b, *r;
    int64_t id = (int64_t)getpid() * 1000 + 7, ta, tb, tr, tc;
    char name[96];
    (void)state;

    tu_fenced_new_row(db, id);
    mkname(name, sizeof name, "fence");
    a = new_rw(db, name, 0, 1500, 20);
    b = new_rw(db2, name, 0, 30000, 20);
    r = new_rw(db2, name, 1, 30000, 20);
    EXPECT_RC(db, sqllock_rw_acquire(a, 5000), SQLLOCK_OK, "a");
    ta = sqllock_lease_token(sqllock_rw_lease(a));
    EXPECT_RC(db, tu_fenced_set(db, id, ta, 1), SQLLOCK_OK, "a writes");
    EXPECT_RC(db, sqllock_rw_release(a), SQLLOCK_OK, "a release");
    EXPECT_RC(db2, sqllock_rw_acquire(r, 5000), SQLLOCK_OK, "reader");
    tr = sqllock_lease_token(sqllock_rw_lease(r));
    assert_true(tr > ta);
    EXPECT_RC(db2, sqllock_rw_release(r), SQLLOCK_OK, "reader release");
    EXPECT_RC(db2, sqllock_rw_acquire(b, 5000), SQLLOCK_OK, "b");
    tb = sqllock_lease_token(sqllock_rw_lease(b));
    assert_true(tb > tr);
    EXPECT_RC(db2, tu_fenced_set(db2, id, tb, 2), SQLLOCK_OK, "b writes");
    EXPECT_RC(db, tu_fenced_set(db, id, ta, 3), SQLLOCK_LOST, "a's stale write");
    EXPECT_RC(db2, sqllock_rw_release(b), SQLLOCK_OK, "b release");
    /* A writer whose hold expired (no renewal) is taken over: a larger
     * token, and the old holder's write is refused after the new one's. */
    EXPECT_RC(db, sqllock_rw_acquire(a, 5000), SQLLOCK_OK, "a again");
    tc = sqllock_lease_token(sqllock_rw_lease(a));
    assert_true(tc > tb);
    EXPECT_RC(db, tu_fenced_set(db, id, tc, 4), SQLLOCK_OK, "a writes again");
    EXPECT_RC(db2, sqllock_rw_acquire(b, tu_scaled_ms(10000)),
              SQLLOCK_OK, "b after a's expiry");
    assert_true(sqllock_lease_token(sqllock_rw_lease(b)) > tc);
    EXPECT_RC(db2, tu_fenced_set(db2, id, sqllock_lease_token(
                                           sqllock_rw_lease(b)), 5),
              SQLLOCK_OK, "b writes");
    EXPECT_RC(db, tu_fenced_set(db, id, tc, 6), SQLLOCK_LOST, "a's late write");
    EXPECT_RC(db, sqllock_rw_release(a), SQLLOCK_LOST, "a's release: lost");
    EXPECT_RC(db2, sqllock_rw_release(b), SQLLOCK_OK, "b release");
    sqllock_rw_free(a);
    sqllock_rw_free(b);
    sqllock_rw_free(r);
    sqllock_close(db);
    sqllock_close(db2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rw_M2_basics),
        cmocka_unit_test(test_rw_L5_exclusive_token_fences_writes),
        cmocka_unit_test(test_rw_M2_killed_reader_delays_writer_at_most_ttl),
        cmocka_unit_test(test_rw_M2_writer_bound_while_readers_arrive),
        cmocka_unit_test(test_rw_M2_readers_never_overlap_writer),
        cmocka_unit_test(test_rw_M2_waiting_writer_never_fails_under_load),
        cmocka_unit_test(test_rw_M2_waiting_writer_rides_out_a_locked_database),
    };

    return TU_RUN_PER_URL("rw", &g_url, tests, tu_group_fenced, NULL);
}
