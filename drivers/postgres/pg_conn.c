/*
 * pg_conn.c -- connecting to PostgreSQL: the URL of the one host the core
 * hands over (core/failover.c tries a list's hosts in turn) goes to libpq,
 * and every connect is bounded to the millisecond; the notice receiver
 * that catches a canceled wait for a synchronous standby.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <stdatomic.h>
#include <sys/random.h>
#include <unistd.h>

#include "pg.h"

/* 1 if `hay` contains `needle` (NULL hay: 0). */
static int has_text(const char *hay, const char *needle)
{
    return hay != NULL && strstr(hay, needle) != NULL;
}

/*
 * The notice receiver. libpq prints notices (e.g. "relation already
 * exists, skipping") to stderr by default; the library never prints
 * (DESIGN E2), so they are dropped -- all but one.
 *
 * A commit that waits for a synchronous standby (synchronous_commit on,
 * remote_write or remote_apply, with synchronous_standby_names set) and
 * whose wait is canceled -- pg_cancel_backend() by an administrator or a
 * monitoring script, any cancel request -- is NOT rolled back: PostgreSQL
 * has already committed it locally, and sends only
 *   WARNING (01000): canceling wait for synchronous replication due to
 *   user request
 *   DETAIL: The transaction has already committed locally, but might not
 *   have been replicated to the standby.
 * and then reports the statement as successful. A grant or renewal
 * taken as done then may be missing on the standby, and a failover right
 * after it would admit a second owner while the first still believes it
 * holds the lease. So the warning marks the round trip, and
 * sync_wait_status() (pg_exec.c) turns its success into
 * SQLLOCK_ECANCELED, outcome unknown like a lost answer, whether the
 * COMMIT went alone or pipelined (sqllock_txn_commit_exec()): the core
 * does not count the grant or renewal, nor the transaction's commit
 * (tests/test_failover.c). The server's statement_timeout does not
 * cancel this wait (it is disabled before the commit; checked on
 * PostgreSQL 15); the client's own bound (statement_timeout_ms) ends it
 * with SQLLOCK_ECONNECT.
 *
 * It is recognised by severity WARNING (the untranslated field) and
 * SQLSTATE 01000 or 57P01, together with the English text; a server whose
 * lc_messages translates the text is still caught during a durable grant
 * or renewal, whose statements raise no warnings of their own.
 *
 * 57P01 (admin_shutdown) as a WARNING is a backend that is being ended
 * as it answers: a terminated wait for the standby ("canceling the wait
 * for synchronous replication and terminating connection due to
 * administrator command"), or an immediate shutdown's "terminating
 * connection due to immediate shutdown command", which can arrive with
 * the statement's success just before the connection closes. Either way
 * the connection is gone, so a durable statement that drew it reports
 * SQLLOCK_ECONNECT, the status of a lost answer, not ECANCELED.
 */
static void on_notice(void *arg, const PGresult *res)
{
    sqllock_conn *c = arg;
    const char *sev = PQresultErrorField(res, PG_DIAG_SEVERITY_NONLOCALIZED);
    const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
    const char *msg = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);
    const char *detail = PQresultErrorField(res, PG_DIAG_MESSAGE_DETAIL);

    if (sev == NULL)                        /* servers before 9.6 */
        sev = PQresultErrorField(res, PG_DIAG_SEVERITY);
    if (c == NULL || sev == NULL || strcmp(sev, "WARNING") != 0 ||
        state == NULL ||
        (strcmp(state, "01000") != 0 && strcmp(state, "57P01") != 0))
        return;
    if (!c->durable && !has_text(msg, "synchronous replication") &&
        !has_text(detail, "replicated to the standby"))
        return;
    c->sync_canceled = 1;
    snprintf(c->sync_state, sizeof c->sync_state, "%s", state);
    snprintf(c->sync_msg, sizeof c->sync_msg, "%s", msg != NULL ? msg : "");
}

/* Drives PQconnectPoll() until the connection is made, fails, or the
 * deadline passes. libpq's own connect_timeout counts whole seconds, at
 * least 2, per host, and only in the blocking connect; this bounds the
 * whole connect to the millisecond. (Resolving a host name still blocks
 * as long as the system's resolver takes.) */
