/*
 * common.c -- test_rowlock's SQL per driver, group fixture and helpers
 * (rowlock.h).
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

/* A NOWAIT call must answer well inside the 5 s default lock wait. The
 * handle's first row-lock transaction also reconnects once (to raise
 * its statement bound), and a SCRAM connect under valgrind takes 0.5-2
 * s: 500 ms, or 4 s under valgrind, still below the 5 s a wait would
 * take. */
int64_t nowait_bound_ms(void)
{
    return tu_slowdown_tool() >= 8 ? 4000 : 500;   /* valgrind: 8 */
}

const char *g_url;

/* ------------------------------------------------------------------ */
/* The test's own SQL, per driver                                      */
/* ------------------------------------------------------------------ */

const rl_sql *rl_sql_for(const char *driver)
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
          "SELECT pg_catalog.pg_backend_pid()",
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

/* ------------------------------------------------------------------ */
/* The group fixture                                                   */
/* ------------------------------------------------------------------ */

int is_driver(const fixture *f, const char *name)
{
    return strcmp(f->driver, name) == 0;
}

/* The integer a one-value query returns (fails the test otherwise). */
int64_t query_int(sqllock_db *db, const char *fmt, const char *table,
                         const sqllock_value *args, int nargs)
{
    int has_row = 0;
    int64_t v = -1;
    int rc = tu_exec_on(db, fmt, table, args, nargs, &has_row, &v, NULL);

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

char *fixture_table(fixture *f, size_t i)
{
    char *const names[] = { f->orders, f->payments, f->stock, f->jobs,
                            f->processed, f->kv };
    return names[i];
}

int group_setup(void **state)
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
        rc = tu_exec_on(f->db, "DROP TABLE IF EXISTS %s", t, NULL, 0, NULL,
                        NULL, NULL);
        if (rc == SQLLOCK_OK)
            rc = tu_exec_on(f->db, table_ddl[i][1], t, NULL, 0, NULL, NULL,
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

int group_teardown(void **state)
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
        if (tu_exec_on(f->db, "DROP TABLE IF EXISTS %s", fixture_table(f, i),
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
const char *lname(const fixture *f, char *buf, size_t size,
                         const char *tail)
{
    snprintf(buf, size, "%s%s", f->prefix, tail);
    return buf;
}

/* rc must be `want`, sqllock_errcode() must agree, and the message must
 * mention one of `words`. */
void expect_status(sqllock_db *db, int rc, int want, const char *what,
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

sqllock_txn_options txn_opts(int64_t lock_timeout_ms)
{
    sqllock_txn_options o = SQLLOCK_TXN_OPTIONS_INIT;
    o.lock_timeout_ms = lock_timeout_ms;
    return o;
}

sqllock_db *open_second(void)
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
int wait_children(const pid_t *pids, int n, const char *what)
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

/* Reads one byte from `fd`, waiting up to `timeout_ms`. Returns the byte,
 * 0 on timeout, -1 at end of file or on an error. */
int pipe_get(int fd, int timeout_ms)
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

void pipe_put(int fd, char c)
{
    while (write(fd, &c, 1) < 0 && errno == EINTR)
        ;
}

/* Counts an unexpected status and keeps the first message. */
void shared_error(shared *sh, sqllock_db *db, const char *what, int rc)
{
    __atomic_add_fetch(&sh->errors, 1, __ATOMIC_SEQ_CST);
    if (rc == SQLLOCK_EDEADLOCK)
        __atomic_add_fetch(&sh->deadlocks, 1, __ATOMIC_SEQ_CST);
    if (__atomic_exchange_n(&sh->error_set, 1, __ATOMIC_SEQ_CST) == 0)
        snprintf(sh->error, sizeof sh->error, "%s: %s: %s", what,
                 sqllock_errname(rc), db ? sqllock_errmsg(db) : "");
}

void enter(shared *sh)
{
    if (__atomic_add_fetch(&sh->inside, 1, __ATOMIC_SEQ_CST) > 1)
        __atomic_add_fetch(&sh->overlap, 1, __ATOMIC_SEQ_CST);
}

void leave(shared *sh)
{
    __atomic_sub_fetch(&sh->inside, 1, __ATOMIC_SEQ_CST);
}

/* Runs the per-process function `fn(f, i, sh)` in `n` forked children and
 * waits for them; returns how many failed. The group's handle is closed
 * around the fork and opened again afterwards. */
int run_children(fixture *f, int n, shared *sh, const char *what,
                        int (*fn)(fixture *, int, shared *))
{
    pid_t pids[64] = { 0 };
    int i, started = 0, failed;

    tu_close_for_fork(&f->db);
    for (i = 0; i < n; i++) {
        pids[i] = fork();
        if (pids[i] < 0)
            break;
        if (pids[i] == 0)
            _exit(fn(f, i, sh));
        started++;
    }
    failed = wait_children(pids, started, what);
    tu_reopen(&f->db, g_url);
    if (started < n)
        fail_msg("%s: fork failed after %d children", what, started);
    return failed;
}
