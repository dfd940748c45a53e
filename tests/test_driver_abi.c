/*
 * test_driver_abi.c -- a driver built against an older sqllock_driver.h
 * (issue 16 item 1; DESIGN D1, D2; version 3, before the guard of issue
 * 17 item 2).
 *
 * A driver's `version` says which fields of its sqllock_driver and of its
 * sqllock_dialect exist. Here the SQLite driver is registered again under
 * schemes of its own, as a version 1, 2 and 3 driver:
 * copies of its driver and dialect structs cut to exactly the size those
 * versions had, each in a heap block of that size, so that the
 * sanitizers' and valgrind's redzones sit right behind them and any read
 * of a later field fails the run. On a real SQLite file, every lock call
 * that the older layout supports works, and what it lacks is reported
 * (SQLLOCK_EUNSUPPORTED for the reaper, fast mode and the guard, the
 * row-lock scope from the capability bits, wake-ups by polling) instead
 * of being read from beyond the struct.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "test_util.h"
#include "test_run.h"

extern const sqllock_driver sqllock__sqlite_driver;

/* The sizes the structs had: a version 1 driver ended before `listen`
 * and its dialect before `sql_v2`; a version 2 driver ended before
 * `row_lock_scope`, its dialect before `sql_v4`; a version 3 driver
 * ended after `row_lock_scope` (version 4 added no method), its dialect
 * before `sql_v4`. */
#define DRIVER_V1_SIZE offsetof(sqllock_driver, listen)
#define DRIVER_V2_SIZE offsetof(sqllock_driver, row_lock_scope)
#define DRIVER_V3_SIZE offsetof(sqllock_driver, adopt)
#define DIALECT_V1_SIZE offsetof(sqllock_dialect, sql_v2)
#define DIALECT_V2_SIZE offsetof(sqllock_dialect, sql_v4)
#define DIALECT_V3_SIZE offsetof(sqllock_dialect, sql_v4)
/* Version 4 appended no method, version 5 adopt and txn_status, version
 * 6 upgrade, version 7 session_wake, versions 8 and 9 none (statements
 * only, sql_v8 and sql_v9), version 10 execute_txn: a version 3 driver
 * ends before adopt. A method added later makes this fail. */
typedef char driver_v10_is_whole[
    offsetof(sqllock_driver, execute_txn) + sizeof(void (*)(void)) ==
    sizeof(sqllock_driver) ? 1 : -1];

typedef struct old_driver {
    sqllock_driver *drv;          /* DRIVER_Vn_SIZE bytes */
    sqllock_dialect *dialect;     /* DIALECT_Vn_SIZE bytes */
    const char *schemes[2];
} old_driver;

static old_driver g_v1, g_v2, g_v3;
static char *g_dir;

/* A copy of the SQLite driver cut to the layout of `version`. */
static void make_old(old_driver *o, int version, const char *scheme)
{
    size_t dsize = version == 1 ? DRIVER_V1_SIZE
                   : version == 2 ? DRIVER_V2_SIZE : DRIVER_V3_SIZE;
    size_t lsize = version == 1 ? DIALECT_V1_SIZE
                   : version == 2 ? DIALECT_V2_SIZE : DIALECT_V3_SIZE;

    o->drv = malloc(dsize);
    o->dialect = malloc(lsize);
    assert_non_null(o->drv);
    assert_non_null(o->dialect);
    memcpy(o->drv, &sqllock__sqlite_driver, dsize);
    memcpy(o->dialect, sqllock__sqlite_driver.dialect, lsize);
    o->schemes[0] = scheme;
    o->schemes[1] = NULL;
    o->drv->version = version;
    o->drv->name = scheme;
    o->drv->schemes = o->schemes;
    o->drv->dialect = o->dialect;
}

static sqllock_db *open_old(const char *scheme, const char *file)
{
    char url[4200];
    sqllock_db *db = NULL;
    int rc;

    snprintf(url, sizeof url, "%s://%s/%s", scheme, g_dir, file);
    rc = sqllock_open(url, NULL, &db);
    if (rc != SQLLOCK_OK)
        fail_msg("open %s: %s: %s", url, sqllock_errname(rc),
                 sqllock_errmsg(db));
    EXPECT_RC(db, sqllock_init(db), SQLLOCK_OK, "init");
    return db;
}

static sqllock_lease *new_lease(sqllock_db *db, const char *name,
                                unsigned flags)
{
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_lease *l = NULL;

    o.ttl_ms = 30000;
    o.flags = flags;
    o.backoff_min_ms = 5;
    o.backoff_max_ms = 20;
    EXPECT_RC(db, sqllock_lease_new(db, name, &o, &l), SQLLOCK_OK,
              "lease_new");
    return l;
}

