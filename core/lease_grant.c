/*
 * lease_grant.c -- the grant of a lease row (DESIGN L1, L2, L5, L9): one
 * atomic statement that inserts the row or takes over an expired one,
 * with expiry judged by the server's clock and a token from a counter
 * that outlives the row. With RETURNING (PostgreSQL, SQLite) the
 * statement returns the token. Without it (MySQL) the dialect's routine
 * does the same in one round trip -- with the companion session lock of
 * the wake-ups where the connection can carry it -- or, where the routine
 * cannot be used, the core's own transaction: the insert or takeover
 * first, then the token, while the row is locked.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/*
 * The declared branch for dialects without RETURNING (MySQL): the insert
 * or takeover runs first and locks the name's row; only then, in the same
 * transaction, is the token allocated and stored. A token allocated before
 * the row is locked could be older than the token of a holder that got in
 * meanwhile (a client paused between the two statements), so the order of
 * tokens would no longer be the order of grants (L5).
 */
int sqllock__lease_acquire_statements(sqllock_db *db,
                                      const sqllock_value *args, int *got,
                                      int64_t *token)
{
    const char *what = "acquiring the lease";
    sqllock_value set[3];
    int rc;

    *got = 0;
    rc = sqllock__run(db, SQLLOCK_SQL_LEASE_ACQUIRE, args, 4, what);
    if (rc == SQLLOCK_OK) {
        *got = db->drv->affected_rows(db->stmts[SQLLOCK_SQL_LEASE_ACQUIRE]) > 0;
        sqllock__end(db, SQLLOCK_SQL_LEASE_ACQUIRE);
    }
    if (rc == SQLLOCK_OK && *got) {
        rc = sqllock__run(db, SQLLOCK_SQL_TOKEN_NEXT, args, 1,
                          "allocating a fencing token");
        if (rc == SQLLOCK_OK) {
            *token = db->drv->insert_id(db->stmts[SQLLOCK_SQL_TOKEN_NEXT]);
            sqllock__end(db, SQLLOCK_SQL_TOKEN_NEXT);
            set[0] = args[0];
            set[1] = args[1];
            set[2] = sqllock__int(*token);
            rc = sqllock__run(db, SQLLOCK_SQL_LEASE_SET_TOKEN, set, 3,
                              "storing the fencing token");
            if (rc == SQLLOCK_OK)
                sqllock__end(db, SQLLOCK_SQL_LEASE_SET_TOKEN);
        }
    }
    return rc;
}

static int acquire_in_transaction(sqllock_db *db, const sqllock_value *args,
                                  int *got, int64_t *token)
{
    const char *what = "acquiring the lease";
    int rc;

    *got = 0;
    rc = sqllock__begin(db, what);
    if (rc != SQLLOCK_OK)
        return rc;
    rc = sqllock__lease_acquire_statements(db, args, got, token);
    if (rc == SQLLOCK_OK && *got)
        return sqllock__commit(db, what);
    /* Nothing to keep: a busy attempt, or a failure whose status is the
     * one to report. */
    sqllock__rollback(db);
    if (rc != SQLLOCK_OK)
        *got = 0;
    return rc;
}

/*
 * A routine of the dialect was refused on this connection (`id` is the
 * statement that calls it; SQLLOCK_EPERM, no EXECUTE on it, or
 * SQLLOCK_ENOSCHEMA, not installed): the connection takes the
 * statements instead from now on, and does not ask again. The acquire
 * routine (LEASE_ACQUIRE_ONE, sqllock_acquire_v1 on MySQL) is the oldest
 * routine and the one docs/databases.md tells a least-privilege user to be
 * granted: where it is refused, so are the later ones (the wake-up and
 * the multi-name routines were not installed either, or the user has no
 * EXECUTE at all), which are then not tried, each a failed round trip
 * saved. The converse does not hold: a user granted EXECUTE on
 * sqllock_acquire_v1 alone, or a schema made by a version with that
 * routine only, refuses the later routines and still runs the acquire
 * routine, so a refusal of a later one marks that one only.
 */
void sqllock__routine_refused(sqllock_db *db, sqllock_sql_id id)
{
    switch (id) {
    case SQLLOCK_SQL_LEASE_ACQUIRE_ONE:
        db->no_routine = 1;
        db->no_wake_routine = 1;
        db->no_many_routine = 1;
        break;
    case SQLLOCK_SQL_LEASE_ACQUIRE_WAKE:
    case SQLLOCK_SQL_LEASE_RELEASE_WAKE:
        db->no_wake_routine = 1;
        break;
    case SQLLOCK_SQL_LEASE_ACQUIRE_MANY:
        db->no_many_routine = 1;
        break;
    default:
        break;
    }
}

/*
 * Without RETURNING: the whole acquire in one round trip where the
 * dialect has a routine for it (LEASE_ACQUIRE_ONE: the statements of
 * acquire_in_transaction(), in the same order, run by the server), else,
 * or when the routine is not installed or not allowed on this
 * connection, the transaction.
 */
/*
 * LEASE_ACQUIRE_ONE that also takes the companion session lock with the
 * grant (L9, sqllock_driver.h), for a lease with wake-ups on a
 * connection that can carry them. *companion says whether the connection
 * holds it now. SQLLOCK_ENOSCHEMA or SQLLOCK_EPERM: not installed or not
 * allowed, nothing changed; the caller uses LEASE_ACQUIRE_ONE.
 */
