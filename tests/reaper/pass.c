/*
 * pass.c -- test_reaper: one pass with sqllock_reap() (P1),
 * a reaped lease is lost (L4), tokens after a reap (L5).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "test_util.h"
#include "test_run.h"
#include "reaper.h"

/* ------------------------------------------------------------------ */
/* One pass                                                            */
/* ------------------------------------------------------------------ */

/* P1: a pass deletes exactly the expired rows and leaves the live ones,
 * and counts what it deleted. */
void test_reaper_P1_deletes_only_expired(void **state)
{
    fixture *f = *state;
    sqllock_lease *live[3];
    char name[300], prefix[100];
    snap before, after;
    int64_t deleted = -1, gone;
    int i;

    snprintf(prefix, sizeof prefix, "reap-%ld-only-", (long)getpid());
    /* Whatever others left expired goes first, so the count below is
     * about this test's rows. */
    ASSERT_RC(sqllock_reap(f->db, 0, 1000, NULL), SQLLOCK_OK, f->db);
    for (i = 0; i < 5; i++) {
        rp_name_of(name, sizeof name, "only", "dead", i);
        rp_leave_expiring(f->db, name);
    }
    for (i = 0; i < 3; i++) {
        rp_name_of(name, sizeof name, "only", "live", i);
        live[i] = rp_new_lease(f->db, name, 60000);
        ASSERT_RC(sqllock_lease_try_acquire(live[i]), SQLLOCK_OK, f->db);
    }
    rp_name_of(name, sizeof name, "only", "dead", 4);
    rp_wait_expired_for(f->db, name, 20);

    rp_snap_take(f->db, &before);
    assert_int_equal(rp_count_prefix(&before, prefix), 8);
    ASSERT_RC(sqllock_reap(f->db, 0, 1000, &deleted), SQLLOCK_OK, f->db);
    assert_int_equal(sqllock_errcode(f->db), SQLLOCK_OK);
    rp_snap_take(f->db, &after);

    for (i = 0; i < 5; i++) {
        rp_name_of(name, sizeof name, "only", "dead", i);
        if (rp_snap_find(&after, name) != NULL)
            fail_msg("P1: expired row %s was not reaped", name);
    }
    for (i = 0; i < 3; i++) {
        const snap_row *r = rp_snap_find(&after, sqllock_lease_name(live[i]));
        if (r == NULL)
            fail_msg("P1 broken: the live lease %s was reaped",
                     sqllock_lease_name(live[i]));
        assert_int_equal(r->token, sqllock_lease_token(live[i]));
    }
    gone = rp_others_gone(&before, &after, prefix);
    if (deleted < 5 || deleted > 5 + gone)
        fail_msg("sqllock_reap counted %lld rows; it deleted 5 of this "
                 "test's and at most %lld others", (long long)deleted,
                 (long long)gone);
    for (i = 0; i < 3; i++) {
        ASSERT_RC(sqllock_lease_release(live[i]), SQLLOCK_OK, f->db);
        sqllock_lease_free(live[i]);
    }
    rp_snap_free(&before);
    rp_snap_free(&after);
}

/* P1: the grace time is judged by the server's clock: a row that expired
 * less than grace_ms ago stays, one that expired longer ago goes. */
void test_reaper_P1_grace(void **state)
{
    fixture *f = *state;
    char name[300];
    int64_t deleted, ago;
    tu_row r;

    rp_name_of(name, sizeof name, "grace", "row", 0);
    rp_leave_expiring(f->db, name);
    rp_wait_expired_for(f->db, name, 600);
    ASSERT_RC(tu_find(f->db, name, &r), SQLLOCK_OK, f->db);
    ago = -r.remaining_ms;        /* expired this long ago, >= 600 ms */

    ASSERT_RC(sqllock_reap(f->db, ago + 60000, 1000, &deleted), SQLLOCK_OK,
              f->db);
    ASSERT_RC(tu_find(f->db, name, &r), SQLLOCK_OK, f->db);
    if (r.found != 1)
        fail_msg("P1: a row expired %lld ms ago was reaped with a grace of "
                 "%lld ms", (long long)ago, (long long)(ago + 60000));
    /* 500 ms less than its age: by the time the DELETE runs the row is
     * older still. */
    ASSERT_RC(sqllock_reap(f->db, ago - 500, 1000, &deleted), SQLLOCK_OK,
              f->db);
    assert_true(deleted >= 1);
    ASSERT_RC(tu_find(f->db, name, &r), SQLLOCK_OK, f->db);
    if (r.found != 0)
        fail_msg("P1: a row expired more than %lld ms ago was not reaped "
                 "with a grace of %lld ms", (long long)ago,
                 (long long)(ago - 500));
}

