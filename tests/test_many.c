/*
 * test_many.c -- taking several locks at once (contract L12), on every
 * database: bad arrays rejected with a clear message and nothing sent;
 * all or none when one name is held (nothing taken, nothing left behind);
 * each name its own token, growing per name (L5); 8 processes taking
 * random overlapping sets of 3 of 20 names, each doing read-increment-
 * write on per-name counters, with exact counters and no deadlock error;
 * a holder of a subset SIGKILLed, whose names the others get after its
 * ttl; a multi-name waiter woken by the release of the name it waits for
 * (L9), in this process and, where the server pushes wake-ups, in
 * another.
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

#define SLOW_POLL_MS 20000      /* a waiter's backoff, min and max */
#define WAKE_WITHIN_MS 2000     /* a handoff slower than this was a poll */

static const char *g_url;

static int pushes(void)
{
    const char *d = tu_url_driver(g_url);

    return strcmp(d, "postgres") == 0 || strcmp(d, "mysql") == 0;
}

static sqllock_lease *new_lease(sqllock_db *db, const char *name,
                                int64_t ttl_ms, int64_t backoff_ms)
{
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_lease *l = NULL;

    o.ttl_ms = ttl_ms;
    o.backoff_min_ms = backoff_ms;
    o.backoff_max_ms = backoff_ms;
    EXPECT_RC(db, sqllock_lease_new(db, name, &o, &l), SQLLOCK_OK, "new");
    return l;
}

/* The test's own names: unique per run, so that parallel entries and
 * earlier runs never meet. */
static void mkname(char *out, size_t size, const char *what, int i)
{
    snprintf(out, size, "many-%ld-%s-%02d", (long)getpid(), what, i);
}

static int row_exists(sqllock_db *db, const char *name)
{
    tu_row r;

    if (tu_find(db, name, &r) != SQLLOCK_OK)
        fail_msg("list: %s", sqllock_errmsg(db));
    return r.found == 1;
}

/*
 * L12 bad input: a NULL array, no lease, too many, a NULL lease, a lease
 * of another handle, a name given twice (in any position), a handle that
 * already holds, a negative wait -- each a clear status and message,
 * nothing taken.
 */
static void test_many_L12_bad_input(void **state)
{
    sqllock_db *db = tu_open_or_fail(g_url), *other = tu_open_or_fail(g_url);
    sqllock_lease *l[SQLLOCK_LEASE_MANY_MAX + 1], *dup[3], *mix[2];
    char name[128];
    int i;
    (void)state;

    for (i = 0; i <= SQLLOCK_LEASE_MANY_MAX; i++) {
        mkname(name, sizeof name, "bad", i);
        l[i] = new_lease(db, name, 60000, 5);
    }
    assert_int_equal(sqllock_lease_acquire_many(NULL, l, 2, 0),
                     SQLLOCK_EINVAL);
    EXPECT_RC(db, sqllock_lease_acquire_many(db, NULL, 2, 0), SQLLOCK_EINVAL,
              "NULL array");
    expect_msg_any(db, "NULL array", "NULL");
    EXPECT_RC(db, sqllock_lease_acquire_many(db, l, 0, 0), SQLLOCK_EINVAL,
              "n = 0");
    expect_msg_any(db, "n = 0", "no lease");
    EXPECT_RC(db, sqllock_lease_acquire_many(db, l, -1, 0), SQLLOCK_EINVAL,
              "n = -1");
    EXPECT_RC(db, sqllock_lease_acquire_many(db, l,
                                             SQLLOCK_LEASE_MANY_MAX + 1, 0),
              SQLLOCK_EINVAL, "too many");
    expect_msg_any(db, "too many", "limit");
    mix[0] = l[0];
    mix[1] = NULL;
    EXPECT_RC(db, sqllock_lease_acquire_many(db, mix, 2, 0), SQLLOCK_EINVAL,
              "NULL lease");
    expect_msg_any(db, "NULL lease", "lease 2 of 2 is NULL");
    mkname(name, sizeof name, "bad", 1);
    mix[1] = new_lease(other, name, 60000, 5);
    EXPECT_RC(db, sqllock_lease_acquire_many(db, mix, 2, 0), SQLLOCK_EINVAL,
              "other handle");
    expect_msg_any(db, "other handle", "another database handle");
    sqllock_lease_free(mix[1]);
    mkname(name, sizeof name, "bad", 0);
    dup[0] = l[2];
    dup[1] = l[0];
    dup[2] = new_lease(db, name, 60000, 5);     /* l[0]'s name again */
    EXPECT_RC(db, sqllock_lease_acquire_many(db, dup, 3, 0), SQLLOCK_EINVAL,
              "duplicate");
    expect_msg_any(db, "duplicate", "given twice");
    EXPECT_RC(db, sqllock_lease_release_many(db, dup, 3), SQLLOCK_EINVAL,
              "duplicate release");
    EXPECT_RC(db, sqllock_lease_acquire_many(db, l, 2, -1), SQLLOCK_EINVAL,
              "negative wait");
    /* Nothing of the above was taken. */
    for (i = 0; i < 3; i++)
        assert_false(row_exists(db, sqllock_lease_name(l[i])));
    /* A handle that already holds is refused, and nothing else taken. */
    EXPECT_RC(db, sqllock_lease_try_acquire(l[1]), SQLLOCK_OK, "single");
    EXPECT_RC(db, sqllock_lease_acquire_many(db, l, 3, 0), SQLLOCK_EMISUSE,
              "held already");
    expect_msg_any(db, "held already", "holds it already");
    assert_int_equal(sqllock_lease_count(l[1]), 1);
    assert_false(row_exists(db, sqllock_lease_name(l[0])));
    /* release_many of handles of which one holds nothing: the others
     * are released, and the status says which held nothing. */
    EXPECT_RC(db, sqllock_lease_release_many(db, l, 2), SQLLOCK_ENOTHELD,
              "release, one not held");
    assert_int_equal(sqllock_lease_count(l[1]), 0);
    assert_false(row_exists(db, sqllock_lease_name(l[1])));
    EXPECT_RC(db, sqllock_lease_release_many(db, NULL, 1), SQLLOCK_EINVAL,
              "release NULL");
    sqllock_lease_free(dup[2]);
    for (i = 0; i <= SQLLOCK_LEASE_MANY_MAX; i++)
        sqllock_lease_free(l[i]);
    sqllock_close(other);
    sqllock_close(db);
}

