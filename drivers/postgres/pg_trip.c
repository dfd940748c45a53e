/*
 * pg_trip.c -- bounded round trips on a PostgreSQL connection: libpq in
 * nonblocking mode, each wait for the socket bounded by the round trip's
 * deadline (statement_timeout_ms + lock_wait_ms) in slices of the
 * deadline clock, and a connection that ran out of time given up for
 * good; what the server answered read back, and a session left inside a
 * transaction or waiting on a canceled synchronous commit caught. The
 * statements themselves are pg_exec.c's.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pg.h"

/* After a round trip ran out of time: the answer may still come, or
 * half of it, so the connection can never be used again. It stays in
 * nonblocking mode, so that PQfinish() cannot block on output the
 * server never took. */
static int give_up(sqllock_conn *c, int64_t bound_ms, sqllock_dberr *err)
{
    c->broken = 1;
    return sqllock_dberr_set(err, SQLLOCK_ECONNECT, "", "the server did not "
                             "answer within %lld ms (statement timeout %lld "
                             "ms + lock wait %lld ms); the connection is "
                             "dropped: the statement may or may not have "
                             "run", (long long)bound_ms,
                             (long long)c->statement_ms,
                             (long long)c->lock_wait_ms);
}

int sqllock__pg_check_usable(sqllock_conn *c, sqllock_dberr *err)
{
    if (c->broken)
        return sqllock_dberr_set(err, SQLLOCK_ECONNECT, "", "the connection "
                                 "was given up after a statement ran out of "
                                 "time");
    /* Nonblocking while we send, so that a stalled network cannot block
     * the send either; back to blocking after each round trip, for the
     * application's own use of the connection. */
    c->was_nonblocking = PQisnonblocking(c->pg);
    if (PQsetnonblocking(c->pg, 1) != 0)
        return sqllock__pg_fail(c->pg, NULL, err);
    /* DESIGN D5: the library's own connections speak UTF-8 (pinned in
     * the connect): a name converted from another client encoding would
     * be another row than the same name sent by any other client. libpq
     * keeps the server's report of the setting, so a SET client_encoding
     * run through the native handle shows here, for nothing. */
    if (!c->borrowed) {
        const char *enc = PQparameterStatus(c->pg, "client_encoding");

        if (enc != NULL && strcmp(enc, "UTF8") != 0)
            return sqllock_dberr_set(err, SQLLOCK_EMISUSE, "", "the "
                                     "connection's client_encoding is %s, "
                                     "set through the native handle: "
                                     "sqllock's connections must stay in "
                                     "UTF8 (a name sent in another "
                                     "encoding is another name); use a "
                                     "connection of your own for another "
                                     "encoding, or SET client_encoding = "
                                     "'UTF8' again; nothing was sent", enc);
    }
    /* DESIGN C2: outside a transaction that begin() opened, a statement
     * must commit on its own. Inside one that someone else opened on
     * this connection (BEGIN on the native handle) it would not: refuse
     * it before anything is sent. */
    if (!c->in_txn && !c->borrowed &&
        (PQtransactionStatus(c->pg) == PQTRANS_INTRANS ||
                       PQtransactionStatus(c->pg) == PQTRANS_INERROR))
        return sqllock_dberr_set(err, SQLLOCK_EMISUSE, "25001", "the "
                                 "connection is inside a transaction that "
                                 "sqllock did not begin (BEGIN run on the "
                                 "native handle?): the statement would not "
                                 "commit on its own, so it was not sent");
    return SQLLOCK_OK;
}

/* Waits for the socket, as a round trip's step; the status when not
 * ready (out of time, or poll() failed). */
int sqllock__pg_wait_step(sqllock_conn *c, short events, int64_t deadline,
                          int64_t bound_ms, sqllock_dberr *err)
{
    int r = sqllock__pg_wait_fd(PQsocket(c->pg), events, deadline);

    if (r > 0)
        return SQLLOCK_OK;
    if (r == 0)
        return give_up(c, bound_ms, err);
    c->broken = 1;
    return sqllock_dberr_set(err, SQLLOCK_ECONNECT, "", "poll: %s",
                             strerror(errno));
}

