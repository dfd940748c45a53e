/*
 * txn.c -- row locks (DESIGN R1-R7).
 *
 * A row lock is a SELECT ... FOR UPDATE inside a transaction on the
 * handle's connection; it ends at commit or rollback, and the database ends
 * it if the connection dies. Several rows are always locked one at a time
 * in one sorted order (R2), so two clients that lock overlapping sets
 * through the library cannot deadlock each other. The library's own lock
 * rows are created on first use, inside the transaction, by a statement
 * that never waits for a lock on an existing row.
 *
 * SQLite has no row locks (SQLLOCK_CAP_DB_LOCK): the transaction takes
 * the database's write lock with BEGIN IMMEDIATE at its first lock call,
 * waiting according to the mode (R5).
 *
 * A statement of the transaction -- a lock call's, or a record or table
 * call's on the same handle (record.c, table.c) -- that fails in a way that
 * ended the database's transaction, or may have (a deadlock, a
 * serialization failure, a lock wait that timed out, a lost connection),
 * fails the transaction (R7): it is rolled back at once, and from then
 * on every call in it is refused before anything is sent, until the
 * application rolls it back or frees it. Without that, MySQL, which
 * rolls a deadlocked transaction back whole and leaves the session in
 * autocommit, would commit each later statement on its own, and the
 * next call after a lost connection would reconnect outside any
 * transaction.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define TXN_DEFAULT_TIMEOUT_MS 5000

/* Fails the transaction after a failure that the database answered by
 * rolling back (or that lost the connection, or may have ended the
 * transaction): it is rolled back now, which sends only a ROLLBACK
 * (nothing on a lost connection), and stays the handle's transaction,
 * refusing every call, until the application rolls it back (R7). The
 * failed call reports `status` with the database's message. */
int sqllock__txn_end_failed(sqllock_txn *t, int status)
{
    sqllock_db *db = t->db;

    memcpy(t->why, db->errmsg, sizeof t->why);
    t->state = TXN_FAILED;
    t->ended_by = status;
    /* The application's transaction is the application's to end (G2). */
    if (t->joined)
        return sqllock__fail(db, status, "%s; the application's "
                             "transaction may have been ended by the "
                             "database: roll it back on its connection, "
                             "free this sqllock_txn, and begin again",
                             t->why);
    sqllock__rollback(db);
    /* The rollback must not overwrite the reason. */
    return sqllock__fail(db, status, "%s; the transaction was rolled "
                         "back: roll it back (or free it) and begin again",
                         t->why);
}

/* The statuses after which the database's transaction is over, or may
 * be: PostgreSQL aborts it at any failed statement; MySQL rolls a
 * deadlock back whole (a lock wait timeout by statement, or whole with
 * innodb_rollback_on_timeout); a lost connection ends it; SQLite may
 * roll back after a full disk or a busy database. */
int sqllock__txn_ends(int status)
{
    return status == SQLLOCK_ELOCKED || status == SQLLOCK_EDEADLOCK ||
           status == SQLLOCK_ESERIALIZATION || status == SQLLOCK_ECONNECT ||
           status == SQLLOCK_EMISUSE || status == SQLLOCK_EDBBUSY ||
           status == SQLLOCK_ECANCELED || status == SQLLOCK_EFULL;
}

/* The refusal of a call in a failed transaction (R7). */
static int refuse(sqllock_txn *t, const char *what)
{
    return sqllock__fail(t->db, SQLLOCK_EMISUSE, "%s: not run: the "
                         "transaction was rolled back after %s (%s); "
                         "nothing more runs in it: roll it back "
                         "(sqllock_txn_rollback() or sqllock_txn_free()) "
                         "and begin again", what,
                         sqllock_errname(t->ended_by), t->why);
}

/* An open transaction whose connection is gone (dropped by a call that
 * found it broken, wherever): the database ended the transaction, and
 * the next statement would reconnect outside it. */
static int lost(sqllock_txn *t)
{
    return t->state == TXN_OPEN && t->db->conn == NULL;
}