/*
 * L12 all or none, L5 per name: with one of four names held by another
 * owner, a multi-name try takes nothing (the other three stay free for
 * anyone, no row left behind) and reports the held name; once it is
 * free, one call takes all four, each handle with its own owner and a
 * token larger than any that name had before; release_many frees them.
 */
static void test_many_L12_all_or_none(void **state)
{
    sqllock_db *db = tu_open_or_fail(g_url), *db2 = tu_open_or_fail(g_url);
    sqllock_lease *l[4], *held, *probe;
    int64_t before[4];
    char name[128];
    int i, j;
    (void)state;

    for (i = 0; i < 4; i++) {
        mkname(name, sizeof name, "aon", i);
        l[i] = new_lease(db, name, 60000, 5);
        /* a token for every name before, to compare with */
        probe = new_lease(db2, name, 60000, 5);
        EXPECT_RC(db2, sqllock_lease_try_acquire(probe), SQLLOCK_OK, "probe");
        before[i] = sqllock_lease_token(probe);
        EXPECT_RC(db2, sqllock_lease_release(probe), SQLLOCK_OK, "probe");
        sqllock_lease_free(probe);
    }
    /* The array's order is not the names' order. */
    {
        sqllock_lease *t = l[0];
        l[0] = l[3];
        l[3] = t;
        t = l[1];
        l[1] = l[2];
        l[2] = t;
        int64_t u = before[0];
        before[0] = before[3];
        before[3] = u;
        u = before[1];
        before[1] = before[2];
        before[2] = u;
    }
    held = new_lease(db2, sqllock_lease_name(l[2]), 60000, 5);
    EXPECT_RC(db2, sqllock_lease_try_acquire(held), SQLLOCK_OK, "holder");
    EXPECT_RC(db, sqllock_lease_acquire_many(db, l, 4, 0), SQLLOCK_BUSY,
              "many, one held");
    expect_msg_any(db, "many, one held", sqllock_lease_name(l[2]));
    EXPECT_RC(db, sqllock_lease_acquire_many(db, l, 4, 150), SQLLOCK_TIMEOUT,
              "many waiting, one held");
    for (i = 0; i < 4; i++) {
        assert_int_equal(sqllock_lease_count(l[i]), 0);
        assert_int_equal(sqllock_lease_held(l[i]), 0);
        if (i != 2)
            assert_false(row_exists(db2, sqllock_lease_name(l[i])));
    }
    /* The others are free for anyone at once. */
    for (i = 0; i < 4; i++) {
        if (i == 2)
            continue;
        probe = new_lease(db2, sqllock_lease_name(l[i]), 60000, 5);
        EXPECT_RC(db2, sqllock_lease_try_acquire(probe), SQLLOCK_OK,
                  "free after the busy try");
        EXPECT_RC(db2, sqllock_lease_release(probe), SQLLOCK_OK, "release");
        sqllock_lease_free(probe);
    }
    EXPECT_RC(db2, sqllock_lease_release(held), SQLLOCK_OK, "holder release");
    EXPECT_RC(db, sqllock_lease_acquire_many(db, l, 4, 0), SQLLOCK_OK,
              "many, all free");
    for (i = 0; i < 4; i++) {
        tu_row r;

        assert_int_equal(sqllock_lease_count(l[i]), 1);
        assert_true(sqllock_lease_held(l[i]));
        if (sqllock_lease_token(l[i]) <= before[i])
            fail_msg("L5: lock '%s' got token %lld, not above %lld",
                     sqllock_lease_name(l[i]),
                     (long long)sqllock_lease_token(l[i]),
                     (long long)before[i]);
        assert_int_equal(tu_find(db2, sqllock_lease_name(l[i]), &r),
                         SQLLOCK_OK);
        assert_int_equal(r.found, 1);
        assert_string_equal(r.owner, sqllock_lease_owner(l[i]));
        assert_int_equal(r.token, sqllock_lease_token(l[i]));
        for (j = 0; j < i; j++)
            assert_string_not_equal(sqllock_lease_owner(l[i]),
                                    sqllock_lease_owner(l[j]));
    }
    /* Renewed and released as any lease. */
    EXPECT_RC(db, sqllock_lease_renew(l[1]), SQLLOCK_OK, "renew one");
    EXPECT_RC(db, sqllock_lease_release_many(db, l, 4), SQLLOCK_OK,
              "release many");
    for (i = 0; i < 4; i++) {
        assert_int_equal(sqllock_lease_count(l[i]), 0);
        assert_false(row_exists(db2, sqllock_lease_name(l[i])));
    }
    sqllock_lease_free(held);
    for (i = 0; i < 4; i++)
        sqllock_lease_free(l[i]);
    sqllock_close(db2);
    sqllock_close(db);
}

