/*
 * lockcall.c -- test_txnfail: a row-lock call that failed (R7), and
 * lease calls refused while a row-lock transaction is open (R8).
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
/* A row-lock call that failed                                         */
/* ------------------------------------------------------------------ */

/* R7 (with R3): a NOWAIT that finds the row locked ends the transaction
 * (SQLLOCK_ELOCKED, rolled back); the record calls after it on the same
 * handle must not run outside it. On PostgreSQL and MySQL the
 * transaction has written a record first; on SQLite the NOWAIT of the
 * first lock call finds the database locked by another handle (R5), and
 * the record calls come after that handle has let go. */
void test_txnfail_R7_failed_lock_call_poisons_txn(void **state)
{
    fixture *f = *state;
    problems p = { { 0 }, 0 };
    sqllock_db *db, *db2;
    sqllock_txn *t, *t2;
    char held[96];
    const char *hp;
    dl_keys k;
    int rc;

    tf_dl_keys_make(f, "nowait", &k);
    hp = tf_name_of(f, "nowait", "held", held, sizeof held);
    db = tf_open_handle();
    db2 = tf_open_handle();
    if (tf_is_driver(f, "sqlite")) {
        tf_make_record(db, k.a);
        tf_make_record(db, k.c);
        t = tf_begin(db);
        t2 = tf_begin(db2);
        tf_lock1(db2, t2, hp);                 /* the database's write lock */
        rc = sqllock_txn_lock(t, &hp, 1, SQLLOCK_LOCK_NOWAIT, NULL);
        EXPECT_RC(db2, sqllock_txn_commit(t2), SQLLOCK_OK,
                  "the other handle lets go");
        tf_free_txn(t2);
    } else {
        t2 = tf_begin(db2);
        tf_lock1(db2, t2, hp);
        t = tf_dl_start(db, &k);
        rc = sqllock_txn_lock(t, &hp, 1, SQLLOCK_LOCK_NOWAIT, NULL);
    }
    if (rc != SQLLOCK_ELOCKED)
        fail_msg("[%s] NOWAIT on the locked row: got %s, want "
                 "SQLLOCK_ELOCKED: %s", f->driver, sqllock_errname(rc),
                 sqllock_errmsg(db));
    if (!tf_is_driver(f, "sqlite")) {
        EXPECT_RC(db2, sqllock_txn_commit(t2), SQLLOCK_OK,
                  "the other handle lets go");
        tf_free_txn(t2);
    }
    tf_expect_all_refused(&p, db, db2, t, k.c, k.fresh, k.gate_a,
                          SQLLOCK_ELOCKED);
    EXPECT_RC(db, sqllock_txn_rollback(t), SQLLOCK_OK,
              "rollback after the failed lock call");
    tf_free_txn(t);
    tf_expect_version(&p, db2, k.a, 1, "the transaction's write was rolled "
                      "back");
    tf_expect_handle_works(&p, db, db2, k.gate_a, k.c);
    tf_close_handle(db);
    tf_close_handle(db2);
    tf_report(&p, f->driver);
}

/* R8: while a row-lock transaction is open on a handle -- begun but not
 * started, and started by a lock call -- a lease call on that handle that
 * would send a statement is refused with SQLLOCK_EMISUSE and sends
 * nothing: no grant, renewal or release that cannot commit on its own
 * (C2; on MySQL the grant's START TRANSACTION committed the row-lock
 * transaction, on PostgreSQL the grant stayed inside it). The lease held
 * from before stays held, the transaction still commits, and after it
 * the same calls work. */
