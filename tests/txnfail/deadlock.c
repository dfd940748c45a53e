/*
 * deadlock.c -- test_txnfail: a deadlock between this process (A) and a
 * forked child (B) poisons A's transaction (R7), and
 * sqllock_record_update() does not retry it inside the transaction.
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
/* A deadlock between this process (A) and a forked child (B)          */
/* ------------------------------------------------------------------ */

/* PostgreSQL: waits (up to 10 s) until backend `pid` waits for a lock,
 * as another connection (`poll`, outside any transaction) sees it. */
static void pg_wait_for_lock_wait(sqllock_db *poll, int64_t pid)
{
    sqllock_value v = sqllock__int(pid);
    int64_t deadline = tu_now_ms() + 10000, n = 0;

    while (tu_now_ms() < deadline) {
        if (sqllock__exec_sql(poll, "SELECT COUNT(*) FROM pg_stat_activity "
                              "WHERE pid = $1 AND wait_event_type = 'Lock'",
                              &v, 1, NULL, &n, NULL) != SQLLOCK_OK || n > 0)
            return;
        tu_sleep_ms(10);
    }
}

/* The child: 0 when its transaction committed; 10 + the status of the
 * first call that failed otherwise. `ready` is written once b is
 * written; `go` is read before a. */
static int dl_child(const dl_keys *k, int ready, int go)
{
    sqllock_db *poll = NULL;
    sqllock_db *db = NULL;
    sqllock_txn_options o = SQLLOCK_TXN_OPTIONS_INIT;
    sqllock_txn *t = NULL;
    const char *gate = k->gate_b;
    char c = 'r';
    int rc;

    o.lock_timeout_ms = LOCK_TIMEOUT_MS;
    rc = sqllock_open(g_url, NULL, &db);
    if (rc == SQLLOCK_OK && k->pg)
        rc = sqllock_open(g_url, NULL, &poll);
    if (rc == SQLLOCK_OK)
        rc = sqllock_txn_begin(db, &o, &t);
    if (rc == SQLLOCK_OK)
        rc = sqllock_txn_lock(t, &gate, 1, SQLLOCK_LOCK_WAIT, NULL);
    if (rc == SQLLOCK_OK)
        rc = sqllock_record_cas(db, k->b2, 1, "B", 1, NULL);
    if (rc == SQLLOCK_OK)
        rc = sqllock_record_cas(db, k->b3, 1, "B", 1, NULL);
    if (rc == SQLLOCK_OK)
        rc = sqllock_record_cas(db, k->b, 1, "B", 1, NULL);
    if (write(ready, &c, 1) != 1 && rc == SQLLOCK_OK)
        rc = SQLLOCK_ESYS;
    if (rc == SQLLOCK_OK && read(go, &c, 1) != 1)
        rc = SQLLOCK_ESYS;
    /* A is about to write b: let it start waiting first. PostgreSQL
     * aborts the transaction whose deadlock check (deadlock_timeout, 1 s
     * into its wait) finds the cycle: A's, when B's wait begins within
     * A's first second. InnoDB rolls back the lighter transaction, A,
     * whenever the cycle closes. */
    if (rc == SQLLOCK_OK && k->pg)
        pg_wait_for_lock_wait(poll, k->a_conn);
    else
        tu_sleep_ms(300);
    if (rc == SQLLOCK_OK)
        rc = sqllock_record_cas(db, k->a, 1, "B", 1, NULL);
    if (rc == SQLLOCK_OK)
        rc = sqllock_txn_commit(t);
    if (rc != SQLLOCK_OK)
        fprintf(stderr, "    deadlock child: %s: %s\n", sqllock_errname(rc),
                sqllock_errmsg(db));
    sqllock_txn_free(t);
    sqllock_close(db);
    sqllock_close(poll);
    return rc == SQLLOCK_OK ? 0 : 10 + rc;
}

/* Waits for the child; its exit status (-1 when it did not exit). */
static int dl_wait(pid_t pid)
{
    int64_t deadline = tu_now_ms() + CHILD_DEADLINE_MS;
    int st = 0;

    for (;;) {
        pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid)
            return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
        if (r < 0 || tu_now_ms() > deadline) {
            kill(pid, SIGKILL);
            waitpid(pid, &st, 0);
            return -1;
        }
        tu_sleep_ms(20);
    }
}

