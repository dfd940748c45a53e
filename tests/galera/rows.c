/*
 * rows.c -- test_galera c: row locks on Galera are
 * node-local, and certification keeps an update from being lost (R1).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "test_util.h"
#include "test_run.h"
#include "test_spawn.h"
#include "galera.h"

/* ------------------------------------------------------------------ */
/* c. Row locks on Galera                                              */
/* ------------------------------------------------------------------ */

#define C_TABLE "sqllock_test_galera_acct"

static void c_set(sqllock_db *db, int64_t id, int64_t bal)
{
    sqllock_value a[2];

    a[0] = sqllock__int(bal);
    a[1] = sqllock__int(id);
    TU_ASSERT_RC(sqllock__exec_sql(db, "UPDATE " C_TABLE " SET bal = ? WHERE "
                                "id = ?", a, 2, NULL, NULL, NULL),
              SQLLOCK_OK, db);
}

static int64_t c_get(sqllock_db *db, int64_t id)
{
    sqllock_value a = sqllock__int(id);
    int64_t v = -1;
    int has = 0;

    TU_ASSERT_RC(sqllock__exec_sql(db, "SELECT bal FROM " C_TABLE " WHERE id = "
                                "?", &a, 1, &has, &v, NULL), SQLLOCK_OK, db);
    assert_true(has);
    return v;
}

