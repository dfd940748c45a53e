/*
 * common.c -- test_txnfail: the group fixture, the handles and
 * transactions a test opened, the record helpers, the problems a test
 * gathers and the checks of a failed transaction, and what the groups
 * share of the deadlock's keys and A's transaction (txnfail.h).
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
#include "txnfail.h"

const char *g_url;

int tf_is_driver(const fixture *f, const char *name)
{
    return strcmp(f->driver, name) == 0;
}

int tf_group_setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    sqllock_db *db = NULL;
    int rc;

    if (f == NULL)
        return -1;
    rc = sqllock_open(g_url, NULL, &db);
    if (rc == SQLLOCK_OK)
        rc = sqllock_init(db);
    if (rc != SQLLOCK_OK) {
        fprintf(stderr, "open/init: %s: %s\n", sqllock_errname(rc),
                sqllock_errmsg(db));
        sqllock_close(db);
        free(f);
        return -1;
    }
    snprintf(f->driver, sizeof f->driver, "%s", sqllock_db_driver(db));
    snprintf(f->prefix, sizeof f->prefix, "tf%ld-", (long)getpid());
    sqllock_close(db);
    *state = f;
    return 0;
}

/* Removes this run's lock rows and records. */
int tf_group_teardown(void **state)
{
    fixture *f = *state;
    sqllock_db *db = NULL;
    sqllock_value like;
    char pattern[64];
    int pg, rc = 0;

    if (f == NULL)
        return 0;
    if (sqllock_open(g_url, NULL, &db) != SQLLOCK_OK) {
        fprintf(stderr, "teardown: cannot open: %s\n", sqllock_errmsg(db));
        sqllock_close(db);
        free(f);
        return -1;
    }
    pg = tf_is_driver(f, "postgres");
    snprintf(pattern, sizeof pattern, "%s%%", f->prefix);
    like = sqllock__text(pattern);
    if (sqllock__exec_sql(db, pg ? "DELETE FROM sqllock_row WHERE name "
                          "LIKE $1" : "DELETE FROM sqllock_row WHERE name "
                          "LIKE ?", &like, 1, NULL, NULL, NULL) != SQLLOCK_OK ||
        sqllock__exec_sql(db, pg ? "DELETE FROM sqllock_record WHERE key "
                          "LIKE $1" : tf_is_driver(f, "mysql") ?
                          "DELETE FROM sqllock_record WHERE `key` LIKE ?" :
                          "DELETE FROM sqllock_record WHERE \"key\" LIKE ?",
                          &like, 1, NULL, NULL, NULL) != SQLLOCK_OK) {
        fprintf(stderr, "teardown: removing this run's rows: %s\n",
                sqllock_errmsg(db));
        rc = -1;
    }
    sqllock_close(db);
    free(f);
    return rc;
}

/* ------------------------------------------------------------------ */
/* Helpers                                                             */
/* ------------------------------------------------------------------ */

/* "tf<pid>-<test>-<tail>": names and keys of one test of this run. */
const char *tf_name_of(const fixture *f, const char *test,
                       const char *tail, char *buf, size_t size)
{
    snprintf(buf, size, "%s%s-%s", f->prefix, test, tail);
    return buf;
}

/* The handles and transactions a test opened, so that a test that fails
 * half-way does not leave a transaction holding row locks (which would
 * block the next test and the teardown): tf_test_teardown() frees what is
 * left. */
#define OPEN_MAX 8
static sqllock_db *g_dbs[OPEN_MAX];
static sqllock_txn *g_txns[OPEN_MAX];

static void track(void **slots, void *p)
{
    int i;

    for (i = 0; i < OPEN_MAX; i++) {
        if (slots[i] == NULL) {
            slots[i] = p;
            return;
        }
    }
    fail_msg("more than %d handles open in one test", OPEN_MAX);
}

static void untrack(void **slots, void *p)
{
    int i;

    for (i = 0; i < OPEN_MAX; i++)
        if (slots[i] == p)
            slots[i] = NULL;
}

sqllock_db *tf_open_handle(void)
{
    sqllock_db *db = NULL;
    int rc = sqllock_open(g_url, NULL, &db);

    if (rc != SQLLOCK_OK) {
        char msg[400];
        snprintf(msg, sizeof msg, "%s", sqllock_errmsg(db));
        sqllock_close(db);
        fail_msg("opening a handle: %s: %s", sqllock_errname(rc), msg);
    }
    track((void **)g_dbs, db);
    return db;
}

