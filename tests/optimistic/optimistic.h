/*
 * optimistic.h -- what the groups of test_optimistic share
 * (optimistic/common.c), and the cases of each group, for main()
 * (tests/test_optimistic.c).
 *
 * Include after cmocka.h, test_util.h and test_run.h.
 */
#ifndef SQLLOCK_TEST_OPTIMISTIC_H
#define SQLLOCK_TEST_OPTIMISTIC_H

#include <stdint.h>
#include <sys/types.h>

#define PROCS 8
#define O2_UPDATES 100          /* per process */
#define O2_ONE_PROCS 2
#define O2_ONE_CALLS 200        /* per process, max_attempts = 1 */
#define O3_STOCK 1000
#define DEFAULT_MAX_ATTEMPTS 16 /* sqllock_retry_options default */

extern const char *g_url;       /* the URL of the group */

/* Statements on the application table (its name is put in with %s) and
 * one on the library's record table, to set up and to check behind the
 * library's back. Only the placeholders and MySQL's quoting of `key`
 * differ. */
typedef struct opt_sql {
    const char *driver;
    const char *inv_insert;      /* %s table; 1 id, 2 qty, 3 version */
    const char *inv_qty;         /* %s table; 1 id -> qty */
    const char *inv_version;     /* %s table; 1 id -> version */
    const char *inv_delete;      /* %s table; 1 id */
    const char *inv_set_version; /* %s table; 1 version, 2 id */
    const char *name_insert;     /* %s table; 1 name, 2 qty */
    const char *rec_set_version; /* 1 version, 2 key */
} opt_sql;

typedef struct fixture {
    sqllock_db *db;
    const char *driver;
    const opt_sql *sql;
    char inv[64];              /* inventory_<pid> */
    char names[64];            /* names_<pid>: a table with a text key */
    char qualified[200];       /* inv, schema-qualified */
    sqllock_table t;           /* inv(id, qty, version) */
} fixture;


/* optimistic/common.c */
const opt_sql *opt_sql_for(const char *driver);
void url_dbname(const char *url, char *out, size_t size);
int group_setup(void **state);
int group_teardown(void **state);
const char *rkey(char *buf, size_t size, const char *tail);
void expect_einval(sqllock_db *db, int rc, const char *what,
                          const char *words);
int inv_read(fixture *f, sqllock_db *db, int64_t id, int64_t *qty,
                    int64_t *version);
void inv_reset(fixture *f, int64_t id, int64_t qty, int64_t version);
void inv_expect(fixture *f, int64_t id, int64_t qty, int64_t version,
                       const char *what);
void rec_expect(sqllock_db *db, const char *key, const void *want,
                       size_t want_len, int64_t want_version,
                       const char *what);
void rec_expect_missing(sqllock_db *db, const char *key,
                               const char *what);
void rec_remove(sqllock_db *db, const char *key);
int wait_children(const pid_t *pids, int n, const char *what);

/* optimistic/records.c: versioned records (O1) */
void test_optimistic_O1_get_missing_notfound(void **state);
void test_optimistic_O1_create_conflict(void **state);
void test_optimistic_O1_binary_and_empty_values(void **state);
void test_optimistic_O1_cas_versions(void **state);
void test_optimistic_O1_delete_versions(void **state);
void test_optimistic_O1_value_max(void **state);
void test_optimistic_O1_free_null(void **state);
void test_optimistic_O1_bad_keys(void **state);
void test_optimistic_O1_list_by_prefix(void **state);
void test_optimistic_O1_version_overflow(void **state);

/* optimistic/records.c: the retry helper under contention (O2) */
void test_optimistic_O2_counter_processes(void **state);
void test_optimistic_O2_fn_status_writes_nothing(void **state);
void test_optimistic_O2_one_attempt_conflicts(void **state);

/* optimistic/table.c: compare-and-set and conditional updates on the
   application's table (O3) */
void test_optimistic_O3_table_cas_basic(void **state);
void test_optimistic_O3_L5_fenced_same_values_ok(void **state);
void test_optimistic_O3_statement_shapes(void **state);
void test_optimistic_O3_cas_stock_processes(void **state);
void test_optimistic_O3_update_stock_processes(void **state);

/* optimistic/badinput.c: bad input on application tables (O3, E2) */
void test_optimistic_O3_bad_identifiers(void **state);
void test_optimistic_O3_bad_arguments(void **state);
void test_optimistic_O3_missing_table_column(void **state);
void test_optimistic_O3_version_overflow(void **state);
void test_optimistic_O3_wrong_types(void **state);

#endif
