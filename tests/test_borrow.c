/*
 * test_borrow.c -- the library on the application's own connection
 * (DESIGN G2, issue 17 item 3): sqllock_borrow() over a PGconn *, a
 * MYSQL * or a sqlite3 * that the application opened and uses through its
 * own client library (tests/guard/app.c), and sqllock_txn_join() inside
 * the transaction the application has open on it.
 *
 * Bad input and the calls a borrowed handle refuses; a row lock, a
 * record write and the application's own write committing and rolling
 * back together; the library's own transaction on a borrowed connection;
 * a failed lock call that leaves the application's transaction to the
 * application; the session's own lock wait put back; the guarded update
 * inside the application's transaction; exclusion between processes that
 * each lock inside their own transaction and increment a counter with
 * their own statements (the counter must end exact); a lost connection,
 * which the library does not reconnect; libpq's nonblocking mode left as
 * the application had it.
 *
 * Runs once per URL in SQLLOCK_TEST_URLS, or on a fresh temporary SQLite
 * file. Forked children never use cmocka: they report through their exit
 * status.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <sys/types.h>
#include <cmocka.h>

#include "test_util.h"
#include "test_run.h"
#include "tu_fixture.h"
#include "guard/guard.h"

#ifdef SQLLOCK_HAVE_POSTGRES
#include <libpq-fe.h>
#endif

const char *g_url;

static const sqllock_table PLAIN = { GUARD_TABLE, "id", NULL };

static int is_pg(app *a)
{
    return strcmp(app_driver(a), "postgres") == 0;
}

static int is_sqlite(app *a)
{
    return strcmp(app_driver(a), "sqlite") == 0;
}

/* The application's statement in its library's placeholders. */
static const char *q(app *a, const char *pg, const char *other)
{
    return is_pg(a) ? pg : other;
}

static sqllock_db *borrow(app *a)
{
    sqllock_db *b = NULL;
    int rc = sqllock_borrow(app_driver(a), app_native(a), NULL, &b);

    if (rc != SQLLOCK_OK)
        fail_msg("borrow: %s: %s", sqllock_errname(rc), sqllock_errmsg(b));
    assert_int_equal(sqllock_db_borrowed(b), 1);
    return b;
}

static void app_ok(app *a, int rc, const char *what)
{
    if (rc != APP_OK)
        fail_msg("%s: %s", what, app_error(a));
}

static void set_val(app *a, int64_t id, int64_t val)
{
    int64_t args[2] = { val, id }, affected = 0;

    app_ok(a, app_run(a, q(a, "UPDATE " GUARD_TABLE " SET val = $1 WHERE "
                              "id = $2", "UPDATE " GUARD_TABLE " SET val = ? "
                              "WHERE id = ?"), args, 2, NULL, 0, &affected,
                      NULL), "the application's update");
    assert_int_equal(affected, 1);
}

static int64_t get_val(app *a, int64_t id)
{
    int64_t v = 0;

    app_ok(a, app_run(a, q(a, "SELECT val FROM " GUARD_TABLE " WHERE id = $1",
                           "SELECT val FROM " GUARD_TABLE " WHERE id = ?"),
                      &id, 1, NULL, 0, NULL, &v), "the application's read");
    return v;
}

/* Whether another connection can lock now (NOWAIT) the library's lock
 * row `name`, or with `name` NULL row `id` of the application's table:
 * 1 yes, 0 it is held. */
static int free_now(sqllock_db *other, const char *name, int64_t id)
{
    sqllock_cell key = SQLLOCK_NUMBER(id);
    sqllock_txn *t = NULL;
    int rc;

    EXPECT_RC(other, sqllock_txn_begin(other, NULL, &t), SQLLOCK_OK, "begin");
    rc = name != NULL
             ? sqllock_txn_lock(t, &name, 1, SQLLOCK_LOCK_NOWAIT, NULL)
             : sqllock_txn_lock_rows(t, &PLAIN, &key, 1, SQLLOCK_LOCK_NOWAIT,
                                     NULL);
    sqllock_txn_free(t);
    if (rc != SQLLOCK_OK && rc != SQLLOCK_ELOCKED)
        fail_msg("NOWAIT lock: %s: %s", sqllock_errname(rc),
                 sqllock_errmsg(other));
    return rc == SQLLOCK_OK;
}

static int lockable(sqllock_db *other, const char *name)
{
    return free_now(other, name, 0);
}

static int row_lockable(sqllock_db *other, int64_t id)
{
    return free_now(other, NULL, id);
}

/* E2, G2: bad arguments, and what a borrowed handle refuses (nothing
 * sent); closing it leaves the application's connection working. */
static void test_borrow_G2_E2_bad_input_and_refusals(void **state)
{
    app *a = app_open(g_url, NULL);
    sqllock_db *b = NULL, *own = guard_open();
    sqllock_lease *l = NULL;
    sqllock_txn *t = NULL;
    int64_t n = -1;
    (void)state;

    assert_int_equal(sqllock_borrow(app_driver(a), app_native(a), NULL, NULL),
                     SQLLOCK_EINVAL);
    EXPECT_RC(b, sqllock_borrow(NULL, app_native(a), NULL, &b),
              SQLLOCK_EINVAL, "NULL scheme");
    assert_non_null(strstr(sqllock_errmsg(b), "scheme is NULL"));
    sqllock_close(b);
    EXPECT_RC(b, sqllock_borrow("", app_native(a), NULL, &b), SQLLOCK_EINVAL,
              "empty scheme");
    sqllock_close(b);
    EXPECT_RC(b, sqllock_borrow("oracle", app_native(a), NULL, &b),
              SQLLOCK_ESCHEME, "unknown scheme");
    assert_non_null(strstr(sqllock_errmsg(b), "oracle"));
    sqllock_close(b);
    EXPECT_RC(b, sqllock_borrow(app_driver(a), NULL, NULL, &b),
              SQLLOCK_EINVAL, "NULL connection");
    assert_non_null(strstr(sqllock_errmsg(b), "connection is NULL"));
    sqllock_close(b);

    b = borrow(a);
    assert_int_equal(sqllock_db_borrowed(own), 0);
    EXPECT_RC(b, sqllock_lease_new(b, "borrowed-lease", NULL, &l),
              SQLLOCK_EMISUSE, "a lease on a borrowed connection");
    assert_null(l);
    assert_non_null(strstr(sqllock_errmsg(b), "L10"));
    EXPECT_RC(b, sqllock_init(b), SQLLOCK_EMISUSE, "init");
    EXPECT_RC(b, sqllock_list(b, tu_row_cb, NULL), SQLLOCK_EMISUSE, "list");
    EXPECT_RC(b, sqllock_reap(b, 0, 10, &n), SQLLOCK_EMISUSE, "reap");
    EXPECT_RC(b, sqllock_watch_prepare(b), SQLLOCK_EMISUSE, "watchdog");
    /* No transaction open on the connection: nothing to join. */
    EXPECT_RC(b, sqllock_txn_join(b, NULL, &t), SQLLOCK_EMISUSE,
              "join without a transaction");
    assert_null(t);
    assert_non_null(strstr(sqllock_errmsg(b), "no transaction is open"));
    /* A handle of the library's own cannot join. */
    EXPECT_RC(own, sqllock_txn_join(own, NULL, &t), SQLLOCK_EMISUSE,
              "join on an owned handle");
    assert_null(t);
    sqllock_close(b);
    /* The application's connection is untouched. */
    app_ok(a, app_exec(a, "SELECT 1"), "the connection after close");
    app_close(a);
    guard_close(own);
}

