/*
 * test_rowlock.c -- row locks inside a database transaction (DESIGN
 * R1-R5, E1-E4): the three lock modes and their timing, the sorted lock
 * order that keeps two clients from deadlocking each other, deadlocks the
 * database reports through rows the application locked itself, the order
 * flow and the stock decrement of R4 under real contention from many
 * processes, a SKIP LOCKED work queue, rollback on free, a connection
 * killed under a transaction, and bad input.
 *
 * Runs once per URL in SQLLOCK_TEST_URLS (space-separated), or on a fresh
 * temporary SQLite file; SQLLOCK_TEST_REQUIRE as in test_conformance.
 * Lock names and the application tables carry the pid, so runs on a
 * shared server do not meet. The tables are created by the group setup
 * and dropped by its teardown, which also removes this run's lock rows.
 *
 * The statements the test runs itself go through sqllock__exec_sql() on
 * the handle of the transaction, so they run inside it (R4). Forked
 * children never use cmocka: they report through an exit status and a
 * shared page, and the parent checks.
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

#include <valgrind/valgrind.h>

/* A NOWAIT call must answer well inside the 5 s default lock wait. The
 * handle's first row-lock transaction also reconnects once (to raise
 * its statement bound), and a SCRAM connect under valgrind takes 0.5-2
 * s: 500 ms, or 4 s under valgrind, still below the 5 s a wait would
 * take. */
static int64_t nowait_bound_ms(void)
{
    return RUNNING_ON_VALGRIND ? 4000 : 500;
}

#define PROCS 8                 /* R4 order flow and stock */
#define ORDERS 50
#define STOCK 1000
#define R2_LOOPS 200            /* per process */
#define QUEUE_WORKERS 4
#define QUEUE_JOBS 200
#define QUEUE_BATCH 5
#define LONG_WAIT_MS 60000      /* lock timeout of the contention tests */
#define CHILD_DEADLINE_MS 240000

static const char *g_url;

/* The drivers' own calls on the native handle, taken when the driver's
 * client library is linked in (weak: NULL otherwise). They check that
 * sqllock_txn_native() returns the connection the transaction runs on. */
extern int PQbackendPID(const void *conn) __attribute__((weak));
extern unsigned long mysql_thread_id(void *mysql) __attribute__((weak));

/* ------------------------------------------------------------------ */
/* The test's own SQL, per driver                                      */
/* ------------------------------------------------------------------ */

/* Statements on the application tables (the table name is put in with
 * %s). Only the placeholders differ: `?` on SQLite and MySQL, `$n` on
 * PostgreSQL. Statements without parameters are written once, below. */
typedef struct rl_sql {
    const char *driver;
    const char *order_insert;  /* orders; 1 order_id, 2 amount */
    const char *order_paid;    /* orders; 1 order_id -> paid */
    const char *order_pay;     /* orders; 1 order_id (paid = paid + 1) */
    const char *pay_insert;    /* payments; 1 order_id, 2 worker */
    const char *stock_insert;  /* stock; 1 id, 2 qty */
    const char *stock_qty;     /* stock; 1 id -> qty */
    const char *stock_set;     /* stock; 1 qty, 2 id */
    const char *job_insert;    /* jobs; 1 id */
    const char *job_done;      /* jobs; 1 id -> done */
    const char *job_mark;      /* jobs; 1 id (done = done + 1) */
    const char *proc_insert;   /* processed; 1 job_id, 2 worker */
    const char *kv_insert;     /* kv; 1 id, 2 v */
    const char *kv_get;        /* kv; 1 id -> v */
    const char *kv_set;        /* kv; 1 v, 2 id */
    const char *kv_lock;       /* kv; 1 id: the application's own lock */
    const char *row_count;     /* 1 name -> rows in sqllock_row */
    const char *conn_id;       /* -> this connection's server id */
    const char *conn_alive;    /* 1 id -> 1 while that connection exists */
} rl_sql;

