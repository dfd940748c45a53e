/*
 * test_restart.c -- database server crashes and restarts (DESIGN L10, L5,
 * and reconnecting after a lost connection, E1).
 *
 * L10: only a commit that grants or extends a lease must be durable. A
 * lease granted before a crash is still there after it; a release that
 * committed asynchronously may be forgotten, but a later grant's durable
 * commit flushes the log past it, so a crash can never admit two owners.
 * L5: tokens issued after a restart are greater than every token before.
 *
 * This test crashes servers, so it runs only on servers it may crash: the
 * ones scripts/servers.sh started in $SQLLOCK_TEST_SERVERS_DIR, restarted
 * with `$SQLLOCK_TEST_SERVERS_SCRIPT restart-pg DIR immediate` (PostgreSQL
 * stopped with `pg_ctl stop -m immediate`: no checkpoint, recovery from
 * the WAL) and `restart-my DIR` (mariadbd killed with SIGKILL). Their URLs
 * are $SQLLOCK_TEST_PG_URL and $SQLLOCK_TEST_MYSQL_URL. scripts/test.sh
 * exports all four when it starts its own servers; without them the test
 * skips, saying so (and fails when CI=true). The servers are left
 * running.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "test_util.h"

typedef struct server {
    const char *drv;           /* "postgres" or "mysql" */
    const char *url;
    const char *restart_cmd;   /* "restart-pg" or "restart-my" */
    const char *restart_arg;   /* "immediate" or "" */
} server;

static const server *g_srv;
static const char *g_dir, *g_script;
static int64_t g_max_token;    /* the largest token seen on g_srv */

#define ASSERT_RC(expr, want, db)                                              \
    do {                                                                       \
        int rc_ = (expr);                                                      \
        if (rc_ != (want))                                                     \
            fail_msg("%s = %s, want %s (%s)", #expr, sqllock_errname(rc_),     \
                     sqllock_errname(want), sqllock_errmsg(db));               \
    } while (0)

static sqllock_db *open_db(void)
{
    sqllock_db *db = NULL;
    int rc = sqllock_open(g_srv->url, NULL, &db), i;

    /* Right after a restart the server may still be finishing recovery. */
    for (i = 0; i < 100 && rc == SQLLOCK_ECONNECT; i++) {
        sqllock_close(db);
        tu_sleep_ms(100);
        rc = sqllock_open(g_srv->url, NULL, &db);
    }
    if (rc != SQLLOCK_OK)
        fail_msg("open(%s): %s: %s", g_srv->drv, sqllock_errname(rc),
                 sqllock_errmsg(db));
    return db;
}

static sqllock_lease *new_lease(sqllock_db *db, const char *name)
{
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_lease *l = NULL;

    o.ttl_ms = 60000;
    ASSERT_RC(sqllock_lease_new(db, name, &o, &l), SQLLOCK_OK, db);
    return l;
}

static const char *lock_name(char *buf, size_t size, const char *tag)
{
    snprintf(buf, size, "restart-%ld-%s", (long)getpid(), tag);
    return buf;
}

static void saw_token(const sqllock_lease *l)
{
    if (sqllock_lease_token(l) > g_max_token)
        g_max_token = sqllock_lease_token(l);
}

/* Crashes the server and starts it again. */
static void crash_and_restart(void)
{
    char cmd[9000];
    int rc;

    snprintf(cmd, sizeof cmd, "bash '%s' %s '%s' %s >&2", g_script,
             g_srv->restart_cmd, g_dir, g_srv->restart_arg);
    rc = system(cmd);
    if (rc != 0)
        fail_msg("%s failed (status %d)", cmd, rc);
}

/* The holder's row is there with its owner and token. */
static void expect_row(sqllock_db *db, const char *name,
                       const sqllock_lease *holder)
{
    tu_row r;

    ASSERT_RC(tu_find(db, name, &r), SQLLOCK_OK, db);
    if (r.found != 1)
        fail_msg("after the restart there are %d rows named %s, want 1",
                 r.found, name);
    assert_string_equal(r.owner, sqllock_lease_owner(holder));
    assert_int_equal(r.token, sqllock_lease_token(holder));
}

/* L10 (a): a granted lease survives a crash. The holder's first call
 * after it reports SQLLOCK_ECONNECT (its connection died with the server)
 * and the next one reconnects and renews. */