/* G2, R1: a row lock joined into the application's transaction, a record
 * written through the borrowed handle and the application's own write
 * commit together; rolled back, all three are gone and the lock is
 * free. The library never ends the application's transaction: its
 * commit is refused, and freeing the sqllock_txn rolls nothing back. */
static void test_borrow_G2_joined_commit_and_rollback(void **state)
{
    app *a = app_open(g_url, NULL);
    sqllock_db *own = guard_open(), *b;
    int64_t id = guard_row(own), version = 0;
    const char *name;
    char nm[96], key[96];
    sqllock_txn *t = NULL;
    void *v = NULL;
    size_t len = 0;
    (void)state;

    guard_name(nm, sizeof nm, "joined");
    guard_name(key, sizeof key, "rec");
    name = nm;
    b = borrow(a);
    /* The lock row exists, committed (created inside the application's
     * transaction, it would be that transaction's until it commits, and
     * another client's lock call would wait for it even with NOWAIT). */
    assert_int_equal(lockable(own, name), 1);

    app_ok(a, app_begin(a, 0), "begin");
    EXPECT_RC(b, sqllock_txn_join(b, NULL, &t), SQLLOCK_OK, "join");
    EXPECT_RC(b, sqllock_txn_lock(t, &name, 1, SQLLOCK_LOCK_WAIT, NULL),
              SQLLOCK_OK, "lock in the application's transaction");
    set_val(a, id, 7);
    EXPECT_RC(b, sqllock_record_create(b, key, "one", 3), SQLLOCK_OK,
              "a record inside it");
    assert_int_equal(lockable(own, name), 0);
    EXPECT_RC(b, sqllock_txn_commit(t), SQLLOCK_EMISUSE, "commit joined");
    assert_non_null(strstr(sqllock_errmsg(b), "the application's"));
    sqllock_txn_free(t);                  /* ends our part only */
    /* Still the application's transaction: nothing committed yet. */
    assert_int_equal(lockable(own, name), 0);
    app_ok(a, app_exec(a, "COMMIT"), "the application's commit");
    assert_int_equal(lockable(own, name), 1);
    assert_int_equal(get_val(a, id), 7);
    EXPECT_RC(own, sqllock_record_get(own, key, &v, &len, &version),
              SQLLOCK_OK, "the record committed with it");
    assert_int_equal(version, 1);
    free(v);

    /* Rolled back: the write, the record's new value and the lock go. */
    app_ok(a, app_begin(a, 0), "begin again");
    EXPECT_RC(b, sqllock_txn_join(b, NULL, &t), SQLLOCK_OK, "join again");
    EXPECT_RC(b, sqllock_txn_lock(t, &name, 1, SQLLOCK_LOCK_WAIT, NULL),
              SQLLOCK_OK, "lock again");
    set_val(a, id, 9);
    EXPECT_RC(b, sqllock_record_cas(b, key, 1, "two", 3, NULL), SQLLOCK_OK,
              "cas inside it");
    app_ok(a, app_exec(a, "ROLLBACK"), "the application's rollback");
    sqllock_txn_free(t);
    assert_int_equal(lockable(own, name), 1);
    assert_int_equal(get_val(a, id), 7);
    EXPECT_RC(own, sqllock_record_get(own, key, &v, &len, &version),
              SQLLOCK_OK, "the record after the rollback");
    assert_int_equal(version, 1);
    assert_memory_equal(v, "one", 3);
    free(v);
    sqllock_close(b);
    app_close(a);
    guard_close(own);
}

/* G2, R1: with no transaction open, sqllock_txn_begin() on a borrowed
 * handle begins and commits its own; with one open, it is refused (a
 * BEGIN would end MySQL's open transaction, or nest in PostgreSQL's). */
static void test_borrow_G2_own_txn_on_borrowed(void **state)
{
    app *a = app_open(g_url, NULL);
    sqllock_db *own = guard_open(), *b = borrow(a);
    sqllock_txn *t = NULL;
    const char *name;
    char nm[96];
    (void)state;

    guard_name(nm, sizeof nm, "owntxn");
    name = nm;
    EXPECT_RC(b, sqllock_txn_begin(b, NULL, &t), SQLLOCK_OK, "begin");
    EXPECT_RC(b, sqllock_txn_lock(t, &name, 1, SQLLOCK_LOCK_WAIT, NULL),
              SQLLOCK_OK, "lock");
    assert_int_equal(lockable(own, name), 0);
    EXPECT_RC(b, sqllock_txn_commit(t), SQLLOCK_OK, "commit");
    sqllock_txn_free(t);
    assert_int_equal(lockable(own, name), 1);

    app_ok(a, app_begin(a, 0), "the application's begin");
    EXPECT_RC(b, sqllock_txn_begin(b, NULL, &t), SQLLOCK_EMISUSE,
              "begin inside the application's transaction");
    assert_null(t);
    assert_non_null(strstr(sqllock_errmsg(b), "sqllock_txn_join"));
    app_ok(a, app_exec(a, "ROLLBACK"), "rollback");
    sqllock_close(b);
    app_close(a);
    guard_close(own);
}

/* G2, R1, R3, R5: the application's own rows locked inside its
 * transaction (SQLite: the database's write lock, taken inside the
 * transaction the application began DEFERRED), held until it ends; SKIP
 * LOCKED on a name another connection holds gets nothing and fails
 * nothing. */
static void test_borrow_G2_R5_app_rows_and_skip_locked(void **state)
{
    app *a = app_open(g_url, NULL);
    sqllock_db *own = guard_open(), *b = borrow(a);
    int64_t id = guard_row(own);
    sqllock_cell key = SQLLOCK_NUMBER(id);
    sqllock_txn *t = NULL, *held = NULL;
    const char *name;
    char nm[96];
    int got = -1;
    (void)state;

    guard_name(nm, sizeof nm, "skip");
    name = nm;
    app_ok(a, app_begin(a, 0), "begin");
    (void)get_val(a, id);                    /* a read first: DEFERRED */
    EXPECT_RC(b, sqllock_txn_join(b, NULL, &t), SQLLOCK_OK, "join");
    EXPECT_RC(b, sqllock_txn_lock_rows(t, &PLAIN, &key, 1, SQLLOCK_LOCK_WAIT,
                                       &got),
              SQLLOCK_OK, "lock the application's row");
    assert_int_equal(got, 1);
    assert_int_equal(row_lockable(own, id), 0);
    sqllock_txn_free(t);
    assert_int_equal(row_lockable(own, id), 0);   /* until the app ends */
    app_ok(a, app_exec(a, "ROLLBACK"), "rollback");
    assert_int_equal(row_lockable(own, id), 1);

    if (!is_sqlite(a)) {
        EXPECT_RC(own, sqllock_txn_begin(own, NULL, &held), SQLLOCK_OK,
                  "begin");
        EXPECT_RC(own, sqllock_txn_lock(held, &name, 1, SQLLOCK_LOCK_WAIT,
                                        NULL), SQLLOCK_OK, "the other's lock");
        app_ok(a, app_begin(a, 0), "begin");
        EXPECT_RC(b, sqllock_txn_join(b, NULL, &t), SQLLOCK_OK, "join");
        got = -1;
        EXPECT_RC(b, sqllock_txn_lock(t, &name, 1, SQLLOCK_LOCK_SKIP_LOCKED,
                                      &got), SQLLOCK_OK, "SKIP LOCKED");
        assert_int_equal(got, 0);
        set_val(a, id, 4);                   /* the transaction goes on */
        sqllock_txn_free(t);
        app_ok(a, app_exec(a, "COMMIT"), "commit");
        assert_int_equal(get_val(a, id), 4);
        sqllock_txn_free(held);
    }
    sqllock_close(b);
    app_close(a);
    guard_close(own);
}