/* P1: one statement deletes at most `batch` rows, and a pass repeats it
 * until everything expired is gone, counting every row exactly. */
void test_reaper_P1_batches(void **state)
{
    fixture *f = *state;
    char name[300], prefix[100];
    snap before, after;
    sqllock_value args[2];
    int64_t deleted = -1, one, gone;
    int i;

    snprintf(prefix, sizeof prefix, "reap-%ld-batch-", (long)getpid());
    ASSERT_RC(sqllock_reap(f->db, 0, 1000, NULL), SQLLOCK_OK, f->db);
    for (i = 0; i < 250; i++) {
        rp_name_of(name, sizeof name, "batch", "row", i);
        rp_leave_expiring(f->db, name);
    }
    rp_wait_expired_for(f->db, name, 20);

    /* One LEASE_REAP statement by hand: exactly 100 of the 250. */
    args[0] = sqllock__int(0);
    args[1] = sqllock__int(100);
    ASSERT_RC(sqllock__run(f->db, SQLLOCK_SQL_LEASE_REAP, args, 2, "reap"),
              SQLLOCK_OK, f->db);
    one = f->db->drv->affected_rows(f->db->stmts[SQLLOCK_SQL_LEASE_REAP]);
    sqllock__end(f->db, SQLLOCK_SQL_LEASE_REAP);
    if (one != 100)
        fail_msg("P1: one reap statement with batch 100 deleted %lld rows",
                 (long long)one);

    rp_snap_take(f->db, &before);
    assert_int_equal(rp_count_prefix(&before, prefix), 150);
    ASSERT_RC(sqllock_reap(f->db, 0, 100, &deleted), SQLLOCK_OK, f->db);
    rp_snap_take(f->db, &after);
    assert_int_equal(rp_count_prefix(&after, prefix), 0);
    gone = rp_others_gone(&before, &after, prefix);
    if (deleted < 150 || deleted > 150 + gone)
        fail_msg("sqllock_reap(batch 100) counted %lld rows; it deleted "
                 "150 of this test's and at most %lld others",
                 (long long)deleted, (long long)gone);
    rp_snap_free(&before);
    rp_snap_free(&after);

    /* Batch 1: one row per statement, all of them. */
    for (i = 0; i < 7; i++) {
        rp_name_of(name, sizeof name, "batch", "one", i);
        rp_leave_expiring(f->db, name);
    }
    rp_wait_expired_for(f->db, name, 20);
    rp_snap_take(f->db, &before);
    ASSERT_RC(sqllock_reap(f->db, 0, 1, &deleted), SQLLOCK_OK, f->db);
    rp_snap_take(f->db, &after);
    assert_int_equal(rp_count_prefix(&after, prefix), 0);
    gone = rp_others_gone(&before, &after, prefix);
    if (deleted < 7 || deleted > 7 + gone)
        fail_msg("sqllock_reap(batch 1) counted %lld rows; it deleted 7 of "
                 "this test's and at most %lld others", (long long)deleted,
                 (long long)gone);
    rp_snap_free(&before);
    rp_snap_free(&after);
}

/* P1: a lease renewed after its first expiry time had passed is not
 * reaped: the DELETE judges the expiry as the renewal left it. */
void test_reaper_P1_renewed_not_reaped(void **state)
{
    fixture *f = *state;
    char name[300];
    sqllock_lease *l;
    tu_row r;

    rp_name_of(name, sizeof name, "renewed", "a", 0);
    l = rp_new_lease(f->db, name, 1500);
    ASSERT_RC(sqllock_lease_try_acquire(l), SQLLOCK_OK, f->db);
    tu_sleep_ms(1000);
    ASSERT_RC(sqllock_lease_renew(l), SQLLOCK_OK, f->db);
    tu_sleep_ms(800);               /* past the first expiry */
    ASSERT_RC(sqllock_reap(f->db, 0, 1000, NULL), SQLLOCK_OK, f->db);
    ASSERT_RC(tu_find(f->db, name, &r), SQLLOCK_OK, f->db);
    if (r.found != 1)
        fail_msg("P1 broken: a lease renewed 800 ms ago (ttl 1500 ms) was "
                 "reaped");
    assert_int_equal(r.token, sqllock_lease_token(l));
    ASSERT_RC(sqllock_lease_renew(l), SQLLOCK_OK, f->db);
    ASSERT_RC(sqllock_lease_release(l), SQLLOCK_OK, f->db);
    sqllock_lease_free(l);
}

