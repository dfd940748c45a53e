/*
 * pg_notify.c -- wake-ups (DESIGN L9): LISTEN on a lock's channel and
 * waiting, within a bound, for the NOTIFY a release sends.
 *
 * A waiter LISTENs on its own connection -- unless that connection goes
 * through a pooler in transaction mode (pooler=transaction), where LISTEN
 * is a session's state that does not outlive the transaction: PgBouncer
 * answers it, hands the server connection to another client, and the
 * notifications never come (it logs "got packet 'A' from server when not
 * linked"). There it is never sent (DESIGN C1). With listen_host= or
 * listen_port= in the URL the waiter LISTENs on a connection of its own
 * to that server, past the pooler: the `listener`, opened at the first
 * LISTEN and kept with the connection. Without them, LISTEN reports
 * SQLLOCK_EUNSUPPORTED and the core polls with backoff. The release's
 * NOTIFY is transactional and goes through any pooler; the server
 * delivers it to every listener, wherever it connected from.
 *
 * pgpool-II (pooler=pgpool) keeps a session's LISTEN, but a notification
 * that reaches it between two statements stalls the client's next
 * statement until the client gives up (pgpool-II 4.3 in streaming-
 * replication mode: the acquire after a wake-up hung for the whole
 * statement timeout, every time; tests/test_pooler.c f). So there too
 * the waiter LISTENs only past it, on listen_host, or polls.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* A failure on the listener's own connection: it is closed (the next
 * LISTEN opens another) and reported as a plain error, not as
 * SQLLOCK_ECONNECT, which would make the core drop the main connection
 * (which still works). The core polls meanwhile. */
static int listener_failed(sqllock_conn *c, int rc, sqllock_dberr *err)
{
    char msg[sizeof err->msg];

    if (rc != SQLLOCK_ECONNECT)
        return rc;
    sqllock__pg_disconnect(c->listener);
    c->listener = NULL;
    memcpy(msg, err->msg, sizeof msg);
    return sqllock_dberr_set(err, SQLLOCK_EDB, err->code, "the connection "
                             "for LISTEN (listen_host, listen_port) was "
                             "lost: %s", msg);
}

/* The connection to LISTEN on: the listener, the connection itself, or
 * NULL (with err set) where there is none. */
static sqllock_conn *listen_conn(sqllock_conn *c, int open, int *rc,
                                 sqllock_dberr *err)
{
    *rc = SQLLOCK_OK;
    if (c->listen_url == NULL) {
        if (c->pooler != PG_POOLER_TRANSACTION &&
            c->pooler != PG_POOLER_PGPOOL)
            return c;
        *rc = sqllock_dberr_set(err, SQLLOCK_EUNSUPPORTED, "", "no LISTEN "
                                "through %s: waiters poll (listen_host= "
                                "names a server to LISTEN on past the "
                                "pooler)", c->pooler == PG_POOLER_PGPOOL
                                ? "pgpool-II (pooler=pgpool), where a "
                                "notification stalls the next statement"
                                : "a transaction pooler (pooler="
                                "transaction), where it would hear "
                                "nothing");
        return NULL;
    }
    if (c->listener == NULL && open) {
        *rc = sqllock__pg_connect_url(c->listen_url, 1, c->connect_ms,
                                      &c->listener, err);
        if (*rc != SQLLOCK_OK) {
            *rc = listener_failed(c, *rc, err);
            return NULL;
        }
    }
    if (c->listener == NULL)
        *rc = sqllock_dberr_set(err, SQLLOCK_EDB, "", "not listening");
    return c->listener;
}

int sqllock__pg_listen(sqllock_conn *c, const char *channel, int on,
                       sqllock_dberr *err)
{
    char sql[96];
    size_t i, len = strlen(channel);
    sqllock_conn *l;
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
    l = listen_conn(c, on, &rc, err);
    if (l == NULL)
        return on ? rc : SQLLOCK_OK;
    snprintf(sql, sizeof sql, "%s \"%s\"", on ? "LISTEN" : "UNLISTEN",
             channel);
    rc = sqllock__pg_simple(l, sql, err);
    if (!on)
        drain_notifies(l->pg);
    return l != c ? listener_failed(c, rc, err) : rc;
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
static int wait_on(sqllock_conn *c, int64_t timeout_ms, int *woke,
                   sqllock_dberr *err);

int sqllock__pg_wait_notify(sqllock_conn *c, int64_t timeout_ms, int *woke,
                            sqllock_dberr *err)
{
    sqllock_conn *l;
    int rc;

    *woke = 0;
    l = listen_conn(c, 0, &rc, err);
    if (l == NULL)
        return rc;
    rc = wait_on(l, timeout_ms, woke, err);
    return l != c ? listener_failed(c, rc, err) : rc;
}

static int wait_on(sqllock_conn *c, int64_t timeout_ms, int *woke,
                   sqllock_dberr *err)
{
    struct pollfd pfd;
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
    /* A slice at a time, the deadline clock read after each (T1). */
    end_ms = sqllock_driver_now_ms() + timeout_ms;
    for (;;) {
        left = sqllock_driver_wait_slice_ms(end_ms);
        if (left <= 0)
            return SQLLOCK_OK;
        pfd.events = POLLIN;
        pfd.revents = 0;
        r = poll(&pfd, 1, (int)left);
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