/* G2, R3: a name first locked inside the application's transaction has
 * its row created there, uncommitted, until that transaction ends.
 * Another client's lock of the name meanwhile waits as its mode says,
 * not for the application: NOWAIT fails with ELOCKED (at once; MySQL
 * counts whole seconds), WAIT after its lock timeout, SKIP LOCKED skips
 * it. After the commit the name is free. */
static void test_borrow_G2_R3_new_name_first_locked_in_app_txn(void **state)
{
    app *a = app_open(g_url, NULL);
    sqllock_db *own = guard_open(), *b = borrow(a);
    sqllock_txn_options o = SQLLOCK_TXN_OPTIONS_INIT;
    sqllock_txn *t = NULL, *other = NULL;
    const char *name;
    char nm[96];
    int64_t t0, took;
    int got = -1;
    (void)state;

    guard_name(nm, sizeof nm, "newname");
    name = nm;
    app_ok(a, app_begin(a, 0), "begin");
    EXPECT_RC(b, sqllock_txn_join(b, NULL, &t), SQLLOCK_OK, "join");
    EXPECT_RC(b, sqllock_txn_lock(t, &name, 1, SQLLOCK_LOCK_WAIT, NULL),
              SQLLOCK_OK, "the first lock of a new name");

    t0 = tu_now_ms();
    assert_int_equal(lockable(own, name), 0);
    took = tu_now_ms() - t0;
    if (took > tu_scaled_ms(2500))
        fail_msg("NOWAIT took %lld ms", (long long)took);
    o.lock_timeout_ms = 300;
    EXPECT_RC(own, sqllock_txn_begin(own, &o, &other), SQLLOCK_OK, "begin");
    t0 = tu_now_ms();
    EXPECT_RC(own, sqllock_txn_lock(other, &name, 1, SQLLOCK_LOCK_WAIT, NULL),
              SQLLOCK_ELOCKED, "WAIT, 300 ms");
    took = tu_now_ms() - t0;
    if (took > tu_scaled_ms(3500))
        fail_msg("WAIT with a 300 ms lock timeout took %lld ms",
                 (long long)took);
    sqllock_txn_free(other);
    if (!is_sqlite(a)) {
        EXPECT_RC(own, sqllock_txn_begin(own, NULL, &other), SQLLOCK_OK,
                  "begin");
        EXPECT_RC(own, sqllock_txn_lock(other, &name, 1,
                                        SQLLOCK_LOCK_SKIP_LOCKED, &got),
                  SQLLOCK_OK, "SKIP LOCKED");
        assert_int_equal(got, 0);
        sqllock_txn_free(other);
    }
    sqllock_txn_free(t);
    app_ok(a, app_exec(a, "COMMIT"), "commit");
    assert_int_equal(lockable(own, name), 1);
    sqllock_close(b);
    app_close(a);
    guard_close(own);
}

/* The session's own row-lock wait, in ms. */
static int64_t session_wait_ms(app *a)
{
    int64_t v = -1;
    const char *sql =
        is_pg(a) ? "SELECT (EXTRACT(EPOCH FROM pg_catalog.current_setting("
                   "'lock_timeout')::interval) * 1000)::bigint"
        : is_sqlite(a) ? "PRAGMA busy_timeout"
                       : "SELECT @@SESSION.innodb_lock_wait_timeout * 1000";

    app_ok(a, app_run(a, sql, NULL, 0, NULL, 0, NULL, &v), "read the wait");
    return v;
}

/* G2, R7: the application's own lock wait (7 s) is put back when the
 * joined sqllock_txn ends, after a lock and after a failed one. A NOWAIT
 * that meets a held lock fails the sqllock_txn (later lock calls are
 * refused) but sends no ROLLBACK: where the database keeps the
 * transaction (MySQL, SQLite), the application's earlier write is still
 * in it, for the application to roll back. */
static void test_borrow_G2_R7_wait_put_back_and_failed_lock(void **state)
{
    app *a = app_open(g_url, NULL);
    sqllock_db *own = guard_open(), *b = borrow(a);
    sqllock_txn_options o = SQLLOCK_TXN_OPTIONS_INIT;
    sqllock_txn *t = NULL, *held = NULL;
    int64_t id = guard_row(own);
    const char *name;
    char nm[96];
    (void)state;

    guard_name(nm, sizeof nm, "wait");
    name = nm;
    app_ok(a, app_exec(a, is_pg(a) ? "SET lock_timeout = '7s'"
                          : is_sqlite(a) ? "PRAGMA busy_timeout = 7000"
                          : "SET SESSION innodb_lock_wait_timeout = 7"),
           "the application's wait");
    assert_int_equal(session_wait_ms(a), 7000);

    o.lock_timeout_ms = 1234;
    app_ok(a, app_begin(a, 0), "begin");
    EXPECT_RC(b, sqllock_txn_join(b, &o, &t), SQLLOCK_OK, "join");
    EXPECT_RC(b, sqllock_txn_lock(t, &name, 1, SQLLOCK_LOCK_WAIT, NULL),
              SQLLOCK_OK, "lock");
    if (!is_sqlite(a))       /* SQLite's applies to taking the lock only */
        assert_int_equal(session_wait_ms(a), is_pg(a) ? 1234 : 2000);
    sqllock_txn_free(t);
    assert_int_equal(session_wait_ms(a), 7000);
    app_ok(a, app_exec(a, "COMMIT"), "commit");
    assert_int_equal(session_wait_ms(a), 7000);

    /* Another connection holds it; the application has written first. */
    EXPECT_RC(own, sqllock_txn_begin(own, NULL, &held), SQLLOCK_OK, "begin");
    EXPECT_RC(own, sqllock_txn_lock(held, &name, 1, SQLLOCK_LOCK_WAIT, NULL),
              SQLLOCK_OK, "the other's lock");
    app_ok(a, app_begin(a, 0), "begin");
    if (!is_sqlite(a))      /* SQLite: the other holds the write lock */
        set_val(a, id, 3);
    EXPECT_RC(b, sqllock_txn_join(b, &o, &t), SQLLOCK_OK, "join");
    EXPECT_RC(b, sqllock_txn_lock(t, &name, 1, SQLLOCK_LOCK_NOWAIT, NULL),
              SQLLOCK_ELOCKED, "NOWAIT on a held lock");
    assert_non_null(strstr(sqllock_errmsg(b), "roll it back on its "
                                              "connection"));
    EXPECT_RC(b, sqllock_txn_lock(t, &name, 1, SQLLOCK_LOCK_NOWAIT, NULL),
              SQLLOCK_EMISUSE, "a lock call after the failure");
    sqllock_txn_free(t);
    if (!is_pg(a)) {
        /* Not rolled back by the library: the application's write (MySQL)
         * is still in its transaction, which is still open. */
        if (!is_sqlite(a))
            assert_int_equal(get_val(a, id), 3);
        assert_int_equal(session_wait_ms(a), 7000);
    }
    app_ok(a, app_exec(a, "ROLLBACK"), "the application's rollback");
    assert_int_equal(session_wait_ms(a), 7000);
    assert_int_equal(get_val(a, id), 0);
    sqllock_txn_free(held);
    sqllock_close(b);
    app_close(a);
    guard_close(own);
}

