/*
 * txnfail.h -- what the groups of test_txnfail share: the bounds, the
 * group fixture, the problems a test gathers, the keys of a deadlock,
 * and the helpers for handles, transactions, records and the checks of a
 * failed transaction (txnfail/common.c); and the cases of each group,
 * for main() (tests/test_txnfail.c).
 *
 * Include after cmocka.h, test_util.h and test_run.h.
 */
#ifndef SQLLOCK_TEST_TXNFAIL_H
#define SQLLOCK_TEST_TXNFAIL_H

#include <stddef.h>
#include <stdint.h>

#define LOCK_TIMEOUT_MS 15000       /* no wait here should come near it */
#define CHILD_DEADLINE_MS 60000

extern const char *g_url;  /* the URL the current group runs on */

typedef struct fixture {
    char driver[16];
    char prefix[32];                /* "tf<pid>-" */
} fixture;

/* What went wrong, gathered so that the failure of a test shows the
 * whole sequence (every call and the state committed) at once. */
typedef struct problems {
    char text[3000];
    size_t len;
} problems;

/* The keys of one deadlock: A writes a, then b (waits for B); B writes
 * its three rows b2, b3, b and then a (waits for A). B has written more
 * rows, so the database picks A as the victim (InnoDB rolls back the
 * lighter transaction; PostgreSQL aborts the one whose deadlock check
 * runs first, A, which has waited longest). */
typedef struct dl_keys {
    char gate_a[96], gate_b[96];
    char a[96], b[96], b2[96], b3[96], c[96], fresh[96];
    int pg;                         /* on PostgreSQL */
    int64_t a_conn;                 /* PostgreSQL: A's backend pid */
} dl_keys;

/* txnfail/common.c */
int tf_is_driver(const fixture *f, const char *name);
int tf_group_setup(void **state);
int tf_group_teardown(void **state);
const char *tf_name_of(const fixture *f, const char *test,
                       const char *tail, char *buf, size_t size);
sqllock_db *tf_open_handle(void);
void tf_close_handle(sqllock_db *db);
sqllock_txn *tf_begin(sqllock_db *db);
void tf_free_txn(sqllock_txn *t);
int tf_test_teardown(void **state);
void tf_lock1(sqllock_db *db, sqllock_txn *t, const char *name);
void tf_make_record(sqllock_db *db, const char *key);
void tf_problem(problems *p, const char *fmt, ...);
void tf_expect_poisoned(problems *p, sqllock_db *db, int rc, int cause,
                        const char *what);
void tf_expect_version(problems *p, sqllock_db *db2, const char *key,
                       int64_t want, const char *why);
void tf_expect_all_refused(problems *p, sqllock_db *db, sqllock_db *db2,
                           sqllock_txn *t, const char *untouched,
                           const char *fresh_key, const char *lock_name,
                           int want);
void tf_expect_handle_works(problems *p, sqllock_db *db, sqllock_db *db2,
                            const char *lock_name, const char *key);
void tf_report(const problems *p, const char *driver);
void tf_dl_keys_make(const fixture *f, const char *test, dl_keys *k);
sqllock_txn *tf_dl_start(sqllock_db *db, const dl_keys *k);
void tf_sqlite_no_failure(const fixture *f, const char *test);
int64_t tf_conn_id(const fixture *f, sqllock_db *db);

/* txnfail/deadlock.c: a deadlock with a forked child (R7) */
void test_txnfail_R7_deadlock_poisons_txn(void **state);
void test_txnfail_R7_update_does_not_retry_deadlock(void **state);

/* txnfail/killed.c: a connection killed under the transaction (R7) */
void test_txnfail_R7_lost_connection_poisons_txn(void **state);
void test_txnfail_R7_lost_connection_in_lock_call(void **state);

/* txnfail/lockcall.c: a row-lock call that failed (R7), lease calls in
   an open transaction (R8) */
void test_txnfail_R7_failed_lock_call_poisons_txn(void **state);
void test_txnfail_R8_no_lease_statement_in_txn(void **state);

#endif /* SQLLOCK_TEST_TXNFAIL_H */
