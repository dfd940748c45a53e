/*
 * exec.c -- sqllock_db_exec(): one statement of the application's own on
 * the handle's connection, with the public cells as its arguments.
 *
 * The work is sqllock__exec_sql()'s (core/db.c); this file turns the cells
 * into the driver's values. Up to EXEC_ARGS_ON_STACK arguments need no
 * allocation. Inside a sqllock_txn the statement is one of the
 * transaction's: refused once the transaction has failed, and a failure
 * that ended the database's transaction fails it (R7, core/txn.c).
 */
#include <stdlib.h>

#include "internal.h"

#define EXEC_ARGS_ON_STACK 16

int sqllock_db_exec(sqllock_db *db, const char *sql, const sqllock_cell *args,
                    int nargs, int *has_row, int64_t *first,
                    int64_t *affected)
{
    sqllock_value stack[EXEC_ARGS_ON_STACK], *vals = stack;
    int i, rc;

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
    if (nargs > EXEC_ARGS_ON_STACK) {
        vals = calloc((size_t)nargs, sizeof *vals);
        if (vals == NULL)
            return sqllock__fail(db, SQLLOCK_ENOMEM, "out of memory");
    }
    for (i = 0; i < nargs; i++)
        vals[i] = args[i].text != NULL ? sqllock__text(args[i].text)
                                       : sqllock__int(args[i].number);
    rc = sqllock__exec_sql(db, sql, nargs > 0 ? vals : NULL, nargs, has_row,
                           first, affected);
    if (rc != SQLLOCK_OK)
        rc = sqllock__txn_failed(db, rc);
    if (vals != stack)
        free(vals);
    return rc;
}