static int acquire_wake(sqllock_db *db, const sqllock_value *args, int *got,
                        int64_t *token, int *companion)
{
    sqllock_sql_id id = SQLLOCK_SQL_LEASE_ACQUIRE_WAKE;
    const char *what = "acquiring the lease";
    int rc, has_row = 0, more = 0;

    *got = 0;
    *companion = 0;
    rc = sqllock__run(db, id, args, 4, what);
    if (rc == SQLLOCK_OK)
        rc = sqllock__fetch(db, id, &has_row, what);
    if (rc == SQLLOCK_OK && has_row) {
        *token = db->drv->column_int64(db->stmts[id], 0);
        *companion = db->drv->column_int64(db->stmts[id], 1) > 0;
        do
            rc = sqllock__fetch(db, id, &more, what);
        while (rc == SQLLOCK_OK && more);
    }
    sqllock__end(db, id);
    if (rc == SQLLOCK_OK && !has_row)
        rc = sqllock__fail(db, SQLLOCK_EDB, "%s: the acquire routine "
                           "returned no row", what);
    if (rc != SQLLOCK_OK)
        *companion = 0;
    *got = rc == SQLLOCK_OK && *token > 0;
    return rc;
}

static int acquire_one_trip(sqllock_db *db, const sqllock_value *args,
                            int *got, int64_t *token, int wake,
                            int *companion)
{
    const sqllock_sql *one = sqllock__sql_of(db->drv,
                                             SQLLOCK_SQL_LEASE_ACQUIRE_ONE);
    const char *what = "acquiring the lease";
    int rc, has_row = 0;

    *got = 0;
    *companion = 0;
    if (wake && !db->no_routine) {
        int usable = 0;

        rc = sqllock__session_wake(db, &usable);
        if (rc != SQLLOCK_OK)
            return rc;
        if (usable) {
            rc = acquire_wake(db, args, got, token, companion);
            if (rc != SQLLOCK_ENOSCHEMA && rc != SQLLOCK_EPERM)
                return rc;
            /* The routine of an older sqllock_init(), or one this user
             * may not run: no wake-ups from this connection's grants. */
            sqllock__routine_refused(db, SQLLOCK_SQL_LEASE_ACQUIRE_WAKE);
        }
    }
    if (one == NULL || db->no_routine)
        return acquire_in_transaction(db, args, got, token);
    rc = sqllock__run(db, SQLLOCK_SQL_LEASE_ACQUIRE_ONE, args, 4, what);
    if (rc == SQLLOCK_OK)
        rc = sqllock__first_int(db, SQLLOCK_SQL_LEASE_ACQUIRE_ONE, &has_row,
                                  token, what);
    if (rc == SQLLOCK_ENOSCHEMA || rc == SQLLOCK_EPERM) {
        /* Not installed (sqllock_init() of an older version made the
         * schema), or the user may not run it: the statements, from now
         * on for this connection. Neither failure changed anything. */
        sqllock__routine_refused(db, SQLLOCK_SQL_LEASE_ACQUIRE_ONE);
        return acquire_in_transaction(db, args, got, token);
    }
    if (rc == SQLLOCK_OK && !has_row)
        rc = sqllock__fail(db, SQLLOCK_EDB, "%s: the acquire routine "
                           "returned no row", what);
    *got = rc == SQLLOCK_OK && *token > 0;
    return rc;
}

int sqllock__lease_insert(sqllock_lease *l)
{
    sqllock_db *db = l->db;
    sqllock_value args[4];
    int64_t sent_us, token = 0;
    int rc, got = 0, companion = 0;
    const char *what = "acquiring the lease";

    if (db->drv == NULL)
        return sqllock__fail(db, SQLLOCK_EMISUSE, "%s: the handle has no "
                             "driver (its open failed)", what);
    l->busy_companion = 0;
    if (l->fixed_owner != NULL)
        snprintf(l->owner, sizeof l->owner, "%s", l->fixed_owner);
    else if ((rc = sqllock__lease_new_owner(l)) != SQLLOCK_OK)
        return rc;
    args[0] = sqllock__text(l->name);
    args[1] = sqllock__text(l->owner);
    args[2] = sqllock__text(l->holder);
    args[3] = sqllock__int(l->ttl_ms);
    sent_us = sqllock__now_us();
    if (db->drv->caps & SQLLOCK_CAP_RETURNING) {
        sqllock_sql_id id = l->flags & SQLLOCK_LEASE_FAST
                                ? SQLLOCK_SQL_LEASE_ACQUIRE_FAST
                                : SQLLOCK_SQL_LEASE_ACQUIRE;
        rc = sqllock__run(db, id, args, 4, what);
        if (rc == SQLLOCK_OK)
            rc = sqllock__first_int(db, id, &got, &token, what);
    } else {
        rc = acquire_one_trip(db, args, &got, &token,
                              !(l->flags & SQLLOCK_LEASE_NO_WAKEUP),
                              &companion);
    }
    if (rc != SQLLOCK_OK) {
        sqllock__lease_forget(l);
        return rc;
    }
    if (!got) {
        sqllock__lease_forget(l);
        l->busy_companion = companion;
        return sqllock__fail(db, SQLLOCK_BUSY, "lock '%s' is held by another "
                             "owner", l->name);
    }
    l->count = 1;
    l->token = token;
    l->companion = companion;
    l->companion_gen = db->conn_gen;
    atomic_store(&l->deadline_us, sent_us + (l->ttl_ms - l->margin_ms) * 1000);
    atomic_store(&l->state, SQLLOCK_STATE_HELD);
    sqllock__m_grant(l);
    return sqllock__ok(db);
}
