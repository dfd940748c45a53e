/*
 * test_autocommit.c -- DESIGN C2 on MySQL/MariaDB: a call reports success
 * only if what it had to commit was committed (issue 14).
 *
 * The driver's connect sets autocommit = 1, which undoes a server's
 * autocommit=0 and an init_connect='SET autocommit=0' (both run before
 * it). What turns autocommit off later, or opens a transaction behind the
 * driver's back, stands for a proxy here: a statement through the native
 * handle (sqllock_db_native()), which is what a proxy's injected
 * statement looks like to the server. (A transaction the application
 * opens on the native handle is another case: every call is refused
 * before it is sent, SQLLOCK_EMISUSE, leaving the application's work as
 * it was.) Then every statement the core runs
 * outside its own transaction -- a lease's renewal and release, a
 * record's create, compare-and-set and delete, the reaper's DELETE, a row
 * lock's row creation -- must fail with SQLLOCK_EPROXY and leave nothing
 * behind (a second handle, with autocommit on, looks), and an acquire is
 * refused before it begins while autocommit is off. With autocommit back
 * on, everything works again.
 *
 * The tests run on every MySQL URL of SQLLOCK_TEST_URLS, and on the
 * MariaDB of scripts/tls.sh ($SQLLOCK_TEST_TLS_DIR), which runs with
 * autocommit=0 and init_connect='SET autocommit=0': there a client of
 * its own (not sqllock) sees autocommit 0, sqllock's connection sees 1,
 * and the writes are seen committed by another connection. Without any
 * MySQL server the test is SKIPPED, and fails under CI (or when
 * SQLLOCK_TEST_REQUIRE names mysql); without the scripts/tls.sh server
 * under CI it fails too.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <unistd.h>
#include <cmocka.h>

#include <mysql.h>

#include "test_util.h"
#include "test_run.h"
#include "test_spawn.h"

static const char *g_url;
/* The server runs with autocommit off for its clients (scripts/tls.sh). */
static int g_server_off;
static char g_fixture_url[512];

static sqllock_db *open_ok(const char *url)
{
    sqllock_db *db = NULL;
    int rc = sqllock_open(url, NULL, &db);

    if (rc != SQLLOCK_OK) {
        char msg[600];
        snprintf(msg, sizeof msg, "%s", sqllock_errmsg(db));
        sqllock_close(db);
        fail_msg("open: %s: %s", sqllock_errname(rc), msg);
    }
    return db;
}

/* Runs `sql` on the handle's own connection, behind the library's back. */
static void native_query(sqllock_db *db, const char *sql)
{
    MYSQL *my = sqllock_db_native(db);
    MYSQL_RES *res;

    assert_non_null(my);
    if (mysql_query(my, sql) != 0)
        fail_msg("%s: %s", sql, mysql_error(my));
    res = mysql_store_result(my);
    if (res != NULL)
        mysql_free_result(res);
}

static int64_t q1(sqllock_db *db, const char *sql)
{
    int64_t v = 0;
    int has_row = 0;
    int rc = sqllock__exec_sql(db, sql, NULL, 0, &has_row, &v, NULL);

    if (rc != SQLLOCK_OK || !has_row)
        fail_msg("%s: %s (%s)", sql, sqllock_errname(rc), sqllock_errmsg(db));
    return v;
}

/* Fails unless `rc` is SQLLOCK_EPROXY with a message that says the call
 * committed nothing. */
static void expect_eproxy(sqllock_db *db, int rc, const char *what,
                          const char *why)
{
    printf("    %s: %s: %s\n", what, sqllock_errname(rc), sqllock_errmsg(db));
    if (rc != SQLLOCK_EPROXY)
        fail_msg("%s: got %s, want SQLLOCK_EPROXY (%s)", what,
                 sqllock_errname(rc), sqllock_errmsg(db));
    if (!tu_contains_ci(sqllock_errmsg(db), "nothing was committed") ||
        !tu_contains_ci(sqllock_errmsg(db), why))
        fail_msg("%s: the message does not say why (\"%s\") and that "
                 "nothing was committed: %s", what, why, sqllock_errmsg(db));
}

static void expect_ok(sqllock_db *db, int rc, const char *what)
{
    if (rc != SQLLOCK_OK)
        fail_msg("%s: %s (%s)", what, sqllock_errname(rc), sqllock_errmsg(db));
}

