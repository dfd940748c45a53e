/*
 * contention.c -- test_rowlock: the order flow and the stock decrement
 * of R4 under contention from many processes, and a SKIP LOCKED work
 * queue (R1).
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
/* R4: the order flow and the stock, under contention                  */
/* ------------------------------------------------------------------ */

static int r4_order_child(fixture *f, int me, shared *sh)
{
    sqllock_db *db = tu_child_open(g_url, "R4 order child");
    sqllock_txn_options o = txn_opts(LONG_WAIT_MS);
    sqllock_table ot;
    int i, rc, res = 0;

    if (db == NULL)
        return 2;
    ot.table = f->orders;
    ot.key_column = "order_id";
    ot.version_column = NULL;
    tu_barrier(&sh->arrived, PROCS);
    for (i = 0; i < ORDERS && res == 0; i++) {
        /* Half the processes walk the orders backwards. */
        int64_t id = (me % 2 == 0) ? i + 1 : ORDERS - i;
        sqllock_cell key = SQLLOCK_NUMBER(id);
        sqllock_value v[2];
        sqllock_txn *t = NULL;
        int64_t paid = -1;
        int has_row = 0, got = -1;

        rc = sqllock_txn_begin(db, &o, &t);
        if (rc == SQLLOCK_OK)
            rc = sqllock_txn_lock_rows(t, &ot, &key, 1, SQLLOCK_LOCK_WAIT,
                                       &got);
        if (rc != SQLLOCK_OK || got != 1) {
            shared_error(sh, db, "R4 order: begin/lock_rows", rc);
            sqllock_txn_free(t);
            res = 3;
            break;
        }
        v[0] = sqllock__int(id);
        rc = tu_exec_on(db, f->sql->order_paid, f->orders, v, 1, &has_row,
                        &paid, NULL);
        if (rc == SQLLOCK_OK && !has_row)
            rc = SQLLOCK_NOTFOUND;
        if (rc == SQLLOCK_OK && paid == 0) {
            tu_sleep_us(300);  /* the window the classic bug needs */
            rc = tu_exec_on(db, f->sql->order_pay, f->orders, v, 1, NULL, NULL,
                            NULL);
            v[1] = sqllock__int(me);
            if (rc == SQLLOCK_OK)
                rc = tu_exec_on(db, f->sql->pay_insert, f->payments, v, 2,
                                NULL, NULL, NULL);
            if (rc == SQLLOCK_OK)
                __atomic_add_fetch(&sh->done, 1, __ATOMIC_SEQ_CST);
        }
        if (rc != SQLLOCK_OK) {
            shared_error(sh, db, "R4 order: statement in the transaction",
                         rc);
            sqllock_txn_free(t);
            res = 3;
            break;
        }
        rc = sqllock_txn_commit(t);
        if (rc == SQLLOCK_OK) {
            __atomic_add_fetch(&sh->committed, 1, __ATOMIC_SEQ_CST);
        } else {
            shared_error(sh, db, "R4 order: commit", rc);
            res = 3;
        }
        sqllock_txn_free(t);
    }
    sqllock_close(db);
    return res;
}

