/*
 * hold.c -- test_conformance: re-entrancy (L8), the time left
 * (L6), owner ids (L3), waiting for a lease (L9).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <pthread.h>
#include <cmocka.h>

#include "test_util.h"
#include "test_run.h"
#include "conformance.h"

/* ------------------------------------------------------------------ */
/* L8, L6, L3, L9: re-entry, time left, owner ids, waiting            */
/* ------------------------------------------------------------------ */

/* L8: the same handle acquiring again counts up and keeps the hold; the
 * row goes when the count returns to zero. */
void test_conformance_L8_reentrancy_counts(void **state)
{
    fixture *f = *state;
    sqllock_db *db2 = cf_open_db();
    const char *name = cf_lock_name(f, "reentry", "a");
    sqllock_lease *a = cf_new_lease(f->db, name, 30000);
    sqllock_lease *b = cf_new_lease(db2, name, 30000);
    char owner[SQLLOCK_OWNER_LEN + 1];
    int64_t token;

    assert_int_equal(sqllock_lease_count(a), 0);
    ASSERT_RC(sqllock_lease_try_acquire(a), SQLLOCK_OK, f->db);
    snprintf(owner, sizeof owner, "%s", sqllock_lease_owner(a));
    token = sqllock_lease_token(a);
    assert_int_equal(sqllock_lease_count(a), 1);
    ASSERT_RC(sqllock_lease_try_acquire(a), SQLLOCK_OK, f->db);
    assert_int_equal(sqllock_lease_count(a), 2);
    ASSERT_RC(sqllock_lease_acquire(a, 1000), SQLLOCK_OK, f->db);
    assert_int_equal(sqllock_lease_count(a), 3);
    assert_int_equal(sqllock_lease_token(a), token);
    assert_string_equal(sqllock_lease_owner(a), owner);
    cf_expect_row(f->db, name, owner, token);

    ASSERT_RC(sqllock_lease_release(a), SQLLOCK_OK, f->db);
    assert_int_equal(sqllock_lease_count(a), 2);
    assert_int_equal(sqllock_lease_held(a), 1);
    ASSERT_RC(sqllock_lease_try_acquire(b), SQLLOCK_BUSY, db2);
    cf_expect_row(f->db, name, owner, token);
    ASSERT_RC(sqllock_lease_release(a), SQLLOCK_OK, f->db);
    assert_int_equal(sqllock_lease_count(a), 1);
    ASSERT_RC(sqllock_lease_try_acquire(b), SQLLOCK_BUSY, db2);
    ASSERT_RC(sqllock_lease_release(a), SQLLOCK_OK, f->db);
    assert_int_equal(sqllock_lease_count(a), 0);
    assert_int_equal(sqllock_lease_held(a), 0);
    assert_int_equal(sqllock_lease_token(a), 0);
    assert_string_equal(sqllock_lease_owner(a), "");
    cf_expect_no_row(f->db, name);
    ASSERT_RC(sqllock_lease_release(a), SQLLOCK_ENOTHELD, f->db);
    ASSERT_RC(sqllock_lease_renew(a), SQLLOCK_ENOTHELD, f->db);
    ASSERT_RC(sqllock_lease_try_acquire(b), SQLLOCK_OK, db2);
    ASSERT_RC(sqllock_lease_release(b), SQLLOCK_OK, db2);

    sqllock_lease_free(a);
    sqllock_lease_free(b);
    sqllock_close(db2);
}

/* L8: a reentrant acquire renews; when the lease was lost meanwhile it
 * says LOST and the handle no longer holds. */
void test_conformance_L8_reentry_after_loss_reports_lost(void **state)
{
    fixture *f = *state;
    sqllock_db *db2 = cf_open_db();
    const char *name = cf_lock_name(f, "reentryloss", "a");
    sqllock_lease *a = cf_new_lease(f->db, name, 250);
    sqllock_lease *b = cf_new_lease(db2, name, 30000);

    ASSERT_RC(sqllock_lease_try_acquire(a), SQLLOCK_OK, f->db);
    tu_sleep_ms(350);
    ASSERT_RC(sqllock_lease_try_acquire(b), SQLLOCK_OK, db2);
    ASSERT_RC(sqllock_lease_try_acquire(a), SQLLOCK_LOST, f->db);
    assert_int_equal(sqllock_lease_held(a), 0);
    assert_int_equal(sqllock_lease_count(a), 0);
    cf_expect_row(f->db, name, sqllock_lease_owner(b), sqllock_lease_token(b));
    ASSERT_RC(sqllock_lease_release(b), SQLLOCK_OK, db2);
    sqllock_lease_free(a);
    sqllock_lease_free(b);
    sqllock_close(db2);
}

/* L6: remaining time is conservative (at most ttl - margin from the send
 * time), decreases, and is 0 when not held. */
