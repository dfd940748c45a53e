/*
 * pipeline.c -- test_rowlock: a row-lock transaction's BEGIN goes with its
 * first statement, in one round trip, where the driver can (PostgreSQL:
 * libpq's pipeline mode, the driver's execute_txn()); the meaning of the lock
 * calls is the same (R1 modes and their statuses, R7 failures), and the
 * connection comes out of every call usable and out of pipeline mode.
 *
 * On every driver the cases check what the application sees: the lock is
 * held inside the transaction (another handle's NOWAIT is refused: a
 * FOR UPDATE that ran outside a transaction would have let go at once),
 * a failed first lock reports its exact status and leaves the handle on
 * the same connection, able to lock again. On PostgreSQL they also count
 * the round trips of a transaction in libpq's protocol trace (PQtrace):
 * begin + lock + commit is 2 (3 before version 10), and check that the
 * native connection is never left in pipeline mode.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "test_util.h"
#include "test_run.h"
#include "tu_pgtrace.h"
#include "rowlock.h"

/* libpq's calls, when it is linked in (weak: NULL otherwise). */
extern int PQpipelineStatus(const void *conn) __attribute__((weak));
extern int PQtransactionStatus(const void *conn) __attribute__((weak));
extern void *PQexec(void *conn, const char *sql) __attribute__((weak));
extern void PQclear(void *res) __attribute__((weak));
#define PIPELINE_OFF 0                /* PQ_PIPELINE_OFF */
#define TRANS_IDLE 0                  /* PQTRANS_IDLE */

static int pg_traced(const fixture *f)
{
    if (!is_driver(f, "postgres"))
        return 0;
    if (!tu_pgtrace_linked() ||
        PQpipelineStatus == NULL || PQtransactionStatus == NULL ||
        PQexec == NULL || PQclear == NULL)
        fail_msg("libpq's PQtrace/PQpipelineStatus are not linked into "
                 "the test: cannot check the round trips");
    return 1;
}

/* What a trace's round trips carried (tu_pgtrace_stop()'s `look`):
 * `seen` within the round trip so far, `with` in some round trip. */
typedef struct carried {
    int seen, with;
} carried;

/* with: a BEGIN was parsed in the same round trip as the lock statement
 * was bound (the only statement of the library's in the traced calls:
 * the lock rows exist and the timeout is set). The BEGIN names its
 * isolation level (DESIGN D5: READ COMMITTED whatever the session's
 * default). */
static void begin_with_lock(void *ctx, const char *msg)
{
    carried *c = ctx;

    if (msg == NULL) {
        c->seen = 0;
        return;
    }
    if (strncmp(msg, "Parse", 5) == 0 && strstr(msg, "\"BEGIN ISOLATION LEVEL READ "
                                                 "COMMITTED\""))
        c->seen = 1;
    /* The lock: its text (unnamed, behind a pooler), or its prepared
     * statement's name in the Bind. */
    if (c->seen && (strstr(msg, "FOR UPDATE") != NULL ||
                    (strncmp(msg, "Bind", 4) == 0 &&
                     strstr(msg, "\"sqllock_") != NULL)))
        c->with = 1;
}

static void expect_pipeline_off(const fixture *f, void *pg, const char *when)
{
    if (is_driver(f, "postgres") && PQpipelineStatus(pg) != PIPELINE_OFF)
        fail_msg("%s: the connection was left in pipeline mode", when);
}

static void kv_row(fixture *f, int64_t id)
{
    sqllock_value v[2];

    v[0] = sqllock__int(id);
    v[1] = sqllock__int(1);
    tu_exec_ok(f->db, "DELETE FROM %s", f->kv, NULL, 0);
    tu_exec_ok(f->db, f->sql->kv_insert, f->kv, v, 2);
}

/* R1: begin + the first lock + commit: the lock is held inside the
 * transaction, and on PostgreSQL the three are two round trips, BEGIN in
 * the lock's. */