/* G1, G2: the guarded update through the borrowed handle is part of the
 * application's transaction: invisible to others until the application
 * commits, gone if it rolls back; refused (LOST) once the lease is
 * another holder's. */
static void test_borrow_G1_G2_guarded_update_in_app_txn(void **state)
{
    app *a = app_open(g_url, NULL);
    sqllock_db *own = guard_open(), *own2 = guard_open(), *b = borrow(a);
    const int64_t ttl = tu_scaled_ms(400);
    int64_t id = guard_row(own), val = -1;
    sqllock_cell key = SQLLOCK_NUMBER(id);
    sqllock_cell set = { "val", SQLLOCK_OP_SET, NULL, 11 };
    sqllock_lease *l, *l2;
    char name[96];
    (void)state;

    guard_name(name, sizeof name, "gupd");
    l = guard_acquire(own, name, 30000, 0);
    app_ok(a, app_begin(a, 0), "begin");
    EXPECT_RC(b, sqllock_table_guarded_update(b, l, &PLAIN, &key, NULL, &set,
                                              1, NULL, 0),
              SQLLOCK_OK, "guarded update on the application's connection");
    guard_read(own, id, &val, NULL, NULL);
    assert_int_equal(val, 0);            /* not committed yet */
    app_ok(a, app_exec(a, "ROLLBACK"), "rollback");
    guard_read(own, id, &val, NULL, NULL);
    assert_int_equal(val, 0);
    app_ok(a, app_begin(a, 0), "begin");
    EXPECT_RC(b, sqllock_table_guarded_update(b, l, &PLAIN, &key, NULL, &set,
                                              1, NULL, 0),
              SQLLOCK_OK, "again");
    app_ok(a, app_exec(a, "COMMIT"), "commit");
    guard_read(own, id, &val, NULL, NULL);
    assert_int_equal(val, 11);
    EXPECT_RC(own, sqllock_lease_release(l), SQLLOCK_OK, "release");
    sqllock_lease_free(l);

    /* A short lease, left to expire (no watchdog) and taken over. */
    l = guard_acquire(own, name, ttl, 0);
    l2 = guard_acquire(own2, name, 30000, ttl * 20);
    set.number = 12;
    app_ok(a, app_begin(a, 0), "begin");
    EXPECT_RC(b, sqllock_table_guarded_update(b, l, &PLAIN, &key, NULL, &set,
                                              1, NULL, 0),
              SQLLOCK_LOST, "the old holder's guarded update");
    app_ok(a, app_exec(a, "COMMIT"), "commit");
    guard_read(own, id, &val, NULL, NULL);
    assert_int_equal(val, 11);
    EXPECT_RC(own2, sqllock_lease_release(l2), SQLLOCK_OK, "release");
    sqllock_lease_free(l2);
    sqllock_lease_free(l);
    sqllock_close(b);
    app_close(a);
    guard_close(own);
    guard_close(own2);
}

/* ------------------------------------------------------------------ */
/* The application's session (DESIGN D5, issue 26 items 4 and 8)        */
/* ------------------------------------------------------------------ */

static const sqllock_table VERSIONED = { GUARD_TABLE, "id", "ver" };

/* How the application left its session when it lends the connection:
 * no transaction open, one begun, or (MySQL) autocommit off, where the
 * next statement opens one (mysqlclient's default). */
enum { TXN_NONE, TXN_BEGUN, TXN_AUTOCOMMIT_OFF };

typedef struct session_mode {
    unsigned flags;            /* APP_FOUND_ROWS, APP_READ_COMMITTED, ... */
    int txn;
    char label[96];
} session_mode;

static char g_what[300];

/* `what`, with the mode it ran in, for a failure's message. */
static const char *in_mode(const session_mode *m, const char *what)
{
    snprintf(g_what, sizeof g_what, "%s [%s]", what, m->label);
    return g_what;
}

/* The modes of `a`'s driver: each isolation level (PostgreSQL and MySQL)
 * with each kind of transaction; `flags` are added to every mode. */
static int session_modes(const char *driver, unsigned flags,
                         session_mode *out, int max)
{
    static const unsigned levels[2] = { APP_READ_COMMITTED,
                                        APP_REPEATABLE_READ };
    static const char *const txn_names[3] = { "no transaction",
                                              "a transaction begun",
                                              "autocommit off" };
    int n = 0, lv, txn;
    int sqlite = strcmp(driver, "sqlite") == 0;
    int mysql = strcmp(driver, "mysql") == 0;

    for (lv = 0; lv < (sqlite ? 1 : 2); lv++)
        for (txn = TXN_NONE; txn <= (mysql ? TXN_AUTOCOMMIT_OFF : TXN_BEGUN);
             txn++) {
            if (n >= max)
                return n;
            out[n].flags = flags | (sqlite ? 0 : levels[lv]);
            out[n].txn = txn;
            snprintf(out[n].label, sizeof out[n].label, "%s%s%s, %s%s",
                     driver, (flags & APP_FOUND_ROWS) ? ", CLIENT_FOUND_ROWS"
                     : "", sqlite ? "" : lv == 0 ? ", READ COMMITTED"
                     : ", REPEATABLE READ", txn_names[txn],
                     txn == TXN_AUTOCOMMIT_OFF ? ", lc_messages ja_JP" : "");
            n++;
        }
    return n;
}

/* Opens the application's transaction as the mode says. */
static void mode_begin(app *a, const session_mode *m)
{
    if (m->txn == TXN_BEGUN)
        app_ok(a, app_begin(a, 0), "the application's begin");
    else if (m->txn == TXN_AUTOCOMMIT_OFF)
        app_ok(a, app_exec(a, "SET autocommit = 0"), "autocommit off");
}

/* Ends it: committed (or rolled back), autocommit back on. */
static void mode_end(app *a, const session_mode *m, int commit)
{
    if (m->txn == TXN_NONE)
        return;
    app_ok(a, app_exec(a, commit ? "COMMIT" : "ROLLBACK"),
           "the application's commit");
    if (m->txn == TXN_AUTOCOMMIT_OFF)
        app_ok(a, app_exec(a, "SET autocommit = 1"), "autocommit on");
}