static int connect_poll(PGconn *pg, int64_t timeout_ms, sqllock_dberr *err)
{
    PostgresPollingStatusType st = PGRES_POLLING_WRITING;
    int64_t deadline = sqllock_driver_now_ms() + timeout_ms;
    int r;

    for (;;) {
        if (st == PGRES_POLLING_OK)
            return SQLLOCK_OK;
        if (st == PGRES_POLLING_FAILED || PQsocket(pg) < 0) {
            const char *msg = PQerrorMessage(pg);
            return sqllock_dberr_set(err, sqllock__pg_classify_connect(msg),
                                     "", "%s", msg);
        }
        r = sqllock__pg_wait_fd(PQsocket(pg),
                                st == PGRES_POLLING_READING ? POLLIN
                                                            : POLLOUT,
                                deadline);
        if (r == 0)
            return sqllock_dberr_set(err, SQLLOCK_ECONNECT, "", "the server "
                                     "did not complete the connect within "
                                     "%lld ms (connect timeout)",
                                     (long long)timeout_ms);
        if (r < 0)
            return sqllock_dberr_set(err, SQLLOCK_ESYS, "", "poll: %s",
                                     strerror(errno));
        st = PQconnectPoll(pg);
    }
}

/* Starts a connect with libpq's keyword/value arrays and drives it to
 * the end within timeout_ms. *out gets the connection, or NULL. */
static int connect_params(const char *const *keys, const char *const *vals,
                          int expand, int64_t timeout_ms, PGconn **out,
                          sqllock_dberr *err)
{
    PGconn *pg = PQconnectStartParams(keys, vals, expand);
    int rc;

    *out = NULL;
    if (pg == NULL)
        return sqllock_dberr_set(err, SQLLOCK_ENOMEM, "", "out of memory");
    rc = connect_poll(pg, timeout_ms, err);
    if (rc == SQLLOCK_OK)
        *out = pg;
    else
        PQfinish(pg);
    return rc;
}

/*
 * DESIGN D5: the session settings the library's statements rely on,
 * pinned on every connection of its own, whatever the server, the
 * database, the role, PGOPTIONS or the URL's options= set:
 * - READ COMMITTED (pg_sql.c, SESSION_PINS, says why; the statements
 *   also check it, and the transactions the driver begins name it);
 * - no lock_timeout: a lease statement's short wait for another grant
 *   of the same name must not become an error, and a row-lock
 *   transaction sets its own wait (TXN_LOCK_TIMEOUT);
 * - no statement_timeout: the client bounds every round trip itself
 *   (statement_timeout_ms + lock_wait_ms), and a row-lock wait the
 *   caller asked for must not be cut short by the role's setting;
 * - client_encoding UTF8 (a connect parameter): names, owners and
 *   holders are UTF-8, and one converted from another client encoding
 *   would be another name in the table than the same name sent by
 *   another client.
 * Without a pooler they go in the connect itself (the startup packet's
 * options, after the user's own, so that they win): no round trip. A
 * pooler in session mode (PgBouncer refuses a startup `options`
 * parameter it does not know, "unsupported startup parameter") and
 * pgpool-II get them as SETs in one round trip after the connect --
 * PgBouncer's server_reset_query (DISCARD ALL) takes them off the server
 * connection when the client leaves -- and so does a connect that
 * PgBouncer refused for the options without pooler= in the URL. Behind a
 * transaction pooler no session setting may be made (C1): each
 * statement sets what it needs for its own transaction.
 */
#define PINS_OPTIONS                                                          \
    "-c default_transaction_isolation=read\\ committed -c lock_timeout=0 "    \
    "-c statement_timeout=0"
static const char pins_set[] =
    "SET default_transaction_isolation = 'read committed'; "
    "SET lock_timeout = 0; SET statement_timeout = 0";

/* The startup options: the user's own (the URL's options=, else
 * $PGOPTIONS, as libpq would take them), then the pins. malloc'd; NULL
 * when memory ran out. */
static char *pinned_options(const char *libpq_url)
{
    PQconninfoOption *opts = PQconninfoParse(libpq_url, NULL), *o;
    const char *user = NULL;
    char *out;
    size_t n;

    for (o = opts; o != NULL && o->keyword != NULL; o++)
        if (strcmp(o->keyword, "options") == 0 && o->val != NULL)
            user = o->val;
    if (user == NULL)
        user = getenv("PGOPTIONS");
    n = (user != NULL ? strlen(user) + 1 : 0) + sizeof PINS_OPTIONS;
    out = malloc(n);
    if (out != NULL)
        snprintf(out, n, "%s%s%s", user != NULL ? user : "",
                 user != NULL ? " " : "", PINS_OPTIONS);
    PQconninfoFree(opts);
    return out;
}

/* Connects to `libpq_url` (one host, or libpq's default when it names
 * none: a unix socket, the PG* environment variables) within timeout_ms,
 * with the pins in the startup packet when `pin` says so. A URL libpq
 * cannot parse is refused by the connect, with libpq's own message. */
