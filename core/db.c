/*
 * db.c -- database handles: open, close, schema, statements, listing.
 *
 * A handle owns one driver connection and the statements prepared on it.
 * Each statement of the dialect is prepared the first time it is needed
 * and kept until the connection closes (DESIGN D1b). When a call finds the
 * connection broken, the connection and its statements are dropped and the
 * next call connects again; the failed call reports the error and is never
 * retried behind the caller's back.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

sqllock_value sqllock__int(int64_t v)
{
    sqllock_value val;

    memset(&val, 0, sizeof val);
    val.type = SQLLOCK_VALUE_INT64;
    val.i = v;
    return val;
}

sqllock_value sqllock__text(const char *s)
{
    sqllock_value val;

    memset(&val, 0, sizeof val);
    if (s == NULL) {
        val.type = SQLLOCK_VALUE_NULL;
        return val;
    }
    val.type = SQLLOCK_VALUE_TEXT;
    val.s = s;
    val.len = strlen(s);
    return val;
}

static void drop_connection(sqllock_db *db)
{
    int i;

    for (i = 0; i < SQLLOCK_SQL_COUNT_; i++) {
        if (db->stmts[i] != NULL) {
            db->drv->finalize(db->stmts[i]);
            db->stmts[i] = NULL;
        }
    }
    for (i = 0; i < SQLLOCK__DYN_CACHE; i++) {
        if (db->dyn[i].stmt != NULL)
            db->drv->finalize(db->dyn[i].stmt);
        free(db->dyn[i].sql);
        db->dyn[i].stmt = NULL;
        db->dyn[i].sql = NULL;
    }
    db->txn_fresh = 0;
    db->no_routine = 0;
    db->no_wake_routine = 0;
    db->no_many_routine = 0;
    db->wake_known = 0;
    if (db->conn != NULL) {
        db->drv->disconnect(db->conn);
        db->conn = NULL;
    }
    db->lock_timeout_ms = -1;
}

/* Connects the handle's driver to its URL. */
static int connect_db(sqllock_db *db)
{
    sqllock_url *url = NULL;
    sqllock_dberr err;
    char why[256];
    int rc;

    rc = sqllock__url_parse(db->url, &url, why, sizeof why);
    if (rc != SQLLOCK_OK)
        return sqllock__fail(db, rc, "bad database URL '%s': %s",
                             db->url_redacted, why);
    memset(&err, 0, sizeof err);
    rc = sqllock__connect_hosts(db, url, &err);
    sqllock__url_free(url);
    if (rc != SQLLOCK_OK) {
        db->conn = NULL;
        if (rc == SQLLOCK_EURL) {
            /* The driver names the parameter it refused, never its
             * value; nor does the URL quoted here (DESIGN C4). */
            char *shown = sqllock__url_redact_params(db->url);

            rc = sqllock__fail(db, rc, "bad database URL '%s': %s",
                               shown != NULL ? shown : db->url_redacted,
                               err.msg);
            free(shown);
            return rc;
        }
        err.status = rc;
        return sqllock__fail_db(db, &err, "connect");
    }
    db->conn_gen++;
    return SQLLOCK_OK;
}

/* Makes sure the handle is connected, connecting again after a loss. */
static int ensure_connected(sqllock_db *db)
{
    if (db->conn != NULL)
        return SQLLOCK_OK;
    if (db->borrowed)
        return sqllock__fail(db, SQLLOCK_ECONNECT, "the borrowed connection "
                             "failed earlier (%s); the library does not "
                             "reconnect the application's connection: "
                             "close this handle, and borrow the "
                             "connection again once the application has "
                             "a working one", db->lost_why[0] != '\0'
                             ? db->lost_why : "lost");
    return connect_db(db);
}

/* Records a database error; a broken connection is dropped so that the
 * next call reconnects. */
static int fail_db(sqllock_db *db, const sqllock_dberr *err, const char *what)
{
    int rc;

    if (err->status == SQLLOCK_ENOSCHEMA) {
        rc = sqllock__fail(db, SQLLOCK_ENOSCHEMA,
                           "%s: %s (%s %s); create the tables first with "
                           "`sqllock init` or sqllock_init()",
                           what, err->msg, db->drv->name, err->code);
    } else {
        rc = sqllock__fail_db(db, err, what);
    }
    if (err->status == SQLLOCK_ECONNECT) {
        if (db->borrowed)
            snprintf(db->lost_why, sizeof db->lost_why, "%.190s", err->msg);
        drop_connection(db);
    }
    return rc;
}

/* The client-side bounds, and the largest value each may take: an
 * int64 of milliseconds far beyond any real wait would overflow the
 * deadlines the drivers compute. */
#define DEFAULT_STATEMENT_TIMEOUT_MS 30000
#define MAX_TIMEOUT_MS ((int64_t)1000 * 86400 * 365 * 100)

/* Copies the options into the connection parameters. `statement_timeout_ms`
 * exists from struct_version 2 on: an older caller's struct ends before it,
 * so it is not read there. */