static sqllock_lease *new_lease(sqllock_db *db, const char *name,
                                int64_t ttl_ms)
{
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_lease *l = NULL;

    o.ttl_ms = ttl_ms;
    assert_int_equal(sqllock_lease_new(db, name, &o, &l), SQLLOCK_OK);
    return l;
}

/* The record's version as another connection sees it; 0: no record. */
static int64_t record_version(sqllock_db *obs, const char *key, char *value,
                              size_t size)
{
    void *v = NULL;
    size_t len = 0;
    int64_t version = 0;
    int rc = sqllock_record_get(obs, key, &v, &len, &version);

    if (rc == SQLLOCK_NOTFOUND)
        return 0;
    expect_ok(obs, rc, "reading the record");
    if (value != NULL)
        snprintf(value, size, "%.*s", (int)len, (const char *)v);
    sqllock_free(v);
    return version;
}

static void unique(char *out, size_t size, const char *what)
{
    snprintf(out, size, "c2-%ld-%lld-%s", (long)getpid(),
             (long long)tu_now_ms(), what);
}

/* The connect turns autocommit on whatever the server's default, and the
 * writes are committed: another connection sees them. */
static void test_autocommit_connect_forces_autocommit_on(void **state)
{
    char name[128], key[128];
    sqllock_db *db, *obs;
    sqllock_lease *l;
    tu_row row;
    (void)state;

    if (g_server_off) {
        /* A client of its own, not sqllock, sees the server's setting. */
        sqllock_url *u = NULL;
        char why[256];
        MYSQL *my = mysql_init(NULL);
        MYSQL_RES *res;
        MYSQL_ROW r;

        assert_int_equal(sqllock__url_parse(g_url, &u, why, sizeof why),
                         SQLLOCK_OK);
        assert_non_null(my);
        if (mysql_real_connect(my, u->host, u->user, u->password,
                               u->path + 1, (unsigned)u->port, NULL, 0) ==
            NULL)
            fail_msg("a plain client's connect: %s", mysql_error(my));
        assert_int_equal(mysql_query(my, "SELECT @@autocommit"), 0);
        res = mysql_store_result(my);
        assert_non_null(res);
        r = mysql_fetch_row(res);
        assert_non_null(r);
        printf("    a plain client's @@autocommit: %s\n", r[0]);
        assert_string_equal(r[0], "0");
        mysql_free_result(res);
        mysql_close(my);
        sqllock__url_free(u);
    }
    db = open_ok(g_url);
    obs = open_ok(g_url);
    assert_int_equal(q1(db, "SELECT @@autocommit"), 1);
    unique(name, sizeof name, "forced");
    unique(key, sizeof key, "forced-rec");
    l = new_lease(db, name, 30000);
    expect_ok(db, sqllock_lease_try_acquire(l), "acquire");
    expect_ok(db, sqllock_lease_renew(l), "renew");
    assert_int_equal(tu_find(obs, name, &row), SQLLOCK_OK);
    assert_int_equal(row.found, 1);
    expect_ok(db, sqllock_lease_release(l), "release");
    assert_int_equal(tu_find(obs, name, &row), SQLLOCK_OK);
    assert_int_equal(row.found, 0);
    expect_ok(db, sqllock_record_create(db, key, "a", 1), "record create");
    expect_ok(db, sqllock_record_cas(db, key, 1, "b", 1, NULL), "record cas");
    assert_int_equal(record_version(obs, key, NULL, 0), 2);
    expect_ok(db, sqllock_record_delete(db, key, 2), "record delete");
    assert_int_equal(record_version(obs, key, NULL, 0), 0);
    expect_ok(db, sqllock_reap(db, 0, 100, NULL), "reap");
    sqllock_lease_free(l);
    sqllock_close(obs);
    sqllock_close(db);
}

/*
 * Autocommit turned off on the session after the connect: every write
 * fails with SQLLOCK_EPROXY and leaves no trace; with it on again, each
 * works.
 */
