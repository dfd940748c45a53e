/*
 * notify.c -- the database's part of waking waiters (contract L9): a
 * driver's LISTEN/NOTIFY (PostgreSQL), and whether a connection can carry
 * the session-lock wake-ups of a dialect without it (MySQL, MariaDB).
 * What a waiter does with them is lease_wait.c's; the in-process wake-ups
 * are wake.c's.
 */
#include <stdio.h>
#include <string.h>

#include "internal.h"

int sqllock__can_notify(const sqllock_db *db)
{
    return db->drv != NULL && (db->drv->caps & SQLLOCK_CAP_NOTIFY) &&
           db->drv->listen != NULL &&
           db->drv->wait_notify != NULL;
}

/* The answer depends on the driver (its session-lock wake-up statements)
 * and on the connection (the driver's session_wake(): a Galera node, a
 * borrowed connection), so it is worked out once per connect and kept
 * until the connection is dropped; a refused routine (no_wake_routine) is
 * checked every time, as it may be learnt at any call. A failed
 * session_wake() answers 0 for this call and is asked again at the
 * next. */
int sqllock__session_wake(sqllock_db *db, int *usable)
{
    sqllock_sql_id id;
    sqllock_dberr err;
    int rc;

    *usable = 0;
    if (db->drv == NULL || db->no_wake_routine)
        return SQLLOCK_OK;
    if (db->conn != NULL && db->wake_known) {
        *usable = db->wake_usable;
        return SQLLOCK_OK;
    }
    for (id = SQLLOCK_SQL_LEASE_ACQUIRE_WAKE; id <= SQLLOCK_SQL_WAKE_WAIT;
         id++) {
        if (sqllock__sql_of(db->drv, id) == NULL) {
            if (db->conn != NULL) {
                db->wake_known = 1;
                db->wake_usable = 0;
            }
            return SQLLOCK_OK;
        }
    }
    rc = sqllock__connected(db);
    if (rc != SQLLOCK_OK)
        return rc;
    *usable = 1;
    memset(&err, 0, sizeof err);
    if (db->drv->session_wake != NULL &&
        db->drv->session_wake(db->conn, usable, &err) != SQLLOCK_OK) {
        *usable = 0;
        return SQLLOCK_OK;
    }
    db->wake_known = 1;
    db->wake_usable = *usable;
    return SQLLOCK_OK;
}

int sqllock__listen(sqllock_db *db, const char *channel, int on)
{
    sqllock_dberr err;
    int rc;

    if (!sqllock__can_notify(db))
        return SQLLOCK_EUNSUPPORTED;
    rc = sqllock__connected(db);
    if (rc != SQLLOCK_OK)
        return rc;
    memset(&err, 0, sizeof err);
    rc = db->drv->listen(db->conn, channel, on, &err);
    if (rc == SQLLOCK_ECONNECT)
        sqllock__drop_connection(db);
    return rc;
}

int sqllock__wait_notify(sqllock_db *db, int64_t until_us, int *woke)
{
    sqllock_dberr err;
    int64_t ms;
    int rc = SQLLOCK_OK;

    *woke = 0;
    if (!sqllock__can_notify(db) || db->conn == NULL)
        return SQLLOCK_ECONNECT;
    /* The driver's timeout counts CLOCK_MONOTONIC time, which a suspend
     * stops: one slice at a time, the deadline read after each (T1).
     * The first call is made even when the time is up, for what has
     * already come. */
    do {
        ms = sqllock__wait_slice_ms(until_us);
        memset(&err, 0, sizeof err);
        rc = db->drv->wait_notify(db->conn, ms, woke, &err);
        if (rc == SQLLOCK_ECONNECT)
            sqllock__drop_connection(db);
    } while (rc == SQLLOCK_OK && !*woke && ms > 0);
    return rc;
}