void test_galera_c_R1_row_locks_are_node_local(void **state)
{
    static const sqllock_table acct = { C_TABLE, "id", NULL };
    sqllock_cell key = SQLLOCK_NUMBER(0);
    sqllock_txn_options to = SQLLOCK_TXN_OPTIONS_INIT;
    sqllock_db *d1, *d2, *d1b, *chk;
    sqllock_txn *t1 = NULL, *t2 = NULL, *t3 = NULL;
    sqllock_value idv;
    int64_t id = (int64_t)getpid(), b1, b2, t0, waited;
    int got = 0, rc1, rc2, wins = 0, i;

    (void)state;
    key.number = id;
    idv = sqllock__int(id);
    d1 = tu_open_or_fail(g_url[0]);
    d2 = tu_open_or_fail(g_url[1]);
    d1b = tu_open_or_fail(g_url[0]);
    chk = gl_open_checker(1);
    TU_ASSERT_RC(sqllock__exec_sql(d1, "CREATE TABLE IF NOT EXISTS " C_TABLE
                                " (id BIGINT PRIMARY KEY, bal BIGINT NOT "
                                "NULL) ENGINE = InnoDB", NULL, 0, NULL, NULL,
                                NULL), SQLLOCK_OK, d1);
    TU_ASSERT_RC(sqllock__exec_sql(d1, "INSERT INTO " C_TABLE " (id, bal) "
                                "VALUES (?, 100)", &idv, 1, NULL, NULL, NULL),
              SQLLOCK_OK, d1);
    /* Node 2 has the row (a causal read waits for it). */
    assert_int_equal(c_get(chk, id), 100);
    to.lock_timeout_ms = 1000;
#ifdef SQLLOCK_ROW_LOCKS_NODE
    {
        /* The scope the library reports for a Galera node. */
        int scope = 0;
        TU_ASSERT_RC(sqllock_row_lock_scope(d1, &scope), SQLLOCK_OK, d1);
        assert_int_equal(scope, SQLLOCK_ROW_LOCKS_NODE);
        TU_ASSERT_RC(sqllock_row_lock_scope(d2, &scope), SQLLOCK_OK, d2);
        assert_int_equal(scope, SQLLOCK_ROW_LOCKS_NODE);
        printf("  c: sqllock_row_lock_scope() on nodes 1 and 2: %s\n",
               sqllock_row_lock_scope_name(scope));
    }
#endif
    {
        /* M2: a reader's share lock would be one node's: shared/exclusive
         * locks are refused on a Galera node, nothing taken. */
        sqllock_lease_options lo = SQLLOCK_LEASE_OPTIONS_INIT;
        sqllock_rw *rw = NULL;

        lo.ttl_ms = 10000;
        TU_ASSERT_RC(sqllock_rw_new(d1, "galera-rw", 1, &lo, &rw), SQLLOCK_OK,
                     d1);
        TU_ASSERT_RC(sqllock_rw_try_acquire(rw), SQLLOCK_EUNSUPPORTED, d1);
        sqllock_rw_free(rw);
    }

    /* Two nodes: both lock the row at once. */
    TU_ASSERT_RC(sqllock_txn_begin(d1, &to, &t1), SQLLOCK_OK, d1);
    TU_ASSERT_RC(sqllock_txn_begin(d2, &to, &t2), SQLLOCK_OK, d2);
    TU_ASSERT_RC(sqllock_txn_lock_rows(t1, &acct, &key, 1, SQLLOCK_LOCK_NOWAIT,
                                    &got), SQLLOCK_OK, d1);
    assert_int_equal(got, 1);
    t0 = tu_now_ms();
    TU_ASSERT_RC(sqllock_txn_lock_rows(t2, &acct, &key, 1, SQLLOCK_LOCK_NOWAIT,
                                    &got), SQLLOCK_OK, d2);
    assert_int_equal(got, 1);
    waited = tu_now_ms() - t0;
    /* Both read 100 under their lock and write 100 + 1: the classic lost
     * update, if both commits went through. */
    b1 = c_get(d1, id);
    b2 = c_get(d2, id);
    assert_int_equal(b1, 100);
    assert_int_equal(b2, 100);
    c_set(d1, id, b1 + 1);
    c_set(d2, id, b2 + 1);
    rc1 = sqllock_txn_commit(t1);
    rc2 = sqllock_txn_commit(t2);
    printf("  c: FOR UPDATE NOWAIT on the same row: node 1 OK, node 2 OK "
           "%lld ms later (both held it at once); commits: node 1 %s, node "
           "2 %s (%s)\n", (long long)waited, sqllock_errname(rc1),
           sqllock_errname(rc2), rc2 != SQLLOCK_OK ? sqllock_errmsg(d2) : "");
    wins = (rc1 == SQLLOCK_OK) + (rc2 == SQLLOCK_OK);
    if (wins != 1)
        fail_msg("R1 on Galera: %d of the 2 conflicting commits succeeded, "
                 "want exactly 1", wins);
    if ((rc1 != SQLLOCK_OK && rc1 != SQLLOCK_EDEADLOCK) ||
        (rc2 != SQLLOCK_OK && rc2 != SQLLOCK_EDEADLOCK))
        fail_msg("the losing commit reported %s, want SQLLOCK_EDEADLOCK "
                 "(certification failure)",
                 sqllock_errname(rc1 != SQLLOCK_OK ? rc1 : rc2));
    assert_true(sqllock_retryable(SQLLOCK_EDEADLOCK));
    sqllock_txn_free(t1);
    sqllock_txn_free(t2);
    t1 = t2 = NULL;
    /* No lost update: 101 everywhere; the loser retries and makes 102. */
    assert_int_equal(c_get(chk, id), 101);
    for (i = 0; i < 5; i++) {
        sqllock_db *loser = rc1 != SQLLOCK_OK ? d1 : d2;
        int rc;
        TU_ASSERT_RC(sqllock_txn_begin(loser, &to, &t1), SQLLOCK_OK, loser);
        rc = sqllock_txn_lock_rows(t1, &acct, &key, 1, SQLLOCK_LOCK_WAIT,
                                   &got);
        if (rc == SQLLOCK_OK) {
            c_set(loser, id, c_get(loser, id) + 1);
            rc = sqllock_txn_commit(t1);
        }
        sqllock_txn_free(t1);
        t1 = NULL;
        if (rc == SQLLOCK_OK)
            break;
        assert_true(sqllock_retryable(rc));
    }
    assert_int_equal(c_get(chk, id), 102);

    /* A lock held on node 1 does not keep a writer on node 2 out: node
     * 2's update commits at once, and node 1's transaction is aborted
     * (brute force) by the replicated write; its commit says EDEADLOCK. */
    {
        sqllock_db *chk1 = gl_open_checker(0);
        int rc;
        assert_int_equal(c_get(chk1, id), 102);
        TU_ASSERT_RC(sqllock_txn_begin(d1, &to, &t1), SQLLOCK_OK, d1);
        TU_ASSERT_RC(sqllock_txn_lock_rows(t1, &acct, &key, 1,
                                        SQLLOCK_LOCK_WAIT, &got),
                  SQLLOCK_OK, d1);
        t0 = tu_now_ms();
        c_set(d2, id, 200);
        waited = tu_now_ms() - t0;
        /* Node 1 applies it (a causal read there waits for that). */
        assert_int_equal(c_get(chk1, id), 200);
        rc = sqllock__exec_sql(d1, "UPDATE " C_TABLE " SET bal = 300 WHERE "
                               "id = ?", &idv, 1, NULL, NULL, NULL);
        if (rc == SQLLOCK_OK)
            rc = sqllock_txn_commit(t1);
        printf("  c: node 1 holds the row lock; an update through node 2 "
               "committed in %lld ms without waiting; node 1's transaction "
               "then got %s (%s)\n", (long long)waited, sqllock_errname(rc),
               sqllock_errmsg(d1));
        if (rc != SQLLOCK_EDEADLOCK)
            fail_msg("node 1's transaction, whose row lock a write through "
                     "node 2 overrode, ended with %s, want SQLLOCK_EDEADLOCK",
                     sqllock_errname(rc));
        sqllock_txn_free(t1);
        t1 = NULL;
        assert_int_equal(c_get(chk1, id), 200);
        sqllock_close(chk1);
    }

    /* One node: the second locker waits and gets ELOCKED. */
    TU_ASSERT_RC(sqllock_txn_begin(d1, &to, &t1), SQLLOCK_OK, d1);
    TU_ASSERT_RC(sqllock_txn_begin(d1b, &to, &t3), SQLLOCK_OK, d1b);
    TU_ASSERT_RC(sqllock_txn_lock_rows(t1, &acct, &key, 1, SQLLOCK_LOCK_WAIT,
                                    &got), SQLLOCK_OK, d1);
    t0 = tu_now_ms();
    TU_ASSERT_RC(sqllock_txn_lock_rows(t3, &acct, &key, 1, SQLLOCK_LOCK_NOWAIT,
                                    &got), SQLLOCK_ELOCKED, d1b);
    sqllock_txn_free(t3);
    t3 = NULL;
    TU_ASSERT_RC(sqllock_txn_begin(d1b, &to, &t3), SQLLOCK_OK, d1b);
    t0 = tu_now_ms();
    TU_ASSERT_RC(sqllock_txn_lock_rows(t3, &acct, &key, 1, SQLLOCK_LOCK_WAIT,
                                    &got), SQLLOCK_ELOCKED, d1b);
    waited = tu_now_ms() - t0;
    assert_true(waited >= 900);
    sqllock_txn_free(t3);
    /* The library's own lock rows behave the same (R1 via txn_lock). */
    {
        char name[96];
        const char *names[1];
        sqllock_txn *u1 = NULL, *u2 = NULL;
        snprintf(name, sizeof name, "galera-%ld-c-row", (long)getpid());
        names[0] = name;
        TU_ASSERT_RC(sqllock_txn_commit(t1), SQLLOCK_OK, d1);
        sqllock_txn_free(t1);
        t1 = NULL;
        /* Create the row once, then lock it on two nodes at once. */
        TU_ASSERT_RC(sqllock_txn_begin(d1, &to, &u1), SQLLOCK_OK, d1);
        TU_ASSERT_RC(sqllock_txn_lock(u1, names, 1, SQLLOCK_LOCK_WAIT, &got),
                  SQLLOCK_OK, d1);
        TU_ASSERT_RC(sqllock_txn_commit(u1), SQLLOCK_OK, d1);
        sqllock_txn_free(u1);
        u1 = NULL;
        {
            sqllock_value nv = sqllock__text(name);
            int64_t cnt = 0;
            int has = 0;
            TU_ASSERT_RC(sqllock__exec_sql(chk, "SELECT COUNT(*) FROM sqllock_row "
                                        "WHERE name = ?", &nv, 1, &has, &cnt,
                                        NULL), SQLLOCK_OK, chk);
            assert_int_equal(cnt, 1);
        }
        TU_ASSERT_RC(sqllock_txn_begin(d1, &to, &u1), SQLLOCK_OK, d1);
        TU_ASSERT_RC(sqllock_txn_begin(d2, &to, &u2), SQLLOCK_OK, d2);
        TU_ASSERT_RC(sqllock_txn_lock(u1, names, 1, SQLLOCK_LOCK_NOWAIT, &got),
                  SQLLOCK_OK, d1);
        TU_ASSERT_RC(sqllock_txn_lock(u2, names, 1, SQLLOCK_LOCK_NOWAIT, &got),
                  SQLLOCK_OK, d2);
        printf("  c: sqllock_txn_lock of one name on node 1 and node 2: both "
               "OK at once (row locks are node-local)\n");
        TU_ASSERT_RC(sqllock_txn_commit(u1), SQLLOCK_OK, d1);
        TU_ASSERT_RC(sqllock_txn_commit(u2), SQLLOCK_OK, d2);
        sqllock_txn_free(u1);
        sqllock_txn_free(u2);
    }
    printf("  c: same node: NOWAIT ELOCKED at once, WAIT ELOCKED after %lld "
           "ms (lock timeout 1000 ms)\n", (long long)waited);
    TU_ASSERT_RC(sqllock__exec_sql(d1, "DELETE FROM " C_TABLE " WHERE id = ?",
                                &idv, 1, NULL, NULL, NULL), SQLLOCK_OK, d1);
    sqllock_close(chk);
    sqllock_close(d1b);
    sqllock_close(d2);
    sqllock_close(d1);
}

