/*
 * db.c -- database handles: open, borrow, close, and the connection.
 *
 * A handle owns one driver connection and the statements prepared on it
 * (stmt.c). When a call finds the connection broken, the connection and
 * its statements are dropped and the next call connects again; the
 * failed call reports the error and is never retried behind the caller's
 * back.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

void sqllock__drop_connection(sqllock_db *db)
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
int sqllock__connect(sqllock_db *db)
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
    /* The first connect is the open's; every later one replaces a
     * connection that was lost. */
    if (db->conn_gen++ > 0)
        sqllock__m_reconnected(db);
    return SQLLOCK_OK;
}

/* Makes sure the handle is connected, connecting again after a loss. */
int sqllock__connected(sqllock_db *db)
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
    return sqllock__connect(db);
}

/* Records a database error; a broken connection is dropped so that the
 * next call reconnects. */
int sqllock__db_error(sqllock_db *db, const sqllock_dberr *err,
                      const char *what)
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
        sqllock__drop_connection(db);
    }
    return rc;
}

/* The client-side bound of a round trip unless the options say
 * otherwise; each bound at most SQLLOCK__MAX_TIMEOUT_MS. */
#define DEFAULT_STATEMENT_TIMEOUT_MS 30000

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
    if (p->connect_timeout_ms > SQLLOCK__MAX_TIMEOUT_MS)
        p->connect_timeout_ms = SQLLOCK__MAX_TIMEOUT_MS;
    if (opts->struct_version < 2)
        return SQLLOCK_OK;
    if (opts->statement_timeout_ms < 0 ||
        opts->statement_timeout_ms > SQLLOCK__MAX_TIMEOUT_MS)
        return sqllock__fail(db, SQLLOCK_EINVAL, "statement_timeout_ms in "
                             "sqllock_options must be 0 (the default, %d "
                             "ms) or 1 to %lld ms (got %lld)",
                             DEFAULT_STATEMENT_TIMEOUT_MS,
                             (long long)SQLLOCK__MAX_TIMEOUT_MS,
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
        char name[32];
        int version = sqllock__scheme_refused(parsed->scheme, name,
                                              sizeof name);

        if (version > 0)
            rc = sqllock__fail(db, SQLLOCK_EUNSUPPORTED,
                               "the driver '%s' for the URL scheme '%s:' "
                               "was built for driver version %d, and this "
                               "library takes version %d and later (the "
                               "counted statement table): build it again "
                               "against this sqllock_driver.h (URL '%s')",
                               name, parsed->scheme, version,
                               SQLLOCK_DRIVER_VERSION_MIN, db->url_redacted);
        else if (sqllock__scheme_known(parsed->scheme))
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
    rc = sqllock__connect(db);
    if (rc != SQLLOCK_OK)
        return rc;
    return sqllock__ok(db);
}

int sqllock_borrow(const char *scheme, void *native,
                   const sqllock_options *opts, sqllock_db **out)
{
    const sqllock_driver *drv;
    char name[32];
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
    if (drv == NULL && sqllock__scheme_refused(scheme, name, sizeof name))
        return sqllock__fail(db, SQLLOCK_EUNSUPPORTED, "sqllock_borrow: "
                             "the driver '%s' for '%.40s' was built for an "
                             "older driver version than %d", name, scheme,
                             SQLLOCK_DRIVER_VERSION_MIN);
    if (drv == NULL)
        return sqllock__fail(db, sqllock__scheme_known(scheme)
                                 ? SQLLOCK_ENOTBUILT : SQLLOCK_ESCHEME,
                             "sqllock_borrow: no driver for '%.40s'%s", scheme,
                             sqllock__scheme_known(scheme) ? " in this copy "
                             "of sqllock" : " (known: sqlite, postgres, "
                             "mysql)");
    if (drv->adopt == NULL)
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
    if (db->renewer != NULL)
        db->renewer_ops->free(db->renewer);
    db->renewer = NULL;
    if (db->drv != NULL)
        sqllock__drop_connection(db);
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

/* The scope of a row lock (sqllock.h): the driver's row_lock_scope()
 * answers per connection; without it, the capability bits do. */
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
    rc = sqllock__connected(db);
    if (rc != SQLLOCK_OK)
        return rc;
    if (db->drv->row_lock_scope != NULL) {
        memset(&err, 0, sizeof err);
        rc = db->drv->row_lock_scope(db->conn, &s, &err);
        if (rc != SQLLOCK_OK) {
            err.status = rc;
            return sqllock__db_error(db, &err, "reading the row-lock scope");
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
