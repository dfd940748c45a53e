/*
 * postgres.c -- the PostgreSQL driver (libpq).
 *
 * The URL goes to libpq whole, so sslmode, unix-socket hosts, several
 * hosts with target_session_attrs, and the PG* environment variables all
 * work as libpq users expect (a host list is connected to one host at a
 * time, with the URL's other parameters: see connect_hosts()). Every statement is prepared once per
 * connection and executed as a prepared statement: an acquire, a renew
 * and a release are one round trip each (DESIGN D1b).
 *
 * Nothing blocks without a bound. The connect and every round trip use
 * libpq's asynchronous calls and wait in poll() until a deadline
 * (sqllock_options connect_timeout_ms, and statement_timeout_ms plus the
 * longest lock wait of the handle): a network that stalls keeps the
 * kernel acknowledging our bytes, so TCP keepalives and tcp_user_timeout
 * never fire, and only a client-side deadline ends the wait. After one
 * passes, the connection is given up (the core drops it and connects
 * again on the next call).
 *
 * All of this dialect's SQL is in the constants below.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libpq-fe.h>

#include "sqllock_driver.h"

/* A constant key for advisory locks ("sqlo"), paired with a hash of the
 * name. Applications that use two-key advisory locks with the same first
 * key only make some acquires wait a moment; nothing else. */
#define LOCK_CLASS "1936814924"

/* L1 in one statement: insert the lease, or take over a row whose lease
 * has expired by the server clock. The transaction-scoped advisory lock on
 * the name's hash is taken before nextval(), so acquires of one name take
 * their tokens in the order they are granted (L5): a token can never be
 * drawn by a statement that then waits for another acquire of the same
 * name to commit. now() is the statement's start; if the statement waited,
 * the new lease is that much shorter, never longer, than the ttl. */
#define LEASE_ACQUIRE(turn_extra)                                             \
    "INSERT INTO sqllock_lease AS l "                                          \
    "(name, owner, holder, token, acquired_at, expires_at) "                   \
    "SELECT $1, $2, $3, nextval('sqllock_token_seq'), now(), "                 \
    "now() + $4::float8 * interval '1 millisecond' "                           \
    "FROM (SELECT pg_advisory_xact_lock(" LOCK_CLASS ", hashtext($1))"         \
    turn_extra ") AS turn "                                                    \
    "ON CONFLICT (name) DO UPDATE SET owner = EXCLUDED.owner, "                \
    "holder = EXCLUDED.holder, token = EXCLUDED.token, "                       \
    "acquired_at = EXCLUDED.acquired_at, expires_at = EXCLUDED.expires_at "    \
    "WHERE l.expires_at <= EXCLUDED.acquired_at "                              \
    "RETURNING token"

/*
 * L10 whatever the session says. The URL goes to libpq whole, so
 * `options=-c synchronous_commit=off` in it -- or ALTER ROLE/DATABASE ...
 * SET synchronous_commit, or postgresql.conf -- would make every commit
 * of the session asynchronous, durable grants and renewals included: a
 * grant that a crash then forgets could admit a second owner. So a
 * durable grant or renewal sets synchronous_commit for its own
 * transaction (set_config(..., true), in the statement itself: no extra
 * round trip), raising 'off' and 'local' to 'on' and keeping 'on',
 * 'remote_write' and 'remote_apply' as configured, so that a
 * synchronous standby the user asked for is still waited for. ('local'
 * is raised too: with synchronous standbys it would let a failover
 * forget a grant, which is the risk the fast mode documents; without
 * any, 'on' is the same as 'local'.) The functions are named with their
 * schema, so that a search_path the URL sets cannot put others in their
 * place. The session's own setting is left as it was.
 */
#define DURABLE_COMMIT                                                        \
    "pg_catalog.set_config('synchronous_commit', "                             \
    "CASE WHEN pg_catalog.current_setting('synchronous_commit') "              \
    "IN ('off', 'local') THEN 'on' "                                           \
    "ELSE pg_catalog.current_setting('synchronous_commit') END, true)"

static const char SQL_LEASE_ACQUIRE[] = LEASE_ACQUIRE(", " DURABLE_COMMIT);

/* Fast mode (SQLLOCK_LEASE_FAST): the same grant, committed without
 * waiting for the WAL flush. set_config(..., true) is a volatile call in
 * the subquery's select list, which the planner keeps and runs, like the
 * advisory lock beside it; it lasts for this statement's transaction. */
static const char SQL_LEASE_ACQUIRE_FAST[] =
    LEASE_ACQUIRE(", set_config('synchronous_commit', 'off', true)");

/* The EXISTS test on the CTE is a one-time filter that the executor runs
 * before the scan, so the durable setting is made whether or not the row
 * is still ours (as in the fast variant below). */
static const char SQL_LEASE_RENEW[] =
    "WITH durable AS (SELECT " DURABLE_COMMIT ") "
    "UPDATE sqllock_lease "
    "SET expires_at = now() + $4::float8 * interval '1 millisecond' "
    "WHERE name = $1 AND owner = $2 AND token = $3 "
    "AND EXISTS (SELECT 1 FROM durable)";

