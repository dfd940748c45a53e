/*
 * my_conn.c -- connecting: the client library's options, the connect to
 * the one host the core hands over (core/failover.c tries a list's hosts
 * in turn), and the session set-up after it.
 */
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "my.h"

/* The client library's global set-up runs once per process, before the
 * first mysql_init(), so that threads connecting at once do not race it.
 * The library keeps what it allocates there until the process ends. */
static pthread_once_t library_once = PTHREAD_ONCE_INIT;
static int library_rc;     /* written once, inside pthread_once */

static void library_init(void)
{
    library_rc = mysql_library_init(0, NULL, NULL);
}

/*
 * How long one read or write on the socket may take before the client
 * gives up and reports the connection lost, so that a server or network
 * that stalls never blocks a caller forever: sqllock_options'
 * statement_timeout_ms plus the longest row-lock wait the handle has asked
 * for (innodb_lock_wait_timeout, which the core sets per transaction; the
 * server ends that wait itself, so it must not be cut), each in whole
 * seconds rounded up, at least 1. The client library takes the value at
 * the connect only (set later, it has no effect: measured), which is why
 * the core connects again when a transaction wants a longer lock wait.
 * MariaDB Connector/C 3.3.20 gives up after this time, once (measured
 * through a proxy that holds every byte: READ_TIMEOUT=1, 2 and 3 end
 * mysql_query() and mysql_stmt_execute() after 1.0, 2.0 and 3.0 s, and
 * the connect's handshake ends after CONNECT_TIMEOUT). Oracle's
 * libmysqlclient documents that it tries a read up to three times, so
 * there the bound is up to three times this (not measured here).
 */
static unsigned int io_timeout_s(const sqllock_connect_params *p)
{
    int64_t s = (p->statement_timeout_ms + 999) / 1000 +
                (p->lock_wait_ms + 999) / 1000;

    if (s < 1)
        s = 1;
    return s > INT_MAX ? (unsigned int)INT_MAX : (unsigned int)s;
}

/* Sets the options every connection gets (see the file comment). */
static int set_options(MYSQL *my, const sqllock_connect_params *p,
                       const my_target *t, sqllock_dberr *err)
{
    int64_t connect_s = (p->connect_timeout_ms + 999) / 1000;
    unsigned int connect_timeout, io_timeout = io_timeout_s(p);
    int rc;

    if (connect_s < 1)
        connect_s = 1;
    if (connect_s > INT_MAX)
        connect_s = INT_MAX;
    connect_timeout = (unsigned int)connect_s;
    rc = sqllock__my_set_option(my, MYSQL_OPT_CONNECT_TIMEOUT,
                                &connect_timeout, "CONNECT_TIMEOUT", err);
    if (rc == SQLLOCK_OK)
        rc = sqllock__my_set_option(my, MYSQL_OPT_READ_TIMEOUT, &io_timeout,
                                    "READ_TIMEOUT", err);
    if (rc == SQLLOCK_OK)
        rc = sqllock__my_set_option(my, MYSQL_OPT_WRITE_TIMEOUT, &io_timeout,
                                    "WRITE_TIMEOUT", err);
    if (rc == SQLLOCK_OK)
        rc = sqllock__my_set_option(my, MYSQL_SET_CHARSET_NAME, "utf8mb4",
                                    "SET_CHARSET_NAME", err);
#if defined(MARIADB_PACKAGE_VERSION)
    /* Off is the default; say so, since a reconnect behind the core's back
     * could run a statement again. (MySQL 8.0.34 deprecates the option
     * and prints a warning when it is set, so it is left alone there.) */
    if (rc == SQLLOCK_OK) {
        my_flag off = 0;
        rc = sqllock__my_set_option(my, MYSQL_OPT_RECONNECT, &off,
                                    "RECONNECT", err);
    }
#endif
    if (rc == SQLLOCK_OK)
        rc = sqllock__my_set_tls(my, t, err);
    return rc;
}

/* Reads the second column of the row whose first column is `name` from
 * a SHOW statement's result into val[size]; *found says whether there
 * was one. */
