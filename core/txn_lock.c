/*
 * txn_lock.c -- the row locks of a transaction (DESIGN R1-R5):
 * sqllock_txn_lock() on the library's own lock rows, and
 * sqllock_txn_lock_rows() on the application's rows.
 *
 * Several keys are taken in key order, whatever order the caller gives,
 * so that two transactions locking overlapping sets cannot deadlock (R3).
 * A lock row is created when missing, inside the transaction, without
 * waiting on an existing one; then SELECT ... FOR UPDATE with the mode's
 * suffix (wait with the transaction's timeout, NOWAIT, SKIP LOCKED).
 * SQLite has no row locks: the transaction's write lock covers every key.
 * The transaction itself (begin, commit, failure) is txn.c's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define TXN_MAX_ROWS 64

/* Creates the lock row `name` if it does not exist. A concurrent creator
 * may win the race (SQLLOCK_EEXISTS): the row exists, which is all that
 * is needed. */
static int ensure_row(sqllock_txn *t, const char *name)
{
    sqllock_value arg = sqllock__text(name);
    int rc = sqllock__run(t->db, SQLLOCK_SQL_ROW_ENSURE, &arg, 1,
                          "creating the lock row");

    if (rc == SQLLOCK_OK)
        sqllock__end(t->db, SQLLOCK_SQL_ROW_ENSURE);
    return rc == SQLLOCK_EEXISTS ? SQLLOCK_OK : rc;
}

/* Runs the locking SELECT `sql` with `key`; *got says whether it returned
 * the row (locked it). */
static int lock_one(sqllock_txn *t, const char *sql, sqllock_value key,
                    int *got)
{
    sqllock_stmt *st = NULL;
    int rc, has_row = 0;

    *got = 0;
    rc = sqllock__run_dyn(t->db, sql, &key, 1, "locking the row", &st);
    if (rc != SQLLOCK_OK)
        return rc;
    rc = sqllock__fetch_dyn(t->db, st, &has_row, "locking the row");
    if (rc != SQLLOCK_OK)
        return rc;
    *got = has_row;
    t->db->drv->reset(st);
    return SQLLOCK_OK;
}

/*
 * One lock row on the application's connection (G2), inside its
 * transaction or the library's own one there, which runs at the
 * session's isolation level (DESIGN D5: a borrowed session's level is
 * the application's), maybe REPEATABLE READ: there MySQL's ROW_ENSURE (INSERT ... SELECT ...
 * WHERE NOT EXISTS) reads the existing row with a shared lock, which
 * waits for a holder (breaking NOWAIT and SKIP LOCKED) and, taken by two
 * transactions that then both ask for the exclusive lock, deadlocks.
 * So the row is locked first, and created only when it is missing: WAIT
 * and NOWAIT return no row only then; SKIP LOCKED tells a missing row
 * from a locked one by a plain read, which takes no lock. A row created
 * here belongs to the application's transaction until it commits.
 */
static int lock_joined(sqllock_txn *t, const char *sql, const char *name,
                       sqllock_lock_mode mode, int *got)
{
    sqllock_value arg = sqllock__text(name);
    int rc = lock_one(t, sql, arg, got);

    if (rc != SQLLOCK_OK || *got)
        return rc;
    if (mode == SQLLOCK_LOCK_SKIP_LOCKED) {
        char plain[160];
        int exists = 0;

        snprintf(plain, sizeof plain, "SELECT name FROM sqllock_row WHERE "
                 "name = %s", t->db->drv->dialect->placeholder ==
                 SQLLOCK_PLACEHOLDER_DOLLAR ? "$1" : "?");
        rc = lock_one(t, plain, arg, &exists);
        if (rc != SQLLOCK_OK || exists)
            return rc;                       /* locked by another: skipped */
    }
    if ((rc = ensure_row(t, name)) != SQLLOCK_OK)
        return rc;
    return lock_one(t, sql, arg, got);
}

static int check_lock_args(sqllock_txn *t, int n, sqllock_lock_mode mode,
                           const char *what)
{
    int rc = sqllock__txn_check_open(t, what);

    if (rc != SQLLOCK_OK)
        return rc;
    if (n < 1 || n > TXN_MAX_ROWS)
        return sqllock__fail(t->db, SQLLOCK_EINVAL, "%s: lock 1 to %d rows "
                             "at a time (got %d)", what, TXN_MAX_ROWS, n);
    if (mode != SQLLOCK_LOCK_WAIT && mode != SQLLOCK_LOCK_NOWAIT &&
        mode != SQLLOCK_LOCK_SKIP_LOCKED)
        return sqllock__fail(t->db, SQLLOCK_EINVAL, "%s: unknown lock mode "
                             "%d", what, (int)mode);
    return SQLLOCK_OK;
}

/* Orders two keys: numbers before texts, numbers by value, texts by
 * bytes. */
