/*
 * killed.c -- test_txnfail: a connection killed under the transaction
 * (R7), after a write and under a lock call.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <signal.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "test_util.h"
#include "test_run.h"
#include "txnfail.h"

/* ------------------------------------------------------------------ */
/* A connection killed under the transaction                           */
/* ------------------------------------------------------------------ */

/* Kills connection `id` from db2 and waits until it is gone. */
static void kill_conn(const fixture *f, sqllock_db *db2, int64_t id)
{
    sqllock_value v = sqllock__int(id);
    int64_t deadline = tu_now_ms() + 10000, n = 1;
    int rc;

    if (tf_is_driver(f, "postgres")) {
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
    while (n != 0) {
        int has_row = 0;
        rc = sqllock__exec_sql(db2, tf_is_driver(f, "postgres") ?
                               "SELECT COUNT(*) FROM pg_stat_activity "
                               "WHERE pid = $1" :
                               "SELECT COUNT(*) FROM "
                               "information_schema.processlist WHERE id = ?",
                               &v, 1, &has_row, &n, NULL);
        if (rc != SQLLOCK_OK)
            fail_msg("checking connection %lld: %s", (long long)id,
                     sqllock_errmsg(db2));
        if (n != 0 && tu_now_ms() > deadline)
            fail_msg("connection %lld still exists 10 s after the kill",
                     (long long)id);
        if (n != 0)
            tu_sleep_ms(20);
    }
}

/* R7: after a call that lost the connection, the next calls do not
 * reconnect and run outside the transaction: they fail with
 * SQLLOCK_ECONNECT, and so does the commit. */
void test_txnfail_R7_lost_connection_poisons_txn(void **state)
{
    fixture *f = *state;
    problems p = { { 0 }, 0 };
    sqllock_db *db, *db2;
    sqllock_txn *t;
    dl_keys k;
    int rc;

    if (tf_is_driver(f, "sqlite")) {
        tf_sqlite_no_failure(f, "kill");
        return;
    }
    tf_dl_keys_make(f, "kill", &k);
    db = tf_open_handle();
    db2 = tf_open_handle();
    t = tf_dl_start(db, &k);
    kill_conn(f, db2, tf_conn_id(f, db));
    rc = sqllock_record_cas(db, k.b, 1, "A", 1, NULL);
    if (rc != SQLLOCK_ECONNECT)
        fail_msg("[%s] the write after the kill: got %s, want "
                 "SQLLOCK_ECONNECT: %s", f->driver, sqllock_errname(rc),
                 sqllock_errmsg(db));
    tf_expect_all_refused(&p, db, db2, t, k.c, k.fresh, k.gate_a,
                          SQLLOCK_ECONNECT);
    EXPECT_RC(db, sqllock_txn_rollback(t), SQLLOCK_OK,
              "rollback after the lost connection");
    tf_free_txn(t);
    tf_expect_version(&p, db2, k.a, 1, "the server rolled A's write back");
    tf_expect_version(&p, db2, k.b, 1, "the write that lost the connection");
    tf_expect_handle_works(&p, db, db2, k.gate_a, k.c);
    tf_close_handle(db);
    tf_close_handle(db2);
    tf_report(&p, f->driver);
}

/* R7: the same when the connection was lost under a lock call: the
 * record calls after it fail with SQLLOCK_ECONNECT, without
 * reconnecting. */
void test_txnfail_R7_lost_connection_in_lock_call(void **state)
{
    fixture *f = *state;
    problems p = { { 0 }, 0 };
    sqllock_db *db, *db2;
    sqllock_txn *t;
    char second[96];
    const char *sp;
    dl_keys k;
    int rc;

    if (tf_is_driver(f, "sqlite")) {
        tf_sqlite_no_failure(f, "killlock");
        return;
    }
    tf_dl_keys_make(f, "killlock", &k);
    sp = tf_name_of(f, "killlock", "second", second, sizeof second);
    db = tf_open_handle();
    db2 = tf_open_handle();
    t = tf_dl_start(db, &k);
    kill_conn(f, db2, tf_conn_id(f, db));
    rc = sqllock_txn_lock(t, &sp, 1, SQLLOCK_LOCK_WAIT, NULL);
    if (rc != SQLLOCK_ECONNECT)
        fail_msg("[%s] the lock call after the kill: got %s, want "
                 "SQLLOCK_ECONNECT: %s", f->driver, sqllock_errname(rc),
                 sqllock_errmsg(db));
    tf_expect_all_refused(&p, db, db2, t, k.c, k.fresh, k.gate_a,
                          SQLLOCK_ECONNECT);
    EXPECT_RC(db, sqllock_txn_rollback(t), SQLLOCK_OK,
              "rollback after the lost connection");
    tf_free_txn(t);
    tf_expect_version(&p, db2, k.a, 1, "the server rolled A's write back");
    tf_expect_handle_works(&p, db, db2, k.gate_a, k.c);
    tf_close_handle(db);
    tf_close_handle(db2);
    tf_report(&p, f->driver);
}
