/*
 * test_txnfail.c -- a row-lock transaction after one of its statements
 * failed in a way that ended the database's transaction (DESIGN R7): a
 * deadlock the database broke, a lost connection, a row-lock call that
 * failed. That call returns the failure's status, and the transaction
 * is failed ("poisoned"): every later call in it -- record and table
 * calls on the handle, lock calls, sqllock_txn_native(), the commit, a
 * new begin -- is refused with SQLLOCK_EMISUSE, with a message that
 * names the failure's status and says the transaction was rolled back
 * (sqllock_db_exec(), the application's own statement, as well);
 * nothing more reaches the database, so nothing commits on its own
 * outside the transaction; only a rollback (or sqllock_txn_free()) ends
 * it, and the handle works again after. sqllock_record_update() does
 * not retry a deadlock inside a transaction. A conflict (a stale
 * compare-and-set) does not fail the transaction.
 *
 * The failures are real: a deadlock between this process and a forked
 * child, each with a handle of its own (on PostgreSQL and MySQL); a
 * connection killed from a second handle (pg_terminate_backend(),
 * KILL); a NOWAIT that finds the row (on SQLite: the database) locked by
 * a second handle. SQLite has no row locks and no server connection, so
 * a deadlock and a lost connection cannot happen there: those tests
 * check on SQLite what it can (the same transaction without the failure
 * commits both writes) and say so.
 *
 * Runs once per URL in SQLLOCK_TEST_URLS (space-separated), or on a
 * fresh temporary SQLite file; SQLLOCK_TEST_REQUIRE as in
 * test_conformance. Lock names and record keys carry the pid. Forked
 * children never use cmocka: they report through their exit status.
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

#define LOCK_TIMEOUT_MS 15000       /* no wait here should come near it */
#define CHILD_DEADLINE_MS 60000

static const char *g_url;

typedef struct fixture {
    char driver[16];
    char prefix[32];                /* "tf<pid>-" */
} fixture;

static int is_driver(const fixture *f, const char *name)
{
    return strcmp(f->driver, name) == 0;
}