static int fail_lost(sqllock_txn *t)
{
    sqllock__fail(t->db, SQLLOCK_ECONNECT, "the connection of the "
                  "transaction was lost");
    return sqllock__txn_end_failed(t, SQLLOCK_ECONNECT);
}

/* Ends the transaction on the handle: it may begin another. On a borrowed
 * connection the application's own row-lock wait goes back as it was
 * (the handle's status and message stay those of the call that ended the
 * transaction). */
static void detach(sqllock_txn *t)
{
    sqllock_db *db = t->db;

    sqllock__txn_restore_lock_timeout(t);
    db->begin_pending = 0;
    t->state = TXN_OVER;
    t->db->in_txn = 0;
    if (t->db->txn == t)
        t->db->txn = NULL;
}

int sqllock__txn_check(sqllock_db *db, const char *what)
{
    sqllock_txn *t = db->txn;

    if (t == NULL)
        return SQLLOCK_OK;
    if (lost(t))
        fail_lost(t);
    if (t->state == TXN_FAILED)
        return refuse(t, what);
    return SQLLOCK_OK;
}

int sqllock__txn_failed(sqllock_db *db, int status)
{
    sqllock_txn *t = db->txn;

    if (t != NULL && t->state == TXN_OPEN &&
        (sqllock__txn_ends(status) || db->conn == NULL))
        return sqllock__txn_end_failed(t, status);
    return status;
}

/* Every field of sqllock_txn_options is in its struct_version 1, so none
 * is gated below. A field appended in version N must be read only when
 * opts->struct_version >= N (an older caller's struct ends before it), as
 * read_options() in db.c reads statement_timeout_ms; this stops the build
 * when the version moves without that check being written. */
typedef char sqllock__txn_options_is_v1[
    SQLLOCK_TXN_OPTIONS_VERSION == 1 ? 1 : -1];

static int txn_new(sqllock_db *db, const sqllock_txn_options *opts,
                   int joined, sqllock_txn **out);

/* Whether the borrowed connection is inside the application's
 * transaction (the driver's answer, without a round trip). */
static int app_in_txn(sqllock_db *db, int *in_txn)
{
    sqllock_dberr err;
    int rc;

    *in_txn = 0;
    if (db->conn == NULL)
        return sqllock__fail(db, SQLLOCK_ECONNECT, "the borrowed connection "
                             "failed earlier (%s)", db->lost_why);
    if (db->drv->txn_status == NULL)
        return sqllock__fail(db, SQLLOCK_EUNSUPPORTED, "the %s driver cannot "
                             "tell whether the connection is inside a "
                             "transaction", db->drv->name);
    memset(&err, 0, sizeof err);
    rc = db->drv->txn_status(db->conn, in_txn, &err);
    if (rc != SQLLOCK_OK) {
        err.status = rc;
        return sqllock__fail_db(db, &err, "asking for the connection's "
                                "transaction");
    }
    return SQLLOCK_OK;
}

int sqllock__in_txn(sqllock_db *db, int *in_txn)
{
    *in_txn = 0;
    if (db->txn != NULL) {
        *in_txn = 1;
        return SQLLOCK_OK;
    }
    if (!db->borrowed)
        return SQLLOCK_OK;
    return app_in_txn(db, in_txn);
}

/* The arguments every way of making a sqllock_txn checks first. */
static int txn_args(sqllock_db *db, sqllock_txn **out)
{
    if (out != NULL)
        *out = NULL;
    if (db == NULL)
        return SQLLOCK_EINVAL;
    if (out == NULL)
        return sqllock__fail(db, SQLLOCK_EINVAL, "the output pointer is NULL");
    if (db->drv == NULL)
        return sqllock__fail(db, SQLLOCK_EMISUSE, "the handle has no driver "
                             "(its open failed)");
    return SQLLOCK_OK;
}