void test_rowlock_R1_first_lock_carries_begin(void **state)
{
    fixture *f = *state;
    sqllock_table kt = { f->kv, "id", NULL };
    sqllock_cell key = SQLLOCK_NUMBER(9);
    sqllock_db *db2;
    sqllock_txn *t = NULL, *t2 = NULL;
    void *pg = NULL;
    tu_pgtrace tr;
    carried lock = { 0, 0 };
    int got = -1, rc, trips = 0, commit_trips = 0;

    kv_row(f, 9);
    db2 = open_second();
    /* A first transaction prepares the statements and sets the lock
     * timeout; the second is the steady state. */
    EXPECT_RC(f->db, sqllock_txn_begin(f->db, NULL, &t), SQLLOCK_OK,
              "begin (warm-up)");
    EXPECT_RC(f->db, sqllock_txn_lock_rows(t, &kt, &key, 1,
                                           SQLLOCK_LOCK_WAIT, &got),
              SQLLOCK_OK, "lock row 9 (warm-up)");
    EXPECT_RC(f->db, sqllock_txn_commit(t), SQLLOCK_OK, "commit (warm-up)");
    sqllock_txn_free(t);
    t = NULL;
    if (pg_traced(f) && !tu_url_pooled(g_url)) {
        pg = sqllock_db_native(f->db);
        assert_non_null(pg);
        tu_pgtrace_start(&tr, pg);
    }
    EXPECT_RC(f->db, sqllock_txn_begin(f->db, NULL, &t), SQLLOCK_OK, "begin");
    got = -1;
    EXPECT_RC(f->db, sqllock_txn_lock_rows(t, &kt, &key, 1,
                                           SQLLOCK_LOCK_WAIT, &got),
              SQLLOCK_OK, "lock row 9");
    assert_int_equal(got, 1);
    if (pg != NULL) {
        trips = tu_pgtrace_stop(&tr, begin_with_lock, &lock);
        expect_pipeline_off(f, pg, "after the first lock");
    }
    /* Held inside the transaction: another handle cannot have it. */
    EXPECT_RC(db2, sqllock_txn_begin(db2, NULL, &t2), SQLLOCK_OK,
              "begin (second handle)");
    rc = sqllock_txn_lock_rows(t2, &kt, &key, 1, SQLLOCK_LOCK_NOWAIT, NULL);
    sqllock_txn_free(t2);
    if (rc != SQLLOCK_ELOCKED)
        fail_msg("row 9, locked by the first lock of a transaction, is not "
                 "held: NOWAIT from another handle got %s (%s)",
                 sqllock_errname(rc), sqllock_errmsg(db2));
    if (pg != NULL)
        tu_pgtrace_start(&tr, pg);
    EXPECT_RC(f->db, sqllock_txn_commit(t), SQLLOCK_OK, "commit");
    sqllock_txn_free(t);
    sqllock_close(db2);
    if (pg == NULL)
        return;
    commit_trips = tu_pgtrace_stop(&tr, NULL, NULL);
    expect_pipeline_off(f, pg, "after the commit");
    printf("    R1 [%s] begin + first lock: %d round trip(s), BEGIN with "
           "the FOR UPDATE: %s; commit: %d\n", f->driver, trips,
           lock.with ? "yes" : "no", commit_trips);
    if (trips != 1 || !lock.with)
        fail_msg("begin + the first lock took %d round trips (want 1, BEGIN "
                 "pipelined with the FOR UPDATE: %s)", trips,
                 lock.with ? "yes" : "no");
    if (commit_trips != 1)
        fail_msg("the commit took %d round trips (want 1)", commit_trips);
}

/* R1, R7: a first lock that fails -- NOWAIT on a held row, a lock
 * timeout, SKIP LOCKED finding it held -- reports exactly what it did
 * before BEGIN went with it, leaves the handle on the same connection
 * (no reconnect), out of pipeline mode and out of any transaction once
 * rolled back, and the next transaction locks the row. */