static void expect_record(sqllock_db *db, const char *key, const char *want,
                          int64_t want_version, const char *what)
{
    void *v = NULL;
    size_t len = 0;
    int64_t version = 0;

    EXPECT_RC(db, sqllock_record_get(db, key, &v, &len, &version),
              SQLLOCK_OK, what);
    if (len != strlen(want) || memcmp(v, want, len) != 0 ||
        version != want_version)
        fail_msg("%s: record '%s' is '%.*s' at version %lld, want '%s' at "
                 "%lld", what, key, (int)len, (const char *)v,
                 (long long)version, want, (long long)want_version);
    free(v);
}

/*
 * Every call a borrowed handle runs, in one session mode: the records
 * (create, also of a key that exists -- item 4: with CLIENT_FOUND_ROWS
 * the old statement counted the existing row as created; CAS, also of
 * the value the record has; delete), the table calls (update, CAS, get,
 * a fenced update of the values the row has), the guarded update (also
 * writing what the row has), sqllock_db_exec()'s count of an UPDATE that
 * changes nothing (the rows it matched, as on PostgreSQL and SQLite),
 * and row locks: joined into the application's transaction, or in the
 * library's own transaction on the connection, where NOWAIT on a name
 * another connection holds fails at once (MySQL REPEATABLE READ made
 * the lock row's INSERT ... WHERE NOT EXISTS wait for the holder).
 * What the calls wrote is checked through another connection after the
 * application's commit.
 */
static void calls_in_mode(const session_mode *m)
{
    app *a = app_open_with(g_url, NULL, m->flags);
    sqllock_db *own = guard_open(), *b;
    int64_t id = guard_row(own), val = -1, fence = -1, nv = 0, ver = -1;
    int64_t affected = -1, token, t0, took;
    sqllock_cell key = SQLLOCK_NUMBER(id);
    sqllock_cell set5 = { "val", SQLLOCK_OP_SET, NULL, 5 };
    sqllock_cell set6 = { "val", SQLLOCK_OP_SET, NULL, 6 };
    sqllock_cell idarg = SQLLOCK_NUMBER(id);
    const char *cols[1] = { "val" };
    char k1[96], k2[96], nm[96], held_nm[96], lname[96];
    const char *name = nm, *held_name = held_nm;
    sqllock_txn *t = NULL, *held = NULL;
    sqllock_lease *l;
    void *v = NULL;
    size_t len = 0;
    int i;

    if ((m->flags & APP_FOUND_ROWS) && strcmp(app_driver(a), "mysql") == 0)
        assert_int_equal(app_found_rows(a), 1);
    guard_name(k1, sizeof k1, "d5-new");
    guard_name(k2, sizeof k2, "d5-old");
    guard_name(nm, sizeof nm, "d5-lock");
    guard_name(held_nm, sizeof held_nm, "d5-held");
    guard_name(lname, sizeof lname, "d5-lease");
    l = guard_acquire(own, lname, 30000, 0);
    token = sqllock_lease_token(l);
    EXPECT_RC(own, sqllock_record_create(own, k2, "old", 3), SQLLOCK_OK,
              "the existing record");
    /* The lock rows exist, committed (see joined_commit_and_rollback). */
    assert_int_equal(lockable(own, name), 1);
    assert_int_equal(lockable(own, held_name), 1);
    /* The server's messages in another language: the rows an UPDATE
     * matched are read from its info text ("該当した行: 1  変更: 0 ..."). */
    if (m->txn == TXN_AUTOCOMMIT_OFF)
        app_ok(a, app_exec(a, "SET lc_messages = 'ja_JP'"),
               "the session's language");
    b = borrow(a);
    mode_begin(a, m);

    /* O1: records. */
    EXPECT_RC(b, sqllock_record_create(b, k1, "one", 3), SQLLOCK_OK,
              in_mode(m, "O1: create a new record"));
    EXPECT_RC(b, sqllock_record_create(b, k1, "xxx", 3), SQLLOCK_CONFLICT,
              in_mode(m, "O1: create it again"));
    EXPECT_RC(b, sqllock_record_create(b, k2, "new", 3), SQLLOCK_CONFLICT,
              in_mode(m, "O1, D5: create a record that exists"));
    assert_non_null(strstr(sqllock_errmsg(b), "already exists"));
    expect_record(b, k2, "old", 1, in_mode(m, "O1: the existing record "
                                           "keeps its value"));
    expect_record(b, k1, "one", 1, in_mode(m, "O1: the new record"));
    EXPECT_RC(b, sqllock_record_cas(b, k1, 1, "two", 3, &nv), SQLLOCK_OK,
              in_mode(m, "O1: cas"));
    assert_int_equal(nv, 2);
    EXPECT_RC(b, sqllock_record_cas(b, k1, 1, "bad", 3, &nv),
              SQLLOCK_CONFLICT, in_mode(m, "O1: cas at a stale version"));
    EXPECT_RC(b, sqllock_record_cas(b, k1, 2, "two", 3, &nv), SQLLOCK_OK,
              in_mode(m, "O1: cas writing the value the record has"));
    assert_int_equal(nv, 3);
    EXPECT_RC(b, sqllock_record_delete(b, k2, 2), SQLLOCK_CONFLICT,
              in_mode(m, "O1: delete at a wrong version"));
    EXPECT_RC(b, sqllock_record_delete(b, k2, 1), SQLLOCK_OK,
              in_mode(m, "O1: delete"));
    EXPECT_RC(b, sqllock_record_get(b, k2, &v, &len, &nv), SQLLOCK_NOTFOUND,
              in_mode(m, "O1: the deleted record"));

    /* O3, L5: the application's table. */
    EXPECT_RC(b, sqllock_table_update(b, &VERSIONED, &key, &set5, 1, NULL,
                                      0), SQLLOCK_OK,
              in_mode(m, "O3: table update"));
    EXPECT_RC(b, sqllock_table_cas(b, &VERSIONED, &key, 1, &set5, 1, NULL, 0,
                                   &nv), SQLLOCK_OK,
              in_mode(m, "O3: table cas of the value the row has"));
    assert_int_equal(nv, 2);
    EXPECT_RC(b, sqllock_table_cas(b, &VERSIONED, &key, 1, &set6, 1, NULL, 0,
                                   &nv), SQLLOCK_CONFLICT,
              in_mode(m, "O3: table cas at a stale version"));
    EXPECT_RC(b, sqllock_table_get(b, &VERSIONED, &key, cols, 1, &val, &ver),
              SQLLOCK_OK, in_mode(m, "O3: table get"));
    assert_int_equal(val, 5);
    assert_int_equal(ver, 2);
    for (i = 0; i < 2; i++)
        EXPECT_RC(b, sqllock_table_fenced_update(b, &PLAIN, &key, "fence",
                                                 token, &set5, 1, NULL, 0),
                  SQLLOCK_OK, in_mode(m, i == 0 ? "L5: fenced update"
                                      : "L5: the same fenced update again"));
    EXPECT_RC(b, sqllock_table_fenced_update(b, &PLAIN, &key, "fence",
                                             token + 1000, &set5, 1, NULL, 0),
              SQLLOCK_OK, in_mode(m, "L5: a fenced update with a larger "
                                  "token"));
    EXPECT_RC(b, sqllock_table_fenced_update(b, &PLAIN, &key, "fence",
                                             token, &set6, 1, NULL, 0),
              SQLLOCK_LOST, in_mode(m, "L5: the smaller token after it"));

    /* G1: the guarded update, twice with the same values. */
    for (i = 0; i < 2; i++)
        EXPECT_RC(b, sqllock_table_guarded_update(b, l, &PLAIN, &key, NULL,
                                                  &set6, 1, NULL, 0),
                  SQLLOCK_OK, in_mode(m, i == 0 ? "G1: guarded update"
                                      : "G1: the same guarded update again"));

    /* D5: an UPDATE through sqllock_db_exec() counts the row it matched. */
    EXPECT_RC(b, sqllock_db_exec(b, q(a, "UPDATE " GUARD_TABLE " SET val = 6 "
                                         "WHERE id = $1", "UPDATE "
                                         GUARD_TABLE " SET val = 6 WHERE id "
                                         "= ?"), &idarg, 1, NULL, NULL,
                                 &affected),
              SQLLOCK_OK, in_mode(m, "D5: exec of an UPDATE that changes "
                                  "nothing"));
    assert_int_equal(affected, 1);

    /* R1: row locks. */
    if (m->txn == TXN_NONE) {
        EXPECT_RC(own, sqllock_txn_begin(own, NULL, &held), SQLLOCK_OK,
                  "begin");
        EXPECT_RC(own, sqllock_txn_lock(held, &held_name, 1,
                                        SQLLOCK_LOCK_WAIT, NULL),
                  SQLLOCK_OK, "the other's lock");
        EXPECT_RC(b, sqllock_txn_begin(b, NULL, &t), SQLLOCK_OK,
                  in_mode(m, "R1: the library's transaction"));
        t0 = tu_now_ms();
        EXPECT_RC(b, sqllock_txn_lock(t, &held_name, 1, SQLLOCK_LOCK_NOWAIT,
                                      NULL), SQLLOCK_ELOCKED,
                  in_mode(m, "R1, D5: NOWAIT on a name another holds"));
        took = tu_now_ms() - t0;
        if (took > tu_scaled_ms(2500))
            fail_msg("%s", in_mode(m, "R1, D5: NOWAIT waited for the "
                                   "holder"));
        sqllock_txn_free(t);
        t = NULL;
        sqllock_txn_free(held);
        EXPECT_RC(b, sqllock_txn_begin(b, NULL, &t), SQLLOCK_OK,
                  in_mode(m, "R1: the library's transaction again"));
        EXPECT_RC(b, sqllock_txn_lock(t, &name, 1, SQLLOCK_LOCK_NOWAIT,
                                      NULL), SQLLOCK_OK,
                  in_mode(m, "R1: NOWAIT on a free name"));
        assert_int_equal(lockable(own, name), 0);
        EXPECT_RC(b, sqllock_txn_commit(t), SQLLOCK_OK,
                  in_mode(m, "R1: commit"));
        sqllock_txn_free(t);
    } else {
        EXPECT_RC(b, sqllock_txn_join(b, NULL, &t), SQLLOCK_OK,
                  in_mode(m, "G2: join"));
        EXPECT_RC(b, sqllock_txn_lock(t, &name, 1, SQLLOCK_LOCK_NOWAIT, NULL),
                  SQLLOCK_OK, in_mode(m, "R1: NOWAIT, joined"));
        assert_int_equal(lockable(own, name), 0);
        sqllock_txn_free(t);
        assert_int_equal(lockable(own, name), 0);
    }
    mode_end(a, m, 1);
    assert_int_equal(lockable(own, name), 1);

    /* What the calls wrote, read through another connection. */
    expect_record(own, k1, "two", 3, in_mode(m, "O1: committed"));
    EXPECT_RC(own, sqllock_record_get(own, k2, &v, &len, &nv),
              SQLLOCK_NOTFOUND, in_mode(m, "O1: the delete committed"));
    guard_read(own, id, &val, NULL, &fence);
    assert_int_equal(val, 6);
    assert_int_equal(fence, token + 1000);
    EXPECT_RC(own, sqllock_table_get(own, &VERSIONED, &key, NULL, 0, NULL,
                                     &ver), SQLLOCK_OK, "the version");
    assert_int_equal(ver, 2);
    EXPECT_RC(own, sqllock_lease_release(l), SQLLOCK_OK, "release");
    sqllock_lease_free(l);
    sqllock_close(b);
    app_close(a);
    guard_close(own);
}

