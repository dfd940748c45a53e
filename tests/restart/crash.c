/*
 * crash.c -- test_restart on a crash and a restart: a
 * granted lease survives (L10), an asynchronous release never admits two
 * holders (L10), tokens increase across restarts (L5), fast mode beside
 * durable leases (L5, L10).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "test_util.h"
#include "test_run.h"
#include "test_spawn.h"
#include "restart.h"


/* L10 (a): a granted lease survives a crash. The holder's first call
 * after it reports SQLLOCK_ECONNECT (its connection died with the server)
 * and the next one reconnects and renews. */
void test_restart_L10_granted_lease_survives_crash(void **state)
{
    int64_t ta;
    char name[200];
    sqllock_db *a, *b;
    sqllock_lease *la, *lb;

    (void)state;
    rs_lock_name(name, sizeof name, "granted");
    a = rs_open_db();
    la = rs_new_lease(a, name);
    ASSERT_RC(sqllock_lease_try_acquire(la), SQLLOCK_OK, a);
    rs_saw_token(la);

    rs_crash_and_restart();

    b = rs_open_db();
    lb = rs_new_lease(b, name);
    ASSERT_RC(sqllock_lease_try_acquire(lb), SQLLOCK_BUSY, b);
    rs_expect_row(b, name, la);
    /* The crash cut A's connection; the renewal finds it dead and runs
     * again on a fresh one (DESIGN C3). */
    ASSERT_RC(sqllock_lease_renew(la), SQLLOCK_OK, a);
    assert_int_equal(sqllock_lease_count(la), 1);
    ASSERT_RC(sqllock_lease_try_acquire(lb), SQLLOCK_BUSY, b);
    /* L5 across the crash: B's token is above A's (read before the
     * release, after which the handle reports none). */
    ta = sqllock_lease_token(la);
    assert_true(ta > 0);
    ASSERT_RC(sqllock_lease_release(la), SQLLOCK_OK, a);
    ASSERT_RC(sqllock_lease_try_acquire(lb), SQLLOCK_OK, b);
    assert_true(sqllock_lease_token(lb) > ta);
    rs_saw_token(lb);
    ASSERT_RC(sqllock_lease_release(lb), SQLLOCK_OK, b);
    sqllock_lease_free(la);
    sqllock_lease_free(lb);
    sqllock_close(a);
    sqllock_close(b);
}

/* L10 (b): A acquires and releases (the release may commit
 * asynchronously), B acquires (a durable commit), the server crashes: B's
 * row is there with B's token and C is refused. Never two holders. */
void test_restart_L10_async_release_never_two_holders(void **state)
{
    char name[200];
    sqllock_db *a, *b, *c;
    sqllock_lease *la, *lb, *lc;
    int64_t ta;

    (void)state;
    rs_lock_name(name, sizeof name, "async");
    a = rs_open_db();
    b = rs_open_db();
    la = rs_new_lease(a, name);
    lb = rs_new_lease(b, name);
    ASSERT_RC(sqllock_lease_try_acquire(la), SQLLOCK_OK, a);
    rs_saw_token(la);
    /* A's token, read before the release (the handle reports none after
     * it): B's is above it (L5). */
    ta = sqllock_lease_token(la);
    assert_true(ta > 0);
    ASSERT_RC(sqllock_lease_release(la), SQLLOCK_OK, a);
    ASSERT_RC(sqllock_lease_try_acquire(lb), SQLLOCK_OK, b);
    rs_saw_token(lb);
    assert_true(sqllock_lease_token(lb) > ta);

    rs_crash_and_restart();

    c = rs_open_db();
    lc = rs_new_lease(c, name);
    ASSERT_RC(sqllock_lease_try_acquire(lc), SQLLOCK_BUSY, c);
    rs_expect_row(c, name, lb);
    /* A, which released, cannot get it back either. */
    ASSERT_RC(sqllock_lease_try_acquire(la), SQLLOCK_ECONNECT, a);
    ASSERT_RC(sqllock_lease_try_acquire(la), SQLLOCK_BUSY, a);
    /* B's renewal reconnects (C3) and B still holds it. */
    ASSERT_RC(sqllock_lease_renew(lb), SQLLOCK_OK, b);
    ASSERT_RC(sqllock_lease_release(lb), SQLLOCK_OK, b);
    ASSERT_RC(sqllock_lease_try_acquire(lc), SQLLOCK_OK, c);
    rs_saw_token(lc);
    ASSERT_RC(sqllock_lease_release(lc), SQLLOCK_OK, c);
    sqllock_lease_free(la);
    sqllock_lease_free(lb);
    sqllock_lease_free(lc);
    sqllock_close(a);
    sqllock_close(b);
    sqllock_close(c);
}

