/*
 * test_fast.c -- fast mode, SQLLOCK_LEASE_FAST (DESIGN L10's opt-in; L1,
 * L4, L5 within it).
 *
 * On every database: fast mode is granted where the database can commit
 * one transaction asynchronously (PostgreSQL) and refused with
 * SQLLOCK_EUNSUPPORTED and a message saying why where it cannot (MySQL,
 * MariaDB, SQLite), so nobody believes they got it.
 *
 * On PostgreSQL: a fast lease excludes others exactly like a durable one
 * (L1), renews (by hand and by the watchdog), is lost to a takeover after
 * expiry (L4), and carries no fencing token (token 0: L5 cannot be kept
 * across a crash in this mode, see SQLLOCK_LEASE_FAST); and its grants and
 * renewals really skip the WAL flush, counted in pg_stat_wal, while the
 * durable default's do not. What a crash does to fast leases and to the
 * tokens of durable leases beside them is in test_restart.c.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "test_util.h"
#include "test_run.h"

static const char *g_url;

static int is_postgres(void)
{
    return strcmp(tu_url_driver(g_url), "postgres") == 0;
}

static sqllock_db *open_db(void)
{
    sqllock_db *db = NULL;

    if (sqllock_open(g_url, NULL, &db) != SQLLOCK_OK)
        fail_msg("open %s: %s", g_url, sqllock_errmsg(db));
    return db;
}

static void unique_name(char *buf, size_t size, const char *what)
{
    static int n;
    snprintf(buf, size, "fast-%ld-%s-%d-%lld", (long)getpid(), what, ++n,
             (long long)tu_now_ms());
}

static sqllock_lease *new_lease(sqllock_db *db, const char *name,
                                int64_t ttl_ms, unsigned flags)
{
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_lease *l = NULL;

    o.ttl_ms = ttl_ms;
    o.flags = flags;
    EXPECT_RC(db, sqllock_lease_new(db, name, &o, &l), SQLLOCK_OK, "new");
    return l;
}

/* L10/E2: granted on PostgreSQL; elsewhere refused, saying why; unknown
 * flags refused everywhere. */
static void test_fast_L10_granted_or_refused(void **state)
{
    sqllock_db *db = open_db();
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_lease *l = NULL;
    char name[128];
    (void)state;

    unique_name(name, sizeof name, "refuse");
    o.ttl_ms = 5000;
    o.flags = SQLLOCK_LEASE_FAST;
    if (is_postgres()) {
        EXPECT_RC(db, sqllock_lease_new(db, name, &o, &l), SQLLOCK_OK,
                  "fast lease on PostgreSQL");
        EXPECT_RC(db, sqllock_lease_try_acquire(l), SQLLOCK_OK, "acquire");
        EXPECT_RC(db, sqllock_lease_release(l), SQLLOCK_OK, "release");
        sqllock_lease_free(l);
        l = NULL;
    } else {
        assert_int_equal(sqllock_lease_new(db, name, &o, &l),
                         SQLLOCK_EUNSUPPORTED);
        assert_null(l);
        expect_msg_any(db, "fast mode refused", "fast mode");
        expect_msg_any(db, "fast mode refused", "durable");
    }
    o.flags = SQLLOCK_LEASE_FAST | (1u << 7);
    assert_int_equal(sqllock_lease_new(db, name, &o, &l), SQLLOCK_EINVAL);
    assert_null(l);
    expect_msg_any(db, "unknown flag", "unknown lease flags");
    /* A struct_version 1 caller has no flags field: never fast. */
    o.struct_version = 1;
    EXPECT_RC(db, sqllock_lease_new(db, name, &o, &l), SQLLOCK_OK, "v1");
    sqllock_lease_free(l);
    sqllock_close(db);
}