void test_rowlock_R7_failed_first_lock_keeps_connection(void **state)
{
    fixture *f = *state;
    sqllock_table kt = { f->kv, "id", NULL };
    sqllock_cell key = SQLLOCK_NUMBER(9);
    sqllock_txn_options o = txn_opts(200);
    sqllock_db *db2;
    sqllock_txn *t = NULL, *hold = NULL;
    int64_t id_before, id_after;
    void *pg = NULL;
    int got = -1, rc;

    kv_row(f, 9);
    (void)pg_traced(f);
    db2 = open_second();
    /* A first transaction with the lock timeouts used below, so that no
     * call of the case connects again to wait longer (a reconnect would
     * change the server id checked at the end). */
    EXPECT_RC(f->db, sqllock_txn_begin(f->db, NULL, &t), SQLLOCK_OK,
              "begin (warm-up)");
    EXPECT_RC(f->db, sqllock_txn_lock_rows(t, &kt, &key, 1,
                                           SQLLOCK_LOCK_WAIT, &got),
              SQLLOCK_OK, "lock row 9 (warm-up)");
    EXPECT_RC(f->db, sqllock_txn_commit(t), SQLLOCK_OK, "commit (warm-up)");
    sqllock_txn_free(t);
    t = NULL;
    id_before = f->sql->conn_id != NULL
                ? query_int(f->db, f->sql->conn_id, "", NULL, 0) : 0;
    EXPECT_RC(db2, sqllock_txn_begin(db2, NULL, &hold), SQLLOCK_OK,
              "begin (holder)");
    EXPECT_RC(db2, sqllock_txn_lock_rows(hold, &kt, &key, 1,
                                         SQLLOCK_LOCK_WAIT, NULL),
              SQLLOCK_OK, "holder locks row 9");

    /* NOWAIT: ELOCKED, and the transaction is over (R7). */
    EXPECT_RC(f->db, sqllock_txn_begin(f->db, NULL, &t), SQLLOCK_OK, "begin");
    rc = sqllock_txn_lock_rows(t, &kt, &key, 1, SQLLOCK_LOCK_NOWAIT, &got);
    EXPECT_RC(f->db, rc, SQLLOCK_ELOCKED, "NOWAIT on a held row, first "
              "statement");
    assert_int_equal(got, 0);
    EXPECT_RC(f->db, sqllock_txn_commit(t), SQLLOCK_EMISUSE,
              "commit after ELOCKED");
    if (is_driver(f, "postgres"))
        pg = sqllock_db_native(f->db);
    if (pg != NULL) {
        expect_pipeline_off(f, pg, "after NOWAIT's ELOCKED");
        if (PQtransactionStatus(pg) != TRANS_IDLE)
            fail_msg("after NOWAIT's ELOCKED the connection is still in a "
                     "transaction (status %d)", PQtransactionStatus(pg));
    }
    sqllock_txn_free(t);
    t = NULL;

    /* WAIT with a 200 ms lock timeout: ELOCKED. */
    EXPECT_RC(f->db, sqllock_txn_begin(f->db, &o, &t), SQLLOCK_OK,
              "begin (200 ms)");
    EXPECT_RC(f->db, sqllock_txn_lock_rows(t, &kt, &key, 1,
                                           SQLLOCK_LOCK_WAIT, &got),
              SQLLOCK_ELOCKED, "WAIT 200 ms on a held row, first statement");
    if (pg != NULL) {
        pg = sqllock_db_native(f->db);
        expect_pipeline_off(f, pg, "after the lock timeout");
    }
    sqllock_txn_free(t);
    t = NULL;

    /* SKIP LOCKED: OK, nothing taken; the transaction goes on. */
    EXPECT_RC(f->db, sqllock_txn_begin(f->db, NULL, &t), SQLLOCK_OK,
              "begin (skip)");
    got = -1;
    EXPECT_RC(f->db, sqllock_txn_lock_rows(t, &kt, &key, 1,
                                           SQLLOCK_LOCK_SKIP_LOCKED, &got),
              SQLLOCK_OK, "SKIP LOCKED on a held row, first statement");
    if (got != 0)
        fail_msg("SKIP LOCKED on a row another handle holds: got %d", got);
    EXPECT_RC(f->db, sqllock_txn_commit(t), SQLLOCK_OK, "commit (skip)");
    sqllock_txn_free(t);
    t = NULL;

    /* The holder lets go: the same connection locks the row. */
    EXPECT_RC(db2, sqllock_txn_commit(hold), SQLLOCK_OK, "holder commits");
    sqllock_txn_free(hold);
    EXPECT_RC(f->db, sqllock_txn_begin(f->db, NULL, &t), SQLLOCK_OK,
              "begin (after)");
    EXPECT_RC(f->db, sqllock_txn_lock_rows(t, &kt, &key, 1,
                                           SQLLOCK_LOCK_NOWAIT, &got),
              SQLLOCK_OK, "NOWAIT once the holder let go");
    assert_int_equal(got, 1);
    id_after = f->sql->conn_id != NULL
               ? query_int(f->db, f->sql->conn_id, "", NULL, 0) : 0;
    EXPECT_RC(f->db, sqllock_txn_commit(t), SQLLOCK_OK, "commit (after)");
    sqllock_txn_free(t);
    if (!tu_url_pooled(g_url) && id_after != id_before)
        fail_msg("the failed first locks cost the connection (server id "
                 "%lld before, %lld after)", (long long)id_before,
                 (long long)id_after);
    sqllock_close(db2);
}