static const char SQL_LEASE_RENEW_FAST[] =
    "WITH async AS (SELECT set_config('synchronous_commit', 'off', true)) "
    "UPDATE sqllock_lease "
    "SET expires_at = now() + $4::float8 * interval '1 millisecond' "
    "WHERE name = $1 AND owner = $2 AND token = $3 "
    "AND EXISTS (SELECT 1 FROM async)";

/* L10: a release need not be durable, so its commit does not wait for the
 * WAL flush. set_config(..., true) lasts for this statement's own
 * transaction, so it costs no extra round trip. L9: when the row was ours
 * and is deleted, pg_notify() in RETURNING wakes the waiters listening on
 * the name's channel ($4, made by the core); the notification goes out at
 * the commit, so a waiter woken by it finds the row gone. A NULL channel
 * (a lease with SQLLOCK_LEASE_NO_WAKEUP) notifies no one. */
static const char SQL_LEASE_RELEASE[] =
    "WITH async AS (SELECT set_config('synchronous_commit', 'off', true)) "
    "DELETE FROM sqllock_lease "
    "WHERE name = $1 AND owner = $2 AND token = $3 "
    "AND EXISTS (SELECT 1 FROM async) "
    "RETURNING CASE WHEN $4::text IS NOT NULL THEN pg_notify($4, '') END";

static const char SQL_LEASE_LIST[] =
    "SELECT name, owner, holder, token, "
    "(extract(epoch FROM acquired_at) * 1000)::bigint, "
    "(extract(epoch FROM expires_at) * 1000)::bigint, "
    "(extract(epoch FROM expires_at - now()) * 1000)::bigint "
    "FROM sqllock_lease ORDER BY name";

static const char SQL_SCHEMA_VERSION[] =
    "SELECT value::bigint FROM sqllock_meta WHERE key = 'schema_version'";

/* Versioned records (DESIGN O1). key and value are non-reserved words in
 * PostgreSQL and need no quotes. The value parameter is sent in binary
 * format (see pg_execute()), so the server takes it as bytea from the
 * column it goes to; the value column comes back as bytea text ("\x..."),
 * which pg_column_blob() decodes. */
static const char SQL_RECORD_GET[] =
    "SELECT value, version FROM sqllock_record WHERE key = $1";

static const char SQL_RECORD_CREATE[] =
    "INSERT INTO sqllock_record (key, value, version) VALUES ($1, $2, 1) "
    "ON CONFLICT (key) DO NOTHING";

static const char SQL_RECORD_CAS[] =
    "UPDATE sqllock_record SET value = $3, version = version + 1 "
    "WHERE key = $1 AND version = $2";

static const char SQL_RECORD_DELETE[] =
    "DELETE FROM sqllock_record WHERE key = $1 AND version = $2";

/* Row locks (DESIGN R1-R5). ON CONFLICT DO NOTHING does not wait for a
 * row lock that another transaction holds on an existing row (checked on
 * the server: it returns at once while another session holds the row
 * FOR UPDATE). It does wait for another transaction that inserted the
 * same name and has not committed yet, bounded by lock_timeout. */
static const char SQL_ROW_ENSURE[] =
    "INSERT INTO sqllock_row (name) VALUES ($1) ON CONFLICT (name) DO NOTHING";

/* For the session (set_config(..., false)): the core sets it only when
 * the value changes, so a transaction costs no extra round trip for it.
 * lock_timeout takes at most INT_MAX ms (24.8 days); a longer timeout
 * (SQLLOCK_WAIT_FOREVER, say) waits that long rather than failing. */
static const char SQL_TXN_LOCK_TIMEOUT[] =
    "SELECT set_config('lock_timeout', "
    "LEAST($1::bigint, 2147483647) || 'ms', false)";

/* P1, P2: the expiry test is in the DELETE itself, by the server's clock
 * and with the same now() as acquire and renew, so a lease renewed a
 * moment earlier no longer matches. The CTE bounds the batch and locks
 * the rows it picks, skipping rows that another reaper (or a renew,
 * release or takeover) has locked, so reapers never wait for each other.
 * It is a MATERIALIZED CTE, run once, and not a subquery in the IN: a
 * plan that put that subquery on the inner side of a nested loop ran it
 * again for every outer row, and each run skipped the rows this DELETE
 * had already removed and took the next ones, so one statement deleted
 * every expired row instead of one batch (test_reaper_P1_batches saw 250
 * for a batch of 100). The outer test runs again on the row as it is
 * when locked (PostgreSQL re-evaluates it on the latest version in READ
 * COMMITTED). */
#define REAP_EXPIRED \
    "expires_at < now() - $1::float8 * interval '1 millisecond'"
static const char SQL_LEASE_REAP[] =
    "WITH victims AS MATERIALIZED ("
    "SELECT name FROM sqllock_lease WHERE " REAP_EXPIRED " "
    "ORDER BY expires_at LIMIT $2 FOR UPDATE SKIP LOCKED) "
    "DELETE FROM sqllock_lease WHERE name IN (SELECT name FROM victims) "
    "AND " REAP_EXPIRED;

