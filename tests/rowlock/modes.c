/*
 * modes.c -- test_rowlock: the three lock modes (R1), duplicates and the
 * sorted order that keeps two clients from deadlocking (R2), deadlocks
 * through the application's own rows (R3).
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
/* R1: the three modes                                                 */
/* ------------------------------------------------------------------ */

/* Process A: locks `name` (WAIT), says 'H' (or 'E'), and holds it until
 * the parent says to let go, then 400 ms more, then commits. */
static int r1_holder(const char *name, int up, int down)
{
    sqllock_db *db = tu_child_open(g_url, "R1 holder");
    sqllock_txn *t = NULL;
    int rc, res = 0;

    if (db == NULL) {
        pipe_put(up, 'E');
        return 2;
    }
    rc = sqllock_txn_begin(db, NULL, &t);
    if (rc == SQLLOCK_OK)
        rc = sqllock_txn_lock(t, &name, 1, SQLLOCK_LOCK_WAIT, NULL);
    if (rc != SQLLOCK_OK) {
        fprintf(stderr, "R1 holder: lock: %s: %s\n", sqllock_errname(rc),
                sqllock_errmsg(db));
        pipe_put(up, 'E');
        sqllock_txn_free(t);
        sqllock_close(db);
        return 3;
    }
    pipe_put(up, 'H');
    (void)pipe_get(down, 60000);   /* 'R', or the parent went away */
    tu_sleep_ms(400);
    rc = sqllock_txn_commit(t);
    if (rc != SQLLOCK_OK) {
        fprintf(stderr, "R1 holder: commit: %s: %s\n", sqllock_errname(rc),
                sqllock_errmsg(db));
        res = 4;
    }
    sqllock_txn_free(t);
    sqllock_close(db);
    return res;
}

/* The parent's part of R1, while A holds x; returns NULL or what failed
 * (in msg). The holder is released (through `down`) before the last
 * step, the long WAIT that must succeed once A commits. */