/* D1/D2: a version 1 driver: leases, tokens, records and row locks work;
 * the reaper (a version 2 statement) is SQLLOCK_EUNSUPPORTED; fast mode
 * is refused; the row-lock scope comes from its capability bits (version
 * 3 has the method); a wait polls (no LISTEN method before version 2). */
static void test_driver_abi_D1_version_1_layout(void **state)
{
    sqllock_db *a = open_old("sqlitev1", "v1.db");
    sqllock_db *b = open_old("sqlitev1", "v1.db");
    sqllock_lease *la = new_lease(a, "abi", 0), *lb = new_lease(b, "abi", 0);
    sqllock_lease_options fo = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_lease *fast = NULL;
    int64_t deleted = -1, t1, v;
    int scope = -1;
    (void)state;

    EXPECT_RC(a, sqllock_lease_try_acquire(la), SQLLOCK_OK, "acquire");
    t1 = sqllock_lease_token(la);
    assert_true(t1 > 0);
    EXPECT_RC(b, sqllock_lease_try_acquire(lb), SQLLOCK_BUSY, "busy");
    EXPECT_RC(a, sqllock_lease_renew(la), SQLLOCK_OK, "renew");
    EXPECT_RC(a, sqllock_lease_release(la), SQLLOCK_OK, "release");
    EXPECT_RC(b, sqllock_lease_acquire(lb, 1000), SQLLOCK_OK, "acquire");
    assert_true(sqllock_lease_token(lb) > t1);
    EXPECT_RC(b, sqllock_lease_release(lb), SQLLOCK_OK, "release");

    EXPECT_RC(a, sqllock_reap(a, 0, 10, &deleted), SQLLOCK_EUNSUPPORTED,
              "reap on a version 1 driver");
    fo.ttl_ms = 30000;
    fo.flags = SQLLOCK_LEASE_FAST;
    assert_int_not_equal(sqllock_lease_new(a, "abi-fast", &fo, &fast),
                         SQLLOCK_OK);
    sqllock_lease_free(fast);
    EXPECT_RC(a, sqllock_row_lock_scope(a, &scope), SQLLOCK_OK, "scope");
    assert_int_equal(scope, SQLLOCK_ROW_LOCKS_DATABASE);

    EXPECT_RC(a, sqllock_record_create(a, "abi-rec", "1", 1), SQLLOCK_OK,
              "record create");
    EXPECT_RC(a, sqllock_record_cas(a, "abi-rec", 1, "2", 1, &v), SQLLOCK_OK,
              "record cas");
    assert_int_equal(v, 2);

    /* L12: several names at once without LEASE_ACQUIRE_MANY (a version 9
     * statement): the transaction of LEASE_ACQUIRE statements. */
    {
        sqllock_lease *m[2];

        m[0] = new_lease(a, "abi-m2", 0);
        m[1] = new_lease(a, "abi-m1", 0);
        EXPECT_RC(a, sqllock_lease_acquire_many(a, m, 2, 0), SQLLOCK_OK,
                  "acquire_many on a version 1 driver");
        assert_true(sqllock_lease_token(m[0]) > 0);
        assert_true(sqllock_lease_token(m[1]) > 0);
        EXPECT_RC(b, sqllock_lease_try_acquire(lb), SQLLOCK_OK, "other");
        EXPECT_RC(a, sqllock_lease_release_many(a, m, 2), SQLLOCK_OK,
                  "release_many");
        EXPECT_RC(b, sqllock_lease_release(lb), SQLLOCK_OK, "release");
        sqllock_lease_free(m[0]);
        sqllock_lease_free(m[1]);
    }

    sqllock_lease_free(la);
    sqllock_lease_free(lb);
    sqllock_close(a);
    sqllock_close(b);
}

/* D1/D2: a version 2 driver: the reaper works (its statement is in the
 * version 2 array), and the row-lock scope still comes from the
 * capability bits, not from a version 3 method read past the struct. */
static void test_driver_abi_D1_version_2_layout(void **state)
{
    sqllock_db *a = open_old("sqlitev2", "v2.db");
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_lease *l = NULL;
    int64_t deleted = -1;
    int scope = -1;
    (void)state;

    o.ttl_ms = 1;
    o.safety_margin_ms = 0;
    EXPECT_RC(a, sqllock_lease_new(a, "abi-expired", &o, &l), SQLLOCK_OK,
              "lease_new");
    EXPECT_RC(a, sqllock_lease_try_acquire(l), SQLLOCK_OK, "acquire");
    tu_sleep_ms(20);
    EXPECT_RC(a, sqllock_reap(a, 0, 10, &deleted), SQLLOCK_OK, "reap");
    assert_int_equal(deleted, 1);
    EXPECT_RC(a, sqllock_row_lock_scope(a, &scope), SQLLOCK_OK, "scope");
    assert_int_equal(scope, SQLLOCK_ROW_LOCKS_DATABASE);
    sqllock_lease_free(l);
    sqllock_close(a);
}

