/*
 * table.c -- optimistic, fenced and guarded writes on the application's
 * own tables (DESIGN O1-O3, L5, G1).
 *
 * The core builds each statement from identifiers check.c has validated
 * and sqlbuild.c quotes, and binds every value. A write names the version
 * it read (compare-and-set), the fencing token it holds (the row keeps
 * the largest token that wrote it), or the lease it holds (the guard,
 * guard.c's text in its WHERE); it changes one row or none, and a write
 * that changed none reads the row to say why.
 *
 * Inside a row-lock transaction on the same handle the statements run in
 * it (R4), through txn.c's sqllock__txn_run_dyn() and the like (R7).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define TABLE_GET_MAX 16
#define CELLS_MAX 16

/* `version_optional`: a fenced or guarded update may have no version
 * column. */
static int check_table(sqllock_db *db, const sqllock_table *t,
                       const sqllock_cell *key, int version_optional)
{
    int rc;

    if ((rc = sqllock__check_db(db)) != SQLLOCK_OK)
        return rc;
    if (t == NULL)
        return sqllock__fail(db, SQLLOCK_EINVAL, "the table description is "
                             "NULL");
    if (key == NULL)
        return sqllock__fail(db, SQLLOCK_EINVAL, "the key is NULL");
    if ((rc = sqllock__check_ident(db, t->table, 1, "table name")) != SQLLOCK_OK ||
        (rc = sqllock__check_ident(db, t->key_column, 0, "key column")) != SQLLOCK_OK ||
        (!(version_optional && t->version_column == NULL) &&
         (rc = sqllock__check_ident(db, t->version_column, 0,
                                    "version column")) != SQLLOCK_OK))
        return rc;
    return SQLLOCK_OK;
}

static int check_cells(sqllock_db *db, const sqllock_cell *cells, int n,
                       int assignments)
{
    int i, rc;

    if (n < 0 || n > CELLS_MAX || (n > 0 && cells == NULL))
        return sqllock__fail(db, SQLLOCK_EINVAL, "%s: give 0 to %d of them "
                             "(got %d%s)", assignments ? "assignments" :
                             "conditions", CELLS_MAX, n,
                             n > 0 && cells == NULL ? ", NULL array" : "");
    for (i = 0; i < n; i++) {
        int is_assign = cells[i].op == SQLLOCK_OP_SET ||
                        cells[i].op == SQLLOCK_OP_ADD ||
                        cells[i].op == SQLLOCK_OP_SUB;
        int is_cond = cells[i].op >= SQLLOCK_OP_EQ &&
                      cells[i].op <= SQLLOCK_OP_GE;
        rc = sqllock__check_ident(db, cells[i].column, 0, "column name");
        if (rc != SQLLOCK_OK)
            return rc;
        if ((cells[i].op == SQLLOCK_OP_ADD || cells[i].op == SQLLOCK_OP_SUB) &&
            cells[i].text != NULL)
            return sqllock__fail(db, SQLLOCK_EINVAL, "assignment #%d on "
                                 "column '%s' adds or subtracts a text "
                                 "value: arithmetic takes a number", i + 1,
                                 cells[i].column);
        if (assignments ? !is_assign : !is_cond)
            return sqllock__fail(db, SQLLOCK_EINVAL, "%s #%d on column '%s' "
                                 "has operator %d, which is not a%s", assignments
                                 ? "assignment" : "condition", i + 1,
                                 cells[i].column, (int)cells[i].op, assignments
                                 ? "n assignment (SET, ADD, SUB)"
                                 : " condition (EQ, NE, LT, LE, GT, GE)");
    }
    return SQLLOCK_OK;
}

/* Maps an error on the application's table: a missing table is the
 * caller's argument, not the sqllock schema. */