static const char *r1_parent(fixture *f, sqllock_db *db2, const char *x,
                             const char *y, int down, char *msg, size_t size)
{
    sqllock_db *db = f->db;
    const char *xy[2];
    sqllock_txn *t = NULL;
    sqllock_txn_options o;
    int got[2], rc;
    int64_t t0, ms, max_ms;
    int sqlite = is_driver(f, "sqlite");

    xy[0] = x;
    xy[1] = y;
#define R1_FAIL(...)                                                         \
    do {                                                                     \
        snprintf(msg, size, __VA_ARGS__);                                    \
        sqllock_txn_free(t);                                                 \
        return msg;                                                          \
    } while (0)

    /* NOWAIT: ELOCKED at once, and the transaction is over. */
    rc = sqllock_txn_begin(db, NULL, &t);
    if (rc != SQLLOCK_OK)
        R1_FAIL("begin: %s: %s", sqllock_errname(rc), sqllock_errmsg(db));
    got[0] = -1;
    t0 = tu_now_ms();
    rc = sqllock_txn_lock(t, &x, 1, SQLLOCK_LOCK_NOWAIT, got);
    ms = tu_now_ms() - t0;
    if (rc != SQLLOCK_ELOCKED)
        R1_FAIL("NOWAIT on a name another process holds: got %s, want "
                "SQLLOCK_ELOCKED (%s)", sqllock_errname(rc),
                sqllock_errmsg(db));
    if (ms >= nowait_bound_ms())
        R1_FAIL("NOWAIT took %lld ms to report ELOCKED (want < %lld)",
                (long long)ms, (long long)nowait_bound_ms());
    if (sqllock_errcode(db) != SQLLOCK_ELOCKED)
        R1_FAIL("sqllock_errcode() is %s after ELOCKED",
                sqllock_errname(sqllock_errcode(db)));
    if (!sqllock_retryable(rc))
        R1_FAIL("sqllock_retryable(SQLLOCK_ELOCKED) is 0");
    if (got[0] == 1)
        R1_FAIL("NOWAIT failed with ELOCKED but got[0] says locked");
    rc = sqllock_txn_lock(t, &y, 1, SQLLOCK_LOCK_WAIT, NULL);
    if (rc != SQLLOCK_EMISUSE)
        R1_FAIL("lock on a transaction ended by ELOCKED: got %s, want "
                "SQLLOCK_EMISUSE (%s)", sqllock_errname(rc),
                sqllock_errmsg(db));
    rc = sqllock_txn_commit(t);
    if (rc != SQLLOCK_EMISUSE)
        R1_FAIL("commit of a transaction ended by ELOCKED: got %s, want "
                "SQLLOCK_EMISUSE (%s)", sqllock_errname(rc),
                sqllock_errmsg(db));
    rc = sqllock_txn_rollback(t);
    if (rc != SQLLOCK_OK)
        R1_FAIL("rollback of a transaction that is over: got %s, want OK "
                "(%s)", sqllock_errname(rc), sqllock_errmsg(db));
    sqllock_txn_free(t);
    t = NULL;

    /* WAIT with a 300 ms lock timeout: ELOCKED after about that long. */
    o = txn_opts(300);
    rc = sqllock_txn_begin(db, &o, &t);
    if (rc != SQLLOCK_OK)
        R1_FAIL("begin (300 ms): %s: %s", sqllock_errname(rc),
                sqllock_errmsg(db));
    t0 = tu_now_ms();
    rc = sqllock_txn_lock(t, &x, 1, SQLLOCK_LOCK_WAIT, NULL);
    ms = tu_now_ms() - t0;
    max_ms = is_driver(f, "mysql") ? 2500 : 1500;
    if (rc != SQLLOCK_ELOCKED)
        R1_FAIL("WAIT with lock_timeout_ms 300 on a held name: got %s, want "
                "SQLLOCK_ELOCKED (%s)", sqllock_errname(rc),
                sqllock_errmsg(db));
    if (ms < 250 || ms > max_ms)
        R1_FAIL("WAIT with lock_timeout_ms 300 gave up after %lld ms (want "
                "250..%lld)", (long long)ms, (long long)max_ms);
    printf("    R1 [%s] NOWAIT -> ELOCKED; WAIT 300 ms -> ELOCKED after "
           "%lld ms\n", f->driver, (long long)ms);
    sqllock_txn_free(t);
    t = NULL;

    /* SKIP_LOCKED: y only (PostgreSQL, MySQL); nothing on SQLite, whose
     * transaction takes the whole database (R5). */
    rc = sqllock_txn_begin(db, NULL, &t);
    if (rc != SQLLOCK_OK)
        R1_FAIL("begin (skip): %s: %s", sqllock_errname(rc),
                sqllock_errmsg(db));
    got[0] = got[1] = -1;
    t0 = tu_now_ms();
    rc = sqllock_txn_lock(t, xy, 2, SQLLOCK_LOCK_SKIP_LOCKED, got);
    ms = tu_now_ms() - t0;
    if (rc != SQLLOCK_OK)
        R1_FAIL("SKIP_LOCKED on {x, y} with x held: got %s, want OK (%s)",
                sqllock_errname(rc), sqllock_errmsg(db));
    if (sqlite ? (got[0] != 0 || got[1] != 0)
               : (got[0] != 0 || got[1] != 1))
        R1_FAIL("SKIP_LOCKED on {x, y} with x held: got = {%d, %d}, want "
                "{0, %d}", got[0], got[1], sqlite ? 0 : 1);
    if (ms >= 500)
        R1_FAIL("SKIP_LOCKED took %lld ms (want < 500)", (long long)ms);
    if (!sqlite) {
        /* y is really held by this transaction. */
        sqllock_txn *t2 = NULL;
        rc = sqllock_txn_begin(db2, NULL, &t2);
        if (rc == SQLLOCK_OK)
            rc = sqllock_txn_lock(t2, &y, 1, SQLLOCK_LOCK_NOWAIT, NULL);
        sqllock_txn_free(t2);
        if (rc != SQLLOCK_ELOCKED)
            R1_FAIL("y, taken by SKIP_LOCKED, is not held: NOWAIT from "
                    "another handle got %s (%s)", sqllock_errname(rc),
                    sqllock_errmsg(db2));
    }
    rc = sqllock_txn_commit(t);
    if (rc != SQLLOCK_OK)
        R1_FAIL("commit after SKIP_LOCKED: %s: %s", sqllock_errname(rc),
                sqllock_errmsg(db));
    sqllock_txn_free(t);
    t = NULL;

    /* WAIT with a long timeout: succeeds once A commits. */
    o = txn_opts(20000);
    rc = sqllock_txn_begin(db, &o, &t);
    if (rc != SQLLOCK_OK)
        R1_FAIL("begin (long): %s: %s", sqllock_errname(rc),
                sqllock_errmsg(db));
    pipe_put(down, 'R');
    got[0] = -1;
    t0 = tu_now_ms();
    rc = sqllock_txn_lock(t, &x, 1, SQLLOCK_LOCK_WAIT, got);
    ms = tu_now_ms() - t0;
    if (rc != SQLLOCK_OK)
        R1_FAIL("WAIT with a long timeout while A lets go: got %s, want OK "
                "(%s)", sqllock_errname(rc), sqllock_errmsg(db));
    if (got[0] != 1)
        R1_FAIL("WAIT succeeded but got[0] = %d", got[0]);
    if (ms < 300)
        R1_FAIL("WAIT returned after %lld ms, before A (which holds x "
                "400 ms more) can have committed", (long long)ms);
    rc = sqllock_txn_commit(t);
    if (rc != SQLLOCK_OK)
        R1_FAIL("commit after WAIT: %s: %s", sqllock_errname(rc),
                sqllock_errmsg(db));
    sqllock_txn_free(t);
    printf("    R1 [%s] WAIT succeeded %lld ms after A was told to let go\n",
           f->driver, (long long)ms);
#undef R1_FAIL
    return NULL;
}