static const rl_sql *rl_sql_for(const char *driver)
{
    static const rl_sql table[] = {
        { "sqlite",
          "INSERT INTO %s (order_id, paid, amount) VALUES (?, 0, ?)",
          "SELECT paid FROM %s WHERE order_id = ?",
          "UPDATE %s SET paid = paid + 1 WHERE order_id = ?",
          "INSERT INTO %s (order_id, worker) VALUES (?, ?)",
          "INSERT INTO %s (id, qty) VALUES (?, ?)",
          "SELECT qty FROM %s WHERE id = ?",
          "UPDATE %s SET qty = ? WHERE id = ?",
          "INSERT INTO %s (id, done) VALUES (?, 0)",
          "SELECT done FROM %s WHERE id = ?",
          "UPDATE %s SET done = done + 1 WHERE id = ?",
          "INSERT INTO %s (job_id, worker) VALUES (?, ?)",
          "INSERT INTO %s (id, v) VALUES (?, ?)",
          "SELECT v FROM %s WHERE id = ?",
          "UPDATE %s SET v = ? WHERE id = ?",
          NULL,                          /* no row locks (R5) */
          "SELECT COUNT(*) FROM sqllock_row WHERE name = ?",
          NULL, NULL },
        { "postgres",
          "INSERT INTO %s (order_id, paid, amount) VALUES ($1, 0, $2)",
          "SELECT paid FROM %s WHERE order_id = $1",
          "UPDATE %s SET paid = paid + 1 WHERE order_id = $1",
          "INSERT INTO %s (order_id, worker) VALUES ($1, $2)",
          "INSERT INTO %s (id, qty) VALUES ($1, $2)",
          "SELECT qty FROM %s WHERE id = $1",
          "UPDATE %s SET qty = $1 WHERE id = $2",
          "INSERT INTO %s (id, done) VALUES ($1, 0)",
          "SELECT done FROM %s WHERE id = $1",
          "UPDATE %s SET done = done + 1 WHERE id = $1",
          "INSERT INTO %s (job_id, worker) VALUES ($1, $2)",
          "INSERT INTO %s (id, v) VALUES ($1, $2)",
          "SELECT v FROM %s WHERE id = $1",
          "UPDATE %s SET v = $1 WHERE id = $2",
          "SELECT id FROM %s WHERE id = $1 FOR UPDATE",
          "SELECT COUNT(*) FROM sqllock_row WHERE name = $1",
          "SELECT pg_backend_pid()",
          "SELECT COUNT(*) FROM pg_stat_activity WHERE pid = $1" },
        { "mysql",
          "INSERT INTO %s (order_id, paid, amount) VALUES (?, 0, ?)",
          "SELECT paid FROM %s WHERE order_id = ?",
          "UPDATE %s SET paid = paid + 1 WHERE order_id = ?",
          "INSERT INTO %s (order_id, worker) VALUES (?, ?)",
          "INSERT INTO %s (id, qty) VALUES (?, ?)",
          "SELECT qty FROM %s WHERE id = ?",
          "UPDATE %s SET qty = ? WHERE id = ?",
          "INSERT INTO %s (id, done) VALUES (?, 0)",
          "SELECT done FROM %s WHERE id = ?",
          "UPDATE %s SET done = done + 1 WHERE id = ?",
          "INSERT INTO %s (job_id, worker) VALUES (?, ?)",
          "INSERT INTO %s (id, v) VALUES (?, ?)",
          "SELECT v FROM %s WHERE id = ?",
          "UPDATE %s SET v = ? WHERE id = ?",
          "SELECT id FROM %s WHERE id = ? FOR UPDATE",
          "SELECT COUNT(*) FROM sqllock_row WHERE name = ?",
          "SELECT CONNECTION_ID()",
          "SELECT COUNT(*) FROM information_schema.PROCESSLIST "
          "WHERE ID = ?" },
    };
    size_t i;

    if (driver == NULL)
        return NULL;
    for (i = 0; i < sizeof table / sizeof table[0]; i++)
        if (strcmp(table[i].driver, driver) == 0)
            return &table[i];
    return NULL;
}

/* Checks that hold on every driver (no parameters). */
#define SQL_COUNT_ALL "SELECT COUNT(*) FROM %s"
#define SQL_ORDERS_NOT_PAID_ONCE "SELECT COUNT(*) FROM %s WHERE paid <> 1"
#define SQL_PAYMENTS_NOT_ONCE                                               \
    "SELECT COUNT(*) FROM (SELECT order_id FROM %s GROUP BY order_id "      \
    "HAVING COUNT(*) <> 1) d"