/* Runs the deadlock: A (db, in transaction t, started by its lock on
 * gate_a) has written a; `second` is A's call that writes b and meets
 * the deadlock. Returns its status; *child_status is the child's. */
typedef int (*dl_second_fn)(sqllock_db *db, const dl_keys *k, void *ctx);

static int dl_run(sqllock_db *db, const dl_keys *k, dl_second_fn second,
                  void *ctx, int *child_status)
{
    int ready[2], go[2], rc;
    char c = 0;
    pid_t pid;

    assert_int_equal(pipe(ready), 0);
    assert_int_equal(pipe(go), 0);
    fflush(stdout);
    fflush(stderr);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(ready[0]);
        close(go[1]);
        _exit(dl_child(k, ready[1], go[0]));
    }
    close(ready[1]);
    close(go[0]);
    if (read(ready[0], &c, 1) != 1)
        fail_msg("the deadlock child did not get ready");
    if (write(go[1], &c, 1) != 1)
        fail_msg("cannot signal the deadlock child");
    rc = second(db, k, ctx);
    close(ready[0]);
    close(go[1]);
    *child_status = dl_wait(pid);
    return rc;
}

static int dl_second_cas(sqllock_db *db, const dl_keys *k, void *ctx)
{
    (void)ctx;
    return sqllock_record_cas(db, k->b, 1, "A", 1, NULL);
}

/* The deadlock, with A as its victim: *t is A's transaction (keys *k),
 * and the status of A's `second` call is returned. When the database
 * picks B instead (a scheduling accident), A's transaction is rolled
 * back and the deadlock played again with new keys, up to 3 times. */
static int dl_attempt(const fixture *f, const char *test, sqllock_db *db,
                      dl_second_fn second, void *ctx, dl_keys *k,
                      sqllock_txn **t, int *child)
{
    char tag[64];
    int round, rc = -1;

    for (round = 1; round <= 3; round++) {
        snprintf(tag, sizeof tag, "%s%d", test, round);
        tf_dl_keys_make(f, tag, k);
        *t = tf_dl_start(db, k);
        k->pg = tf_is_driver(f, "postgres");
        k->a_conn = k->pg ? tf_conn_id(f, db) : 0;
        rc = dl_run(db, k, second, ctx, child);
        if (rc != SQLLOCK_OK || *child != 10 + SQLLOCK_EDEADLOCK)
            return rc;
        printf("    [%s] the database rolled back the other transaction "
               "of the deadlock, not this one: again\n", f->driver);
        tf_free_txn(*t);
        *t = NULL;
    }
    return rc;
}

/* R7: a compare-and-set that a deadlock rolled back poisons the
 * transaction; nothing after it commits, and the commit fails with
 * SQLLOCK_EDEADLOCK. */
void test_txnfail_R7_deadlock_poisons_txn(void **state)
{
    fixture *f = *state;
    problems p = { { 0 }, 0 };
    sqllock_db *db, *db2;
    sqllock_txn *t;
    dl_keys k;
    int rc, child = -1;

    if (tf_is_driver(f, "sqlite")) {
        tf_sqlite_no_failure(f, "dl");
        return;
    }
    db = tf_open_handle();
    db2 = tf_open_handle();
    rc = dl_attempt(f, "dl", db, dl_second_cas, NULL, &k, &t, &child);
    if (rc != SQLLOCK_EDEADLOCK)
        fail_msg("[%s] A's write of b: got %s, want SQLLOCK_EDEADLOCK (the "
                 "child exited %d): %s", f->driver, sqllock_errname(rc),
                 child, sqllock_errmsg(db));
    if (child != 0)
        tf_problem(&p, "the child's transaction did not commit (exit %d)",
                   child);
    tf_expect_all_refused(&p, db, db2, t, k.c, k.fresh, k.gate_a,
                          SQLLOCK_EDEADLOCK);
    EXPECT_RC(db, sqllock_txn_rollback(t), SQLLOCK_OK,
              "rollback after the deadlock");
    tf_free_txn(t);
    /* A's first half was rolled back; B's writes committed. */
    tf_expect_version(&p, db2, k.a, child == 0 ? 2 : 1, "A's write rolled "
                      "back, B's committed");
    tf_expect_version(&p, db2, k.b, child == 0 ? 2 : 1, "B's write");
    tf_expect_handle_works(&p, db, db2, k.gate_a, k.c);
    tf_close_handle(db);
    tf_close_handle(db2);
    tf_report(&p, f->driver);
}