static int read_options(sqllock_db *db, const sqllock_options *opts)
{
    sqllock_connect_params *p = &db->params;

    p->busy_timeout_ms = 5000;
    p->connect_timeout_ms = 10000;
    p->statement_timeout_ms = DEFAULT_STATEMENT_TIMEOUT_MS;
    p->lock_wait_ms = 0;            /* grown by grow_lock_wait() */
    if (opts == NULL)
        return SQLLOCK_OK;
    if (opts->busy_timeout_ms < 0 || opts->connect_timeout_ms < 0)
        return sqllock__fail(db, SQLLOCK_EINVAL,
                             "timeouts in sqllock_options must not be "
                             "negative");
    if (opts->busy_timeout_ms > 0)
        p->busy_timeout_ms = opts->busy_timeout_ms;
    if (opts->connect_timeout_ms > 0)
        p->connect_timeout_ms = opts->connect_timeout_ms;
    if (p->connect_timeout_ms > MAX_TIMEOUT_MS)
        p->connect_timeout_ms = MAX_TIMEOUT_MS;
    if (opts->struct_version < 2)
        return SQLLOCK_OK;
    if (opts->statement_timeout_ms < 0 ||
        opts->statement_timeout_ms > MAX_TIMEOUT_MS)
        return sqllock__fail(db, SQLLOCK_EINVAL, "statement_timeout_ms in "
                             "sqllock_options must be 0 (the default, %d "
                             "ms) or 1 to %lld ms (got %lld)",
                             DEFAULT_STATEMENT_TIMEOUT_MS,
                             (long long)MAX_TIMEOUT_MS,
                             (long long)opts->statement_timeout_ms);
    if (opts->statement_timeout_ms > 0)
        p->statement_timeout_ms = opts->statement_timeout_ms;
    return SQLLOCK_OK;
}

/* A new handle in *out with its options read (sqllock_open(),
 * sqllock_borrow()). *out is set whenever memory allows, even when the
 * options are refused, so that the caller can read the message. */
static int handle_new(const sqllock_options *opts, sqllock_db **out)
{
    sqllock_db *db;

    if (out == NULL)
        return SQLLOCK_EINVAL;
    *out = NULL;
    db = calloc(1, sizeof *db);
    if (db == NULL)
        return SQLLOCK_ENOMEM;
    *out = db;
    db->lock_timeout_ms = -1;
    return read_options(db, opts);
}

int sqllock_open(const char *url, const sqllock_options *opts,
                 sqllock_db **out)
{
    sqllock_db *db;
    sqllock_url *parsed = NULL;
    char why[256];
    int rc;

    if ((rc = handle_new(opts, out)) != SQLLOCK_OK)
        return rc;
    db = *out;
    if (url == NULL)
        return sqllock__fail(db, SQLLOCK_EINVAL, "the database URL is NULL");
    db->url = malloc(strlen(url) + 1);
    db->url_redacted = sqllock__url_redact(url);
    /* From here on, every message the handle stores is scrubbed of the
     * URL's secrets (DESIGN C4). */
    db->secrets = sqllock__url_secrets(url);
    if (db->url == NULL || db->url_redacted == NULL || db->secrets == NULL)
        return sqllock__fail(db, SQLLOCK_ENOMEM, "out of memory");
    strcpy(db->url, url);

    rc = sqllock__url_parse(url, &parsed, why, sizeof why);
    if (rc != SQLLOCK_OK)
        return sqllock__fail(db, rc, "bad database URL '%s': %s",
                             db->url_redacted, why);
    db->drv = sqllock_driver_find(parsed->scheme);
    if (db->drv == NULL) {
        if (sqllock__scheme_known(parsed->scheme))
            rc = sqllock__fail(db, SQLLOCK_ENOTBUILT,
                               "the %s driver was not built into this copy "
                               "of sqllock (URL '%s')", parsed->scheme,
                               db->url_redacted);
        else
            rc = sqllock__fail(db, SQLLOCK_ESCHEME,
                               "no driver for the URL scheme '%s:' (URL "
                               "'%s'); known schemes: sqlite, postgres, "
                               "postgresql, mysql, mariadb", parsed->scheme,
                               db->url_redacted);
        sqllock__url_free(parsed);
        return rc;
    }
    sqllock__url_free(parsed);
    rc = connect_db(db);
    if (rc != SQLLOCK_OK)
        return rc;
    return sqllock__ok(db);
}

int sqllock_borrow(const char *scheme, void *native,
                   const sqllock_options *opts, sqllock_db **out)
{
    const sqllock_driver *drv;
    sqllock_dberr err;
    sqllock_db *db;
    int rc;

    if ((rc = handle_new(opts, out)) != SQLLOCK_OK)
        return rc;
    db = *out;
    db->borrowed = 1;
    if (scheme == NULL || *scheme == '\0')
        return sqllock__fail(db, SQLLOCK_EINVAL, "sqllock_borrow: the "
                             "driver's scheme is %s (give \"postgres\", "
                             "\"mysql\" or \"sqlite\")",
                             scheme == NULL ? "NULL" : "empty");
    if (native == NULL)
        return sqllock__fail(db, SQLLOCK_EINVAL, "sqllock_borrow: the "
                             "connection is NULL");
    drv = sqllock_driver_find(scheme);
    if (drv == NULL)
        return sqllock__fail(db, sqllock__scheme_known(scheme)
                                 ? SQLLOCK_ENOTBUILT : SQLLOCK_ESCHEME,
                             "sqllock_borrow: no driver for '%.40s'%s", scheme,
                             sqllock__scheme_known(scheme) ? " in this copy "
                             "of sqllock" : " (known: sqlite, postgres, "
                             "mysql)");
    if (drv->version < 5 || drv->adopt == NULL)
        return sqllock__fail(db, SQLLOCK_EUNSUPPORTED, "sqllock_borrow: the "
                             "%s driver cannot use an application's "
                             "connection", drv->name);
    memset(&err, 0, sizeof err);
    rc = drv->adopt(native, &db->params, &db->conn, &err);
    if (rc != SQLLOCK_OK) {
        db->conn = NULL;
        err.status = rc;
        return sqllock__fail_db(db, &err, "sqllock_borrow");
    }
    db->drv = drv;
    return sqllock__ok(db);
}