void tf_close_handle(sqllock_db *db)
{
    untrack((void **)g_dbs, db);
    sqllock_close(db);
}

sqllock_txn *tf_begin(sqllock_db *db)
{
    sqllock_txn_options o = SQLLOCK_TXN_OPTIONS_INIT;
    sqllock_txn *t = NULL;

    o.lock_timeout_ms = LOCK_TIMEOUT_MS;
    EXPECT_RC(db, sqllock_txn_begin(db, &o, &t), SQLLOCK_OK, "begin");
    track((void **)g_txns, t);
    return t;
}

void tf_free_txn(sqllock_txn *t)
{
    untrack((void **)g_txns, t);
    sqllock_txn_free(t);
}

int tf_test_teardown(void **state)
{
    int i;

    (void)state;
    for (i = 0; i < OPEN_MAX; i++) {
        sqllock_txn_free(g_txns[i]);
        g_txns[i] = NULL;
    }
    for (i = 0; i < OPEN_MAX; i++) {
        sqllock_close(g_dbs[i]);
        g_dbs[i] = NULL;
    }
    return 0;
}

/* Locks `name` in `t` (which starts the transaction). */
void tf_lock1(sqllock_db *db, sqllock_txn *t, const char *name)
{
    int got = 0;

    EXPECT_RC(db, sqllock_txn_lock(t, &name, 1, SQLLOCK_LOCK_WAIT, &got),
              SQLLOCK_OK, "locking the transaction's own row");
    assert_int_equal(got, 1);
}

/* The version of record `key` as another connection sees it (committed),
 * 0 when there is none. */
static int64_t version_of(sqllock_db *db, const char *key)
{
    int64_t v = 0;
    int rc = sqllock_record_get(db, key, NULL, NULL, &v);

    if (rc == SQLLOCK_NOTFOUND)
        return 0;
    if (rc != SQLLOCK_OK)
        fail_msg("reading record %s from another handle: %s: %s", key,
                 sqllock_errname(rc), sqllock_errmsg(db));
    return v;
}

/* Creates record `key` at version 1 (committed). */
void tf_make_record(sqllock_db *db, const char *key)
{
    EXPECT_RC(db, sqllock_record_create(db, key, "1", 1), SQLLOCK_OK,
              "creating a record");
}

void tf_problem(problems *p, const char *fmt, ...)
{
    va_list ap;
    int n;

    if (p->len + 8 >= sizeof p->text)
        return;
    va_start(ap, fmt);
    n = vsnprintf(p->text + p->len, sizeof p->text - p->len, fmt, ap);
    va_end(ap);
    if (n > 0)
        p->len += (size_t)n < sizeof p->text - p->len ? (size_t)n
                  : sizeof p->text - p->len - 1;
    if (p->len + 2 < sizeof p->text) {
        p->text[p->len++] = ';';
        p->text[p->len++] = ' ';
        p->text[p->len] = '\0';
    }
}

/* A call inside the failed transaction: it must be refused with
 * SQLLOCK_EMISUSE, and its message must say that the transaction was
 * rolled back after `cause` (the status of the failure that ended it). */
void tf_expect_poisoned(problems *p, sqllock_db *db, int rc, int cause,
                        const char *what)
{
    if (rc != SQLLOCK_EMISUSE)
        tf_problem(p, "%s: got %s, want SQLLOCK_EMISUSE (%s)", what,
                   sqllock_errname(rc), sqllock_errmsg(db));
    else if (!tu_contains_ci(sqllock_errmsg(db), "rolled back") ||
             !tu_contains_ci(sqllock_errmsg(db), sqllock_errname(cause)))
        tf_problem(p, "%s: %s, but the message does not say the transaction "
                   "was rolled back after %s: \"%s\"", what,
                   sqllock_errname(rc), sqllock_errname(cause),
                   sqllock_errmsg(db));
}

void tf_expect_version(problems *p, sqllock_db *db2, const char *key,
                       int64_t want, const char *why)
{
    int64_t v = version_of(db2, key);

    if (v != want)
        tf_problem(p, "record %s is at version %lld, want %lld (%s)", key,
                   (long long)v, (long long)want, why);
}