extern const char sqllock__schema_postgres[];

static const sqllock_dialect postgres_dialect = {
    .sql = {
        [SQLLOCK_SQL_LEASE_ACQUIRE] = { SQL_LEASE_ACQUIRE, "1234" },
        [SQLLOCK_SQL_LEASE_RENEW] = { SQL_LEASE_RENEW, "1234" },
        [SQLLOCK_SQL_LEASE_RELEASE] = { SQL_LEASE_RELEASE, "1234" },
        [SQLLOCK_SQL_LEASE_LIST] = { SQL_LEASE_LIST, "" },
        [SQLLOCK_SQL_SCHEMA_VERSION] = { SQL_SCHEMA_VERSION, "" },
        [SQLLOCK_SQL_RECORD_GET] = { SQL_RECORD_GET, "1" },
        [SQLLOCK_SQL_RECORD_CREATE] = { SQL_RECORD_CREATE, "12" },
        [SQLLOCK_SQL_RECORD_CAS] = { SQL_RECORD_CAS, "123" },
        [SQLLOCK_SQL_RECORD_DELETE] = { SQL_RECORD_DELETE, "12" },
        [SQLLOCK_SQL_ROW_ENSURE] = { SQL_ROW_ENSURE, "1" },
        [SQLLOCK_SQL_TXN_LOCK_TIMEOUT] = { SQL_TXN_LOCK_TIMEOUT, "1" },
    },
    .schema = sqllock__schema_postgres,
    .ident_quote = '"',
    .placeholder = SQLLOCK_PLACEHOLDER_DOLLAR,
    .for_update = { " FOR UPDATE", " FOR UPDATE NOWAIT",
                    " FOR UPDATE SKIP LOCKED" },
    /* Tokens come from a sequence: no per-name rows to trim. */
    .sql_v2 = {
        [SQLLOCK_SQL_LEASE_REAP - SQLLOCK_SQL_COUNT_V1_] =
            { SQL_LEASE_REAP, "12" },
        [SQLLOCK_SQL_TOKEN_TRIM - SQLLOCK_SQL_COUNT_V1_] = { NULL, NULL },
        [SQLLOCK_SQL_LEASE_ACQUIRE_FAST - SQLLOCK_SQL_COUNT_V1_] =
            { SQL_LEASE_ACQUIRE_FAST, "1234" },
        [SQLLOCK_SQL_LEASE_RENEW_FAST - SQLLOCK_SQL_COUNT_V1_] =
            { SQL_LEASE_RENEW_FAST, "1234" },
    },
};

/* The most values one statement binds. The core's largest statement (a
 * compare-and-set on an application table with 16 assignments and 16
 * conditions) binds 35. */
#define PG_MAX_PARAMS 64

struct sqllock_conn {
    PGconn *pg;
    unsigned next_name;          /* for naming prepared statements */
    int64_t statement_ms;        /* the bound of one round trip: */
    int64_t lock_wait_ms;        /* statement timeout + lock wait */
    int broken;                  /* a round trip ran out of time: the
                                    connection's state is unknown, nothing
                                    more is sent on it */
    int durable;                 /* the statement in flight is a durable
                                    grant or renewal */
    int sync_canceled;           /* its commit's wait for a synchronous
                                    standby was canceled (see on_notice) */
    char sync_state[6];          /* that warning's SQLSTATE */
    char sync_msg[200];          /* and its message */
};

struct sqllock_stmt {
    sqllock_conn *conn;
    PGresult *res;
    int row;                     /* the current row; -1 before the first */
    int nparams;
    int durable;                 /* SQL_LEASE_ACQUIRE or SQL_LEASE_RENEW */
    char name[24];
    /* Decoded bytea columns of the current row (column_blob()), one slot
     * per column, freed at the next fetch, reset or finalize. */
    unsigned char **blobs;
    size_t *blob_lens;
    int nblobs;
};

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
    if (strcmp(state, "42P01") == 0)
        return SQLLOCK_ENOSCHEMA;     /* undefined table or sequence */
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
static int fail(PGconn *pg, const PGresult *res, sqllock_dberr *err)
{
    const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
    const char *msg = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY)
                          : NULL;
    int status = classify_sqlstate(state);

    if (msg == NULL)
        msg = pg != NULL ? PQerrorMessage(pg) : "out of memory";
    if (pg == NULL || PQstatus(pg) == CONNECTION_BAD)
        status = SQLLOCK_ECONNECT;
    return sqllock_dberr_set(err, status, state ? state : "", "%s",
                             msg[0] ? msg : "unknown libpq error");
}

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
 * holds the lease. So the warning marks the round trip, and expect_result() turns its success
 * into SQLLOCK_ECANCELED, outcome unknown like a lost answer: the core
 * does not count the grant or renewal (tests/test_failover.c). The
 * server's statement_timeout does not cancel this wait (it is disabled
 * before the commit; checked on PostgreSQL 15); the client's own bound
 * (statement_timeout_ms) ends it with SQLLOCK_ECONNECT.
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

