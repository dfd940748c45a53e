/*
 * faults.c -- test_rowlock: rollback on free (R6), commit after a failed
 * statement (R4), a connection killed under a transaction (R3), bad
 * input (E2).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "test_util.h"
#include "test_run.h"
#include "rowlock.h"

/* ------------------------------------------------------------------ */
/* Free without commit rolls back                                      */
/* ------------------------------------------------------------------ */

void test_rowlock_R6_free_without_commit_rolls_back(void **state)
{
    fixture *f = *state;
    char z[128];
    const char *zp = lname(f, z, sizeof z, "r6-z");
    sqllock_txn *t = NULL, *t2 = NULL;
    sqllock_db *db2;
    sqllock_value v[2];
    int64_t t0, ms, inside = -1;
    int has_row = 0;

    tu_exec_ok(f->db, "DELETE FROM %s", f->kv, NULL, 0);
    v[0] = sqllock__int(7);
    v[1] = sqllock__int(1);
    tu_exec_ok(f->db, f->sql->kv_insert, f->kv, v, 2);
    db2 = open_second();

    EXPECT_RC(f->db, sqllock_txn_begin(f->db, NULL, &t), SQLLOCK_OK, "begin");
    EXPECT_RC(f->db, sqllock_txn_lock(t, &zp, 1, SQLLOCK_LOCK_WAIT, NULL),
              SQLLOCK_OK, "lock z");
    v[0] = sqllock__int(99);
    v[1] = sqllock__int(7);
    tu_exec_ok(f->db, f->sql->kv_set, f->kv, v, 2);
    v[0] = sqllock__int(7);
    EXPECT_RC(f->db, tu_exec_on(f->db, f->sql->kv_get, f->kv, v, 1, &has_row,
                                &inside, NULL), SQLLOCK_OK,
              "read inside the transaction");
    assert_int_equal(inside, 99);
    sqllock_txn_free(t);

    /* The update is gone, seen from both handles. */
    v[0] = sqllock__int(7);
    if (query_int(db2, f->sql->kv_get, f->kv, v, 1) != 1)
        fail_msg("the update made inside a freed transaction is visible "
                 "to another handle");
    if (query_int(f->db, f->sql->kv_get, f->kv, v, 1) != 1)
        fail_msg("the update made inside a freed transaction is visible "
                 "on its own handle");
    /* z is free at once. */
    EXPECT_RC(db2, sqllock_txn_begin(db2, NULL, &t2), SQLLOCK_OK,
              "begin on another handle");
    t0 = tu_now_ms();
    EXPECT_RC(db2, sqllock_txn_lock(t2, &zp, 1, SQLLOCK_LOCK_NOWAIT, NULL),
              SQLLOCK_OK, "NOWAIT on z after the holder's free");
    ms = tu_now_ms() - t0;
    if (ms >= nowait_bound_ms())
        fail_msg("NOWAIT took %lld ms", (long long)ms);
    EXPECT_RC(db2, sqllock_txn_commit(t2), SQLLOCK_OK, "commit");
    sqllock_txn_free(t2);
    /* And the first handle begins again. */
    t = NULL;
    EXPECT_RC(f->db, sqllock_txn_begin(f->db, NULL, &t), SQLLOCK_OK,
              "begin again on the freed transaction's handle");
    EXPECT_RC(f->db, sqllock_txn_lock(t, &zp, 1, SQLLOCK_LOCK_NOWAIT, NULL),
              SQLLOCK_OK, "NOWAIT on z again");
    EXPECT_RC(f->db, sqllock_txn_commit(t), SQLLOCK_OK, "commit");
    sqllock_txn_free(t);
    sqllock_close(db2);
}

/* ------------------------------------------------------------------ */
/* Commit tells the truth after a failed statement of the application  */
/* ------------------------------------------------------------------ */

/* One of the application's statements fails inside the transaction (a
 * duplicate key). SQLite and MySQL undo that statement only; PostgreSQL
 * aborts the whole transaction and answers a later COMMIT by rolling
 * back. Either way the status of sqllock_txn_commit() must say what
 * happened: OK only if the earlier update was really committed. */