static int connect_libpq(const char *libpq_url, int pin, int64_t timeout_ms,
                         PGconn **out, sqllock_dberr *err)
{
    const char *keys[] = { "application_name", "dbname", "client_encoding",
                           "options", NULL };
    const char *vals[] = { "sqllock", libpq_url, "UTF8", NULL, NULL };
    char *options = NULL;
    int rc;

    if (pin) {
        options = pinned_options(libpq_url);
        if (options == NULL)
            return sqllock_dberr_set(err, SQLLOCK_ENOMEM, "",
                                     "out of memory");
        vals[3] = options;
    } else {
        keys[3] = NULL;
    }
    rc = connect_params(keys, vals, 1, timeout_ms, out, err);
    free(options);
    return rc;
}

/* 64 bits from the OS's random source for the names of a connection's
 * statements; they need to differ between clients, not to be secret, so
 * the clock and the pid stand in if the source fails. */
static uint64_t name_nonce(const void *salt)
{
    static _Atomic uint64_t counter;
    uint64_t v = 0;
    struct timespec ts;

    if (getrandom(&v, sizeof v, GRND_NONBLOCK) == (ssize_t)sizeof v)
        return v;
    clock_gettime(CLOCK_REALTIME, &ts);
    v = (uint64_t)ts.tv_nsec * 0x9E3779B97F4A7C15u ^ (uint64_t)ts.tv_sec ^
        ((uint64_t)getpid() << 32) ^ (uint64_t)(uintptr_t)salt ^
        (atomic_fetch_add(&counter, 1) * 0xBF58476D1CE4E5B9u);
    return v;
}

int sqllock__pg_connect_url(const char *libpq_url, int pin,
                            int64_t connect_ms, sqllock_conn **out,
                            sqllock_dberr *err)
{
    int64_t start = sqllock_driver_now_ms();
    sqllock_conn *c;
    PGconn *pg = NULL;
    int status;

    *out = NULL;
    c = calloc(1, sizeof *c);
    if (c == NULL)
        return sqllock_dberr_set(err, SQLLOCK_ENOMEM, "", "out of memory");
    status = connect_libpq(libpq_url, pin, connect_ms, &pg, err);
    /* PgBouncer without pooler= in the URL: the pins go in a SET. */
    if (status == SQLLOCK_ECONNECT && pin &&
        has_text(err->msg, "unsupported startup parameter")) {
        int64_t left = connect_ms - (sqllock_driver_now_ms() - start);

        status = connect_libpq(libpq_url, 0, left > 1 ? left : 1, &pg, err);
        c->pins_unsent = 1;
    }
    if (status != SQLLOCK_OK) {
        free(c);
        return status;
    }
    c->pg = pg;
    c->connect_ms = connect_ms;
    c->statement_ms = connect_ms;
    c->txn_lock_timeout_ms = -1;
    snprintf(c->name_prefix, sizeof c->name_prefix, "sqllock_%016llx",
             (unsigned long long)name_nonce(c));
    PQsetNoticeReceiver(c->pg, on_notice, c);
    *out = c;
    return SQLLOCK_OK;
}

/*
 * Behind a session pooler, a client that connected has reached the
 * pooler, not yet a server: PgBouncer lets it log in and then holds its
 * first statement until a server connection of the pool is free (up to
 * its query_wait_timeout, 120 s by default). A lease's holder, its
 * renewer and a waiter each hold one for their whole life, so a pool too
 * small for them would let a renewer wait while the lease runs out. So
 * with pooler=session the connect is not done until one round trip has
 * come back, within what is left of the connect timeout: a renewer that
 * can get no server connection fails before the lease is taken
 * (sqllock_watch_prepare(), `sqllock run`), not after it is lost.
 */
static int session_ready(sqllock_conn *c, int64_t left_ms, int64_t bound_ms,
                         sqllock_dberr *err)
{
    int rc;

    if (left_ms < 1)
        left_ms = 1;
    rc = sqllock__pg_simple_within(c, pins_set, left_ms, err);
    if (rc == SQLLOCK_ECONNECT && c->broken && c->pooler == PG_POOLER_SESSION)
        rc = sqllock_dberr_set(err, SQLLOCK_ECONNECT, "", "connected to "
                               "the pooler, but it gave this client no "
                               "server connection within the connect "
                               "timeout (%lld ms): with pooler=session each "
                               "sqllock connection holds a server "
                               "connection for its whole life (a lease "
                               "holder one, its renewer one, a waiter one, "
                               "a reaper one; `sqllock run` one); make the "
                               "pool larger (PgBouncer default_pool_size) "
                               "or use pool_mode = transaction with "
                               "pooler=transaction", (long long)bound_ms);
    return rc;
}