static int table_error(sqllock_db *db, int rc, const sqllock_table *t)
{
    char why[SQLLOCK__ERRMSG_MAX];

    if (rc == SQLLOCK_ENOSCHEMA || rc == SQLLOCK_EDB) {
        memcpy(why, db->errmsg, sizeof why);
        return sqllock__fail(db, rc == SQLLOCK_ENOSCHEMA ? SQLLOCK_EINVAL : rc,
                             "table '%s' (key column '%s', version column "
                             "'%s'): %s", t->table, t->key_column,
                             t->version_column != NULL ? t->version_column :
                             "(none)", why);
    }
    return rc;
}

/* What a write checks besides its conditions. */
typedef struct write_check {
    int64_t expected;          /* the version; < 0: no version check */
    const char *fence;         /* the fence column, or NULL: no fence */
    int64_t token;             /* with a fence or a guard: the token */
    const char *guard_name;    /* the lease name of the guard (G1), or
                                  NULL: no guard */
} write_check;

/* Appends " AND <column> <op> ?" for each condition. */
static void sb_conds(sqllock__sqlbuf *b, const sqllock_cell *conds,
                     int nconds, sqllock_value *args, int *n)
{
    static const char *const cmp[] = { "=", "<>", "<", "<=", ">", ">=" };
    int i;

    for (i = 0; i < nconds; i++) {
        sqllock__sb_add(b, " AND ");
        sqllock__sb_ident(b, conds[i].column);
        sqllock__sb_add(b, " ");
        sqllock__sb_add(b, cmp[conds[i].op - SQLLOCK_OP_EQ]);
        sqllock__sb_add(b, " ");
        sqllock__sb_placeholder(b);
        args[(*n)++] = sqllock__cell(&conds[i]);
    }
}

/* Appends the SET list: <sets>, [fence = ?,] [v = v + 1]. */
static void sb_sets(sqllock__sqlbuf *b, const sqllock_table *t,
                    const write_check *w, const sqllock_cell *sets, int nsets,
                    sqllock_value *args, int *n)
{
    const char *sep = "";
    int i;

    for (i = 0; i < nsets; i++, sep = ", ") {
        sqllock__sb_ident(b, sets[i].column);
        sqllock__sb_add(b, " = ");
        if (sets[i].op != SQLLOCK_OP_SET) {
            sqllock__sb_ident(b, sets[i].column);
            sqllock__sb_add(b, sets[i].op == SQLLOCK_OP_ADD ? " + " : " - ");
        }
        sqllock__sb_placeholder(b);
        args[(*n)++] = sqllock__cell(&sets[i]);
    }
    if (w->fence != NULL) {
        sqllock__sb_add(b, sep);
        sqllock__sb_ident(b, w->fence);
        sqllock__sb_add(b, " = ");
        sqllock__sb_placeholder(b);
        args[(*n)++] = sqllock__int(w->token);
        sep = ", ";
    }
    if (t->version_column != NULL) {
        sqllock__sb_add(b, sep);
        sqllock__sb_ident(b, t->version_column);
        sqllock__sb_add(b, " = ");
        sqllock__sb_ident(b, t->version_column);
        sqllock__sb_add(b, " + 1");
    }
}

/* Appends " AND <guard>" (contract G1): the dialect's LEASE_GUARD with
 * the dialect's own placeholders, numbered on from the statement's. */
static int sb_guard(sqllock_db *db, sqllock__sqlbuf *b, const write_check *w,
                    sqllock_value *args, int *n)
{
    char guard[SQLLOCK_GUARD_SQL_MAX];
    int rc, style = b->d->placeholder == SQLLOCK_PLACEHOLDER_DOLLAR
                        ? SQLLOCK_PARAM_DOLLAR : SQLLOCK_PARAM_QMARK;

    rc = sqllock__guard_text(db, style, b->nph + 1, guard, sizeof guard,
                             NULL);
    if (rc != SQLLOCK_OK)
        return rc;
    sqllock__sb_add(b, " AND ");
    sqllock__sb_add(b, guard);
    b->nph += 2;
    args[(*n)++] = sqllock__text(w->guard_name);
    args[(*n)++] = sqllock__int(w->token);
    return SQLLOCK_OK;
}