static int show_values(MYSQL *my, const char *sql, int n,
                       const char *const *names, char (*vals)[32],
                       int *found, sqllock_dberr *err, const char *context)
{
    MYSQL_RES *res;
    MYSQL_ROW row;
    int i;

    for (i = 0; i < n; i++) {
        found[i] = 0;
        vals[i][0] = '\0';
    }
    /* A Galera node outside the primary component whose wsrep_sync_wait
     * covers SHOW (8; 15 is a common "safe" value) answers it with 1205
     * once its causality wait runs out, not with 1047: a node of no use
     * all the same, so a failed connect (ECONNECT), and a host list goes
     * on to its next host (test_galnet's partition). */
    if (mysql_real_query(my, sql, (unsigned long)strlen(sql)) != 0 ||
        (res = mysql_store_result(my)) == NULL) {
        int rc = sqllock__my_fail_conn(my, err, context);

        if (mysql_errno(my) == 1205)
            rc = err->status = SQLLOCK_ECONNECT;
        return rc;
    }
    if (mysql_num_fields(res) >= 2) {
        while ((row = mysql_fetch_row(res)) != NULL) {
            for (i = 0; i < n; i++) {
                if (row[0] == NULL || strcasecmp(row[0], names[i]) != 0)
                    continue;
                snprintf(vals[i], sizeof vals[i], "%s",
                         row[1] != NULL ? row[1] : "");
                found[i] = 1;
            }
        }
    }
    mysql_free_result(res);
    return SQLLOCK_OK;
}

static int show_value(MYSQL *my, const char *sql, const char *name,
                      char *val, size_t size, int *found, sqllock_dberr *err,
                      const char *context)
{
    char vals[1][32];
    int rc = show_values(my, sql, 1, &name, vals, found, err, context);

    snprintf(val, size, "%s", vals[0]);
    return rc;
}

/* The session variable that holds the isolation level: MySQL named it
 * transaction_isolation in 5.7.20 (and dropped tx_isolation in 8.0),
 * MariaDB in 11.1 (keeping tx_isolation). */
static const char *isolation_var(MYSQL *my)
{
    const char *info = mysql_get_server_info(my);
    unsigned long v = mysql_get_server_version(my);

    if (info != NULL && strstr(info, "MariaDB") != NULL)
        return v >= 110100 ? "transaction_isolation" : "tx_isolation";
    return v >= 50720 ? "transaction_isolation" : "tx_isolation";
}

/*
 * Sets the session up after the connect, and learns whether the server is
 * a Galera cluster node. On a plain server that costs two round trips, as
 * before Galera support: one SET for the time zone, the isolation level
 * and autocommit (the isolation level set through its variable, whose
 * name the server's version gives; should the server not know it, error
 * 1193, two statements run instead), and SHOW
 * VARIABLES LIKE 'wsrep_on', which MySQL 8.0 runs too and answers with no
 * row (D4). On a Galera node (wsrep_on ON) a third, SHOW STATUS LIKE
 * 'wsrep_ready', says whether the node is in the primary component; a
 * node that is not would refuse every statement with error 1047, so the
 * connect reports it as a failed connect (SQLLOCK_ECONNECT) and a host
 * list goes on to its next host. SET and SHOW are the statements such a
 * node still runs.
 *
 * sql_mode (DESIGN D5): the statements do not depend on it -- literals
 * in single quotes, CONCAT(), CHAR(10), no backslash -- but a stored
 * routine is parsed, and keeps, the sql_mode of the session that creates
 * it, and MariaDB's sql_mode=ORACLE (or MSSQL, DB2, ...) changes the
 * syntax of routines: `sqllock init` failed with error 1064 on a server
 * whose default was ORACLE. So the library's sessions have a known one,
 * the defaults MySQL 8.0 and MariaDB 10.11 share (MY_SQL_MODE).
 *
 * autocommit = 1 undoes a server's autocommit=0 and an init_connect that
 * turns it off (both run before this SET), so that the statements the
 * core runs outside its own transactions commit on their own (DESIGN C2).
 * Whatever turns it off later, or opens a transaction behind the
 * driver's back (a proxy, the application through the native handle), is
 * caught by sqllock__my_check_committed() and sqllock__my_begin().
 */