/* P1: a lease kept alive by renewals next to a reaper thread that runs
 * every millisecond is never reaped: every renewal sent while the lease
 * was still valid by the local clock succeeds. */
void test_reaper_P1_renewals_beside_thread(void **state)
{
    fixture *f = *state;
    sqllock_reaper *rp = rp_start_reaper(g_url, 1, 0, 100);
    sqllock_reaper_stats st;
    sqllock_lease *l;
    char name[300];
    int64_t end;
    int renewals = 0;

    rp_name_of(name, sizeof name, "beside", "a", 0);
    /* The ttl is scaled (a renewal under ASan at a load of 3 once took
     * longer than 300 ms); the reaper still runs every millisecond, so a
     * reaper that deleted live rows would still be caught. */
    l = rp_new_lease(f->db, name, tu_scaled_ms(300));
    ASSERT_RC(sqllock_lease_try_acquire(l), SQLLOCK_OK, f->db);
    end = tu_now_ms() + 1500;
    while (tu_now_ms() < end) {
        int rc;

        tu_sleep_ms(60);
        if (sqllock_lease_remaining_ms(l) <= 0)
            fail_msg("the test itself was too slow: the lease's local "
                     "deadline passed between two renewals 60 ms apart");
        rc = sqllock_lease_renew(l);
        if (rc != SQLLOCK_OK)
            fail_msg("P1 broken: renewal #%d of a valid lease = %s (%s)",
                     renewals, sqllock_errname(rc), sqllock_errmsg(f->db));
        renewals++;
    }
    ASSERT_RC(sqllock_lease_release(l), SQLLOCK_OK, f->db);
    sqllock_lease_free(l);
    rp_stats_get(rp, &st);
    rp_stop_reaper(rp);
    if (st.passes < 10)
        fail_msg("the reaper made only %lld passes in 1.5 s at a 1 ms "
                 "interval", (long long)st.passes);
    if (st.errors != 0)
        fail_msg("the reaper had %lld failed passes: %s: %s",
                 (long long)st.errors, sqllock_errname(st.last_status),
                 st.last_error);
}

/* L4: a lease that was reaped reports SQLLOCK_LOST on release and on
 * renew, never success. */
void test_reaper_L4_reaped_lease_is_lost(void **state)
{
    fixture *f = *state;
    sqllock_lease *a, *b;
    char na[300], nb[300];
    int64_t deleted = 0, token;
    tu_row r;

    rp_name_of(na, sizeof na, "lost", "release", 0);
    rp_name_of(nb, sizeof nb, "lost", "renew", 0);
    a = rp_new_lease(f->db, na, 1);
    b = rp_new_lease(f->db, nb, 1);
    ASSERT_RC(sqllock_lease_try_acquire(a), SQLLOCK_OK, f->db);
    ASSERT_RC(sqllock_lease_try_acquire(b), SQLLOCK_OK, f->db);
    token = sqllock_lease_token(b);
    rp_wait_expired_for(f->db, nb, 20);
    ASSERT_RC(sqllock_reap(f->db, 0, 1000, &deleted), SQLLOCK_OK, f->db);
    assert_true(deleted >= 2);
    ASSERT_RC(tu_find(f->db, na, &r), SQLLOCK_OK, f->db);
    assert_int_equal(r.found, 0);
    ASSERT_RC(sqllock_lease_release(a), SQLLOCK_LOST, f->db);
    ASSERT_RC(sqllock_lease_renew(b), SQLLOCK_LOST, f->db);
    /* The name is free again, with a larger token (L5). */
    ASSERT_RC(sqllock_lease_try_acquire(b), SQLLOCK_OK, f->db);
    assert_true(sqllock_lease_token(b) > token);
    ASSERT_RC(sqllock_lease_release(b), SQLLOCK_OK, f->db);
    sqllock_lease_free(a);
    sqllock_lease_free(b);
}