/*
 * Builds and runs UPDATE t SET <sets>, [fence = ?,] [v = v + 1] WHERE
 * k = ? [AND v = ?] [AND v < max] [AND COALESCE(fence, 0) <= ?] AND
 * <conds> [AND <guard>]. Returns SQLLOCK_OK, SQLLOCK_CONFLICT when no row
 * matched, or an error.
 */
static int table_write(sqllock_db *db, const sqllock_table *t,
                       const sqllock_cell *key, const write_check *w,
                       const sqllock_cell *sets, int nsets,
                       const sqllock_cell *conds, int nconds)
{
    sqllock_value args[2 * CELLS_MAX + 6];
    sqllock_stmt *st = NULL;
    sqllock__sqlbuf b;
    int64_t affected;
    int n = 0, rc;

    if ((rc = check_table(db, t, key, w->fence != NULL ||
                                      w->guard_name != NULL)) != SQLLOCK_OK ||
        (rc = check_cells(db, sets, nsets, 1)) != SQLLOCK_OK ||
        (rc = check_cells(db, conds, nconds, 0)) != SQLLOCK_OK)
        return rc;
    if (nsets == 0 && w->fence == NULL)
        return sqllock__fail(db, SQLLOCK_EINVAL, "at least one assignment is "
                             "needed");
    memset(&b, 0, sizeof b);
    b.d = db->drv->dialect;
    sqllock__sb_add(&b, "UPDATE ");
    sqllock__sb_ident(&b, t->table);
    sqllock__sb_add(&b, " SET ");
    sb_sets(&b, t, w, sets, nsets, args, &n);
    sqllock__sb_add(&b, " WHERE ");
    sqllock__sb_ident(&b, t->key_column);
    sqllock__sb_add(&b, " = ");
    sqllock__sb_placeholder(&b);
    args[n++] = sqllock__cell(key);
    if (w->expected >= 0) {
        sqllock__sb_add(&b, " AND ");
        sqllock__sb_ident(&b, t->version_column);
        sqllock__sb_add(&b, " = ");
        sqllock__sb_placeholder(&b);
        args[n++] = sqllock__int(w->expected);
    }
    /* A version at the largest integer cannot be bumped: no row matches
     * (SQLite would otherwise turn it into a float). */
    if (t->version_column != NULL) {
        sqllock__sb_add(&b, " AND ");
        sqllock__sb_ident(&b, t->version_column);
        sqllock__sb_add(&b, " < 9223372036854775807");
    }
    /* The fence: no writer with a larger token has written the row. */
    if (w->fence != NULL) {
        sqllock__sb_add(&b, " AND COALESCE(");
        sqllock__sb_ident(&b, w->fence);
        sqllock__sb_add(&b, ", 0) <= ");
        sqllock__sb_placeholder(&b);
        args[n++] = sqllock__int(w->token);
    }
    sb_conds(&b, conds, nconds, args, &n);
    if (w->guard_name != NULL &&
        (rc = sb_guard(db, &b, w, args, &n)) != SQLLOCK_OK)
        return rc;
    if (b.overflow)
        return sqllock__fail(db, SQLLOCK_EINVAL, "the statement would be "
                             "longer than %d bytes", SQLLOCK__SQL_MAX);
    rc = sqllock__txn_run_dyn(db, b.text, args, n, "updating the row", &st);
    if (rc != SQLLOCK_OK)
        return table_error(db, rc, t);
    affected = db->drv->affected_rows(st);
    db->drv->reset(st);
    if (affected == 0)
        return sqllock__fail(db, SQLLOCK_CONFLICT, "no row of '%s' matched: %s",
                             t->table, w->expected >= 0 ? "the version moved, "
                             "a condition failed, or the row is gone" :
                             "a condition failed, or the row is gone");
    return sqllock__ok(db);
}

