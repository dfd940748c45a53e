/*
 * stmt.c -- the statement layer: the only code that reads a driver's SQL.
 *
 * Each statement of the dialect is prepared the first time it is needed
 * and kept until the connection closes (DESIGN D1b); SQL the core builds
 * at run time is kept in a small cache. A statement's failure is recorded
 * on the handle, and one that lost the connection drops it (db.c), so
 * that the next call connects again; the failed call reports the error
 * and is never retried behind the caller's back. BEGIN, COMMIT and
 * ROLLBACK go through here too, a deferred BEGIN in the round trip of
 * the statement after it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

sqllock_value sqllock__int(int64_t v)
{
    sqllock_value val;

    memset(&val, 0, sizeof val);
    val.type = SQLLOCK_VALUE_INT64;
    val.i = v;
    return val;
}

sqllock_value sqllock__text(const char *s)
{
    sqllock_value val;

    memset(&val, 0, sizeof val);
    if (s == NULL) {
        val.type = SQLLOCK_VALUE_NULL;
        return val;
    }
    val.type = SQLLOCK_VALUE_TEXT;
    val.s = s;
    val.len = strlen(s);
    return val;
}

sqllock_value sqllock__cell(const sqllock_cell *c)
{
    return c->text != NULL ? sqllock__text(c->text)
                           : sqllock__int(c->number);
}

int sqllock__cells(sqllock_db *db, const sqllock_cell *cells, int n,
                   sqllock_value *stack, int nstack, sqllock_value **out)
{
    sqllock_value *vals = stack;
    int i;

    *out = NULL;
    if (n > nstack) {
        vals = calloc((size_t)n, sizeof *vals);
        if (vals == NULL)
            return sqllock__fail(db, SQLLOCK_ENOMEM, "out of memory");
    }
    for (i = 0; i < n; i++)
        vals[i] = sqllock__cell(&cells[i]);
    *out = n > 0 ? vals : NULL;
    return SQLLOCK_OK;
}

/* The driver's statement `id`, or NULL when its table is shorter (a
 * driver built before the statement was added) or gives no text. */
const sqllock_sql *sqllock__sql_of(const sqllock_driver *drv, sqllock_sql_id id)
{
    const sqllock_dialect *d = drv->dialect;

    if ((size_t)id >= d->nstmts || (size_t)id >= SQLLOCK_SQL_COUNT_ ||
        d->stmts[id].text == NULL)
        return NULL;
    return &d->stmts[id];
}

/*
 * Before a row-lock transaction's lock timeout is set: a network driver
 * bounds each round trip by the statement timeout plus the longest lock
 * wait the connection was opened for, so a longer wait than that must not
 * be cut. The bound is fixed when the connection opens (MySQL's read
 * timeout cannot change afterwards), so the connection is opened again
 * with the larger bound, and the transaction begun again. That is safe
 * only while nothing has run in the transaction yet, which is where
 * txn.c sets its timeout (right after BEGIN); anywhere else the shorter
 * bound stays for this connection.
 */
static int grow_lock_wait(sqllock_db *db, int64_t ms, const char *what)
{
    int fresh = db->txn_fresh, rc;

    if (ms > SQLLOCK__MAX_TIMEOUT_MS)
        ms = SQLLOCK__MAX_TIMEOUT_MS;
    if (ms <= db->params.lock_wait_ms)
        return sqllock__connected(db);
    db->params.lock_wait_ms = ms;
    if (db->conn == NULL || (db->drv->caps & SQLLOCK_CAP_SHARED_HOST) ||
        (db->in_txn && !fresh && !sqllock__txn_pending(db) &&
         !db->begin_pending) ||
        db->borrowed)
        return sqllock__connected(db);
    sqllock__drop_connection(db);
    rc = sqllock__connect(db);
    if (rc == SQLLOCK_OK && fresh)
        rc = sqllock__begin(db, what);
    return rc;
}

_Atomic uint64_t sqllock__statements_sent;  /* metrics.c adds to it */

/* Executes `st`; with a deferred BEGIN, BEGIN goes in the same round
 * trip, and stays pending only when it did not run (then the connection
 * is outside any transaction, as before). */