static void test_restart_L10_granted_lease_survives_crash(void **state)
{
    char name[200];
    sqllock_db *a, *b;
    sqllock_lease *la, *lb;

    (void)state;
    lock_name(name, sizeof name, "granted");
    a = open_db();
    la = new_lease(a, name);
    ASSERT_RC(sqllock_lease_try_acquire(la), SQLLOCK_OK, a);
    saw_token(la);

    crash_and_restart();

    b = open_db();
    lb = new_lease(b, name);
    ASSERT_RC(sqllock_lease_try_acquire(lb), SQLLOCK_BUSY, b);
    expect_row(b, name, la);
    ASSERT_RC(sqllock_lease_renew(la), SQLLOCK_ECONNECT, a);
    assert_int_equal(sqllock_lease_count(la), 1);
    ASSERT_RC(sqllock_lease_renew(la), SQLLOCK_OK, a);
    ASSERT_RC(sqllock_lease_try_acquire(lb), SQLLOCK_BUSY, b);
    ASSERT_RC(sqllock_lease_release(la), SQLLOCK_OK, a);
    ASSERT_RC(sqllock_lease_try_acquire(lb), SQLLOCK_OK, b);
    assert_true(sqllock_lease_token(lb) > sqllock_lease_token(la) ||
                sqllock_lease_token(la) == 0);
    saw_token(lb);
    ASSERT_RC(sqllock_lease_release(lb), SQLLOCK_OK, b);
    sqllock_lease_free(la);
    sqllock_lease_free(lb);
    sqllock_close(a);
    sqllock_close(b);
}

/* L10 (b): A acquires and releases (the release may commit
 * asynchronously), B acquires (a durable commit), the server crashes: B's
 * row is there with B's token and C is refused. Never two holders. */