static int group_setup(void **state)
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
static int group_teardown(void **state)
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
    pg = is_driver(f, "postgres");
    snprintf(pattern, sizeof pattern, "%s%%", f->prefix);
    like = sqllock__text(pattern);
    if (sqllock__exec_sql(db, pg ? "DELETE FROM sqllock_row WHERE name "
                          "LIKE $1" : "DELETE FROM sqllock_row WHERE name "
                          "LIKE ?", &like, 1, NULL, NULL, NULL) != SQLLOCK_OK ||
        sqllock__exec_sql(db, pg ? "DELETE FROM sqllock_record WHERE key "
                          "LIKE $1" : is_driver(f, "mysql") ?
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
static const char *name_of(const fixture *f, const char *test,
                           const char *tail, char *buf, size_t size)
{
    snprintf(buf, size, "%s%s-%s", f->prefix, test, tail);
    return buf;
}

/* The handles and transactions a test opened, so that a test that fails
 * half-way does not leave a transaction holding row locks (which would
 * block the next test and the teardown): test_teardown() frees what is
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

static sqllock_db *open_handle(void)
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

static void close_handle(sqllock_db *db)
{
    untrack((void **)g_dbs, db);
    sqllock_close(db);
}

static sqllock_txn *begin(sqllock_db *db)
{
    sqllock_txn_options o = SQLLOCK_TXN_OPTIONS_INIT;
    sqllock_txn *t = NULL;

    o.lock_timeout_ms = LOCK_TIMEOUT_MS;
    EXPECT_RC(db, sqllock_txn_begin(db, &o, &t), SQLLOCK_OK, "begin");
    track((void **)g_txns, t);
    return t;
}

static void free_txn(sqllock_txn *t)
{
    untrack((void **)g_txns, t);
    sqllock_txn_free(t);
}

static int test_teardown(void **state)
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
static void lock1(sqllock_db *db, sqllock_txn *t, const char *name)
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
static void make_record(sqllock_db *db, const char *key)
{
    EXPECT_RC(db, sqllock_record_create(db, key, "1", 1), SQLLOCK_OK,
              "creating a record");
}

/* What went wrong, gathered so that the failure of a test shows the
 * whole sequence (every call and the state committed) at once. */
typedef struct problems {
    char text[3000];
    size_t len;
} problems;

static void problem(problems *p, const char *fmt, ...)
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
static void expect_poisoned(problems *p, sqllock_db *db, int rc, int cause,
                            const char *what)
{
    if (rc != SQLLOCK_EMISUSE)
        problem(p, "%s: got %s, want SQLLOCK_EMISUSE (%s)", what,
                sqllock_errname(rc), sqllock_errmsg(db));
    else if (!tu_contains_ci(sqllock_errmsg(db), "rolled back") ||
             !tu_contains_ci(sqllock_errmsg(db), sqllock_errname(cause)))
        problem(p, "%s: %s, but the message does not say the transaction "
                "was rolled back after %s: \"%s\"", what,
                sqllock_errname(rc), sqllock_errname(cause),
                sqllock_errmsg(db));
}

static void expect_version(problems *p, sqllock_db *db2, const char *key,
                           int64_t want, const char *why)
{
    int64_t v = version_of(db2, key);

    if (v != want)
        problem(p, "record %s is at version %lld, want %lld (%s)", key,
                (long long)v, (long long)want, why);
}

/* Every call of the failed transaction is refused (SQLLOCK_EMISUSE,
 * naming `want`, the failure's status) and sends nothing: a
 * compare-and-set on record `untouched` (at version 1), a read, a
 * create, a table call, an UPDATE through sqllock_db_exec(), a lock
 * call, sqllock_txn_native(); so is the commit, twice, and a new begin;
 * the record stays at version 1. */
static void expect_all_refused(problems *p, sqllock_db *db, sqllock_db *db2,
                               sqllock_txn *t, const char *untouched,
                               const char *fresh_key, const char *lock_name,
                               int want)
{
    sqllock_table tbl = { "sqllock_record", "key", "version" };
    sqllock_cell key = SQLLOCK_TEXT(untouched);
    sqllock_txn *t2 = NULL;
    int64_t v = 0;

    expect_poisoned(p, db, sqllock_record_cas(db, untouched, 1, "2", 1,
                                              NULL), want,
                    "sqllock_record_cas() after the failure");
    expect_poisoned(p, db, sqllock_record_get(db, untouched, NULL, NULL, &v),
                    want, "sqllock_record_get() after the failure");
    expect_poisoned(p, db, sqllock_record_create(db, fresh_key, "x", 1),
                    want, "sqllock_record_create() after the failure");
    expect_poisoned(p, db, sqllock_table_get(db, &tbl, &key, NULL, 0, NULL,
                                             &v), want,
                    "sqllock_table_get() after the failure");
    /* The application's own statement through the handle: it would
     * commit on its own too. */
    expect_poisoned(p, db, sqllock_db_exec(db, strcmp(sqllock_db_driver(db),
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
    expect_poisoned(p, db, sqllock_txn_lock(t, &lock_name, 1,
                                            SQLLOCK_LOCK_WAIT, NULL), want,
                    "sqllock_txn_lock() after the failure");
    if (sqllock_txn_native(t) != NULL)
        problem(p, "sqllock_txn_native() after the failure is not NULL: "
                "the application's own SQL would run outside the "
                "transaction");
    expect_poisoned(p, db, sqllock_txn_commit(t), want,
                    "sqllock_txn_commit() after the failure");
    printf("    [%s] commit after %s: %s\n", sqllock_db_driver(db),
           sqllock_errname(want), sqllock_errmsg(db));
    expect_poisoned(p, db, sqllock_txn_commit(t), want,
                    "a second sqllock_txn_commit() after the failure");
    expect_poisoned(p, db, sqllock_txn_begin(db, NULL, &t2), want,
                    "sqllock_txn_begin() before the failed one is rolled "
                    "back");
    if (t2 != NULL)
        problem(p, "sqllock_txn_begin() refused but set its output");
    expect_version(p, db2, untouched, 1, "a write after the failure must "
                   "not commit on its own");
    expect_version(p, db2, fresh_key, 0, "a create after the failure must "
                   "not commit on its own");
}

/* After the rollback the handle works again: a new transaction locks,
 * writes and commits. */
static void expect_handle_works(problems *p, sqllock_db *db, sqllock_db *db2,
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
        problem(p, "a new transaction after the rollback: %s (%s)",
                sqllock_errname(rc), sqllock_errmsg(db));
    sqllock_txn_free(t);
    if (rc == SQLLOCK_OK)
        expect_version(p, db2, key, v + 1, "the new transaction committed");
}

static void report(const problems *p, const char *driver)
{
    if (p->len > 0)
        fail_msg("[%s] %s", driver, p->text);
}

/* ------------------------------------------------------------------ */
/* A deadlock between this process (A) and a forked child (B)          */
/* ------------------------------------------------------------------ */

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

static void dl_keys_make(const fixture *f, const char *test, dl_keys *k)
{
    name_of(f, test, "gate-a", k->gate_a, sizeof k->gate_a);
    name_of(f, test, "gate-b", k->gate_b, sizeof k->gate_b);
    name_of(f, test, "a", k->a, sizeof k->a);
    name_of(f, test, "b", k->b, sizeof k->b);
    name_of(f, test, "b2", k->b2, sizeof k->b2);
    name_of(f, test, "b3", k->b3, sizeof k->b3);
    name_of(f, test, "c", k->c, sizeof k->c);
    name_of(f, test, "fresh", k->fresh, sizeof k->fresh);
}

/* PostgreSQL: waits (up to 10 s) until backend `pid` waits for a lock,
 * as another connection (`poll`, outside any transaction) sees it. */
static void pg_wait_for_lock_wait(sqllock_db *poll, int64_t pid)
{
    sqllock_value v = sqllock__int(pid);
    int64_t deadline = tu_now_ms() + 10000, n = 0;

    while (tu_now_ms() < deadline) {
        if (sqllock__exec_sql(poll, "SELECT COUNT(*) FROM pg_stat_activity "
                              "WHERE pid = $1 AND wait_event_type = 'Lock'",
                              &v, 1, NULL, &n, NULL) != SQLLOCK_OK || n > 0)
            return;
        tu_sleep_ms(10);
    }
}

/* The child: 0 when its transaction committed; 10 + the status of the
 * first call that failed otherwise. `ready` is written once b is
 * written; `go` is read before a. */
static int dl_child(const dl_keys *k, int ready, int go)
{
    sqllock_db *poll = NULL;
    sqllock_db *db = NULL;
    sqllock_txn_options o = SQLLOCK_TXN_OPTIONS_INIT;
    sqllock_txn *t = NULL;
    const char *gate = k->gate_b;
    char c = 'r';
    int rc;

    o.lock_timeout_ms = LOCK_TIMEOUT_MS;
    rc = sqllock_open(g_url, NULL, &db);
    if (rc == SQLLOCK_OK && k->pg)
        rc = sqllock_open(g_url, NULL, &poll);
    if (rc == SQLLOCK_OK)
        rc = sqllock_txn_begin(db, &o, &t);
    if (rc == SQLLOCK_OK)
        rc = sqllock_txn_lock(t, &gate, 1, SQLLOCK_LOCK_WAIT, NULL);
    if (rc == SQLLOCK_OK)
        rc = sqllock_record_cas(db, k->b2, 1, "B", 1, NULL);
    if (rc == SQLLOCK_OK)
        rc = sqllock_record_cas(db, k->b3, 1, "B", 1, NULL);
    if (rc == SQLLOCK_OK)
        rc = sqllock_record_cas(db, k->b, 1, "B", 1, NULL);
    if (write(ready, &c, 1) != 1 && rc == SQLLOCK_OK)
        rc = SQLLOCK_ESYS;
    if (rc == SQLLOCK_OK && read(go, &c, 1) != 1)
        rc = SQLLOCK_ESYS;
    /* A is about to write b: let it start waiting first. PostgreSQL
     * aborts the transaction whose deadlock check (deadlock_timeout, 1 s
     * into its wait) finds the cycle: A's, when B's wait begins within
     * A's first second. InnoDB rolls back the lighter transaction, A,
     * whenever the cycle closes. */
    if (rc == SQLLOCK_OK && k->pg)
        pg_wait_for_lock_wait(poll, k->a_conn);
    else
        tu_sleep_ms(300);
    if (rc == SQLLOCK_OK)
        rc = sqllock_record_cas(db, k->a, 1, "B", 1, NULL);
    if (rc == SQLLOCK_OK)
        rc = sqllock_txn_commit(t);
    if (rc != SQLLOCK_OK)
        fprintf(stderr, "    deadlock child: %s: %s\n", sqllock_errname(rc),
                sqllock_errmsg(db));
    sqllock_txn_free(t);
    sqllock_close(db);
    sqllock_close(poll);
    return rc == SQLLOCK_OK ? 0 : 10 + rc;
}

/* Waits for the child; its exit status (-1 when it did not exit). */
static int dl_wait(pid_t pid)
{
    int64_t deadline = tu_now_ms() + CHILD_DEADLINE_MS;
    int st = 0;

    for (;;) {
        pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid)
            return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
        if (r < 0 || tu_now_ms() > deadline) {
            kill(pid, SIGKILL);
            waitpid(pid, &st, 0);
            return -1;
        }
        tu_sleep_ms(20);
    }
}

/* Runs the deadlock: A (db, in transaction t, started by its lock on
 * gate_a) has written a; `second` is A's call that writes b and meets
 * the deadlock. Returns its status; *child_status is the child's. */
typedef int (*dl_second_fn)(sqllock_db *db, const dl_keys *k, void *ctx);

static int dl_run(sqllock_db *db, const dl_keys *k, dl_second_fn second,
                  void *ctx, int *child_status)
{
    int ready[2], go[2], rc;
    char c = 0;
    pid_t pid;

    assert_int_equal(pipe(ready), 0);
    assert_int_equal(pipe(go), 0);
    fflush(stdout);
    fflush(stderr);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(ready[0]);
        close(go[1]);
        _exit(dl_child(k, ready[1], go[0]));
    }
    close(ready[1]);
    close(go[0]);
    if (read(ready[0], &c, 1) != 1)
        fail_msg("the deadlock child did not get ready");
    if (write(go[1], &c, 1) != 1)
        fail_msg("cannot signal the deadlock child");
    rc = second(db, k, ctx);
    close(ready[0]);
    close(go[1]);
    *child_status = dl_wait(pid);
    return rc;
}

static int dl_second_cas(sqllock_db *db, const dl_keys *k, void *ctx)
{
    (void)ctx;
    return sqllock_record_cas(db, k->b, 1, "A", 1, NULL);
}

/* Creates the records and starts A's transaction: lock gate_a, write a. */
static sqllock_txn *dl_start(sqllock_db *db, const dl_keys *k)
{
    sqllock_txn *t;

    make_record(db, k->a);
    make_record(db, k->b);
    make_record(db, k->b2);
    make_record(db, k->b3);
    make_record(db, k->c);
    t = begin(db);
    lock1(db, t, k->gate_a);
    EXPECT_RC(db, sqllock_record_cas(db, k->a, 1, "A", 1, NULL), SQLLOCK_OK,
              "A writes a (first half of its transaction)");
    /* A failure that does not end the database's transaction does not
     * poison it: a stale compare-and-set is a conflict, and the
     * transaction goes on (the tests' later steps use it). */
    EXPECT_RC(db, sqllock_record_cas(db, k->a, 1, "stale", 5, NULL),
              SQLLOCK_CONFLICT, "a stale compare-and-set in the transaction");
    return t;
}

static int64_t conn_id(const fixture *f, sqllock_db *db);

/* The deadlock, with A as its victim: *t is A's transaction (keys *k),
 * and the status of A's `second` call is returned. When the database
 * picks B instead (a scheduling accident), A's transaction is rolled
 * back and the deadlock played again with new keys, up to 3 times. */
static int dl_attempt(const fixture *f, const char *test, sqllock_db *db,
                      dl_second_fn second, void *ctx, dl_keys *k,
                      sqllock_txn **t, int *child)
{
    char tag[64];
    int round, rc = -1;

    for (round = 1; round <= 3; round++) {
        snprintf(tag, sizeof tag, "%s%d", test, round);
        dl_keys_make(f, tag, k);
        *t = dl_start(db, k);
        k->pg = is_driver(f, "postgres");
        k->a_conn = k->pg ? conn_id(f, db) : 0;
        rc = dl_run(db, k, second, ctx, child);
        if (rc != SQLLOCK_OK || *child != 10 + SQLLOCK_EDEADLOCK)
            return rc;
        printf("    [%s] the database rolled back the other transaction "
               "of the deadlock, not this one: again\n", f->driver);
        free_txn(*t);
        *t = NULL;
    }
    return rc;
}

/* SQLite: the same transaction without a failure (no deadlock can
 * happen: a transaction holds the database's write lock, R5) commits
 * both of its writes. */
static void sqlite_no_failure(const fixture *f, const char *test)
{
    sqllock_db *db = open_handle(), *db2 = open_handle();
    problems p = { { 0 }, 0 };
    sqllock_txn *t;
    dl_keys k;

    dl_keys_make(f, test, &k);
    printf("    [sqlite] no deadlock or lost connection can happen on "
           "SQLite (a transaction locks the whole database, and there is "
           "no server connection): the same transaction without the "
           "failure instead\n");
    t = dl_start(db, &k);
    EXPECT_RC(db, sqllock_record_cas(db, k.b, 1, "A", 1, NULL), SQLLOCK_OK,
              "A writes b");
    EXPECT_RC(db, sqllock_txn_commit(t), SQLLOCK_OK, "commit");
    free_txn(t);
    expect_version(&p, db2, k.a, 2, "committed with the transaction");
    expect_version(&p, db2, k.b, 2, "committed with the transaction");
    close_handle(db);
    close_handle(db2);
    report(&p, f->driver);
}

/* R7: a compare-and-set that a deadlock rolled back poisons the
 * transaction; nothing after it commits, and the commit fails with
 * SQLLOCK_EDEADLOCK. */
static void test_txnfail_R7_deadlock_poisons_txn(void **state)
{
    fixture *f = *state;
    problems p = { { 0 }, 0 };
    sqllock_db *db, *db2;
    sqllock_txn *t;
    dl_keys k;
    int rc, child = -1;

    if (is_driver(f, "sqlite")) {
        sqlite_no_failure(f, "dl");
        return;
    }
    db = open_handle();
    db2 = open_handle();
    rc = dl_attempt(f, "dl", db, dl_second_cas, NULL, &k, &t, &child);
    if (rc != SQLLOCK_EDEADLOCK)
        fail_msg("[%s] A's write of b: got %s, want SQLLOCK_EDEADLOCK (the "
                 "child exited %d): %s", f->driver, sqllock_errname(rc),
                 child, sqllock_errmsg(db));
    if (child != 0)
        problem(&p, "the child's transaction did not commit (exit %d)",
                child);
    expect_all_refused(&p, db, db2, t, k.c, k.fresh, k.gate_a,
                       SQLLOCK_EDEADLOCK);
    EXPECT_RC(db, sqllock_txn_rollback(t), SQLLOCK_OK,
              "rollback after the deadlock");
    free_txn(t);
    /* A's first half was rolled back; B's writes committed. */
    expect_version(&p, db2, k.a, child == 0 ? 2 : 1, "A's write rolled "
                   "back, B's committed");
    expect_version(&p, db2, k.b, child == 0 ? 2 : 1, "B's write");
    expect_handle_works(&p, db, db2, k.gate_a, k.c);
    close_handle(db);
    close_handle(db2);
    report(&p, f->driver);
}

/* The update function: writes "U". */
static int set_u(void *ctx, const void *old, size_t old_len,
                 const void **out, size_t *out_len)
{
    (void)ctx;
    (void)old;
    (void)old_len;
    *out = "U";
    *out_len = 1;
    return SQLLOCK_OK;
}

typedef struct update_ctx {
    int attempts;
} update_ctx;

static int dl_second_update(sqllock_db *db, const dl_keys *k, void *ctx)
{
    update_ctx *u = ctx;
    sqllock_retry_options o = SQLLOCK_RETRY_OPTIONS_INIT;

    o.max_attempts = 5;
    return sqllock_record_update(db, k->b, set_u, NULL, &o, &u->attempts);
}

/* R7: inside a transaction sqllock_record_update() does not retry a
 * deadlock (the retry could not redo the half the database rolled
 * back): it returns SQLLOCK_EDEADLOCK after one attempt, and the
 * transaction is poisoned. */
static void test_txnfail_R7_update_does_not_retry_deadlock(void **state)
{
    fixture *f = *state;
    problems p = { { 0 }, 0 };
    sqllock_db *db, *db2;
    sqllock_txn *t;
    update_ctx u = { 0 };
    dl_keys k;
    int rc, child = -1;

    if (is_driver(f, "sqlite")) {
        /* No deadlock on SQLite (R5): an update inside the transaction
         * commits with it. */
        sqllock_db *d = open_handle(), *d2 = open_handle();
        dl_keys_make(f, "up", &k);
        printf("    [sqlite] no deadlock can happen on SQLite: an update "
               "inside the transaction, without one, instead\n");
        t = dl_start(d, &k);
        EXPECT_RC(d, dl_second_update(d, &k, &u), SQLLOCK_OK, "update b");
        assert_int_equal(u.attempts, 1);
        EXPECT_RC(d, sqllock_txn_commit(t), SQLLOCK_OK, "commit");
        free_txn(t);
        expect_version(&p, d2, k.a, 2, "committed with the transaction");
        expect_version(&p, d2, k.b, 2, "committed with the transaction");
        close_handle(d);
        close_handle(d2);
        report(&p, f->driver);
        return;
    }
    db = open_handle();
    db2 = open_handle();
    rc = dl_attempt(f, "up", db, dl_second_update, &u, &k, &t, &child);
    if (rc != SQLLOCK_EDEADLOCK)
        problem(&p, "sqllock_record_update() in the transaction: got %s "
                "after %d attempt(s), want SQLLOCK_EDEADLOCK after 1 "
                "(%s)", sqllock_errname(rc), u.attempts, sqllock_errmsg(db));
    else if (u.attempts != 1)
        problem(&p, "sqllock_record_update() made %d attempts, want 1",
                u.attempts);
    if (child != 0)
        problem(&p, "the child's transaction did not commit (exit %d)",
                child);
    rc = sqllock_txn_commit(t);
    if (rc == SQLLOCK_OK)
        problem(&p, "sqllock_txn_commit() after the deadlock reported "
                "success: the write of a was rolled back");
    else
        expect_poisoned(&p, db, rc, SQLLOCK_EDEADLOCK,
                        "sqllock_txn_commit() after the deadlock");
    sqllock_txn_rollback(t);
    free_txn(t);
    /* b was written by B only (version 2), never by a retry of A's. */
    expect_version(&p, db2, k.a, child == 0 ? 2 : 1, "A's write rolled "
                   "back, B's committed");
    expect_version(&p, db2, k.b, child == 0 ? 2 : 1, "only B wrote b: A's "
                   "update must not be retried outside its transaction");
    expect_handle_works(&p, db, db2, k.gate_a, k.c);
    close_handle(db);
    close_handle(db2);
    report(&p, f->driver);
}

/* ------------------------------------------------------------------ */
/* A connection killed under the transaction                           */
/* ------------------------------------------------------------------ */

/* The server's id of db's connection (inside its transaction). */
static int64_t conn_id(const fixture *f, sqllock_db *db)
{
    int64_t id = 0;
    int has_row = 0;
    int rc = sqllock__exec_sql(db, is_driver(f, "postgres") ?
                               "SELECT pg_backend_pid()" :
                               "SELECT CONNECTION_ID()", NULL, 0, &has_row,
                               &id, NULL);

    if (rc != SQLLOCK_OK || !has_row)
        fail_msg("reading the connection id: %s: %s", sqllock_errname(rc),
                 sqllock_errmsg(db));
    return id;
}

/* Kills connection `id` from db2 and waits until it is gone. */
static void kill_conn(const fixture *f, sqllock_db *db2, int64_t id)
{
    sqllock_value v = sqllock__int(id);
    int64_t deadline = tu_now_ms() + 10000, n = 1;
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
    while (n != 0) {
        int has_row = 0;
        rc = sqllock__exec_sql(db2, is_driver(f, "postgres") ?
                               "SELECT COUNT(*) FROM pg_stat_activity "
                               "WHERE pid = $1" :
                               "SELECT COUNT(*) FROM "
                               "information_schema.processlist WHERE id = ?",
                               &v, 1, &has_row, &n, NULL);
        if (rc != SQLLOCK_OK)
            fail_msg("checking connection %lld: %s", (long long)id,
                     sqllock_errmsg(db2));
        if (n != 0 && tu_now_ms() > deadline)
            fail_msg("connection %lld still exists 10 s after the kill",
                     (long long)id);
        if (n != 0)
            tu_sleep_ms(20);
    }
}

/* R7: after a call that lost the connection, the next calls do not
 * reconnect and run outside the transaction: they fail with
 * SQLLOCK_ECONNECT, and so does the commit. */
static void test_txnfail_R7_lost_connection_poisons_txn(void **state)
{
    fixture *f = *state;
    problems p = { { 0 }, 0 };
    sqllock_db *db, *db2;
    sqllock_txn *t;
    dl_keys k;
    int rc;

    if (is_driver(f, "sqlite")) {
        sqlite_no_failure(f, "kill");
        return;
    }
    dl_keys_make(f, "kill", &k);
    db = open_handle();
    db2 = open_handle();
    t = dl_start(db, &k);
    kill_conn(f, db2, conn_id(f, db));
    rc = sqllock_record_cas(db, k.b, 1, "A", 1, NULL);
    if (rc != SQLLOCK_ECONNECT)
        fail_msg("[%s] the write after the kill: got %s, want "
                 "SQLLOCK_ECONNECT: %s", f->driver, sqllock_errname(rc),
                 sqllock_errmsg(db));
    expect_all_refused(&p, db, db2, t, k.c, k.fresh, k.gate_a,
                       SQLLOCK_ECONNECT);
    EXPECT_RC(db, sqllock_txn_rollback(t), SQLLOCK_OK,
              "rollback after the lost connection");
    free_txn(t);
    expect_version(&p, db2, k.a, 1, "the server rolled A's write back");
    expect_version(&p, db2, k.b, 1, "the write that lost the connection");
    expect_handle_works(&p, db, db2, k.gate_a, k.c);
    close_handle(db);
    close_handle(db2);
    report(&p, f->driver);
}

/* R7: the same when the connection was lost under a lock call: the
 * record calls after it fail with SQLLOCK_ECONNECT, without
 * reconnecting. */
static void test_txnfail_R7_lost_connection_in_lock_call(void **state)
{
    fixture *f = *state;
    problems p = { { 0 }, 0 };
    sqllock_db *db, *db2;
    sqllock_txn *t;
    char second[96];
    const char *sp;
    dl_keys k;
    int rc;

    if (is_driver(f, "sqlite")) {
        sqlite_no_failure(f, "killlock");
        return;
    }
    dl_keys_make(f, "killlock", &k);
    sp = name_of(f, "killlock", "second", second, sizeof second);
    db = open_handle();
    db2 = open_handle();
    t = dl_start(db, &k);
    kill_conn(f, db2, conn_id(f, db));
    rc = sqllock_txn_lock(t, &sp, 1, SQLLOCK_LOCK_WAIT, NULL);
    if (rc != SQLLOCK_ECONNECT)
        fail_msg("[%s] the lock call after the kill: got %s, want "
                 "SQLLOCK_ECONNECT: %s", f->driver, sqllock_errname(rc),
                 sqllock_errmsg(db));
    expect_all_refused(&p, db, db2, t, k.c, k.fresh, k.gate_a,
                       SQLLOCK_ECONNECT);
    EXPECT_RC(db, sqllock_txn_rollback(t), SQLLOCK_OK,
              "rollback after the lost connection");
    free_txn(t);
    expect_version(&p, db2, k.a, 1, "the server rolled A's write back");
    expect_handle_works(&p, db, db2, k.gate_a, k.c);
    close_handle(db);
    close_handle(db2);
    report(&p, f->driver);
}

/* ------------------------------------------------------------------ */
/* A row-lock call that failed                                         */
/* ------------------------------------------------------------------ */

/* R7 (with R3): a NOWAIT that finds the row locked ends the transaction
 * (SQLLOCK_ELOCKED, rolled back); the record calls after it on the same
 * handle must not run outside it. On PostgreSQL and MySQL the
 * transaction has written a record first; on SQLite the NOWAIT of the
 * first lock call finds the database locked by another handle (R5), and
 * the record calls come after that handle has let go. */
static void test_txnfail_R7_failed_lock_call_poisons_txn(void **state)
{
    fixture *f = *state;
    problems p = { { 0 }, 0 };
    sqllock_db *db, *db2;
    sqllock_txn *t, *t2;
    char held[96];
    const char *hp;
    dl_keys k;
    int rc;

    dl_keys_make(f, "nowait", &k);
    hp = name_of(f, "nowait", "held", held, sizeof held);
    db = open_handle();
    db2 = open_handle();
    if (is_driver(f, "sqlite")) {
        make_record(db, k.a);
        make_record(db, k.c);
        t = begin(db);
        t2 = begin(db2);
        lock1(db2, t2, hp);                 /* the database's write lock */
        rc = sqllock_txn_lock(t, &hp, 1, SQLLOCK_LOCK_NOWAIT, NULL);
        EXPECT_RC(db2, sqllock_txn_commit(t2), SQLLOCK_OK,
                  "the other handle lets go");
        free_txn(t2);
    } else {
        t2 = begin(db2);
        lock1(db2, t2, hp);
        t = dl_start(db, &k);
        rc = sqllock_txn_lock(t, &hp, 1, SQLLOCK_LOCK_NOWAIT, NULL);
    }
    if (rc != SQLLOCK_ELOCKED)
        fail_msg("[%s] NOWAIT on the locked row: got %s, want "
                 "SQLLOCK_ELOCKED: %s", f->driver, sqllock_errname(rc),
                 sqllock_errmsg(db));
    if (!is_driver(f, "sqlite")) {
        EXPECT_RC(db2, sqllock_txn_commit(t2), SQLLOCK_OK,
                  "the other handle lets go");
        free_txn(t2);
    }
    expect_all_refused(&p, db, db2, t, k.c, k.fresh, k.gate_a,
                       SQLLOCK_ELOCKED);
    EXPECT_RC(db, sqllock_txn_rollback(t), SQLLOCK_OK,
              "rollback after the failed lock call");
    free_txn(t);
    expect_version(&p, db2, k.a, 1, "the transaction's write was rolled "
                   "back");
    expect_handle_works(&p, db, db2, k.gate_a, k.c);
    close_handle(db);
    close_handle(db2);
    report(&p, f->driver);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_txnfail_R7_deadlock_poisons_txn,
                                  test_teardown),
        cmocka_unit_test_teardown(test_txnfail_R7_update_does_not_retry_deadlock,
                                  test_teardown),
        cmocka_unit_test_teardown(test_txnfail_R7_lost_connection_poisons_txn,
                                  test_teardown),
        cmocka_unit_test_teardown(test_txnfail_R7_lost_connection_in_lock_call,
                                  test_teardown),
        cmocka_unit_test_teardown(test_txnfail_R7_failed_lock_call_poisons_txn,
                                  test_teardown),
    };
    return TU_RUN_PER_URL("txnfail", &g_url, tests, group_setup,
                          group_teardown);
}