static int execute(sqllock_db *db, sqllock_stmt *st,
                   const sqllock_value *args, int nargs, sqllock_dberr *err)
{
    int in_txn = 0, rc;

    if (!db->begin_pending)
        return db->drv->execute(st, args, nargs, err);
    rc = db->drv->execute_txn(st, args, nargs, SQLLOCK_EXEC_BEGIN, &in_txn,
                              err);
    if (rc == SQLLOCK_OK || in_txn)
        db->begin_pending = 0;
    return rc;
}

int sqllock__can_defer_begin(const sqllock_db *db)
{
    return db->drv->execute_txn != NULL &&
           !db->borrowed;
}

int sqllock__begin_flush(sqllock_db *db, const char *what)
{
    int rc;

    if (!db->begin_pending)
        return SQLLOCK_OK;
    rc = sqllock__begin(db, what);
    if (rc == SQLLOCK_OK)
        db->begin_pending = 0;
    return rc;
}

int sqllock__run(sqllock_db *db, sqllock_sql_id id, const sqllock_value *args,
                 int nargs, const char *what)
{
    const sqllock_sql *sql;
    sqllock_value bound[9];
    sqllock_dberr err;
    int n = 0, rc;

    if (db->drv == NULL)
        return sqllock__fail(db, SQLLOCK_EMISUSE, "%s: the handle has no "
                             "driver (its open failed)", what);
    sql = sqllock__sql_of(db->drv, id);
    if (sql == NULL)
        return sqllock__fail(db, SQLLOCK_EUNSUPPORTED, "%s: the %s driver "
                             "has no statement for this", what, db->drv->name);
    if (id == SQLLOCK_SQL_TXN_LOCK_TIMEOUT && nargs == 1)
        rc = grow_lock_wait(db, args[0].i, what);
    else
        rc = sqllock__connected(db);
    db->txn_fresh = 0;
    if (rc != SQLLOCK_OK)
        return rc;
    memset(&err, 0, sizeof err);
    if (db->stmts[id] == NULL) {
        rc = db->drv->prepare(db->conn, sql->text, &db->stmts[id], &err);
        if (rc != SQLLOCK_OK) {
            db->stmts[id] = NULL;
            err.status = rc;
            return sqllock__db_error(db, &err, what);
        }
    }
    if (sql->args == NULL) {
        if (nargs > 9)
            return sqllock__fail(db, SQLLOCK_EINVAL, "%s: too many arguments",
                                 what);
        if (nargs > 0)
            memcpy(bound, args, sizeof *args * (size_t)nargs);
        n = nargs;
    } else {
        const char *a;
        for (a = sql->args; *a && n < 9; a++) {
            int k = *a - '1';
            if (k < 0 || k >= nargs)
                return sqllock__fail(db, SQLLOCK_EDB, "%s: the %s dialect "
                                     "binds argument %c, which the core "
                                     "does not pass", what, db->drv->name, *a);
            bound[n++] = args[k];
        }
    }
    sqllock__m_statement(db, db->begin_pending ? 2 : 1);
    rc = execute(db, db->stmts[id], bound, n, &err);
    if (rc != SQLLOCK_OK) {
        db->drv->reset(db->stmts[id]);
        err.status = rc;
        return sqllock__db_error(db, &err, what);
    }
    return SQLLOCK_OK;
}

/* The cached prepared statement of `sql` (prepared now when it is not
 * in the cache). */
static int dyn_stmt(sqllock_db *db, const char *sql, const char *what,
                    sqllock_stmt **out)
{
    sqllock__dyn *slot = NULL;
    sqllock_dberr err;
    int i, rc;

    *out = NULL;
    if (db->drv == NULL)
        return sqllock__fail(db, SQLLOCK_EMISUSE, "%s: the handle has no "
                             "driver (its open failed)", what);
    rc = sqllock__connected(db);
    if (rc != SQLLOCK_OK)
        return rc;
    db->txn_fresh = 0;
    for (i = 0; i < SQLLOCK__DYN_CACHE; i++) {
        if (db->dyn[i].sql != NULL && strcmp(db->dyn[i].sql, sql) == 0) {
            slot = &db->dyn[i];
            break;
        }
    }
    memset(&err, 0, sizeof err);
    if (slot == NULL) {
        /* Take an empty slot, or the least recently used one. */
        slot = &db->dyn[0];
        for (i = 0; i < SQLLOCK__DYN_CACHE; i++) {
            if (db->dyn[i].sql == NULL) {
                slot = &db->dyn[i];
                break;
            }
            if (db->dyn[i].used < slot->used)
                slot = &db->dyn[i];
        }
        if (slot->stmt != NULL)
            db->drv->finalize(slot->stmt);
        free(slot->sql);
        slot->stmt = NULL;
        slot->sql = malloc(strlen(sql) + 1);
        if (slot->sql == NULL)
            return sqllock__fail(db, SQLLOCK_ENOMEM, "%s: out of memory", what);
        strcpy(slot->sql, sql);
        rc = db->drv->prepare(db->conn, sql, &slot->stmt, &err);
        if (rc != SQLLOCK_OK) {
            free(slot->sql);
            slot->sql = NULL;
            slot->stmt = NULL;
            err.status = rc;
            /* A missing table here is the application's, so no hint to
             * create the sqllock schema. */
            if (rc == SQLLOCK_ENOSCHEMA)
                return sqllock__fail_db(db, &err, what);
            return sqllock__db_error(db, &err, what);
        }
    }
    slot->used = ++db->dyn_clock;
    *out = slot->stmt;
    return SQLLOCK_OK;
}

