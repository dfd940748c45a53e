/*
 * update.c -- sqllock_table_guarded_update(): the library's own write on
 * an application table, guarded by the lease (DESIGN G1, L5).
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
#include "test_spawn.h"
#include "guard/guard.h"

static const sqllock_table PLAIN = { GUARD_TABLE, "id", NULL };
static const sqllock_table VERSIONED = { GUARD_TABLE, "id", "ver" };

static int gset(sqllock_db *db, const sqllock_lease *l, int64_t id,
                int64_t val, const char *fence)
{
    sqllock_cell key = SQLLOCK_NUMBER(id);
    sqllock_cell set = { "val", SQLLOCK_OP_SET, NULL, val };

    return sqllock_table_guarded_update(db, l, &PLAIN, &key, fence, &set, 1,
                                        NULL, 0);
}

/*
 * G1: applied while held (the fence and the version move when named);
 * CONFLICT when a condition fails, NOTFOUND without the row, LOST -- and
 * nothing changed -- once the lease is no longer this hold's: expired by
 * the server's clock without a takeover, taken over (before the new
 * holder wrote anything), released.
 */
void test_guard_G1_update_statuses(void **state)
{
    const int64_t ttl = tu_scaled_ms(400);
    sqllock_db *db = guard_open(), *db2 = guard_open();
    int64_t id = guard_row(db), val, n, fence, t0, t2;
    sqllock_cell key = SQLLOCK_NUMBER(id), missing = SQLLOCK_NUMBER(-id);
    sqllock_cell add = { "n", SQLLOCK_OP_ADD, NULL, 1 };
    sqllock_cell big = { "val", SQLLOCK_OP_GE, NULL, 1000 };
    sqllock_lease *l, *l2;
    char name[96];
    int tries = 0;
    (void)state;

    guard_name(name, sizeof name, "statuses");
    l = guard_acquire(db, name, 30000, 0);
    EXPECT_RC(db, gset(db, l, id, 5, NULL), SQLLOCK_OK, "held");
    EXPECT_RC(db, gset(db, l, id, 6, "fence"), SQLLOCK_OK, "held, fenced");
    EXPECT_RC(db, sqllock_table_guarded_update(db, l, &VERSIONED, &key, NULL,
                                               &add, 1, NULL, 0),
              SQLLOCK_OK, "held, versioned");
    guard_read(db, id, &val, &n, &fence);
    assert_int_equal(val, 6);
    assert_int_equal(n, 1);
    assert_int_equal(fence, sqllock_lease_token(l));
    EXPECT_RC(db, sqllock_table_guarded_update(db, l, &PLAIN, &key, NULL,
                                               &add, 1, &big, 1),
              SQLLOCK_CONFLICT, "a condition fails");
    EXPECT_RC(db, sqllock_table_guarded_update(db, l, &PLAIN, &missing, NULL,
                                               &add, 1, NULL, 0),
              SQLLOCK_NOTFOUND, "no such row");
    /* The lease handle on another handle than the write's. */
    EXPECT_RC(db2, gset(db2, l, id, 7, NULL), SQLLOCK_OK, "through db2");
    EXPECT_RC(db, sqllock_lease_release(l), SQLLOCK_OK, "release");
    sqllock_lease_free(l);

    /* Expired, nobody took it over: LOST all the same. */
    for (;;) {
        guard_name(name, sizeof name, "statuses-exp");
        t0 = tu_now_ms();
        l = guard_acquire(db, name, ttl, 0);
        if (gset(db, l, id, 8, NULL) != SQLLOCK_OK || tu_now_ms() - t0 >= ttl) {
            sqllock_lease_free(l);
            tu_too_slow(&tries, 3, "the first write came after the ttl");
            continue;
        }
        break;
    }
    sqllock__sleep_ms(t0 + ttl + tu_scaled_ms(150) - tu_now_ms());
    EXPECT_RC(db, gset(db, l, id, 9, NULL), SQLLOCK_LOST, "expired");
    expect_msg_any(db, "expired", "no longer held");
    /* Taken over; the new holder has written nothing yet. */
    l2 = guard_acquire(db2, name, 30000, 0);
    t2 = sqllock_lease_token(l2);
    EXPECT_RC(db, gset(db, l, id, 10, "fence"), SQLLOCK_LOST, "taken over");
    EXPECT_RC(db, gset(db, l, id, 10, NULL), SQLLOCK_LOST, "taken over");
    guard_read(db, id, &val, NULL, NULL);
    assert_int_equal(val, 8);
    EXPECT_RC(db2, gset(db2, l2, id, 11, "fence"), SQLLOCK_OK, "new holder");
    EXPECT_RC(db2, sqllock_lease_release(l2), SQLLOCK_OK, "release");
    EXPECT_RC(db2, gset(db2, l2, id, 12, NULL), SQLLOCK_ENOTHELD,
              "after the release");
    guard_read(db, id, &val, NULL, &fence);
    assert_int_equal(val, 11);
    assert_int_equal(fence, t2);
    sqllock_lease_free(l2);
    EXPECT_RC(db, sqllock_lease_release(l), SQLLOCK_LOST, "A's release");
    sqllock_lease_free(l);
    guard_close(db2);
    guard_close(db);
}