void test_rowlock_R4_order_paid_once(void **state)
{
    fixture *f = *state;
    shared *sh, copy;
    sqllock_value v[2];
    int i, failed;
    int64_t t0, payments, not_once, orders_bad;

    tu_exec_ok(f->db, "DELETE FROM %s", f->orders, NULL, 0);
    tu_exec_ok(f->db, "DELETE FROM %s", f->payments, NULL, 0);
    for (i = 1; i <= ORDERS; i++) {
        v[0] = sqllock__int(i);
        v[1] = sqllock__int(1000 + i);
        tu_exec_ok(f->db, f->sql->order_insert, f->orders, v, 2);
    }
    sh = tu_shared_map(sizeof *sh);
    t0 = tu_now_ms();
    failed = run_children(f, PROCS, sh, "R4 order", r4_order_child);
    copy = *sh;
    munmap(sh, sizeof *sh);
    payments = query_int(f->db, SQL_COUNT_ALL, f->payments, NULL, 0);
    not_once = query_int(f->db, SQL_PAYMENTS_NOT_ONCE, f->payments, NULL, 0);
    orders_bad = query_int(f->db, SQL_ORDERS_NOT_PAID_ONCE, f->orders, NULL,
                           0);
    printf("    R4 [%s] %d processes x %d orders: %d transactions "
           "committed, %lld payments made, %lld in the table, %lld orders "
           "paid other than once, %lld ms\n", f->driver, PROCS, ORDERS,
           copy.committed, (long long)copy.done, (long long)payments,
           (long long)orders_bad, (long long)(tu_now_ms() - t0));
    if (copy.errors != 0)
        fail_msg("%d errors; first: %s", copy.errors, copy.error);
    assert_int_equal(failed, 0);
    assert_int_equal(copy.committed, PROCS * ORDERS);
    if (payments != ORDERS || not_once != 0 || orders_bad != 0 ||
        copy.done != ORDERS)
        fail_msg("an order was paid twice or not at all: %lld payments for "
                 "%d orders, %lld orders with other than one payment, "
                 "%lld orders whose paid is not 1", (long long)payments,
                 ORDERS, (long long)not_once, (long long)orders_bad);
}

static int r4_stock_child(fixture *f, int me, shared *sh)
{
    sqllock_db *db = tu_child_open(g_url, "R4 stock child");
    sqllock_txn_options o = txn_opts(LONG_WAIT_MS);
    sqllock_table st;
    sqllock_cell key = SQLLOCK_NUMBER(1);
    int rc, res = 0, sold_out = 0;

    (void)me;
    if (db == NULL)
        return 2;
    st.table = f->stock;
    st.key_column = "id";
    st.version_column = NULL;
    tu_barrier(&sh->arrived, PROCS);
    while (!sold_out && res == 0) {
        sqllock_txn *t = NULL;
        sqllock_value v[2];
        int64_t qty = -1;
        int has_row = 0, got = -1;

        rc = sqllock_txn_begin(db, &o, &t);
        if (rc == SQLLOCK_OK)
            rc = sqllock_txn_lock_rows(t, &st, &key, 1, SQLLOCK_LOCK_WAIT,
                                       &got);
        if (rc != SQLLOCK_OK || got != 1) {
            shared_error(sh, db, "R4 stock: begin/lock_rows", rc);
            sqllock_txn_free(t);
            res = 3;
            break;
        }
        enter(sh);
        v[0] = sqllock__int(1);
        rc = tu_exec_on(db, f->sql->stock_qty, f->stock, v, 1, &has_row, &qty,
                        NULL);
        if (rc == SQLLOCK_OK && !has_row)
            rc = SQLLOCK_NOTFOUND;
        if (rc == SQLLOCK_OK && qty < 0)
            __atomic_add_fetch(&sh->negative, 1, __ATOMIC_SEQ_CST);
        if (rc == SQLLOCK_OK && qty > 0) {
            v[0] = sqllock__int(qty - 1);
            v[1] = sqllock__int(1);
            rc = tu_exec_on(db, f->sql->stock_set, f->stock, v, 2, NULL, NULL,
                            NULL);
        } else if (rc == SQLLOCK_OK) {
            sold_out = 1;
        }
        leave(sh);
        if (rc != SQLLOCK_OK) {
            shared_error(sh, db, "R4 stock: statement in the transaction",
                         rc);
            sqllock_txn_free(t);
            res = 3;
            break;
        }
        rc = sqllock_txn_commit(t);
        if (rc == SQLLOCK_OK) {
            __atomic_add_fetch(&sh->committed, 1, __ATOMIC_SEQ_CST);
            if (!sold_out)
                __atomic_add_fetch(&sh->done, 1, __ATOMIC_SEQ_CST);
        } else {
            shared_error(sh, db, "R4 stock: commit", rc);
            res = 3;
        }
        sqllock_txn_free(t);
    }
    sqllock_close(db);
    return res;
}