int sqllock_db_borrowed(const sqllock_db *db)
{
    return db != NULL && db->borrowed;
}

int sqllock__refuse_borrowed(sqllock_db *db, const char *what)
{
    if (!db->borrowed)
        return SQLLOCK_OK;
    return sqllock__fail(db, SQLLOCK_EMISUSE, "%s needs a connection of the "
                         "library's own, and this handle borrows the "
                         "application's (sqllock_borrow()): a lease's grant "
                         "must commit by itself, whatever the "
                         "application's transaction does (contract L10); "
                         "open a handle with sqllock_open() for it", what);
}

void sqllock_close(sqllock_db *db)
{
    if (db == NULL)
        return;
    sqllock__renewer_free(db->renewer);
    db->renewer = NULL;
    if (db->drv != NULL)
        drop_connection(db);
    if (db->url != NULL)
        sqllock__wipe(db->url, strlen(db->url));
    free(db->url);
    free(db->url_redacted);
    sqllock__secrets_free(db->secrets);
    free(db);
}

const char *sqllock_db_driver(const sqllock_db *db)
{
    return db != NULL && db->drv != NULL ? db->drv->name : "";
}

void *sqllock_db_native(sqllock_db *db)
{
    if (db == NULL || db->conn == NULL || db->drv->native == NULL)
        return NULL;
    return db->drv->native(db->conn);
}

/* The scope of a row lock (sqllock.h). Drivers from version 3 may answer
 * per connection; older ones, and drivers without the method, by their
 * capabilities. */
int sqllock_row_lock_scope(sqllock_db *db, int *scope)
{
    sqllock_dberr err;
    int rc, s = 0;

    if (scope != NULL)
        *scope = 0;
    if (db == NULL)
        return SQLLOCK_EINVAL;
    if (scope == NULL)
        return sqllock__fail(db, SQLLOCK_EINVAL, "sqllock_row_lock_scope: "
                             "the output pointer is NULL");
    if (db->drv == NULL) {
        char why[SQLLOCK__ERRMSG_MAX];
        memcpy(why, db->errmsg, sizeof why);
        return sqllock__fail(db, SQLLOCK_EMISUSE, "sqllock_row_lock_scope: "
                             "the handle's open failed: %s", why);
    }
    rc = ensure_connected(db);
    if (rc != SQLLOCK_OK)
        return rc;
    if (db->drv->version >= 3 && db->drv->row_lock_scope != NULL) {
        memset(&err, 0, sizeof err);
        rc = db->drv->row_lock_scope(db->conn, &s, &err);
        if (rc != SQLLOCK_OK) {
            err.status = rc;
            return fail_db(db, &err, "reading the row-lock scope");
        }
        if (s != SQLLOCK_ROW_LOCKS_EXCLUSIVE && s != SQLLOCK_ROW_LOCKS_NODE &&
            s != SQLLOCK_ROW_LOCKS_DATABASE)
            return sqllock__fail(db, SQLLOCK_EDB, "the %s driver reported "
                                 "an unknown row-lock scope %d",
                                 db->drv->name, s);
    } else if (db->drv->caps & SQLLOCK_CAP_DB_LOCK) {
        s = SQLLOCK_ROW_LOCKS_DATABASE;
    } else {
        s = SQLLOCK_ROW_LOCKS_EXCLUSIVE;
    }
    *scope = s;
    return sqllock__ok(db);
}

const char *sqllock_row_lock_scope_name(int scope)
{
    switch (scope) {
    case SQLLOCK_ROW_LOCKS_EXCLUSIVE: return "exclusive";
    case SQLLOCK_ROW_LOCKS_NODE: return "node";
    case SQLLOCK_ROW_LOCKS_DATABASE: return "database";
    default: return "?";
    }
}

int sqllock__can_notify(const sqllock_db *db)
{
    return db->drv != NULL && (db->drv->caps & SQLLOCK_CAP_NOTIFY) &&
           db->drv->version >= 2 && db->drv->listen != NULL &&
           db->drv->wait_notify != NULL;
}

/* The answer depends on the driver (its version-7 statements) and on the
 * connection (the driver's session_wake(): a Galera node, a borrowed
 * connection), so it is worked out once per connect and kept until the
 * connection is dropped; a refused routine (no_wake_routine) is checked
 * every time, as it may be learnt at any call. A failed session_wake()
 * answers 0 for this call and is asked again at the next. */
int sqllock__session_wake(sqllock_db *db, int *usable)
{
    sqllock_sql_id id;
    sqllock_dberr err;
    int rc;

    *usable = 0;
    if (db->drv == NULL || db->drv->version < 7 || db->no_wake_routine)
        return SQLLOCK_OK;
    if (db->conn != NULL && db->wake_known) {
        *usable = db->wake_usable;
        return SQLLOCK_OK;
    }
    for (id = SQLLOCK_SQL_COUNT_V6_; id < SQLLOCK_SQL_COUNT_V7_; id++) {
        const sqllock_sql *sql = sqllock__sql_of(db->drv, id);
        if (sql == NULL || sql->text == NULL) {
            if (db->conn != NULL) {
                db->wake_known = 1;
                db->wake_usable = 0;
            }
            return SQLLOCK_OK;
        }
    }
    rc = ensure_connected(db);
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
    rc = ensure_connected(db);
    if (rc != SQLLOCK_OK)
        return rc;
    memset(&err, 0, sizeof err);
    rc = db->drv->listen(db->conn, channel, on, &err);
    if (rc == SQLLOCK_ECONNECT)
        drop_connection(db);
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
            drop_connection(db);
    } while (rc == SQLLOCK_OK && !*woke && ms > 0);
    return rc;
}