/* ---- 8 processes, random sets of 3 of 20 names ---- */

#define KIDS 8
#define NAMES 20
#define SET 3

typedef struct contend {
    char names[NAMES][96];
    int64_t counter[NAMES];           /* read-increment-write, unlocked */
    _Atomic int64_t done[NAMES];      /* increments made, counted apart */
    _Atomic int inside[NAMES];        /* overlap detector */
    _Atomic int overlaps;
    _Atomic int64_t last_token[NAMES];
    _Atomic int token_back;           /* a token not above the last one */
    _Atomic int failures;
    int64_t run_ms;
} contend;

static int contend_child(void *arg, int k)
{
    contend *c = arg;
    sqllock_db *db = tu_child_open(g_url, "contender");
    sqllock_lease *l[NAMES];
    sqllock_lease *set[SET];
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    unsigned seed = (unsigned)(getpid() * 2654435761u + (unsigned)k);
    int64_t end = tu_now_ms() + c->run_ms;
    int i, j, idx[SET], rc = SQLLOCK_OK, rounds = 0;

    if (db == NULL)
        return 1;
    o.ttl_ms = 60000;
    o.backoff_min_ms = 1;
    o.backoff_max_ms = 50;
    for (i = 0; i < NAMES; i++)
        if (sqllock_lease_new(db, c->names[i], &o, &l[i]) != SQLLOCK_OK)
            return 1;
    while (tu_now_ms() < end) {
        for (i = 0; i < SET; i++) {
            int again;
            do {
                idx[i] = (int)(rand_r(&seed) % NAMES);
                again = 0;
                for (j = 0; j < i; j++)
                    again |= idx[j] == idx[i];
            } while (again);
            set[i] = l[idx[i]];
        }
        rc = sqllock_lease_acquire_many(db, set, SET, 60000);
        if (rc != SQLLOCK_OK)
            break;
        for (i = 0; i < SET; i++) {
            int n = idx[i];
            int64_t v, t = sqllock_lease_token(set[i]);

            if (atomic_fetch_add(&c->inside[n], 1) != 0)
                atomic_fetch_add(&c->overlaps, 1);
            if (t <= atomic_exchange(&c->last_token[n], t))
                atomic_fetch_add(&c->token_back, 1);
            v = c->counter[n];
            if (rounds % 4 == 0)
                sched_yield();
            c->counter[n] = v + 1;
            atomic_fetch_add(&c->done[n], 1);
            atomic_fetch_sub(&c->inside[n], 1);
        }
        rc = sqllock_lease_release_many(db, set, SET);
        if (rc != SQLLOCK_OK)
            break;
        rounds++;
    }
    if (rc != SQLLOCK_OK) {
        fprintf(stderr, "contender %d after %d rounds: %s: %s\n", k, rounds,
                sqllock_errname(rc), sqllock_errmsg(db));
        atomic_fetch_add(&c->failures, 1);
    }
    for (i = 0; i < NAMES; i++)
        sqllock_lease_free(l[i]);
    sqllock_close(db);
    return rc == SQLLOCK_OK && rounds > 0 ? 0 : 1;
}

/*
 * L12 + L1 under contention: 8 processes, each taking random sets of 3
 * of 20 names (in random order) and incrementing each name's counter
 * with an unlocked read-then-write while it holds the set. The counters
 * are exact (a lost update means two holders), no two holders overlap,
 * no call fails (a deadlock between multi-name acquires would come back
 * as an error or a 60 s timeout), and each name's tokens only grow (L5).
 * On PostgreSQL the server's deadlock count for the database does not
 * move: taken in one order, the sets never deadlock at all (the library
 * would retry one, so the calls alone would not show it).
 */
static int64_t pg_deadlocks(void)
{
    sqllock_db *db = tu_open_or_fail(g_url);
    int64_t n = -1;
    int has_row = 0;

    EXPECT_RC(db, sqllock__exec_sql(db, "SELECT deadlocks FROM "
                                    "pg_catalog.pg_stat_database WHERE datname = "
                                    "pg_catalog.current_database()", NULL, 0, &has_row,
                                    &n, NULL), SQLLOCK_OK, "deadlocks");
    sqllock_close(db);
    return n;
}