#define SQL_JOBS_OPEN "SELECT COUNT(*) FROM %s WHERE done = 0"
#define SQL_JOBS_NOT_DONE_ONCE "SELECT COUNT(*) FROM %s WHERE done <> 1"
#define SQL_PROCESSED_NOT_ONCE                                              \
    "SELECT COUNT(*) FROM (SELECT job_id FROM %s GROUP BY job_id "          \
    "HAVING COUNT(*) <> 1) d"

/* ------------------------------------------------------------------ */
/* The group fixture                                                   */
/* ------------------------------------------------------------------ */

typedef struct fixture {
    sqllock_db *db;
    char driver[16];
    const rl_sql *sql;
    char prefix[32];           /* "rl<pid>-": this run's lock names */
    char orders[64];           /* orders_<pid>(order_id, paid, amount) */
    char payments[64];         /* payments_<pid>(order_id, worker) */
    char stock[64];            /* stock_<pid>(id, qty) */
    char jobs[64];             /* jobs_<pid>(id, done) */
    char processed[64];        /* processed_<pid>(job_id, worker) */
    char kv[64];               /* kv_<pid>(id, v) */
} fixture;

static int is_driver(const fixture *f, const char *name)
{
    return strcmp(f->driver, name) == 0;
}

/* Runs `fmt` (with the table name put in for %s) and returns its status;
 * the other arguments as for sqllock__exec_sql(). */
static int exec_on(sqllock_db *db, const char *fmt, const char *table,
                   const sqllock_value *args, int nargs, int *has_row,
                   int64_t *first, int64_t *affected)
{
    char sql[512];

    snprintf(sql, sizeof sql, fmt, table);
    return sqllock__exec_sql(db, sql, args, nargs, has_row, first, affected);
}

static void exec_ok(sqllock_db *db, const char *fmt, const char *table,
                    const sqllock_value *args, int nargs)
{
    int rc = exec_on(db, fmt, table, args, nargs, NULL, NULL, NULL);
    if (rc != SQLLOCK_OK)
        fail_msg("statement \"%s\" on %s: %s: %s", fmt, table,
                 sqllock_errname(rc), sqllock_errmsg(db));
}

/* The integer a one-value query returns (fails the test otherwise). */
static int64_t query_int(sqllock_db *db, const char *fmt, const char *table,
                         const sqllock_value *args, int nargs)
{
    int has_row = 0;
    int64_t v = -1;
    int rc = exec_on(db, fmt, table, args, nargs, &has_row, &v, NULL);

    if (rc != SQLLOCK_OK)
        fail_msg("query \"%s\" on %s: %s: %s", fmt, table,
                 sqllock_errname(rc), sqllock_errmsg(db));
    if (!has_row)
        fail_msg("query \"%s\" on %s returned no row", fmt, table);
    return v;
}

static const char *const table_ddl[][2] = {
    { "orders", "CREATE TABLE %s (order_id BIGINT PRIMARY KEY, "
                "paid INT NOT NULL, amount BIGINT NOT NULL)" },
    { "payments", "CREATE TABLE %s (order_id BIGINT NOT NULL, "
                  "worker INT NOT NULL)" },
    { "stock", "CREATE TABLE %s (id BIGINT PRIMARY KEY, "
               "qty BIGINT NOT NULL)" },
    { "jobs", "CREATE TABLE %s (id BIGINT PRIMARY KEY, done INT NOT NULL)" },
    { "processed", "CREATE TABLE %s (job_id BIGINT NOT NULL, "
                   "worker INT NOT NULL)" },
    { "kv", "CREATE TABLE %s (id BIGINT PRIMARY KEY, v BIGINT NOT NULL)" },
};

static char *fixture_table(fixture *f, size_t i)
{
    char *const names[] = { f->orders, f->payments, f->stock, f->jobs,
                            f->processed, f->kv };
    return names[i];
}

