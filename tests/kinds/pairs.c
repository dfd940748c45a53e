/*
 * pairs.c -- N1 between each pair of kinds on one name, in both orders:
 * plain and shared/exclusive, plain and a semaphore, plain and an
 * election, the primitives between themselves; a fair and a plain lease
 * as one lock; several names with a marked one.
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
#include "test_run.h"
#include "test_spawn.h"
#include "tu_fixture.h"
#include "kinds/kinds.h"

/* ---- plain and shared/exclusive ---- */

/*
 * N1, a plain lease first: while it is held, a shared and an exclusive
 * acquire (try and wait) are refused with EKIND naming the plain lease
 * and its holder, at once (not after the wait); once it is released the
 * name becomes a shared/exclusive lock, and from then on the plain lease
 * is refused, also when no hold of the pair is left.
 */
void test_kinds_N1_plain_then_shared_exclusive(void **state)
{
    sqllock_db *db = tu_open_or_fail(g_url), *db2 = tu_open_or_fail(g_url);
    sqllock_lease *plain;
    sqllock_rw *rd, *wr;
    char name[96];
    int64_t t0;
    (void)state;

    kn_name(name, sizeof name, "plain-first");
    plain = kn_lease(db, name, 0);
    rd = kn_rw(db2, name, 1);
    wr = kn_rw(db2, name, 0);
    EXPECT_RC(db, sqllock_lease_try_acquire(plain), SQLLOCK_OK, "plain");
    EXPECT_RC(db2, sqllock_rw_try_acquire(rd), SQLLOCK_EKIND, "shared try");
    expect_msg_any(db2, "shared try", "plain lease");
    t0 = tu_now_ms();
    EXPECT_RC(db2, sqllock_rw_acquire(rd, tu_scaled_ms(20000)), SQLLOCK_EKIND,
              "shared wait");
    EXPECT_RC(db2, sqllock_rw_acquire(wr, tu_scaled_ms(20000)), SQLLOCK_EKIND,
              "exclusive wait");
    expect_msg_any(db2, "exclusive wait", "plain lease");
    if (tu_now_ms() - t0 > tu_scaled_ms(5000))
        fail_msg("N1: EKIND came after %" PRId64 " ms, not at once",
                 tu_now_ms() - t0);
    assert_int_equal(sqllock_lease_count(sqllock_rw_lease(rd)), 0);
    EXPECT_RC(db, sqllock_lease_release(plain), SQLLOCK_OK, "plain release");
    /* Now the pair may have it, and the plain lease may not. */
    EXPECT_RC(db2, sqllock_rw_acquire(wr, 5000), SQLLOCK_OK, "exclusive");
    EXPECT_RC(db, sqllock_lease_try_acquire(plain), SQLLOCK_EKIND,
              "plain vs exclusive");
    expect_msg_any(db, "plain vs exclusive", "shared/exclusive");
    EXPECT_RC(db2, sqllock_rw_release(wr), SQLLOCK_OK, "exclusive release");
    EXPECT_RC(db, sqllock_lease_try_acquire(plain), SQLLOCK_EKIND,
              "plain, nothing held");
    kn_expect_marker(db, name, SQLLOCK_KIND_OWNER_RW);
    sqllock_lease_free(plain);
    sqllock_rw_free(rd);
    sqllock_rw_free(wr);
    sqllock_close(db);
    sqllock_close(db2);
}

/*
 * N1, the pair first: a shared hold, then an exclusive one, each makes a
 * plain try and a plain wait on NAME fail with EKIND naming the
 * shared/exclusive lock (the wait at once, not at its deadline); the
 * handles of the pair that come later find the marker and go on.
 */