/* L5 (c): tokens issued after a restart are greater than every token
 * issued before it, for the same names and for a fresh name. Some names
 * were released before the crash: L10 lets a crash forget such a release
 * (it committed asynchronously), so such a name is either free again (and
 * then its new token is larger) or still held by exactly its old owner
 * and token until that lease expires -- never by anyone else. */
void test_restart_L5_tokens_increase_across_restart(void **state)
{
    enum { N = 5 };
    char name[200], owner[N][SQLLOCK_OWNER_LEN + 1];
    int64_t token[N];
    sqllock_db *a;
    sqllock_lease *l, *n;
    int i, forgotten = 0;

    (void)state;
    a = rs_open_db();
    for (i = 0; i < N; i++) {
        char tag[16];
        snprintf(tag, sizeof tag, "tok%d", i);
        l = rs_new_lease(a, rs_lock_name(name, sizeof name, tag));
        ASSERT_RC(sqllock_lease_try_acquire(l), SQLLOCK_OK, a);
        rs_saw_token(l);
        snprintf(owner[i], sizeof owner[i], "%s", sqllock_lease_owner(l));
        token[i] = sqllock_lease_token(l);
        if (i % 2 == 0)
            ASSERT_RC(sqllock_lease_release(l), SQLLOCK_OK, a);
        sqllock_lease_free(l);
    }
    sqllock_close(a);

    rs_crash_and_restart();

    a = rs_open_db();
    for (i = 0; i < N; i++) {
        char tag[16];
        int rc;
        snprintf(tag, sizeof tag, "tok%d", i);
        l = rs_new_lease(a, rs_lock_name(name, sizeof name, tag));
        rc = sqllock_lease_try_acquire(l);
        if (rc == SQLLOCK_OK) {
            assert_true(i % 2 == 0);
            if (sqllock_lease_token(l) <= g_max_token)
                fail_msg("token %lld after the restart is not above %lld, "
                         "the largest before it",
                         (long long)sqllock_lease_token(l),
                         (long long)g_max_token);
            ASSERT_RC(sqllock_lease_release(l), SQLLOCK_OK, a);
        } else {
            tu_row r;
            ASSERT_RC(rc, SQLLOCK_BUSY, a);
            ASSERT_RC(tu_find(a, name, &r), SQLLOCK_OK, a);
            assert_int_equal(r.found, 1);
            assert_string_equal(r.owner, owner[i]);
            assert_int_equal(r.token, token[i]);
            if (i % 2 == 0)
                forgotten++;
        }
        sqllock_lease_free(l);
    }
    if (forgotten > 0)
        printf("restart [%s]: the crash forgot %d asynchronous release(s); "
               "those leases stay with their old owner until they expire "
               "(L10)\n", g_srv->drv, forgotten);
    n = rs_new_lease(a, rs_lock_name(name, sizeof name, "fresh"));
    ASSERT_RC(sqllock_lease_try_acquire(n), SQLLOCK_OK, a);
    if (sqllock_lease_token(n) <= g_max_token)
        fail_msg("token %lld after the restart is not above %lld",
                 (long long)sqllock_lease_token(n), (long long)g_max_token);
    ASSERT_RC(sqllock_lease_release(n), SQLLOCK_OK, a);
    sqllock_lease_free(n);
    /* Clean up the rows left behind. */
    for (i = 0; i < N; i++) {
        char tag[16];
        const tu_sql *sql = tu_sql_for(g_srv->drv);
        sqllock_value v;
        snprintf(tag, sizeof tag, "tok%d", i);
        v = sqllock__text(rs_lock_name(name, sizeof name, tag));
        ASSERT_RC(sqllock__exec_sql(a, sql->delete_lease, &v, 1, NULL, NULL,
                                    NULL),
                  SQLLOCK_OK, a);
    }
    sqllock_close(a);
}

/* L10's fast mode (SQLLOCK_LEASE_FAST, PostgreSQL) beside durable leases,
 * across a crash right after many fast grants: a fast lease may be
 * forgotten -- its holder then hears LOST, never a silent success -- and
 * the tokens of durable leases still increase past the crash (L5), since
 * every durable grant flushed the log past every earlier draw. Whether the
 * sequence drew a fast lease's token again is printed: that is why fast
 * leases report no token. */
