/*
 * durable.c -- test_hostile on PostgreSQL: options=-c
 * synchronous_commit=off cannot make durable grants and renewals
 * asynchronous (L10).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "test_util.h"
#include "test_run.h"
#include "test_spawn.h"
#include "hostile.h"

/* ------------------------------------------------------------------ */
/* L10 under options=-c synchronous_commit=off (PostgreSQL)            */
/* ------------------------------------------------------------------ */

/* The session's synchronous_commit, as a small number: 0 off, 1 on. */
static int64_t session_sync_off(sqllock_db *db)
{
    int64_t off = -1;
    int has = 0;

    EXPECT_RC(db, sqllock__exec_sql(db, "SELECT CASE WHEN pg_catalog.current_setting("
                                    "'synchronous_commit') = 'off' THEN 1 "
                                    "ELSE 0 END", NULL, 0, &has, &off, NULL),
              SQLLOCK_OK, "current_setting");
    return off;
}

/* L10: a URL that turns synchronous_commit off for the whole session
 * (options=-c..., or ALTER ROLE ... SET) must not make durable grants and
 * renewals asynchronous: each still waits for its WAL flush. Releases
 * stay asynchronous as designed. */
void test_hostile_L10_options_cannot_make_grants_async(void **state)
{
    enum { N = 30 };
    fixture *f = *state;
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_lease *l = NULL;
    sqllock_db *db = NULL;
    char *url, name[80];
    int64_t before, syncs = 0;
    snapshot snap0;
    int i, attempt;

    if (!ho_is_drv(f, "postgres"))
        return;
    url = ho_expand_url(f, "{url}{q}options=-csynchronous_commit%3Doff");
    assert_non_null(url);
    EXPECT_RC(db, sqllock_open(url, NULL, &db), SQLLOCK_OK, "open");
    free(url);
    /* The option took effect for the session. */
    assert_int_equal(session_sync_off(db), 1);
    ho_snap(f, &snap0);
    snprintf(name, sizeof name, "%swal", f->prefix);
    o.ttl_ms = 60000;
    EXPECT_RC(db, sqllock_lease_new(db, name, &o, &l), SQLLOCK_OK, "new");
    /* pg_stat_wal counts for the whole server, and a backend publishes
     * its counts up to 10 s late: under another client's load, a flush
     * that covered one of these commits may not be counted yet. A few
     * tries; one with every flush counted is enough. Without the pin the
     * count is the WAL writer's few. */
    for (attempt = 0; attempt < 3; attempt++) {
        before = tu_pg_wal_syncs(db);
        for (i = 0; i < N; i++) {
            EXPECT_RC(db, sqllock_lease_try_acquire(l), SQLLOCK_OK,
                      "acquire");
            EXPECT_RC(db, sqllock_lease_renew(l), SQLLOCK_OK, "renew");
            EXPECT_RC(db, sqllock_lease_release(l), SQLLOCK_OK, "release");
        }
        (void)tu_pg_wal_syncs(db);
        syncs = tu_pg_wal_syncs(db) - before;
        printf("hostile [postgres]: WAL syncs for %d durable acquire+renew+"
               "release under synchronous_commit=off: %lld\n", N,
               (long long)syncs);
        if (syncs >= 2 * N)
            break;
    }
    if (syncs < 2 * N)
        fail_msg("L10: %d durable acquires and renewals under a URL's "
                 "synchronous_commit=off made only %lld WAL syncs: the "
                 "session's setting made lease grants non-durable", 2 * N,
                 (long long)syncs);
    /* The pin lasts for the statement's own transaction: the session's
     * setting is as the URL made it. */
    assert_int_equal(session_sync_off(db), 1);
    sqllock_lease_free(l);
    sqllock_close(db);
    ho_expect_unchanged(f, &snap0, 0, "the WAL test");
    ho_snap_free(&snap0);
}