int sqllock__run_dyn(sqllock_db *db, const char *sql, const sqllock_value *args,
                     int nargs, const char *what, sqllock_stmt **out)
{
    sqllock_stmt *st = NULL;
    sqllock_dberr err;
    int rc;

    *out = NULL;
    rc = dyn_stmt(db, sql, what, &st);
    if (rc != SQLLOCK_OK)
        return rc;
    memset(&err, 0, sizeof err);
    sqllock__m_statement(db, db->begin_pending ? 2 : 1);
    rc = execute(db, st, args, nargs, &err);
    if (rc != SQLLOCK_OK) {
        db->drv->reset(st);
        err.status = rc;
        return sqllock__db_error(db, &err, what);
    }
    *out = st;
    return SQLLOCK_OK;
}

int sqllock__run_dyn_commit(sqllock_db *db, const char *sql,
                            const sqllock_value *args, int nargs,
                            int64_t *affected, const char *what)
{
    sqllock_stmt *st = NULL;
    sqllock_dberr err;
    unsigned with = SQLLOCK_EXEC_COMMIT;
    int in_txn = 0, rc;

    if (affected != NULL)
        *affected = 0;
    if (!sqllock__can_defer_begin(db)) {
        /* The statement, then COMMIT: two round trips. */
        rc = sqllock__run_dyn(db, sql, args, nargs, what, &st);
        if (rc != SQLLOCK_OK)
            return rc;
        if (affected != NULL)
            *affected = db->drv->affected_rows(st);
        db->drv->reset(st);
        return sqllock__commit(db, "committing");
    }
    rc = dyn_stmt(db, sql, what, &st);
    if (rc != SQLLOCK_OK)
        return rc;
    if (db->begin_pending)
        with |= SQLLOCK_EXEC_BEGIN;
    memset(&err, 0, sizeof err);
    /* The statement and its COMMIT (and the BEGIN), one round trip. */
    sqllock__m_statement(db, (with & SQLLOCK_EXEC_BEGIN) ? 3 : 2);
    rc = db->drv->execute_txn(st, args, nargs, with, &in_txn, &err);
    if (rc == SQLLOCK_OK || in_txn)
        db->begin_pending = 0;
    if (rc != SQLLOCK_OK) {
        db->drv->reset(st);
        err.status = rc;
        return sqllock__db_error(db, &err, what);
    }
    if (affected != NULL)
        *affected = db->drv->affected_rows(st);
    db->drv->reset(st);
    return SQLLOCK_OK;
}

int sqllock__fetch_dyn(sqllock_db *db, sqllock_stmt *st, int *has_row,
                       const char *what)
{
    sqllock_dberr err;
    int rc;

    memset(&err, 0, sizeof err);
    rc = db->drv->fetch(st, has_row, &err);
    if (rc != SQLLOCK_OK) {
        *has_row = 0;
        db->drv->reset(st);
        err.status = rc;
        return sqllock__db_error(db, &err, what);
    }
    return SQLLOCK_OK;
}

int sqllock__fetch(sqllock_db *db, sqllock_sql_id id, int *has_row,
                   const char *what)
{
    sqllock_dberr err;
    int rc;

    memset(&err, 0, sizeof err);
    rc = db->drv->fetch(db->stmts[id], has_row, &err);
    if (rc != SQLLOCK_OK) {
        *has_row = 0;
        db->drv->reset(db->stmts[id]);
        err.status = rc;
        return sqllock__db_error(db, &err, what);
    }
    return SQLLOCK_OK;
}