/* R4: sqllock_txn_native() before any lock: the application's own
 * statements on the native connection are inside the transaction (the
 * BEGIN waiting for a statement of the library's is sent first), so a
 * rollback undoes them. */
void test_rowlock_R4_native_first_is_inside(void **state)
{
    fixture *f = *state;
    sqllock_txn *t = NULL;
    sqllock_value v = sqllock__int(9);
    char sql[160];
    void *conn;
    int64_t n;

    kv_row(f, 9);
    EXPECT_RC(f->db, sqllock_txn_begin(f->db, NULL, &t), SQLLOCK_OK, "begin");
    conn = sqllock_txn_native(t);
    assert_non_null(conn);
    snprintf(sql, sizeof sql, "UPDATE %s SET v = 77 WHERE id = 9", f->kv);
    if (is_driver(f, "postgres")) {
        (void)pg_traced(f);
        PQclear(PQexec(conn, sql));     /* the application's own call */
        if (PQtransactionStatus(conn) == TRANS_IDLE)
            fail_msg("sqllock_txn_native() returned a connection outside "
                     "any transaction: the BEGIN was not sent");
    } else {
        tu_exec_ok(f->db, sql, "", NULL, 0);
    }
    sqllock_txn_rollback(t);
    sqllock_txn_free(t);
    n = query_int(f->db, f->sql->kv_get, f->kv, &v, 1);
    if (n != 1)
        fail_msg("the application's UPDATE through sqllock_txn_native() "
                 "survived the rollback (v = %lld, want 1)", (long long)n);
}

/* For the round trips of sqllock_txn_commit_exec() in a trace: with, a
 * COMMIT was parsed in the same round trip as the UPDATE. */
static void commit_with_update(void *ctx, const char *msg)
{
    carried *c = ctx;

    if (msg == NULL) {
        c->seen = 0;
        return;
    }
    if (strncmp(msg, "Bind", 4) == 0 || strncmp(msg, "Parse", 5) == 0) {
        if (strstr(msg, "UPDATE") != NULL || strstr(msg, "sqllock_") != NULL)
            c->seen = 1;
        if (c->seen && strstr(msg, "\"COMMIT\"") != NULL)
            c->with = 1;
    }
}

/* R4, R6: sqllock_txn_commit_exec() writes and commits: the write is
 * committed, the lock let go, the transaction over; on PostgreSQL the
 * write and COMMIT are one round trip, and a transaction of a first lock
 * and commit_exec is two. Without a lock call before it, the transaction
 * begins with it (one round trip on PostgreSQL). */