static int table_cas_body(sqllock_db *db, const sqllock_table *t,
                          const sqllock_cell *key, int64_t expected,
                          const sqllock_cell *sets, int nsets,
                          const sqllock_cell *conds, int nconds,
                          int64_t *new_version)
{
    write_check w = { 0, NULL, 0, NULL };
    int rc;

    if (new_version != NULL)
        *new_version = 0;
    if ((rc = sqllock__check_db(db)) != SQLLOCK_OK)
        return rc;
    if ((rc = sqllock__check_version(db, expected)) != SQLLOCK_OK)
        return rc;
    w.expected = expected;
    rc = table_write(db, t, key, &w, sets, nsets, conds, nconds);
    if (rc == SQLLOCK_OK && new_version != NULL)
        *new_version = expected + 1;
    return rc;
}

int sqllock_table_cas(sqllock_db *db, const sqllock_table *t,
                      const sqllock_cell *key, int64_t expected,
                      const sqllock_cell *sets, int nsets,
                      const sqllock_cell *conds, int nconds,
                      int64_t *new_version)
{
    int rc, op = sqllock__op_set(db, SQLLOCK__OP_RECORD);

    rc = table_cas_body(db, t, key, expected, sets, nsets, conds, nconds,
                        new_version);
    sqllock__op_set(db, op);
    if (db != NULL)
        sqllock__m_cas(db, rc);
    return rc;
}

int sqllock_table_update(sqllock_db *db, const sqllock_table *t,
                         const sqllock_cell *key, const sqllock_cell *sets,
                         int nsets, const sqllock_cell *conds, int nconds)
{
    write_check w = { -1, NULL, 0, NULL };

    return table_write(db, t, key, &w, sets, nsets, conds, nconds);
}

/* After a fenced update matched nothing: why? The row's fence decides
 * between LOST (a larger token wrote it) and CONFLICT (a condition). */
static int fence_verdict(sqllock_db *db, const sqllock_table *t,
                         const sqllock_cell *key, const char *fence,
                         int64_t token)
{
    sqllock_table probe = { t->table, t->key_column, fence };
    int64_t seen = 0;
    int rc = sqllock_table_get(db, &probe, key, NULL, 0, NULL, &seen);

    if (rc != SQLLOCK_OK)
        return rc;
    if (seen > token)
        return sqllock__fail(db, SQLLOCK_LOST, "fenced update of '%s' "
                             "refused: token %lld is stale, a holder with "
                             "token %lld has written the row", t->table,
                             (long long)token, (long long)seen);
    return sqllock__fail(db, SQLLOCK_CONFLICT, "fenced update of '%s': the "
                         "token %lld is current but a condition failed%s",
                         t->table, (long long)token,
                         t->version_column != NULL ? " (or the version is "
                         "at its largest value)" : "");
}

int sqllock_table_fenced_update(sqllock_db *db, const sqllock_table *t,
                                const sqllock_cell *key,
                                const char *fence_column, int64_t token,
                                const sqllock_cell *sets, int nsets,
                                const sqllock_cell *conds, int nconds)
{
    write_check w = { -1, NULL, 0, NULL };
    int rc;

    if ((rc = sqllock__check_db(db)) != SQLLOCK_OK)
        return rc;
    if ((rc = sqllock__check_ident(db, fence_column, 0, "fence column")) !=
        SQLLOCK_OK)
        return rc;
    if (token <= 0)
        return sqllock__fail(db, SQLLOCK_EINVAL, "fencing token %lld: a "
                             "token is positive (a fast-mode lease has "
                             "none, and cannot fence writes)",
                             (long long)token);
    w.fence = fence_column;
    w.token = token;
    rc = table_write(db, t, key, &w, sets, nsets, conds, nconds);
    if (rc == SQLLOCK_CONFLICT)
        rc = fence_verdict(db, t, key, fence_column, token);
    return rc;
}