/* Each range of statement ids lives in the dialect array of the driver
 * version that added it, and is read only from a driver of that version
 * on: an older driver's dialect ends before it (sqllock_driver.h). */
typedef char sqllock__sql_v2_is_four[
    SQLLOCK_SQL_COUNT_V2_ - SQLLOCK_SQL_COUNT_V1_ == 4 ? 1 : -1];
typedef char sqllock__sql_v4_is_one[
    SQLLOCK_SQL_COUNT_V4_ - SQLLOCK_SQL_COUNT_V2_ == 1 ? 1 : -1];
typedef char sqllock__sql_v5_is_two[
    SQLLOCK_SQL_COUNT_V5_ - SQLLOCK_SQL_COUNT_V4_ == 2 ? 1 : -1];
typedef char sqllock__sql_v6_is_one[
    SQLLOCK_SQL_COUNT_V6_ - SQLLOCK_SQL_COUNT_V5_ == 1 ? 1 : -1];
typedef char sqllock__sql_v7_is_three[
    SQLLOCK_SQL_COUNT_V7_ - SQLLOCK_SQL_COUNT_V6_ == 3 ? 1 : -1];
typedef char sqllock__sql_v8_is_three[
    SQLLOCK_SQL_COUNT_V8_ - SQLLOCK_SQL_COUNT_V7_ == 3 ? 1 : -1];
typedef char sqllock__sql_v9_is_one[
    SQLLOCK_SQL_COUNT_V9_ - SQLLOCK_SQL_COUNT_V8_ == 1 ? 1 : -1];
typedef char sqllock__sql_v11_is_one[
    SQLLOCK_SQL_COUNT_V11_ - SQLLOCK_SQL_COUNT_V9_ == 1 ? 1 : -1];
typedef char sqllock__sql_v13_is_three[
    SQLLOCK_SQL_COUNT_V13_ - SQLLOCK_SQL_COUNT_V11_ == 3 ? 1 : -1];

const sqllock_sql *sqllock__sql_of(const sqllock_driver *drv, sqllock_sql_id id)
{
    if (id < SQLLOCK_SQL_COUNT_V1_)
        return &drv->dialect->sql[id];
    if (id < SQLLOCK_SQL_COUNT_V2_)
        return drv->version >= 2
                   ? &drv->dialect->sql_v2[id - SQLLOCK_SQL_COUNT_V1_]
                   : NULL;
    if (id < SQLLOCK_SQL_COUNT_V4_)
        return drv->version >= 4
                   ? &drv->dialect->sql_v4[id - SQLLOCK_SQL_COUNT_V2_]
                   : NULL;
    if (id < SQLLOCK_SQL_COUNT_V5_)
        return drv->version >= 5
                   ? &drv->dialect->sql_v5[id - SQLLOCK_SQL_COUNT_V4_]
                   : NULL;
    if (id < SQLLOCK_SQL_COUNT_V6_)
        return drv->version >= 6
                   ? &drv->dialect->sql_v6[id - SQLLOCK_SQL_COUNT_V5_]
                   : NULL;
    if (id < SQLLOCK_SQL_COUNT_V7_)
        return drv->version >= 7
                   ? &drv->dialect->sql_v7[id - SQLLOCK_SQL_COUNT_V6_]
                   : NULL;
    if (id < SQLLOCK_SQL_COUNT_V8_)
        return drv->version >= 8
                   ? &drv->dialect->sql_v8[id - SQLLOCK_SQL_COUNT_V7_]
                   : NULL;
    if (id < SQLLOCK_SQL_COUNT_V9_)
        return drv->version >= 9
                   ? &drv->dialect->sql_v9[id - SQLLOCK_SQL_COUNT_V8_]
                   : NULL;
    if (id < SQLLOCK_SQL_COUNT_V11_)
        return drv->version >= 11
                   ? &drv->dialect->sql_v11[id - SQLLOCK_SQL_COUNT_V9_]
                   : NULL;
    if (id < SQLLOCK_SQL_COUNT_V13_)
        return drv->version >= 13
                   ? &drv->dialect->sql_v13[id - SQLLOCK_SQL_COUNT_V11_]
                   : NULL;
    return NULL;
}

/*
 * Before a row-lock transaction's lock timeout is set: a network driver
 * bounds each round trip by the statement timeout plus the longest lock
 * wait the connection was opened for, so a longer wait than that must not
 * be cut. The bound is fixed when the connection opens (MySQL's read
 * timeout cannot change afterwards), so the connection is opened again
 * with the larger bound, and the transaction begun again. That is safe
 * only while nothing has run in the transaction yet, which is where
 * txn.c sets its timeout (right after BEGIN); anywhere else the shorter
 * bound stays for this connection.
 */