/* D5, O1, O3, L5, G1, G2, R1: every call on a borrowed connection, at
 * each isolation level, with and without the application's transaction
 * open (see calls_in_mode()). */
static void test_borrow_D5_O1_G1_G2_calls_per_session_mode(void **state)
{
    session_mode modes[8];
    int n, i;
    (void)state;

    n = session_modes(tu_url_driver(g_url), 0, modes, 8);
    for (i = 0; i < n; i++)
        calls_in_mode(&modes[i]);
}

/* D5, O1, G1 (issue 26 item 4): the same on a MySQL connection the
 * application opened with CLIENT_FOUND_ROWS, as Django's backend does. */
static void test_borrow_D5_O1_G1_G2_calls_with_found_rows(void **state)
{
    session_mode modes[8];
    int n, i;
    (void)state;

    n = session_modes("mysql", APP_FOUND_ROWS, modes, 8);
    for (i = 0; i < n; i++)
        calls_in_mode(&modes[i]);
}

/* The update function of the O2 cases: appends '+' to the value ("new"
 * when there is none); on its first call, when `inject` is set, another
 * connection first moves the record (a writer between the read and the
 * write). */
typedef struct o2_ctx {
    sqllock_db *other;
    const char *key;
    int inject;
    int calls;
    char out[64];
} o2_ctx;

static int o2_fn(void *p, const void *old, size_t old_len, const void **out,
                 size_t *out_len)
{
    o2_ctx *c = p;

    if (c->calls++ == 0 && c->inject &&
        sqllock_record_cas(c->other, c->key, 1, "own", 3, NULL) != SQLLOCK_OK)
        return SQLLOCK_EDB;
    if (old == NULL) {
        snprintf(c->out, sizeof c->out, "new");
    } else {
        if (old_len > sizeof c->out - 2)
            return SQLLOCK_EINVAL;
        memcpy(c->out, old, old_len);
        c->out[old_len] = '+';
        c->out[old_len + 1] = '\0';
    }
    *out = c->out;
    *out_len = strlen(c->out);
    return SQLLOCK_OK;
}