/*
 * Completes the command a PQsend*() call just queued (`sent` is its
 * return value): sends it, and collects its results within the round
 * trip's bound, keeping the last one as PQexec() does. One round trip;
 * the statuses as with PQexec(): a failed command is *out with an error
 * status, a lost connection a result or SQLLOCK_ECONNECT.
 */
static int round_trip(sqllock_conn *c, int sent, PGresult **out,
                      sqllock_dberr *err)
{
    int64_t bound = c->statement_ms + c->lock_wait_ms;
    int64_t deadline = sqllock_driver_now_ms() + bound;
    PGresult *res, *last = NULL;
    int r, rc;

    *out = NULL;
    c->sync_canceled = 0;
    if (!sent)
        return sqllock__pg_fail(c->pg, NULL, err);
    /* Sends what libpq has queued, reading meanwhile as libpq asks. */
    while ((r = PQflush(c->pg)) != 0) {
        if (r < 0)
            return sqllock__pg_fail(c->pg, NULL, err);
        rc = sqllock__pg_wait_step(c, POLLIN | POLLOUT, deadline, bound, err);
        if (rc != SQLLOCK_OK)
            return rc;
        if (PQconsumeInput(c->pg) == 0)
            return sqllock__pg_fail(c->pg, NULL, err);
    }
    for (;;) {
        while (PQisBusy(c->pg)) {
            rc = sqllock__pg_wait_step(c, POLLIN, deadline, bound, err);
            if (rc != SQLLOCK_OK) {
                PQclear(last);
                return rc;
            }
            if (PQconsumeInput(c->pg) == 0) {
                if (PQstatus(c->pg) != CONNECTION_BAD) {
                    PQclear(last);
                    return sqllock__pg_fail(c->pg, NULL, err);
                }
                /* The connection is closed: PQgetResult() reports the
                 * server's last words (say, "terminating connection")
                 * without waiting. */
                break;
            }
        }
        res = PQgetResult(c->pg);
        if (res == NULL)
            break;
        PQclear(last);
        last = res;
        if (PQstatus(c->pg) == CONNECTION_BAD)
            break;
    }
    if (PQstatus(c->pg) != CONNECTION_BAD)
        PQsetnonblocking(c->pg, c->was_nonblocking);
    *out = last;
    return SQLLOCK_OK;
}

/*
 * DESIGN C2, after a round trip outside a transaction that begin()
 * opened: the statement had to commit on its own, so the server must say
 * that no transaction is open (the ReadyForQuery after it). A proxy that
 * opened one around it -- pgpool-II has been seen sending BEGIN before a
 * session's first statement and ABORT when the client leaves -- would
 * make a grant, renewal, release or write that "succeeded" vanish
 * uncommitted. So the transaction is rolled back here, and a success
 * becomes SQLLOCK_EPROXY: nothing was committed. (A statement that had
 * failed keeps its own error; it committed nothing either.)
 */
static int left_in_txn(sqllock_conn *c, int rc, sqllock_dberr *err)
{
    PGTransactionStatusType ts = PQtransactionStatus(c->pg);
    PGresult *res = NULL;

    sqllock_dberr rb_err;
    int rolled_back = 0;

    if (ts != PQTRANS_INTRANS && ts != PQTRANS_INERROR)
        return rc;
    if (PQsetnonblocking(c->pg, 1) == 0 &&
        round_trip(c, PQsendQuery(c->pg, "ROLLBACK"), &res, &rb_err) ==
        SQLLOCK_OK) {
        rolled_back = res != NULL &&
                      PQresultStatus(res) == PGRES_COMMAND_OK &&
                      PQtransactionStatus(c->pg) == PQTRANS_IDLE;
        PQclear(res);
    }
    if (!rolled_back) {
        /* The connection's state is unknown: nothing more is sent on it
         * (the next call reports SQLLOCK_ECONNECT and the core connects
         * again). */
        c->broken = 1;
        if (rc != SQLLOCK_OK)
            return rc;
        return sqllock_dberr_set(err, SQLLOCK_ECONNECT, "", "the statement "
                                 "was not committed: the server left the "
                                 "connection inside a transaction that "
                                 "sqllock did not begin, and the ROLLBACK "
                                 "failed too; the connection is dropped");
    }
    if (rc != SQLLOCK_OK)
        return rc;
    return sqllock_dberr_set(err, SQLLOCK_EPROXY, "", "the statement was "
                             "not committed: the server left the connection "
                             "inside a transaction that sqllock did not "
                             "begin, so something between the client and "
                             "the server opened one (pgpool-II does; a "
                             "connection pooler in statement or transaction "
                             "mode that does this cannot be used: see "
                             "pooler= in docs/poolers.md); it was rolled "
                             "back");
}