/* The guard (DESIGN G1, a version 4 statement) on an older driver:
 * SQLLOCK_EUNSUPPORTED from both entry points, nothing read past the
 * dialect. */
static void expect_no_guard(sqllock_db *db)
{
    static const sqllock_table t = { "abi_table", "id", NULL };
    sqllock_cell key = SQLLOCK_NUMBER(1);
    sqllock_cell set = { "val", SQLLOCK_OP_SET, NULL, 1 };
    sqllock_lease *l = new_lease(db, "abi-guard", 0);
    char buf[SQLLOCK_GUARD_SQL_MAX];

    EXPECT_RC(db, sqllock_guard_sql(db, "abi-guard", 1, SQLLOCK_PARAM_QMARK,
                                    1, buf, sizeof buf, NULL),
              SQLLOCK_EUNSUPPORTED, "the guard of an older driver");
    EXPECT_RC(db, sqllock_lease_try_acquire(l), SQLLOCK_OK, "acquire");
    EXPECT_RC(db, sqllock_table_guarded_update(db, l, &t, &key, NULL, &set,
                                               1, NULL, 0),
              SQLLOCK_EUNSUPPORTED, "a guarded update on an older driver");
    EXPECT_RC(db, sqllock_lease_release(l), SQLLOCK_OK, "release");
    sqllock_lease_free(l);
}

/* D1/D2: a version 3 driver: everything but the guard works (its row
 * lock scope method is read); the guard, sqllock_borrow() and
 * shared/exclusive locks are SQLLOCK_EUNSUPPORTED. Older layouts refuse them the same way. */
static void test_driver_abi_D1_version_3_layout(void **state)
{
    sqllock_db *a = open_old("sqlitev3", "v3.db");
    sqllock_db *b = open_old("sqlitev1", "v1g.db");
    int64_t deleted = -1;
    int scope = -1;
    (void)state;

    EXPECT_RC(a, sqllock_reap(a, 0, 10, &deleted), SQLLOCK_OK, "reap");
    EXPECT_RC(a, sqllock_row_lock_scope(a, &scope), SQLLOCK_OK, "scope");
    assert_int_equal(scope, SQLLOCK_ROW_LOCKS_DATABASE);
    expect_no_guard(a);
    expect_no_guard(b);
    /* G2: borrowing a connection needs adopt() (version 5): refused
     * without reading past an older driver's struct. */
    {
        sqllock_db *c = NULL;

        assert_int_equal(sqllock_borrow("sqlitev3", sqllock_db_native(a),
                                        NULL, &c), SQLLOCK_EUNSUPPORTED);
        assert_non_null(strstr(sqllock_errmsg(c), "cannot use an "
                                                  "application's connection"));
        sqllock_close(c);
        assert_int_equal(sqllock_borrow("sqlitev1", sqllock_db_native(b),
                                        NULL, &c), SQLLOCK_EUNSUPPORTED);
        sqllock_close(c);
    }
    /* M2: shared/exclusive locks need the version 13 statements (sql_v13,
     * never read from an older dialect): SQLLOCK_EUNSUPPORTED, and the
     * writer's row is not left behind. */
    {
        sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
        sqllock_rw *rw = NULL;

        o.ttl_ms = 5000;
        EXPECT_RC(a, sqllock_rw_new(a, "abi-rw", 0, &o, &rw), SQLLOCK_OK,
                  "rw_new");
        EXPECT_RC(a, sqllock_rw_try_acquire(rw), SQLLOCK_EUNSUPPORTED,
                  "rw on a version 3 driver");
        assert_non_null(strstr(sqllock_errmsg(a), "version 13"));
        sqllock_rw_free(rw);
        EXPECT_RC(b, sqllock_rw_new(b, "abi-rw", 1, &o, &rw), SQLLOCK_OK,
                  "rw_new");
        EXPECT_RC(b, sqllock_rw_acquire(rw, 100), SQLLOCK_EUNSUPPORTED,
                  "rw on a version 1 driver");
        sqllock_rw_free(rw);
    }
    /* N1: a semaphore checks its name's kind by reading the name's row
     * (LEASE_RANGE, version 11): refused, saying so, and no permit or
     * marker left behind. */
    {
        sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
        sqllock_sem *s = NULL;
        tu_row r;

        o.ttl_ms = 5000;
        EXPECT_RC(a, sqllock_sem_new(a, "abi-sem", 2, &o, &s), SQLLOCK_OK,
                  "sem_new");
        EXPECT_RC(a, sqllock_sem_try_acquire(s), SQLLOCK_EUNSUPPORTED,
                  "sem on a version 3 driver");
        assert_non_null(strstr(sqllock_errmsg(a), "N1"));
        assert_int_equal(sqllock_sem_permit(s), -1);
        sqllock_sem_free(s);
        EXPECT_RC(a, tu_find(a, "abi-sem", &r), SQLLOCK_OK, "list");
        assert_int_equal(r.rows, 0);
    }
    sqllock_close(a);
    sqllock_close(b);
}