/* Every call of the failed transaction is refused (SQLLOCK_EMISUSE,
 * naming `want`, the failure's status) and sends nothing: a
 * compare-and-set on record `untouched` (at version 1), a read, a
 * create, a table call, an UPDATE through sqllock_db_exec(), a lock
 * call, sqllock_txn_native(); so is the commit, twice, and a new begin;
 * the record stays at version 1. */
void tf_expect_all_refused(problems *p, sqllock_db *db, sqllock_db *db2,
                           sqllock_txn *t, const char *untouched,
                           const char *fresh_key, const char *lock_name,
                           int want)
{
    sqllock_table tbl = { "sqllock_record", "key", "version" };
    sqllock_cell key = SQLLOCK_TEXT(untouched);
    sqllock_txn *t2 = NULL;
    int64_t v = 0;

    tf_expect_poisoned(p, db, sqllock_record_cas(db, untouched, 1, "2", 1,
                                                 NULL), want,
                       "sqllock_record_cas() after the failure");
    tf_expect_poisoned(p, db,
                       sqllock_record_get(db, untouched, NULL, NULL, &v),
                       want, "sqllock_record_get() after the failure");
    tf_expect_poisoned(p, db, sqllock_record_create(db, fresh_key, "x", 1),
                       want, "sqllock_record_create() after the failure");
    tf_expect_poisoned(p, db, sqllock_table_get(db, &tbl, &key, NULL, 0, NULL,
                                                &v), want,
                       "sqllock_table_get() after the failure");
    /* The application's own statement through the handle: it would
     * commit on its own too. */
    tf_expect_poisoned(p, db,
                       sqllock_db_exec(db, strcmp(sqllock_db_driver(db),
                                                  "postgres") == 0 ?
                                       "UPDATE sqllock_record SET version "
                                       "= version + 1 WHERE key = $1" :
                                       strcmp(sqllock_db_driver(db),
                                              "mysql") == 0 ?
                                       "UPDATE sqllock_record SET version "
                                       "= version + 1 WHERE `key` = ?" :
                                       "UPDATE sqllock_record SET version "
                                       "= version + 1 WHERE \"key\" = ?",
                                       &key, 1, NULL, NULL, NULL), want,
                       "sqllock_db_exec() after the failure");
    tf_expect_poisoned(p, db, sqllock_txn_lock(t, &lock_name, 1,
                                               SQLLOCK_LOCK_WAIT, NULL), want,
                       "sqllock_txn_lock() after the failure");
    if (sqllock_txn_native(t) != NULL)
        tf_problem(p, "sqllock_txn_native() after the failure is not NULL: "
                   "the application's own SQL would run outside the "
                   "transaction");
    tf_expect_poisoned(p, db, sqllock_txn_commit(t), want,
                       "sqllock_txn_commit() after the failure");
    printf("    [%s] commit after %s: %s\n", sqllock_db_driver(db),
           sqllock_errname(want), sqllock_errmsg(db));
    tf_expect_poisoned(p, db, sqllock_txn_commit(t), want,
                       "a second sqllock_txn_commit() after the failure");
    tf_expect_poisoned(p, db, sqllock_txn_begin(db, NULL, &t2), want,
                       "sqllock_txn_begin() before the failed one is rolled "
                       "back");
    if (t2 != NULL)
        tf_problem(p, "sqllock_txn_begin() refused but set its output");
    tf_expect_version(p, db2, untouched, 1, "a write after the failure must "
                      "not commit on its own");
    tf_expect_version(p, db2, fresh_key, 0, "a create after the failure must "
                      "not commit on its own");
}

/* After the rollback the handle works again: a new transaction locks,
 * writes and commits. */
void tf_expect_handle_works(problems *p, sqllock_db *db, sqllock_db *db2,
                            const char *lock_name, const char *key)
{
    sqllock_txn *t = NULL;
    int64_t v = version_of(db2, key), nv = 0;
    int rc;

    rc = sqllock_txn_begin(db, NULL, &t);
    if (rc == SQLLOCK_OK)
        rc = sqllock_txn_lock(t, &lock_name, 1, SQLLOCK_LOCK_WAIT, NULL);
    if (rc == SQLLOCK_OK)
        rc = sqllock_record_cas(db, key, v, "w", 1, &nv);
    if (rc == SQLLOCK_OK)
        rc = sqllock_txn_commit(t);
    if (rc != SQLLOCK_OK)
        tf_problem(p, "a new transaction after the rollback: %s (%s)",
                   sqllock_errname(rc), sqllock_errmsg(db));
    sqllock_txn_free(t);
    if (rc == SQLLOCK_OK)
        tf_expect_version(p, db2, key, v + 1, "the new transaction committed");
}