static int grow_lock_wait(sqllock_db *db, int64_t ms, const char *what)
{
    int fresh = db->txn_fresh, rc;

    if (ms > MAX_TIMEOUT_MS)
        ms = MAX_TIMEOUT_MS;
    if (ms <= db->params.lock_wait_ms)
        return ensure_connected(db);
    db->params.lock_wait_ms = ms;
    if (db->conn == NULL || (db->drv->caps & SQLLOCK_CAP_SHARED_HOST) ||
        (db->in_txn && !fresh && !sqllock__txn_pending(db) &&
         !db->begin_pending) ||
        db->borrowed)
        return ensure_connected(db);
    drop_connection(db);
    rc = connect_db(db);
    if (rc == SQLLOCK_OK && fresh)
        rc = sqllock__begin(db, what);
    return rc;
}

_Atomic uint64_t sqllock__statements_sent;

/* Executes `st`; with a deferred BEGIN, BEGIN goes in the same round
 * trip, and stays pending only when it did not run (then the connection
 * is outside any transaction, as before). */
static int execute(sqllock_db *db, sqllock_stmt *st,
                   const sqllock_value *args, int nargs, sqllock_dberr *err)
{
    int in_txn = 0, rc;

    if (!db->begin_pending)
        return db->drv->execute(st, args, nargs, err);
    rc = db->drv->execute_txn(st, args, nargs, SQLLOCK_EXEC_BEGIN, &in_txn,
                              err);
    if (rc == SQLLOCK_OK || in_txn)
        db->begin_pending = 0;
    return rc;
}

int sqllock__can_defer_begin(const sqllock_db *db)
{
    return db->drv->version >= 10 && db->drv->execute_txn != NULL &&
           !db->borrowed;
}

int sqllock__begin_flush(sqllock_db *db, const char *what)
{
    int rc;

    if (!db->begin_pending)
        return SQLLOCK_OK;
    rc = sqllock__begin(db, what);
    if (rc == SQLLOCK_OK)
        db->begin_pending = 0;
    return rc;
}

int sqllock__run(sqllock_db *db, sqllock_sql_id id, const sqllock_value *args,
                 int nargs, const char *what)
{
    const sqllock_sql *sql;
    sqllock_value bound[9];
    sqllock_dberr err;
    int n = 0, rc;

    if (db->drv == NULL)
        return sqllock__fail(db, SQLLOCK_EMISUSE, "%s: the handle has no "
                             "driver (its open failed)", what);
    sql = sqllock__sql_of(db->drv, id);
    if (sql == NULL || sql->text == NULL)
        return sqllock__fail(db, SQLLOCK_EUNSUPPORTED, "%s: the %s driver "
                             "has no statement for this", what, db->drv->name);
    if (id == SQLLOCK_SQL_TXN_LOCK_TIMEOUT && nargs == 1)
        rc = grow_lock_wait(db, args[0].i, what);
    else
        rc = ensure_connected(db);
    db->txn_fresh = 0;
    if (rc != SQLLOCK_OK)
        return rc;
    memset(&err, 0, sizeof err);
    if (db->stmts[id] == NULL) {
        rc = db->drv->prepare(db->conn, sql->text, &db->stmts[id], &err);
        if (rc != SQLLOCK_OK) {
            db->stmts[id] = NULL;
            err.status = rc;
            return fail_db(db, &err, what);
        }
    }
    if (sql->args == NULL) {
        if (nargs > 9)
            return sqllock__fail(db, SQLLOCK_EINVAL, "%s: too many arguments",
                                 what);
        if (nargs > 0)
            memcpy(bound, args, sizeof *args * (size_t)nargs);
        n = nargs;
    } else {
        const char *a;
        for (a = sql->args; *a && n < 9; a++) {
            int k = *a - '1';
            if (k < 0 || k >= nargs)
                return sqllock__fail(db, SQLLOCK_EDB, "%s: the %s dialect "
                                     "binds argument %c, which the core "
                                     "does not pass", what, db->drv->name, *a);
            bound[n++] = args[k];
        }
    }
    atomic_fetch_add_explicit(&sqllock__statements_sent, 1,
                              memory_order_relaxed);
    rc = execute(db, db->stmts[id], bound, n, &err);
    if (rc != SQLLOCK_OK) {
        db->drv->reset(db->stmts[id]);
        err.status = rc;
        return fail_db(db, &err, what);
    }
    return SQLLOCK_OK;
}

/* The cached prepared statement of `sql` (prepared now when it is not
 * in the cache). */
static int dyn_stmt(sqllock_db *db, const char *sql, const char *what,
                    sqllock_stmt **out)
{
    sqllock__dyn *slot = NULL;
    sqllock_dberr err;
    int i, rc;

    *out = NULL;
    if (db->drv == NULL)
        return sqllock__fail(db, SQLLOCK_EMISUSE, "%s: the handle has no "
                             "driver (its open failed)", what);
    rc = ensure_connected(db);
    if (rc != SQLLOCK_OK)
        return rc;
    db->txn_fresh = 0;
    for (i = 0; i < SQLLOCK__DYN_CACHE; i++) {
        if (db->dyn[i].sql != NULL && strcmp(db->dyn[i].sql, sql) == 0) {
            slot = &db->dyn[i];
            break;
        }
    }
    memset(&err, 0, sizeof err);
    if (slot == NULL) {
        /* Take an empty slot, or the least recently used one. */
        slot = &db->dyn[0];
        for (i = 0; i < SQLLOCK__DYN_CACHE; i++) {
            if (db->dyn[i].sql == NULL) {
                slot = &db->dyn[i];
                break;
            }
            if (db->dyn[i].used < slot->used)
                slot = &db->dyn[i];
        }
        if (slot->stmt != NULL)
            db->drv->finalize(slot->stmt);
        free(slot->sql);
        slot->stmt = NULL;
        slot->sql = malloc(strlen(sql) + 1);
        if (slot->sql == NULL)
            return sqllock__fail(db, SQLLOCK_ENOMEM, "%s: out of memory", what);
        strcpy(slot->sql, sql);
        rc = db->drv->prepare(db->conn, sql, &slot->stmt, &err);
        if (rc != SQLLOCK_OK) {
            free(slot->sql);
            slot->sql = NULL;
            slot->stmt = NULL;
            err.status = rc;
            /* A missing table here is the application's, so no hint to
             * create the sqllock schema. */
            if (rc == SQLLOCK_ENOSCHEMA)
                return sqllock__fail_db(db, &err, what);
            return fail_db(db, &err, what);
        }
    }
    slot->used = ++db->dyn_clock;
    *out = slot->stmt;
    return SQLLOCK_OK;
}