static void test_autocommit_off_every_write_fails_eproxy(void **state)
{
    char held[128], fresh[128], expired[128], rec[128], rec2[128], val[16];
    const char *const rows[] = { held };
    sqllock_db *db, *obs;
    sqllock_lease *h, *n, *e;
    sqllock_txn *txn = NULL;
    tu_row before, after;
    int64_t reaped = -1;
    (void)state;

    db = open_ok(g_url);
    obs = open_ok(g_url);
    unique(held, sizeof held, "held");
    unique(fresh, sizeof fresh, "fresh");
    unique(expired, sizeof expired, "expired");
    unique(rec, sizeof rec, "rec");
    unique(rec2, sizeof rec2, "rec2");
    h = new_lease(db, held, 60000);
    n = new_lease(db, fresh, 60000);
    e = new_lease(db, expired, 50);
    expect_ok(db, sqllock_lease_try_acquire(h), "acquire (autocommit on)");
    expect_ok(db, sqllock_lease_try_acquire(e), "acquire a short lease");
    expect_ok(db, sqllock_record_create(db, rec, "v1", 2), "record create");
    tu_sleep_ms(300);           /* e expires by the server's clock */
    assert_int_equal(tu_find(obs, held, &before), SQLLOCK_OK);
    assert_int_equal(before.found, 1);

    native_query(db, "SET autocommit = 0");
    expect_eproxy(db, sqllock_lease_try_acquire(n), "acquire", "autocommit "
                  "is off");
    assert_int_equal(tu_find(obs, fresh, &after), SQLLOCK_OK);
    assert_int_equal(after.found, 0);
    assert_int_equal(sqllock_lease_held(n), 0);

    expect_eproxy(db, sqllock_lease_renew(h), "renew", "autocommit is off");
    assert_int_equal(tu_find(obs, held, &after), SQLLOCK_OK);
    assert_int_equal(after.found, 1);
    assert_int_equal(after.expires_at_ms, before.expires_at_ms);

    expect_eproxy(db, sqllock_lease_release(h), "release", "autocommit is "
                  "off");
    assert_int_equal(tu_find(obs, held, &after), SQLLOCK_OK);
    assert_int_equal(after.found, 1);
    assert_string_equal(after.owner, before.owner);
    assert_int_equal(sqllock_lease_held(h), 1);

    expect_eproxy(db, sqllock_record_create(db, rec2, "x", 1),
                  "record create", "autocommit is off");
    assert_int_equal(record_version(obs, rec2, NULL, 0), 0);
    expect_eproxy(db, sqllock_record_cas(db, rec, 1, "v2", 2, NULL),
                  "record cas", "autocommit is off");
    assert_int_equal(record_version(obs, rec, val, sizeof val), 1);
    assert_string_equal(val, "v1");
    expect_eproxy(db, sqllock_record_delete(db, rec, 1), "record delete",
                  "autocommit is off");
    assert_int_equal(record_version(obs, rec, NULL, 0), 1);

    expect_eproxy(db, sqllock_reap(db, 0, 1000, &reaped), "reap",
                  "autocommit is off");
    assert_int_equal(tu_find(obs, expired, &after), SQLLOCK_OK);
    assert_int_equal(after.found, 1);

    /* A row lock: its row is created before the transaction, in a
     * statement of its own. */
    assert_int_equal(sqllock_txn_begin(db, NULL, &txn), SQLLOCK_OK);
    expect_eproxy(db, sqllock_txn_lock(txn, rows, 1, SQLLOCK_LOCK_NOWAIT,
                                       NULL), "row lock", "autocommit is off");
    sqllock_txn_free(txn);

    /* Autocommit on again: everything works, and commits. */
    native_query(db, "SET autocommit = 1");
    expect_ok(db, sqllock_lease_renew(h), "renew");
    assert_int_equal(tu_find(obs, held, &after), SQLLOCK_OK);
    assert_true(after.expires_at_ms > before.expires_at_ms);
    expect_ok(db, sqllock_lease_release(h), "release");
    assert_int_equal(tu_find(obs, held, &after), SQLLOCK_OK);
    assert_int_equal(after.found, 0);
    expect_ok(db, sqllock_lease_try_acquire(n), "acquire");
    assert_int_equal(tu_find(obs, fresh, &after), SQLLOCK_OK);
    assert_int_equal(after.found, 1);
    expect_ok(db, sqllock_lease_release(n), "release");
    expect_ok(db, sqllock_record_cas(db, rec, 1, "v2", 2, NULL),
              "record cas");
    assert_int_equal(record_version(obs, rec, NULL, 0), 2);
    expect_ok(db, sqllock_record_delete(db, rec, 2), "record delete");
    expect_ok(db, sqllock_reap(db, 0, 1000, &reaped), "reap");
    assert_true(reaped >= 1);
    assert_int_equal(tu_find(obs, expired, &after), SQLLOCK_OK);
    assert_int_equal(after.found, 0);
    txn = NULL;
    assert_int_equal(sqllock_txn_begin(db, NULL, &txn), SQLLOCK_OK);
    expect_ok(db, sqllock_txn_lock(txn, rows, 1, SQLLOCK_LOCK_NOWAIT, NULL),
              "row lock");
    expect_ok(db, sqllock_txn_commit(txn), "commit");
    sqllock_txn_free(txn);

    sqllock_lease_free(h);
    sqllock_lease_free(n);
    sqllock_lease_free(e);
    sqllock_close(obs);
    sqllock_close(db);
}