void test_rowlock_R1_modes(void **state)
{
    fixture *f = *state;
    char x[128], y[128], msg[800];
    const char *failure = NULL;
    int up[2], down[2], c, st = 0;
    sqllock_db *db2;
    pid_t pid;

    lname(f, x, sizeof x, "r1-x");
    lname(f, y, sizeof y, "r1-y");
    assert_int_equal(pipe(up), 0);
    assert_int_equal(pipe(down), 0);
    tu_close_for_fork(&f->db);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(up[0]);
        close(down[1]);
        _exit(r1_holder(x, up[1], down[0]));
    }
    close(up[1]);
    close(down[0]);
    tu_reopen(&f->db, g_url);
    db2 = open_second();
    c = pipe_get(up[0], 30000);
    if (c != 'H') {
        snprintf(msg, sizeof msg, "process A did not report holding x "
                 "(got %d)", c);
        failure = msg;
    } else {
        failure = r1_parent(f, db2, x, y, down[1], msg, sizeof msg);
    }
    close(down[1]);            /* releases A if it still waits */
    close(up[0]);
    waitpid(pid, &st, 0);
    sqllock_close(db2);
    if (failure != NULL)
        fail_msg("%s", failure);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        fail_msg("process A failed (status %d)", st);
}

/* Duplicates are locked once; got says 1 for each. */
void test_rowlock_R2_duplicates_locked_once(void **state)
{
    fixture *f = *state;
    char a[128], b[128];
    const char *names[4];
    int got[4] = { -1, -1, -1, -1 };
    sqllock_txn *t = NULL;

    names[0] = lname(f, b, sizeof b, "dup-b");
    names[1] = lname(f, a, sizeof a, "dup-a");
    names[2] = b;
    names[3] = a;
    EXPECT_RC(f->db, sqllock_txn_begin(f->db, NULL, &t), SQLLOCK_OK, "begin");
    EXPECT_RC(f->db, sqllock_txn_lock(t, names, 4, SQLLOCK_LOCK_WAIT, got),
              SQLLOCK_OK, "lock {b, a, b, a}");
    assert_int_equal(got[0], 1);
    assert_int_equal(got[1], 1);
    assert_int_equal(got[2], 1);
    assert_int_equal(got[3], 1);
    /* Locking a name the transaction already holds is fine too. */
    EXPECT_RC(f->db, sqllock_txn_lock(t, names, 1, SQLLOCK_LOCK_NOWAIT, got),
              SQLLOCK_OK, "NOWAIT on a name this transaction holds");
    EXPECT_RC(f->db, sqllock_txn_commit(t), SQLLOCK_OK, "commit");
    sqllock_txn_free(t);
}