int sqllock_txn_join(sqllock_db *db, const sqllock_txn_options *opts,
                     sqllock_txn **out)
{
    int app_txn = 0, rc;

    if ((rc = txn_args(db, out)) != SQLLOCK_OK)
        return rc;
    if (!db->borrowed)
        return sqllock__fail(db, SQLLOCK_EMISUSE, "sqllock_txn_join: the "
                             "handle's connection is the library's own; "
                             "join a transaction on a connection the "
                             "application lends (sqllock_borrow()), or use "
                             "sqllock_txn_begin()");
    if (db->in_txn)
        return sqllock__fail(db, SQLLOCK_EMISUSE, "a transaction is already "
                             "open on this handle: end it first");
    if ((rc = app_in_txn(db, &app_txn)) != SQLLOCK_OK)
        return rc;
    if (!app_txn)
        return sqllock__fail(db, SQLLOCK_EMISUSE, "sqllock_txn_join: no "
                             "transaction is open on the connection: begin "
                             "one there first (or use sqllock_txn_begin(), "
                             "which begins and commits its own)");
    return txn_new(db, opts, 1, out);
}

int sqllock_txn_begin(sqllock_db *db, const sqllock_txn_options *opts,
                      sqllock_txn **out)
{
    int rc = txn_args(db, out);

    return rc != SQLLOCK_OK ? rc : txn_new(db, opts, 0, out);
}

/* A new sqllock_txn on `db`: the library's own (joined 0), or the
 * application's open one (joined 1). */
static int txn_new(sqllock_db *db, const sqllock_txn_options *opts,
                   int joined, sqllock_txn **out)
{
    sqllock_txn *t;
    int64_t timeout = TXN_DEFAULT_TIMEOUT_MS;

    if (opts != NULL) {
        if (opts->lock_timeout_ms < 0)
            return sqllock__fail(db, SQLLOCK_EINVAL, "the lock timeout must "
                                 "not be negative (got %lld ms)",
                                 (long long)opts->lock_timeout_ms);
        if (opts->lock_timeout_ms > 0)
            timeout = opts->lock_timeout_ms;
    }
    if (db->txn != NULL && db->txn->state == TXN_FAILED)
        return sqllock__fail(db, SQLLOCK_EMISUSE, "the handle's transaction "
                             "was rolled back after %s and is still open: "
                             "roll it back (sqllock_txn_rollback() or "
                             "sqllock_txn_free()) first",
                             sqllock_errname(db->txn->ended_by));
    if (db->in_txn)
        return sqllock__fail(db, SQLLOCK_EMISUSE, "a transaction is already "
                             "open on this handle: commit or roll it back "
                             "first");
    if (db->borrowed && !joined) {
        int app_txn = 0, rc = app_in_txn(db, &app_txn);

        if (rc != SQLLOCK_OK)
            return rc;
        if (app_txn)
            return sqllock__fail(db, SQLLOCK_EMISUSE, "the application has "
                                 "a transaction open on the borrowed "
                                 "connection: join it with "
                                 "sqllock_txn_join() (a BEGIN of ours "
                                 "would end or nest in it)");
    }
    t = calloc(1, sizeof *t);
    if (t == NULL)
        return sqllock__fail(db, SQLLOCK_ENOMEM, "out of memory");
    t->db = db;
    t->lock_timeout_ms = timeout;
    t->saved_timeout_ms = -1;
    t->joined = joined;
    /* Nothing is sent yet: the transaction starts at the first lock call
     * (or sqllock_txn_native()), after the library's lock rows it needs
     * exist (see sqllock_txn_lock()). */
    t->state = TXN_PENDING;
    db->in_txn = 1;
    db->txn = t;
    *out = t;
    return sqllock__ok(db);
}

int sqllock__txn_check_open(sqllock_txn *t, const char *what)
{
    if (lost(t))
        fail_lost(t);
    if (t->state == TXN_FAILED)
        return refuse(t, what);
    if (t->state == TXN_OVER)
        return sqllock__fail(t->db, SQLLOCK_EMISUSE, "%s: the transaction "
                             "is over%s%s%s", what,
                             t->ended_by != SQLLOCK_OK ? " (rolled back after "
                             : "", t->ended_by != SQLLOCK_OK ?
                             sqllock_errname(t->ended_by) : "",
                             t->ended_by != SQLLOCK_OK ? ")" : "");
    return SQLLOCK_OK;
}