/* L5: tokens granted after reaping are larger than every token granted
 * before it, on the reaped names and on new ones. On MySQL the pass also
 * trims the per-name token rows, but never the row with the largest
 * token (servers that recompute AUTO_INCREMENT at start-up need it). */
void test_reaper_L5_tokens_after_reap(void **state)
{
    fixture *f = *state;
    sqllock_lease *keep, *l;
    char name[300];
    int64_t max_before = 0, t, prev;
    int i, mysql = strcmp(f->driver, "mysql") == 0;
    static const char count_sql[] =
        "SELECT COUNT(*) FROM sqllock_token WHERE name = ?";

    rp_name_of(name, sizeof name, "tokens", "keep", 0);
    keep = rp_new_lease(f->db, name, 60000);
    ASSERT_RC(sqllock_lease_try_acquire(keep), SQLLOCK_OK, f->db);
    max_before = sqllock_lease_token(keep);
    for (i = 0; i < 5; i++) {
        rp_name_of(name, sizeof name, "tokens", "gone", i);
        t = rp_leave_expiring(f->db, name);
        assert_true(t > max_before);
        max_before = t;
    }
    rp_wait_expired_for(f->db, name, 20);
    ASSERT_RC(sqllock_reap(f->db, 0, 2, NULL), SQLLOCK_OK, f->db);

    if (mysql) {
        int64_t newest;

        /* Rows 0..3 and the live lease's are not the newest: trimmed
         * (in batches of 2). */
        for (i = 0; i < 4; i++) {
            rp_name_of(name, sizeof name, "tokens", "gone", i);
            if (rp_row_count_sql(f->db, count_sql, name) != 0)
                fail_msg("MySQL token row of %s was not trimmed", name);
        }
        if (rp_row_count_sql(f->db, count_sql, sqllock_lease_name(keep)) != 0)
            fail_msg("MySQL token row of %s was not trimmed",
                     sqllock_lease_name(keep));
        newest = rp_row_count_sql(
            f->db, "SELECT MAX(token) FROM sqllock_token", NULL);
        if (newest < max_before)
            fail_msg("L5: after the trim the largest token row holds %lld, "
                     "below the last token granted, %lld: the row with the "
                     "largest token was deleted", (long long)newest,
                     (long long)max_before);
    }
    /* The live lease is still held. */
    ASSERT_RC(sqllock_lease_renew(keep), SQLLOCK_OK, f->db);

    /* Whatever the server: new grants are above all earlier ones. */
    prev = max_before;
    for (i = 0; i < 5; i++) {
        rp_name_of(name, sizeof name, "tokens", "gone", i);
        l = rp_new_lease(f->db, name, 60000);
        ASSERT_RC(sqllock_lease_try_acquire(l), SQLLOCK_OK, f->db);
        t = sqllock_lease_token(l);
        if (t <= prev)
            fail_msg("L5 broken: %s got token %lld after reaping, not above "
                     "%lld", name, (long long)t, (long long)prev);
        prev = t;
        ASSERT_RC(sqllock_lease_release(l), SQLLOCK_OK, f->db);
        sqllock_lease_free(l);
    }
    rp_name_of(name, sizeof name, "tokens", "new", 0);
    l = rp_new_lease(f->db, name, 60000);
    ASSERT_RC(sqllock_lease_try_acquire(l), SQLLOCK_OK, f->db);
    assert_true(sqllock_lease_token(l) > prev);
    prev = sqllock_lease_token(l);
    ASSERT_RC(sqllock_lease_release(l), SQLLOCK_OK, f->db);
    sqllock_lease_free(l);
    /* The name whose token row was trimmed while its lease was held. */
    ASSERT_RC(sqllock_lease_release(keep), SQLLOCK_OK, f->db);
    ASSERT_RC(sqllock_lease_try_acquire(keep), SQLLOCK_OK, f->db);
    if (sqllock_lease_token(keep) <= prev)
        fail_msg("L5 broken: %s got token %lld, not above %lld",
                 sqllock_lease_name(keep),
                 (long long)sqllock_lease_token(keep), (long long)prev);
    ASSERT_RC(sqllock_lease_release(keep), SQLLOCK_OK, f->db);
    sqllock_lease_free(keep);
}