static int cmp_keys(const sqllock_cell *x, const sqllock_cell *y)
{
    if ((x->text == NULL) != (y->text == NULL))
        return x->text == NULL ? -1 : 1;
    if (x->text != NULL)
        return strcmp(x->text, y->text);
    return x->number < y->number ? -1 : x->number > y->number;
}

static int txn_lock_body(sqllock_txn *t, const char *const *names, int n,
                         sqllock_lock_mode mode, int *got)
{
    const char *what = "locking rows";
    int idx[TXN_MAX_ROWS], i, rc, taken;
    char skipped[TXN_MAX_ROWS];
    char sql[160];
    sqllock_db *db;

    if (t == NULL)
        return SQLLOCK_EINVAL;
    db = t->db;
    if ((rc = check_lock_args(t, n, mode, what)) != SQLLOCK_OK)
        return rc;
    if (names == NULL)
        return sqllock__fail(db, SQLLOCK_EINVAL, "%s: the names are NULL",
                             what);
    for (i = 0; i < n; i++) {
        if ((rc = sqllock__check_name(db, names[i], "lock name")) != SQLLOCK_OK)
            return rc;
        idx[i] = i;
        if (got != NULL)
            got[i] = 0;
    }
    /* At most 64 entries: an insertion sort of their indexes. */
    for (i = 1; i < n; i++) {
        int v = idx[i], j;
        for (j = i; j > 0 && strcmp(names[idx[j - 1]], names[v]) > 0; j--)
            idx[j] = idx[j - 1];
        idx[j] = v;
    }
    /* Before the transaction starts, the missing lock rows are created in
     * statements of their own that commit at once: created inside the
     * transaction, a new row would be locked by it, and a concurrent
     * locker's NOWAIT would wait for the insert instead of failing. (A row
     * created by a later lock call of an open transaction, or inside an
     * application's transaction that a lock call joined, does stay locked
     * by it until it ends: creating the same name then waits for that
     * transaction. So a missing row is looked for first, by a read that
     * never waits, and only created when missing, with that wait bounded
     * as the mode says -- the lock timeout for WAIT, next to nothing
     * otherwise -- and reported as the lock it is: ELOCKED, or skipped
     * with SKIP LOCKED.) */
    memset(skipped, 0, sizeof skipped);
    if (t->state == TXN_PENDING && !t->joined &&
        !(db->drv->caps & SQLLOCK_CAP_DB_LOCK)) {
        snprintf(sql, sizeof sql, "SELECT name FROM sqllock_row WHERE name "
                 "= %s", db->drv->dialect->placeholder ==
                 SQLLOCK_PLACEHOLDER_DOLLAR ? "$1" : "?");
        for (i = 0; i < n; i++) {
            int exists = 0;

            if (i > 0 && strcmp(names[idx[i]], names[idx[i - 1]]) == 0)
                continue;
            rc = lock_one(t, sql, sqllock__text(names[idx[i]]), &exists);
            if (rc != SQLLOCK_OK)
                return rc;
            if (exists)
                continue;
            rc = sqllock__txn_set_lock_timeout(t, mode == SQLLOCK_LOCK_WAIT
                                            ? t->lock_timeout_ms : 1);
            if (rc == SQLLOCK_OK)
                rc = ensure_row(t, names[idx[i]]);
            if (rc == SQLLOCK_ELOCKED && mode == SQLLOCK_LOCK_SKIP_LOCKED) {
                skipped[idx[i]] = 1;
                continue;
            }
            if (rc == SQLLOCK_ELOCKED) {
                char why[SQLLOCK__ERRMSG_MAX];

                memcpy(why, db->errmsg, sizeof why);
                return sqllock__fail(db, rc, "lock '%s' is being created by "
                                     "a transaction that has not ended, "
                                     "which holds it (MySQL waits at least "
                                     "1 s to say so): %s", names[idx[i]],
                                     why);
            }
            if (rc != SQLLOCK_OK)
                return rc;
        }
    }
    if (t->state == TXN_PENDING) {
        rc = sqllock__txn_start(t, mode, &taken);
        if (rc != SQLLOCK_OK)
            return sqllock__txn_ends(rc) ? sqllock__txn_end_failed(t, rc) : rc;
        if (!taken)
            return sqllock__ok(db);            /* SKIP LOCKED: none */
    }
    snprintf(sql, sizeof sql, "SELECT name FROM sqllock_row WHERE name = %s%s",
             db->drv->dialect->placeholder == SQLLOCK_PLACEHOLDER_DOLLAR ?
             "$1" : "?", db->drv->dialect->for_update[mode] ?
             db->drv->dialect->for_update[mode] : "");
    for (i = 0; i < n; i++) {
        const char *name = names[idx[i]];
        sqllock_value arg = sqllock__text(name);
        int g = 0;

        if (i > 0 && strcmp(name, names[idx[i - 1]]) == 0) {
            if (got != NULL)
                got[idx[i]] = got[idx[i - 1]];
            continue;                          /* a duplicate */
        }
        if (skipped[idx[i]])
            continue;                          /* SKIP LOCKED: being made */
        if ((t->joined || db->borrowed) &&
            !(db->drv->caps & SQLLOCK_CAP_DB_LOCK))
            rc = lock_joined(t, sql, name, mode, &g);
        else if ((rc = ensure_row(t, name)) == SQLLOCK_OK)
            rc = lock_one(t, sql, arg, &g);
        if (rc != SQLLOCK_OK)
            return sqllock__txn_ends(rc) ? sqllock__txn_end_failed(t, rc) : rc;
        if (got != NULL)
            got[idx[i]] = g;
    }
    return sqllock__ok(db);
}