int sqllock_table_get(sqllock_db *db, const sqllock_table *t,
                      const sqllock_cell *key, const char *const *columns,
                      int ncolumns, int64_t *values, int64_t *version)
{
    sqllock_value arg;
    sqllock_stmt *st = NULL;
    sqllock__sqlbuf b;
    int i, rc, has_row = 0;

    if (version != NULL)
        *version = 0;
    if ((rc = check_table(db, t, key, 0)) != SQLLOCK_OK)
        return rc;
    if (ncolumns < 0 || ncolumns > TABLE_GET_MAX ||
        (ncolumns > 0 && (columns == NULL || values == NULL)))
        return sqllock__fail(db, SQLLOCK_EINVAL, "give 0 to %d columns and "
                             "an array for their values", TABLE_GET_MAX);
    for (i = 0; i < ncolumns; i++) {
        values[i] = 0;
        if ((rc = sqllock__check_ident(db, columns[i], 0, "column name")) != SQLLOCK_OK)
            return rc;
    }
    memset(&b, 0, sizeof b);
    b.d = db->drv->dialect;
    sqllock__sb_add(&b, "SELECT ");
    sqllock__sb_ident(&b, t->version_column);
    for (i = 0; i < ncolumns; i++) {
        sqllock__sb_add(&b, ", ");
        sqllock__sb_ident(&b, columns[i]);
    }
    sqllock__sb_add(&b, " FROM ");
    sqllock__sb_ident(&b, t->table);
    sqllock__sb_add(&b, " WHERE ");
    sqllock__sb_ident(&b, t->key_column);
    sqllock__sb_add(&b, " = ");
    sqllock__sb_placeholder(&b);
    if (b.overflow)
        return sqllock__fail(db, SQLLOCK_EINVAL, "the statement would be "
                             "longer than %d bytes", SQLLOCK__SQL_MAX);
    arg = sqllock__cell(key);
    rc = sqllock__txn_run_dyn(db, b.text, &arg, 1, "reading the row", &st);
    if (rc != SQLLOCK_OK)
        return table_error(db, rc, t);
    rc = sqllock__txn_fetch_dyn(db, st, &has_row, "reading the row");
    if (rc != SQLLOCK_OK)
        return table_error(db, rc, t);
    if (!has_row) {
        db->drv->reset(st);
        return sqllock__fail(db, SQLLOCK_NOTFOUND, "no row of '%s' has that "
                             "key", t->table);
    }
    if (version != NULL)
        *version = db->drv->column_int64(st, 0);
    for (i = 0; i < ncolumns; i++)
        values[i] = db->drv->column_int64(st, i + 1);
    db->drv->reset(st);
    return sqllock__ok(db);
}

/* After a guarded update matched nothing: LOST when the guard no longer
 * holds, else what the row says (fence_verdict(), or the key's
 * row alone without a fence). The update has decided; this only reads. */
static int guard_verdict(sqllock_db *db, const sqllock_table *t,
                         const sqllock_cell *key, const char *fence,
                         const char *name, int64_t token)
{
    char sql[SQLLOCK_GUARD_SQL_MAX + 64], guard[SQLLOCK_GUARD_SQL_MAX];
    sqllock_value args[2];
    sqllock_stmt *st = NULL;
    int64_t held = 0;
    int style, has_row = 0, rc;

    style = db->drv->dialect->placeholder == SQLLOCK_PLACEHOLDER_DOLLAR
                ? SQLLOCK_PARAM_DOLLAR : SQLLOCK_PARAM_QMARK;
    rc = sqllock__guard_text(db, style, 1, guard, sizeof guard, NULL);
    if (rc != SQLLOCK_OK)
        return rc;
    snprintf(sql, sizeof sql, "SELECT CASE WHEN %s THEN 1 ELSE 0 END", guard);
    args[0] = sqllock__text(name);
    args[1] = sqllock__int(token);
    rc = sqllock__txn_run_dyn(db, sql, args, 2, "reading the lease", &st);
    if (rc == SQLLOCK_OK)
        rc = sqllock__txn_fetch_dyn(db, st, &has_row, "reading the lease");
    if (rc != SQLLOCK_OK)
        return rc;
    if (has_row)
        held = db->drv->column_int64(st, 0);
    db->drv->reset(st);
    if (held != 1)
        return sqllock__fail(db, SQLLOCK_LOST, "guarded update of '%s' "
                             "refused: lease '%s' with token %lld is no "
                             "longer held (taken over, expired by the "
                             "server's clock, released or reaped)", t->table,
                             name, (long long)token);
    if (fence != NULL)
        return fence_verdict(db, t, key, fence, token);
    {
        sqllock_table probe = { t->table, t->key_column, t->key_column };
        rc = sqllock_table_get(db, &probe, key, NULL, 0, NULL, NULL);
    }
    if (rc != SQLLOCK_OK)
        return rc;
    return sqllock__fail(db, SQLLOCK_CONFLICT, "guarded update of '%s': the "
                         "lease is held but a condition failed%s", t->table,
                         t->version_column != NULL ? " (or the version is at "
                         "its largest value)" : "");
}