/* The update function: writes "U". */
static int set_u(void *ctx, const void *old, size_t old_len,
                 const void **out, size_t *out_len)
{
    (void)ctx;
    (void)old;
    (void)old_len;
    *out = "U";
    *out_len = 1;
    return SQLLOCK_OK;
}

typedef struct update_ctx {
    int attempts;
} update_ctx;

static int dl_second_update(sqllock_db *db, const dl_keys *k, void *ctx)
{
    update_ctx *u = ctx;
    sqllock_retry_options o = SQLLOCK_RETRY_OPTIONS_INIT;

    o.max_attempts = 5;
    return sqllock_record_update(db, k->b, set_u, NULL, &o, &u->attempts);
}

/* R7: inside a transaction sqllock_record_update() does not retry a
 * deadlock (the retry could not redo the half the database rolled
 * back): it returns SQLLOCK_EDEADLOCK after one attempt, and the
 * transaction is poisoned. */
void test_txnfail_R7_update_does_not_retry_deadlock(void **state)
{
    fixture *f = *state;
    problems p = { { 0 }, 0 };
    sqllock_db *db, *db2;
    sqllock_txn *t;
    update_ctx u = { 0 };
    dl_keys k;
    int rc, child = -1;

    if (tf_is_driver(f, "sqlite")) {
        /* No deadlock on SQLite (R5): an update inside the transaction
         * commits with it. */
        sqllock_db *d = tf_open_handle(), *d2 = tf_open_handle();
        tf_dl_keys_make(f, "up", &k);
        printf("    [sqlite] no deadlock can happen on SQLite: an update "
               "inside the transaction, without one, instead\n");
        t = tf_dl_start(d, &k);
        EXPECT_RC(d, dl_second_update(d, &k, &u), SQLLOCK_OK, "update b");
        assert_int_equal(u.attempts, 1);
        EXPECT_RC(d, sqllock_txn_commit(t), SQLLOCK_OK, "commit");
        tf_free_txn(t);
        tf_expect_version(&p, d2, k.a, 2, "committed with the transaction");
        tf_expect_version(&p, d2, k.b, 2, "committed with the transaction");
        tf_close_handle(d);
        tf_close_handle(d2);
        tf_report(&p, f->driver);
        return;
    }
    db = tf_open_handle();
    db2 = tf_open_handle();
    rc = dl_attempt(f, "up", db, dl_second_update, &u, &k, &t, &child);
    if (rc != SQLLOCK_EDEADLOCK)
        tf_problem(&p, "sqllock_record_update() in the transaction: got %s "
                   "after %d attempt(s), want SQLLOCK_EDEADLOCK after 1 "
                   "(%s)", sqllock_errname(rc), u.attempts,
                   sqllock_errmsg(db));
    else if (u.attempts != 1)
        tf_problem(&p, "sqllock_record_update() made %d attempts, want 1",
                   u.attempts);
    if (child != 0)
        tf_problem(&p, "the child's transaction did not commit (exit %d)",
                   child);
    rc = sqllock_txn_commit(t);
    if (rc == SQLLOCK_OK)
        tf_problem(&p, "sqllock_txn_commit() after the deadlock reported "
                   "success: the write of a was rolled back");
    else
        tf_expect_poisoned(&p, db, rc, SQLLOCK_EDEADLOCK,
                           "sqllock_txn_commit() after the deadlock");
    sqllock_txn_rollback(t);
    tf_free_txn(t);
    /* b was written by B only (version 2), never by a retry of A's. */
    tf_expect_version(&p, db2, k.a, child == 0 ? 2 : 1, "A's write rolled "
                      "back, B's committed");
    tf_expect_version(&p, db2, k.b, child == 0 ? 2 : 1, "only B wrote b: A's "
                      "update must not be retried outside its transaction");
    tf_expect_handle_works(&p, db, db2, k.gate_a, k.c);
    tf_close_handle(db);
    tf_close_handle(db2);
    tf_report(&p, f->driver);
}