void test_kinds_N1_shared_exclusive_then_plain(void **state)
{
    sqllock_db *db = tu_open_or_fail(g_url), *db2 = tu_open_or_fail(g_url);
    sqllock_lease *plain;
    sqllock_rw *rd, *rd2, *wr;
    char name[96];
    int64_t t0;
    (void)state;

    kn_name(name, sizeof name, "rw-first");
    plain = kn_lease(db, name, 0);
    rd = kn_rw(db2, name, 1);
    rd2 = kn_rw(db, name, 1);
    wr = kn_rw(db2, name, 0);
    EXPECT_RC(db2, sqllock_rw_try_acquire(rd), SQLLOCK_OK, "shared");
    EXPECT_RC(db, sqllock_lease_try_acquire(plain), SQLLOCK_EKIND,
              "plain vs shared");
    expect_msg_any(db, "plain vs shared", "shared/exclusive");
    expect_msg_any(db, "plain vs shared", "sqllock_rw_new");
    t0 = tu_now_ms();
    EXPECT_RC(db, sqllock_lease_acquire(plain, tu_scaled_ms(20000)),
              SQLLOCK_EKIND, "plain wait vs shared");
    if (tu_now_ms() - t0 > tu_scaled_ms(5000))
        fail_msg("N1: EKIND came after %" PRId64 " ms, not at once",
                 tu_now_ms() - t0);
    EXPECT_RC(db, sqllock_rw_try_acquire(rd2), SQLLOCK_OK, "second reader");
    EXPECT_RC(db, sqllock_rw_release(rd2), SQLLOCK_OK, "second release");
    EXPECT_RC(db2, sqllock_rw_release(rd), SQLLOCK_OK, "shared release");
    EXPECT_RC(db2, sqllock_rw_try_acquire(wr), SQLLOCK_OK, "exclusive");
    EXPECT_RC(db, sqllock_lease_acquire(plain, 200), SQLLOCK_EKIND,
              "plain vs exclusive");
    EXPECT_RC(db2, sqllock_rw_release(wr), SQLLOCK_OK, "exclusive release");
    assert_int_equal(sqllock_lease_count(plain), 0);
    kn_expect_marker(db, name, SQLLOCK_KIND_OWNER_RW);
    sqllock_lease_free(plain);
    sqllock_rw_free(rd);
    sqllock_rw_free(rd2);
    sqllock_rw_free(wr);
    sqllock_close(db);
    sqllock_close(db2);
}

/* ---- semaphores and elections ---- */

/* N1 with a semaphore, both orders. */
void test_kinds_N1_plain_vs_semaphore(void **state)
{
    sqllock_db *db = tu_open_or_fail(g_url), *db2 = tu_open_or_fail(g_url);
    sqllock_lease *plain;
    sqllock_sem *s, *s2;
    char name[96];
    (void)state;

    /* The plain lease first. */
    kn_name(name, sizeof name, "sem-a");
    plain = kn_lease(db, name, 0);
    s = kn_sem(db2, name, 2);
    EXPECT_RC(db, sqllock_lease_try_acquire(plain), SQLLOCK_OK, "plain");
    EXPECT_RC(db2, sqllock_sem_try_acquire(s), SQLLOCK_EKIND, "sem try");
    expect_msg_any(db2, "sem try", "plain lease");
    EXPECT_RC(db2, sqllock_sem_acquire(s, 200), SQLLOCK_EKIND, "sem wait");
    assert_int_equal(sqllock_sem_permit(s), -1);
    EXPECT_RC(db, sqllock_lease_release(plain), SQLLOCK_OK, "plain release");
    sqllock_lease_free(plain);
    sqllock_sem_free(s);

    /* The semaphore first. */
    kn_name(name, sizeof name, "sem-b");
    plain = kn_lease(db, name, 0);
    s = kn_sem(db2, name, 2);
    s2 = kn_sem(db2, name, 2);
    EXPECT_RC(db2, sqllock_sem_acquire(s, 5000), SQLLOCK_OK, "permit");
    EXPECT_RC(db, sqllock_lease_try_acquire(plain), SQLLOCK_EKIND,
              "plain vs sem");
    expect_msg_any(db, "plain vs sem", "semaphore");
    EXPECT_RC(db2, sqllock_sem_try_acquire(s2), SQLLOCK_OK, "second permit");
    EXPECT_RC(db2, sqllock_sem_release(s2), SQLLOCK_OK, "release 2");
    EXPECT_RC(db2, sqllock_sem_release(s), SQLLOCK_OK, "release 1");
    EXPECT_RC(db, sqllock_lease_acquire(plain, 200), SQLLOCK_EKIND,
              "plain, no permit held");
    kn_expect_marker(db, name, SQLLOCK_KIND_OWNER_SEM);
    sqllock_lease_free(plain);
    sqllock_sem_free(s);
    sqllock_sem_free(s2);
    sqllock_close(db);
    sqllock_close(db2);
}

/* N1 with an election: a candidate of sqllock_leader_start() on a name
 * held as a plain lease is refused at its start, and a plain lease on a
 * name that has been an election is refused; sqllock_leader_lease_new()'s
 * handle is an election's too. */