void sqllock__end(sqllock_db *db, sqllock_sql_id id)
{
    if (db->stmts[id] != NULL)
        db->drv->reset(db->stmts[id]);
}

int sqllock__begin(sqllock_db *db, const char *what)
{
    sqllock_dberr err;
    int rc;

    if (db->drv->begin == NULL)
        return sqllock__fail(db, SQLLOCK_EUNSUPPORTED, "%s: the %s driver "
                             "has no transactions", what, db->drv->name);
    rc = sqllock__connected(db);
    if (rc != SQLLOCK_OK)
        return rc;
    memset(&err, 0, sizeof err);
    sqllock__m_statement(db, 1);
    rc = db->drv->begin(db->conn, &err);
    if (rc != SQLLOCK_OK) {
        err.status = rc;
        return sqllock__db_error(db, &err, what);
    }
    db->txn_fresh = 1;
    return SQLLOCK_OK;
}

int sqllock__commit(sqllock_db *db, const char *what)
{
    sqllock_dberr err;
    int rc;

    if (db->begin_pending) {
        /* Nothing was sent: nothing to commit. */
        db->begin_pending = 0;
        return SQLLOCK_OK;
    }
    if (db->conn == NULL)
        return sqllock__fail(db, SQLLOCK_ECONNECT, "%s: the connection was "
                             "lost before the commit", what);
    memset(&err, 0, sizeof err);
    sqllock__m_statement(db, 1);
    rc = db->drv->commit(db->conn, &err);
    if (rc != SQLLOCK_OK) {
        err.status = rc;
        return sqllock__db_error(db, &err, what);
    }
    return SQLLOCK_OK;
}

void sqllock__rollback(sqllock_db *db)
{
    sqllock_dberr err;

    if (db->begin_pending) {
        db->begin_pending = 0;   /* nothing was sent: nothing to undo */
        return;
    }
    if (db->conn == NULL || db->drv->rollback == NULL)
        return;
    memset(&err, 0, sizeof err);
    sqllock__m_statement(db, 1);
    if (db->drv->rollback(db->conn, &err) == SQLLOCK_ECONNECT)
        sqllock__drop_connection(db);
}

int sqllock__exec_sql(sqllock_db *db, const char *sql,
                      const sqllock_value *args, int nargs, int *has_row,
                      int64_t *first, int64_t *affected)
{
    sqllock_stmt *stmt = NULL;
    sqllock_dberr err;
    int rc, row = 0;

    if (db == NULL || sql == NULL)
        return SQLLOCK_EINVAL;
    if (db->drv == NULL)
        return sqllock__fail(db, SQLLOCK_EMISUSE, "the handle has no driver");
    rc = sqllock__connected(db);
    if (rc != SQLLOCK_OK)
        return rc;
    memset(&err, 0, sizeof err);
    rc = db->drv->prepare(db->conn, sql, &stmt, &err);
    if (rc == SQLLOCK_OK)
        rc = execute(db, stmt, args, nargs, &err);
    if (rc == SQLLOCK_OK)
        rc = db->drv->fetch(stmt, &row, &err);
    if (rc == SQLLOCK_OK) {
        if (has_row != NULL)
            *has_row = row;
        if (first != NULL)
            *first = row ? db->drv->column_int64(stmt, 0) : 0;
        if (affected != NULL)
            *affected = db->drv->affected_rows(stmt);
    }
    if (stmt != NULL) {
        db->drv->reset(stmt);
        db->drv->finalize(stmt);
    }
    if (rc != SQLLOCK_OK) {
        err.status = rc;
        return sqllock__db_error(db, &err, "statement failed");
    }
    return sqllock__ok(db);
}

/*
 * Reads the first column of the first row of statement `id` and then
 * drains the result, so that the statement has fully run (and, in
 * autocommit, committed) before the caller relies on its effect.
 */
int sqllock__first_int(sqllock_db *db, sqllock_sql_id id, int *has_row,
                       int64_t *value, const char *what)
{
    int rc, more = 0;

    rc = sqllock__fetch(db, id, has_row, what);
    if (rc == SQLLOCK_OK && *has_row) {
        *value = db->drv->column_int64(db->stmts[id], 0);
        do
            rc = sqllock__fetch(db, id, &more, what);
        while (rc == SQLLOCK_OK && more);
    }
    sqllock__end(db, id);
    return rc;
}
