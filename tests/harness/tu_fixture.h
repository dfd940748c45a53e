/*
 * tu_fixture.h -- helpers of the tests that drive servers, proxies and
 * child processes (test_restart, test_galera, test_failover,
 * test_multihost, test_netbad and others) or run statements of their own
 * on application tables (test_rowlock, test_optimistic), kept once here
 * instead of a copy in each.
 *
 * Include after cmocka.h (test_util.h includes it).
 */
#ifndef SQLLOCK_TU_FIXTURE_H
#define SQLLOCK_TU_FIXTURE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "sqllock.h"
#include "sqllock_driver.h"

/* Fails the test unless `expr` is `want`, naming the expression and the
 * message on `db`. */
#define TU_ASSERT_RC(expr, want, db)                                              \
    do {                                                                       \
        int rc_ = (expr);                                                      \
        if (rc_ != (want))                                                     \
            fail_msg("%s = %s, want %s (%s)", #expr, sqllock_errname(rc_),     \
                     sqllock_errname(want), sqllock_errmsg(db));               \
    } while (0)

/* CLOCK_MONOTONIC in microseconds. */
int64_t tu_now_us(void);

/* The parts of a server URL "scheme://user:pass@host:port,.../db?query",
 * as offsets into it: [pass_at, pass_end) the password (empty when
 * none), [host_at, path_at) the host list, [path_at, db_end) "/db", and
 * from db_end the query. */
typedef struct tu_url_parts {
    size_t pass_at, pass_end;
    size_t host_at, path_at;
    size_t db_end;
} tu_url_parts;

/* Splits `url` (which must have a user@ part); -1 when it has none. */
int tu_url_split(const char *url, tu_url_parts *p);

/* A loopback port that nothing listens on: bound, then closed. */
int tu_dead_port(void);

/* The server's id of the connection behind `db` (pg_backend_pid() on
 * PostgreSQL, CONNECTION_ID() on MySQL). */
int64_t tu_backend_id(sqllock_db *db);

/* Opens `url`, failing the test (with the reason) when it cannot. */
sqllock_db *tu_open_or_fail(const char *url);

/* A start line for forked children, so that they contend from the first
 * call: each arrives (`arrived` in shared memory), then waits, for 30 s
 * at most, for all `n`. */
void tu_barrier(int *arrived, int n);

/* A group's handle is closed before a fork and opened again after it: a
 * child must not inherit an open connection (its memory, and on SQLite
 * its page cache, would be the child's too). tu_close_for_fork() closes
 * *db and flushes stdio; tu_reopen() opens `url` into *db, failing the
 * test when it cannot. */
void tu_close_for_fork(sqllock_db **db);
void tu_reopen(sqllock_db **db, const char *url);

/* A statement of the test's own on an application table (test_rowlock,
 * test_optimistic): runs `fmt` with the table name put in for its %s and
 * returns its status; the other arguments as for sqllock__exec_sql(). */
int tu_exec_on(sqllock_db *db, const char *fmt, const char *table,
               const sqllock_value *args, int nargs, int *has_row,
               int64_t *first, int64_t *affected);

/* tu_exec_on() without a result, which must succeed: fails the test
 * otherwise, naming the statement, the table and the message. */
void tu_exec_ok(sqllock_db *db, const char *fmt, const char *table,
                const sqllock_value *args, int nargs);

/* Runs `bash 'SCRIPT' CMD 'DIR' [ARG]` (a fixture script such as
 * scripts/galera.sh, its output on stderr); returns system()'s status. */
int tu_run_script(const char *script, const char *cmd, const char *dir,
                  const char *arg);

/* Forks a child that runs fn(arg) under alarm(alarm_s) (so that a child
 * that hangs ends even if the parent is gone) and _exits with what fn
 * returned. Flushes stdio first. Returns the pid, or -1 (saying why). */
pid_t tu_fork_child(int (*fn)(void *), void *arg, unsigned alarm_s);

/*
 * Children of a case, without alarm() or a deadline: what test_leader,
 * test_rw, test_fair, test_many, test_watchdog and test_wakeup fork.
 *
 *   tu_fork_n()   flushes stdio, then forks n children: child i runs
 *                 fn(arg, i) and _exits with what it returned (a child
 *                 never returns into cmocka); pids[i] is its pid. A fork
 *                 that fails fails the test. Every pid is noted for
 *                 tu_end_children().
 *   tu_fork()     the same for one child, run as fn(arg, 0).
 *   tu_wait_all() waits for pids[0..n) with no deadline; returns how many
 *                 ended other than by exit status 0.
 *   tu_end_children()
 *                 a group teardown: each child tu_fork_n() started and
 *                 nobody reaped yet (waitpid WNOHANG says 0: a reaped pid
 *                 is never signalled, whoever has it now) is continued,
 *                 SIGKILLed and reaped, so that a failed case leaves none
 *                 running (stopped, or holding ctest's output pipe).
 */
void tu_fork_n(pid_t *pids, int n, int (*fn)(void *arg, int i), void *arg);
/* A child inherits the parent's open handles and exits without freeing
 * them (they are the parent's): valgrind's leak check of the child
 * reports their memory that is reachable only through an interior
 * pointer (an SQLite connection's page cache) as possibly lost. Fork
 * the children before the parent opens its handles, and let them start
 * on a flag in shared memory (test_rw's stuck writer, test_session). */
pid_t tu_fork(int (*fn)(void *arg, int i), void *arg);
int tu_wait_all(const pid_t *pids, int n);
int tu_end_children(void **state);

/* Polls: sleeps `step_ms` at a time while `cond` holds and tu_now_ms()
 * is before `end_ms` (a deadline on the monotonic clock, evaluated
 * once). It checks nothing: the caller checks `cond` (or what it waited
 * for) after, as its case requires -- a flag another process or thread
 * sets, a count it moves, a lease's state. */
#define TU_WAIT_WHILE(cond, end_ms, step_ms)                                 \
    do {                                                                     \
        int64_t tu_end_ = (end_ms);                                          \
        while ((cond) && tu_now_ms() < tu_end_)                              \
            tu_sleep_ms(step_ms);                                            \
    } while (0)

/* Waits up to `ms` in all for the children pids[0..n) (a pid <= 0 is
 * skipped); kills and reaps those still running then, calling on_hang
 * (may be NULL) first to say what they were doing. Returns how many hung
 * or ended with a status other than 0, after printing each. */
int tu_reap_children(pid_t *pids, int n, int64_t ms,
                     void (*on_hang)(void));

/* Prints "    LABEL  OK 120, ECONNECT 4, ..." for the statuses counted
 * in by[0..n) that are not 0; `width` pads the label. */
void tu_print_statuses(const char *label, int width, const int64_t *by,
                       int n);

#endif /* SQLLOCK_TU_FIXTURE_H */
