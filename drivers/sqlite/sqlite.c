/*
 * sqlite.c -- the SQLite driver (the embedded default).
 *
 * SQLite has no server: every process that opens the file locks it through
 * the file system, and the "server clock" is the clock of the one host the
 * file lives on. The driver sets WAL mode (readers never block the writer),
 * synchronous=FULL (a granted lease survives power loss, DESIGN L10) and a
 * busy timeout, so that SQLITE_BUSY becomes SQLLOCK_EDBBUSY only after the
 * timeout, never a generic error.
 *
 * All of this dialect's SQL is in sq_sql.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "sqllock_driver.h"

/* The dialect: its SQL and statement table (sq_sql.c). */
extern const sqllock_dialect sqllock__sq_dialect;

struct sqllock_conn {
    sqlite3 *db;
    int borrowed;           /* the application's sqlite3 * (adopt()) */
};

struct sqllock_stmt {
    sqlite3 *db;
    sqlite3_stmt *st;
    int row_ready;          /* execute() stepped onto a row not yet fetched */
    int done;               /* the statement has run to its end */
    int64_t changes;
};

static const char *code_name(int rc)
{
    switch (rc & 0xFF) {
    case SQLITE_ERROR: return "SQLITE_ERROR";
    case SQLITE_BUSY: return "SQLITE_BUSY";
    case SQLITE_LOCKED: return "SQLITE_LOCKED";
    case SQLITE_NOMEM: return "SQLITE_NOMEM";
    case SQLITE_READONLY: return "SQLITE_READONLY";
    case SQLITE_IOERR: return "SQLITE_IOERR";
    case SQLITE_CORRUPT: return "SQLITE_CORRUPT";
    case SQLITE_FULL: return "SQLITE_FULL";
    case SQLITE_CANTOPEN: return "SQLITE_CANTOPEN";
    case SQLITE_CONSTRAINT: return "SQLITE_CONSTRAINT";
    case SQLITE_NOTADB: return "SQLITE_NOTADB";
    case SQLITE_PERM: return "SQLITE_PERM";
    case SQLITE_AUTH: return "SQLITE_AUTH";
    default: return "SQLITE_OTHER";
    }
}

/* Classifies a SQLite result code and fills `err` from the connection. */
static int fail(sqlite3 *db, int rc, sqllock_dberr *err, const char *context)
{
    const char *msg = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    int status;

    switch (rc & 0xFF) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
        status = SQLLOCK_EDBBUSY;
        break;
    case SQLITE_READONLY:
    case SQLITE_PERM:
    case SQLITE_AUTH:
        status = SQLLOCK_EPERM;
        break;
    case SQLITE_CANTOPEN:
        status = SQLLOCK_ECONNECT;
        break;
    case SQLITE_FULL:          /* ENOSPC, or max_page_count reached */
        status = SQLLOCK_EFULL;
        break;
    case SQLITE_NOMEM:
        status = SQLLOCK_ENOMEM;
        break;
    case SQLITE_ERROR:
        status = strstr(msg, "no such table") ? SQLLOCK_ENOSCHEMA : SQLLOCK_EDB;
        break;
    default:
        status = SQLLOCK_EDB;
        break;
    }
    if (context != NULL)
        return sqllock_dberr_set(err, status, code_name(rc), "%s: %s",
                                 context, msg);
    return sqllock_dberr_set(err, status, code_name(rc), "%s", msg);
}

/* sqllock_busy_timeout(ms): sets the busy timeout of the connection that
 * runs it and returns ms. A negative ms turns the timeout off (0), as
 * sqlite3_busy_timeout() does; more than INT_MAX ms is cut to INT_MAX. */
