/*
 * marker.c -- the kind marker itself (N1): the reaper leaves it, nobody
 * attaches to it; and the leases of a primitive's own rows, whose
 * acquire is refused (issue 26 item 8b).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
#include <unistd.h>
#include <cmocka.h>

#include "test_util.h"
#include "internal.h"
#include "test_run.h"
#include "test_spawn.h"
#include "tu_fixture.h"
#include "kinds/kinds.h"

/* ---- the marker itself ---- */

/* P1 and N1: a reaper's pass (grace 0, and the largest grace) leaves
 * the marker; the name stays what it was. */
void test_kinds_N1_reaper_leaves_marker(void **state)
{
    sqllock_db *db = tu_open_or_fail(g_url);
    sqllock_lease *plain;
    sqllock_sem *s;
    int64_t deleted = -1;
    char name[96];
    (void)state;

    kn_name(name, sizeof name, "reap");
    s = kn_sem(db, name, 1);
    EXPECT_RC(db, sqllock_sem_try_acquire(s), SQLLOCK_OK, "permit");
    EXPECT_RC(db, sqllock_sem_release(s), SQLLOCK_OK, "permit release");
    EXPECT_RC(db, sqllock_reap(db, 0, 1000, &deleted), SQLLOCK_OK, "reap");
    EXPECT_RC(db, sqllock_reap(db, INT64_C(9000000000000), 1000, &deleted),
              SQLLOCK_OK, "reap, largest grace");
    kn_expect_marker(db, name, SQLLOCK_KIND_OWNER_SEM);
    plain = kn_lease(db, name, 0);
    EXPECT_RC(db, sqllock_lease_try_acquire(plain), SQLLOCK_EKIND,
              "plain after the reaper");
    sqllock_lease_free(plain);
    sqllock_sem_free(s);
    sqllock_close(db);
}

/* N1, L3: no client can attach to a marker (its owner is not an owner
 * id), so none can renew or release it; sqllock_kind_marker() names
 * each kind and nothing else. */
void test_kinds_N1_marker_cannot_be_attached(void **state)
{
    sqllock_db *db = tu_open_or_fail(g_url);
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_lease *l = NULL;
    sqllock_rw *wr;
    char name[96];
    tu_row r;
    (void)state;

    kn_name(name, sizeof name, "attach");
    wr = kn_rw(db, name, 0);
    EXPECT_RC(db, sqllock_rw_try_acquire(wr), SQLLOCK_OK, "exclusive");
    EXPECT_RC(db, sqllock_rw_release(wr), SQLLOCK_OK, "release");
    EXPECT_RC(db, tu_find(db, name, &r), SQLLOCK_OK, "list");
    assert_int_equal(r.found, 1);
    o.ttl_ms = 30000;
    EXPECT_RC(db, sqllock_lease_attach(db, name, r.owner, r.token, &o, &l),
              SQLLOCK_EINVAL, "attach to the marker");
    assert_null(l);
    kn_expect_marker(db, name, SQLLOCK_KIND_OWNER_RW);
    /* G1: the guard of the marker's name and token is false: a write
     * guarded by it would pass for as long as the marker stays. */
    {
        char guard[SQLLOCK_GUARD_SQL_MAX], sql[SQLLOCK_GUARD_SQL_MAX + 64];
        sqllock_value args[2];
        int64_t passes = -1;
        int has = 0, pg = strcmp(sqllock_db_driver(db), "postgres") == 0;

        EXPECT_RC(db, sqllock_guard_sql(db, name, r.token,
                                        pg ? SQLLOCK_PARAM_DOLLAR
                                           : SQLLOCK_PARAM_QMARK, 1, guard,
                                        sizeof guard, NULL),
                  SQLLOCK_OK, "the guard's text");
        snprintf(sql, sizeof sql, "SELECT CASE WHEN %s THEN 1 ELSE 0 END",
                 guard);
        args[0] = sqllock__text(name);
        args[1] = sqllock__int(r.token);
        EXPECT_RC(db, sqllock__exec_sql(db, sql, args, 2, &has, &passes,
                                        NULL), SQLLOCK_OK, "the guard");
        if (passes != 0)
            fail_msg("G1, N1: the guard of the kind marker's token passes");
    }
    assert_string_equal(sqllock_kind_marker(SQLLOCK_KIND_OWNER_RW),
                        "shared/exclusive lock");
    assert_string_equal(sqllock_kind_marker(SQLLOCK_KIND_OWNER_SEM),
                        "semaphore");
    assert_string_equal(sqllock_kind_marker(SQLLOCK_KIND_OWNER_LEADER),
                        "leader election");
    assert_null(sqllock_kind_marker("0123456789abcdef0123456789abcdef"));
    assert_null(sqllock_kind_marker("sqllock-kind:"));
    assert_null(sqllock_kind_marker(NULL));
    sqllock_rw_free(wr);
    sqllock_close(db);
}

/* ---- 8b: the lease of a primitive's row ---- */