/* The monotonic clock, in ms. */
static int64_t mono_ms(void)
{
    struct timespec now;

    clock_gettime(CLOCK_MONOTONIC, &now);
    return (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
}

/* Waits until `fd` is ready for `events` or the deadline passes: 1 ready,
 * 0 out of time, -1 poll() failed (errno). */
static int wait_fd(int fd, short events, int64_t deadline_ms)
{
    struct pollfd pfd;
    int64_t left;
    int r;

    for (;;) {
        left = deadline_ms - mono_ms();
        if (left <= 0)
            return 0;
        pfd.fd = fd;
        pfd.events = events;
        pfd.revents = 0;
        r = poll(&pfd, 1, (int)(left > 60000 ? 60000 : left));
        if (r > 0)
            return 1;
        if (r < 0 && errno != EINTR)
            return -1;
    }
}

/* Classifies a failed connect from libpq's message: it gives no SQLSTATE
 * there. */
static int classify_connect(const char *msg)
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

/* Drives PQconnectPoll() until the connection is made, fails, or the
 * deadline passes. libpq's own connect_timeout counts whole seconds, at
 * least 2, per host, and only in the blocking connect; this bounds the
 * whole connect to the millisecond. (Resolving a host name still blocks
 * as long as the system's resolver takes.) */
static int connect_poll(PGconn *pg, int64_t timeout_ms, sqllock_dberr *err)
{
    PostgresPollingStatusType st = PGRES_POLLING_WRITING;
    int64_t deadline = mono_ms() + timeout_ms;
    int r;

    for (;;) {
        if (st == PGRES_POLLING_OK)
            return SQLLOCK_OK;
        if (st == PGRES_POLLING_FAILED || PQsocket(pg) < 0) {
            const char *msg = PQerrorMessage(pg);
            return sqllock_dberr_set(err, classify_connect(msg), "", "%s",
                                     msg);
        }
        r = wait_fd(PQsocket(pg), st == PGRES_POLLING_READING ? POLLIN
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

/* The most hosts a URL's host list may name for a connect to each in
 * turn (as the MySQL driver's). */
#define PG_MAX_HOSTS 16

/* Splits the list `s` in place at each ','; returns the number of
 * entries, or -1 when there are more than `max`. */
static int split_list(char *s, char **parts, int max)
{
    int n = 0;

    for (;;) {
        char *comma = strchr(s, ',');

        if (n == max)
            return -1;
        parts[n++] = s;
        if (comma == NULL)
            return n;
        *comma = '\0';
        s = comma + 1;
    }
}

/* The first line of libpq's message `m` (it adds hints after a newline). */
static int first_line(const char *m)
{
    return (int)strcspn(m, "\n");
}

/*
 * A URL with several hosts, one connect per host in the order given, each
 * bounded by timeout_ms. libpq tries a host list itself, but its per-host
 * connect_timeout works only in the blocking connect: driven by
 * PQconnectPoll() (which bounds the whole connect to the millisecond,
 * see connect_poll()), a first host that accepts the TCP connection and
 * then never answers -- a hung server, a machine behind a dead link --
 * would use up the whole bound, and the next host, the new primary after
 * a failover, would never be tried. So each host gets its own connect,
 * with the URL's other parameters (target_session_attrs among them, which
 * libpq checks on each) and its own port. Refused credentials do not end
 * the list, as in libpq: a standby may well have other pg_hba rules.
 */
static int connect_hosts(PQconninfoOption *opts, PQconninfoOption *host,
                         PQconninfoOption *addr, PQconninfoOption *port,
                         int64_t timeout_ms, PGconn **out, sqllock_dberr *err)
{
    const char *keys[64], *vals[64];
    char *hostbuf = NULL, *addrbuf = NULL, *portbuf = NULL;
    char *hosts[PG_MAX_HOSTS], *addrs[PG_MAX_HOSTS], *ports[PG_MAX_HOSTS];
    char why[sizeof err->msg];
    int nkeys = 0, nh = 0, na = 0, np = 0, i, ih = -1, ia = -1, ip = -1;
    int rc = SQLLOCK_OK, all_perm = 1;
    size_t used = 0;
    PQconninfoOption *o;

    *out = NULL;
    why[0] = '\0';
    for (o = opts; o->keyword != NULL && nkeys < 63; o++) {
        if (o->val == NULL) {
            /* As for a single host: named "sqllock" unless the URL
             * names the application. */
            if (strcmp(o->keyword, "application_name") == 0) {
                keys[nkeys] = o->keyword;
                vals[nkeys++] = "sqllock";
            }
            continue;
        }
        if (o == host)
            ih = nkeys;
        else if (o == addr)
            ia = nkeys;
        else if (o == port)
            ip = nkeys;
        keys[nkeys] = o->keyword;
        vals[nkeys++] = o->val;
    }
    keys[nkeys] = NULL;
    vals[nkeys] = NULL;
    if ((ih >= 0 && (hostbuf = strdup(host->val)) == NULL) ||
        (ia >= 0 && (addrbuf = strdup(addr->val)) == NULL) ||
        (ip >= 0 && (portbuf = strdup(port->val)) == NULL)) {
        rc = sqllock_dberr_set(err, SQLLOCK_ENOMEM, "", "out of memory");
        goto done;
    }
    if (hostbuf != NULL)
        nh = split_list(hostbuf, hosts, PG_MAX_HOSTS);
    if (addrbuf != NULL)
        na = split_list(addrbuf, addrs, PG_MAX_HOSTS);
    if (portbuf != NULL)
        np = split_list(portbuf, ports, PG_MAX_HOSTS);
    if (nh < 0 || na < 0 || np < 0) {
        rc = sqllock_dberr_set(err, SQLLOCK_EURL, "", "the URL names more "
                               "than %d hosts", PG_MAX_HOSTS);
        goto done;
    }
    if (nh < na)
        nh = na;
    if ((na > 0 && na != nh) || (np > 1 && np != nh)) {
        rc = sqllock_dberr_set(err, SQLLOCK_EURL, "", "the URL lists %d "
                               "hosts but %d %s", nh, na > 0 && na != nh
                               ? na : np, na > 0 && na != nh ? "host "
                               "addresses" : "ports");
        goto done;
    }
    for (i = 0; i < nh; i++) {
        const char *hname = ih >= 0 ? hosts[i] : addrs[i];
        const char *pname = np == 0 ? "" : ports[np == 1 ? 0 : i];
        PGconn *pg = NULL;
        int n;

        if (ih >= 0)
            vals[ih] = hosts[i];
        if (ia >= 0)
            vals[ia] = addrs[i];
        if (ip >= 0)
            vals[ip] = pname;
        rc = connect_params(keys, vals, 0, timeout_ms, &pg, err);
        if (rc == SQLLOCK_OK) {
            *out = pg;
            goto done;
        }
        if (rc == SQLLOCK_ENOMEM || rc == SQLLOCK_EURL ||
            rc == SQLLOCK_ESYS)
            goto done;
        if (rc != SQLLOCK_EPERM)
            all_perm = 0;
        n = snprintf(why + used, sizeof why - used, "%s%s%s%s: %.*s",
                     i > 0 ? "; " : "", hname[0] ? hname : "(default)",
                     pname[0] ? ":" : "", pname, first_line(err->msg),
                     err->msg);
        if (n > 0)
            used += (size_t)n < sizeof why - used ? (size_t)n
                                                  : sizeof why - used - 1;
    }
    rc = sqllock_dberr_set(err, all_perm ? SQLLOCK_EPERM : SQLLOCK_ECONNECT,
                           "", "no host of the URL's %d would do: %s", nh,
                           why);
done:
    free(hostbuf);
    free(addrbuf);
    free(portbuf);
    return rc;
}

static int pg_connect(const sqllock_url *url, const sqllock_connect_params *p,
                      sqllock_conn **out, sqllock_dberr *err)
{
    const char *keys[] = { "application_name", "dbname", NULL };
    const char *vals[3];
    PQconninfoOption *opts, *o, *host = NULL, *addr = NULL, *port = NULL;
    PGconn *pg = NULL;
    sqllock_conn *c;
    char *errmsg = NULL;
    int status;

    *out = NULL;
    /* A host list is connected to host by host (connect_hosts()); any
     * other URL goes to libpq whole, the PG* environment variables with
     * it. A URL libpq cannot parse is refused by the connect below, with
     * libpq's own message. */
    opts = PQconninfoParse(url->raw, &errmsg);
    PQfreemem(errmsg);
    for (o = opts; o != NULL && o->keyword != NULL; o++) {
        if (strcmp(o->keyword, "host") == 0)
            host = o;
        else if (strcmp(o->keyword, "hostaddr") == 0)
            addr = o;
        else if (strcmp(o->keyword, "port") == 0)
            port = o;
    }
    c = calloc(1, sizeof *c);
    if (c == NULL) {
        PQconninfoFree(opts);
        return sqllock_dberr_set(err, SQLLOCK_ENOMEM, "", "out of memory");
    }
    c->statement_ms = p->statement_timeout_ms;
    c->lock_wait_ms = p->lock_wait_ms;
    if ((host != NULL && host->val != NULL && strchr(host->val, ',')) ||
        (addr != NULL && addr->val != NULL && strchr(addr->val, ','))) {
        status = connect_hosts(opts, host, addr, port, p->connect_timeout_ms,
                               &pg, err);
    } else {
        vals[0] = "sqllock";
        vals[1] = url->raw;
        vals[2] = NULL;
        status = connect_params(keys, vals, 1, p->connect_timeout_ms, &pg,
                                err);
    }
    PQconninfoFree(opts);
    if (status != SQLLOCK_OK) {
        free(c);
        return status;
    }
    c->pg = pg;
    PQsetNoticeReceiver(c->pg, on_notice, c);
    *out = c;
    return SQLLOCK_OK;
}

static void pg_disconnect(sqllock_conn *c)
{
    if (c != NULL) {
        PQfinish(c->pg);
        free(c);
    }
}

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

static int check_usable(sqllock_conn *c, sqllock_dberr *err)
{
    if (c->broken)
        return sqllock_dberr_set(err, SQLLOCK_ECONNECT, "", "the connection "
                                 "was given up after a statement ran out of "
                                 "time");
    /* Nonblocking while we send, so that a stalled network cannot block
     * the send either; back to blocking after each round trip, for the
     * application's own use of the connection. */
    if (PQsetnonblocking(c->pg, 1) != 0)
        return fail(c->pg, NULL, err);
    return SQLLOCK_OK;
}

/* Waits for the socket, as a round trip's step; the status when not
 * ready (out of time, or poll() failed). */
static int wait_step(sqllock_conn *c, short events, int64_t deadline,
                     int64_t bound_ms, sqllock_dberr *err)
{
    int r = wait_fd(PQsocket(c->pg), events, deadline);

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
    int64_t deadline = mono_ms() + bound;
    PGresult *res, *last = NULL;
    int r, rc;

    *out = NULL;
    c->sync_canceled = 0;
    if (!sent)
        return fail(c->pg, NULL, err);
    /* Sends what libpq has queued, reading meanwhile as libpq asks. */
    while ((r = PQflush(c->pg)) != 0) {
        if (r < 0)
            return fail(c->pg, NULL, err);
        rc = wait_step(c, POLLIN | POLLOUT, deadline, bound, err);
        if (rc != SQLLOCK_OK)
            return rc;
        if (PQconsumeInput(c->pg) == 0)
            return fail(c->pg, NULL, err);
    }
    for (;;) {
        while (PQisBusy(c->pg)) {
            rc = wait_step(c, POLLIN, deadline, bound, err);
            if (rc != SQLLOCK_OK) {
                PQclear(last);
                return rc;
            }
            if (PQconsumeInput(c->pg) == 0) {
                if (PQstatus(c->pg) != CONNECTION_BAD) {
                    PQclear(last);
                    return fail(c->pg, NULL, err);
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
        PQsetnonblocking(c->pg, 0);
    *out = last;
    return SQLLOCK_OK;
}

/* A round trip whose result must be `want` (or, with `want2` not 0,
 * that one); the result is kept in *out when `out` is not NULL. */
static int expect_result(sqllock_conn *c, int sent, ExecStatusType want,
                         ExecStatusType want2, PGresult **out,
                         sqllock_dberr *err)
{
    PGresult *res = NULL;
    int rc = round_trip(c, sent, &res, err);

    if (rc == SQLLOCK_OK &&
        (res == NULL || (PQresultStatus(res) != want &&
                         (want2 == 0 || PQresultStatus(res) != want2))))
        rc = fail(c->pg, res, err);
    /* A success whose commit never reached the synchronous standby (see
     * on_notice()): the outcome is not known to be durable, so it is not
     * a success. The connection stays usable, unless the warning said
     * the server is ending it (57P01). */
    if (rc == SQLLOCK_OK && c->sync_canceled &&
        strcmp(c->sync_state, "57P01") == 0) {
        /* The core drops a connection that reported ECONNECT. */
        rc = sqllock_dberr_set(err, SQLLOCK_ECONNECT, c->sync_state,
                               "the server is ending the connection (%s) as "
                               "the statement ends: its outcome is not "
                               "known to be durable, so it is not counted "
                               "as done", c->sync_msg);
    } else if (rc == SQLLOCK_OK && c->sync_canceled)
        rc = sqllock_dberr_set(err, SQLLOCK_ECANCELED, c->sync_state,
                               "the commit's wait for the synchronous "
                               "standby was canceled (%s): the primary "
                               "committed it, but the standby may not have "
                               "it, so a failover could undo it; it is not "
                               "counted as done (a grant is not held and "
                               "its row lasts until its ttl; a renewal "
                               "leaves the local deadline as it was)",
                               c->sync_msg);
    if (rc != SQLLOCK_OK || out == NULL)
        PQclear(res);
    else
        *out = res;
    return rc;
}

static int pg_prepare(sqllock_conn *c, const char *sql, sqllock_stmt **out,
                      sqllock_dberr *err)
{
    sqllock_stmt *s;
    PGresult *desc = NULL;
    int rc;

    *out = NULL;
    s = calloc(1, sizeof *s);
    if (s == NULL)
        return sqllock_dberr_set(err, SQLLOCK_ENOMEM, "", "out of memory");
    snprintf(s->name, sizeof s->name, "sqllock_%u", c->next_name++);
    rc = check_usable(c, err);
    if (rc == SQLLOCK_OK)
        rc = expect_result(c, PQsendPrepare(c->pg, s->name, sql, 0, NULL),
                           PGRES_COMMAND_OK, 0, NULL, err);
    /* The number of parameters the server inferred, to check the core's
     * arguments against. One more round trip, once per connection. */
    if (rc == SQLLOCK_OK)
        rc = check_usable(c, err);
    if (rc == SQLLOCK_OK)
        rc = expect_result(c, PQsendDescribePrepared(c->pg, s->name),
                           PGRES_COMMAND_OK, 0, &desc, err);
    if (rc != SQLLOCK_OK) {
        free(s);
        return rc;
    }
    s->nparams = PQnparams(desc);
    s->durable = strcmp(sql, SQL_LEASE_ACQUIRE) == 0 ||
                 strcmp(sql, SQL_LEASE_RENEW) == 0;
    PQclear(desc);
    s->conn = c;
    s->row = -1;
    *out = s;
    return SQLLOCK_OK;
}

/* Frees the decoded bytea values of the current row. */
static void free_blobs(sqllock_stmt *s)
{
    int i;

    for (i = 0; i < s->nblobs; i++) {
        if (s->blobs[i] != NULL)
            PQfreemem(s->blobs[i]);
    }
    free(s->blobs);
    free(s->blob_lens);
    s->blobs = NULL;
    s->blob_lens = NULL;
    s->nblobs = 0;
}

static void pg_reset(sqllock_stmt *s)
{
    if (s != NULL) {
        free_blobs(s);
        PQclear(s->res);
        s->res = NULL;
        s->row = -1;
    }
}

static void pg_finalize(sqllock_stmt *s)
{
    if (s == NULL)
        return;
    pg_reset(s);
    /* A statement dies with its connection; deallocating it one by one
     * would cost a round trip each for nothing. */
    free(s);
}

static int pg_execute(sqllock_stmt *s, const sqllock_value *args, int nargs,
                      sqllock_dberr *err)
{
    const char *vals[PG_MAX_PARAMS];
    int lens[PG_MAX_PARAMS], formats[PG_MAX_PARAMS];
    char ints[PG_MAX_PARAMS][24];
    char *texts[PG_MAX_PARAMS];
    int i, binary = 0, rc = SQLLOCK_OK;

    pg_reset(s);
    if (nargs > PG_MAX_PARAMS)
        return sqllock_dberr_set(err, SQLLOCK_EINVAL, "", "a statement may "
                                 "bind at most %d values (%d given)",
                                 PG_MAX_PARAMS, nargs);
    if (nargs != s->nparams)
        return sqllock_dberr_set(err, SQLLOCK_EDB, "", "statement %s takes %d "
                                 "parameters, %d given", s->name, s->nparams,
                                 nargs);
    /* Text-format parameters must be NUL-terminated; the core's values
     * carry a length and need not be. A BLOB may hold NUL bytes, which no
     * text-format parameter can carry: it goes in binary format, which
     * for bytea is the bytes themselves. */
    for (i = 0; i < nargs; i++) {
        texts[i] = NULL;
        lens[i] = 0;
        formats[i] = 0;
        switch (args[i].type) {
        case SQLLOCK_VALUE_INT64:
            snprintf(ints[i], sizeof ints[i], "%lld", (long long)args[i].i);
            vals[i] = ints[i];
            break;
        case SQLLOCK_VALUE_TEXT:
            texts[i] = malloc(args[i].len + 1);
            if (texts[i] == NULL) {
                rc = SQLLOCK_ENOMEM;
                break;
            }
            memcpy(texts[i], args[i].s, args[i].len);
            texts[i][args[i].len] = '\0';
            vals[i] = texts[i];
            break;
        case SQLLOCK_VALUE_BLOB:
            if (args[i].len > INT32_MAX) {
                rc = SQLLOCK_EINVAL;
                break;
            }
            /* Not NULL even when empty: NULL would send SQL NULL. */
            vals[i] = args[i].len > 0 ? args[i].s : "";
            lens[i] = (int)args[i].len;
            formats[i] = 1;
            binary = 1;
            break;
        default:
            vals[i] = NULL;
            break;
        }
        if (rc != SQLLOCK_OK) {
            nargs = i;
            break;
        }
    }
    if (rc == SQLLOCK_EINVAL)
        sqllock_dberr_set(err, rc, "", "a binary value is too long to bind");
    else if (rc != SQLLOCK_OK)
        sqllock_dberr_set(err, rc, "", "out of memory");
    if (rc == SQLLOCK_OK)
        rc = check_usable(s->conn, err);
    s->conn->durable = s->durable;
    if (rc == SQLLOCK_OK)
        rc = expect_result(s->conn,
                           PQsendQueryPrepared(s->conn->pg, s->name, nargs,
                                               vals, binary ? lens : NULL,
                                               binary ? formats : NULL, 0),
                           PGRES_TUPLES_OK, PGRES_COMMAND_OK, &s->res, err);
    s->conn->durable = 0;
    for (i = 0; i < nargs; i++)
        free(texts[i]);
    return rc;
}

static int pg_fetch(sqllock_stmt *s, int *has_row, sqllock_dberr *err)
{
    free_blobs(s);
    if (s->res == NULL) {
        *has_row = 0;
        return SQLLOCK_OK;
    }
    s->row++;
    *has_row = s->row < PQntuples(s->res);
    return SQLLOCK_OK;
}

static int64_t pg_column_int64(sqllock_stmt *s, int col)
{
    if (s->res == NULL || s->row < 0 || s->row >= PQntuples(s->res) ||
        PQgetisnull(s->res, s->row, col))
        return 0;
    return strtoll(PQgetvalue(s->res, s->row, col), NULL, 10);
}

static const char *pg_column_text(sqllock_stmt *s, int col)
{
    if (s->res == NULL || s->row < 0 || s->row >= PQntuples(s->res))
        return "";
    return PQgetvalue(s->res, s->row, col);   /* "" for NULL */
}

/* A bytea column. Results come in text format, so the value is bytea's
 * text form ("\x" hex, or the older escape form under bytea_output =
 * escape), which PQunescapeBytea() reads either way. The decoded bytes
 * are kept until the next fetch, reset or finalize. Returns NULL (and
 * *len = 0) only when memory runs out. */
static const void *pg_column_blob(sqllock_stmt *s, int col, size_t *len)
{
    unsigned char *b;
    size_t n = 0;

    *len = 0;
    if (s->res == NULL || s->row < 0 || s->row >= PQntuples(s->res) ||
        col < 0 || col >= PQnfields(s->res) ||
        PQgetisnull(s->res, s->row, col))
        return "";
    if (s->blobs == NULL) {
        int nf = PQnfields(s->res);
        s->blobs = calloc((size_t)nf, sizeof *s->blobs);
        s->blob_lens = calloc((size_t)nf, sizeof *s->blob_lens);
        if (s->blobs == NULL || s->blob_lens == NULL) {
            free(s->blobs);
            free(s->blob_lens);
            s->blobs = NULL;
            s->blob_lens = NULL;
            return NULL;
        }
        s->nblobs = nf;
    }
    if (s->blobs[col] == NULL) {
        b = PQunescapeBytea((const unsigned char *)
                            PQgetvalue(s->res, s->row, col), &n);
        if (b == NULL)
            return NULL;
        s->blobs[col] = b;
        s->blob_lens[col] = n;
    }
    *len = s->blob_lens[col];
    return s->blobs[col];
}

static int64_t pg_affected_rows(sqllock_stmt *s)
{
    const char *n = s->res != NULL ? PQcmdTuples(s->res) : "";

    return n[0] ? strtoll(n, NULL, 10) : 0;
}

/* Runs a statement without parameters (the DDL script, transaction
 * control) with the simple query protocol. A script of several statements
 * runs in one implicit transaction. */
static int pg_simple_result(sqllock_conn *c, const char *sql,
                            PGresult **out, sqllock_dberr *err)
{
    int rc = check_usable(c, err);

    if (rc != SQLLOCK_OK)
        return rc;
    return expect_result(c, PQsendQuery(c->pg, sql), PGRES_COMMAND_OK,
                         PGRES_TUPLES_OK, out, err);
}

static int pg_simple(sqllock_conn *c, const char *sql, sqllock_dberr *err)
{
    return pg_simple_result(c, sql, NULL, err);
}

static int pg_exec_script(sqllock_conn *c, const char *sql, sqllock_dberr *err)
{
    return pg_simple(c, sql, err);
}

static int pg_begin(sqllock_conn *c, sqllock_dberr *err)
{
    return pg_simple(c, "BEGIN", err);
}

static int pg_commit(sqllock_conn *c, sqllock_dberr *err)
{
    PGresult *res;
    int rc = SQLLOCK_OK;

    /* After a failed statement PostgreSQL has aborted the transaction and
     * answers COMMIT with a rollback: that must not read as success. */
    if (PQtransactionStatus(c->pg) == PQTRANS_INERROR) {
        rc = pg_simple(c, "ROLLBACK", err);
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

static int pg_rollback(sqllock_conn *c, sqllock_dberr *err)
{
    return pg_simple(c, "ROLLBACK", err);
}

static int64_t pg_insert_id(sqllock_stmt *s)
{
    return 0;         /* PostgreSQL returns generated values by RETURNING */
}

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

static int pg_listen(sqllock_conn *c, const char *channel, int on,
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
    rc = pg_simple(c, sql, err);
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
static int pg_wait_notify(sqllock_conn *c, int64_t timeout_ms, int *woke,
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

static void *pg_native(sqllock_conn *c)
{
    return c->pg;
}

static const char *const postgres_schemes[] = { "postgres", "postgresql",
                                                NULL };

const sqllock_driver sqllock__postgres_driver = {
    .version = SQLLOCK_DRIVER_VERSION,
    .name = "postgres",
    .schemes = postgres_schemes,
    .caps = SQLLOCK_CAP_RETURNING | SQLLOCK_CAP_SKIP_LOCKED |
            SQLLOCK_CAP_NOWAIT | SQLLOCK_CAP_NOTIFY,
    .dialect = &postgres_dialect,
    .connect = pg_connect,
    .disconnect = pg_disconnect,
    .prepare = pg_prepare,
    .finalize = pg_finalize,
    .execute = pg_execute,
    .fetch = pg_fetch,
    .column_int64 = pg_column_int64,
    .column_text = pg_column_text,
    .affected_rows = pg_affected_rows,
    .reset = pg_reset,
    .exec_script = pg_exec_script,
    .native = pg_native,
    .begin = pg_begin,
    .commit = pg_commit,
    .rollback = pg_rollback,
    .insert_id = pg_insert_id,
    .column_blob = pg_column_blob,
    .listen = pg_listen,
    .wait_notify = pg_wait_notify,
};
