/*
 * rowlock.h -- what the groups of test_rowlock share: the test's own SQL
 * per driver, the group fixture (its application tables), and the
 * helpers for transactions, children and their shared page
 * (rowlock/common.c); and the cases of each group, for main()
 * (tests/test_rowlock.c).
 *
 * Include after cmocka.h, test_util.h and test_run.h.
 */
#ifndef SQLLOCK_TEST_ROWLOCK_H
#define SQLLOCK_TEST_ROWLOCK_H

#include <stdint.h>
#include <sys/types.h>

#define PROCS 8                 /* R4 order flow and stock */
#define ORDERS 50
#define STOCK 1000
#define R2_LOOPS 200            /* per process */
#define QUEUE_WORKERS 4
#define QUEUE_JOBS 200
#define QUEUE_BATCH 5
#define LONG_WAIT_MS 60000      /* lock timeout of the contention tests */
#define CHILD_DEADLINE_MS 240000
extern const char *g_url;  /* the URL of the group */
/* The drivers' own calls on the native handle, taken when the driver's
 * client library is linked in (weak: NULL otherwise). They check that
 * sqllock_txn_native() returns the connection the transaction runs on. */
extern int PQbackendPID(const void *conn) __attribute__((weak));
extern unsigned long mysql_thread_id(void *mysql) __attribute__((weak));
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


/* rowlock/common.c */
int64_t nowait_bound_ms(void);
const rl_sql *rl_sql_for(const char *driver);
int is_driver(const fixture *f, const char *name);
int64_t query_int(sqllock_db *db, const char *fmt, const char *table,
                         const sqllock_value *args, int nargs);
char *fixture_table(fixture *f, size_t i);
int group_setup(void **state);
int group_teardown(void **state);
const char *lname(const fixture *f, char *buf, size_t size,
                         const char *tail);
void expect_status(sqllock_db *db, int rc, int want, const char *what,
                          const char *words);
sqllock_txn_options txn_opts(int64_t lock_timeout_ms);
sqllock_db *open_second(void);
int wait_children(const pid_t *pids, int n, const char *what);
int pipe_get(int fd, int timeout_ms);
void pipe_put(int fd, char c);
void shared_error(shared *sh, sqllock_db *db, const char *what, int rc);
void enter(shared *sh);
void leave(shared *sh);
int run_children(fixture *f, int n, shared *sh, const char *what,
                        int (*fn)(fixture *, int, shared *));

/* rowlock/modes.c: R1 modes, R2, R3 */
void test_rowlock_R1_modes(void **state);
void test_rowlock_R2_duplicates_locked_once(void **state);
void test_rowlock_R2_sorted_order_no_deadlock(void **state);
void test_rowlock_R3_deadlock_own_sql(void **state);
void test_rowlock_R3_deadlock_reported_by_lock_rows(void **state);

/* rowlock/contention.c: R4 under contention, the SKIP LOCKED queue */
void test_rowlock_R4_order_paid_once(void **state);
void test_rowlock_R4_stock_for_update(void **state);
void test_rowlock_R1_skip_locked_queue(void **state);

/* rowlock/faults.c: rollback on free, commit after a failure, a killed
   connection, bad input */
void test_rowlock_R6_free_without_commit_rolls_back(void **state);
void test_rowlock_R4_commit_reports_what_happened(void **state);
void test_rowlock_R3_killed_connection(void **state);
void test_rowlock_E2_bad_input(void **state);

/* rowlock/pipeline.c: BEGIN with the first statement (driver version
   10), the same meaning */
void test_rowlock_R1_first_lock_carries_begin(void **state);
void test_rowlock_R7_failed_first_lock_keeps_connection(void **state);
void test_rowlock_R4_native_first_is_inside(void **state);
void test_rowlock_R4_commit_exec_commits_with_write(void **state);
void test_rowlock_R7_commit_exec_failure_rolls_back(void **state);

#endif /* SQLLOCK_TEST_ROWLOCK_H */