void test_rowlock_R4_commit_exec_commits_with_write(void **state)
{
    fixture *f = *state;
    sqllock_table kt = { f->kv, "id", NULL };
    sqllock_cell key = SQLLOCK_NUMBER(9);
    sqllock_cell a[2] = { SQLLOCK_NUMBER(42), SQLLOCK_NUMBER(9) };
    sqllock_value v = sqllock__int(9);
    char sql[160];
    sqllock_db *db2;
    sqllock_txn *t = NULL, *t2 = NULL;
    void *pg = NULL;
    tu_pgtrace tr;
    carried commit = { 0, 0 };
    int64_t affected = -1;
    int got = -1, trips = 0, i;

    kv_row(f, 9);
    snprintf(sql, sizeof sql, f->sql->kv_set, f->kv);
    db2 = open_second();
    for (i = 0; i < 2; i++) {          /* the second time traced */
        a[0] = (sqllock_cell)SQLLOCK_NUMBER(41 + i);
        /* The connection after the first transaction (whose lock
         * timeout may have made the handle connect again). */
        if (i == 1 && pg_traced(f) && !tu_url_pooled(g_url))
            pg = sqllock_db_native(f->db);
        t = NULL;
        EXPECT_RC(f->db, sqllock_txn_begin(f->db, NULL, &t), SQLLOCK_OK,
                  "begin");
        EXPECT_RC(f->db, sqllock_txn_lock_rows(t, &kt, &key, 1,
                                               SQLLOCK_LOCK_WAIT, &got),
                  SQLLOCK_OK, "lock row 9");
        if (i == 1 && pg != NULL)
            tu_pgtrace_start(&tr, pg);
        EXPECT_RC(f->db, sqllock_txn_commit_exec(t, sql, a, 2, &affected),
                  SQLLOCK_OK, "commit_exec");
        if (i == 1 && pg != NULL) {
            trips = tu_pgtrace_stop(&tr, commit_with_update, &commit);
            expect_pipeline_off(f, pg, "after commit_exec");
            if (PQtransactionStatus(pg) != TRANS_IDLE)
                fail_msg("after commit_exec the connection is still in a "
                         "transaction");
        }
        assert_int_equal(affected, 1);
        EXPECT_RC(f->db, sqllock_txn_commit(t), SQLLOCK_EMISUSE,
                  "commit after commit_exec (the transaction is over)");
        sqllock_txn_free(t);
        t = NULL;
        if (query_int(db2, f->sql->kv_get, f->kv, &v, 1) != 41 + i)
            fail_msg("commit_exec returned SQLLOCK_OK but another handle "
                     "does not see its write");
        /* The lock was let go. */
        EXPECT_RC(db2, sqllock_txn_begin(db2, NULL, &t2), SQLLOCK_OK,
                  "begin (second handle)");
        EXPECT_RC(db2, sqllock_txn_lock_rows(t2, &kt, &key, 1,
                                             SQLLOCK_LOCK_NOWAIT, &got),
                  SQLLOCK_OK, "NOWAIT after commit_exec");
        sqllock_txn_free(t2);
        t2 = NULL;
    }
    if (pg != NULL) {
        printf("    R4 [%s] commit_exec: %d round trip(s), COMMIT with the "
               "UPDATE: %s\n", f->driver, trips, commit.with ? "yes" : "no");
        if (trips != 1 || !commit.with)
            fail_msg("commit_exec took %d round trips (want 1, COMMIT "
                     "pipelined with the statement: %s)", trips,
                     commit.with ? "yes" : "no");
    }
    /* No lock call first: the transaction begins with it. */
    a[0] = (sqllock_cell)SQLLOCK_NUMBER(43);
    EXPECT_RC(f->db, sqllock_txn_begin(f->db, NULL, &t), SQLLOCK_OK,
              "begin (no lock)");
    if (pg != NULL)
        tu_pgtrace_start(&tr, pg);
    EXPECT_RC(f->db, sqllock_txn_commit_exec(t, sql, a, 2, &affected),
              SQLLOCK_OK, "commit_exec as the only statement");
    if (pg != NULL) {
        trips = tu_pgtrace_stop(&tr, commit_with_update, &commit);
        if (trips != 1)
            fail_msg("begin + commit_exec took %d round trips (want 1)",
                     trips);
    }
    sqllock_txn_free(t);
    if (query_int(db2, f->sql->kv_get, f->kv, &v, 1) != 43)
        fail_msg("commit_exec as the only statement: not committed");
    sqllock_close(db2);
}

