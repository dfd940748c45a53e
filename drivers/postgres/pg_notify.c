/*
 * pg_notify.c -- wake-ups (DESIGN L9): LISTEN on a lock's channel and
 * waiting, within a bound, for the NOTIFY a release sends.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pg.h"

/* Drops every notification libpq has already read; 1 if there was one. */
static int drain_notifies(PGconn *pg)
{
    PGnotify *n;
    int any = 0;

    while ((n = PQnotifies(pg)) != NULL) {
        PQfreemem(n);
        any = 1;
    }
    return any;
}

int sqllock__pg_listen(sqllock_conn *c, const char *channel, int on,
                     sqllock_dberr *err)
{
    char sql[96];
    size_t i, len = strlen(channel);
    int rc;

    /* The channel is the core's own [a-z0-9_] text; check it anyway,
     * since it is the one thing pasted into SQL here (LISTEN takes no
     * parameters). */
    if (len == 0 || len > 63)
        return sqllock_dberr_set(err, SQLLOCK_EINVAL, "", "bad channel name");
    for (i = 0; i < len; i++)
        if (!((channel[i] >= 'a' && channel[i] <= 'z') ||
              (channel[i] >= '0' && channel[i] <= '9') || channel[i] == '_'))
            return sqllock_dberr_set(err, SQLLOCK_EINVAL, "",
                                     "bad channel name");
    snprintf(sql, sizeof sql, "%s \"%s\"", on ? "LISTEN" : "UNLISTEN",
             channel);
    rc = sqllock__pg_simple(c, sql, err);
    if (!on)
        drain_notifies(c->pg);
    return rc;
}

/* Reads what the server sent; a lost connection is SQLLOCK_ECONNECT. */
static int consume(sqllock_conn *c, sqllock_dberr *err)
{
    if (PQconsumeInput(c->pg) == 0 || PQstatus(c->pg) != CONNECTION_OK)
        return sqllock_dberr_set(err, SQLLOCK_ECONNECT, "",
                                 "waiting for a notification: %s",
                                 PQerrorMessage(c->pg));
    return SQLLOCK_OK;
}

/* Waits until a notification comes, the time runs out or the connection
 * fails. Input that is not a notification (a server's goodbye arrives as
 * an error message first and the end of the stream a moment later) does
 * not end the wait, so that a connection the server closed is reported
 * as lost rather than as a quiet timeout. */
int sqllock__pg_wait_notify(sqllock_conn *c, int64_t timeout_ms, int *woke,
                          sqllock_dberr *err)
{
    struct pollfd pfd;
    struct timespec now;
    int64_t end_ms, left;
    int r, rc;

    *woke = 0;
    if (c->broken)
        return sqllock_dberr_set(err, SQLLOCK_ECONNECT, "", "the connection "
                                 "was given up after a statement ran out of "
                                 "time");
    rc = consume(c, err);
    if (rc != SQLLOCK_OK)
        return rc;
    if (drain_notifies(c->pg)) {
        *woke = 1;
        return SQLLOCK_OK;
    }
    pfd.fd = PQsocket(c->pg);
    if (pfd.fd < 0)
        return sqllock_dberr_set(err, SQLLOCK_ECONNECT, "",
                                 "waiting for a notification: no socket");
    clock_gettime(CLOCK_MONOTONIC, &now);
    end_ms = (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000 + timeout_ms;
    for (;;) {
        clock_gettime(CLOCK_MONOTONIC, &now);
        left = end_ms - ((int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000);
        if (left <= 0)
            return SQLLOCK_OK;
        pfd.events = POLLIN;
        pfd.revents = 0;
        r = poll(&pfd, 1, (int)(left > 60000 ? 60000 : left));
        if (r < 0 && errno != EINTR)
            return sqllock_dberr_set(err, SQLLOCK_ESYS, "", "poll: %s",
                                     strerror(errno));
        if (r <= 0)
            continue;
        rc = consume(c, err);
        if (rc != SQLLOCK_OK)
            return rc;
        if (drain_notifies(c->pg)) {
            *woke = 1;
            return SQLLOCK_OK;
        }
    }
}