void test_rowlock_R4_commit_reports_what_happened(void **state)
{
    fixture *f = *state;
    sqllock_table kt;
    sqllock_cell key = SQLLOCK_NUMBER(8);
    sqllock_txn *t = NULL;
    sqllock_db *db2;
    sqllock_value v[2];
    int64_t after;
    int rc, got = -1;

    kt.table = f->kv;
    kt.key_column = "id";
    kt.version_column = NULL;
    tu_exec_ok(f->db, "DELETE FROM %s", f->kv, NULL, 0);
    v[0] = sqllock__int(8);
    v[1] = sqllock__int(1);
    tu_exec_ok(f->db, f->sql->kv_insert, f->kv, v, 2);
    db2 = open_second();

    EXPECT_RC(f->db, sqllock_txn_begin(f->db, NULL, &t), SQLLOCK_OK, "begin");
    assert_non_null(sqllock_txn_native(t));
    EXPECT_RC(f->db, sqllock_txn_lock_rows(t, &kt, &key, 1, SQLLOCK_LOCK_WAIT,
                                           &got), SQLLOCK_OK, "lock row 8");
    v[0] = sqllock__int(42);
    v[1] = sqllock__int(8);
    tu_exec_ok(f->db, f->sql->kv_set, f->kv, v, 2);
    v[0] = sqllock__int(8);
    v[1] = sqllock__int(5);
    rc = tu_exec_on(f->db, f->sql->kv_insert, f->kv, v, 2, NULL, NULL, NULL);
    if (rc == SQLLOCK_OK)
        fail_msg("inserting a duplicate key succeeded");
    rc = sqllock_txn_commit(t);
    v[0] = sqllock__int(8);
    after = query_int(db2, f->sql->kv_get, f->kv, v, 1);
    printf("    commit [%s] after a failed statement: %s (%s); the row "
           "holds %lld\n", f->driver, sqllock_errname(rc),
           sqllock_errmsg(f->db), (long long)after);
    sqllock_txn_free(t);
    /* Cleaned up before failing, so that a failure is not also a leak. */
    if ((rc == SQLLOCK_OK && after != 42) || (rc != SQLLOCK_OK && after != 1))
        sqllock_close(db2);
    if (rc == SQLLOCK_OK && after != 42)
        fail_msg("sqllock_txn_commit() returned SQLLOCK_OK but the update "
                 "made in the transaction was not committed (the row holds "
                 "%lld, want 42): the database rolled the transaction back",
                 (long long)after);
    if (rc != SQLLOCK_OK && after != 1)
        fail_msg("sqllock_txn_commit() returned %s but the update was "
                 "committed", sqllock_errname(rc));
    /* The handle works again. */
    t = NULL;
    EXPECT_RC(f->db, sqllock_txn_begin(f->db, NULL, &t), SQLLOCK_OK,
              "begin after");
    EXPECT_RC(f->db, sqllock_txn_lock_rows(t, &kt, &key, 1,
                                           SQLLOCK_LOCK_NOWAIT, &got),
              SQLLOCK_OK, "lock row 8 after");
    EXPECT_RC(f->db, sqllock_txn_commit(t), SQLLOCK_OK, "commit after");
    sqllock_txn_free(t);
    sqllock_close(db2);
}

/* ------------------------------------------------------------------ */
/* A connection killed under a transaction                             */
/* ------------------------------------------------------------------ */

/* The server's id of the transaction's connection, read inside it, and
 * checked against the driver's own call on sqllock_txn_native(). */
static int64_t txn_conn_id(fixture *f, sqllock_txn *t)
{
    void *native = sqllock_txn_native(t);
    int64_t id;

    if (native == NULL)
        fail_msg("sqllock_txn_native() is NULL on an open transaction");
    id = query_int(f->db, f->sql->conn_id, "", NULL, 0);
    /* Through a pooler the client's backend id is the pooler's. */
    if (is_driver(f, "postgres") && PQbackendPID != NULL &&
        !tu_url_pooled(g_url) && PQbackendPID(native) != id)
        fail_msg("PQbackendPID(sqllock_txn_native()) is %d, but the "
                 "transaction runs on backend %lld", PQbackendPID(native),
                 (long long)id);
    if (is_driver(f, "mysql") && mysql_thread_id != NULL &&
        (int64_t)mysql_thread_id(native) != id)
        fail_msg("mysql_thread_id(sqllock_txn_native()) is %lu, but the "
                 "transaction runs on connection %lld",
                 mysql_thread_id(native), (long long)id);
    return id;
}