/*
 * Issue 26 item 8b: acquire (try, wait, several names) on the lease
 * that sqllock_rw_lease() gives -- a reader's row, the writer's row --
 * on a permit's lease and on a fair queue row's lease is EMISUSE with a
 * message naming the primitive, and takes nothing (no reader row beside
 * a writer); renew, the accessors and release keep working on them.
 * sqllock_leader_lease_new()'s lease is for acquiring (run --leader).
 */
void test_kinds_E2_derived_lease_refuses_acquire(void **state)
{
    sqllock_db *db = tu_open_or_fail(g_url), *db2 = tu_open_or_fail(g_url);
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_lease *rl, *wl, *pl, *q = NULL, *one[1];
    sqllock_rw *rd, *wr;
    sqllock_sem *s;
    char name[96], qname[SQLLOCK_NAME_MAX + 1];
    int64_t token;
    int live = -1;
    tu_row r;
    (void)state;

    kn_name(name, sizeof name, "derived");
    rd = kn_rw(db, name, 1);
    wr = kn_rw(db2, name, 0);
    EXPECT_RC(db, sqllock_rw_try_acquire(rd), SQLLOCK_OK, "shared");
    rl = sqllock_rw_lease(rd);
    token = sqllock_lease_token(rl);
    EXPECT_RC(db, sqllock_lease_try_acquire(rl), SQLLOCK_EMISUSE,
              "try on the reader's lease");
    expect_msg_any(db, "try on the reader's lease", "shared/exclusive");
    EXPECT_RC(db, sqllock_lease_renew(rl), SQLLOCK_OK, "renew the reader");
    assert_int_equal(sqllock_lease_count(rl), 1);
    assert_int_equal(sqllock_lease_token(rl), token);
    assert_true(sqllock_lease_held(rl));
    EXPECT_RC(db, sqllock_rw_release(rd), SQLLOCK_OK, "shared release");
    /* A writer holds: the reader's handle, not held, still refused (it
     * would have inserted a reader row beside the writer). */
    EXPECT_RC(db2, sqllock_rw_try_acquire(wr), SQLLOCK_OK, "exclusive");
    EXPECT_RC(db, sqllock_lease_try_acquire(rl), SQLLOCK_EMISUSE,
              "try on the idle reader's lease");
    EXPECT_RC(db, sqllock_lease_acquire(rl, 100), SQLLOCK_EMISUSE,
              "wait on the reader's lease");
    one[0] = rl;
    EXPECT_RC(db, sqllock_lease_acquire_many(db, one, 1, 0), SQLLOCK_EMISUSE,
              "many on the reader's lease");
    EXPECT_RC(db, tu_find(db, sqllock_lease_name(rl), &r), SQLLOCK_OK,
              "list");
    assert_int_equal(r.found, 0);
    wl = sqllock_rw_lease(wr);
    EXPECT_RC(db2, sqllock_lease_try_acquire(wl), SQLLOCK_EMISUSE,
              "try on the writer's lease");
    assert_int_equal(sqllock_lease_count(wl), 1);
    EXPECT_RC(db2, sqllock_lease_renew(wl), SQLLOCK_OK, "renew the writer");
    EXPECT_RC(db2, sqllock_rw_release(wr), SQLLOCK_OK, "exclusive release");
    sqllock_rw_free(rd);
    sqllock_rw_free(wr);

    kn_name(name, sizeof name, "derived-sem");
    s = kn_sem(db, name, 2);
    EXPECT_RC(db, sqllock_sem_try_acquire(s), SQLLOCK_OK, "permit");
    pl = sqllock_sem_lease(s);
    EXPECT_RC(db, sqllock_lease_acquire(pl, 100), SQLLOCK_EMISUSE,
              "wait on the permit's lease");
    expect_msg_any(db, "wait on the permit's lease", "semaphore");
    EXPECT_RC(db, sqllock_lease_renew(pl), SQLLOCK_OK, "renew the permit");
    EXPECT_RC(db, sqllock_lease_release(pl), SQLLOCK_OK,
              "release the permit's lease");
    EXPECT_RC(db, sqllock_sem_count(db, name, &live), SQLLOCK_OK, "count");
    assert_int_equal(live, 0);
    sqllock_sem_free(s);

    /* A fair queue row (never handed out; made as lease_fair.c makes
     * them). */
    kn_name(name, sizeof name, "derived-q");
    EXPECT_RC(db, sqllock__derived_name(db, qname, name, "q0123456789abcdef",
                                        "lock name"), SQLLOCK_OK, "qname");
    o.ttl_ms = 30000;
    EXPECT_RC(db, sqllock__lease_new_derived(db, qname, &o, &q), SQLLOCK_OK,
              "queue row lease");
    EXPECT_RC(db, sqllock_lease_try_acquire(q), SQLLOCK_EMISUSE,
              "try on a queue row");
    expect_msg_any(db, "try on a queue row", "queue");
    sqllock_lease_free(q);
    sqllock_close(db);
    sqllock_close(db2);
}