static void test_restart_L10_async_release_never_two_holders(void **state)
{
    char name[200];
    sqllock_db *a, *b, *c;
    sqllock_lease *la, *lb, *lc;

    (void)state;
    lock_name(name, sizeof name, "async");
    a = open_db();
    b = open_db();
    la = new_lease(a, name);
    lb = new_lease(b, name);
    ASSERT_RC(sqllock_lease_try_acquire(la), SQLLOCK_OK, a);
    saw_token(la);
    ASSERT_RC(sqllock_lease_release(la), SQLLOCK_OK, a);
    ASSERT_RC(sqllock_lease_try_acquire(lb), SQLLOCK_OK, b);
    saw_token(lb);
    assert_true(sqllock_lease_token(lb) > 0);

    crash_and_restart();

    c = open_db();
    lc = new_lease(c, name);
    ASSERT_RC(sqllock_lease_try_acquire(lc), SQLLOCK_BUSY, c);
    expect_row(c, name, lb);
    /* A, which released, cannot get it back either. */
    ASSERT_RC(sqllock_lease_try_acquire(la), SQLLOCK_ECONNECT, a);
    ASSERT_RC(sqllock_lease_try_acquire(la), SQLLOCK_BUSY, a);
    /* B reconnects and still holds it. */
    ASSERT_RC(sqllock_lease_renew(lb), SQLLOCK_ECONNECT, b);
    ASSERT_RC(sqllock_lease_renew(lb), SQLLOCK_OK, b);
    ASSERT_RC(sqllock_lease_release(lb), SQLLOCK_OK, b);
    ASSERT_RC(sqllock_lease_try_acquire(lc), SQLLOCK_OK, c);
    saw_token(lc);
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
static void test_restart_L5_tokens_increase_across_restart(void **state)
{
    enum { N = 5 };
    char name[200], owner[N][SQLLOCK_OWNER_LEN + 1];
    int64_t token[N];
    sqllock_db *a;
    sqllock_lease *l, *n;
    int i, forgotten = 0;

    (void)state;
    a = open_db();
    for (i = 0; i < N; i++) {
        char tag[16];
        snprintf(tag, sizeof tag, "tok%d", i);
        l = new_lease(a, lock_name(name, sizeof name, tag));
        ASSERT_RC(sqllock_lease_try_acquire(l), SQLLOCK_OK, a);
        saw_token(l);
        snprintf(owner[i], sizeof owner[i], "%s", sqllock_lease_owner(l));
        token[i] = sqllock_lease_token(l);
        if (i % 2 == 0)
            ASSERT_RC(sqllock_lease_release(l), SQLLOCK_OK, a);
        sqllock_lease_free(l);
    }
    sqllock_close(a);

    crash_and_restart();

    a = open_db();
    for (i = 0; i < N; i++) {
        char tag[16];
        int rc;
        snprintf(tag, sizeof tag, "tok%d", i);
        l = new_lease(a, lock_name(name, sizeof name, tag));
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
    n = new_lease(a, lock_name(name, sizeof name, "fresh"));
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
        v = sqllock__text(lock_name(name, sizeof name, tag));
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
static void test_restart_L5_L10_fast_mode_beside_durable(void **state)
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
    a = open_db();
    d = new_lease(a, lock_name(name, sizeof name, "durable-beside-fast"));
    ASSERT_RC(sqllock_lease_try_acquire(d), SQLLOCK_OK, a);
    saw_token(d);
    o.ttl_ms = 60000;
    o.flags = SQLLOCK_LEASE_FAST;
    for (i = 0; i < N; i++) {
        char tag[32];
        snprintf(tag, sizeof tag, "fast%d", i);
        f[i] = NULL;
        ASSERT_RC(sqllock_lease_new(a, lock_name(name, sizeof name, tag), &o,
                                    &f[i]), SQLLOCK_OK, a);
        ASSERT_RC(sqllock_lease_try_acquire(f[i]), SQLLOCK_OK, a);
        assert_int_equal(sqllock_lease_token(f[i]), 0);
    }
    snprintf(prefix, sizeof prefix, "restart-%ld-fast%%", (long)getpid());
    v = sqllock__text(prefix);
    ASSERT_RC(sqllock__exec_sql(a, "SELECT max(token) FROM sqllock_lease "
                                "WHERE name LIKE $1", &v, 1, &has, &fast_max,
                                NULL), SQLLOCK_OK, a);

    crash_and_restart();

    b = open_db();
    ASSERT_RC(sqllock__exec_sql(b, "SELECT count(*) FROM sqllock_lease "
                                "WHERE name LIKE $1", &v, 1, &has, &kept,
                                NULL), SQLLOCK_OK, b);
    /* Each fast holder: the first call reports the dead connection; the
     * next renews a lease the server kept, or says LOST for one it
     * forgot. */
    for (i = 0; i < N; i++) {
        char tag[32];
        snprintf(tag, sizeof tag, "fast%d", i);
        ASSERT_RC(tu_find(b, lock_name(name, sizeof name, tag), &r),
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
    saw_token(d);
    ASSERT_RC(sqllock_lease_release(d), SQLLOCK_OK, a);
    sqllock_lease_free(d);
    sqllock_close(a);
    sqllock_close(b);
}

static int group_setup(void **state)
{
    sqllock_db *db = NULL;
    int rc;

    (void)state;
    g_max_token = 0;
    rc = sqllock_open(g_srv->url, NULL, &db);
    if (rc == SQLLOCK_OK)
        rc = sqllock_init(db);
    if (rc != SQLLOCK_OK)
        fprintf(stderr, "restart: %s: %s: %s\n", g_srv->drv,
                sqllock_errname(rc), sqllock_errmsg(db));
    sqllock_close(db);
    return rc == SQLLOCK_OK ? 0 : -1;
}

int main(void)
{
    const struct CMUnitTest pg_tests[] = {
        cmocka_unit_test(test_restart_L10_granted_lease_survives_crash),
        cmocka_unit_test(test_restart_L10_async_release_never_two_holders),
        cmocka_unit_test(test_restart_L5_tokens_increase_across_restart),
        cmocka_unit_test(test_restart_L5_L10_fast_mode_beside_durable),
    };
    const struct CMUnitTest my_tests[] = {
        cmocka_unit_test(test_restart_L10_granted_lease_survives_crash),
        cmocka_unit_test(test_restart_L5_tokens_increase_across_restart),
    };
    server pg = { "postgres", NULL, "restart-pg", "immediate" };
    server my = { "mysql", NULL, "restart-my", "" };
    const char *ci = getenv("CI");
    int failed = 0, ran = 0;

    g_dir = getenv("SQLLOCK_TEST_SERVERS_DIR");
    g_script = getenv("SQLLOCK_TEST_SERVERS_SCRIPT");
    pg.url = getenv("SQLLOCK_TEST_PG_URL");
    my.url = getenv("SQLLOCK_TEST_MYSQL_URL");
    if (g_dir == NULL || *g_dir == '\0' || g_script == NULL ||
        *g_script == '\0' || strchr(g_dir, '\'') || strchr(g_script, '\'')) {
        printf("restart: SKIPPED: SQLLOCK_TEST_SERVERS_DIR and "
               "SQLLOCK_TEST_SERVERS_SCRIPT name no servers this test may "
               "crash (scripts/test.sh sets them when it starts its own)\n");
        if (ci != NULL && strcmp(ci, "true") == 0) {
            printf("restart: CI=true, so a skipped restart test fails\n");
            return 1;
        }
        return 0;
    }
    if (pg.url != NULL && *pg.url != '\0' &&
        sqllock_driver_find("postgres") != NULL) {
        g_srv = &pg;
        failed += cmocka_run_group_tests_name("restart [postgres]", pg_tests,
                                              group_setup, NULL);
        if (failed == 0)
            tu_report_driver("restart", "postgres");
        ran++;
    }
    if (my.url != NULL && *my.url != '\0' &&
        sqllock_driver_find("mysql") != NULL) {
        int n;
        g_srv = &my;
        n = cmocka_run_group_tests_name("restart [mysql]", my_tests,
                                        group_setup, NULL);
        if (n == 0)
            tu_report_driver("restart", "mysql");
        failed += n;
        ran++;
    }
    if (ran == 0)
        printf("restart: no postgres or mysql server to restart\n");
    return failed == 0 ? 0 : 1;
}