/* D1/L7: the watchdog on a driver without the version 8 batch statements
 * (here version 1 and 3 layouts) renews each lease with its own
 * LEASE_RENEW, without reading sql_v8 past the dialect's end: leases of
 * 1.5 s watched every 300 ms are still HELD after 2.5 s. */
static void test_driver_abi_D1_old_driver_watch_renews_one_by_one(void **state)
{
    sqllock_db *dbs[2];
    sqllock_lease *l[2][3];
    char name[64];
    int d, i;
    sqllock_watch_options w = SQLLOCK_WATCH_OPTIONS_INIT;
    (void)state;

    dbs[0] = open_old("sqlitev1", "v1w.db");
    dbs[1] = open_old("sqlitev3", "v3w.db");
    w.interval_ms = 300;
    for (d = 0; d < 2; d++)
        for (i = 0; i < 3; i++) {
            sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
            o.ttl_ms = 1500;
            snprintf(name, sizeof name, "abi-watch-%d-%d", d, i);
            l[d][i] = NULL;
            EXPECT_RC(dbs[d], sqllock_lease_new(dbs[d], name, &o, &l[d][i]),
                      SQLLOCK_OK, "new");
            EXPECT_RC(dbs[d], sqllock_lease_try_acquire(l[d][i]), SQLLOCK_OK,
                      "acquire");
            EXPECT_RC(dbs[d], sqllock_lease_watch(l[d][i], &w), SQLLOCK_OK,
                      "watch");
        }
    tu_sleep_ms(2500);
    for (d = 0; d < 2; d++)
        for (i = 0; i < 3; i++) {
            assert_int_equal(sqllock_lease_state(l[d][i]),
                             SQLLOCK_STATE_HELD);
            EXPECT_RC(dbs[d], sqllock_lease_release(l[d][i]), SQLLOCK_OK,
                      "release");
            sqllock_lease_free(l[d][i]);
        }
    sqllock_close(dbs[0]);
    sqllock_close(dbs[1]);
}

/* D2: the registry takes what it can use and refuses the rest. */
static void test_driver_abi_D2_registration(void **state)
{
    unsigned char *bad = malloc(DRIVER_V1_SIZE);
    int zero = 0;
    (void)state;

    assert_non_null(bad);
    memcpy(bad, g_v1.drv, DRIVER_V1_SIZE);
    /* Through its offset: the allocation is version 1's size, smaller
     * than this build's struct (gcc's -Warray-bounds). */
    memcpy(bad + offsetof(sqllock_driver, version), &zero, sizeof zero);
    assert_int_equal(sqllock_driver_register((sqllock_driver *)bad),
                     SQLLOCK_EINVAL);
    assert_int_equal(sqllock_driver_register(NULL), SQLLOCK_EINVAL);
    free(bad);
    /* Registered again: harmless. */
    assert_int_equal(sqllock_driver_register(g_v1.drv), SQLLOCK_OK);
    assert_ptr_equal(sqllock_driver_find("SQLITEV1"), g_v1.drv);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_driver_abi_D1_version_1_layout),
        cmocka_unit_test(test_driver_abi_D1_version_2_layout),
        cmocka_unit_test(test_driver_abi_D1_version_3_layout),
        cmocka_unit_test(test_driver_abi_D1_old_driver_watch_renews_one_by_one),
        cmocka_unit_test(test_driver_abi_D2_registration),
    };
    int failed;

    g_dir = tu_mkdtemp();
    if (g_dir == NULL)
        return 1;
    make_old(&g_v1, 1, "sqlitev1");
    make_old(&g_v2, 2, "sqlitev2");
    make_old(&g_v3, 3, "sqlitev3");
    if (sqllock_driver_register(g_v1.drv) != SQLLOCK_OK ||
        sqllock_driver_register(g_v2.drv) != SQLLOCK_OK ||
        sqllock_driver_register(g_v3.drv) != SQLLOCK_OK) {
        fprintf(stderr, "driver_abi: cannot register the old layouts\n");
        return 1;
    }
    failed = cmocka_run_group_tests_name("driver_abi", tests, NULL, NULL);
    tu_rmdir(g_dir);
    free(g_dir);
    /* The registry keeps the drivers to the end of the process. */
    return tu_unit_result("driver_abi", "sqlite", failed);
}
