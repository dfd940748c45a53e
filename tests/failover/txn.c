/*
 * txn.c -- test_failover d: a row-lock transaction's commit whose wait
 * for a stalled synchronous standby is canceled or terminated (C2, L10;
 * issue 26).
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
#include "failover.h"

/* ------------------------------------------------------------------ */
/* d. A row-lock transaction's commit and a stalled standby             */
/* ------------------------------------------------------------------ */

/* The application's table the transactions write. */
#define D_TABLE "failover_d_kv"

/* How the transaction ends: the three ways a commit is sent. */
enum {
    D_COMMIT = 0,          /* a lock, a write, sqllock_txn_commit() */
    D_EXEC_AFTER_LOCK,     /* a lock, then sqllock_txn_commit_exec():
                              the write and COMMIT pipelined */
    D_EXEC_ALONE,          /* sqllock_txn_commit_exec() alone: BEGIN, the
                              write and COMMIT pipelined */
    D_KINDS
};

static const char *const d_kind_name[D_KINDS] = {
    "sqllock_txn_commit()",
    "sqllock_txn_commit_exec() after a row lock",
    "sqllock_txn_commit_exec() as the only call"
};

/* One transaction, run on its own thread while the test ends its
 * commit's wait. */
typedef struct d_run {
    sqllock_db *db;
    int kind;
    int64_t id, value;             /* the row it writes, and to what */
    const char *failed_at;         /* a step before the commit failed */
    int rc;                        /* the commit's status */
    int64_t took_ms;
    char msg[400];
} d_run;

/* The transaction: begin, then (by kind) lock the row and write it,
 * then commit. Only this thread uses the handle while it runs. */
static void *d_txn(void *arg)
{
    d_run *r = arg;
    sqllock_table kt = { D_TABLE, "id", NULL };
    sqllock_cell key = SQLLOCK_NUMBER(r->id);
    sqllock_cell a[2] = { SQLLOCK_NUMBER(r->value), SQLLOCK_NUMBER(r->id) };
    const char *set = "UPDATE " D_TABLE " SET v = $1 WHERE id = $2";
    sqllock_txn *t = NULL;
    int64_t t0;
    int got = 0, rc;

    r->rc = -1;
    rc = sqllock_txn_begin(r->db, NULL, &t);
    if (rc != SQLLOCK_OK) {
        r->failed_at = "begin";
        goto out;
    }
    if (r->kind != D_EXEC_ALONE) {
        rc = sqllock_txn_lock_rows(t, &kt, &key, 1, SQLLOCK_LOCK_WAIT, &got);
        if (rc != SQLLOCK_OK || got != 1) {
            r->failed_at = "the row lock";
            goto out;
        }
    }
    if (r->kind == D_COMMIT) {
        rc = sqllock_db_exec(r->db, set, a, 2, NULL, NULL, NULL);
        if (rc != SQLLOCK_OK) {
            r->failed_at = "the write";
            goto out;
        }
    }
    t0 = tu_now_ms();
    if (r->kind == D_COMMIT)
        r->rc = sqllock_txn_commit(t);
    else
        r->rc = sqllock_txn_commit_exec(t, set, a, 2, NULL);
    r->took_ms = tu_now_ms() - t0;
out:
    snprintf(r->msg, sizeof r->msg, "%s", sqllock_errmsg(r->db));
    if (r->failed_at != NULL)
        r->rc = rc;
    sqllock_txn_free(t);
    return NULL;
}

/* The row's value as the primary has it; -1 when it cannot be read. */
static int64_t d_value(sqllock_db *db, int64_t id)
{
    sqllock_value v = sqllock__int(id);
    int64_t n = -1;
    int has = 0;

    if (sqllock__exec_sql(db, "SELECT v FROM " D_TABLE " WHERE id = $1", &v,
                          1, &has, &n, NULL) != SQLLOCK_OK || !has)
        return -1;
    return n;
}

/*
 * d. (C2, L10 with a synchronous standby; issue 26) The standby's
 * walreceiver is paused, so every commit waits for it. A row-lock
 * transaction writes a row and commits, in each of the three ways a
 * commit is sent -- sqllock_txn_commit(); sqllock_txn_commit_exec() with
 * the write and COMMIT pipelined after a row lock; the same with BEGIN
 * too, as the transaction's only call -- and the commit's wait is ended
 * from another connection: pg_cancel_backend() must give
 * SQLLOCK_ECANCELED (the primary committed it, the standby may not have
 * it), pg_terminate_backend() SQLLOCK_ECONNECT (the connection is gone
 * with the answer), never SQLLOCK_OK; and the three ways must report
 * the same. The write is on the primary each time: the wait that was
 * ended is the one for the standby, after the local commit.
 */