static int group_setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    size_t i;
    int rc;

    if (f == NULL)
        return -1;
    rc = sqllock_open(g_url, NULL, &f->db);
    if (rc == SQLLOCK_OK)
        rc = sqllock_init(f->db);
    if (rc != SQLLOCK_OK) {
        fprintf(stderr, "open/init: %s: %s\n", sqllock_errname(rc),
                sqllock_errmsg(f->db));
        sqllock_close(f->db);
        free(f);
        return -1;
    }
    snprintf(f->driver, sizeof f->driver, "%s", sqllock_db_driver(f->db));
    f->sql = rl_sql_for(f->driver);
    if (f->sql == NULL) {
        fprintf(stderr, "no test SQL for driver %s\n", f->driver);
        sqllock_close(f->db);
        free(f);
        return -1;
    }
    snprintf(f->prefix, sizeof f->prefix, "rl%ld-", (long)getpid());
    for (i = 0; i < sizeof table_ddl / sizeof table_ddl[0]; i++) {
        char *t = fixture_table(f, i);
        snprintf(t, 64, "%s_%ld", table_ddl[i][0], (long)getpid());
        rc = exec_on(f->db, "DROP TABLE IF EXISTS %s", t, NULL, 0, NULL,
                     NULL, NULL);
        if (rc == SQLLOCK_OK)
            rc = exec_on(f->db, table_ddl[i][1], t, NULL, 0, NULL, NULL,
                         NULL);
        if (rc != SQLLOCK_OK) {
            fprintf(stderr, "table DDL for %s: %s: %s\n", t,
                    sqllock_errname(rc), sqllock_errmsg(f->db));
            sqllock_close(f->db);
            free(f);
            return -1;
        }
    }
    *state = f;
    return 0;
}

static int group_teardown(void **state)
{
    fixture *f = *state;
    sqllock_value like;
    char pattern[64];
    size_t i;
    int rc = 0;

    if (f == NULL)
        return 0;
    if (f->db == NULL && sqllock_open(g_url, NULL, &f->db) != SQLLOCK_OK) {
        fprintf(stderr, "teardown: cannot open: %s\n", sqllock_errmsg(f->db));
        sqllock_close(f->db);
        free(f);
        return -1;
    }
    for (i = 0; i < sizeof table_ddl / sizeof table_ddl[0]; i++) {
        if (exec_on(f->db, "DROP TABLE IF EXISTS %s", fixture_table(f, i),
                    NULL, 0, NULL, NULL, NULL) != SQLLOCK_OK) {
            fprintf(stderr, "drop %s: %s\n", fixture_table(f, i),
                    sqllock_errmsg(f->db));
            rc = -1;
        }
    }
    snprintf(pattern, sizeof pattern, "%s%%", f->prefix);
    like = sqllock__text(pattern);
    if (sqllock__exec_sql(f->db, is_driver(f, "postgres")
                          ? "DELETE FROM sqllock_row WHERE name LIKE $1"
                          : "DELETE FROM sqllock_row WHERE name LIKE ?",
                          &like, 1, NULL, NULL, NULL) != SQLLOCK_OK) {
        fprintf(stderr, "removing the lock rows: %s\n",
                sqllock_errmsg(f->db));
        rc = -1;
    }
    sqllock_close(f->db);
    free(f);
    return rc;
}

/* ------------------------------------------------------------------ */
/* Helpers                                                             */
/* ------------------------------------------------------------------ */

/* A lock name of this run: "rl<pid>-<tail>". */
static const char *lname(const fixture *f, char *buf, size_t size,
                         const char *tail)
{
    snprintf(buf, size, "%s%s", f->prefix, tail);
    return buf;
}

/* rc must be `want`, sqllock_errcode() must agree, and the message must
 * mention one of `words`. */
static void expect_status(sqllock_db *db, int rc, int want, const char *what,
                          const char *words)
{
    if (rc != want)
        fail_msg("%s: got %s, want %s (message: %s)", what,
                 sqllock_errname(rc), sqllock_errname(want),
                 sqllock_errmsg(db));
    if (db != NULL) {
        if (sqllock_errcode(db) != want)
            fail_msg("%s: sqllock_errcode() is %s after %s", what,
                     sqllock_errname(sqllock_errcode(db)),
                     sqllock_errname(want));
        if (words != NULL)
            expect_msg_any(db, what, words);
    }
}

static sqllock_txn_options txn_opts(int64_t lock_timeout_ms)
{
    sqllock_txn_options o = SQLLOCK_TXN_OPTIONS_INIT;
    o.lock_timeout_ms = lock_timeout_ms;
    return o;
}