/* ------------------------------------------------------------------ */
/* R2: one sorted order, so no deadlock between two clients            */
/* ------------------------------------------------------------------ */

static char g_r2_a[128], g_r2_b[128];

static int r2_child(fixture *f, int me, shared *sh)
{
    sqllock_db *db = tu_child_open(g_url, "R2 child");
    sqllock_txn_options o = txn_opts(LONG_WAIT_MS);
    const char *names[2];
    int i, rc, res = 0;

    (void)f;
    if (db == NULL)
        return 2;
    names[0] = me == 0 ? g_r2_a : g_r2_b;
    names[1] = me == 0 ? g_r2_b : g_r2_a;
    tu_barrier(&sh->arrived, 2);
    for (i = 0; i < R2_LOOPS; i++) {
        sqllock_txn *t = NULL;
        int got[2] = { 0, 0 };
        rc = sqllock_txn_begin(db, &o, &t);
        if (rc == SQLLOCK_OK)
            rc = sqllock_txn_lock(t, names, 2, SQLLOCK_LOCK_WAIT, got);
        if (rc != SQLLOCK_OK) {
            shared_error(sh, db, "R2 begin/lock", rc);
            sqllock_txn_free(t);
            res = 3;
            continue;
        }
        if (got[0] != 1 || got[1] != 1)
            shared_error(sh, db, "R2 lock OK but got is not {1, 1}", rc);
        enter(sh);
        tu_sleep_us(200);
        leave(sh);
        rc = sqllock_txn_commit(t);
        if (rc == SQLLOCK_OK)
            __atomic_add_fetch(&sh->committed, 1, __ATOMIC_SEQ_CST);
        else {
            shared_error(sh, db, "R2 commit", rc);
            res = 3;
        }
        sqllock_txn_free(t);
    }
    sqllock_close(db);
    return res;
}

void test_rowlock_R2_sorted_order_no_deadlock(void **state)
{
    fixture *f = *state;
    shared *sh = tu_shared_map(sizeof *sh);
    shared copy;
    int failed;
    int64_t t0 = tu_now_ms();

    lname(f, g_r2_a, sizeof g_r2_a, "r2-a");
    lname(f, g_r2_b, sizeof g_r2_b, "r2-b");
    failed = run_children(f, 2, sh, "R2", r2_child);
    copy = *sh;
    munmap(sh, sizeof *sh);
    printf("    R2 [%s] 2 processes x %d transactions ({a,b} and {b,a}): "
           "%d committed, %d deadlocks, %d errors, %d overlaps, %lld ms\n",
           f->driver, R2_LOOPS, copy.committed, copy.deadlocks, copy.errors,
           copy.overlap, (long long)(tu_now_ms() - t0));
    if (copy.deadlocks != 0)
        fail_msg("%d SQLLOCK_EDEADLOCK between two clients locking the same "
                 "two names in opposite orders (first: %s)", copy.deadlocks,
                 copy.error);
    if (copy.errors != 0)
        fail_msg("%d errors; first: %s", copy.errors, copy.error);
    assert_int_equal(failed, 0);
    assert_int_equal(copy.committed, 2 * R2_LOOPS);
    if (copy.overlap != 0)
        fail_msg("two processes held the same names at once %d times",
                 copy.overlap);
}

/* ------------------------------------------------------------------ */
/* R3: a deadlock through the application's own rows is reported       */
/* ------------------------------------------------------------------ */

typedef struct r3_result {
    int first_rc;              /* the application's lock of its first row */
    int second_rc;             /* the lock of the other process's row */
    int retryable;             /* sqllock_retryable(second_rc) */
    int commit_rc;             /* commit (-1: not tried) */
    int rollback_rc;           /* rollback (-1: not tried) */
    int write_rc;
    char msg[400];
} r3_result;

typedef struct r3_shared {
    r3_result r[2];
} r3_shared;

/* One side of the cross: locks row `me + 1` by its own SQL, says 'L',
 * waits for 'G', then locks the other row, by its own SQL (use_lib 0) or
 * with sqllock_txn_lock_rows (use_lib 1). The winner writes its mark in
 * both rows and commits. */
