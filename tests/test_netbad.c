/*
 * test_netbad.c -- the network drivers (PostgreSQL, MySQL/MariaDB) given
 * bad input or a bad network: a wrong password, a port nobody listens on,
 * a database that does not exist, missing tables, and a connection killed
 * by the server in the middle of a hold (DESIGN E1, E2, S1, L3, L7).
 *
 * Runs once per postgres/mysql URL in SQLLOCK_TEST_URLS; SQLite has no
 * network, so its URLs are passed over (test_badinput covers its files).
 * Each case asserts the specific status and that the message carries the
 * server's own words, never the password.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "test_util.h"
#include "test_run.h"
#include "tu_proxy.h"

static const char *g_url;

typedef struct fixture {
    sqllock_db *db;            /* a handle on the test database, initialised */
    const char *drv;
    char name[300];
} fixture;


/* Splits a URL "scheme://user:pass@host:port/db?query" at its parts
 * (tu_url_split), failing the test when it has no password. */
static void split_url(const char *url, tu_url_parts *p)
{
    if (tu_url_split(url, p) != 0)
        fail_msg("the test URL %s has no user:password@ part", url);
    if (p->pass_at == p->pass_end)
        fail_msg("the test URL has no password to make wrong");
}
/* url with [from, to) replaced by `with`. */
static void replace_part(char *out, size_t size, const char *url, size_t from,
                         size_t to, const char *with)
{
    snprintf(out, size, "%.*s%s%s", (int)from, url, with, url + to);
}

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    int rc;

    if (f == NULL)
        return -1;
    rc = sqllock_open(g_url, NULL, &f->db);
    if (rc == SQLLOCK_OK)
        rc = sqllock_init(f->db);
    if (rc != SQLLOCK_OK) {
        fprintf(stderr, "netbad: %s: %s\n", sqllock_errname(rc),
                sqllock_errmsg(f->db));
        sqllock_close(f->db);
        free(f);
        return -1;
    }
    f->drv = sqllock_db_driver(f->db);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;

    if (f != NULL) {
        sqllock_close(f->db);
        free(f);
    }
    return 0;
}

static const char *lock_name(fixture *f, const char *tag)
{
    snprintf(f->name, sizeof f->name, "netbad-%ld-%s", (long)getpid(), tag);
    return f->name;
}

static sqllock_lease *new_lease(sqllock_db *db, const char *name,
                                int64_t ttl)
{
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_lease *l = NULL;

    o.ttl_ms = ttl;
    TU_ASSERT_RC(sqllock_lease_new(db, name, &o, &l), SQLLOCK_OK, db);
    return l;
}

/* E1/E2: a wrong password is SQLLOCK_EPERM with the server's reason, and
 * the message never shows the password given (nor the right one). */
static void test_netbad_E1_wrong_password_is_eperm(void **state)
{
    fixture *f = *state;
    static const char wrong[] = "Wr0ng-Pa55word-xyzzy";
    char url[4200], right[256];
    tu_url_parts p;
    sqllock_db *db = NULL;
    int rc;

    split_url(g_url, &p);
    snprintf(right, sizeof right, "%.*s", (int)(p.pass_end - p.pass_at),
             g_url + p.pass_at);
    replace_part(url, sizeof url, g_url, p.pass_at, p.pass_end, wrong);
    rc = sqllock_open(url, NULL, &db);
    if (rc != SQLLOCK_EPERM)
        fail_msg("open with a wrong password = %s, want SQLLOCK_EPERM (%s)",
                 sqllock_errname(rc), sqllock_errmsg(db));
    assert_int_equal(sqllock_errcode(db), SQLLOCK_EPERM);
    expect_msg_any(db, "wrong password",
               strcmp(f->drv, "postgres") == 0
                   ? "password authentication failed"
                   : "Access denied");
    if (tu_contains_ci(sqllock_errmsg(db), wrong))
        fail_msg("the message shows the password: %s", sqllock_errmsg(db));
    if (right[0] != '\0' && tu_contains_ci(sqllock_errmsg(db), right))
        fail_msg("the message shows the real password: %s",
                 sqllock_errmsg(db));
    /* The handle refuses lock work without harm, with the same reason. */
    {
        sqllock_lease *l = new_lease(db, lock_name(f, "pw"), 1000);
        rc = sqllock_lease_try_acquire(l);
        assert_int_not_equal(rc, SQLLOCK_OK);
        assert_int_not_equal(rc, SQLLOCK_BUSY);
        assert_false(tu_contains_ci(sqllock_errmsg(db), wrong));
        sqllock_lease_free(l);
    }
    sqllock_close(db);
}