/* Fails when PostgreSQL counted deadlocks in this database since it
 * counted `before`. A backend reports its counts when it ends or goes
 * idle; the children's have ended, but the report may lag a moment. */
static void expect_no_deadlocks_since(int64_t before, const char *when)
{
    int64_t after = before;
    int tries;

    for (tries = 0; tries < 20 && after == before; tries++) {
        after = pg_deadlocks();
        if (after == before)
            tu_sleep_ms(100);
    }
    if (after != before)
        fail_msg("L12: PostgreSQL counted %lld deadlocks %s",
                 (long long)(after - before), when);
}

static void test_many_L12_processes_exact_counters(void **state)
{
    contend *c = tu_shared_map(sizeof *c);
    int pg = strcmp(tu_url_driver(g_url), "postgres") == 0;
    pid_t pid[KIDS];
    int i, bad;
    int64_t total = 0, deadlocks = pg ? pg_deadlocks() : 0;
    (void)state;

    for (i = 0; i < NAMES; i++)
        mkname(c->names[i], sizeof c->names[i], "cnt", i);
    /* A duration, not a bound: a slower run (a sanitizer, valgrind, a
     * loaded machine) takes fewer sets in it, each checked the same. Not
     * scaled, so valgrind does not spend 40 s of 8 processes here. */
    c->run_ms = 5000;
    tu_fork_n(pid, KIDS, contend_child, c);
    bad = tu_wait_all(pid, KIDS);
    for (i = 0; i < NAMES; i++) {
        if (c->counter[i] != atomic_load(&c->done[i]))
            fail_msg("L12: counter of '%s' is %lld after %lld increments: "
                     "two holders at once", c->names[i],
                     (long long)c->counter[i],
                     (long long)atomic_load(&c->done[i]));
        total += c->counter[i];
    }
    assert_int_equal(atomic_load(&c->overlaps), 0);
    assert_int_equal(atomic_load(&c->token_back), 0);
    assert_int_equal(atomic_load(&c->failures), 0);
    assert_int_equal(bad, 0);
    assert_true(total >= KIDS * SET);
    if (pg)
        expect_no_deadlocks_since(deadlocks, "while the sets were taken: "
                                  "not in one order");
    print_message("    %lld increments over %d names by %d processes\n",
                  (long long)total, NAMES, KIDS);
    munmap(c, sizeof *c);
}

/* ---- names that share an advisory key (PostgreSQL) ---- */

typedef struct samekey {
    char names[3][100];            /* a < b < c, key(a) = key(c) there */
    _Atomic int64_t backend[2];
    _Atomic int started[2];
    _Atomic int rc[2];
} samekey;

/* Child 0 takes {b, c}, child 1 {a, b}, each waiting. */
static int samekey_child(samekey *k, int i)
{
    sqllock_db *db = tu_child_open(g_url, "multi-name taker");
    sqllock_lease *l[2];
    int rc;

    if (db == NULL)
        return 1;
    l[0] = new_lease(db, k->names[i == 0 ? 1 : 0], 30000, 5);
    l[1] = new_lease(db, k->names[i == 0 ? 2 : 1], 30000, 5);
    if (strcmp(sqllock_db_driver(db), "sqlite") != 0)
        atomic_store(&k->backend[i], tu_backend_id(db));
    atomic_store(&k->started[i], 1);
    rc = sqllock_lease_acquire_many(db, l, 2, tu_scaled_ms(30000));
    atomic_store(&k->rc[i], rc);
    if (rc == SQLLOCK_OK) {
        tu_sleep_ms(50);
        rc = sqllock_lease_release_many(db, l, 2);
    } else {
        fprintf(stderr, "child %d: %s: %s\n", i, sqllock_errname(rc),
                sqllock_errmsg(db));
    }
    sqllock_lease_free(l[0]);
    sqllock_lease_free(l[1]);
    sqllock_close(db);
    return rc == SQLLOCK_OK ? 0 : 2;
}

static int samekey_bc(void *arg, int i)
{
    (void)i;
    return samekey_child(arg, 0);
}

static int samekey_ab(void *arg, int i)
{
    (void)i;
    return samekey_child(arg, 1);
}

/* How many of the children wait for a lock (PostgreSQL). */
static int64_t samekey_waiting(sqllock_db *probe, samekey *k)
{
    sqllock_value ids[2];
    int64_t n = -1;
    int has = 0;

    ids[0] = sqllock__int(atomic_load(&k->backend[0]));
    ids[1] = sqllock__int(atomic_load(&k->backend[1]));
    EXPECT_RC(probe, sqllock__exec_sql(probe, "SELECT count(*) FROM "
                                       "pg_catalog.pg_locks WHERE NOT granted "
                                       "AND pid IN ($1::int, $2::int)", ids, 2,
                                       &has, &n, NULL), SQLLOCK_OK, "pg_locks");
    return n;
}