static int r3_child(fixture *f, int me, int use_lib, int up, int down,
                    r3_result *res)
{
    sqllock_db *db = tu_child_open(g_url, "R3 child");
    sqllock_txn_options o = txn_opts(20000);
    sqllock_txn *t = NULL;
    sqllock_table kt;
    sqllock_cell key = SQLLOCK_NUMBER(me == 0 ? 2 : 1);
    sqllock_value v[2];
    int has_row = 0, rc, got = -1;

    res->commit_rc = res->rollback_rc = res->write_rc = -1;
    res->first_rc = res->second_rc = -1;
    if (db == NULL) {
        pipe_put(up, 'E');
        return 2;
    }
    kt.table = f->kv;
    kt.key_column = "id";
    kt.version_column = NULL;
    rc = sqllock_txn_begin(db, &o, &t);
    /* The application takes its connection from the transaction (R4):
     * its own statements run inside it from here on. */
    if (rc == SQLLOCK_OK && sqllock_txn_native(t) == NULL)
        rc = SQLLOCK_EMISUSE;
    v[0] = sqllock__int(me + 1);
    if (rc == SQLLOCK_OK)
        rc = tu_exec_on(db, f->sql->kv_lock, f->kv, v, 1, &has_row, NULL,
                        NULL);
    res->first_rc = rc;
    if (rc != SQLLOCK_OK || !has_row) {
        snprintf(res->msg, sizeof res->msg, "first row: %s", sqllock_errmsg(db));
        pipe_put(up, 'E');
        sqllock_txn_free(t);
        sqllock_close(db);
        return 3;
    }
    pipe_put(up, 'L');
    if (pipe_get(down, 30000) != 'G') {
        sqllock_txn_free(t);
        sqllock_close(db);
        return 4;
    }
    v[0] = sqllock__int(me == 0 ? 2 : 1);
    if (use_lib)
        rc = sqllock_txn_lock_rows(t, &kt, &key, 1, SQLLOCK_LOCK_WAIT, &got);
    else
        rc = tu_exec_on(db, f->sql->kv_lock, f->kv, v, 1, &has_row, NULL,
                        NULL);
    res->second_rc = rc;
    res->retryable = sqllock_retryable(rc);
    snprintf(res->msg, sizeof res->msg, "%s", sqllock_errmsg(db));
    if (rc == SQLLOCK_OK) {
        v[0] = sqllock__int(100 + me);
        v[1] = sqllock__int(1);
        rc = tu_exec_on(db, f->sql->kv_set, f->kv, v, 2, NULL, NULL, NULL);
        if (rc == SQLLOCK_OK) {
            v[1] = sqllock__int(2);
            rc = tu_exec_on(db, f->sql->kv_set, f->kv, v, 2, NULL, NULL, NULL);
        }
        res->write_rc = rc;
        res->commit_rc = sqllock_txn_commit(t);
    } else {
        if (use_lib)
            res->commit_rc = sqllock_txn_commit(t);
        res->rollback_rc = sqllock_txn_rollback(t);
    }
    sqllock_txn_free(t);
    sqllock_close(db);
    return 0;
}

