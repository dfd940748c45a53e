/*
 * pg_txn.c -- statements without parameters on a PostgreSQL connection
 * (the DDL script, a ping), and transactions.
 */
#include <stdio.h>
#include <string.h>

#include "pg.h"

/* Runs a statement without parameters (the DDL script, transaction
 * control) with the simple query protocol. A script of several statements
 * runs in one implicit transaction. */
static int pg_simple_result(sqllock_conn *c, const char *sql,
                            PGresult **out, sqllock_dberr *err)
{
    int rc = sqllock__pg_check_usable(c, err);

    if (rc != SQLLOCK_OK)
        return rc;
    return sqllock__pg_expect_result(c, PQsendQuery(c->pg, sql),
                                     PGRES_COMMAND_OK, PGRES_TUPLES_OK, out,
                                     err);
}

int sqllock__pg_simple(sqllock_conn *c, const char *sql, sqllock_dberr *err)
{
    return pg_simple_result(c, sql, NULL, err);
}

int sqllock__pg_simple_within(sqllock_conn *c, const char *sql,
                              int64_t bound_ms, sqllock_dberr *err)
{
    int64_t statement_ms = c->statement_ms, lock_wait_ms = c->lock_wait_ms;
    int rc;

    c->statement_ms = bound_ms;
    c->lock_wait_ms = 0;
    rc = sqllock__pg_simple(c, sql, err);
    c->statement_ms = statement_ms;
    c->lock_wait_ms = lock_wait_ms;
    return rc;
}

int sqllock__pg_exec_script(sqllock_conn *c, const char *sql,
                            sqllock_dberr *err)
{
    return sqllock__pg_simple(c, sql, err);
}

/* Behind a transaction pooler a transaction may run on another server
 * connection than the last one, so the lock timeout the core set (once,
 * as it would for a session) is set again for each transaction, in the
 * same round trip as its BEGIN. The value is the driver's own integer,
 * formatted here, not a value from outside. */
int sqllock__pg_begin(sqllock_conn *c, sqllock_dberr *err)
{
    char sql[128];
    int rc;

    if (c->pooler == PG_POOLER_TRANSACTION && c->txn_lock_timeout_ms >= 0)
        snprintf(sql, sizeof sql, PG_BEGIN "; SELECT pg_catalog.set_config("
                 "'lock_timeout', '%lldms', true)",
                 (long long)(c->txn_lock_timeout_ms > 2147483647
                             ? 2147483647 : c->txn_lock_timeout_ms));
    else
        snprintf(sql, sizeof sql, PG_BEGIN);
    c->in_txn = 1;
    rc = sqllock__pg_simple(c, sql, err);
    if (rc != SQLLOCK_OK)
        c->in_txn = 0;
    return rc;
}

static int commit(sqllock_conn *c, sqllock_dberr *err)
{
    PGresult *res;
    int rc = SQLLOCK_OK;

    /* After a failed statement PostgreSQL has aborted the transaction and
     * answers COMMIT with a rollback: that must not read as success. */
    if (PQtransactionStatus(c->pg) == PQTRANS_INERROR) {
        rc = sqllock__pg_simple(c, "ROLLBACK", err);
        if (rc == SQLLOCK_ECONNECT)
            return rc;
        return sqllock_dberr_set(err, SQLLOCK_EDB, "25P02", "the transaction "
                                 "had failed (an earlier statement's error) "
                                 "and was rolled back, not committed");
    }
    rc = pg_simple_result(c, "COMMIT", &res, err);
    if (rc != SQLLOCK_OK)
        return rc;
    if (strcmp(PQcmdStatus(res), "ROLLBACK") == 0)
        rc = sqllock_dberr_set(err, SQLLOCK_EDB, "", "the database rolled "
                               "the transaction back instead of committing "
                               "it");
    PQclear(res);
    return rc;
}

int sqllock__pg_commit(sqllock_conn *c, sqllock_dberr *err)
{
    int rc = commit(c, err);

    c->in_txn = 0;
    return rc;
}

int sqllock__pg_rollback(sqllock_conn *c, sqllock_dberr *err)
{
    int rc = sqllock__pg_simple(c, "ROLLBACK", err);

    c->in_txn = 0;
    return rc;
}