static void expect_emisuse(sqllock_db *db, int rc, const char *what)
{
    if (rc != SQLLOCK_EMISUSE)
        fail_msg("%s: got %s, want SQLLOCK_EMISUSE (%s)", what,
                 sqllock_errname(rc), sqllock_errmsg(db));
    if (!tu_contains_ci(sqllock_errmsg(db), "did not begin") ||
        !tu_contains_ci(sqllock_errmsg(db), "not sent"))
        fail_msg("%s: the message does not say that the transaction is "
                 "not sqllock's and that nothing was sent: %s", what,
                 sqllock_errmsg(db));
}

/*
 * A transaction the application opened on the native handle (autocommit
 * on): a statement in it would not commit on its own, and a rollback or
 * START TRANSACTION of the driver's would end the application's own work
 * too (START TRANSACTION commits it). So every lease and record call is
 * refused before anything is sent, SQLLOCK_EMISUSE, as on PostgreSQL
 * (test_pooler g); the application's transaction is left as it was, and
 * once it ends the calls work.
 */
static void test_autocommit_open_transaction_refused(void **state)
{
    char held[128], fresh[128], rec[128], app[128], sql[300];
    sqllock_db *db, *obs;
    sqllock_lease *h, *n;
    tu_row before, after;
    (void)state;

    db = open_ok(g_url);
    obs = open_ok(g_url);
    unique(held, sizeof held, "txn-held");
    unique(fresh, sizeof fresh, "txn-fresh");
    unique(rec, sizeof rec, "txn-rec");
    unique(app, sizeof app, "txn-app");
    h = new_lease(db, held, 60000);
    n = new_lease(db, fresh, 60000);
    expect_ok(db, sqllock_lease_try_acquire(h), "acquire");
    expect_ok(db, sqllock_record_create(db, rec, "v1", 2), "record create");
    tu_sleep_ms(20);
    assert_int_equal(tu_find(obs, held, &before), SQLLOCK_OK);

    /* The application's transaction, with a write of its own in it. */
    native_query(db, "START TRANSACTION");
    snprintf(sql, sizeof sql, "INSERT INTO sqllock_record (`key`, `value`, "
             "version) VALUES ('%s', 'a', 1)", app);
    native_query(db, sql);
    expect_emisuse(db, sqllock_lease_renew(h), "renew");
    expect_emisuse(db, sqllock_lease_release(h), "release");
    expect_emisuse(db, sqllock_record_cas(db, rec, 1, "v2", 2, NULL),
                   "record cas");
    expect_emisuse(db, sqllock_lease_try_acquire(n), "acquire");
    assert_int_equal(tu_find(obs, held, &after), SQLLOCK_OK);
    assert_int_equal(after.found, 1);
    assert_int_equal(after.expires_at_ms, before.expires_at_ms);
    assert_int_equal(tu_find(obs, fresh, &after), SQLLOCK_OK);
    assert_int_equal(after.found, 0);
    assert_int_equal(record_version(obs, rec, NULL, 0), 1);
    /* Nothing committed the application's write, and nothing rolled it
     * back: its transaction is still open and still holds it. */
    assert_int_equal(record_version(obs, app, NULL, 0), 0);
    assert_int_equal(sqllock_record_get(db, app, NULL, NULL, NULL),
                     SQLLOCK_EMISUSE);
    native_query(db, "ROLLBACK");
    assert_int_equal(record_version(obs, app, NULL, 0), 0);

    /* Its transaction over, everything works and commits. */
    expect_ok(db, sqllock_lease_renew(h), "renew");
    expect_ok(db, sqllock_lease_try_acquire(n), "acquire");
    assert_int_equal(tu_find(obs, fresh, &after), SQLLOCK_OK);
    assert_int_equal(after.found, 1);
    expect_ok(db, sqllock_record_cas(db, rec, 1, "v2", 2, NULL),
              "record cas");
    assert_int_equal(record_version(obs, rec, NULL, 0), 2);
    expect_ok(db, sqllock_lease_release(n), "release");
    expect_ok(db, sqllock_lease_release(h), "release");
    assert_int_equal(tu_find(obs, held, &after), SQLLOCK_OK);
    assert_int_equal(after.found, 0);
    expect_ok(db, sqllock_record_delete(db, rec, 2), "record delete");
    assert_int_equal(record_version(obs, rec, NULL, 0), 0);
    sqllock_lease_free(h);
    sqllock_lease_free(n);
    sqllock_close(obs);
    sqllock_close(db);
}