int sqllock__run_dyn(sqllock_db *db, const char *sql, const sqllock_value *args,
                     int nargs, const char *what, sqllock_stmt **out)
{
    sqllock_stmt *st = NULL;
    sqllock_dberr err;
    int rc;

    *out = NULL;
    rc = dyn_stmt(db, sql, what, &st);
    if (rc != SQLLOCK_OK)
        return rc;
    memset(&err, 0, sizeof err);
    atomic_fetch_add_explicit(&sqllock__statements_sent, 1,
                              memory_order_relaxed);
    rc = execute(db, st, args, nargs, &err);
    if (rc != SQLLOCK_OK) {
        db->drv->reset(st);
        err.status = rc;
        return fail_db(db, &err, what);
    }
    *out = st;
    return SQLLOCK_OK;
}

int sqllock__run_dyn_commit(sqllock_db *db, const char *sql,
                            const sqllock_value *args, int nargs,
                            int64_t *affected, const char *what)
{
    sqllock_stmt *st = NULL;
    sqllock_dberr err;
    unsigned with = SQLLOCK_EXEC_COMMIT;
    int in_txn = 0, rc;

    if (affected != NULL)
        *affected = 0;
    if (!sqllock__can_defer_begin(db)) {
        /* The statement, then COMMIT: two round trips. */
        rc = sqllock__run_dyn(db, sql, args, nargs, what, &st);
        if (rc != SQLLOCK_OK)
            return rc;
        if (affected != NULL)
            *affected = db->drv->affected_rows(st);
        db->drv->reset(st);
        return sqllock__commit(db, "committing");
    }
    rc = dyn_stmt(db, sql, what, &st);
    if (rc != SQLLOCK_OK)
        return rc;
    if (db->begin_pending)
        with |= SQLLOCK_EXEC_BEGIN;
    memset(&err, 0, sizeof err);
    rc = db->drv->execute_txn(st, args, nargs, with, &in_txn, &err);
    if (rc == SQLLOCK_OK || in_txn)
        db->begin_pending = 0;
    if (rc != SQLLOCK_OK) {
        db->drv->reset(st);
        err.status = rc;
        return fail_db(db, &err, what);
    }
    if (affected != NULL)
        *affected = db->drv->affected_rows(st);
    db->drv->reset(st);
    return SQLLOCK_OK;
}

int sqllock__fetch_dyn(sqllock_db *db, sqllock_stmt *st, int *has_row,
                       const char *what)
{
    sqllock_dberr err;
    int rc;

    memset(&err, 0, sizeof err);
    rc = db->drv->fetch(st, has_row, &err);
    if (rc != SQLLOCK_OK) {
        *has_row = 0;
        db->drv->reset(st);
        err.status = rc;
        return fail_db(db, &err, what);
    }
    return SQLLOCK_OK;
}

int sqllock__fetch(sqllock_db *db, sqllock_sql_id id, int *has_row,
                   const char *what)
{
    sqllock_dberr err;
    int rc;

    memset(&err, 0, sizeof err);
    rc = db->drv->fetch(db->stmts[id], has_row, &err);
    if (rc != SQLLOCK_OK) {
        *has_row = 0;
        db->drv->reset(db->stmts[id]);
        err.status = rc;
        return fail_db(db, &err, what);
    }
    return SQLLOCK_OK;
}

void sqllock__end(sqllock_db *db, sqllock_sql_id id)
{
    if (db->stmts[id] != NULL)
        db->drv->reset(db->stmts[id]);
}

int sqllock__begin(sqllock_db *db, const char *what)
{
    sqllock_dberr err;
    int rc;

    if (db->drv->begin == NULL)
        return sqllock__fail(db, SQLLOCK_EUNSUPPORTED, "%s: the %s driver "
                             "has no transactions", what, db->drv->name);
    rc = ensure_connected(db);
    if (rc != SQLLOCK_OK)
        return rc;
    memset(&err, 0, sizeof err);
    atomic_fetch_add_explicit(&sqllock__statements_sent, 1,
                              memory_order_relaxed);
    rc = db->drv->begin(db->conn, &err);
    if (rc != SQLLOCK_OK) {
        err.status = rc;
        return fail_db(db, &err, what);
    }
    db->txn_fresh = 1;
    return SQLLOCK_OK;
}

int sqllock__commit(sqllock_db *db, const char *what)
{
    sqllock_dberr err;
    int rc;

    if (db->begin_pending) {
        /* Nothing was sent: nothing to commit. */
        db->begin_pending = 0;
        return SQLLOCK_OK;
    }
    if (db->conn == NULL)
        return sqllock__fail(db, SQLLOCK_ECONNECT, "%s: the connection was "
                             "lost before the commit", what);
    memset(&err, 0, sizeof err);
    atomic_fetch_add_explicit(&sqllock__statements_sent, 1,
                              memory_order_relaxed);
    rc = db->drv->commit(db->conn, &err);
    if (rc != SQLLOCK_OK) {
        err.status = rc;
        return fail_db(db, &err, what);
    }
    return SQLLOCK_OK;
}