/* E1: a port nobody listens on is SQLLOCK_ECONNECT within seconds. */
static void test_netbad_E1_unreachable_port_is_econnect(void **state)
{
    fixture *f = *state;
    char url[4200];
    tu_url_parts p;
    sqllock_db *db = NULL;
    sqllock_options so = SQLLOCK_OPTIONS_INIT;
    int64_t t0, took;
    int rc;

    (void)f;
    split_url(g_url, &p);
    replace_part(url, sizeof url, g_url, p.host_at, p.path_at, "127.0.0.1:1");
    so.connect_timeout_ms = 3000;
    t0 = tu_now_ms();
    rc = sqllock_open(url, &so, &db);
    took = tu_now_ms() - t0;
    if (rc != SQLLOCK_ECONNECT)
        fail_msg("open(127.0.0.1:1) = %s, want SQLLOCK_ECONNECT (%s)",
                 sqllock_errname(rc), sqllock_errmsg(db));
    if (took > 5000)
        fail_msg("open(127.0.0.1:1) took %lld ms", (long long)took);
    expect_msg_any(db, "unreachable port", "refused|connect");
    assert_false(tu_contains_ci(sqllock_errmsg(db), "sqllock-test"));
    sqllock_close(db);
}

/* E1: a database that does not exist. PostgreSQL refuses the connection:
 * SQLLOCK_ECONNECT, "database ... does not exist". MySQL/MariaDB answers
 * "Unknown database" (1049, SQLLOCK_ECONNECT) only to a user with rights
 * on that name; to anyone else it says "Access denied ... to database"
 * (1044, SQLLOCK_EPERM) so as not to reveal which databases exist. Each
 * status must come with its own server message naming the database. */
static void test_netbad_E1_missing_database(void **state)
{
    fixture *f = *state;
    char url[4200];
    tu_url_parts p;
    sqllock_db *db = NULL;
    int rc;

    split_url(g_url, &p);
    replace_part(url, sizeof url, g_url, p.path_at + 1, p.db_end,
                 "sqllock_no_such_db");
    rc = sqllock_open(url, NULL, &db);
    if (strcmp(f->drv, "postgres") == 0 && rc == SQLLOCK_ECONNECT)
        expect_msg_any(db, "missing database", "does not exist");
    else if (strcmp(f->drv, "mysql") == 0 && rc == SQLLOCK_ECONNECT)
        expect_msg_any(db, "missing database", "Unknown database");
    else if (strcmp(f->drv, "mysql") == 0 && rc == SQLLOCK_EPERM)
        expect_msg_any(db, "missing database", "Access denied");
    else
        fail_msg("open(sqllock_no_such_db) = %s, want SQLLOCK_ECONNECT%s "
                 "(%s)", sqllock_errname(rc),
                 strcmp(f->drv, "mysql") == 0 ? " or SQLLOCK_EPERM" : "",
                 sqllock_errmsg(db));
    expect_msg_any(db, "missing database", "sqllock_no_such_db");
    sqllock_close(db);
}