/*
 * G1, L5, O1 (issue 26 item 3): a guarded or fenced update that writes
 * the values the row already has -- the natural case is a retry after a
 * lost answer: the same hold writes the same values again -- is applied
 * (SQLLOCK_OK), not a conflict. Equal tokens pass. MySQL counts such a
 * row as matched but not changed; the library must read "matched".
 */
void test_guard_G1_L5_update_same_values_ok(void **state)
{
    sqllock_db *db = guard_open();
    int64_t id = guard_row(db), val, fence;
    sqllock_cell key = SQLLOCK_NUMBER(id);
    sqllock_cell set = { "val", SQLLOCK_OP_SET, NULL, 21 };
    sqllock_cell add0 = { "val", SQLLOCK_OP_ADD, NULL, 0 };
    sqllock_cell is21 = { "val", SQLLOCK_OP_EQ, NULL, 21 };
    sqllock_lease *l;
    char name[96];
    int64_t token;
    int i;
    (void)state;

    guard_name(name, sizeof name, "same");
    l = guard_acquire(db, name, 30000, 0);
    token = sqllock_lease_token(l);
    for (i = 0; i < 2; i++) {
        /* The second round writes what the first wrote. */
        EXPECT_RC(db, gset(db, l, id, 21, "fence"), SQLLOCK_OK,
                  i == 0 ? "guarded, fenced" : "guarded, fenced, again");
        EXPECT_RC(db, gset(db, l, id, 21, NULL), SQLLOCK_OK,
                  "guarded, the value the row has");
        EXPECT_RC(db, sqllock_table_fenced_update(db, &PLAIN, &key, "fence",
                                                  token, &set, 1, NULL, 0),
                  SQLLOCK_OK, "fenced, the same value and token");
        EXPECT_RC(db, sqllock_table_fenced_update(db, &PLAIN, &key, "fence",
                                                  token, NULL, 0, NULL, 0),
                  SQLLOCK_OK, "fenced, only the fence, the same token");
    }
    EXPECT_RC(db, sqllock_table_guarded_update(db, l, &PLAIN, &key, NULL,
                                               &add0, 1, &is21, 1),
              SQLLOCK_OK, "guarded, + 0 where the condition holds");
    guard_read(db, id, &val, NULL, &fence);
    assert_int_equal(val, 21);
    assert_int_equal(fence, token);
    /* What still fails, fails: a condition, a missing row. */
    is21.number = 22;
    EXPECT_RC(db, sqllock_table_guarded_update(db, l, &PLAIN, &key, NULL,
                                               &add0, 1, &is21, 1),
              SQLLOCK_CONFLICT, "guarded, a condition fails");
    EXPECT_RC(db, sqllock_table_fenced_update(db, &PLAIN, &key, "fence",
                                              token, &set, 1, &is21, 1),
              SQLLOCK_CONFLICT, "fenced, a condition fails");
    key.number = -id;
    EXPECT_RC(db, gset(db, l, -id, 21, "fence"), SQLLOCK_NOTFOUND,
              "guarded, no such row");
    EXPECT_RC(db, sqllock_table_fenced_update(db, &PLAIN, &key, "fence",
                                              token, &set, 1, NULL, 0),
              SQLLOCK_NOTFOUND, "fenced, no such row");
    EXPECT_RC(db, sqllock_lease_release(l), SQLLOCK_OK, "release");
    sqllock_lease_free(l);
    guard_close(db);
}

/* G1 inside a row-lock transaction on the handle: the write commits or
 * rolls back with it, and a refused guard (LOST) does not fail the
 * transaction. */
void test_guard_G1_update_in_txn(void **state)
{
    sqllock_db *db = guard_open();
    int64_t id = guard_row(db), val;
    sqllock_txn *t = NULL;
    sqllock_lease *l, *other;
    char name[96], name2[96];
    (void)state;

    guard_name(name, sizeof name, "txn");
    guard_name(name2, sizeof name2, "txn-other");
    l = guard_acquire(db, name, 30000, 0);
    other = guard_acquire(db, name2, 30000, 0);
    EXPECT_RC(db, sqllock_lease_release(other), SQLLOCK_OK, "release");
    /* A lease handle that still counts its hold, its row gone. */
    {
        sqllock_lease *ghost = NULL;
        sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
        o.ttl_ms = 30000;
        EXPECT_RC(db, sqllock_lease_attach(db, name2,
                                           "0123456789abcdef0123456789abcdef",
                                           12345, &o, &ghost),
                  SQLLOCK_OK, "attach");
        EXPECT_RC(db, sqllock_txn_begin(db, NULL, &t), SQLLOCK_OK, "begin");
        assert_non_null(sqllock_txn_native(t));
        EXPECT_RC(db, gset(db, l, id, 1, NULL), SQLLOCK_OK, "in the txn");
        EXPECT_RC(db, gset(db, ghost, id, 2, NULL), SQLLOCK_LOST,
                  "a lease that is gone, in the txn");
        EXPECT_RC(db, sqllock_txn_commit(t), SQLLOCK_OK, "commit");
        sqllock_txn_free(t);
        sqllock_lease_free(ghost);
    }
    guard_read(db, id, &val, NULL, NULL);
    assert_int_equal(val, 1);
    EXPECT_RC(db, sqllock_txn_begin(db, NULL, &t), SQLLOCK_OK, "begin");
    assert_non_null(sqllock_txn_native(t));
    EXPECT_RC(db, gset(db, l, id, 3, NULL), SQLLOCK_OK, "in the txn");
    EXPECT_RC(db, sqllock_txn_rollback(t), SQLLOCK_OK, "rollback");
    sqllock_txn_free(t);
    guard_read(db, id, &val, NULL, NULL);
    assert_int_equal(val, 1);
    EXPECT_RC(db, sqllock_lease_release(l), SQLLOCK_OK, "release");
    sqllock_lease_free(l);
    sqllock_lease_free(other);
    guard_close(db);
}