/* Kills connection `id` from `db2` and waits until the server has let it
 * go. */
static void kill_conn(fixture *f, sqllock_db *db2, int64_t id)
{
    sqllock_value v = sqllock__int(id);
    int64_t deadline;
    int rc;

    if (is_driver(f, "postgres")) {
        rc = sqllock__exec_sql(db2, "SELECT CASE WHEN pg_catalog.pg_terminate_backend("
                               "CAST($1 AS integer)) THEN 1 ELSE 0 END",
                               &v, 1, NULL, NULL, NULL);
    } else {
        char sql[64];
        snprintf(sql, sizeof sql, "KILL %lld", (long long)id);
        rc = sqllock__exec_sql(db2, sql, NULL, 0, NULL, NULL, NULL);
    }
    if (rc != SQLLOCK_OK)
        fail_msg("killing connection %lld: %s: %s", (long long)id,
                 sqllock_errname(rc), sqllock_errmsg(db2));
    deadline = tu_now_ms() + 10000;
    while (query_int(db2, f->sql->conn_alive, "", &v, 1) != 0) {
        if (tu_now_ms() > deadline)
            fail_msg("connection %lld still exists 10 s after the kill",
                     (long long)id);
        tu_sleep_ms(20);
    }
}

/* Another handle can take `name` (waiting up to 5 s for the server to
 * finish ending the dead transaction), then lets go. */
static void expect_free(sqllock_db *db2, const char *name, const char *what)
{
    sqllock_txn_options o = txn_opts(5000);
    sqllock_txn *t = NULL;
    int got = -1;

    EXPECT_RC(db2, sqllock_txn_begin(db2, &o, &t), SQLLOCK_OK, what);
    EXPECT_RC(db2, sqllock_txn_lock(t, &name, 1, SQLLOCK_LOCK_WAIT, &got),
              SQLLOCK_OK, what);
    assert_int_equal(got, 1);
    EXPECT_RC(db2, sqllock_txn_commit(t), SQLLOCK_OK, what);
    sqllock_txn_free(t);
}

void test_rowlock_R3_killed_connection(void **state)
{
    fixture *f = *state;
    char d[128], d2[128];
    const char *dp = lname(f, d, sizeof d, "kill-d");
    const char *d2p = lname(f, d2, sizeof d2, "kill-d2");
    sqllock_txn *t = NULL;
    sqllock_db *db2;
    int64_t id;
    int rc;

    db2 = open_second();

    /* Killed, then the next lock. */
    EXPECT_RC(f->db, sqllock_txn_begin(f->db, NULL, &t), SQLLOCK_OK, "begin");
    EXPECT_RC(f->db, sqllock_txn_lock(t, &dp, 1, SQLLOCK_LOCK_WAIT, NULL),
              SQLLOCK_OK, "lock d");
    id = txn_conn_id(f, t);
    kill_conn(f, db2, id);
    rc = sqllock_txn_lock(t, &d2p, 1, SQLLOCK_LOCK_WAIT, NULL);
    expect_status(f->db, rc, SQLLOCK_ECONNECT, "lock after the connection "
                  "was killed", NULL);
    if (sqllock_retryable(rc))
        fail_msg("sqllock_retryable(SQLLOCK_ECONNECT) is 1");
    EXPECT_RC(f->db, sqllock_txn_commit(t), SQLLOCK_EMISUSE,
              "commit after the connection was lost");
    EXPECT_RC(f->db, sqllock_txn_rollback(t), SQLLOCK_OK,
              "rollback after the connection was lost");
    sqllock_txn_free(t);
    expect_free(db2, dp, "d is free after its holder's connection died");
    expect_free(db2, d2p, "d2 was never locked");

    /* The handle works again. */
    t = NULL;
    EXPECT_RC(f->db, sqllock_txn_begin(f->db, NULL, &t), SQLLOCK_OK,
              "begin on the handle whose connection was killed");
    EXPECT_RC(f->db, sqllock_txn_lock(t, &dp, 1, SQLLOCK_LOCK_NOWAIT, NULL),
              SQLLOCK_OK, "lock on the reconnected handle");

    /* Killed, then commit. */
    id = txn_conn_id(f, t);
    kill_conn(f, db2, id);
    rc = sqllock_txn_commit(t);
    expect_status(f->db, rc, SQLLOCK_ECONNECT, "commit after the connection "
                  "was killed", NULL);
    EXPECT_RC(f->db, sqllock_txn_commit(t), SQLLOCK_EMISUSE,
              "a second commit");
    sqllock_txn_free(t);
    expect_free(db2, dp, "d is free after the failed commit");

    t = NULL;
    EXPECT_RC(f->db, sqllock_txn_begin(f->db, NULL, &t), SQLLOCK_OK,
              "begin after the failed commit");
    EXPECT_RC(f->db, sqllock_txn_lock(t, &dp, 1, SQLLOCK_LOCK_NOWAIT, NULL),
              SQLLOCK_OK, "lock after the failed commit");
    EXPECT_RC(f->db, sqllock_txn_commit(t), SQLLOCK_OK, "commit");
    sqllock_txn_free(t);
    sqllock_close(db2);
}