/* The group's handle is closed before a fork and opened again after it:
 * a child must not inherit an open connection. */
static void fixture_close_for_fork(fixture *f)
{
    sqllock_close(f->db);
    f->db = NULL;
    fflush(stdout);
    fflush(stderr);
}

static void fixture_reopen(fixture *f)
{
    int rc = sqllock_open(g_url, NULL, &f->db);

    if (rc != SQLLOCK_OK)
        fail_msg("reopening the group's handle: %s: %s",
                 sqllock_errname(rc), sqllock_errmsg(f->db));
}

static sqllock_db *open_second(void)
{
    sqllock_db *db = NULL;
    int rc = sqllock_open(g_url, NULL, &db);

    if (rc != SQLLOCK_OK) {
        char msg[400];
        snprintf(msg, sizeof msg, "%s", sqllock_errmsg(db));
        sqllock_close(db);
        fail_msg("opening a second handle: %s: %s", sqllock_errname(rc),
                 msg);
    }
    return db;
}

/* Waits for every child, killing those still running at the deadline
 * (they are this test's own children); returns how many failed. */
static int wait_children(const pid_t *pids, int n, const char *what)
{
    int64_t deadline = tu_now_ms() + CHILD_DEADLINE_MS;
    int done[64] = { 0 };
    int i, left = n, failed = 0;

    while (left > 0) {
        for (i = 0; i < n; i++) {
            int st = 0;
            pid_t r;
            if (done[i])
                continue;
            r = waitpid(pids[i], &st, WNOHANG);
            if (r == 0)
                continue;
            done[i] = 1;
            left--;
            if (r != pids[i] || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
                fprintf(stderr, "%s child %d: %s %d\n", what, i,
                        r != pids[i] ? "waitpid failed"
                        : WIFEXITED(st) ? "exit" : "signal",
                        WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
                failed++;
            }
        }
        if (left > 0 && tu_now_ms() > deadline) {
            for (i = 0; i < n; i++) {
                if (!done[i]) {
                    fprintf(stderr, "%s child %d: still running after "
                            "%d ms: killed\n", what, i, CHILD_DEADLINE_MS);
                    kill(pids[i], SIGKILL);
                    waitpid(pids[i], NULL, 0);
                    done[i] = 1;
                    left--;
                    failed++;
                }
            }
        }
        if (left > 0)
            tu_sleep_ms(5);
    }
    return failed;
}

/* A start line for forked children: each arrives, then waits (briefly)
 * for all the others. */
static void barrier(int *arrived, int n)
{
    int64_t deadline = tu_now_ms() + 30000;

    __atomic_add_fetch(arrived, 1, __ATOMIC_SEQ_CST);
    while (__atomic_load_n(arrived, __ATOMIC_SEQ_CST) < n &&
           tu_now_ms() < deadline)
        tu_sleep_us(100);
}

/* Reads one byte from `fd`, waiting up to `timeout_ms`. Returns the byte,
 * 0 on timeout, -1 at end of file or on an error. */
static int pipe_get(int fd, int timeout_ms)
{
    struct pollfd p;
    int64_t deadline = tu_now_ms() + timeout_ms;
    unsigned char c;

    for (;;) {
        int64_t left = deadline - tu_now_ms();
        int r;
        if (left < 0)
            left = 0;
        p.fd = fd;
        p.events = POLLIN;
        p.revents = 0;
        r = poll(&p, 1, (int)left);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return -1;
        if (r == 0)
            return 0;
        r = (int)read(fd, &c, 1);
        if (r < 0 && errno == EINTR)
            continue;
        return r == 1 ? c : -1;
    }
}

static void pipe_put(int fd, char c)
{
    while (write(fd, &c, 1) < 0 && errno == EINTR)
        ;
}

/* What the children of one test share: counters and the first error. */
typedef struct shared {
    int arrived;
    int committed;             /* transactions committed */
    int deadlocks;             /* SQLLOCK_EDEADLOCK seen */
    int errors;                /* any other unexpected status */
    int inside;                /* processes inside the lock right now */
    int overlap;               /* times two were inside at once */
    int64_t done;              /* payments, units sold, jobs processed */
    int64_t skipped;           /* SKIP_LOCKED names not taken */
    int64_t taken;             /* SKIP_LOCKED names taken */
    int64_t negative;          /* a stock read below zero */
    int error_set;
    char error[600];
} shared;

/* Counts an unexpected status and keeps the first message. */
static void shared_error(shared *sh, sqllock_db *db, const char *what, int rc)
{
    __atomic_add_fetch(&sh->errors, 1, __ATOMIC_SEQ_CST);
    if (rc == SQLLOCK_EDEADLOCK)
        __atomic_add_fetch(&sh->deadlocks, 1, __ATOMIC_SEQ_CST);
    if (__atomic_exchange_n(&sh->error_set, 1, __ATOMIC_SEQ_CST) == 0)
        snprintf(sh->error, sizeof sh->error, "%s: %s: %s", what,
                 sqllock_errname(rc), db ? sqllock_errmsg(db) : "");
}

static void enter(shared *sh)
{
    if (__atomic_add_fetch(&sh->inside, 1, __ATOMIC_SEQ_CST) > 1)
        __atomic_add_fetch(&sh->overlap, 1, __ATOMIC_SEQ_CST);
}

static void leave(shared *sh)
{
    __atomic_sub_fetch(&sh->inside, 1, __ATOMIC_SEQ_CST);
}

/* Runs the per-process function `fn(f, i, sh)` in `n` forked children and
 * waits for them; returns how many failed. The group's handle is closed
 * around the fork and opened again afterwards. */
static int run_children(fixture *f, int n, shared *sh, const char *what,
                        int (*fn)(fixture *, int, shared *))
{
    pid_t pids[64];
    int i, started = 0, failed;

    fixture_close_for_fork(f);
    for (i = 0; i < n; i++) {
        pids[i] = fork();
        if (pids[i] < 0)
            break;
        if (pids[i] == 0)
            _exit(fn(f, i, sh));
        started++;
    }
    failed = wait_children(pids, started, what);
    fixture_reopen(f);
    if (started < n)
        fail_msg("%s: fork failed after %d children", what, started);
    return failed;
}

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

static void test_rowlock_R1_modes(void **state)
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
    fixture_close_for_fork(f);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(up[0]);
        close(down[1]);
        _exit(r1_holder(x, up[1], down[0]));
    }
    close(up[1]);
    close(down[0]);
    fixture_reopen(f);
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
static void test_rowlock_R2_duplicates_locked_once(void **state)
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
    barrier(&sh->arrived, 2);
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