int sqllock_txn_lock(sqllock_txn *t, const char *const *names, int n,
                     sqllock_lock_mode mode, int *got)
{
    sqllock_db *db = t != NULL ? t->db : NULL;
    int rc, op = sqllock__op_set(db, SQLLOCK__OP_ROW_LOCK);

    rc = txn_lock_body(t, names, n, mode, got);
    sqllock__op_set(db, op);
    if (db != NULL)
        sqllock__m_rowlock(db, rc);
    return rc;
}

static int txn_lock_rows_body(sqllock_txn *t, const sqllock_table *tbl,
                              const sqllock_cell *keys, int n,
                              sqllock_lock_mode mode, int *got)
{
    const char *what = "locking rows";
    int idx[TXN_MAX_ROWS], i, rc, taken;
    char sql[512];
    sqllock_db *db;

    if (t == NULL)
        return SQLLOCK_EINVAL;
    db = t->db;
    if ((rc = check_lock_args(t, n, mode, what)) != SQLLOCK_OK)
        return rc;
    if (tbl == NULL || keys == NULL)
        return sqllock__fail(db, SQLLOCK_EINVAL, "%s: the %s is NULL", what,
                             tbl == NULL ? "table" : "key array");
    if ((rc = sqllock__check_ident(db, tbl->table, 1, "table name")) !=
            SQLLOCK_OK ||
        (rc = sqllock__check_ident(db, tbl->key_column, 0, "key column")) !=
            SQLLOCK_OK)
        return rc;
    for (i = 0; i < n; i++) {
        idx[i] = i;
        if (got != NULL)
            got[i] = 0;
    }
    for (i = 1; i < n; i++) {
        int v = idx[i], j;
        for (j = i; j > 0 && cmp_keys(&keys[idx[j - 1]], &keys[v]) > 0; j--)
            idx[j] = idx[j - 1];
        idx[j] = v;
    }
    rc = sqllock__sql_select_key(db, tbl, db->drv->dialect->for_update[mode],
                                 sql, sizeof sql);
    if (rc != SQLLOCK_OK)
        return rc;
    if (t->state == TXN_PENDING) {
        rc = sqllock__txn_start(t, mode, &taken);
        if (rc != SQLLOCK_OK)
            return sqllock__txn_ends(rc) ? sqllock__txn_end_failed(t, rc) : rc;
        if (!taken)
            return sqllock__ok(db);
    }
    for (i = 0; i < n; i++) {
        const sqllock_cell *k = &keys[idx[i]];
        sqllock_value arg = k->text != NULL ? sqllock__text(k->text)
                                            : sqllock__int(k->number);
        int g = 0;

        if (i > 0 && cmp_keys(&keys[idx[i - 1]], k) == 0) {
            if (got != NULL)
                got[idx[i]] = got[idx[i - 1]];
            continue;                          /* a duplicate */
        }
        rc = lock_one(t, sql, arg, &g);
        if (rc == SQLLOCK_ENOSCHEMA)
            rc = sqllock__fail(db, SQLLOCK_EINVAL, "table '%s' does not exist",
                               tbl->table);
        if (rc != SQLLOCK_OK)
            return sqllock__txn_ends(rc) ? sqllock__txn_end_failed(t, rc) : rc;
        if (got != NULL)
            got[idx[i]] = g;
        if (!g && mode != SQLLOCK_LOCK_SKIP_LOCKED)
            return sqllock__fail(db, SQLLOCK_NOTFOUND, "%s: no row of '%s' "
                                 "has key #%d", what, tbl->table, idx[i] + 1);
    }
    return sqllock__ok(db);
}

int sqllock_txn_lock_rows(sqllock_txn *t, const sqllock_table *tbl,
                          const sqllock_cell *keys, int n,
                          sqllock_lock_mode mode, int *got)
{
    sqllock_db *db = t != NULL ? t->db : NULL;
    int rc, op = sqllock__op_set(db, SQLLOCK__OP_ROW_LOCK);

    rc = txn_lock_rows_body(t, tbl, keys, n, mode, got);
    sqllock__op_set(db, op);
    if (db != NULL)
        sqllock__m_rowlock(db, rc);
    return rc;
}