/* S1: missing tables are SQLLOCK_ENOSCHEMA with the server's message. */
static void test_netbad_S1_missing_table_is_enoschema(void **state)
{
    fixture *f = *state;
    char url[4400], why[1000];
    sqllock_db *db = NULL;
    sqllock_lease *l;

    if (!tu_empty_target(f->db, g_url, "/nonexistent", url, sizeof url, why,
                         sizeof why)) {
        tu_cannot_run("netbad S1_missing_table on %s: %s", f->drv, why);
    }
    TU_ASSERT_RC(sqllock_open(url, NULL, &db), SQLLOCK_OK, db);
    l = new_lease(db, lock_name(f, "noschema"), 1000);
    TU_ASSERT_RC(sqllock_lease_try_acquire(l), SQLLOCK_ENOSCHEMA, db);
    expect_msg_any(db, "missing table", "sqllock_lease");
    expect_msg_any(db, "missing table",
               strcmp(f->drv, "postgres") == 0 ? "does not exist"
                                               : "doesn't exist");
    expect_msg_any(db, "missing table", "init");
    sqllock_lease_free(l);
    sqllock_close(db);
}


/* Kills connection `id` from the handle `killer` (the same user may end
 * its own connections on both servers) and waits until it is gone. */
static void kill_backend(fixture *f, sqllock_db *killer, int64_t id)
{
    sqllock_value v = sqllock__int(id);
    int i;

    if (strcmp(f->drv, "postgres") == 0) {
        TU_ASSERT_RC(sqllock__exec_sql(killer,
                                    "SELECT pg_catalog.pg_terminate_backend($1::int)",
                                    &v, 1, NULL, NULL, NULL),
                  SQLLOCK_OK, killer);
    } else {
        char sql[64];
        /* KILL takes no placeholder; the id is the server's own number. */
        snprintf(sql, sizeof sql, "KILL %lld", (long long)id);
        TU_ASSERT_RC(sqllock__exec_sql(killer, sql, NULL, 0, NULL, NULL, NULL),
                  SQLLOCK_OK, killer);
    }
    for (i = 0; i < 200; i++) {
        int64_t n = -1;
        TU_ASSERT_RC(sqllock__exec_sql(killer, strcmp(f->drv, "postgres") == 0
                  ? "SELECT count(*) FROM pg_stat_activity WHERE pid = $1::int"
                  : "SELECT COUNT(*) FROM information_schema.processlist "
                    "WHERE id = ?", &v, 1, NULL, &n, NULL),
                  SQLLOCK_OK, killer);
        if (n == 0)
            return;
        tu_sleep_ms(25);
    }
    fail_msg("connection %lld is still there 5 s after it was killed",
             (long long)id);
}

/* The words each server uses when it ends a connection. */
static const char *killed_words(fixture *f)
{
    return strcmp(f->drv, "postgres") == 0
               ? "terminating connection|server closed the connection"
               : "gone away|Lost connection|killed|interrupted";
}

/* E1/L3/C3: a connection killed while a lease is held. A renewal and a
 * release name owner and token, so the call that finds the connection
 * gone runs them once more on a fresh connection (DESIGN C3): the renew
 * succeeds on a new backend and the lease is still held in the database
 * (another handle gets BUSY); the release frees the lock at once. An
 * acquire is never run again (its effect is unknown): ECONNECT, nothing
 * held, and the next call reconnects. */