void test_rowlock_R4_stock_for_update(void **state)
{
    fixture *f = *state;
    shared *sh, copy;
    sqllock_value v[2];
    int failed;
    int64_t t0, final;

    tu_exec_ok(f->db, "DELETE FROM %s", f->stock, NULL, 0);
    v[0] = sqllock__int(1);
    v[1] = sqllock__int(STOCK);
    tu_exec_ok(f->db, f->sql->stock_insert, f->stock, v, 2);
    sh = tu_shared_map(sizeof *sh);
    t0 = tu_now_ms();
    failed = run_children(f, PROCS, sh, "R4 stock", r4_stock_child);
    copy = *sh;
    munmap(sh, sizeof *sh);
    v[0] = sqllock__int(1);
    final = query_int(f->db, f->sql->stock_qty, f->stock, v, 1);
    printf("    R4 [%s] %d processes on a stock of %d: sold %lld, final "
           "%lld, %d transactions, %d overlaps, %lld ms\n", f->driver, PROCS,
           STOCK, (long long)copy.done, (long long)final, copy.committed,
           copy.overlap, (long long)(tu_now_ms() - t0));
    if (copy.errors != 0)
        fail_msg("%d errors; first: %s", copy.errors, copy.error);
    assert_int_equal(failed, 0);
    if (final != 0 || copy.done != STOCK || copy.negative != 0)
        fail_msg("stock: final %lld (want 0), sold %lld (want %d), %lld "
                 "reads below zero", (long long)final, (long long)copy.done,
                 STOCK, (long long)copy.negative);
    if (copy.overlap != 0)
        fail_msg("two processes held the stock row at once %d times",
                 copy.overlap);
}

/* ------------------------------------------------------------------ */
/* R1: a SKIP LOCKED work queue                                        */
/* ------------------------------------------------------------------ */

static int queue_worker(fixture *f, int me, shared *sh)
{
    sqllock_db *db = tu_child_open(g_url, "queue worker");
    sqllock_txn_options o = txn_opts(LONG_WAIT_MS);
    sqllock_table jt;
    int pass, rc, res = 0;

    if (db == NULL)
        return 2;
    jt.table = f->jobs;
    jt.key_column = "id";
    jt.version_column = NULL;
    tu_barrier(&sh->arrived, QUEUE_WORKERS);
    for (pass = 0; pass < 2000 && res == 0; pass++) {
        int64_t open = -1;
        int b;
        for (b = 1; b <= QUEUE_JOBS && res == 0; b += QUEUE_BATCH) {
            sqllock_cell keys[QUEUE_BATCH];
            int got[QUEUE_BATCH], k;
            sqllock_txn *t = NULL;

            for (k = 0; k < QUEUE_BATCH; k++) {
                sqllock_cell c = SQLLOCK_NUMBER(b + k);
                keys[k] = c;
                got[k] = -1;
            }
            rc = sqllock_txn_begin(db, &o, &t);
            if (rc == SQLLOCK_OK)
                rc = sqllock_txn_lock_rows(t, &jt, keys, QUEUE_BATCH,
                                           SQLLOCK_LOCK_SKIP_LOCKED, got);
            if (rc != SQLLOCK_OK) {
                shared_error(sh, db, "queue: begin/lock_rows", rc);
                sqllock_txn_free(t);
                res = 3;
                break;
            }
            for (k = 0; k < QUEUE_BATCH && rc == SQLLOCK_OK; k++) {
                sqllock_value v[2];
                int64_t done = -1;
                int has_row = 0;
                if (got[k] != 1) {
                    if (got[k] != 0)
                        shared_error(sh, db, "queue: got is neither 0 nor 1",
                                     SQLLOCK_OK);
                    __atomic_add_fetch(&sh->skipped, 1, __ATOMIC_SEQ_CST);
                    continue;
                }
                __atomic_add_fetch(&sh->taken, 1, __ATOMIC_SEQ_CST);
                v[0] = sqllock__int(b + k);
                rc = tu_exec_on(db, f->sql->job_done, f->jobs, v, 1, &has_row,
                                &done, NULL);
                if (rc == SQLLOCK_OK && !has_row)
                    rc = SQLLOCK_NOTFOUND;
                if (rc != SQLLOCK_OK || done != 0)
                    continue;
                tu_sleep_us(200);
                rc = tu_exec_on(db, f->sql->job_mark, f->jobs, v, 1, NULL,
                                NULL, NULL);
                v[1] = sqllock__int(me);
                if (rc == SQLLOCK_OK)
                    rc = tu_exec_on(db, f->sql->proc_insert, f->processed,
                                    v, 2, NULL, NULL, NULL);
                if (rc == SQLLOCK_OK)
                    __atomic_add_fetch(&sh->done, 1, __ATOMIC_SEQ_CST);
            }
            if (rc != SQLLOCK_OK) {
                shared_error(sh, db, "queue: statement in the transaction",
                             rc);
                sqllock_txn_free(t);
                res = 3;
                break;
            }
            rc = sqllock_txn_commit(t);
            if (rc == SQLLOCK_OK) {
                __atomic_add_fetch(&sh->committed, 1, __ATOMIC_SEQ_CST);
            } else {
                shared_error(sh, db, "queue: commit", rc);
                res = 3;
            }
            sqllock_txn_free(t);
        }
        if (res != 0)
            break;
        rc = tu_exec_on(db, SQL_JOBS_OPEN, f->jobs, NULL, 0, NULL, &open,
                        NULL);
        if (rc != SQLLOCK_OK) {
            shared_error(sh, db, "queue: counting open jobs", rc);
            res = 3;
        } else if (open == 0) {
            break;
        }
    }
    sqllock_close(db);
    return res;
}