void sqllock__rollback(sqllock_db *db)
{
    sqllock_dberr err;

    if (db->begin_pending) {
        db->begin_pending = 0;   /* nothing was sent: nothing to undo */
        return;
    }
    if (db->conn == NULL || db->drv->rollback == NULL)
        return;
    memset(&err, 0, sizeof err);
    atomic_fetch_add_explicit(&sqllock__statements_sent, 1,
                              memory_order_relaxed);
    if (db->drv->rollback(db->conn, &err) == SQLLOCK_ECONNECT)
        drop_connection(db);
}

int sqllock__exec_sql(sqllock_db *db, const char *sql,
                      const sqllock_value *args, int nargs, int *has_row,
                      int64_t *first, int64_t *affected)
{
    sqllock_stmt *stmt = NULL;
    sqllock_dberr err;
    int rc, row = 0;

    if (db == NULL || sql == NULL)
        return SQLLOCK_EINVAL;
    if (db->drv == NULL)
        return sqllock__fail(db, SQLLOCK_EMISUSE, "the handle has no driver");
    rc = ensure_connected(db);
    if (rc != SQLLOCK_OK)
        return rc;
    memset(&err, 0, sizeof err);
    rc = db->drv->prepare(db->conn, sql, &stmt, &err);
    if (rc == SQLLOCK_OK)
        rc = execute(db, stmt, args, nargs, &err);
    if (rc == SQLLOCK_OK)
        rc = db->drv->fetch(stmt, &row, &err);
    if (rc == SQLLOCK_OK) {
        if (has_row != NULL)
            *has_row = row;
        if (first != NULL)
            *first = row ? db->drv->column_int64(stmt, 0) : 0;
        if (affected != NULL)
            *affected = db->drv->affected_rows(stmt);
    }
    if (stmt != NULL) {
        db->drv->reset(stmt);
        db->drv->finalize(stmt);
    }
    if (rc != SQLLOCK_OK) {
        err.status = rc;
        return fail_db(db, &err, "statement failed");
    }
    return sqllock__ok(db);
}

/* Reads the schema version; *version is 0 when the schema table is
 * missing. */
static int read_schema_version(sqllock_db *db, int64_t *version)
{
    int rc, has_row = 0;

    *version = 0;
    rc = sqllock__run(db, SQLLOCK_SQL_SCHEMA_VERSION, NULL, 0,
                      "reading the schema version");
    if (rc == SQLLOCK_ENOSCHEMA)
        return SQLLOCK_OK;
    if (rc != SQLLOCK_OK)
        return rc;
    rc = sqllock__fetch(db, SQLLOCK_SQL_SCHEMA_VERSION, &has_row,
                        "reading the schema version");
    if (rc == SQLLOCK_OK && has_row)
        *version = db->drv->column_int64(db->stmts[SQLLOCK_SQL_SCHEMA_VERSION], 0);
    sqllock__end(db, SQLLOCK_SQL_SCHEMA_VERSION);
    return rc;
}

/* What a current schema may still lack (the driver's upgrade(), version
 * 6: MySQL's one-round-trip acquire routine). */
static int upgrade(sqllock_db *db)
{
    sqllock_dberr err;
    int rc;

    if (db->drv->version < 6 || db->drv->upgrade == NULL)
        return sqllock__ok(db);
    if ((rc = ensure_connected(db)) != SQLLOCK_OK)
        return rc;
    memset(&err, 0, sizeof err);
    rc = db->drv->upgrade(db->conn, &err);
    if (rc != SQLLOCK_OK) {
        err.status = rc;
        return fail_db(db, &err, "upgrading the sqllock schema");
    }
    db->no_routine = 0;
    db->no_wake_routine = 0;
    db->no_many_routine = 0;
    return sqllock__ok(db);
}

int sqllock_init(sqllock_db *db)
{
    sqllock_dberr err;
    int64_t version;
    int rc;

    if (db == NULL)
        return SQLLOCK_EINVAL;
    if (db->drv == NULL) {
        char why[SQLLOCK__ERRMSG_MAX];
        /* The reason is in the buffer being written: copy it first. */
        memcpy(why, db->errmsg, sizeof why);
        return sqllock__fail(db, SQLLOCK_EMISUSE, "sqllock_init: the "
                             "handle's open failed: %s", why);
    }
    if ((rc = sqllock__refuse_borrowed(db, "sqllock_init")) != SQLLOCK_OK)
        return rc;
    rc = read_schema_version(db, &version);
    if (rc != SQLLOCK_OK)
        return rc;
    if (version > SQLLOCK_SCHEMA_VERSION)
        return sqllock__fail(db, SQLLOCK_ESCHEMAVER, "the database has "
                             "sqllock schema version %lld; this library "
                             "knows versions up to %d", (long long)version,
                             SQLLOCK_SCHEMA_VERSION);
    /* A current version row means the whole script ran once (the row is
     * its last statement): nothing to do. Skipping it keeps init within
     * the run-time grants (DESIGN S2: an application with only SELECT,
     * INSERT, UPDATE and DELETE may call it at every start), and keeps
     * the script's DDL locks (on PostgreSQL, CREATE INDEX IF NOT EXISTS
     * locks the lease table against writes) off a live lock table. */
    if (version == SQLLOCK_SCHEMA_VERSION)
        return upgrade(db);
    rc = ensure_connected(db);
    if (rc != SQLLOCK_OK)
        return rc;
    /* The script is idempotent (CREATE ... IF NOT EXISTS, inserts that
     * ignore existing rows), so running it over a complete schema, or from
     * several processes at once, changes nothing. */
    memset(&err, 0, sizeof err);
    rc = db->drv->exec_script(db->conn, db->drv->dialect->schema, &err);
    if (rc != SQLLOCK_OK) {
        err.status = rc;
        return fail_db(db, &err, "creating the sqllock schema");
    }
    rc = read_schema_version(db, &version);
    if (rc != SQLLOCK_OK)
        return rc;
    if (version != SQLLOCK_SCHEMA_VERSION)
        return sqllock__fail(db, SQLLOCK_ESCHEMAVER, "after creating the "
                             "schema its version reads %lld, not %d",
                             (long long)version, SQLLOCK_SCHEMA_VERSION);
    return upgrade(db);
}

