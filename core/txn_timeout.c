/*
 * txn_timeout.c -- the row-lock wait of a transaction's connection
 * (DESIGN R1): set when it changes (TXN_LOCK_TIMEOUT, a setting of the
 * session), and on a connection the application lends (sqllock_borrow(),
 * G2) read first and put back when the transaction ends, so that the
 * application's own setting survives the library's transactions.
 */
#include <stdio.h>
#include <string.h>

#include "internal.h"

/* Reads a borrowed connection's own row-lock wait, once per txn, before
 * the first change, so that sqllock__txn_restore_lock_timeout() can put
 * it back. */
static int save_lock_timeout(sqllock_txn *t)
{
    sqllock_db *db = t->db;
    int rc, has_row = 0;

    if (!db->borrowed || t->saved_timeout_ms >= 0)
        return SQLLOCK_OK;
    rc = sqllock__run(db, SQLLOCK_SQL_LOCK_TIMEOUT_GET, NULL, 0,
                      "reading the connection's lock timeout");
    if (rc == SQLLOCK_OK)
        rc = sqllock__fetch(db, SQLLOCK_SQL_LOCK_TIMEOUT_GET, &has_row,
                            "reading the connection's lock timeout");
    if (rc == SQLLOCK_OK && has_row) {
        int64_t ms = db->drv->column_int64(
            db->stmts[SQLLOCK_SQL_LOCK_TIMEOUT_GET], 0);
        t->saved_timeout_ms = ms < 0 ? 0 : ms;
    } else if (rc == SQLLOCK_OK) {
        rc = sqllock__fail(db, SQLLOCK_EDB, "reading the connection's lock "
                           "timeout: no row");
    }
    sqllock__end(db, SQLLOCK_SQL_LOCK_TIMEOUT_GET);
    return rc;
}

int sqllock__txn_set_lock_timeout(sqllock_txn *t, int64_t ms)
{
    sqllock_db *db = t->db;
    sqllock_value arg = sqllock__int(ms);
    int rc, has_row = 0;

    /* The setting lasts for the connection: send it only when it
     * changes. A borrowed connection's is the application's, which may
     * change it between our transactions: sent every time there. */
    if (db->lock_timeout_ms == ms && db->conn != NULL && !db->borrowed)
        return SQLLOCK_OK;
    if ((rc = save_lock_timeout(t)) != SQLLOCK_OK)
        return rc;

    rc = sqllock__run(db, SQLLOCK_SQL_TXN_LOCK_TIMEOUT, &arg, 1,
                      "setting the lock timeout");
    if (rc != SQLLOCK_OK)
        return rc;
    /* Some dialects return a row (a SELECT); read it to the end. */
    do
        rc = sqllock__fetch(db, SQLLOCK_SQL_TXN_LOCK_TIMEOUT, &has_row,
                            "setting the lock timeout");
    while (rc == SQLLOCK_OK && has_row);
    sqllock__end(db, SQLLOCK_SQL_TXN_LOCK_TIMEOUT);
    db->lock_timeout_ms = rc == SQLLOCK_OK ? ms : -1;
    return rc;
}

void sqllock__txn_restore_lock_timeout(sqllock_txn *t)
{
    sqllock_db *db = t->db;

    if (db->borrowed && t->saved_timeout_ms >= 0 && db->conn != NULL) {
        int code = db->errcode;
        char msg[SQLLOCK__ERRMSG_MAX];
        sqllock_value arg = sqllock__int(t->saved_timeout_ms);
        int has_row = 0;

        memcpy(msg, db->errmsg, sizeof msg);
        if (sqllock__run(db, SQLLOCK_SQL_TXN_LOCK_TIMEOUT, &arg, 1,
                         "putting the lock timeout back") == SQLLOCK_OK) {
            while (sqllock__fetch(db, SQLLOCK_SQL_TXN_LOCK_TIMEOUT, &has_row,
                                  "putting the lock timeout back") ==
                       SQLLOCK_OK && has_row)
                ;
            sqllock__end(db, SQLLOCK_SQL_TXN_LOCK_TIMEOUT);
        }
        db->errcode = code;
        memcpy(db->errmsg, msg, sizeof msg);
    }
    if (db->borrowed)
        db->lock_timeout_ms = -1;
}