/* ------------------------------------------------------------------ */
/* Bad input                                                           */
/* ------------------------------------------------------------------ */

/* Rows in sqllock_row named `name`, read through `db` (inside its open
 * transaction, if any, so that its own inserts count). */
static int64_t lock_rows_named(fixture *f, sqllock_db *db, const char *name)
{
    sqllock_value v = sqllock__text(name);
    return query_int(db, f->sql->row_count, "", &v, 1);
}

void test_rowlock_E2_bad_input(void **state)
{
    fixture *f = *state;
    sqllock_db *db = f->db, *db2;
    char guard[128], first[128], long_name[300], many[65][48];
    const char *gp = lname(f, guard, sizeof guard, "bad-guard");
    const char *fp = lname(f, first, sizeof first, "bad-first");
    const char *list[2], *manyp[65];
    const char *badname[5];
    const char *badwhy[5] = { "an empty name", "a 256-byte name",
                              "a name with invalid UTF-8",
                              "a name with a control character",
                              "a NULL name" };
    sqllock_txn *t = NULL, *t2 = (sqllock_txn *)&t2;
    sqllock_txn_options o;
    sqllock_table good = { NULL, "id", NULL };
    sqllock_cell key = SQLLOCK_NUMBER(7), keys[65];
    int got[65], i, rc;
    static const struct { const char *table, *column, *why; } badt[] = {
        { NULL, "id", "a NULL table name" },
        { "", "id", "an empty table name" },
        { "kv; DROP TABLE x", "id", "a table name with SQL in it" },
        { "1kv", "id", "a table name that starts with a digit" },
        { "kv\"x", "id", "a table name with a quote" },
        { "KV", NULL, "a NULL key column" },
        { "KV", "", "an empty key column" },
        { "KV", "id = id OR 1", "a key column with SQL in it" },
        { "KV", "a234567890123456789012345678901234567890123456789012345678901234",
          "a 64-byte key column" },
    };

    good.table = f->kv;
    memset(long_name, 'n', 256);
    long_name[256] = '\0';
    badname[0] = "";
    badname[1] = long_name;
    badname[2] = "rl-\xff\xfe-bad";
    badname[3] = "rl-a\nb";
    badname[4] = NULL;
    for (i = 0; i < 65; i++) {
        snprintf(many[i], sizeof many[i], "%sm%d", f->prefix, i);
        manyp[i] = many[i];
        keys[i].column = NULL;
        keys[i].op = SQLLOCK_OP_SET;
        keys[i].text = NULL;
        keys[i].number = i + 1;
    }
    db2 = open_second();

    /* begin. */
    expect_status(NULL, sqllock_txn_begin(NULL, NULL, &t), SQLLOCK_EINVAL,
                  "begin on a NULL db", NULL);
    assert_null(t);
    expect_status(db, sqllock_txn_begin(db, NULL, NULL), SQLLOCK_EINVAL,
                  "begin with a NULL out", "null|out|argument");
    o = txn_opts(-1);
    t = (sqllock_txn *)&t;
    expect_status(db, sqllock_txn_begin(db, &o, &t), SQLLOCK_EINVAL,
                  "begin with lock_timeout_ms -1", "timeout");
    assert_null(t);

    /* An open transaction holding the guard name. */
    EXPECT_RC(db, sqllock_txn_begin(db, NULL, &t), SQLLOCK_OK, "begin");
    EXPECT_RC(db, sqllock_txn_lock(t, &gp, 1, SQLLOCK_LOCK_WAIT, NULL),
              SQLLOCK_OK, "lock the guard");
    expect_status(db, sqllock_txn_begin(db, NULL, &t2), SQLLOCK_EMISUSE,
                  "a second begin on a handle with an open transaction",
                  "transaction");
    if (t2 != NULL && t2 != (sqllock_txn *)&t2)
        fail_msg("the refused second begin set *out");

    /* lock. */
    expect_status(NULL, sqllock_txn_lock(NULL, &gp, 1, SQLLOCK_LOCK_WAIT,
                                         NULL), SQLLOCK_EINVAL,
                  "lock on a NULL transaction", NULL);
    expect_status(db, sqllock_txn_lock(t, NULL, 1, SQLLOCK_LOCK_WAIT, NULL),
                  SQLLOCK_EINVAL, "lock with NULL names", "name|null");
    expect_status(db, sqllock_txn_lock(t, &fp, 0, SQLLOCK_LOCK_WAIT, NULL),
                  SQLLOCK_EINVAL, "lock of 0 names", "0|count|number|names");
    expect_status(db, sqllock_txn_lock(t, &fp, -1, SQLLOCK_LOCK_WAIT, NULL),
                  SQLLOCK_EINVAL, "lock of -1 names",
                  "-1|count|number|names");
    expect_status(db, sqllock_txn_lock(t, manyp, 65, SQLLOCK_LOCK_WAIT, got),
                  SQLLOCK_EINVAL, "lock of 65 names", "64|65|many|names");
    expect_status(db, sqllock_txn_lock(t, &fp, 1, (sqllock_lock_mode)7,
                                       NULL),
                  SQLLOCK_EINVAL, "lock with mode 7", "mode");
    list[0] = fp;
    for (i = 0; i < 5; i++) {
        char what[128];
        list[1] = badname[i];
        snprintf(what, sizeof what, "lock of {a good name, %s}", badwhy[i]);
        expect_status(db, sqllock_txn_lock(t, list, 2, SQLLOCK_LOCK_WAIT,
                                           got), SQLLOCK_EINVAL, what,
                      "name");
        snprintf(what, sizeof what, "lock of {%s} with SKIP_LOCKED",
                 badwhy[i]);
        expect_status(db, sqllock_txn_lock(t, &badname[i], 1,
                                           SQLLOCK_LOCK_SKIP_LOCKED, got),
                      SQLLOCK_EINVAL, what, "name");
    }

    /* lock_rows. */
    expect_status(NULL, sqllock_txn_lock_rows(NULL, &good, &key, 1,
                                              SQLLOCK_LOCK_WAIT, NULL),
                  SQLLOCK_EINVAL, "lock_rows on a NULL transaction", NULL);
    expect_status(db, sqllock_txn_lock_rows(t, NULL, &key, 1,
                                            SQLLOCK_LOCK_WAIT, NULL),
                  SQLLOCK_EINVAL, "lock_rows with a NULL table", "table");
    expect_status(db, sqllock_txn_lock_rows(t, &good, NULL, 1,
                                            SQLLOCK_LOCK_WAIT, NULL),
                  SQLLOCK_EINVAL, "lock_rows with NULL keys", "key|null");
    expect_status(db, sqllock_txn_lock_rows(t, &good, keys, 0,
                                            SQLLOCK_LOCK_WAIT, NULL),
                  SQLLOCK_EINVAL, "lock_rows of 0 keys",
                  "0|count|number|keys");
    expect_status(db, sqllock_txn_lock_rows(t, &good, keys, 65,
                                            SQLLOCK_LOCK_WAIT, got),
                  SQLLOCK_EINVAL, "lock_rows of 65 keys", "64|65|many|keys");
    expect_status(db, sqllock_txn_lock_rows(t, &good, keys, 1,
                                            (sqllock_lock_mode)-1, NULL),
                  SQLLOCK_EINVAL, "lock_rows with mode -1", "mode");
    for (i = 0; i < (int)(sizeof badt / sizeof badt[0]); i++) {
        sqllock_table bt;
        char what[160];
        bt.table = badt[i].table != NULL && strcmp(badt[i].table, "KV") == 0
                   ? f->kv : badt[i].table;
        bt.key_column = badt[i].column;
        bt.version_column = NULL;
        snprintf(what, sizeof what, "lock_rows with %s", badt[i].why);
        expect_status(db, sqllock_txn_lock_rows(t, &bt, &key, 1,
                                                SQLLOCK_LOCK_WAIT, got),
                      SQLLOCK_EINVAL, what,
                      "identifier|table|column|name");
    }

    /* Nothing changed: the transaction is open and holds the guard, the
     * good name in the refused lists was neither locked nor created. */
    if (lock_rows_named(f, db, fp) != 0)
        fail_msg("a refused lock list created the row of its good name");
    if (lock_rows_named(f, db, long_name) != 0)
        fail_msg("a refused lock list created a row for a 256-byte name");
    {
        sqllock_txn *o2 = NULL;
        EXPECT_RC(db2, sqllock_txn_begin(db2, NULL, &o2), SQLLOCK_OK,
                  "begin on another handle");
        rc = sqllock_txn_lock(o2, &gp, 1, SQLLOCK_LOCK_NOWAIT, NULL);
        sqllock_txn_free(o2);
        if (rc != SQLLOCK_ELOCKED)
            fail_msg("after the refused calls the guard is not held any "
                     "more: NOWAIT from another handle got %s (%s)",
                     sqllock_errname(rc), sqllock_errmsg(db2));
    }
    EXPECT_RC(db, sqllock_txn_lock(t, &fp, 1, SQLLOCK_LOCK_WAIT, got),
              SQLLOCK_OK, "a good lock after the refused calls");
    EXPECT_RC(db, sqllock_txn_commit(t), SQLLOCK_OK,
              "commit after the refused calls");

    /* After commit. */
    expect_status(db, sqllock_txn_lock(t, &gp, 1, SQLLOCK_LOCK_WAIT, NULL),
                  SQLLOCK_EMISUSE, "lock after commit",
                  "transaction|commit|over|ended");
    expect_status(db, sqllock_txn_lock_rows(t, &good, &key, 1,
                                            SQLLOCK_LOCK_WAIT, NULL),
                  SQLLOCK_EMISUSE, "lock_rows after commit",
                  "transaction|commit|over|ended");
    expect_status(db, sqllock_txn_commit(t), SQLLOCK_EMISUSE,
                  "commit after commit", "transaction|commit|over|ended");
    expect_status(db, sqllock_txn_commit_exec(t, "SELECT 1", NULL, 0, NULL),
                  SQLLOCK_EMISUSE, "commit_exec after commit",
                  "transaction|commit|over|ended");
    EXPECT_RC(db, sqllock_txn_rollback(t), SQLLOCK_OK,
              "rollback after commit");
    sqllock_txn_free(t);
    expect_status(NULL, sqllock_txn_commit(NULL), SQLLOCK_EINVAL,
                  "commit of a NULL transaction", NULL);
    expect_status(NULL, sqllock_txn_commit_exec(NULL, "SELECT 1", NULL, 0,
                                                NULL),
                  SQLLOCK_EINVAL, "commit_exec of a NULL transaction", NULL);
    rc = sqllock_txn_rollback(NULL);
    if (rc != SQLLOCK_EINVAL && rc != SQLLOCK_OK)
        fail_msg("rollback of a NULL transaction: %s", sqllock_errname(rc));
    assert_null(sqllock_txn_native(NULL));
    sqllock_txn_free(NULL);

    /* The handle still works, and the guard is free. */
    t = NULL;
    EXPECT_RC(db, sqllock_txn_begin(db, NULL, &t), SQLLOCK_OK,
              "begin after all the bad input");
    EXPECT_RC(db, sqllock_txn_lock(t, &gp, 1, SQLLOCK_LOCK_NOWAIT, NULL),
              SQLLOCK_OK, "lock the guard again");
    EXPECT_RC(db, sqllock_txn_commit(t), SQLLOCK_OK, "commit");
    sqllock_txn_free(t);
    sqllock_close(db2);
}