/*
 * L12, issue 26 item 8: on PostgreSQL a grant takes an advisory lock on
 * the name's hashtext(), and two names can share one. With names
 * a < b < c where key(a) = key(c), one caller of {b, c} waits for key(b)
 * (a blocker holds it) and another of {a, b} comes after; when the
 * blocker lets go, sqllock_acquire_many_v1 -- which took the keys in the
 * order of the names -- let the first hold key(b) and wait for key(c)
 * while the second held key(a) = key(c) and waited for key(b): a
 * deadlock the server broke (and the library retried). The keys are now
 * taken in their own order: both calls are granted, and the server's
 * deadlock count does not move. The other databases lock rows, in the
 * order of the names: the same calls, both granted.
 */
static void test_many_L12_names_sharing_a_key(void **state)
{
    samekey *k = tu_shared_map(sizeof *k);
    int pg = strcmp(tu_url_driver(g_url), "postgres") == 0;
    sqllock_db *admin = tu_open_or_fail(g_url), *probe = NULL;
    pid_t pid[2];
    int64_t deadlocks = pg ? pg_deadlocks() : 0, end;
    int bad;
    (void)state;

    if (pg) {
        /* Two names of one key, found by the server's own hashtext():
         * the numbers i, j of prefix || i and prefix || j. */
        char prefix[64], x[96], y[96];
        sqllock_value v;
        int64_t i1 = -1, i2 = -1;
        int has = 0;

        snprintf(prefix, sizeof prefix, "many-%ld-key-", (long)getpid());
        v = sqllock__text(prefix);
        EXPECT_RC(admin, sqllock__exec_sql(admin, "CREATE TEMPORARY TABLE "
                                           "samekey AS SELECT pg_catalog.min(i) "
                                           "AS i1, pg_catalog.max(i) AS i2 "
                                           "FROM (SELECT i, pg_catalog."
                                           "hashtext($1 || i) AS h FROM "
                                           "pg_catalog.generate_series(1, "
                                           "300000) AS i) AS t GROUP BY h "
                                           "HAVING pg_catalog.count(*) > 1 "
                                           "LIMIT 1", &v, 1, NULL, NULL, NULL),
                  SQLLOCK_OK, "a pair of names with one hashtext()");
        EXPECT_RC(admin, sqllock__exec_sql(admin, "SELECT i1 FROM samekey",
                                           NULL, 0, &has, &i1, NULL),
                  SQLLOCK_OK, "i1");
        EXPECT_RC(admin, sqllock__exec_sql(admin, "SELECT i2 FROM samekey",
                                           NULL, 0, &has, &i2, NULL),
                  SQLLOCK_OK, "i2");
        if (i1 < 0 || i2 < 0)
            fail_msg("no two names of one hashtext() among 300000");
        snprintf(x, sizeof x, "%s%lld", prefix, (long long)i1);
        snprintf(y, sizeof y, "%s%lld", prefix, (long long)i2);
        snprintf(k->names[0], sizeof k->names[0], "%s",
                 strcmp(x, y) < 0 ? x : y);
        snprintf(k->names[2], sizeof k->names[2], "%s",
                 strcmp(x, y) < 0 ? y : x);
    } else {
        mkname(k->names[0], sizeof k->names[0], "key", 1);
        mkname(k->names[2], sizeof k->names[2], "key", 2);
    }
    /* b between them: a followed by '!', below every character that can
     * follow a in c. */
    snprintf(k->names[1], sizeof k->names[1], "%.98s!", k->names[0]);
    assert_true(strcmp(k->names[0], k->names[1]) < 0 &&
                strcmp(k->names[1], k->names[2]) < 0);
    if (pg) {
        sqllock_value v = sqllock__text(k->names[1]);
        EXPECT_RC(admin, sqllock__exec_sql(admin, "SELECT pg_catalog."
                                           "pg_advisory_lock(1936814924, "
                                           "pg_catalog.hashtext($1))", &v, 1,
                                           NULL, NULL, NULL),
                  SQLLOCK_OK, "the blocker takes key(b)");
        probe = tu_open_or_fail(g_url);
    }
    end = tu_now_ms() + tu_scaled_ms(20000);
    pid[0] = tu_fork(samekey_bc, k);
    if (pg)
        TU_WAIT_WHILE(!atomic_load(&k->started[0]) ||
                      samekey_waiting(probe, k) < 1, end, 10);
    pid[1] = tu_fork(samekey_ab, k);
    if (pg) {
        sqllock_value v = sqllock__text(k->names[1]);

        TU_WAIT_WHILE(!atomic_load(&k->started[1]) ||
                      samekey_waiting(probe, k) < 2, end, 10);
        if (samekey_waiting(probe, k) < 2)
            fail_msg("the two calls are not both waiting");
        EXPECT_RC(admin, sqllock__exec_sql(admin, "SELECT pg_catalog."
                                           "pg_advisory_unlock(1936814924, "
                                           "pg_catalog.hashtext($1))", &v, 1,
                                           NULL, NULL, NULL),
                  SQLLOCK_OK, "the blocker lets go");
    }
    bad = tu_wait_all(pid, 2);
    print_message("    [%s] {b, c}: %s, {a, b}: %s\n", tu_url_driver(g_url),
                  sqllock_errname(atomic_load(&k->rc[0])),
                  sqllock_errname(atomic_load(&k->rc[1])));
    assert_int_equal(atomic_load(&k->rc[0]), SQLLOCK_OK);
    assert_int_equal(atomic_load(&k->rc[1]), SQLLOCK_OK);
    assert_int_equal(bad, 0);
    if (pg) {
        expect_no_deadlocks_since(deadlocks, "between two multi-name calls");
        sqllock_close(probe);
    }
    sqllock_close(admin);
    munmap(k, sizeof *k);
}