typedef struct delayed_shared {
    int step;                  /* 1: A holds; 2: resume (parent); 3: done */
    int64_t token;
    int guarded_rc, fenced_rc;
} delayed_shared;

static void delayed_holder(delayed_shared *sh, const char *name,
                           int64_t id1, int64_t id2, int64_t ttl)
{
    sqllock_db *db = tu_child_open(g_url, "delayed holder");
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_lease *l = NULL;
    sqllock_cell key2 = SQLLOCK_NUMBER(id2);
    sqllock_cell set = { "val", SQLLOCK_OP_SET, NULL, 111 };

    o.ttl_ms = ttl;
    if (db == NULL || sqllock_lease_new(db, name, &o, &l) != SQLLOCK_OK ||
        sqllock_lease_try_acquire(l) != SQLLOCK_OK) {
        __atomic_store_n(&sh->step, -1, __ATOMIC_SEQ_CST);
        _exit(2);
    }
    sh->token = sqllock_lease_token(l);
    __atomic_store_n(&sh->step, 1, __ATOMIC_SEQ_CST);
    /* Frozen here, its write on the way, past its ttl. */
    while (__atomic_load_n(&sh->step, __ATOMIC_SEQ_CST) != 2)
        tu_sleep_ms(1);
    sh->guarded_rc = gset(db, l, id1, 111, "fence");
    sh->fenced_rc = sqllock_table_fenced_update(db, &PLAIN, &key2, "fence",
                                                sh->token, &set, 1, NULL, 0);
    sqllock_lease_free(l);
    guard_close(db);
    __atomic_store_n(&sh->step, 3, __ATOMIC_SEQ_CST);
    _exit(0);
}

/*
 * G1, the frozen network of issue 17: holder A's write is held up past
 * its lease's expiry (here A is stopped with SIGSTOP just before it; in
 * the incident a network froze for 3.7 s with the write in flight), the
 * lease is granted again to B, which has written nothing yet. The
 * guarded update is refused (LOST) and changes nothing. The old fenced
 * update, which compares tokens in the data row only, still applies --
 * what sqllock_table_fenced_update() documents.
 */
void test_guard_G1_update_delayed_past_expiry(void **state)
{
    const int64_t ttl = tu_scaled_ms(500);
    delayed_shared *sh = tu_shared_map(sizeof *sh);
    sqllock_db *db = guard_open();
    int64_t id1 = guard_row(db), id2 = guard_row(db), val, fence;
    sqllock_lease *l;
    char name[96];
    pid_t pid;
    (void)state;

    guard_name(name, sizeof name, "delayed");
    guard_close(db);
    fflush(stdout);
    fflush(stderr);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        delayed_holder(sh, name, id1, id2, ttl);
    guard_wait_flag(&sh->step, 1, tu_scaled_ms(20000));
    assert_int_equal(kill(pid, SIGSTOP), 0);
    db = guard_open();
    l = guard_acquire(db, name, 30000, ttl + tu_scaled_ms(10000));
    assert_true(sqllock_lease_token(l) > sh->token);
    __atomic_store_n(&sh->step, 2, __ATOMIC_SEQ_CST);
    assert_int_equal(kill(pid, SIGCONT), 0);
    assert_int_equal(tu_wait(pid), 0);
    assert_int_equal(sh->step, 3);
    if (sh->guarded_rc != SQLLOCK_LOST)
        fail_msg("G1: the delayed guarded update said %s, want LOST",
                 sqllock_errname(sh->guarded_rc));
    guard_read(db, id1, &val, NULL, &fence);
    assert_int_equal(val, 0);
    assert_int_equal(fence, 0);
    /* The documented gap of the token-only fence. */
    assert_int_equal(sh->fenced_rc, SQLLOCK_OK);
    guard_read(db, id2, &val, NULL, NULL);
    assert_int_equal(val, 111);
    EXPECT_RC(db, sqllock_lease_release(l), SQLLOCK_OK, "release");
    sqllock_lease_free(l);
    guard_close(db);
    munmap(sh, sizeof *sh);
}