void test_kinds_N1_plain_vs_leader(void **state)
{
    sqllock_db *db = tu_open_or_fail(g_url), *db2 = tu_open_or_fail(g_url);
    sqllock_leader_options lo = SQLLOCK_LEADER_OPTIONS_INIT;
    sqllock_leader *L = NULL;
    sqllock_lease *plain, *ll;
    char name[96], why[SQLLOCK__ERRMSG_MAX];
    int64_t end;
    int rc;
    (void)state;

    kn_name(name, sizeof name, "leader-a");
    plain = kn_lease(db, name, 0);
    EXPECT_RC(db, sqllock_lease_try_acquire(plain), SQLLOCK_OK, "plain");
    lo.ttl_ms = tu_scaled_ms(10000);
    rc = sqllock_leader_start(g_url, name, &lo, &L, why, sizeof why);
    if (rc != SQLLOCK_EKIND)
        fail_msg("N1: leader_start on a plain lease: %s (%s), want "
                 "SQLLOCK_EKIND", sqllock_errname(rc), why);
    assert_null(L);
    if (strstr(why, "plain lease") == NULL)
        fail_msg("N1: the message does not name the plain lease: %s", why);
    ll = kn_leader_lease(db2, name);
    EXPECT_RC(db2, sqllock_lease_acquire(ll, 200), SQLLOCK_EKIND,
              "leader lease on a plain lease");
    EXPECT_RC(db, sqllock_lease_release(plain), SQLLOCK_OK, "plain release");
    EXPECT_RC(db2, sqllock_lease_acquire(ll, 5000), SQLLOCK_OK,
              "leader lease");
    EXPECT_RC(db, sqllock_lease_try_acquire(plain), SQLLOCK_EKIND,
              "plain vs leader lease");
    expect_msg_any(db, "plain vs leader lease", "election");
    EXPECT_RC(db2, sqllock_lease_release(ll), SQLLOCK_OK, "leader release");
    sqllock_lease_free(ll);
    sqllock_lease_free(plain);

    /* A candidate first. */
    kn_name(name, sizeof name, "leader-b");
    plain = kn_lease(db, name, 0);
    EXPECT_RC(db, sqllock_leader_start(g_url, name, &lo, &L, why, sizeof why),
              SQLLOCK_OK, why);
    end = tu_now_ms() + tu_scaled_ms(10000);
    TU_WAIT_WHILE(!sqllock_leader_is_leader(L), end, 10);
    assert_true(sqllock_leader_is_leader(L));
    EXPECT_RC(db, sqllock_lease_acquire(plain, 300), SQLLOCK_EKIND,
              "plain vs leader");
    expect_msg_any(db, "plain vs leader", "election");
    sqllock_leader_stop(L);
    EXPECT_RC(db, sqllock_lease_try_acquire(plain), SQLLOCK_EKIND,
              "plain after the leader");
    kn_expect_marker(db, name, SQLLOCK_KIND_OWNER_LEADER);
    sqllock_lease_free(plain);
    sqllock_close(db);
    sqllock_close(db2);
}

/* N1 between the primitives: a name that is a shared/exclusive lock is
 * no semaphore and no election, and the other way round. */
void test_kinds_N1_rw_vs_sem_vs_leader(void **state)
{
    sqllock_db *db = tu_open_or_fail(g_url), *db2 = tu_open_or_fail(g_url);
    sqllock_rw *rd;
    sqllock_sem *s;
    sqllock_lease *ll;
    char name[96];
    (void)state;

    kn_name(name, sizeof name, "rw-sem");
    rd = kn_rw(db, name, 1);
    s = kn_sem(db2, name, 3);
    ll = kn_leader_lease(db2, name);
    EXPECT_RC(db, sqllock_rw_try_acquire(rd), SQLLOCK_OK, "shared");
    EXPECT_RC(db, sqllock_rw_release(rd), SQLLOCK_OK, "shared release");
    EXPECT_RC(db2, sqllock_sem_try_acquire(s), SQLLOCK_EKIND, "sem on rw");
    expect_msg_any(db2, "sem on rw", "shared/exclusive");
    EXPECT_RC(db2, sqllock_lease_try_acquire(ll), SQLLOCK_EKIND,
              "leader on rw");
    expect_msg_any(db2, "leader on rw", "shared/exclusive");
    sqllock_rw_free(rd);
    sqllock_sem_free(s);
    sqllock_lease_free(ll);

    kn_name(name, sizeof name, "sem-rw");
    s = kn_sem(db2, name, 3);
    rd = kn_rw(db, name, 0);
    EXPECT_RC(db2, sqllock_sem_try_acquire(s), SQLLOCK_OK, "permit");
    EXPECT_RC(db, sqllock_rw_acquire(rd, 200), SQLLOCK_EKIND, "rw on sem");
    expect_msg_any(db, "rw on sem", "semaphore");
    EXPECT_RC(db2, sqllock_sem_release(s), SQLLOCK_OK, "permit release");
    kn_expect_marker(db, name, SQLLOCK_KIND_OWNER_SEM);
    sqllock_rw_free(rd);
    sqllock_sem_free(s);
    sqllock_close(db);
    sqllock_close(db2);
}

/* ---- fair, many ---- */

/*
 * A fair lease and a plain lease of one name are the same lock (M3): each
 * is BUSY (not EKIND) while the other holds. A fair wait on a marked name
 * is EKIND at once.
 */