void test_rowlock_R1_skip_locked_queue(void **state)
{
    fixture *f = *state;
    shared *sh, copy;
    sqllock_value v[1];
    int i, failed;
    int64_t t0, processed, not_once, jobs_bad;

    tu_exec_ok(f->db, "DELETE FROM %s", f->jobs, NULL, 0);
    tu_exec_ok(f->db, "DELETE FROM %s", f->processed, NULL, 0);
    for (i = 1; i <= QUEUE_JOBS; i++) {
        v[0] = sqllock__int(i);
        tu_exec_ok(f->db, f->sql->job_insert, f->jobs, v, 1);
    }
    sh = tu_shared_map(sizeof *sh);
    t0 = tu_now_ms();
    failed = run_children(f, QUEUE_WORKERS, sh, "queue", queue_worker);
    copy = *sh;
    munmap(sh, sizeof *sh);
    processed = query_int(f->db, SQL_COUNT_ALL, f->processed, NULL, 0);
    not_once = query_int(f->db, SQL_PROCESSED_NOT_ONCE, f->processed, NULL,
                         0);
    jobs_bad = query_int(f->db, SQL_JOBS_NOT_DONE_ONCE, f->jobs, NULL, 0);
    printf("    queue [%s] %d workers, %d jobs in batches of %d: %lld "
           "processed by the workers, %lld rows in processed, %lld names "
           "taken, %lld skipped, %d transactions, %lld ms\n", f->driver,
           QUEUE_WORKERS, QUEUE_JOBS, QUEUE_BATCH, (long long)copy.done,
           (long long)processed, (long long)copy.taken,
           (long long)copy.skipped, copy.committed,
           (long long)(tu_now_ms() - t0));
    if (copy.errors != 0)
        fail_msg("%d errors; first: %s", copy.errors, copy.error);
    assert_int_equal(failed, 0);
    if (processed != QUEUE_JOBS || not_once != 0 || jobs_bad != 0 ||
        copy.done != QUEUE_JOBS)
        fail_msg("jobs not processed exactly once: %lld rows in processed "
                 "for %d jobs, %lld jobs with other than one row, %lld jobs "
                 "whose done is not 1", (long long)processed, QUEUE_JOBS,
                 (long long)not_once, (long long)jobs_bad);
}