static int group_setup(void **state)
{
    sqllock_db *db = NULL;
    int rc = sqllock_open(g_url, NULL, &db);

    (void)state;
    if (rc == SQLLOCK_OK)
        rc = sqllock_init(db);
    if (rc != SQLLOCK_OK)
        fprintf(stderr, "setup: %s\n", sqllock_errmsg(db));
    sqllock_close(db);
    return rc == SQLLOCK_OK ? 0 : -1;
}

/* The URL of scripts/tls.sh's MariaDB, from $SQLLOCK_TEST_TLS_DIR/env. */
static int load_fixture(char *why, size_t why_size)
{
    const char *dir = getenv("SQLLOCK_TEST_TLS_DIR");
    char path[1100], env[4096], port[32];

    if (dir == NULL || *dir == '\0') {
        snprintf(why, why_size, "SQLLOCK_TEST_TLS_DIR is not set");
        return 0;
    }
    snprintf(path, sizeof path, "%s/env", dir);
    if (tu_read_file(path, env, sizeof env) == 0 ||
        !tu_get_var(env, "SQLLOCK_TEST_TLS_MY_PORT", port, sizeof port) ||
        atoi(port) <= 0) {
        snprintf(why, why_size, "%s is missing or incomplete", path);
        return 0;
    }
    snprintf(g_fixture_url, sizeof g_fixture_url,
             "mysql://sqllock:sqllock-test@127.0.0.1:%d/sqllock_test",
             atoi(port));
    return 1;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_autocommit_connect_forces_autocommit_on),
        cmocka_unit_test(test_autocommit_off_every_write_fails_eproxy),
        cmocka_unit_test(test_autocommit_open_transaction_refused),
    };
    const char *req = getenv("SQLLOCK_TEST_REQUIRE");
    int must = tu_ci() || (req != NULL && strstr(req, "mysql") != NULL);
    char group[600], why[1300];
    tu_urls urls;
    int i, ran = 0, failed = 0, skipped = 0;

    if (tu_urls_load(&urls) != 0) {
        fprintf(stderr, "autocommit: cannot load the URLs\n");
        return 1;
    }
    for (i = 0; i < urls.n; i++) {
        const char *drv = tu_url_driver(urls.url[i]);
        char *shown;

        if (drv == NULL || strcmp(drv, "mysql") != 0)
            continue;
        g_url = urls.url[i];
        g_server_off = 0;
        shown = sqllock__url_redact(g_url);
        snprintf(group, sizeof group, "autocommit [mysql] %s",
                 shown != NULL ? shown : "");
        free(shown);
        failed += cmocka_run_group_tests_name(group, tests, group_setup, NULL);
        ran++;
    }
    if (load_fixture(why, sizeof why)) {
        g_url = g_fixture_url;
        g_server_off = 1;
        failed += cmocka_run_group_tests_name("autocommit [mysql, the server's "
                                              "autocommit=0 and init_connect, "
                                              "scripts/tls.sh]", tests,
                                              group_setup, NULL);
        ran++;
    } else {
        /* The autocommit-off server could not be tested: skipped, or
         * under CI failed. */
        skipped = tu_unit_cannot_run("autocommit", "the autocommit-off "
                                     "server: %s", why);
    }
    tu_urls_free(&urls);
    if (ran == 0) {
        if (must) {
            printf("autocommit: FAILED: no MySQL URL in SQLLOCK_TEST_URLS "
                   "and no scripts/tls.sh server, and mysql is required\n");
            return 1;
        }
        return tu_unit_cannot_run("autocommit", "no MySQL URL in "
                                  "SQLLOCK_TEST_URLS and no scripts/tls.sh "
                                  "server");
    }
    return tu_status_merge(skipped, tu_unit_result("autocommit", "mysql",
                                                   failed));
}