void tf_report(const problems *p, const char *driver)
{
    if (p->len > 0)
        fail_msg("[%s] %s", driver, p->text);
}

/* ------------------------------------------------------------------ */
/* The keys of one test and A's transaction (txnfail.h: dl_keys)       */
/* ------------------------------------------------------------------ */

void tf_dl_keys_make(const fixture *f, const char *test, dl_keys *k)
{
    tf_name_of(f, test, "gate-a", k->gate_a, sizeof k->gate_a);
    tf_name_of(f, test, "gate-b", k->gate_b, sizeof k->gate_b);
    tf_name_of(f, test, "a", k->a, sizeof k->a);
    tf_name_of(f, test, "b", k->b, sizeof k->b);
    tf_name_of(f, test, "b2", k->b2, sizeof k->b2);
    tf_name_of(f, test, "b3", k->b3, sizeof k->b3);
    tf_name_of(f, test, "c", k->c, sizeof k->c);
    tf_name_of(f, test, "fresh", k->fresh, sizeof k->fresh);
}

/* Creates the records and starts A's transaction: lock gate_a, write a. */
sqllock_txn *tf_dl_start(sqllock_db *db, const dl_keys *k)
{
    sqllock_txn *t;

    tf_make_record(db, k->a);
    tf_make_record(db, k->b);
    tf_make_record(db, k->b2);
    tf_make_record(db, k->b3);
    tf_make_record(db, k->c);
    t = tf_begin(db);
    tf_lock1(db, t, k->gate_a);
    EXPECT_RC(db, sqllock_record_cas(db, k->a, 1, "A", 1, NULL), SQLLOCK_OK,
              "A writes a (first half of its transaction)");
    /* A failure that does not end the database's transaction does not
     * poison it: a stale compare-and-set is a conflict, and the
     * transaction goes on (the tests' later steps use it). */
    EXPECT_RC(db, sqllock_record_cas(db, k->a, 1, "stale", 5, NULL),
              SQLLOCK_CONFLICT, "a stale compare-and-set in the transaction");
    return t;
}

/* SQLite: the same transaction without a failure (no deadlock can
 * happen: a transaction holds the database's write lock, R5) commits
 * both of its writes. */
void tf_sqlite_no_failure(const fixture *f, const char *test)
{
    sqllock_db *db = tf_open_handle(), *db2 = tf_open_handle();
    problems p = { { 0 }, 0 };
    sqllock_txn *t;
    dl_keys k;

    tf_dl_keys_make(f, test, &k);
    printf("    [sqlite] no deadlock or lost connection can happen on "
           "SQLite (a transaction locks the whole database, and there is "
           "no server connection): the same transaction without the "
           "failure instead\n");
    t = tf_dl_start(db, &k);
    EXPECT_RC(db, sqllock_record_cas(db, k.b, 1, "A", 1, NULL), SQLLOCK_OK,
              "A writes b");
    EXPECT_RC(db, sqllock_txn_commit(t), SQLLOCK_OK, "commit");
    tf_free_txn(t);
    tf_expect_version(&p, db2, k.a, 2, "committed with the transaction");
    tf_expect_version(&p, db2, k.b, 2, "committed with the transaction");
    tf_close_handle(db);
    tf_close_handle(db2);
    tf_report(&p, f->driver);
}

/* The server's id of db's connection (inside its transaction). */
int64_t tf_conn_id(const fixture *f, sqllock_db *db)
{
    int64_t id = 0;
    int has_row = 0;
    int rc = sqllock__exec_sql(db, tf_is_driver(f, "postgres") ?
                               "SELECT pg_catalog.pg_backend_pid()" :
                               "SELECT CONNECTION_ID()", NULL, 0, &has_row,
                               &id, NULL);

    if (rc != SQLLOCK_OK || !has_row)
        fail_msg("reading the connection id: %s: %s", sqllock_errname(rc),
                 sqllock_errmsg(db));
    return id;
}