static void busy_timeout_func(sqlite3_context *ctx, int argc,
                              sqlite3_value **argv)
{
    sqlite3_int64 ms;

    (void)argc;
    if (sqlite3_value_type(argv[0]) != SQLITE_INTEGER) {
        sqlite3_result_error(ctx, "sqllock_busy_timeout() takes an integer "
                             "number of milliseconds", -1);
        return;
    }
    ms = sqlite3_value_int64(argv[0]);
    if (ms > INT32_MAX)
        ms = INT32_MAX;
    if (ms < 0)
        ms = 0;
    sqlite3_busy_timeout(sqlite3_context_db_handle(ctx), (int)ms);
    sqlite3_result_int64(ctx, ms);
}

static int parse_params(const sqllock_url *url, int64_t *busy_ms,
                        sqllock_dberr *err)
{
    int i;

    for (i = 0; i < url->nparams; i++) {
        if (strcmp(url->keys[i], "busy_timeout") == 0) {
            const char *v = url->values[i];
            int64_t ms = 0;
            /* A bare number is milliseconds, as SQLite counts; a unit
             * ("5s") is read as any sqllock duration. */
            int ok = strspn(v, "0123456789") == strlen(v) && strlen(v) <= 9;
            if (ok)
                ms = strtoll(v, NULL, 10);
            else
                ok = sqllock_parse_duration(v, &ms) == SQLLOCK_OK;
            if (!ok || ms > INT32_MAX)
                /* The value is not quoted: it may be a password pasted
                 * into the wrong parameter (DESIGN C4). */
                return sqllock_dberr_set(err, SQLLOCK_EURL, "", "busy_timeout "
                                         "must be milliseconds or a duration "
                                         "such as 5s (at most %d ms); the "
                                         "value given is not (it is not "
                                         "shown, in case it is a secret)",
                                         INT32_MAX);
            *busy_ms = ms;
        } else {
            return sqllock_dberr_set(err, SQLLOCK_EURL, "", "unknown sqlite "
                                     "URL parameter '%s' (known: "
                                     "busy_timeout)", url->keys[i]);
        }
    }
    return SQLLOCK_OK;
}

static int sq_connect(const sqllock_url *url, const sqllock_connect_params *p,
                      sqllock_conn **out, sqllock_dberr *err)
{
    sqllock_conn *c;
    int64_t busy_ms = p->busy_timeout_ms;
    int rc;

    *out = NULL;
    if (url->has_authority && (url->host != NULL || url->user != NULL ||
                               url->port != 0))
        return sqllock_dberr_set(err, SQLLOCK_EURL, "", "a sqlite URL takes "
                                 "no host: write sqlite:///absolute/path.db "
                                 "or sqlite:relative/path.db");
    if (url->path[0] == '\0')
        return sqllock_dberr_set(err, SQLLOCK_EURL, "", "the sqlite URL has "
                                 "no file path: write "
                                 "sqlite:///absolute/path.db");
    if (strcmp(url->path, ":memory:") == 0 ||
        strncmp(url->path, "file:", 5) == 0)
        return sqllock_dberr_set(err, SQLLOCK_EURL, "", "'%s' is not "
                                 "supported: an in-memory database lives in "
                                 "one connection and cannot lock anything "
                                 "between processes; use a file path",
                                 url->path);
    rc = parse_params(url, &busy_ms, err);
    if (rc != SQLLOCK_OK)
        return rc;
    c = calloc(1, sizeof *c);
    if (c == NULL)
        return sqllock_dberr_set(err, SQLLOCK_ENOMEM, "", "out of memory");
    rc = sqlite3_open_v2(url->path, &c->db,
                         SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
                         SQLITE_OPEN_NOMUTEX, NULL);
    if (rc != SQLITE_OK) {
        char ctx[300];
        snprintf(ctx, sizeof ctx, "cannot open SQLite file '%s'", url->path);
        fail(c->db, rc, err, ctx);
        goto fail;
    }
    sqlite3_extended_result_codes(c->db, 1);
    /* A double-quoted name that matches no column must be an error, not a
     * string literal (SQLite's "double-quoted string" misfeature): the
     * core quotes the application's identifiers with '"', and a
     * misspelled column must not turn a condition into a constant. */
    sqlite3_db_config(c->db, SQLITE_DBCONFIG_DQS_DML, 0, (int *)NULL);
    sqlite3_db_config(c->db, SQLITE_DBCONFIG_DQS_DDL, 0, (int *)NULL);
    sqlite3_busy_timeout(c->db, (int)(busy_ms > INT32_MAX ? INT32_MAX : busy_ms));
    /* Not deterministic: it has an effect, and must run every time. */
    rc = sqlite3_create_function_v2(c->db, "sqllock_busy_timeout", 1,
                                    SQLITE_UTF8, NULL, busy_timeout_func,
                                    NULL, NULL, NULL);
    if (rc != SQLITE_OK) {
        fail(c->db, rc, err, "cannot register sqllock_busy_timeout()");
        goto fail;
    }
    /* WAL may be refused on a read-only file; lock calls then report
     * SQLLOCK_EPERM. Anything else (not a database, I/O) fails here. */
    rc = sqlite3_exec(c->db, "PRAGMA journal_mode = WAL", NULL, NULL, NULL);
    if (rc != SQLITE_OK && (rc & 0xFF) != SQLITE_READONLY) {
        char ctx[300];
        snprintf(ctx, sizeof ctx, "cannot use SQLite file '%s'", url->path);
        fail(c->db, rc, err, ctx);
        goto fail;
    }
    rc = sqlite3_exec(c->db, "PRAGMA synchronous = FULL", NULL, NULL, NULL);
    if (rc != SQLITE_OK) {
        fail(c->db, rc, err, "cannot set synchronous = FULL");
        goto fail;
    }
    *out = c;
    return SQLLOCK_OK;

fail:
    sqlite3_close(c->db);
    free(c);
    return err->status;
}