/*
 * The first lock call in the application's transaction (G2): sets the
 * row-lock wait; on SQLite takes the database's write lock inside it,
 * waiting as the mode says, then gives the connection the application's
 * own busy timeout back for the statements that follow.
 */
static int start_joined(sqllock_txn *t, sqllock_lock_mode mode, int *taken)
{
    sqllock_db *db = t->db;
    int rc, rc2;

    if (!(db->drv->caps & SQLLOCK_CAP_DB_LOCK)) {
        rc = sqllock__txn_set_lock_timeout(t, t->lock_timeout_ms);
        if (rc != SQLLOCK_OK)
            return rc;
        t->state = TXN_OPEN;
        *taken = 1;
        return SQLLOCK_OK;
    }
    rc = sqllock__txn_set_lock_timeout(
        t, mode == SQLLOCK_LOCK_WAIT ? t->lock_timeout_ms : 0);
    if (rc != SQLLOCK_OK)
        return rc;
    rc = sqllock__run(db, SQLLOCK_SQL_TXN_WRITE_LOCK, NULL, 0,
                      "taking the database's write lock");
    if (rc == SQLLOCK_OK)
        sqllock__end(db, SQLLOCK_SQL_TXN_WRITE_LOCK);
    rc2 = sqllock__txn_set_lock_timeout(
        t, t->saved_timeout_ms >= 0 ? t->saved_timeout_ms
                                    : db->params.busy_timeout_ms);
    if (rc == SQLLOCK_EDBBUSY) {
        if (mode == SQLLOCK_LOCK_SKIP_LOCKED)
            return sqllock__ok(db);
        return sqllock__fail(db, SQLLOCK_ELOCKED, "another connection holds "
                             "the database's write lock, or wrote after this "
                             "transaction's snapshot (SQLite has no row "
                             "locks: a transaction locks the whole "
                             "database; in WAL mode begin with BEGIN "
                             "IMMEDIATE, or lock before reading)");
    }
    if (rc != SQLLOCK_OK)
        return rc;
    t->state = TXN_OPEN;
    *taken = 1;
    return rc2;
}

/*
 * Starts the transaction. On SQLite this takes the database's write lock,
 * waiting as the mode says; *taken is 0 when SKIP LOCKED found the
 * database busy (the transaction stays pending and may try again).
 */
int sqllock__txn_start(sqllock_txn *t, sqllock_lock_mode mode, int *taken)
{
    sqllock_db *db = t->db;
    int rc, rc2;

    *taken = 0;
    if (t->joined)
        return start_joined(t, mode, taken);
    if (!(db->drv->caps & SQLLOCK_CAP_DB_LOCK) &&
        sqllock__can_defer_begin(db)) {
        /* BEGIN goes with the first statement of the transaction, in the
         * same round trip (the driver's execute_txn()): the lock timeout, a
         * setting of the session, is set before it, when it changes
         * (behind a transaction pooler the driver sets it again with
         * BEGIN, for the transaction, as its begin() does). */
        rc = sqllock__txn_set_lock_timeout(t, t->lock_timeout_ms);
        if (rc != SQLLOCK_OK)
            return rc;
        db->begin_pending = 1;
        t->state = TXN_OPEN;
        *taken = 1;
        return SQLLOCK_OK;
    }
    if (!(db->drv->caps & SQLLOCK_CAP_DB_LOCK)) {
        rc = sqllock__begin(db, "beginning the transaction");
        if (rc != SQLLOCK_OK)
            return rc;
        t->state = TXN_OPEN;
        rc = sqllock__txn_set_lock_timeout(t, t->lock_timeout_ms);
        if (rc != SQLLOCK_OK)
            return rc;
        *taken = 1;
        return SQLLOCK_OK;
    }
    rc = sqllock__txn_set_lock_timeout(
        t, mode == SQLLOCK_LOCK_WAIT ? t->lock_timeout_ms : 0);
    if (rc != SQLLOCK_OK)
        return rc;
    rc = sqllock__begin(db, "taking the database's write lock");
    /* The wait was for BEGIN IMMEDIATE only; statements inside the
     * transaction go back to the handle's own busy timeout. */
    rc2 = sqllock__txn_set_lock_timeout(t, db->params.busy_timeout_ms);
    if (rc == SQLLOCK_EDBBUSY) {
        if (mode == SQLLOCK_LOCK_SKIP_LOCKED)
            return sqllock__ok(db);
        return sqllock__fail(db, SQLLOCK_ELOCKED, "another connection holds "
                             "the database's write lock (SQLite has no row "
                             "locks: a transaction locks the whole "
                             "database)");
    }
    if (rc != SQLLOCK_OK)
        return rc;
    t->state = TXN_OPEN;
    *taken = 1;
    if (rc2 != SQLLOCK_OK)
        return rc2;
    return SQLLOCK_OK;
}

