/*
 * pg_error.c -- the error map: SQLSTATEs and libpq's connect messages as
 * sqllock statuses.
 */
#include <string.h>

#include "pg.h"

/* The status for a SQLSTATE (DESIGN E1; issue: each class its own). */
static int classify_sqlstate(const char *state)
{
    if (state == NULL || strlen(state) != 5)
        return SQLLOCK_EDB;
    if (strcmp(state, "23505") == 0)
        return SQLLOCK_EEXISTS;
    if (strcmp(state, "55P03") == 0)
        return SQLLOCK_ELOCKED;       /* NOWAIT failed, or lock_timeout */
    if (strcmp(state, "40P01") == 0)
        return SQLLOCK_EDEADLOCK;
    if (strcmp(state, "40001") == 0)
        return SQLLOCK_ESERIALIZATION;
    if (strcmp(state, "57014") == 0)
        return SQLLOCK_ECANCELED;     /* canceled, statement_timeout */
    if (strcmp(state, "25P02") == 0)
        return SQLLOCK_EMISUSE;       /* in a transaction already aborted */
    if (strncmp(state, "08", 2) == 0 || strcmp(state, "57P01") == 0 ||
        strcmp(state, "57P02") == 0 || strcmp(state, "57P03") == 0 ||
        strcmp(state, "3D000") == 0)
        return SQLLOCK_ECONNECT;
    if (strcmp(state, "42P01") == 0 || strcmp(state, "42883") == 0)
        return SQLLOCK_ENOSCHEMA;     /* undefined table or sequence, or
                                         a routine of sqllock's own that
                                         sqllock_init() did not install */
    if (strcmp(state, "42501") == 0 || strcmp(state, "25006") == 0 ||
        strncmp(state, "28", 2) == 0)
        return SQLLOCK_EPERM;
    if (strcmp(state, "53200") == 0)
        return SQLLOCK_ENOMEM;
    if (strcmp(state, "53100") == 0)
        return SQLLOCK_EFULL;         /* disk_full */
    /* Class 22, data exception: a value the caller gave does not fit
     * (text for a number, a number out of range, bytes that are not
     * valid in the database's encoding). The library checks its own
     * values first; these come from values for the application's
     * tables, and are bad input like any other (DESIGN E2). */
    if (strncmp(state, "22", 2) == 0)
        return SQLLOCK_EINVAL;
    return SQLLOCK_EDB;
}

/* Fills `err` from a failed result (or from the connection when `res` is
 * NULL) and returns its status. A connection that libpq reports as bad is
 * SQLLOCK_ECONNECT whatever the error was, so that the core reconnects. */
int sqllock__pg_fail(PGconn *pg, const PGresult *res, sqllock_dberr *err)
{
    const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
    const char *msg = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY)
                          : NULL;
    int status = classify_sqlstate(state);

    if (msg == NULL)
        msg = pg != NULL ? PQerrorMessage(pg) : "out of memory";
    if (pg == NULL || PQstatus(pg) == CONNECTION_BAD)
        status = SQLLOCK_ECONNECT;
    /* DESIGN D5: a statement's check of the isolation level (pg_sql.c,
     * SESSION_PINS) failed: it did nothing. */
    else if (state != NULL && strcmp(state, "25001") == 0 &&
             strstr(msg, "ISOLATION LEVEL") != NULL)
        return sqllock_dberr_set(err, SQLLOCK_EMISUSE, state, "the "
                                 "session is not in READ COMMITTED, which "
                                 "sqllock's statements need; nothing was "
                                 "done. The library's connections pin it: "
                                 "was the session changed through the "
                                 "native handle (SET SESSION "
                                 "CHARACTERISTICS AS TRANSACTION ISOLATION "
                                 "LEVEL ...)? (%s)", msg);
    return sqllock_dberr_set(err, status, state ? state : "", "%s",
                             msg[0] ? msg : "unknown libpq error");
}

/* Classifies a failed connect from libpq's message: it gives no SQLSTATE
 * there. */
int sqllock__pg_classify_connect(const char *msg)
{
    if (strstr(msg, "invalid URI") || strstr(msg, "invalid connection "
        "option") || strstr(msg, "invalid integer value") ||
        strstr(msg, "invalid port") || strstr(msg, "invalid sslmode") ||
        strstr(msg, "invalid percent-encoded"))
        return SQLLOCK_EURL;
    if (strstr(msg, "password authentication failed") ||
        strstr(msg, "no pg_hba.conf entry") ||
        strstr(msg, "authentication failed") ||
        (strstr(msg, "role \"") && strstr(msg, "does not exist")) ||
        strstr(msg, "no password supplied"))
        return SQLLOCK_EPERM;
    return SQLLOCK_ECONNECT;
}