/*
 * The application's own sqlite3 * (sqllock_borrow()), from the same
 * SQLite library as ours. Its settings stay its own: journal mode,
 * synchronous, busy timeout (changed only for a row-lock wait, and put
 * back), extended result codes, double-quoted strings (off only while
 * our statements are prepared). sqllock_busy_timeout() is registered on
 * it, with no state of ours, so it outlives the handle harmlessly.
 */
static int sq_adopt(void *native, const sqllock_connect_params *p,
                    sqllock_conn **out, sqllock_dberr *err)
{
    sqlite3 *db = native;
    sqllock_conn *c;
    int rc;

    (void)p;
    *out = NULL;
    if (sqlite3_db_filename(db, "main") == NULL)
        return sqllock_dberr_set(err, SQLLOCK_EINVAL, "", "the sqlite3 "
                                 "connection has no main database");
    rc = sqlite3_create_function_v2(db, "sqllock_busy_timeout", 1,
                                    SQLITE_UTF8, NULL, busy_timeout_func,
                                    NULL, NULL, NULL);
    if (rc != SQLITE_OK)
        return fail(db, rc, err, "cannot register sqllock_busy_timeout()");
    c = calloc(1, sizeof *c);
    if (c == NULL)
        return sqllock_dberr_set(err, SQLLOCK_ENOMEM, "", "out of memory");
    c->db = db;
    c->borrowed = 1;
    *out = c;
    return SQLLOCK_OK;
}

static int sq_txn_status(sqllock_conn *c, int *in_txn, sqllock_dberr *err)
{
    (void)err;
    *in_txn = !sqlite3_get_autocommit(c->db);
    return SQLLOCK_OK;
}

static void sq_disconnect(sqllock_conn *c)
{
    if (c != NULL && c->borrowed) {
        free(c);
        return;
    }
    if (c != NULL) {
        sqlite3_close(c->db);
        free(c);
    }
}