static int after_connect(sqllock_conn *c, const my_target *t,
                         sqllock_dberr *err)
{
    MYSQL *my = c->my;
    static const char *const vars[2] = {"wsrep_on",
                                        "innodb_flush_log_at_trx_commit"};
    const char *q;
    char sql[256], val[32], vals[2][32];
    int found = 0, got[2], rc;

    if ((t->ssl == MY_SSL_REQUIRED || t->ssl == MY_SSL_VERIFY_CA ||
         t->ssl == MY_SSL_VERIFY_IDENTITY) &&
        mysql_get_ssl_cipher(my) == NULL)
        return sqllock_dberr_set(err, SQLLOCK_ECONNECT, "", "ssl_mode=%s "
                                 "asks for TLS, but the connection does not "
                                 "use it (the server offers no TLS)",
                                 sqllock__my_ssl_mode_name(t->ssl));
    /* The lease statements read the affected-row count of INSERT ... ON
     * DUPLICATE KEY UPDATE (1 inserted, 2 taken over, 0 held), and the
     * acquire routines ROW_COUNT(), which count a held row as 1 with
     * CLIENT_FOUND_ROWS. connect_host() never asks for it (client flags
     * 0), and the client reads no option file that could; should one
     * ever set it, the connection is refused here rather than a held
     * lease granted (DESIGN D5: fail closed). They never run on a
     * borrowed connection, whose flags are the application's. */
    if (my->client_flag & CLIENT_FOUND_ROWS)
        return sqllock_dberr_set(err, SQLLOCK_ECONNECT, "", "the connection "
                                 "has CLIENT_FOUND_ROWS set, under which a "
                                 "held lease would count as granted");
    snprintf(sql, sizeof sql, "SET time_zone = '+00:00', %s = "
             "'READ-COMMITTED', autocommit = 1, sql_mode = '" MY_SQL_MODE "'",
             isolation_var(my));
    if (mysql_real_query(my, sql, (unsigned long)strlen(sql)) != 0) {
        if (mysql_errno(my) != 1193)       /* ER_UNKNOWN_SYSTEM_VARIABLE */
            return sqllock__my_fail_conn(my, err, "setting the session time "
                                         "zone to UTC, READ COMMITTED "
                                         "isolation and autocommit");
        q = sqllock__my_sql_session_tz;
        if (mysql_real_query(my, q, (unsigned long)strlen(q)) != 0)
            return sqllock__my_fail_conn(my, err, "setting the session time "
                                         "zone to UTC and autocommit");
        q = sqllock__my_sql_session_isolation;
        if (mysql_real_query(my, q, (unsigned long)strlen(q)) != 0)
            return sqllock__my_fail_conn(my, err, "setting READ COMMITTED "
                                         "isolation");
    }
    rc = show_values(my, sqllock__my_sql_wsrep_on, 2, vars, vals, got, err,
                     "asking whether the server is a Galera node");
    if (rc != SQLLOCK_OK)
        return rc;
    c->galera = got[0] && strcasecmp(vals[0], "ON") == 0;
    /* DESIGN L10: a grant is only as safe as its commit. With
     * innodb_flush_log_at_trx_commit 0 (or 2) a commit is acknowledged
     * before its log reaches the disk: a crash of the server (of the
     * machine, with 2) forgets the last second or so of grants, and
     * hands their names to a second owner while the first believes it
     * holds them. On a Galera cluster, where MariaDB's own guide
     * recommends 0, a crash of the nodes in quick succession did that:
     * 41-626 of about 2 000 acknowledged commits lost in each of 6 runs,
     * none with 1 (scripts/galera_net.sh, docs/distributed.md). Fail
     * closed: refused unless the URL accepts it (innodb_flush=any). A
     * server that does not say (no such variable) is taken as it is. */
    if (got[1] && strcmp(vals[1], "1") != 0 && !t->innodb_flush_any)
        return sqllock_dberr_set(err, SQLLOCK_EUNSUPPORTED, "", "the "
                                 "server's innodb_flush_log_at_trx_commit is "
                                 "%s, not 1: it acknowledges commits before "
                                 "they are on disk, so a crash%s can forget "
                                 "a granted lock and give it to a second "
                                 "owner; set it to 1%s, or accept that with "
                                 "innodb_flush=any in the URL", vals[1],
                                 c->galera ? " of the cluster's nodes" : "",
                                 c->galera ? " on every node" : "");
    if (!c->galera)
        return SQLLOCK_OK;
    rc = show_value(my, sqllock__my_sql_wsrep_ready, "wsrep_ready", val,
                    sizeof val, &found, err, "asking whether the Galera "
                    "node is ready");
    if (rc != SQLLOCK_OK)
        return rc;
    if (!found || strcasecmp(val, "ON") != 0)
        return sqllock_dberr_set(err, SQLLOCK_ECONNECT, "", "the Galera node "
                                 "is not ready (wsrep_ready %s): it is not "
                                 "part of the cluster's primary component",
                                 found ? val : "missing");
    return SQLLOCK_OK;
}