/* Runs LEASE_LIST or LEASE_RANGE and hands each row to `cb` until it
 * returns non-zero (then returned). */
static int lease_rows(sqllock_db *db, sqllock_sql_id id,
                      const sqllock_value *args, int nargs,
                      int (*cb)(void *ctx, const sqllock_lease_info *),
                      void *ctx, const char *what)
{
    sqllock_stmt *st;
    int rc, has_row = 0, stop = 0;

    rc = sqllock__run(db, id, args, nargs, what);
    if (rc != SQLLOCK_OK)
        return rc;
    st = db->stmts[id];
    for (;;) {
        sqllock_lease_info info;

        rc = sqllock__fetch(db, id, &has_row, what);
        if (rc != SQLLOCK_OK)
            return rc;
        if (!has_row)
            break;
        info.name = db->drv->column_text(st, 0);
        info.owner = db->drv->column_text(st, 1);
        info.holder = db->drv->column_text(st, 2);
        info.token = db->drv->column_int64(st, 3);
        info.acquired_at_ms = db->drv->column_int64(st, 4);
        info.expires_at_ms = db->drv->column_int64(st, 5);
        info.remaining_ms = db->drv->column_int64(st, 6);
        stop = cb(ctx, &info);
        if (stop != 0)
            break;
    }
    sqllock__end(db, id);
    sqllock__ok(db);
    return stop;
}

int sqllock_list(sqllock_db *db,
                 int (*cb)(void *ctx, const sqllock_lease_info *), void *ctx)
{
    int rc;

    if (db == NULL)
        return SQLLOCK_EINVAL;
    if (cb == NULL)
        return sqllock__fail(db, SQLLOCK_EINVAL, "sqllock_list: the callback "
                             "is NULL");
    if ((rc = sqllock__refuse_borrowed(db, "sqllock_list")) != SQLLOCK_OK)
        return rc;
    return lease_rows(db, SQLLOCK_SQL_LEASE_LIST, NULL, 0, cb, ctx,
                      "listing leases");
}

int sqllock__lease_range(sqllock_db *db, const char *lo, const char *hi,
                         int (*cb)(void *ctx, const sqllock_lease_info *),
                         void *ctx, const char *what)
{
    sqllock_value args[2];
    int rc;

    if ((rc = sqllock__refuse_borrowed(db, what)) != SQLLOCK_OK)
        return rc;
    args[0] = sqllock__text(lo);
    args[1] = sqllock__text(hi);
    return lease_rows(db, SQLLOCK_SQL_LEASE_RANGE, args, 2, cb, ctx, what);
}

typedef struct get_ctx {
    const char *name;
    sqllock_lease_info *info;
    char *buf;          /* owner, holder (copied: the row's texts end with
                           the statement) */
    int found;
} get_ctx;

static int get_row(void *ctx, const sqllock_lease_info *in)
{
    get_ctx *g = ctx;

    if (strcmp(in->name, g->name) != 0)
        return 0;
    *g->info = *in;
    g->info->name = g->name;
    snprintf(g->buf, SQLLOCK_OWNER_LEN + 1, "%s", in->owner);
    snprintf(g->buf + SQLLOCK_OWNER_LEN + 1, SQLLOCK_HOLDER_MAX + 1, "%s",
             in->holder);
    g->info->owner = g->buf;
    g->info->holder = g->buf + SQLLOCK_OWNER_LEN + 1;
    g->found = 1;
    return -1;          /* no status: told apart from an error's */
}

int sqllock__lease_get(sqllock_db *db, const char *name,
                       sqllock_lease_info *info,
                       char buf[SQLLOCK__LEASE_GET_BUF], int *found,
                       const char *what)
{
    char hi[SQLLOCK__DERIVED_MAX + 2];
    get_ctx g;
    int rc;
    size_t len = strlen(name);

    *found = 0;
    if (len > SQLLOCK__DERIVED_MAX)
        return sqllock__fail(db, SQLLOCK_EINVAL, "%s: the name is too long",
                             what);
    memcpy(hi, name, len);
    hi[len] = '\x01';        /* names have no control characters */
    hi[len + 1] = '\0';
    memset(info, 0, sizeof *info);
    g.name = name;
    g.info = info;
    g.buf = buf;
    g.found = 0;
    rc = sqllock__lease_range(db, name, hi, get_row, &g, what);
    if (rc > 0)
        return rc;      /* the statement failed: not "no row" */
    *found = g.found;
    return sqllock__ok(db);
}