void test_failover_sync_C2_txn_commit_wait_ended_no_false_success(
    void **state)
{
    static const int want[2] = { SQLLOCK_ECANCELED, SQLLOCK_ECONNECT };
    /* Static: a failure while a transaction's thread runs leaves this
     * function, and the thread's run must outlive it. */
    static d_run runs[2][D_KINDS];
    sqllock_db *admin;
    pthread_t th;
    int64_t got[2][D_KINDS];
    int n[2][D_KINDS];
    int how, k, failures = 0;

    (void)state;
    fo_fresh_pair("sync");
    admin = fo_open_url(g_url1, 5000);
    if (admin == NULL)
        fail_msg("cannot open the primary");
    /* The table and its rows, while the standby still acknowledges. */
    if (sqllock__exec_sql(admin, "CREATE TABLE " D_TABLE " (id bigint "
                          "PRIMARY KEY, v bigint NOT NULL)", NULL, 0, NULL,
                          NULL, NULL) != SQLLOCK_OK ||
        sqllock__exec_sql(admin, "INSERT INTO " D_TABLE " SELECT i, 0 FROM "
                          "generate_series(1, 6) AS i", NULL, 0, NULL, NULL,
                          NULL) != SQLLOCK_OK)
        fail_msg("the table: %s", sqllock_errmsg(admin));
    if (fo_repl("pause-standby", NULL, NULL) != 0)
        fail_msg("pause-standby failed");

    memset(runs, 0, sizeof runs);
    for (how = 0; how < 2; how++) {
        for (k = 0; k < D_KINDS; k++) {
            d_run *r = &runs[how][k];

            r->kind = k;
            r->id = 1 + how * D_KINDS + k;
            r->value = 100 + r->id;
            /* The client's own bound is far beyond the wait the test
             * ends, so that only the cancel or terminate ends it. */
            r->db = fo_open_url(g_url1, 30000 * g_slow);
            if (r->db == NULL)
                fail_msg("cannot open the primary");
            if (pthread_create(&th, NULL, d_txn, r) != 0)
                fail_msg("pthread_create failed");
            /* Both commits end in a COMMIT: the one the statement's
             * text is while it waits for the standby. */
            n[how][k] = fo_end_syncrep_waits(admin, how, "COMMIT", 1);
            pthread_join(th, NULL);
            got[how][k] = d_value(admin, r->id);
            printf("    (%s) %s: %s after %lld ms (%d waiting signalled); "
                   "the row on the primary: %lld (written %lld): %s%s\n",
                   how ? "terminate" : "cancel", d_kind_name[k],
                   r->failed_at != NULL ? "failed before the commit"
                                        : sqllock_errname(r->rc),
                   (long long)r->took_ms, n[how][k],
                   (long long)got[how][k], (long long)r->value,
                   r->failed_at != NULL ? r->failed_at : "", r->msg);
            sqllock_close(r->db);
            r->db = NULL;
        }
    }
    sqllock_close(admin);

    /* The verdicts, all reported before the first failure. */
    for (how = 0; how < 2; how++) {
        for (k = 0; k < D_KINDS; k++) {
            d_run *r = &runs[how][k];
            const char *what = how ? "terminated" : "canceled";

            if (r->failed_at != NULL) {
                printf("    FAIL: %s, %s: %s failed (%s): %s\n", what,
                       d_kind_name[k], r->failed_at,
                       sqllock_errname(r->rc), r->msg);
                failures++;
            } else if (n[how][k] == 0) {
                printf("    FAIL: %s, %s: the commit never waited for the "
                       "standby (%s)\n", what, d_kind_name[k],
                       sqllock_errname(r->rc));
                failures++;
            } else if (r->rc != want[how]) {
                printf("    FAIL: %s, %s: a commit whose wait for the "
                       "synchronous standby was %s reported %s, want %s\n",
                       what, d_kind_name[k], what, sqllock_errname(r->rc),
                       sqllock_errname(want[how]));
                failures++;
            }
            if (r->failed_at == NULL && got[how][k] != r->value) {
                printf("    FAIL: %s, %s: the row on the primary is %lld, "
                       "not %lld: the wait that was ended was not the "
                       "standby's, after the local commit\n", what,
                       d_kind_name[k], (long long)got[how][k],
                       (long long)r->value);
                failures++;
            }
        }
    }
    if (failures > 0)
        fail_msg("%d wrong report(s) of a commit whose wait for the "
                 "synchronous standby was ended", failures);
}