int sqllock__pg_connect(const sqllock_url *url,
                        const sqllock_connect_params *p, sqllock_conn **out,
                        sqllock_dberr *err)
{
    int64_t start = sqllock_driver_now_ms();
    sqllock_conn *c;
    pg_target t;
    int status;

    *out = NULL;
    status = sqllock__pg_url_read(url, &t, err);
    if (status != SQLLOCK_OK)
        return status;
    /* Behind a pooler the pins are SETs (session, pgpool) or each
     * statement's own (transaction); see PINS_OPTIONS. */
    status = sqllock__pg_connect_url(t.libpq_url, t.pooler == PG_POOLER_NONE,
                                     p->connect_timeout_ms, &c, err);
    if (status != SQLLOCK_OK) {
        sqllock__pg_target_free(&t);
        return status;
    }
    c->statement_ms = p->statement_timeout_ms;
    c->lock_wait_ms = p->lock_wait_ms;
    c->pooler = t.pooler;
    c->listen_url = t.listen_url;         /* the connection's now */
    t.listen_url = NULL;
    sqllock__pg_target_free(&t);
    if (c->pooler == PG_POOLER_SESSION || c->pooler == PG_POOLER_PGPOOL ||
        c->pins_unsent) {
        status = session_ready(c, p->connect_timeout_ms -
                               (sqllock_driver_now_ms() - start),
                               p->connect_timeout_ms, err);
        if (status != SQLLOCK_OK) {
            sqllock__pg_disconnect(c);
            return status;
        }
    }
    *out = c;
    return SQLLOCK_OK;
}

/*
 * The application's own PGconn (sqllock_borrow()). Statements are sent
 * unnamed, as behind a transaction pooler, so that nothing of ours stays
 * on the connection (the application may DEALLOCATE ALL, or hand the
 * connection to a pool), and the lock timeout is set for the
 * transaction only (set_config(..., true)). The notice receiver stays
 * the application's: the warnings on_notice() looks for matter only to
 * lease grants, which a borrowed connection does not make.
 */
int sqllock__pg_adopt(void *native, const sqllock_connect_params *p,
                      sqllock_conn **out, sqllock_dberr *err)
{
    PGconn *pg = native;
    sqllock_conn *c;

    *out = NULL;
    if (PQstatus(pg) != CONNECTION_OK)
        return sqllock_dberr_set(err, SQLLOCK_ECONNECT, "", "the PGconn is "
                                 "not connected (%s)", PQerrorMessage(pg));
    if (PQpipelineStatus(pg) != PQ_PIPELINE_OFF)
        return sqllock_dberr_set(err, SQLLOCK_EMISUSE, "", "the PGconn is in "
                                 "pipeline mode: leave it first");
    if (PQisBusy(pg))
        return sqllock_dberr_set(err, SQLLOCK_EMISUSE, "", "the PGconn has a "
                                 "query in progress: read its results "
                                 "first");
    c = calloc(1, sizeof *c);
    if (c == NULL)
        return sqllock_dberr_set(err, SQLLOCK_ENOMEM, "", "out of memory");
    c->pg = pg;
    c->borrowed = 1;
    c->pooler = PG_POOLER_TRANSACTION;
    c->connect_ms = p->connect_timeout_ms;
    c->statement_ms = p->statement_timeout_ms;
    c->lock_wait_ms = p->lock_wait_ms;
    c->txn_lock_timeout_ms = -1;
    snprintf(c->name_prefix, sizeof c->name_prefix, "sqllock_%016llx",
             (unsigned long long)name_nonce(c));
    *out = c;
    return SQLLOCK_OK;
}

int sqllock__pg_txn_status(sqllock_conn *c, int *in_txn, sqllock_dberr *err)
{
    PGTransactionStatusType ts = PQtransactionStatus(c->pg);

    (void)err;
    *in_txn = ts == PQTRANS_INTRANS || ts == PQTRANS_INERROR;
    return SQLLOCK_OK;
}

void sqllock__pg_disconnect(sqllock_conn *c)
{
    if (c != NULL && c->borrowed) {
        free(c);
        return;
    }
    if (c != NULL) {
        sqllock__pg_disconnect(c->listener);
        PQfinish(c->pg);
        free(c->listen_url);
        free(c);
    }
}