/* L1, L4, L5 in fast mode (PostgreSQL). */
static void test_fast_L1_L4_L5_behaviour(void **state)
{
    sqllock_db *a = open_db(), *b = open_db();
    sqllock_lease *fa, *db_, *short_;
    sqllock_watch_options w = SQLLOCK_WATCH_OPTIONS_INIT;
    char name[128], name2[128];
    int64_t end, ttl;
    tu_row r;
    (void)state;

    unique_name(name, sizeof name, "excl");
    /* The ttl scales with a connect's bound (4x under valgrind), and the
     * renewer connects before the grant (sqllock_watch_prepare()), so
     * that its connect does not spend the lease's ttl. */
    ttl = tu_scaled_connect_ms(1500);
    EXPECT_RC(a, sqllock_watch_prepare(a), SQLLOCK_OK, "prepare");
    fa = new_lease(a, name, ttl, SQLLOCK_LEASE_FAST);
    db_ = new_lease(b, name, 60000, 0);
    EXPECT_RC(a, sqllock_lease_try_acquire(fa), SQLLOCK_OK, "fast acquire");
    /* L5: no fencing token in fast mode, though the row has one. */
    assert_int_equal(sqllock_lease_token(fa), 0);
    assert_true(tu_is_owner_id(sqllock_lease_owner(fa)));
    EXPECT_RC(b, tu_find(b, name, &r), SQLLOCK_OK, "find");
    assert_int_equal(r.found, 1);
    assert_string_equal(r.owner, sqllock_lease_owner(fa));
    assert_true(r.token > 0);
    /* L1: excluded like a durable lease; renewals, by hand and by the
     * watchdog over several ttls, keep it. */
    EXPECT_RC(b, sqllock_lease_try_acquire(db_), SQLLOCK_BUSY, "excluded");
    EXPECT_RC(a, sqllock_lease_renew(fa), SQLLOCK_OK, "fast renew");
    EXPECT_RC(a, sqllock_lease_watch(fa, &w), SQLLOCK_OK, "watch");
    end = tu_now_ms() + 2 * ttl;
    while (tu_now_ms() < end) {
        EXPECT_RC(b, sqllock_lease_try_acquire(db_), SQLLOCK_BUSY,
                  "excluded while the watchdog renews a fast lease");
        assert_int_equal(sqllock_lease_state(fa), SQLLOCK_STATE_HELD);
        tu_sleep_ms(100);
    }
    EXPECT_RC(a, sqllock_lease_release(fa), SQLLOCK_OK, "fast release");
    EXPECT_RC(b, sqllock_lease_try_acquire(db_), SQLLOCK_OK, "durable");
    assert_true(sqllock_lease_token(db_) > r.token);
    EXPECT_RC(a, sqllock_lease_try_acquire(fa), SQLLOCK_BUSY, "excluded");
    EXPECT_RC(b, sqllock_lease_release(db_), SQLLOCK_OK, "release");

    /* L4: a fast lease that expires is taken over, and its holder then
     * hears LOST from renew and release. */
    unique_name(name2, sizeof name2, "expire");
    short_ = new_lease(a, name2, 200, SQLLOCK_LEASE_FAST);
    sqllock_lease_free(db_);
    db_ = new_lease(b, name2, 60000, 0);
    EXPECT_RC(a, sqllock_lease_try_acquire(short_), SQLLOCK_OK, "acquire");
    tu_sleep_ms(400);
    EXPECT_RC(b, sqllock_lease_try_acquire(db_), SQLLOCK_OK, "takeover");
    EXPECT_RC(a, sqllock_lease_renew(short_), SQLLOCK_LOST, "renew after");
    EXPECT_RC(b, sqllock_lease_release(db_), SQLLOCK_OK, "release");
    sqllock_lease_free(short_);
    sqllock_lease_free(fa);
    sqllock_lease_free(db_);
    sqllock_close(a);
    sqllock_close(b);
}


/* N acquire + renew + release cycles of one lease; the WAL syncs they
 * cost. */
static int64_t syncs_of_cycles(sqllock_db *db, unsigned flags, int n)
{
    sqllock_lease *l;
    char name[128];
    int64_t before;
    int i;

    unique_name(name, sizeof name, flags ? "sync-fast" : "sync-durable");
    l = new_lease(db, name, 60000, flags);
    before = tu_pg_wal_syncs(db);
    for (i = 0; i < n; i++) {
        EXPECT_RC(db, sqllock_lease_try_acquire(l), SQLLOCK_OK, "acquire");
        EXPECT_RC(db, sqllock_lease_renew(l), SQLLOCK_OK, "renew");
        EXPECT_RC(db, sqllock_lease_release(l), SQLLOCK_OK, "release");
    }
    /* Published with the next statement's end. */
    (void)tu_pg_wal_syncs(db);
    sqllock_lease_free(l);
    return tu_pg_wal_syncs(db) - before;
}

/* L10: a fast grant and renewal do not wait for the WAL flush; durable
 * ones each do. Counted by the server (pg_stat_wal.wal_sync), so a fast
 * mode whose set_config() the planner dropped would fail here. */