/* ---- a holder of a subset killed ---- */

typedef struct killed {
    char names[4][96];
    int64_t ttl;
    _Atomic int ready;
    _Atomic int64_t tokens[4];
} killed;

/* Holds names 3 and 1 by one multi-name acquire (ttl k->ttl), notes
 * their tokens, and holds them until killed. */
static int subset_holder(void *arg, int i)
{
    killed *k = arg;
    sqllock_db *cdb = tu_child_open(g_url, "holder");
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_lease *h[2];

    (void)i;
    if (cdb == NULL)
        return 1;
    o.ttl_ms = k->ttl;
    if (sqllock_lease_new(cdb, k->names[3], &o, &h[0]) != SQLLOCK_OK ||
        sqllock_lease_new(cdb, k->names[1], &o, &h[1]) != SQLLOCK_OK ||
        sqllock_lease_acquire_many(cdb, h, 2, 10000) != SQLLOCK_OK) {
        fprintf(stderr, "holder: %s\n", sqllock_errmsg(cdb));
        return 1;
    }
    atomic_store(&k->tokens[3], sqllock_lease_token(h[0]));
    atomic_store(&k->tokens[1], sqllock_lease_token(h[1]));
    atomic_store(&k->ready, 1);
    for (;;)
        pause();
}

/*
 * L12 with L2: a process holding two of four names by a multi-name
 * acquire is SIGKILLed; a multi-name waiter for all four gets them once
 * the dead holder's ttl has passed by the server's clock (not before:
 * the rows stay until then), with tokens above the dead holder's.
 */
static void test_many_L12_killed_holder_of_subset(void **state)
{
    killed *k = tu_shared_map(sizeof *k);
    int64_t ttl = tu_scaled_ms(1500), start, took;
    sqllock_db *db;
    sqllock_lease *l[4];
    pid_t pid;
    int i;
    (void)state;

    for (i = 0; i < 4; i++)
        mkname(k->names[i], sizeof k->names[i], "kill", i);
    k->ttl = ttl;
    pid = tu_fork(subset_holder, k);
    TU_WAIT_WHILE(!atomic_load(&k->ready), tu_now_ms() + 30000, 2);
    assert_true(atomic_load(&k->ready));
    tu_kill_wait(pid);
    start = tu_now_ms();
    db = tu_open_or_fail(g_url);
    for (i = 0; i < 4; i++)
        l[i] = new_lease(db, k->names[i], 60000, 20);
    EXPECT_RC(db, sqllock_lease_acquire_many(db, l, 4, 0), SQLLOCK_BUSY,
              "right after the kill");
    EXPECT_RC(db, sqllock_lease_acquire_many(db, l, 4, ttl + 30000),
              SQLLOCK_OK, "after the ttl");
    took = tu_now_ms() - start;
    for (i = 1; i < 4; i += 2)
        if (sqllock_lease_token(l[i]) <= atomic_load(&k->tokens[i]))
            fail_msg("L5: '%s' got token %lld after the dead holder's %lld",
                     k->names[i], (long long)sqllock_lease_token(l[i]),
                     (long long)atomic_load(&k->tokens[i]));
    /* Not before the dead holder's lease could have expired (its ttl
     * began before the kill; allow for the holder's setup). */
    if (took > ttl + tu_scaled_ms(20000))
        fail_msg("the names of the dead holder took %lld ms (ttl %lld)",
                 (long long)took, (long long)ttl);
    EXPECT_RC(db, sqllock_lease_release_many(db, l, 4), SQLLOCK_OK, "release");
    for (i = 0; i < 4; i++)
        sqllock_lease_free(l[i]);
    sqllock_close(db);
    munmap(k, sizeof *k);
}

/* ---- a multi-name waiter woken ---- */

typedef struct waker {
    char names[3][96];
    _Atomic int held;
    _Atomic int64_t released_at;
    _Atomic int done;
} waker;

/* Holds the middle name by itself, until the waiter has gone to sleep;
 * then lets it go. */