/* R6, R7: a commit_exec whose statement fails commits nothing -- the
 * transaction's earlier write is rolled back too -- reports the
 * statement's failure, ends the transaction, and leaves the handle on a
 * usable connection out of pipeline mode; bad arguments are refused
 * before anything is sent. */
void test_rowlock_R7_commit_exec_failure_rolls_back(void **state)
{
    fixture *f = *state;
    sqllock_table kt = { f->kv, "id", NULL };
    sqllock_cell key = SQLLOCK_NUMBER(9);
    sqllock_cell dup[2] = { SQLLOCK_NUMBER(9), SQLLOCK_NUMBER(5) };
    sqllock_value v = sqllock__int(9), sv[2];
    char ins[160];
    sqllock_db *db2;
    sqllock_txn *t = NULL;
    int64_t affected = -1;
    int rc, got = -1;

    kv_row(f, 9);
    snprintf(ins, sizeof ins, f->sql->kv_insert, f->kv);
    db2 = open_second();
    EXPECT_RC(f->db, sqllock_txn_begin(f->db, NULL, &t), SQLLOCK_OK, "begin");
    EXPECT_RC(f->db, sqllock_txn_lock_rows(t, &kt, &key, 1,
                                           SQLLOCK_LOCK_WAIT, &got),
              SQLLOCK_OK, "lock row 9");
    /* Bad input first: refused, nothing sent, the transaction open. */
    EXPECT_RC(f->db, sqllock_txn_commit_exec(NULL, ins, dup, 2, NULL),
              SQLLOCK_EINVAL, "commit_exec(NULL transaction)");
    EXPECT_RC(f->db, sqllock_txn_commit_exec(t, NULL, dup, 2, NULL),
              SQLLOCK_EINVAL, "commit_exec(NULL statement)");
    EXPECT_RC(f->db, sqllock_txn_commit_exec(t, ins, NULL, 2, NULL),
              SQLLOCK_EINVAL, "commit_exec(NULL args, 2)");
    EXPECT_RC(f->db, sqllock_txn_commit_exec(t, ins, dup, -1, NULL),
              SQLLOCK_EINVAL, "commit_exec(nargs -1)");
    sv[0] = sqllock__int(50);
    sv[1] = sqllock__int(9);
    tu_exec_ok(f->db, f->sql->kv_set, f->kv, sv, 2);
    rc = sqllock_txn_commit_exec(t, ins, dup, 2, &affected);
    if (rc == SQLLOCK_OK)
        fail_msg("commit_exec of a duplicate key returned SQLLOCK_OK");
    printf("    R7 [%s] commit_exec of a duplicate key: %s (%s)\n",
           f->driver, sqllock_errname(rc), sqllock_errmsg(f->db));
    assert_int_equal(affected, 0);
    EXPECT_RC(f->db, sqllock_txn_commit(t), SQLLOCK_EMISUSE,
              "commit after a failed commit_exec");
    sqllock_txn_free(t);
    t = NULL;
    if (query_int(db2, f->sql->kv_get, f->kv, &v, 1) != 1)
        fail_msg("a failed commit_exec committed the transaction's earlier "
                 "write");
    if (is_driver(f, "postgres")) {
        void *pg = sqllock_db_native(f->db);
        (void)pg_traced(f);
        expect_pipeline_off(f, pg, "after a failed commit_exec");
        if (PQtransactionStatus(pg) != TRANS_IDLE)
            fail_msg("after a failed commit_exec the connection is still "
                     "in a transaction");
    }
    /* The handle works: the row is free, and locks again. */
    EXPECT_RC(f->db, sqllock_txn_begin(f->db, NULL, &t), SQLLOCK_OK,
              "begin (after)");
    EXPECT_RC(f->db, sqllock_txn_lock_rows(t, &kt, &key, 1,
                                           SQLLOCK_LOCK_NOWAIT, &got),
              SQLLOCK_OK, "NOWAIT after a failed commit_exec");
    EXPECT_RC(f->db, sqllock_txn_commit(t), SQLLOCK_OK, "commit (after)");
    sqllock_txn_free(t);
    sqllock_close(db2);
}