static void test_rowlock_R2_sorted_order_no_deadlock(void **state)
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
        rc = exec_on(db, f->sql->kv_lock, f->kv, v, 1, &has_row, NULL, NULL);
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
        rc = exec_on(db, f->sql->kv_lock, f->kv, v, 1, &has_row, NULL, NULL);
    res->second_rc = rc;
    res->retryable = sqllock_retryable(rc);
    snprintf(res->msg, sizeof res->msg, "%s", sqllock_errmsg(db));
    if (rc == SQLLOCK_OK) {
        v[0] = sqllock__int(100 + me);
        v[1] = sqllock__int(1);
        rc = exec_on(db, f->sql->kv_set, f->kv, v, 2, NULL, NULL, NULL);
        if (rc == SQLLOCK_OK) {
            v[1] = sqllock__int(2);
            rc = exec_on(db, f->sql->kv_set, f->kv, v, 2, NULL, NULL, NULL);
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

    exec_ok(f->db, "DELETE FROM %s", f->kv, NULL, 0);
    for (i = 1; i <= 2; i++) {
        v[0] = sqllock__int(i);
        v[1] = sqllock__int(0);
        exec_ok(f->db, f->sql->kv_insert, f->kv, v, 2);
    }
    sh = tu_shared_map(sizeof *sh);
    for (i = 0; i < 2; i++) {
        assert_int_equal(pipe(up[i]), 0);
        assert_int_equal(pipe(down[i]), 0);
    }
    fixture_close_for_fork(f);
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
    fixture_reopen(f);
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

static void test_rowlock_R3_deadlock_own_sql(void **state)
{
    r3_run(*state, 0);
}

static void test_rowlock_R3_deadlock_reported_by_lock_rows(void **state)
{
    r3_run(*state, 1);
}

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
    barrier(&sh->arrived, PROCS);
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
        rc = exec_on(db, f->sql->order_paid, f->orders, v, 1, &has_row,
                     &paid, NULL);
        if (rc == SQLLOCK_OK && !has_row)
            rc = SQLLOCK_NOTFOUND;
        if (rc == SQLLOCK_OK && paid == 0) {
            tu_sleep_us(300);  /* the window the classic bug needs */
            rc = exec_on(db, f->sql->order_pay, f->orders, v, 1, NULL, NULL,
                         NULL);
            v[1] = sqllock__int(me);
            if (rc == SQLLOCK_OK)
                rc = exec_on(db, f->sql->pay_insert, f->payments, v, 2, NULL,
                             NULL, NULL);
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

static void test_rowlock_R4_order_paid_once(void **state)
{
    fixture *f = *state;
    shared *sh, copy;
    sqllock_value v[2];
    int i, failed;
    int64_t t0, payments, not_once, orders_bad;

    exec_ok(f->db, "DELETE FROM %s", f->orders, NULL, 0);
    exec_ok(f->db, "DELETE FROM %s", f->payments, NULL, 0);
    for (i = 1; i <= ORDERS; i++) {
        v[0] = sqllock__int(i);
        v[1] = sqllock__int(1000 + i);
        exec_ok(f->db, f->sql->order_insert, f->orders, v, 2);
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
    barrier(&sh->arrived, PROCS);
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
        rc = exec_on(db, f->sql->stock_qty, f->stock, v, 1, &has_row, &qty,
                     NULL);
        if (rc == SQLLOCK_OK && !has_row)
            rc = SQLLOCK_NOTFOUND;
        if (rc == SQLLOCK_OK && qty < 0)
            __atomic_add_fetch(&sh->negative, 1, __ATOMIC_SEQ_CST);
        if (rc == SQLLOCK_OK && qty > 0) {
            v[0] = sqllock__int(qty - 1);
            v[1] = sqllock__int(1);
            rc = exec_on(db, f->sql->stock_set, f->stock, v, 2, NULL, NULL,
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

static void test_rowlock_R4_stock_for_update(void **state)
{
    fixture *f = *state;
    shared *sh, copy;
    sqllock_value v[2];
    int failed;
    int64_t t0, final;

    exec_ok(f->db, "DELETE FROM %s", f->stock, NULL, 0);
    v[0] = sqllock__int(1);
    v[1] = sqllock__int(STOCK);
    exec_ok(f->db, f->sql->stock_insert, f->stock, v, 2);
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
    barrier(&sh->arrived, QUEUE_WORKERS);
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
                rc = exec_on(db, f->sql->job_done, f->jobs, v, 1, &has_row,
                             &done, NULL);
                if (rc == SQLLOCK_OK && !has_row)
                    rc = SQLLOCK_NOTFOUND;
                if (rc != SQLLOCK_OK || done != 0)
                    continue;
                tu_sleep_us(200);
                rc = exec_on(db, f->sql->job_mark, f->jobs, v, 1, NULL, NULL,
                             NULL);
                v[1] = sqllock__int(me);
                if (rc == SQLLOCK_OK)
                    rc = exec_on(db, f->sql->proc_insert, f->processed, v, 2,
                                 NULL, NULL, NULL);
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
        rc = exec_on(db, SQL_JOBS_OPEN, f->jobs, NULL, 0, NULL, &open, NULL);
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

static void test_rowlock_R1_skip_locked_queue(void **state)
{
    fixture *f = *state;
    shared *sh, copy;
    sqllock_value v[1];
    int i, failed;
    int64_t t0, processed, not_once, jobs_bad;

    exec_ok(f->db, "DELETE FROM %s", f->jobs, NULL, 0);
    exec_ok(f->db, "DELETE FROM %s", f->processed, NULL, 0);
    for (i = 1; i <= QUEUE_JOBS; i++) {
        v[0] = sqllock__int(i);
        exec_ok(f->db, f->sql->job_insert, f->jobs, v, 1);
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

/* ------------------------------------------------------------------ */
/* Free without commit rolls back                                      */
/* ------------------------------------------------------------------ */

static void test_rowlock_R6_free_without_commit_rolls_back(void **state)
{
    fixture *f = *state;
    char z[128];
    const char *zp = lname(f, z, sizeof z, "r6-z");
    sqllock_txn *t = NULL, *t2 = NULL;
    sqllock_db *db2;
    sqllock_value v[2];
    int64_t t0, ms, inside = -1;
    int has_row = 0;

    exec_ok(f->db, "DELETE FROM %s", f->kv, NULL, 0);
    v[0] = sqllock__int(7);
    v[1] = sqllock__int(1);
    exec_ok(f->db, f->sql->kv_insert, f->kv, v, 2);
    db2 = open_second();

    EXPECT_RC(f->db, sqllock_txn_begin(f->db, NULL, &t), SQLLOCK_OK, "begin");
    EXPECT_RC(f->db, sqllock_txn_lock(t, &zp, 1, SQLLOCK_LOCK_WAIT, NULL),
              SQLLOCK_OK, "lock z");
    v[0] = sqllock__int(99);
    v[1] = sqllock__int(7);
    exec_ok(f->db, f->sql->kv_set, f->kv, v, 2);
    v[0] = sqllock__int(7);
    EXPECT_RC(f->db, exec_on(f->db, f->sql->kv_get, f->kv, v, 1, &has_row,
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
static void test_rowlock_R4_commit_reports_what_happened(void **state)
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
    exec_ok(f->db, "DELETE FROM %s", f->kv, NULL, 0);
    v[0] = sqllock__int(8);
    v[1] = sqllock__int(1);
    exec_ok(f->db, f->sql->kv_insert, f->kv, v, 2);
    db2 = open_second();

    EXPECT_RC(f->db, sqllock_txn_begin(f->db, NULL, &t), SQLLOCK_OK, "begin");
    assert_non_null(sqllock_txn_native(t));
    EXPECT_RC(f->db, sqllock_txn_lock_rows(t, &kt, &key, 1, SQLLOCK_LOCK_WAIT,
                                           &got), SQLLOCK_OK, "lock row 8");
    v[0] = sqllock__int(42);
    v[1] = sqllock__int(8);
    exec_ok(f->db, f->sql->kv_set, f->kv, v, 2);
    v[0] = sqllock__int(8);
    v[1] = sqllock__int(5);
    rc = exec_on(f->db, f->sql->kv_insert, f->kv, v, 2, NULL, NULL, NULL);
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
        rc = sqllock__exec_sql(db2, "SELECT CASE WHEN pg_terminate_backend("
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

static void test_rowlock_R3_killed_connection(void **state)
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

static void test_rowlock_E2_bad_input(void **state)
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
    EXPECT_RC(db, sqllock_txn_rollback(t), SQLLOCK_OK,
              "rollback after commit");
    sqllock_txn_free(t);
    expect_status(NULL, sqllock_txn_commit(NULL), SQLLOCK_EINVAL,
                  "commit of a NULL transaction", NULL);
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

/* ------------------------------------------------------------------ */

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rowlock_R1_modes),
        cmocka_unit_test(test_rowlock_R2_duplicates_locked_once),
        cmocka_unit_test(test_rowlock_R2_sorted_order_no_deadlock),
        cmocka_unit_test(test_rowlock_R3_deadlock_own_sql),
        cmocka_unit_test(test_rowlock_R3_deadlock_reported_by_lock_rows),
        cmocka_unit_test(test_rowlock_R4_order_paid_once),
        cmocka_unit_test(test_rowlock_R4_stock_for_update),
        cmocka_unit_test(test_rowlock_R1_skip_locked_queue),
        cmocka_unit_test(test_rowlock_R4_commit_reports_what_happened),
        cmocka_unit_test(test_rowlock_R6_free_without_commit_rolls_back),
        cmocka_unit_test(test_rowlock_R3_killed_connection),
        cmocka_unit_test(test_rowlock_E2_bad_input),
    };
    tu_not_on("sqlite", "test_rowlock_R3_deadlock_*",
              "SQLite has no row locks, a transaction takes the whole "
              "database (R5), so no two transactions can cross");
    tu_not_on("sqlite", "test_rowlock_R3_killed_connection",
              "an embedded database has no server connection to kill");
    return TU_RUN_PER_URL("rowlock", &g_url, tests, group_setup,
                          group_teardown);
}