static void r8_expect_refused(const fixture *f, sqllock_db *db,
                              sqllock_lease *held, sqllock_lease *fresh,
                              const char *when)
{
    int64_t deleted = -1;
    int rc;

    rc = sqllock_lease_try_acquire(fresh);
    if (rc != SQLLOCK_EMISUSE)
        fail_msg("[%s] %s: try_acquire got %s, want SQLLOCK_EMISUSE: %s",
                 f->driver, when, sqllock_errname(rc), sqllock_errmsg(db));
    assert_non_null(strstr(sqllock_errmsg(db), "transaction"));
    rc = sqllock_lease_acquire(fresh, 0);
    if (rc != SQLLOCK_EMISUSE)
        fail_msg("[%s] %s: acquire got %s, want SQLLOCK_EMISUSE: %s",
                 f->driver, when, sqllock_errname(rc), sqllock_errmsg(db));
    rc = sqllock_lease_renew(held);
    if (rc != SQLLOCK_EMISUSE)
        fail_msg("[%s] %s: renew got %s, want SQLLOCK_EMISUSE: %s",
                 f->driver, when, sqllock_errname(rc), sqllock_errmsg(db));
    rc = sqllock_lease_release(held);
    if (rc != SQLLOCK_EMISUSE)
        fail_msg("[%s] %s: release got %s, want SQLLOCK_EMISUSE: %s",
                 f->driver, when, sqllock_errname(rc), sqllock_errmsg(db));
    rc = sqllock_reap(db, 0, 10, &deleted);
    if (rc != SQLLOCK_EMISUSE)
        fail_msg("[%s] %s: reap got %s, want SQLLOCK_EMISUSE: %s",
                 f->driver, when, sqllock_errname(rc), sqllock_errmsg(db));
    assert_int_equal(sqllock_lease_held(held), 1);
    assert_int_equal(sqllock_lease_held(fresh), 0);
}

/* Whether another handle can take `name` now (and gives it back). */
static int r8_free_elsewhere(sqllock_db *db2, const char *name)
{
    sqllock_lease_options lo = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_lease *l = NULL;
    int rc;

    lo.ttl_ms = 30000;
    EXPECT_RC(db2, sqllock_lease_new(db2, name, &lo, &l), SQLLOCK_OK,
              "lease on the other handle");
    rc = sqllock_lease_try_acquire(l);
    if (rc == SQLLOCK_OK)
        EXPECT_RC(db2, sqllock_lease_release(l), SQLLOCK_OK,
                  "the other handle's release");
    else if (rc != SQLLOCK_BUSY)
        fail_msg("try_acquire of '%s' on the other handle: %s: %s", name,
                 sqllock_errname(rc), sqllock_errmsg(db2));
    sqllock_lease_free(l);
    return rc == SQLLOCK_OK;
}

void test_txnfail_R8_no_lease_statement_in_txn(void **state)
{
    fixture *f = *state;
    sqllock_lease_options lo = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_lease *held = NULL, *fresh = NULL;
    sqllock_db *db, *db2;
    sqllock_txn *t;
    char hn[96], fn[96], rn[96];
    const char *row;

    tf_name_of(f, "r8", "held", hn, sizeof hn);
    tf_name_of(f, "r8", "fresh", fn, sizeof fn);
    row = tf_name_of(f, "r8", "row", rn, sizeof rn);
    db = tf_open_handle();
    db2 = tf_open_handle();
    lo.ttl_ms = 30000;
    EXPECT_RC(db, sqllock_lease_new(db, hn, &lo, &held), SQLLOCK_OK, "lease");
    EXPECT_RC(db, sqllock_lease_new(db, fn, &lo, &fresh), SQLLOCK_OK,
              "lease");
    EXPECT_RC(db, sqllock_lease_try_acquire(held), SQLLOCK_OK,
              "the lease held before the transaction");

    t = tf_begin(db);                         /* begun, nothing sent yet */
    r8_expect_refused(f, db, held, fresh, "transaction begun");
    tf_lock1(db, t, row);                     /* started */
    r8_expect_refused(f, db, held, fresh, "transaction started");
    if (!tf_is_driver(f, "sqlite")) {
        /* SQLite's transaction holds the database's write lock (R5): the
         * other handle could not write a lease meanwhile anyway. */
        assert_int_equal(r8_free_elsewhere(db2, fn), 1);
        assert_int_equal(r8_free_elsewhere(db2, hn), 0);
    }
    EXPECT_RC(db, sqllock_txn_commit(t), SQLLOCK_OK,
              "the transaction commits after the refused calls");
    tf_free_txn(t);

    /* Once it has ended, the same calls work. */
    assert_int_equal(r8_free_elsewhere(db2, hn), 0);
    EXPECT_RC(db, sqllock_lease_renew(held), SQLLOCK_OK, "renew after");
    EXPECT_RC(db, sqllock_lease_try_acquire(fresh), SQLLOCK_OK,
              "acquire after");
    EXPECT_RC(db, sqllock_lease_release(fresh), SQLLOCK_OK, "release after");
    EXPECT_RC(db, sqllock_lease_release(held), SQLLOCK_OK, "release after");
    assert_int_equal(r8_free_elsewhere(db2, hn), 1);
    sqllock_lease_free(held);
    sqllock_lease_free(fresh);
    tf_close_handle(db);
    tf_close_handle(db2);
}