static void test_netbad_E1_C3_killed_connection_then_reconnect(void **state)
{
    fixture *f = *state;
    sqllock_db *a = NULL, *b = NULL;
    sqllock_lease *la, *lb;
    const char *name = lock_name(f, "killed");
    int64_t token, id1, id2;
    tu_row r;

    TU_ASSERT_RC(sqllock_open(g_url, NULL, &a), SQLLOCK_OK, a);
    TU_ASSERT_RC(sqllock_open(g_url, NULL, &b), SQLLOCK_OK, b);
    la = new_lease(a, name, 60000);
    lb = new_lease(b, name, 60000);
    TU_ASSERT_RC(sqllock_lease_try_acquire(la), SQLLOCK_OK, a);
    token = sqllock_lease_token(la);
    id1 = tu_backend_id(a);

    kill_backend(f, b, id1);
    TU_ASSERT_RC(sqllock_lease_renew(la), SQLLOCK_OK, a);
    assert_int_equal(sqllock_lease_count(la), 1);
    assert_int_equal(sqllock_lease_token(la), token);
    assert_true(sqllock_lease_held(la));
    id2 = tu_backend_id(a);
    assert_true(id2 != id1);
    /* The lease is still held in the database, by the same owner. */
    TU_ASSERT_RC(sqllock_lease_try_acquire(lb), SQLLOCK_BUSY, b);
    TU_ASSERT_RC(tu_find(b, name, &r), SQLLOCK_OK, b);
    assert_int_equal(r.found, 1);
    assert_string_equal(r.owner, sqllock_lease_owner(la));
    assert_int_equal(r.token, token);

    /* Killed again: the release runs again on a fresh connection and
     * frees the lock at once. */
    kill_backend(f, b, id2);
    TU_ASSERT_RC(sqllock_lease_release(la), SQLLOCK_OK, a);
    assert_int_equal(sqllock_lease_count(la), 0);
    assert_true(tu_backend_id(a) != id2);
    TU_ASSERT_RC(sqllock_lease_try_acquire(lb), SQLLOCK_OK, b);
    assert_true(sqllock_lease_token(lb) > token);

    /* And an acquire on a killed connection: ECONNECT, nothing held by
     * the handle, then it works once the holder lets go. */
    kill_backend(f, b, tu_backend_id(a));
    TU_ASSERT_RC(sqllock_lease_try_acquire(la), SQLLOCK_ECONNECT, a);
    expect_msg_any(a, "acquire on a killed connection", killed_words(f));
    assert_int_equal(sqllock_lease_count(la), 0);
    TU_ASSERT_RC(sqllock_lease_try_acquire(la), SQLLOCK_BUSY, a);
    TU_ASSERT_RC(sqllock_lease_release(lb), SQLLOCK_OK, b);
    TU_ASSERT_RC(sqllock_lease_try_acquire(la), SQLLOCK_OK, a);
    TU_ASSERT_RC(sqllock_lease_release(la), SQLLOCK_OK, a);

    sqllock_lease_free(la);
    sqllock_lease_free(lb);
    sqllock_close(a);
    sqllock_close(b);
}

/* Opens `url` through a new proxy `p` with short bounds: round trips of
 * 1 s, connects of 1 s scaled as a connect is (a SCRAM connect under
 * valgrind on a loaded machine took more than 1 s: CI once failed the
 * first open here, nothing of the case having run). */
static sqllock_db *open_via_proxy(tu_proxy *p, char *purl, size_t size)
{
    sqllock_options o = SQLLOCK_OPTIONS_INIT;
    sqllock_db *db = NULL;

    assert_int_equal(tu_proxy_for_url(p, g_url, purl, size), 0);
    o.connect_timeout_ms = tu_scaled_connect_ms(1000);
    o.statement_timeout_ms = 1000;
    TU_ASSERT_RC(sqllock_open(purl, &o, &db), SQLLOCK_OK, db);
    return db;
}

/* C3: a release whose answer is lost (the proxy drops what the server
 * sends: the DELETE ran and committed) ends in SQLLOCK_ECONNECT after the
 * statement timeout; it is sent again on a fresh connection, finds the
 * row gone, and since the first one was sent before the lease's local
 * deadline nobody else could have taken the lease before it ran: the
 * release succeeded (not LOST), and the lock is free at once. */
static void test_netbad_C3_release_answer_lost_is_released(void **state)
{
    fixture *f = *state;
    const char *name = lock_name(f, "answer-lost");
    char purl[2048];
    tu_proxy p;
    sqllock_db *a, *b = NULL;
    sqllock_lease *la, *lb;
    int64_t t0;

    a = open_via_proxy(&p, purl, sizeof purl);
    TU_ASSERT_RC(sqllock_open(g_url, NULL, &b), SQLLOCK_OK, b);
    la = new_lease(a, name, 60000);
    lb = new_lease(b, name, 60000);
    TU_ASSERT_RC(sqllock_lease_try_acquire(la), SQLLOCK_OK, a);
    assert_int_equal(tu_proxy_deafen(&p), 0);
    t0 = tu_now_ms();
    TU_ASSERT_RC(sqllock_lease_release(la), SQLLOCK_OK, a);
    printf("    C3 [%s] release whose answer was lost: OK after %lld ms "
           "(statement timeout 1000 ms, then the retry)\n", f->drv,
           (long long)(tu_now_ms() - t0));
    assert_int_equal(sqllock_lease_count(la), 0);
    TU_ASSERT_RC(sqllock_lease_try_acquire(lb), SQLLOCK_OK, b);
    TU_ASSERT_RC(sqllock_lease_release(lb), SQLLOCK_OK, b);
    sqllock_lease_free(la);
    sqllock_lease_free(lb);
    sqllock_close(a);
    sqllock_close(b);
    tu_proxy_stop(&p);
}