/*
 * O2 on a borrowed session whose reads may be a snapshot: the retry
 * helper must not re-read the same snapshot attempt after attempt (MySQL
 * REPEATABLE READ: each plain read of a transaction sees the first one's
 * snapshot, while each write sees the latest row, so a conflict repeats
 * until the attempts run out). In the mode's transaction the
 * application reads the record first (its snapshot), another connection
 * then moves it -- or creates it, when the application saw none -- and
 * sqllock_record_update() runs: on MySQL it applies its change to the
 * latest row at the first attempt, at either level; on PostgreSQL at
 * REPEATABLE READ the database refuses the stale transaction
 * (SQLLOCK_ESERIALIZATION, at once: retry the transaction); on SQLite
 * a write after the snapshot is refused as the database's lock
 * (SQLLOCK_ELOCKED family), also at once. Without a transaction every
 * read is fresh: a writer between the read and the write costs one
 * more attempt.
 */
static void record_update_in_mode(const session_mode *m, int exists)
{
    app *a = app_open_with(g_url, NULL, m->flags);
    sqllock_db *own = guard_open(), *b;
    sqllock_retry_options ro = SQLLOCK_RETRY_OPTIONS_INIT;
    o2_ctx c;
    char key[96], what[160];
    void *v = NULL;
    size_t len = 0;
    int64_t version = 0;
    int attempts = 0, rc, pg_rr, stale;

    memset(&c, 0, sizeof c);
    guard_name(key, sizeof key, exists ? "o2-old" : "o2-new");
    c.other = own;
    c.key = key;
    ro.backoff_max_ms = 5;
    if (exists)
        EXPECT_RC(own, sqllock_record_create(own, key, "a", 1), SQLLOCK_OK,
                  "the record");
    b = borrow(a);
    snprintf(what, sizeof what, "O2: record_update of %s record",
             exists ? "an existing" : "a missing");
    if (m->txn == TXN_NONE) {
        /* Every read is fresh: one writer in the way, one more attempt. */
        if (!exists) {
            EXPECT_RC(own, sqllock_record_create(own, key, "a", 1),
                      SQLLOCK_OK, "the record");
        }
        c.inject = 1;
        EXPECT_RC(b, sqllock_record_update(b, key, o2_fn, &c, &ro,
                                           &attempts), SQLLOCK_OK,
                  in_mode(m, what));
        assert_int_equal(attempts, 2);
        expect_record(own, key, "own+", 3, in_mode(m, "O2: the update"));
        goto done;
    }
    mode_begin(a, m);
    EXPECT_RC(b, sqllock_record_get(b, key, &v, &len, &version),
              exists ? SQLLOCK_OK : SQLLOCK_NOTFOUND,
              in_mode(m, "the application's first read"));
    free(v);
    v = NULL;
    if (exists)
        EXPECT_RC(own, sqllock_record_cas(own, key, 1, "own", 3, NULL),
                  SQLLOCK_OK, "another writer, after the snapshot");
    else
        EXPECT_RC(own, sqllock_record_create(own, key, "own", 3),
                  SQLLOCK_OK, "another creator, after the snapshot");
    rc = sqllock_record_update(b, key, o2_fn, &c, &ro, &attempts);
    pg_rr = is_pg(a) && (m->flags & APP_REPEATABLE_READ);
    stale = pg_rr || is_sqlite(a);
    if (!stale) {
        EXPECT_RC(b, rc, SQLLOCK_OK, in_mode(m, what));
        assert_int_equal(attempts, 1);
        mode_end(a, m, 1);
        expect_record(own, key, "own+", exists ? 3 : 2,
                      in_mode(m, "O2: the update, committed"));
    } else {
        /* Refused by the database, at the first attempt, never a
         * conflict that the retries cannot get past. */
        if (rc == SQLLOCK_OK || rc == SQLLOCK_CONFLICT || attempts != 1)
            fail_msg("%s: got %s after %d attempt(s), want the database's "
                     "refusal at the first (message: %s)", in_mode(m, what),
                     sqllock_errname(rc), attempts, sqllock_errmsg(b));
        print_message("%s: %s (%s)\n", in_mode(m, what),
                      sqllock_errname(rc), sqllock_errmsg(b));
        if (pg_rr) {
            EXPECT_RC(b, rc, SQLLOCK_ESERIALIZATION, in_mode(m, what));
            assert_non_null(strstr(sqllock_errmsg(b), "roll it back"));
        }
        mode_end(a, m, 0);
        expect_record(own, key, "own", exists ? 2 : 1,
                      in_mode(m, "O2: the other writer's value stays"));
    }
done:
    sqllock_close(b);
    app_close(a);
    guard_close(own);
}

/* O2, D5 (issue 26 item 8): the retry helper on a borrowed session, at
 * each isolation level, with and without the application's transaction
 * (see record_update_in_mode()). */
static void test_borrow_O2_D5_record_update_after_snapshot(void **state)
{
    session_mode modes[8];
    int n, i;
    (void)state;

    n = session_modes(tu_url_driver(g_url), 0, modes, 8);
    for (i = 0; i < n; i++) {
        record_update_in_mode(&modes[i], 1);
        record_update_in_mode(&modes[i], 0);
    }
}

/* ------------------------------------------------------------------ */
/* Exclusion between processes                                          */
/* ------------------------------------------------------------------ */

typedef struct excl_arg {
    const char *name;
    int64_t id;
    int rounds;
} excl_arg;

/* One process: `rounds` times, in a transaction of its own on its own
 * connection: lock (joined), read the counter, write it + 1, commit. A
 * round whose lock or commit fails is rolled back and done again. */
static int excl_child(void *p)
{
    excl_arg *x = p;
    sqllock_txn_options o = SQLLOCK_TXN_OPTIONS_INIT;
    app *a = app_open(g_url, NULL);
    sqllock_db *b = NULL;
    int done = 0, tries = 0, failed = 0;

    if (sqllock_borrow(app_driver(a), app_native(a), NULL, &b) != SQLLOCK_OK) {
        fprintf(stderr, "child: borrow: %s\n", sqllock_errmsg(b));
        return 2;
    }
    o.lock_timeout_ms = tu_scaled_ms(10000);
    while (done < x->rounds && tries++ < x->rounds * 20) {
        sqllock_txn *t = NULL;
        int64_t v = 0, args[2];
        int ok;

        if (app_begin(a, 0) != APP_OK) {
            fprintf(stderr, "child: begin: %s\n", app_error(a));
            return 3;
        }
        ok = sqllock_txn_join(b, &o, &t) == SQLLOCK_OK &&
             sqllock_txn_lock(t, &x->name, 1, SQLLOCK_LOCK_WAIT, NULL) ==
                 SQLLOCK_OK;
        if (!ok)
            fprintf(stderr, "child %ld: lock: %s (retried)\n", (long)getpid(),
                    sqllock_errmsg(b));
        if (ok)
            ok = app_run(a, q(a, "SELECT val FROM " GUARD_TABLE " WHERE id "
                                 "= $1", "SELECT val FROM " GUARD_TABLE
                                 " WHERE id = ?"), &x->id, 1, NULL, 0, NULL,
                         &v) == APP_OK;
        args[0] = v + 1;
        args[1] = x->id;
        if (ok)
            ok = app_run(a, q(a, "UPDATE " GUARD_TABLE " SET val = $1 WHERE "
                                 "id = $2", "UPDATE " GUARD_TABLE " SET val "
                                 "= ? WHERE id = ?"), args, 2, NULL, 0, NULL,
                         NULL) == APP_OK;
        sqllock_txn_free(t);
        if (ok && app_exec(a, "COMMIT") == APP_OK) {
            done++;
            continue;
        }
        fprintf(stderr, "child %ld: round failed: %s\n", (long)getpid(),
                app_error(a));
        (void)app_exec(a, "ROLLBACK");
        failed++;
    }
    sqllock_close(b);
    /* SQLite serialises writers by itself: a round whose read raced
     * another's write fails at its own write (a stale snapshot) instead
     * of losing an increment. The lock, which takes the write lock
     * before the read, is what keeps every round from failing. */
    if (is_sqlite(a) && failed > 0) {
        fprintf(stderr, "child: R5: %d round(s) failed on SQLite: the "
                "joined lock did not hold the write lock\n", failed);
        app_close(a);
        return 5;
    }
    app_close(a);
    return done == x->rounds ? 0 : 4;
}