void *sqllock_txn_native(sqllock_txn *t)
{
    int taken;

    if (t == NULL)
        return NULL;
    /* Not after a failure (R7): the application's statements would run
     * outside the transaction. */
    if (t->state == TXN_FAILED || lost(t)) {
        sqllock__txn_check_open(t, "the transaction's connection");
        return NULL;
    }
    /* The application is about to run its own statements: they belong in
     * the transaction, so it starts now if no lock call started it (the
     * application's own, joined, is open already). */
    if (t->state == TXN_PENDING && !t->joined &&
        sqllock__txn_start(t, SQLLOCK_LOCK_WAIT, &taken) != SQLLOCK_OK) {
        sqllock__txn_end_failed(t, sqllock_errcode(t->db));
        return NULL;
    }
    /* A BEGIN still waiting for a statement to go with goes now: the
     * application's statements are not ours to carry it. */
    if (t->db->begin_pending &&
        sqllock__begin_flush(t->db, "beginning the transaction") !=
            SQLLOCK_OK) {
        sqllock__txn_end_failed(t, sqllock_errcode(t->db));
        return NULL;
    }
    return sqllock_db_native(t->db);
}

int sqllock_txn_commit(sqllock_txn *t)
{
    int rc;

    if (t == NULL)
        return SQLLOCK_EINVAL;
    if ((rc = sqllock__txn_check_open(t, "commit")) != SQLLOCK_OK)
        return rc;
    if (t->joined)
        return sqllock__fail(t->db, SQLLOCK_EMISUSE, "commit: the "
                             "transaction is the application's (joined with "
                             "sqllock_txn_join()): commit it on its "
                             "connection, then free this sqllock_txn");
    rc = t->state == TXN_OPEN ? sqllock__commit(t->db, "committing")
                              : SQLLOCK_OK;
    if (rc != SQLLOCK_OK)
        sqllock__rollback(t->db);
    detach(t);
    t->ended_by = rc;
    return rc == SQLLOCK_OK ? sqllock__ok(t->db) : rc;
}

#define COMMIT_EXEC_ARGS_ON_STACK 16