/* C3: when the retries cannot connect either (the connection is cut and
 * no new one gets through) for the release timeout (here 1 s), the
 * release reports SQLLOCK_ECONNECT, after that time and not much more,
 * saying how often it tried, and the handle keeps its hold, so that it
 * can release again; the lease is still there (BUSY for another handle).
 * Once the network is back, the release works. */
static void test_netbad_C3_release_retry_fails_keeps_hold(void **state)
{
    fixture *f = *state;
    const char *name = lock_name(f, "retry-fails");
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    char purl[2048];
    tu_proxy p;
    sqllock_db *a, *b = NULL;
    sqllock_lease *la = NULL, *lb;
    int64_t t0, took;

    a = open_via_proxy(&p, purl, sizeof purl);
    TU_ASSERT_RC(sqllock_open(g_url, NULL, &b), SQLLOCK_OK, b);
    o.ttl_ms = 60000;
    o.release_timeout_ms = 1000;
    TU_ASSERT_RC(sqllock_lease_new(a, name, &o, &la), SQLLOCK_OK, a);
    lb = new_lease(b, name, 60000);
    TU_ASSERT_RC(sqllock_lease_try_acquire(la), SQLLOCK_OK, a);
    assert_int_equal(tu_proxy_freeze(&p), 0);
    assert_int_equal(tu_proxy_cut(&p), 0);
    t0 = tu_now_ms();
    TU_ASSERT_RC(sqllock_lease_release(la), SQLLOCK_ECONNECT, a);
    took = tu_now_ms() - t0;
    printf("    release gave up after %lld ms: %s\n", (long long)took,
           sqllock_errmsg(a));
    /* The timeout, plus at most one connect that was under way then
     * (the handle's connect timeout). */
    assert_true(took >= 900);
    assert_true(took < tu_scaled_ms(1000) + tu_scaled_connect_ms(1000)
                           + 10000);
    if (!tu_contains_ci(sqllock_errmsg(a), "sent again"))
        fail_msg("the message does not say it was tried again: %s",
                 sqllock_errmsg(a));
    assert_int_equal(sqllock_lease_count(la), 1);
    TU_ASSERT_RC(sqllock_lease_try_acquire(lb), SQLLOCK_BUSY, b);
    assert_int_equal(tu_proxy_thaw(&p), 0);
    TU_ASSERT_RC(sqllock_lease_release(la), SQLLOCK_OK, a);
    assert_int_equal(sqllock_lease_count(la), 0);
    TU_ASSERT_RC(sqllock_lease_try_acquire(lb), SQLLOCK_OK, b);
    TU_ASSERT_RC(sqllock_lease_release(lb), SQLLOCK_OK, b);
    sqllock_lease_free(la);
    sqllock_lease_free(lb);
    sqllock_close(a);
    sqllock_close(b);
    tu_proxy_stop(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_netbad_E1_wrong_password_is_eperm),
        cmocka_unit_test(test_netbad_E1_unreachable_port_is_econnect),
        cmocka_unit_test(test_netbad_E1_missing_database),
        cmocka_unit_test(test_netbad_S1_missing_table_is_enoschema),
        cmocka_unit_test(test_netbad_E1_C3_killed_connection_then_reconnect),
        cmocka_unit_test(test_netbad_C3_release_answer_lost_is_released),
        cmocka_unit_test(test_netbad_C3_release_retry_fails_keeps_hold),
    };
    return TU_RUN_PER_URL_NO_SQLITE("netbad", &g_url, tests, setup, teardown,
                                    "SQLite has no network: nothing to test");
}