void test_kinds_N1_fair_and_plain_one_lock(void **state)
{
    sqllock_db *db = tu_open_or_fail(g_url), *db2 = tu_open_or_fail(g_url);
    sqllock_lease *plain, *fair;
    sqllock_rw *wr;
    char name[96];
    (void)state;

    kn_name(name, sizeof name, "fair");
    plain = kn_lease(db, name, 0);
    fair = kn_lease(db2, name, SQLLOCK_LEASE_FAIR);
    EXPECT_RC(db, sqllock_lease_try_acquire(plain), SQLLOCK_OK, "plain");
    EXPECT_RC(db2, sqllock_lease_try_acquire(fair), SQLLOCK_BUSY, "fair try");
    EXPECT_RC(db2, sqllock_lease_acquire(fair, 200), SQLLOCK_TIMEOUT,
              "fair wait");
    EXPECT_RC(db, sqllock_lease_release(plain), SQLLOCK_OK, "plain release");
    EXPECT_RC(db2, sqllock_lease_acquire(fair, 5000), SQLLOCK_OK, "fair");
    EXPECT_RC(db, sqllock_lease_try_acquire(plain), SQLLOCK_BUSY,
              "plain vs fair");
    EXPECT_RC(db, sqllock_lease_acquire(plain, 200), SQLLOCK_TIMEOUT,
              "plain wait vs fair");
    EXPECT_RC(db2, sqllock_lease_release(fair), SQLLOCK_OK, "fair release");
    sqllock_lease_free(plain);
    sqllock_lease_free(fair);

    kn_name(name, sizeof name, "fair-marked");
    fair = kn_lease(db2, name, SQLLOCK_LEASE_FAIR);
    wr = kn_rw(db, name, 0);
    EXPECT_RC(db, sqllock_rw_try_acquire(wr), SQLLOCK_OK, "exclusive");
    EXPECT_RC(db2, sqllock_lease_try_acquire(fair), SQLLOCK_EKIND,
              "fair try vs exclusive");
    EXPECT_RC(db2, sqllock_lease_acquire(fair, tu_scaled_ms(20000)),
              SQLLOCK_EKIND, "fair wait vs exclusive");
    expect_msg_any(db2, "fair wait vs exclusive", "shared/exclusive");
    EXPECT_RC(db, sqllock_rw_release(wr), SQLLOCK_OK, "exclusive release");
    sqllock_lease_free(fair);
    sqllock_rw_free(wr);
    sqllock_close(db);
    sqllock_close(db2);
}

/* N1 for several names at once: a marked name among them is EKIND,
 * tried or waited for, and none of the names is taken. */
void test_kinds_N1_acquire_many_marked_name(void **state)
{
    sqllock_db *db = tu_open_or_fail(g_url), *db2 = tu_open_or_fail(g_url);
    sqllock_lease *l[3];
    sqllock_sem *s;
    char a[96], b[96], c[96];
    int i;
    (void)state;

    kn_name(a, sizeof a, "many-a");
    kn_name(b, sizeof b, "many-b");
    kn_name(c, sizeof c, "many-c");
    s = kn_sem(db2, b, 1);
    EXPECT_RC(db2, sqllock_sem_try_acquire(s), SQLLOCK_OK, "permit");
    EXPECT_RC(db2, sqllock_sem_release(s), SQLLOCK_OK, "permit release");
    l[0] = kn_lease(db, c, 0);
    l[1] = kn_lease(db, b, 0);
    l[2] = kn_lease(db, a, 0);
    EXPECT_RC(db, sqllock_lease_acquire_many(db, l, 3, 0), SQLLOCK_EKIND,
              "many try");
    expect_msg_any(db, "many try", "semaphore");
    EXPECT_RC(db, sqllock_lease_acquire_many(db, l, 3, tu_scaled_ms(20000)),
              SQLLOCK_EKIND, "many wait");
    for (i = 0; i < 3; i++)
        assert_int_equal(sqllock_lease_count(l[i]), 0);
    /* Nothing was left taken: the other names are free. */
    EXPECT_RC(db, sqllock_lease_acquire_many(db, l, 1, 0), SQLLOCK_OK,
              "c alone");
    EXPECT_RC(db, sqllock_lease_try_acquire(l[2]), SQLLOCK_OK, "a alone");
    EXPECT_RC(db, sqllock_lease_release(l[0]), SQLLOCK_OK, "c release");
    EXPECT_RC(db, sqllock_lease_release(l[2]), SQLLOCK_OK, "a release");
    for (i = 0; i < 3; i++)
        sqllock_lease_free(l[i]);
    sqllock_sem_free(s);
    sqllock_close(db);
    sqllock_close(db2);
}