static void test_fast_L10_grants_skip_the_flush(void **state)
{
    enum { N = 40 };
    sqllock_db *db = open_db();
    int64_t durable, fast;
    (void)state;

    durable = syncs_of_cycles(db, 0, N);
    fast = syncs_of_cycles(db, SQLLOCK_LEASE_FAST, N);
    printf("fast [postgres]: WAL syncs for %d acquire+renew+release: "
           "durable %lld, fast %lld\n", N, (long long)durable,
           (long long)fast);
    /* Durable: one flush per acquire and per renewal (the release is
     * asynchronous in both modes). */
    if (durable < 2 * N)
        fail_msg("L10: %d durable acquires and renewals made only %lld WAL "
                 "syncs", 2 * N, (long long)durable);
    /* Fast: only the WAL writer's own flushes, a few per second. */
    if (fast > N / 4)
        fail_msg("L10: %d fast acquires and renewals made %lld WAL syncs: "
                 "their commits waited for the flush", 2 * N,
                 (long long)fast);
    sqllock_close(db);
}

/* L10/L7: durable and fast leases watched on one handle and due together
 * are renewed in two batch statements (LEASE_RENEW_MANY and
 * LEASE_RENEW_MANY_FAST); every one of them stays HELD over three ttls
 * and is still its holder's at the end (release OK), and no one else
 * can take any of them meanwhile. */
static void test_fast_L7_L10_mixed_batch_renewed(void **state)
{
    enum { N = 10 };
    sqllock_db *db = open_db(), *other = open_db();
    sqllock_lease *l[2 * N], *probe;
    sqllock_watch_options w = SQLLOCK_WATCH_OPTIONS_INIT;
    char name[128];
    int64_t end;
    int i, rc;
    (void)state;

    EXPECT_RC(db, sqllock_watch_prepare(db), SQLLOCK_OK, "prepare");
    for (i = 0; i < 2 * N; i++) {
        unique_name(name, sizeof name, i < N ? "mix-durable" : "mix-fast");
        l[i] = new_lease(db, name, 1500, i < N ? 0 : SQLLOCK_LEASE_FAST);
        EXPECT_RC(db, sqllock_lease_try_acquire(l[i]), SQLLOCK_OK, "acquire");
    }
    w.interval_ms = 400;
    for (i = 0; i < 2 * N; i++)
        EXPECT_RC(db, sqllock_lease_watch(l[i], &w), SQLLOCK_OK, "watch");
    end = tu_now_ms() + 4500;
    while (tu_now_ms() < end) {
        tu_sleep_ms(100);
        for (i = 0; i < 2 * N; i++)
            if (sqllock_lease_state(l[i]) != SQLLOCK_STATE_HELD)
                fail_msg("L7: %s lease %d is %s", i < N ? "durable" : "fast",
                         i, sqllock_lease_state_name(
                             sqllock_lease_state(l[i])));
    }
    for (i = 0; i < 2 * N; i += 3) {
        probe = new_lease(other, sqllock_lease_name(l[i]), 1000, 0);
        rc = sqllock_lease_try_acquire(probe);
        if (rc != SQLLOCK_BUSY)
            fail_msg("L7: another handle got %s on watched lease %d",
                     sqllock_errname(rc), i);
        sqllock_lease_free(probe);
    }
    for (i = 0; i < 2 * N; i++) {
        EXPECT_RC(db, sqllock_lease_release(l[i]), SQLLOCK_OK, "release");
        sqllock_lease_free(l[i]);
    }
    sqllock_close(other);
    sqllock_close(db);
}

static int group_setup(void **state)
{
    (void)state;
    return tu_init_schema(g_url);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fast_L10_granted_or_refused),
    };
    const struct CMUnitTest pg_tests[] = {
        cmocka_unit_test(test_fast_L1_L4_L5_behaviour),
        cmocka_unit_test(test_fast_L10_grants_skip_the_flush),
        cmocka_unit_test(test_fast_L7_L10_mixed_batch_renewed),
    };
    int rc = TU_RUN_PER_URL("fast", &g_url, tests, group_setup, NULL);

    /* Fast mode exists only on PostgreSQL. */
    rc = tu_status_merge(rc, TU_RUN_ON_DRIVER("fast", "postgres", &g_url,
                                              pg_tests, group_setup));
    return rc;
}