static void r3_run(fixture *f, int use_lib)
{
    r3_shared *sh;
    r3_shared copy;
    int up[2][2], down[2][2], i, winner = -1, victim = -1, failed;
    pid_t pids[2];
    sqllock_value v[2];
    const char *how = use_lib ? "sqllock_txn_lock_rows" : "its own SQL";

    tu_exec_ok(f->db, "DELETE FROM %s", f->kv, NULL, 0);
    for (i = 1; i <= 2; i++) {
        v[0] = sqllock__int(i);
        v[1] = sqllock__int(0);
        tu_exec_ok(f->db, f->sql->kv_insert, f->kv, v, 2);
    }
    sh = tu_shared_map(sizeof *sh);
    for (i = 0; i < 2; i++) {
        assert_int_equal(pipe(up[i]), 0);
        assert_int_equal(pipe(down[i]), 0);
    }
    tu_close_for_fork(&f->db);
    for (i = 0; i < 2; i++) {
        pids[i] = fork();
        assert_true(pids[i] >= 0);
        if (pids[i] == 0) {
            int j;
            for (j = 0; j < 2; j++) {
                close(up[j][0]);
                close(down[j][1]);
                if (j != i) {
                    close(up[j][1]);
                    close(down[j][0]);
                }
            }
            _exit(r3_child(f, i, use_lib, up[i][1], down[i][0], &sh->r[i]));
        }
    }
    for (i = 0; i < 2; i++) {
        close(up[i][1]);
        close(down[i][0]);
    }
    /* Both hold their first row before either asks for the other's. */
    {
        int c0 = pipe_get(up[0][0], 30000), c1 = pipe_get(up[1][0], 30000);
        if (c0 == 'L' && c1 == 'L') {
            pipe_put(down[0][1], 'G');
            pipe_put(down[1][1], 'G');
        }
    }
    for (i = 0; i < 2; i++) {
        close(down[i][1]);
        close(up[i][0]);
    }
    failed = wait_children(pids, 2, use_lib ? "R3 lib" : "R3 own");
    tu_reopen(&f->db, g_url);
    copy = *sh;
    munmap(sh, sizeof *sh);
    for (i = 0; i < 2; i++) {
        printf("    R3 [%s] via %s, process %d: first %s, second %s "
               "(retryable %d), commit %s, rollback %s: %s\n", f->driver,
               how, i, sqllock_errname(copy.r[i].first_rc),
               sqllock_errname(copy.r[i].second_rc), copy.r[i].retryable,
               copy.r[i].commit_rc < 0 ? "-"
               : sqllock_errname(copy.r[i].commit_rc),
               copy.r[i].rollback_rc < 0 ? "-"
               : sqllock_errname(copy.r[i].rollback_rc), copy.r[i].msg);
    }
    assert_int_equal(failed, 0);
    for (i = 0; i < 2; i++) {
        if (copy.r[i].first_rc != SQLLOCK_OK)
            fail_msg("process %d could not lock its first row: %s (%s)", i,
                     sqllock_errname(copy.r[i].first_rc), copy.r[i].msg);
        if (copy.r[i].second_rc == SQLLOCK_EDEADLOCK)
            victim = victim < 0 ? i : 2;
        else if (copy.r[i].second_rc == SQLLOCK_OK)
            winner = winner < 0 ? i : 2;
    }
    if (victim < 0 || victim == 2 || winner < 0 || winner == 2)
        fail_msg("crossed locks via %s: want exactly one SQLLOCK_EDEADLOCK "
                 "and one OK, got %s and %s", how,
                 sqllock_errname(copy.r[0].second_rc),
                 sqllock_errname(copy.r[1].second_rc));
    if (!copy.r[victim].retryable)
        fail_msg("sqllock_retryable(SQLLOCK_EDEADLOCK) is 0");
    if (!tu_contains_ci(copy.r[victim].msg, "deadlock"))
        fail_msg("the deadlock message does not say deadlock: \"%s\"",
                 copy.r[victim].msg);
    if (copy.r[winner].write_rc != SQLLOCK_OK ||
        copy.r[winner].commit_rc != SQLLOCK_OK)
        fail_msg("the surviving transaction: write %s, commit %s",
                 sqllock_errname(copy.r[winner].write_rc),
                 sqllock_errname(copy.r[winner].commit_rc));
    if (use_lib && copy.r[victim].commit_rc != SQLLOCK_EMISUSE)
        fail_msg("commit after EDEADLOCK from lock_rows: got %s, want "
                 "SQLLOCK_EMISUSE (the transaction is over)",
                 sqllock_errname(copy.r[victim].commit_rc));
    if (copy.r[victim].rollback_rc != SQLLOCK_OK)
        fail_msg("rollback after EDEADLOCK: got %s, want OK",
                 sqllock_errname(copy.r[victim].rollback_rc));
    for (i = 1; i <= 2; i++) {
        v[0] = sqllock__int(i);
        if (query_int(f->db, f->sql->kv_get, f->kv, v, 1) != 100 + winner)
            fail_msg("row %d does not carry the winner's mark", i);
    }
}

void test_rowlock_R3_deadlock_own_sql(void **state)
{
    r3_run(*state, 0);
}

void test_rowlock_R3_deadlock_reported_by_lock_rows(void **state)
{
    r3_run(*state, 1);
}