static int hold_then_release(waker *w, int64_t settle_ms)
{
    sqllock_db *db = NULL;
    sqllock_lease *l = NULL;
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    int rc;

    if (sqllock_open(g_url, NULL, &db) != SQLLOCK_OK)
        return 1;
    o.ttl_ms = 60000;
    rc = sqllock_lease_new(db, w->names[1], &o, &l);
    if (rc == SQLLOCK_OK)
        rc = sqllock_lease_acquire(l, 10000);
    if (rc != SQLLOCK_OK)
        return 1;
    atomic_store(&w->held, 1);
    tu_sleep_ms(settle_ms);
    atomic_store(&w->released_at, tu_now_ms());
    rc = sqllock_lease_release(l);
    sqllock_lease_free(l);
    sqllock_close(db);
    return rc == SQLLOCK_OK ? 0 : 1;
}

static void *holder_thread(void *p)
{
    hold_then_release(p, 400);
    return NULL;
}

static int holder_process(void *p, int i)
{
    (void)i;
    return hold_then_release(p, 400);
}

static void many_waiter(waker *w, const char *where, int must_wake)
{
    sqllock_db *db = tu_open_or_fail(g_url);
    sqllock_lease *l[3];
    int64_t end = tu_now_ms() + 30000, took;
    int i;

    for (i = 0; i < 3; i++)
        l[i] = new_lease(db, w->names[2 - i], 60000, SLOW_POLL_MS);
    TU_WAIT_WHILE(!atomic_load(&w->held), end, 1);
    assert_true(atomic_load(&w->held));
    EXPECT_RC(db, sqllock_lease_acquire_many(db, l, 3, SLOW_POLL_MS * 3),
              SQLLOCK_OK, "many waiter");
    took = tu_now_ms() - atomic_load(&w->released_at);
    if (must_wake && took > WAKE_WITHIN_MS)
        fail_msg("L9/L12: a release %s took %lld ms to wake a multi-name "
                 "waiter whose backoff is %d ms: it was not woken", where,
                 (long long)took, SLOW_POLL_MS);
    EXPECT_RC(db, sqllock_lease_release_many(db, l, 3), SQLLOCK_OK, "release");
    for (i = 0; i < 3; i++)
        sqllock_lease_free(l[i]);
    sqllock_close(db);
}

/*
 * L9 for L12: a waiter for three names, one held by a lease in another
 * thread of this process, is woken by its release (in-process wake-up,
 * every database) well inside its 20 s backoff, and then holds all three.
 */
static void test_many_L12_woken_same_process(void **state)
{
    waker *w = calloc(1, sizeof *w);
    pthread_t th;
    int i;
    (void)state;

    assert_non_null(w);
    for (i = 0; i < 3; i++)
        mkname(w->names[i], sizeof w->names[i], "wake-thr", i);
    assert_int_equal(pthread_create(&th, NULL, holder_thread, w), 0);
    many_waiter(w, "in this process", 1);
    pthread_join(th, NULL);
    free(w);
}

/*
 * The same with the holder in another process: woken by NOTIFY
 * (PostgreSQL) or by the holder's companion session lock (MySQL and
 * MariaDB); on SQLite the waiter gets the names by polling.
 */
static void test_many_L12_woken_other_process(void **state)
{
    waker *w = tu_shared_map(sizeof *w);
    pid_t pid;
    int i;
    (void)state;

    for (i = 0; i < 3; i++)
        mkname(w->names[i], sizeof w->names[i], "wake-proc", i);
    pid = tu_fork(holder_process, w);
    if (pushes())
        many_waiter(w, "in another process", 1);
    else {
        /* No push: the waiter polls; only check that it gets them. */
        sqllock_db *db = tu_open_or_fail(g_url);
        sqllock_lease *l[3];

        for (i = 0; i < 3; i++)
            l[i] = new_lease(db, w->names[i], 60000, 50);
        while (!atomic_load(&w->held))
            tu_sleep_ms(1);
        EXPECT_RC(db, sqllock_lease_acquire_many(db, l, 3, 30000),
                  SQLLOCK_OK, "polling many waiter");
        EXPECT_RC(db, sqllock_lease_release_many(db, l, 3), SQLLOCK_OK,
                  "release");
        for (i = 0; i < 3; i++)
            sqllock_lease_free(l[i]);
        sqllock_close(db);
    }
    assert_int_equal(tu_wait(pid), 0);
    munmap(w, sizeof *w);
}

/*
 * L12 in one round trip, and without it. PostgreSQL and MySQL/MariaDB:
 * with the routine sqllock_init() installs, an acquire of 10 names sends
 * ONE statement (the core counts what it sends); with the routine
 * dropped (a database made by an older sqllock_init()), the acquire
 * falls back to its transaction -- still all or none, tokens still per
 * name -- and sqllock_init() puts the routine back. SQLite: one
 * transaction, on the one host.
 */