/*
 * Connects `c` to the target's one host and sets the session up. On
 * failure c->my is closed and NULL, and `err` says why, without naming
 * the host.
 */
static int connect_host(sqllock_conn *c, const sqllock_connect_params *p,
                        const my_target *t, sqllock_dberr *err)
{
    int rc;

    c->galera = 0;
    c->my = mysql_init(NULL);
    if (c->my == NULL)
        return sqllock_dberr_set(err, SQLLOCK_ENOMEM, "", "out of memory "
                                 "(mysql_init)");
    rc = set_options(c->my, p, t, err);
    /* The password (the URL's or the option file's) goes to the client
     * library only, never into a message. */
    /* Client flags 0: never CLIENT_FOUND_ROWS (see after_connect()). */
    if (rc == SQLLOCK_OK &&
        mysql_real_connect(c->my, t->host, t->user, t->password,
                           t->database, t->port, t->socket, 0) == NULL) {
        unsigned int code = mysql_errno(c->my);

        rc = sqllock__my_fail_conn(c->my, err, NULL);
        /* Whatever else goes wrong in a connect (unknown database, too
         * many connections, a TLS failure) is a failed connect; refused
         * credentials and memory keep their own status. */
        if (rc != SQLLOCK_EPERM && rc != SQLLOCK_ENOMEM)
            err->status = rc = SQLLOCK_ECONNECT;
        /* A wrong user or password is by far the likeliest reason, and
         * is said first. But an account created REQUIRE SSL (or X509)
         * that logs in without TLS is refused the same way, 1045, with
         * nothing that says TLS; the server never tells which. */
        if (code == 1045)
            sqllock__my_append(err->msg, sizeof err->msg, "; wrong user or "
                               "password (or the user may not log in from "
                               "this host)");
        if (code == 1045 && (t->ssl == MY_SSL_DEFAULT ||
                             t->ssl == MY_SSL_DISABLED))
            sqllock__my_append(err->msg, sizeof err->msg, "; or the account "
                               "may require TLS: add ssl_mode=REQUIRED (or "
                               "VERIFY_IDENTITY with ssl_ca=...)");
        else if (code == 1045 && t->tls[MY_TLS_CERT] == NULL)
            sqllock__my_append(err->msg, sizeof err->msg, "; or, if the "
                               "account requires a client certificate "
                               "(REQUIRE X509), give ssl_cert= and "
                               "ssl_key=");
        else if (code == 2026)     /* CR_SSL_CONNECTION_ERROR */
            sqllock__my_tls_hint(t, err);
        /* "Can't connect to server on 'h' (111)": the errno of the
         * connect, ECONNREFUSED, or EINPROGRESS (115) from MariaDB
         * Connector/C's non-blocking connect, which a refusal ends the
         * same way. Nothing listens there. */
        else if ((code == 2002 || code == 2003) &&
                 (strstr(err->msg, "(111)") != NULL ||
                  strstr(err->msg, "(115)") != NULL))
            sqllock__my_append(err->msg, sizeof err->msg, "; the server "
                               "refused the connection: it is down, or "
                               "listens on another host or port");
    } else if (rc == SQLLOCK_OK) {
        rc = after_connect(c, t, err);
    }
    if (rc != SQLLOCK_OK) {
        mysql_close(c->my);
        c->my = NULL;
    }
    return rc;
}

/*
 * Connects to the one host the core hands over (a host list is the
 * core's: it calls this for each host in turn and decides, from the
 * status, whether to try the next; core/failover.c). A refused login is
 * SQLLOCK_EPERM, memory SQLLOCK_ENOMEM, every other failure of the
 * connect or the session set-up SQLLOCK_ECONNECT. The message is the
 * client's, with hints; the core adds the host. Through a unix socket
 * (socket=, no host in the URL) the message names the socket itself.
 */