int sqllock_table_guarded_update(sqllock_db *db, const sqllock_lease *lease,
                                 const sqllock_table *t,
                                 const sqllock_cell *key,
                                 const char *fence_column,
                                 const sqllock_cell *sets, int nsets,
                                 const sqllock_cell *conds, int nconds)
{
    write_check w = { -1, NULL, 0, NULL };
    int rc;

    if ((rc = sqllock__check_db(db)) != SQLLOCK_OK)
        return rc;
    if (lease == NULL)
        return sqllock__fail(db, SQLLOCK_EINVAL, "the lease is NULL");
    if (lease->count == 0)
        return sqllock__fail(db, SQLLOCK_ENOTHELD, "guarded update: lease "
                             "'%s' is not held by its handle", lease->name);
    if (lease->flags & SQLLOCK_LEASE_FAST)
        return sqllock__fail(db, SQLLOCK_EINVAL, "guarded update: lease '%s' "
                             "is in fast mode, which has no fencing token "
                             "and cannot guard", lease->name);
    if (fence_column != NULL &&
        (rc = sqllock__check_ident(db, fence_column, 0, "fence column")) !=
            SQLLOCK_OK)
        return rc;
    w.fence = fence_column;
    w.token = lease->token;
    w.guard_name = lease->name;
    rc = table_write(db, t, key, &w, sets, nsets, conds, nconds);
    if (rc == SQLLOCK_CONFLICT)
        rc = guard_verdict(db, t, key, fence_column, lease->name,
                           lease->token);
    return rc;
}

/* sqllock_db_exec(): one statement of the application's own on the
 * handle's connection, with the public cells as its arguments; the work is
 * sqllock__exec_sql()'s (stmt.c). Up to EXEC_ARGS_ON_STACK arguments need
 * no allocation. Inside a sqllock_txn the statement is one of the
 * transaction's: refused once the transaction has failed, and a failure
 * that ended the database's transaction fails it (R7). */
#define EXEC_ARGS_ON_STACK 16

int sqllock_db_exec(sqllock_db *db, const char *sql, const sqllock_cell *args,
                    int nargs, int *has_row, int64_t *first,
                    int64_t *affected)
{
    sqllock_value stack[EXEC_ARGS_ON_STACK], *vals = stack;
    int rc;

    if (db == NULL)
        return SQLLOCK_EINVAL;
    if (sql == NULL)
        return sqllock__fail(db, SQLLOCK_EINVAL, "the statement is NULL");
    if (nargs < 0 || (nargs > 0 && args == NULL))
        return sqllock__fail(db, SQLLOCK_EINVAL, "sqllock_db_exec: %d "
                             "arguments at %s", nargs,
                             args == NULL ? "NULL" : "a pointer");
    if ((rc = sqllock__txn_check(db, "sqllock_db_exec")) != SQLLOCK_OK)
        return rc;
    rc = sqllock__cells(db, args, nargs, stack, EXEC_ARGS_ON_STACK, &vals);
    if (rc != SQLLOCK_OK)
        return rc;
    rc = sqllock__exec_sql(db, sql, vals, nargs, has_row, first, affected);
    if (rc != SQLLOCK_OK)
        rc = sqllock__txn_failed(db, rc);
    if (vals != stack)
        free(vals);
    return rc;
}