void test_conformance_L6_remaining_conservative(void **state)
{
    fixture *f = *state;
    const char *name = cf_lock_name(f, "remaining", "a");
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_lease *a = cf_new_lease(f->db, name, 2000);
    sqllock_lease *m = NULL;
    int64_t t0, t1, t2, t3, r1, r2, r3;

    assert_int_equal(sqllock_lease_remaining_ms(a), 0);
    t0 = tu_now_ms();
    ASSERT_RC(sqllock_lease_try_acquire(a), SQLLOCK_OK, f->db);
    r1 = sqllock_lease_remaining_ms(a);
    t1 = tu_now_ms();
    /* Default margin: ttl / 10. */
    assert_true(r1 <= 2000 - 200);
    assert_true(r1 >= 2000 - 200 - (t1 - t0) - 2);
    tu_sleep_ms(120);
    r2 = sqllock_lease_remaining_ms(a);
    t2 = tu_now_ms();
    assert_true(r2 <= r1 - 110);
    assert_true(r2 > 0);
    /* A renewal restores it, never above ttl - margin: the local deadline
     * (now + remaining) moves on by at least the 120 ms slept, since it
     * counts from when the renewal was sent. (Compared as deadlines, not
     * as remainders read at different times: a slow renewal round trip,
     * through a pooler on a loaded machine, must not fail the case.) */
    ASSERT_RC(sqllock_lease_renew(a), SQLLOCK_OK, f->db);
    r3 = sqllock_lease_remaining_ms(a);
    t3 = tu_now_ms();
    if (t3 + r3 < t2 + r2 + 110)
        fail_msg("L6: the renewal moved the local deadline on by %lld ms, "
                 "less than the 120 ms since the grant",
                 (long long)((t3 + r3) - (t2 + r2)));
    assert_true(r3 <= 1800);
    ASSERT_RC(sqllock_lease_release(a), SQLLOCK_OK, f->db);
    assert_int_equal(sqllock_lease_remaining_ms(a), 0);

    /* An explicit margin. */
    o.ttl_ms = 2000;
    o.safety_margin_ms = 700;
    ASSERT_RC(sqllock_lease_new(f->db, name, &o, &m), SQLLOCK_OK, f->db);
    t0 = tu_now_ms();
    ASSERT_RC(sqllock_lease_try_acquire(m), SQLLOCK_OK, f->db);
    r1 = sqllock_lease_remaining_ms(m);
    t1 = tu_now_ms();
    assert_true(r1 <= 1300);
    assert_true(r1 >= 1300 - (t1 - t0) - 2);
    ASSERT_RC(sqllock_lease_release(m), SQLLOCK_OK, f->db);
    sqllock_lease_free(m);

    /* A lease shorter than its margin's worth of time runs out to 0. */
    {
        sqllock_lease *s =
            cf_new_lease(f->db, cf_lock_name(f, "remaining", "s"), 100);
        ASSERT_RC(sqllock_lease_try_acquire(s), SQLLOCK_OK, f->db);
        tu_sleep_ms(120);
        assert_int_equal(sqllock_lease_remaining_ms(s), 0);
        /* Past its local deadline the lease is no longer reported as held
         * (L6), though the handle still counts its hold and can release
         * it: nobody took it over. */
        assert_int_equal(sqllock_lease_held(s), 0);
        assert_int_equal(sqllock_lease_count(s), 1);
        ASSERT_RC(sqllock_lease_release(s), SQLLOCK_OK, f->db);
        sqllock_lease_free(s);
    }
    sqllock_lease_free(a);
}

/* L3: owner ids are 32 hex digits and differ for every acquisition. */
void test_conformance_L3_owner_ids_unique(void **state)
{
    fixture *f = *state;
    enum { N = 20 };
    char owners[N][SQLLOCK_OWNER_LEN + 1];
    sqllock_lease *a =
        cf_new_lease(f->db, cf_lock_name(f, "owners", "a"), 30000);
    sqllock_lease *b =
        cf_new_lease(f->db, cf_lock_name(f, "owners", "b"), 30000);
    int i, j;

    for (i = 0; i < N; i += 2) {
        ASSERT_RC(sqllock_lease_try_acquire(a), SQLLOCK_OK, f->db);
        ASSERT_RC(sqllock_lease_try_acquire(b), SQLLOCK_OK, f->db);
        if (!tu_is_owner_id(sqllock_lease_owner(a)))
            fail_msg("owner id \"%s\" is not %d hex digits",
                     sqllock_lease_owner(a), SQLLOCK_OWNER_LEN);
        assert_true(tu_is_owner_id(sqllock_lease_owner(b)));
        snprintf(owners[i], sizeof owners[i], "%s", sqllock_lease_owner(a));
        snprintf(owners[i + 1], sizeof owners[i + 1], "%s",
                 sqllock_lease_owner(b));
        ASSERT_RC(sqllock_lease_release(a), SQLLOCK_OK, f->db);
        ASSERT_RC(sqllock_lease_release(b), SQLLOCK_OK, f->db);
    }
    for (i = 0; i < N; i++)
        for (j = 0; j < i; j++)
            if (strcmp(owners[i], owners[j]) == 0)
                fail_msg("owner id %s issued twice", owners[i]);
    sqllock_lease_free(a);
    sqllock_lease_free(b);
}