/* G2, R1, R5: 4 processes, each incrementing one counter with its own
 * statements inside its own transaction, under a row lock joined into
 * it: a read and a write that overlapped another process's would lose
 * an increment, so the counter must end exact (on SQLite, where such a
 * round fails instead, no round may fail). */
static void test_borrow_G2_R1_exclusion_between_processes(void **state)
{
    enum { PROCS = 4 };
    sqllock_db *own = guard_open();
    excl_arg x;
    pid_t pids[PROCS];
    char name[96];
    int i, bad;
    int64_t val = -1;
    (void)state;

    guard_name(name, sizeof name, "excl");
    x.name = name;
    x.id = guard_row(own);
    x.rounds = tu_slowdown_tool() > 2 ? 10 : 40;
    /* The children inherit no connection of the parent's (valgrind would
     * see its memory lost in each of them). */
    guard_close(own);
    for (i = 0; i < PROCS; i++)
        pids[i] = tu_fork_child(excl_child, &x, 600);
    bad = tu_reap_children(pids, PROCS, tu_scaled_ms(120000), NULL);
    assert_int_equal(bad, 0);
    own = guard_open();
    guard_read(own, x.id, &val, NULL, NULL);
    assert_int_equal(val, (int64_t)PROCS * x.rounds);
    guard_close(own);
}

/* ------------------------------------------------------------------ */
/* The connection                                                       */
/* ------------------------------------------------------------------ */

/* G2, C3: a borrowed connection that the server ended is not
 * reconnected: every call reports SQLLOCK_ECONNECT, saying so. */
static void test_borrow_G2_lost_connection_not_reconnected(void **state)
{
    app *a = app_open(g_url, NULL);
    sqllock_db *own = guard_open(), *b = borrow(a);
    sqllock_cell pid = SQLLOCK_NUMBER(0);
    char kill[64];
    void *v = NULL;
    size_t len = 0;
    int64_t version = 0;
    (void)state;

    pid.number = tu_backend_id(b);
    /* KILL takes no placeholder; the id is the server's own number. */
    snprintf(kill, sizeof kill, "KILL %lld", (long long)pid.number);
    EXPECT_RC(own, sqllock_db_exec(own, is_pg(a) ? "SELECT "
                                   "pg_catalog.pg_terminate_backend($1::int)" : kill,
                                   &pid, is_pg(a) ? 1 : 0, NULL, NULL, NULL),
              SQLLOCK_OK, "end the application's session");
    tu_sleep_ms(100);
    EXPECT_RC(b, sqllock_record_get(b, "lost", &v, &len, &version),
              SQLLOCK_ECONNECT, "a call on the lost connection");
    EXPECT_RC(b, sqllock_record_get(b, "lost", &v, &len, &version),
              SQLLOCK_ECONNECT, "the next call");
    assert_non_null(strstr(sqllock_errmsg(b), "does not reconnect"));
    sqllock_close(b);
    app_close(a);
    guard_close(own);
}

/* G2: libpq's nonblocking mode is the application's: a call on the
 * borrowed connection leaves it as it found it, either way. */
static void test_borrow_G2_pg_nonblocking_kept(void **state)
{
#ifdef SQLLOCK_HAVE_POSTGRES
    app *a = app_open(g_url, NULL);
    sqllock_db *b = borrow(a);
    PGconn *pg = app_native(a);
    int64_t version = 0;
    void *v = NULL;
    size_t len = 0;
    int mode;
    (void)state;

    for (mode = 1; mode >= 0; mode--) {
        assert_int_equal(PQsetnonblocking(pg, mode), 0);
        EXPECT_RC(b, sqllock_record_get(b, "nb", &v, &len, &version),
                  SQLLOCK_NOTFOUND, "a call");
        assert_int_equal(PQisnonblocking(pg), mode);
    }
    sqllock_close(b);
    app_close(a);
#else
    (void)state;
    skip();
#endif
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_borrow_G2_E2_bad_input_and_refusals,
                                  guard_teardown),
        cmocka_unit_test_teardown(test_borrow_G2_joined_commit_and_rollback,
                                  guard_teardown),
        cmocka_unit_test_teardown(test_borrow_G2_own_txn_on_borrowed,
                                  guard_teardown),
        cmocka_unit_test_teardown(test_borrow_G2_R5_app_rows_and_skip_locked,
                                  guard_teardown),
        cmocka_unit_test_teardown(
            test_borrow_G2_R3_new_name_first_locked_in_app_txn,
            guard_teardown),
        cmocka_unit_test_teardown(
            test_borrow_G2_R7_wait_put_back_and_failed_lock, guard_teardown),
        cmocka_unit_test_teardown(test_borrow_G1_G2_guarded_update_in_app_txn,
                                  guard_teardown),
        cmocka_unit_test_teardown(
            test_borrow_D5_O1_G1_G2_calls_per_session_mode, guard_teardown),
        cmocka_unit_test_teardown(
            test_borrow_D5_O1_G1_G2_calls_with_found_rows, guard_teardown),
        cmocka_unit_test_teardown(
            test_borrow_O2_D5_record_update_after_snapshot, guard_teardown),
        cmocka_unit_test_teardown(
            test_borrow_G2_R1_exclusion_between_processes, guard_teardown),
        cmocka_unit_test_teardown(
            test_borrow_G2_lost_connection_not_reconnected, guard_teardown),
        cmocka_unit_test_teardown(test_borrow_G2_pg_nonblocking_kept,
                                  guard_teardown),
    };

    tu_not_on("sqlite", "test_borrow_G2_lost_connection_not_reconnected",
              "an embedded database has no server to end the session");
    tu_not_on("sqlite", "test_borrow_G2_pg_nonblocking_kept",
              "libpq's mode");
    tu_not_on("mysql", "test_borrow_G2_pg_nonblocking_kept", "libpq's mode");
    tu_not_on("sqlite", "test_borrow_D5_O1_G1_G2_calls_with_found_rows",
              "CLIENT_FOUND_ROWS is a MySQL client flag");
    tu_not_on("postgres", "test_borrow_D5_O1_G1_G2_calls_with_found_rows",
              "CLIENT_FOUND_ROWS is a MySQL client flag");
    return TU_RUN_PER_URL("borrow", &g_url, tests, guard_group_setup, NULL);
}