static int sq_prepare(sqllock_conn *c, const char *sql, sqllock_stmt **out,
                      sqllock_dberr *err)
{
    sqllock_stmt *s;
    int rc;

    *out = NULL;
    s = calloc(1, sizeof *s);
    if (s == NULL)
        return sqllock_dberr_set(err, SQLLOCK_ENOMEM, "", "out of memory");
    if (c->borrowed) {
        /* The application's connection keeps its own double-quoted-string
         * setting; ours are prepared without the misfeature (see
         * sq_connect()), which is decided at prepare time. */
        int dqs = 0;

        sqlite3_db_config(c->db, SQLITE_DBCONFIG_DQS_DML, -1, &dqs);
        sqlite3_db_config(c->db, SQLITE_DBCONFIG_DQS_DML, 0, (int *)NULL);
        rc = sqlite3_prepare_v3(c->db, sql, -1, SQLITE_PREPARE_PERSISTENT,
                                &s->st, NULL);
        sqlite3_db_config(c->db, SQLITE_DBCONFIG_DQS_DML, dqs, (int *)NULL);
    } else {
        rc = sqlite3_prepare_v3(c->db, sql, -1, SQLITE_PREPARE_PERSISTENT,
                                &s->st, NULL);
    }
    if (rc != SQLITE_OK) {
        free(s);
        return fail(c->db, rc, err, NULL);
    }
    s->db = c->db;
    *out = s;
    return SQLLOCK_OK;
}

static void sq_finalize(sqllock_stmt *s)
{
    if (s != NULL) {
        sqlite3_finalize(s->st);
        free(s);
    }
}

/* Steps once and records where the statement stands. */
static int step(sqllock_stmt *s, sqllock_dberr *err)
{
    int rc = sqlite3_step(s->st);

    if (rc == SQLITE_ROW)
        return SQLLOCK_OK;
    if (rc == SQLITE_DONE) {
        s->done = 1;
        s->changes = sqlite3_changes(s->db);
        return SQLLOCK_OK;
    }
    rc = fail(s->db, rc, err, NULL);
    sqlite3_reset(s->st);
    s->done = 1;
    return rc;
}

static int sq_execute(sqllock_stmt *s, const sqllock_value *args, int nargs,
                      sqllock_dberr *err)
{
    int i, rc = SQLITE_OK;

    sqlite3_reset(s->st);
    sqlite3_clear_bindings(s->st);
    s->row_ready = 0;
    s->done = 0;
    s->changes = 0;
    for (i = 0; i < nargs && rc == SQLITE_OK; i++) {
        switch (args[i].type) {
        case SQLLOCK_VALUE_INT64:
            rc = sqlite3_bind_int64(s->st, i + 1, args[i].i);
            break;
        case SQLLOCK_VALUE_TEXT:
            rc = sqlite3_bind_text(s->st, i + 1, args[i].s, (int)args[i].len,
                                   SQLITE_TRANSIENT);
            break;
        case SQLLOCK_VALUE_BLOB:
            /* A NULL pointer would bind SQL NULL: an empty value is bound
             * as a zero-length blob. */
            rc = sqlite3_bind_blob64(s->st, i + 1,
                                     args[i].len > 0 ? args[i].s : "",
                                     (sqlite3_uint64)args[i].len,
                                     SQLITE_TRANSIENT);
            break;
        default:
            rc = sqlite3_bind_null(s->st, i + 1);
            break;
        }
    }
    if (rc != SQLITE_OK)
        return fail(s->db, rc, err, "binding a parameter");
    rc = step(s, err);
    if (rc == SQLLOCK_OK && !s->done)
        s->row_ready = 1;
    return rc;
}

static int sq_fetch(sqllock_stmt *s, int *has_row, sqllock_dberr *err)
{
    int rc;

    if (s->row_ready) {
        s->row_ready = 0;
        *has_row = 1;
        return SQLLOCK_OK;
    }
    if (s->done) {
        *has_row = 0;
        return SQLLOCK_OK;
    }
    rc = step(s, err);
    *has_row = rc == SQLLOCK_OK && !s->done;
    return rc;
}

static int64_t sq_column_int64(sqllock_stmt *s, int col)
{
    return sqlite3_column_int64(s->st, col);
}