/* L9: waiting. A holder in another thread, with its own handle, releases
 * after 200 ms; the waiter then gets the lock. */
typedef struct holder_arg {
    const char *name;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int acquired;              /* 1 held, -1 failed */
    int rc_release;
    int64_t token;
} holder_arg;

static void *holder_thread(void *p)
{
    holder_arg *h = p;
    sqllock_db *db = NULL;
    sqllock_lease *l = NULL;
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    int ok;

    o.ttl_ms = 30000;
    ok = sqllock_open(g_url, NULL, &db) == SQLLOCK_OK &&
         sqllock_lease_new(db, h->name, &o, &l) == SQLLOCK_OK &&
         sqllock_lease_try_acquire(l) == SQLLOCK_OK;
    pthread_mutex_lock(&h->mu);
    h->acquired = ok ? 1 : -1;
    h->token = ok ? sqllock_lease_token(l) : 0;
    pthread_cond_signal(&h->cv);
    pthread_mutex_unlock(&h->mu);
    if (ok) {
        tu_sleep_ms(200);
        h->rc_release = sqllock_lease_release(l);
    }
    sqllock_lease_free(l);
    sqllock_close(db);
    return NULL;
}

void test_conformance_L9_wait_succeeds_when_released(void **state)
{
    fixture *f = *state;
    holder_arg h;
    pthread_t th;
    const char *name = cf_lock_name(f, "waitok", "a");
    sqllock_lease *w = cf_new_lease(f->db, name, 30000);
    int64_t t0, dt;
    int rc;

    memset(&h, 0, sizeof h);
    h.name = name;
    pthread_mutex_init(&h.mu, NULL);
    pthread_cond_init(&h.cv, NULL);
    assert_int_equal(pthread_create(&th, NULL, holder_thread, &h), 0);
    pthread_mutex_lock(&h.mu);
    while (h.acquired == 0)
        pthread_cond_wait(&h.cv, &h.mu);
    pthread_mutex_unlock(&h.mu);
    if (h.acquired != 1) {
        pthread_join(th, NULL);
        fail_msg("the holder thread could not acquire");
    }
    t0 = tu_now_ms();
    rc = sqllock_lease_acquire(w, 10000);
    dt = tu_now_ms() - t0;
    pthread_join(th, NULL);
    pthread_mutex_destroy(&h.mu);
    pthread_cond_destroy(&h.cv);
    if (rc != SQLLOCK_OK)
        fail_msg("acquire(wait 10 s) = %s: %s", sqllock_errname(rc),
                 sqllock_errmsg(f->db));
    assert_int_equal(h.rc_release, SQLLOCK_OK);
    assert_true(dt >= 100);          /* it did wait for the release */
    assert_true(dt < 5000);
    assert_true(sqllock_lease_token(w) > h.token);
    ASSERT_RC(sqllock_lease_release(w), SQLLOCK_OK, f->db);
    sqllock_lease_free(w);
}

/* L9: the wait ends with TIMEOUT when the holder keeps the lock. */
void test_conformance_L9_wait_times_out(void **state)
{
    fixture *f = *state;
    sqllock_db *db2 = cf_open_db();
    const char *name = cf_lock_name(f, "waittimeout", "a");
    sqllock_lease *a = cf_new_lease(f->db, name, 30000);
    sqllock_lease *b = cf_new_lease(db2, name, 30000);
    int64_t t0, dt;

    ASSERT_RC(sqllock_lease_try_acquire(a), SQLLOCK_OK, f->db);
    t0 = tu_now_ms();
    ASSERT_RC(sqllock_lease_acquire(b, 300), SQLLOCK_TIMEOUT, db2);
    dt = tu_now_ms() - t0;
    assert_true(dt >= 290);
    assert_true(dt < tu_scaled_ms(3000));   /* ends near its 300 ms, not hung */
    assert_int_equal(sqllock_lease_held(b), 0);
    cf_expect_row(f->db, name, sqllock_lease_owner(a), sqllock_lease_token(a));
    ASSERT_RC(sqllock_lease_release(a), SQLLOCK_OK, f->db);
    sqllock_lease_free(a);
    sqllock_lease_free(b);
    sqllock_close(db2);
}