void test_restart_L5_L10_fast_mode_beside_durable(void **state)
{
    enum { N = 100 };
    char name[200], prefix[200];
    sqllock_db *a, *b;
    sqllock_lease *d, *f[N];
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_value v;
    int64_t fast_max = 0, kept = 0;
    int i, has = 0, lost = 0, renewed = 0, rc;
    tu_row r;

    (void)state;
    a = rs_open_db();
    d = rs_new_lease(a, rs_lock_name(name, sizeof name, "durable-beside-fast"));
    ASSERT_RC(sqllock_lease_try_acquire(d), SQLLOCK_OK, a);
    rs_saw_token(d);
    o.ttl_ms = 60000;
    o.flags = SQLLOCK_LEASE_FAST;
    for (i = 0; i < N; i++) {
        char tag[32];
        snprintf(tag, sizeof tag, "fast%d", i);
        f[i] = NULL;
        ASSERT_RC(sqllock_lease_new(a, rs_lock_name(name, sizeof name, tag), &o,
                                    &f[i]), SQLLOCK_OK, a);
        ASSERT_RC(sqllock_lease_try_acquire(f[i]), SQLLOCK_OK, a);
        assert_int_equal(sqllock_lease_token(f[i]), 0);
    }
    snprintf(prefix, sizeof prefix, "restart-%ld-fast%%", (long)getpid());
    v = sqllock__text(prefix);
    ASSERT_RC(sqllock__exec_sql(a, "SELECT max(token) FROM sqllock_lease "
                                "WHERE name LIKE $1", &v, 1, &has, &fast_max,
                                NULL), SQLLOCK_OK, a);

    rs_crash_and_restart();

    b = rs_open_db();
    ASSERT_RC(sqllock__exec_sql(b, "SELECT count(*) FROM sqllock_lease "
                                "WHERE name LIKE $1", &v, 1, &has, &kept,
                                NULL), SQLLOCK_OK, b);
    /* Each fast holder: the first call reports the dead connection; the
     * next renews a lease the server kept, or says LOST for one it
     * forgot. */
    for (i = 0; i < N; i++) {
        char tag[32];
        snprintf(tag, sizeof tag, "fast%d", i);
        ASSERT_RC(tu_find(b, rs_lock_name(name, sizeof name, tag), &r),
                  SQLLOCK_OK, b);
        rc = sqllock_lease_renew(f[i]);
        if (rc == SQLLOCK_ECONNECT)
            rc = sqllock_lease_renew(f[i]);
        if (r.found) {
            assert_string_equal(r.owner, sqllock_lease_owner(f[i]));
            ASSERT_RC(rc, SQLLOCK_OK, a);
            renewed++;
            ASSERT_RC(sqllock_lease_release(f[i]), SQLLOCK_OK, a);
        } else {
            ASSERT_RC(rc, SQLLOCK_LOST, a);
            lost++;
        }
        sqllock_lease_free(f[i]);
    }
    assert_int_equal(renewed, (int)kept);
    /* L5 for durable leases. The durable grant survived the crash (the
     * handle reconnected for the fast leases above). */
    ASSERT_RC(sqllock_lease_renew(d), SQLLOCK_OK, a);
    ASSERT_RC(sqllock_lease_release(d), SQLLOCK_OK, a);
    ASSERT_RC(sqllock_lease_try_acquire(d), SQLLOCK_OK, a);
    if (sqllock_lease_token(d) <= g_max_token)
        fail_msg("L5: a durable token %lld after the crash is not above "
                 "%lld, the largest durable token before it",
                 (long long)sqllock_lease_token(d), (long long)g_max_token);
    printf("restart [postgres]: fast mode: the crash forgot %d of %d fast "
           "grants; the largest fast token before it was %lld, the first "
           "durable token after it %lld%s\n", lost, N, (long long)fast_max,
           (long long)sqllock_lease_token(d),
           sqllock_lease_token(d) <= fast_max
               ? " (the sequence went back: a fast token was drawn again)"
               : "");
    rs_saw_token(d);
    ASSERT_RC(sqllock_lease_release(d), SQLLOCK_OK, a);
    sqllock_lease_free(d);
    sqllock_close(a);
    sqllock_close(b);
}