static const char *sq_column_text(sqllock_stmt *s, int col)
{
    const unsigned char *t = sqlite3_column_text(s->st, col);

    return t != NULL ? (const char *)t : "";
}

static const void *sq_column_blob(sqllock_stmt *s, int col, size_t *len)
{
    /* The bytes first, then their count (SQLite's documented order). */
    const void *b = sqlite3_column_blob(s->st, col);
    int n = sqlite3_column_bytes(s->st, col);

    if (b == NULL || n <= 0) {
        *len = 0;
        return "";
    }
    *len = (size_t)n;
    return b;
}

static int64_t sq_affected_rows(sqllock_stmt *s)
{
    return s->changes;
}

static void sq_reset(sqllock_stmt *s)
{
    if (s != NULL) {
        sqlite3_reset(s->st);
        s->row_ready = 0;
        s->done = 1;
    }
}

static int sq_exec_script(sqllock_conn *c, const char *sql,
                          sqllock_dberr *err)
{
    int rc;

    rc = sqlite3_exec(c->db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
    if (rc != SQLITE_OK)
        return fail(c->db, rc, err, "starting the schema transaction");
    rc = sqlite3_exec(c->db, sql, NULL, NULL, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(c->db, "COMMIT", NULL, NULL, NULL);
    if (rc != SQLITE_OK) {
        int status = fail(c->db, rc, err, NULL);
        sqlite3_exec(c->db, "ROLLBACK", NULL, NULL, NULL);
        return status;
    }
    return SQLLOCK_OK;
}

static void *sq_native(sqllock_conn *c)
{
    return c->db;
}

/* SQLite has no row locks: a transaction takes the database's write lock
 * at once (BEGIN IMMEDIATE), waiting up to the busy timeout (DESIGN R5). */
static int sq_simple(sqllock_conn *c, const char *sql, sqllock_dberr *err)
{
    int rc = sqlite3_exec(c->db, sql, NULL, NULL, NULL);

    return rc == SQLITE_OK ? SQLLOCK_OK : fail(c->db, rc, err, sql);
}

static int sq_begin(sqllock_conn *c, sqllock_dberr *err)
{
    return sq_simple(c, "BEGIN IMMEDIATE", err);
}

static int sq_commit(sqllock_conn *c, sqllock_dberr *err)
{
    return sq_simple(c, "COMMIT", err);
}

static int sq_rollback(sqllock_conn *c, sqllock_dberr *err)
{
    if (sqlite3_get_autocommit(c->db))
        return SQLLOCK_OK;       /* SQLite already rolled back */
    return sq_simple(c, "ROLLBACK", err);
}

static int64_t sq_insert_id(sqllock_stmt *s)
{
    return sqlite3_last_insert_rowid(s->db);
}

static const char *const sq_schemes[] = { "sqlite", NULL };

const sqllock_driver sqllock__sqlite_driver = {
    .version = SQLLOCK_DRIVER_VERSION,
    .name = "sqlite",
    .schemes = sq_schemes,
    .caps = SQLLOCK_CAP_RETURNING | SQLLOCK_CAP_SHARED_HOST |
            SQLLOCK_CAP_DB_LOCK,
    .dialect = &sqllock__sq_dialect,
    .connect = sq_connect,
    .disconnect = sq_disconnect,
    .prepare = sq_prepare,
    .finalize = sq_finalize,
    .execute = sq_execute,
    .fetch = sq_fetch,
    .column_int64 = sq_column_int64,
    .column_text = sq_column_text,
    .affected_rows = sq_affected_rows,
    .reset = sq_reset,
    .exec_script = sq_exec_script,
    .native = sq_native,
    .begin = sq_begin,
    .commit = sq_commit,
    .rollback = sq_rollback,
    .insert_id = sq_insert_id,
    .column_blob = sq_column_blob,
    .adopt = sq_adopt,
    .txn_status = sq_txn_status,
};