/*
 * The status of a round trip the server answered, given the warning
 * on_notice() (pg_conn.c) may have caught during it: `rc` as it was,
 * unless the round trip succeeded and a commit in it never reached the
 * synchronous standby. Its outcome is then not known to be durable, so
 * it is not a success: SQLLOCK_ECANCELED for a canceled wait (the
 * connection stays usable), SQLLOCK_ECONNECT when the warning said the
 * server is ending the connection (57P01; the core drops a connection
 * that reported ECONNECT). A statement sent on its own
 * (sqllock__pg_expect_result(): sqllock__pg_commit()'s COMMIT among
 * them) and a pipeline (pipeline(): sqllock_txn_commit_exec()'s COMMIT,
 * a row-lock transaction's BEGIN with its first statement) both end
 * here, so that a commit reports the same whichever way it was sent.
 */
int sqllock__pg_sync_wait_status(sqllock_conn *c, int rc, sqllock_dberr *err)
{
    if (rc != SQLLOCK_OK || !c->sync_canceled)
        return rc;
    if (strcmp(c->sync_state, "57P01") == 0)
        return sqllock_dberr_set(err, SQLLOCK_ECONNECT, c->sync_state,
                                 "the server is ending the connection (%s) "
                                 "as the statement ends: its outcome is not "
                                 "known to be durable, so it is not counted "
                                 "as done", c->sync_msg);
    return sqllock_dberr_set(err, SQLLOCK_ECANCELED, c->sync_state,
                             "the commit's wait for the synchronous standby "
                             "was canceled (%s): the primary committed it, "
                             "but the standby may not have it, so a "
                             "failover could undo it; it is not counted as "
                             "done (a grant is not held and its row lasts "
                             "until its ttl; a renewal leaves the local "
                             "deadline as it was)", c->sync_msg);
}

/* A round trip whose result must be `want` (or, with `want2` not 0,
 * that one); the result is kept in *out when `out` is not NULL. */
int sqllock__pg_expect_result(sqllock_conn *c, int sent,
                              ExecStatusType want, ExecStatusType want2,
                              PGresult **out, sqllock_dberr *err)
{
    PGresult *res = NULL;
    int rc = round_trip(c, sent, &res, err);

    if (rc == SQLLOCK_OK &&
        (res == NULL || (PQresultStatus(res) != want &&
                         (want2 == 0 || PQresultStatus(res) != want2))))
        rc = sqllock__pg_fail(c->pg, res, err);
    rc = sqllock__pg_sync_wait_status(c, rc, err);
    if (!c->in_txn && !c->borrowed && !c->broken &&
        PQstatus(c->pg) == CONNECTION_OK)
        rc = left_in_txn(c, rc, err);
    if (rc != SQLLOCK_OK || out == NULL)
        PQclear(res);
    else
        *out = res;
    return rc;
}

/* Waits until `fd` is ready for `events` or the deadline
 * (sqllock_driver_now_ms()) passes: 1 ready, 0 out of time, -1 poll() failed (errno). poll() counts
 * CLOCK_MONOTONIC time, which a suspend stops, so it waits a slice at a
 * time and reads the deadline clock after each (DESIGN T1). Once the
 * deadline has come, one last poll() that does not block: an answer
 * that came while the host slept is taken rather than given up. */
int sqllock__pg_wait_fd(int fd, short events, int64_t deadline_ms)
{
    struct pollfd pfd;
    int64_t ms;
    int r;

    for (;;) {
        ms = sqllock_driver_wait_slice_ms(deadline_ms);
        pfd.fd = fd;
        pfd.events = events;
        pfd.revents = 0;
        r = poll(&pfd, 1, (int)ms);
        if (r > 0)
            return 1;
        if (r < 0 && errno != EINTR)
            return -1;
        if (ms == 0)
            return 0;
    }
}