int sqllock_txn_commit_exec(sqllock_txn *t, const char *sql,
                            const sqllock_cell *args, int nargs,
                            int64_t *affected)
{
    sqllock_value stack[COMMIT_EXEC_ARGS_ON_STACK], *vals = stack;
    sqllock_db *db;
    int rc, taken;

    if (affected != NULL)
        *affected = 0;
    if (t == NULL)
        return SQLLOCK_EINVAL;
    db = t->db;
    if (sql == NULL)
        return sqllock__fail(db, SQLLOCK_EINVAL, "sqllock_txn_commit_exec: "
                             "the statement is NULL");
    if (nargs < 0 || (nargs > 0 && args == NULL))
        return sqllock__fail(db, SQLLOCK_EINVAL, "sqllock_txn_commit_exec: "
                             "%d arguments at %s", nargs,
                             args == NULL ? "NULL" : "a pointer");
    if ((rc = sqllock__txn_check_open(t, "commit")) != SQLLOCK_OK)
        return rc;
    if (t->joined)
        return sqllock__fail(db, SQLLOCK_EMISUSE, "commit: the "
                             "transaction is the application's (joined with "
                             "sqllock_txn_join()): run the statement and "
                             "commit on its connection, then free this "
                             "sqllock_txn");
    rc = sqllock__cells(db, args, nargs, stack, COMMIT_EXEC_ARGS_ON_STACK,
                        &vals);
    if (rc != SQLLOCK_OK)
        return rc;
    /* No lock call yet: the transaction starts now, as for
     * sqllock_txn_native() (SQLite takes the write lock, waiting). */
    rc = SQLLOCK_OK;
    if (t->state == TXN_PENDING) {
        rc = sqllock__txn_start(t, SQLLOCK_LOCK_WAIT, &taken);
        if (rc == SQLLOCK_OK && !taken)
            rc = sqllock__fail(db, SQLLOCK_ELOCKED, "the transaction "
                               "could not start");
    }
    if (rc == SQLLOCK_OK)
        rc = sqllock__run_dyn_commit(db, sql, vals, nargs, affected,
                                     "the statement and the commit");
    if (vals != stack)
        free(vals);
    /* Over either way: committed, or rolled back (nothing of it kept;
     * nothing is sent on a lost connection). */
    if (rc != SQLLOCK_OK) {
        int code = db->errcode;
        char msg[SQLLOCK__ERRMSG_MAX];

        memcpy(msg, db->errmsg, sizeof msg);
        if (affected != NULL)
            *affected = 0;
        sqllock__rollback(db);
        db->errcode = code;
        memcpy(db->errmsg, msg, sizeof msg);
    }
    detach(t);
    t->ended_by = rc;
    return rc == SQLLOCK_OK ? sqllock__ok(db) : rc;
}

int sqllock_txn_rollback(sqllock_txn *t)
{
    if (t == NULL)
        return SQLLOCK_EINVAL;
    /* A failed transaction was rolled back when it failed; the
     * application's own (joined) is the application's to roll back. */
    if (t->state == TXN_OPEN && !t->joined)
        sqllock__rollback(t->db);
    if (t->state != TXN_OVER)
        detach(t);
    /* The handle's last error stays as it was: it is usually the reason
     * for rolling back. */
    return SQLLOCK_OK;
}

void sqllock_txn_free(sqllock_txn *t)
{
    if (t == NULL)
        return;
    if (t->state != TXN_OVER)
        sqllock_txn_rollback(t);
    free(t);
}

/* sqllock__run(), sqllock__fetch(), sqllock__run_dyn() and
 * sqllock__fetch_dyn() inside the handle's row-lock transaction, if one
 * is open (R7). */
int sqllock__txn_run(sqllock_db *db, sqllock_sql_id id,
                     const sqllock_value *args, int nargs, const char *what)
{
    int rc = sqllock__txn_check(db, what);

    if (rc != SQLLOCK_OK)
        return rc;
    rc = sqllock__run(db, id, args, nargs, what);
    return rc == SQLLOCK_OK ? rc : sqllock__txn_failed(db, rc);
}

int sqllock__txn_fetch(sqllock_db *db, sqllock_sql_id id, int *has_row,
                       const char *what)
{
    int rc = sqllock__fetch(db, id, has_row, what);

    return rc == SQLLOCK_OK ? rc : sqllock__txn_failed(db, rc);
}

int sqllock__txn_run_dyn(sqllock_db *db, const char *sql,
                         const sqllock_value *args, int nargs,
                         const char *what, sqllock_stmt **out)
{
    int rc = sqllock__txn_check(db, what);

    *out = NULL;
    if (rc != SQLLOCK_OK)
        return rc;
    rc = sqllock__run_dyn(db, sql, args, nargs, what, out);
    return rc == SQLLOCK_OK ? rc : sqllock__txn_failed(db, rc);
}

int sqllock__txn_fetch_dyn(sqllock_db *db, sqllock_stmt *st, int *has_row,
                           const char *what)
{
    int rc = sqllock__fetch_dyn(db, st, has_row, what);

    return rc == SQLLOCK_OK ? rc : sqllock__txn_failed(db, rc);
}