int sqllock__my_connect(const sqllock_url *url,
                        const sqllock_connect_params *p, sqllock_conn **out,
                        sqllock_dberr *err)
{
    sqllock_conn *c;
    my_target t;
    int rc;

    *out = NULL;
    rc = sqllock__my_parse_url(url, &t, err);
    if (rc == SQLLOCK_OK)
        rc = sqllock__my_load_option_file(url, &t, err);
    if (rc == SQLLOCK_OK)
        rc = sqllock__my_tls_mode(&t, err);
    if (rc != SQLLOCK_OK) {
        sqllock__my_target_free(&t);
        return rc;
    }
    if (pthread_once(&library_once, library_init) != 0 || library_rc != 0) {
        sqllock__my_target_free(&t);
        return sqllock_dberr_set(err, SQLLOCK_EDB, "", "the MySQL client "
                                 "library failed to initialise");
    }
    c = calloc(1, sizeof *c);
    if (c == NULL) {
        sqllock__my_target_free(&t);
        return sqllock_dberr_set(err, SQLLOCK_ENOMEM, "", "out of memory");
    }
    c->io_timeout_s = io_timeout_s(p);
    c->statement_ms = p->statement_timeout_ms;
    c->lock_wait_ms = p->lock_wait_ms;
    rc = connect_host(c, p, &t, err);
    if (rc == SQLLOCK_OK) {
        sqllock__my_target_free(&t);
        *out = c;
        return SQLLOCK_OK;
    }
    if (t.socket != NULL) {
        char msg[sizeof err->msg];

        memcpy(msg, err->msg, sizeof msg);
        if (url->nhosts == 0)
            sqllock_dberr_set(err, rc, err->code, "cannot connect to %s "
                              "through the socket %s (database '%s'): %s",
                              url->scheme, t.socket, t.database, msg);
        else
            sqllock_dberr_set(err, rc, err->code, "through the socket %s: "
                              "%s", t.socket, msg);
    }
    sqllock__my_target_free(&t);
    free(c);
    return rc;
}

/*
 * The application's own MYSQL * (sqllock_borrow()). Its session stays as
 * the application set it up: time zone, isolation level, autocommit,
 * timeouts (the driver's bounds on a round trip are the connection's
 * read and write timeouts, which only the application can set, before
 * it connects). The statements a borrowed handle runs do not read the
 * time zone (the guard reads UTC_TIMESTAMP()), and none depends on the
 * client flags the application connected with (CLIENT_FOUND_ROWS: an
 * UPDATE's count is the rows it matched either way, matched_rows() in
 * my_exec.c, and RECORD_CREATE reads an existing key from its
 * duplicate-key error, my_sql.c); the lease statements, which do, are
 * refused on a borrowed handle. One round trip asks
 * whether the server is a Galera node, for sqllock_row_lock_scope().
 */
int sqllock__my_adopt(void *native, const sqllock_connect_params *p,
                      sqllock_conn **out, sqllock_dberr *err)
{
    MYSQL *my = native;
    sqllock_conn *c;
    char val[32];
    int found = 0, rc;

    *out = NULL;
    c = calloc(1, sizeof *c);
    if (c == NULL)
        return sqllock_dberr_set(err, SQLLOCK_ENOMEM, "", "out of memory");
    c->my = my;
    c->borrowed = 1;
    c->statement_ms = p->statement_timeout_ms;
    rc = show_value(my, sqllock__my_sql_wsrep_on, "wsrep_on", val,
                    sizeof val, &found, err, "asking whether the server is "
                    "a Galera node");
    if (rc != SQLLOCK_OK) {
        free(c);
        return rc;
    }
    c->galera = found && strcasecmp(val, "ON") == 0;
    *out = c;
    return SQLLOCK_OK;
}

/* In a transaction, or about to be: with autocommit off, the next
 * statement opens the application's transaction. */
int sqllock__my_txn_status(sqllock_conn *c, int *in_txn, sqllock_dberr *err)
{
    (void)err;
    *in_txn = (c->my->server_status & SERVER_STATUS_IN_TRANS) != 0 ||
              (c->my->server_status & SERVER_STATUS_AUTOCOMMIT) == 0;
    return SQLLOCK_OK;
}

void sqllock__my_disconnect(sqllock_conn *c)
{
    if (c != NULL && c->borrowed) {
        free(c);
        return;
    }
    if (c != NULL) {
        mysql_close(c->my);
        free(c);
    }
}