static void test_many_L12_round_trips_and_fallback(void **state)
{
    const char *drv = tu_url_driver(g_url);
    int pg = strcmp(drv, "postgres") == 0, my = strcmp(drv, "mysql") == 0;
    sqllock_db *db = tu_open_or_fail(g_url), *other = tu_open_or_fail(g_url);
    sqllock_lease *l[10], *held;
    char name[128];
    uint64_t before, sent;
    int i, round;
    (void)state;

    for (i = 0; i < 10; i++) {
        mkname(name, sizeof name, "trips", i);
        l[i] = new_lease(db, name, 60000, 5);
    }
    /* Warm: the statements prepared. */
    EXPECT_RC(db, sqllock_lease_acquire_many(db, l, 10, 0), SQLLOCK_OK,
              "warm");
    EXPECT_RC(db, sqllock_lease_release_many(db, l, 10), SQLLOCK_OK, "warm");
    for (round = 0; round < 2; round++) {
        int64_t t5 = 0;

        before = atomic_load(&sqllock__statements_sent);
        EXPECT_RC(db, sqllock_lease_acquire_many(db, l, 10, 0), SQLLOCK_OK,
                  "acquire 10");
        sent = atomic_load(&sqllock__statements_sent) - before;
        if ((pg || my) && round == 0 && sent != 1)
            fail_msg("an acquire of 10 names sent %llu statements, not one",
                     (unsigned long long)sent);
        if (round == 1 && sent < 12)
            fail_msg("without the routine, %llu statements: not the "
                     "transaction", (unsigned long long)sent);
        t5 = sqllock_lease_token(l[5]);
        EXPECT_RC(db, sqllock_lease_release_many(db, l, 10), SQLLOCK_OK,
                  "release 10");
        /* All or none, on this path too. */
        held = new_lease(other, sqllock_lease_name(l[7]), 60000, 5);
        EXPECT_RC(other, sqllock_lease_try_acquire(held), SQLLOCK_OK, "hold");
        EXPECT_RC(db, sqllock_lease_acquire_many(db, l, 10, 0), SQLLOCK_BUSY,
                  "one held");
        for (i = 0; i < 10; i++)
            if (i != 7)
                assert_false(row_exists(other, sqllock_lease_name(l[i])));
        EXPECT_RC(other, sqllock_lease_release(held), SQLLOCK_OK, "release");
        sqllock_lease_free(held);
        EXPECT_RC(db, sqllock_lease_acquire_many(db, l, 10, 0), SQLLOCK_OK,
                  "again");
        assert_true(sqllock_lease_token(l[5]) > t5);
        EXPECT_RC(db, sqllock_lease_release_many(db, l, 10), SQLLOCK_OK,
                  "release");
        if (round == 1 || !(pg || my))
            break;
        /* Drop the routine, as an older sqllock_init() would have left
         * the database; a fresh handle finds it missing. */
        EXPECT_RC(other, sqllock__exec_sql(other, pg
                      ? "DROP FUNCTION sqllock_acquire_many_v2(text, text, "
                        "text, double precision)"
                      : "DROP PROCEDURE sqllock_acquire_many_v1",
                      NULL, 0, NULL, NULL, NULL), SQLLOCK_OK, "drop");
        for (i = 0; i < 10; i++)
            sqllock_lease_free(l[i]);
        sqllock_close(db);
        db = tu_open_or_fail(g_url);
        for (i = 0; i < 10; i++) {
            mkname(name, sizeof name, "trips", i);
            l[i] = new_lease(db, name, 60000, 5);
        }
    }
    if (pg || my) {
        /* sqllock_init() installs it again: one statement once more. */
        EXPECT_RC(other, sqllock_init(other), SQLLOCK_OK, "init");
        for (i = 0; i < 10; i++)
            sqllock_lease_free(l[i]);
        sqllock_close(db);
        db = tu_open_or_fail(g_url);
        for (i = 0; i < 10; i++) {
            mkname(name, sizeof name, "trips", i);
            l[i] = new_lease(db, name, 60000, 5);
        }
        EXPECT_RC(db, sqllock_lease_acquire_many(db, l, 10, 0), SQLLOCK_OK,
                  "warm after init");
        EXPECT_RC(db, sqllock_lease_release_many(db, l, 10), SQLLOCK_OK, "r");
        before = atomic_load(&sqllock__statements_sent);
        EXPECT_RC(db, sqllock_lease_acquire_many(db, l, 10, 0), SQLLOCK_OK,
                  "after init");
        sent = atomic_load(&sqllock__statements_sent) - before;
        if (sent != 1)
            fail_msg("after sqllock_init(), %llu statements, not one",
                     (unsigned long long)sent);
        EXPECT_RC(db, sqllock_lease_release_many(db, l, 10), SQLLOCK_OK, "r");
    }
    for (i = 0; i < 10; i++)
        sqllock_lease_free(l[i]);
    sqllock_close(other);
    sqllock_close(db);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_many_L12_bad_input),
        cmocka_unit_test(test_many_L12_all_or_none),
        cmocka_unit_test(test_many_L12_round_trips_and_fallback),
        cmocka_unit_test(test_many_L12_processes_exact_counters),
        cmocka_unit_test(test_many_L12_names_sharing_a_key),
        cmocka_unit_test(test_many_L12_killed_holder_of_subset),
        cmocka_unit_test(test_many_L12_woken_same_process),
        cmocka_unit_test(test_many_L12_woken_other_process),
    };

    return TU_RUN_PER_URL("many", &g_url, tests, tu_group_schema, NULL);
}