void *sqllock__my_native(sqllock_conn *c)
{
    return c->my;
}

/* Galera's row locks exclude only the clients of the same node: a
 * conflicting commit through another node fails certification (1213,
 * SQLLOCK_EDEADLOCK) instead of waiting. */
int sqllock__my_row_lock_scope(sqllock_conn *c, int *scope,
                               sqllock_dberr *err)
{
    (void)err;
    *scope = c->galera ? SQLLOCK_ROW_LOCKS_NODE : SQLLOCK_ROW_LOCKS_EXCLUSIVE;
    return SQLLOCK_OK;
}

/*
 * Session-lock wake-ups (LEASE_ACQUIRE_WAKE and the rest) on every connection but a
 * Galera node's: there GET_LOCK is the node's own (waiters on other
 * nodes would never see the holder's lock, and some Galera builds refuse
 * it), so waiters poll.
 */
int sqllock__my_session_wake(sqllock_conn *c, int *usable,
                             sqllock_dberr *err)
{
    (void)err;
    *usable = !c->galera && !c->borrowed;
    return SQLLOCK_OK;
}

/* Creates one routine; another process may create it first (1304, it
 * exists: done). *skip = 1 when this user may not create routines. */
static int create_routine(sqllock_conn *c, const char *sql, int *skip,
                          sqllock_dberr *err)
{
    unsigned code;
    int rc;

    if (mysql_real_query(c->my, sql, (unsigned long)strlen(sql)) == 0)
        return sqllock__my_check_committed(c, err);
    code = mysql_errno(c->my);
    if (code == 1304)                  /* ER_SP_ALREADY_EXISTS */
        return SQLLOCK_OK;
    rc = sqllock__my_classify(code);
    if (rc == SQLLOCK_EPERM || code == 1419 /* ER_BINLOG_CREATE_ROUTINE_
                                               NEED_SUPER */) {
        *skip = 1;
        return SQLLOCK_OK;
    }
    return sqllock__my_fail_conn(c->my, err, "creating the sqllock routines");
}

/*
 * sqllock_init() on a current schema: installs the routines this version
 * calls -- the acquire routine (LEASE_ACQUIRE_ONE), the acquire and
 * release with a companion lock (LEASE_ACQUIRE_WAKE, LEASE_RELEASE_WAKE)
 * the multi-name acquire (LEASE_ACQUIRE_MANY) and a reader's grant
 * (RW_READ_ACQUIRE) -- where this database
 * lacks them. One round trip when they are there.
 * A user without CREATE ROUTINE (or a server that refuses routines) is
 * not an error: the core does without them.
 */
int sqllock__my_upgrade(sqllock_conn *c, sqllock_dberr *err)
{
    static const char *const names[5] = {
        sqllock__my_routine_name, sqllock__my_wake_acquire_name,
        sqllock__my_wake_release_name, sqllock__my_many_name,
        sqllock__my_read_name
    };
    const char *const creates[5] = {
        sqllock__my_sql_routine_create, sqllock__my_sql_wake_acquire_create,
        sqllock__my_sql_wake_release_create, sqllock__my_sql_many_create,
        sqllock__my_sql_read_create
    };
    const char *q = sqllock__my_sql_routines_present;
    MYSQL_RES *res;
    MYSQL_ROW row;
    int have[5] = { 0, 0, 0, 0, 0 }, i, skip = 0, rc = SQLLOCK_OK;

    if (mysql_real_query(c->my, q, (unsigned long)strlen(q)) != 0)
        return sqllock__my_fail_conn(c->my, err, "looking for the sqllock "
                                     "routines");
    res = mysql_store_result(c->my);
    if (res == NULL)
        return sqllock__my_fail_conn(c->my, err, "looking for the sqllock "
                                     "routines");
    while ((row = mysql_fetch_row(res)) != NULL)
        for (i = 0; i < 5; i++)
            if (row[0] != NULL && strcmp(row[0], names[i]) == 0)
                have[i] = 1;
    mysql_free_result(res);
    for (i = 0; i < 5 && rc == SQLLOCK_OK && !skip; i++)
        if (!have[i])
            rc = create_routine(c, creates[i], &skip, err);
    return rc;
}
