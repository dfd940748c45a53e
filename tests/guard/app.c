/*
 * app.c -- the application's own connection of test_guard: statements
 * sent through libpq, the MySQL C API and sqlite3 themselves, with their
 * own placeholders, as an application sends them (see guard.h).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "test_util.h"
#include "test_run.h"
#include "guard/guard.h"
#include "internal.h"     /* sqllock__url_parse() */

#ifdef SQLLOCK_HAVE_POSTGRES
#include <libpq-fe.h>
#endif
#ifdef SQLLOCK_HAVE_MYSQL
#include <mysql.h>
/* The flag type of MYSQL_BIND.is_null (drivers/mysql/my.h). */
#if defined(MARIADB_PACKAGE_VERSION) || !defined(LIBMYSQL_VERSION_ID) || \
    LIBMYSQL_VERSION_ID < 80000
typedef my_bool app_flag;
#else
#include <stdbool.h>
typedef bool app_flag;
#endif
#endif
#ifdef SQLLOCK_HAVE_SQLITE
#include <sqlite3.h>
#endif

enum { PG, MY, SQ };

struct app {
    int kind;
    sqllock_db *owner;      /* the handle that opened the connection, or
                               NULL when the test connected itself
                               (APP_FOUND_ROWS) */
    void *native;
    char driver[16];
    char err[600];
};

/* The connections open, so that a failed case's teardown can close
 * them (rolling back a transaction a failure left open). */
#define APP_OPEN_MAX 8
static app *g_open[APP_OPEN_MAX];

void app_close_all(void)
{
    int i;

    for (i = 0; i < APP_OPEN_MAX; i++)
        if (g_open[i] != NULL)
            app_close(g_open[i]);
}

static int app_fail(app *a, int status, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(a->err, sizeof a->err, fmt, ap);
    va_end(ap);
    return status;
}

#ifdef SQLLOCK_HAVE_MYSQL
/*
 * The application's MYSQL *, connected by the test itself with the
 * client flags `flags` (CLIENT_FOUND_ROWS, which Django's backend sets
 * and sqllock's own connections never do), to the URL's host, port or
 * socket, user, password and database. The URL's other parameters (TLS)
 * are not read: the test servers need none.
 */
static MYSQL *my_connect_flags(const char *url, unsigned long flags)
{
    sqllock_url *u = NULL;
    char why[200], db[256];
    const char *sock = NULL;
    MYSQL *m;
    int i;

    if (sqllock__url_parse(url, &u, why, sizeof why) != SQLLOCK_OK)
        fail_msg("app: the URL: %s", why);
    for (i = 0; i < u->nparams; i++)
        if (strcmp(u->keys[i], "socket") == 0)
            sock = u->values[i];
    snprintf(db, sizeof db, "%s", u->path[0] == '/' ? u->path + 1 : u->path);
    m = mysql_init(NULL);
    assert_non_null(m);
    if (mysql_real_connect(m, sock != NULL ? "localhost" : u->host, u->user,
                           u->password, db, (unsigned)u->port, sock,
                           flags) == NULL) {
        snprintf(why, sizeof why, "%s", mysql_error(m));
        mysql_close(m);
        sqllock__url_free(u);
        fail_msg("app: connect: %s", why);
    }
    sqllock__url_free(u);
    if ((m->client_flag & flags) != flags) {
        mysql_close(m);
        fail_msg("app: the client did not keep the flags %lx", flags);
    }
    /* As an application's framework does (Django sets it at every
     * connect): the server's default may be off (the hostile-session
     * MariaDB's is), and a case that wants it off sets it so itself. */
    if (mysql_autocommit(m, 1) != 0) {
        snprintf(why, sizeof why, "%s", mysql_error(m));
        mysql_close(m);
        fail_msg("app: autocommit: %s", why);
    }
    return m;
}
#endif

app *app_open(const char *url, const char *tz)
{
    return app_open_with(url, tz, 0);
}

app *app_open_with(const char *url, const char *tz, unsigned flags)
{
    sqllock_options o = SQLLOCK_OPTIONS_INIT;
    app *a = calloc(1, sizeof *a);
    int rc;

    assert_non_null(a);
    o.busy_timeout_ms = tu_scaled_ms(5000);
    rc = sqllock_open(url, &o, &a->owner);
    if (rc != SQLLOCK_OK)
        fail_msg("app: open: %s", sqllock_errmsg(a->owner));
    snprintf(a->driver, sizeof a->driver, "%s", sqllock_db_driver(a->owner));
    a->kind = strcmp(a->driver, "postgres") == 0 ? PG
              : strcmp(a->driver, "mysql") == 0 ? MY : SQ;
    a->native = sqllock_db_native(a->owner);
#ifdef SQLLOCK_HAVE_MYSQL
    if (a->kind == MY && (flags & APP_FOUND_ROWS)) {
        /* The test's own connection replaces the handle's. */
        sqllock_close(a->owner);
        a->owner = NULL;
        a->native = my_connect_flags(url, CLIENT_FOUND_ROWS);
    }
#endif
    assert_non_null(a->native);
    for (rc = 0; rc < APP_OPEN_MAX; rc++)
        if (g_open[rc] == NULL) {
            g_open[rc] = a;
            break;
        }
    if (a->kind == PG && tz != NULL) {
        char sql[96];
        snprintf(sql, sizeof sql, "SET TIME ZONE INTERVAL '%s' HOUR TO MINUTE",
                 tz);
        if (app_exec(a, sql) != APP_OK)
            fail_msg("app: %s", a->err);
    }
    if (a->kind == MY) {
        char sql[96];
        /* An application's session, not sqllock's. */
        if (app_exec(a, "SET SESSION TRANSACTION ISOLATION LEVEL "
                        "REPEATABLE READ") != APP_OK)
            fail_msg("app: %s", a->err);
        snprintf(sql, sizeof sql, "SET time_zone = '%s'",
                 tz != NULL ? tz : "SYSTEM");
        if (app_exec(a, sql) != APP_OK)
            fail_msg("app: %s", a->err);
    }
    if (a->kind != SQ && (flags & (APP_READ_COMMITTED | APP_REPEATABLE_READ))) {
        const char *level = (flags & APP_READ_COMMITTED) ? "READ COMMITTED"
                                                         : "REPEATABLE READ";
        char sql[128];
        snprintf(sql, sizeof sql, a->kind == PG
                 ? "SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION "
                   "LEVEL %s" : "SET SESSION TRANSACTION ISOLATION LEVEL %s",
                 level);
        if (app_exec(a, sql) != APP_OK)
            fail_msg("app: %s", a->err);
    }
    return a;
}

int app_found_rows(const app *a)
{
#ifdef SQLLOCK_HAVE_MYSQL
    if (a->kind == MY)
        return (((MYSQL *)a->native)->client_flag & CLIENT_FOUND_ROWS) != 0;
#endif
    (void)a;
    return 0;
}

void app_close(app *a)
{
    int i;

    if (a == NULL)
        return;
    for (i = 0; i < APP_OPEN_MAX; i++)
        if (g_open[i] == a)
            g_open[i] = NULL;
#ifdef SQLLOCK_HAVE_MYSQL
    if (a->owner == NULL && a->kind == MY)
        mysql_close(a->native);
#endif
    sqllock_close(a->owner);
    free(a);
}

void *app_native(app *a)
{
    return a->native;
}

const char *app_driver(const app *a)
{
    return a->driver;
}

int app_style(const app *a)
{
    return a->kind == PG ? SQLLOCK_PARAM_DOLLAR : SQLLOCK_PARAM_QMARK;
}

const char *app_error(const app *a)
{
    return a->err;
}

int app_exec(app *a, const char *sql)
{
    return app_run(a, sql, NULL, 0, NULL, 0, NULL, NULL);
}

int app_begin(app *a, int iso)
{
    static const char *const pg[] = {
        "BEGIN", "BEGIN ISOLATION LEVEL READ COMMITTED",
        "BEGIN ISOLATION LEVEL REPEATABLE READ",
        "BEGIN ISOLATION LEVEL SERIALIZABLE" };
    static const char *const my[] = {
        NULL, "SET TRANSACTION ISOLATION LEVEL READ COMMITTED",
        "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ",
        "SET TRANSACTION ISOLATION LEVEL SERIALIZABLE" };
    int rc;

    if (a->kind == PG)
        return app_exec(a, pg[iso]);
    if (a->kind == SQ)
        return app_exec(a, iso == 0 ? "BEGIN" : "BEGIN IMMEDIATE");
    if (my[iso] != NULL && (rc = app_exec(a, my[iso])) != APP_OK)
        return rc;
    return app_exec(a, "START TRANSACTION");
}

#ifdef SQLLOCK_HAVE_POSTGRES
static int pg_run(app *a, const char *sql, const int64_t *ints, int nints,
                  const char *name, int64_t token, int64_t *affected,
                  int64_t *first)
{
    char num[18][24];
    const char *vals[18];
    int n = 0, i, st = APP_OK;
    PGresult *res;

    for (i = 0; i < nints && n < 16; i++) {
        snprintf(num[n], sizeof num[n], "%lld", (long long)ints[i]);
        vals[n] = num[n];
        n++;
    }
    if (name != NULL) {
        vals[n++] = name;
        snprintf(num[n], sizeof num[n], "%lld", (long long)token);
        vals[n] = num[n];
        n++;
    }
    res = PQexecParams(a->native, sql, n, NULL, vals, NULL, NULL, 0);
    switch (PQresultStatus(res)) {
    case PGRES_COMMAND_OK:
    case PGRES_TUPLES_OK:
        if (affected != NULL)
            *affected = atoll(PQcmdTuples(res));
        if (first != NULL)
            *first = PQntuples(res) > 0 ? atoll(PQgetvalue(res, 0, 0)) : 0;
        break;
    default: {
        const char *code = PQresultErrorField(res, PG_DIAG_SQLSTATE);
        st = code != NULL && (strcmp(code, "40001") == 0 ||
                              strcmp(code, "40P01") == 0)
                 ? APP_SERIALIZATION : APP_ERROR;
        app_fail(a, st, "%s: %s (%s)", sql, PQerrorMessage(a->native),
                 code != NULL ? code : "?");
    }
    }
    PQclear(res);
    return st;
}
#endif

#ifdef SQLLOCK_HAVE_MYSQL
static int my_status(app *a, unsigned code, const char *what, const char *msg)
{
    int st = code == 1213 ? APP_SERIALIZATION
             : code == 1205 ? APP_BUSY : APP_ERROR;

    return app_fail(a, st, "%s: %s (%u)", what, msg, code);
}

static int my_run(app *a, const char *sql, const int64_t *ints, int nints,
                  const char *name, int64_t token, int64_t *affected,
                  int64_t *first)
{
    MYSQL *m = a->native;
    MYSQL_STMT *s = mysql_stmt_init(m);
    MYSQL_BIND b[18], out;
    long long iv[18], res = 0;
    unsigned long name_len = name != NULL ? strlen(name) : 0;
    app_flag is_null = 0;
    int n = 0, i, st = APP_OK;

    if (s == NULL)
        return app_fail(a, APP_ERROR, "mysql_stmt_init: out of memory");
    if (mysql_stmt_prepare(s, sql, strlen(sql)) != 0) {
        st = my_status(a, mysql_stmt_errno(s), sql, mysql_stmt_error(s));
        mysql_stmt_close(s);
        return st;
    }
    memset(b, 0, sizeof b);
    for (i = 0; i < nints && n < 16; i++, n++) {
        iv[n] = ints[i];
        b[n].buffer_type = MYSQL_TYPE_LONGLONG;
        b[n].buffer = &iv[n];
    }
    if (name != NULL) {
        b[n].buffer_type = MYSQL_TYPE_STRING;
        b[n].buffer = (void *)name;
        b[n].buffer_length = name_len;
        b[n].length = &name_len;
        n++;
        iv[n] = token;
        b[n].buffer_type = MYSQL_TYPE_LONGLONG;
        b[n].buffer = &iv[n];
        n++;
    }
    if ((n > 0 && mysql_stmt_bind_param(s, b) != 0) ||
        mysql_stmt_execute(s) != 0) {
        st = my_status(a, mysql_stmt_errno(s), sql, mysql_stmt_error(s));
        mysql_stmt_close(s);
        return st;
    }
    if (affected != NULL)
        *affected = (int64_t)mysql_stmt_affected_rows(s);
    if (mysql_stmt_field_count(s) > 0) {
        memset(&out, 0, sizeof out);
        out.buffer_type = MYSQL_TYPE_LONGLONG;
        out.buffer = &res;
        out.is_null = &is_null;
        if (mysql_stmt_bind_result(s, &out) == 0 &&
            mysql_stmt_fetch(s) == 0 && first != NULL)
            *first = is_null ? 0 : res;
        while (mysql_stmt_fetch(s) == 0)
            ;
    }
    mysql_stmt_close(s);
    return st;
}
#endif

#ifdef SQLLOCK_HAVE_SQLITE
static int sq_run(app *a, const char *sql, const int64_t *ints, int nints,
                  const char *name, int64_t token, int64_t *affected,
                  int64_t *first)
{
    sqlite3 *db = a->native;
    sqlite3_stmt *s = NULL;
    int rc, n = 0, i, st = APP_OK;

    rc = sqlite3_prepare_v2(db, sql, -1, &s, NULL);
    if (rc != SQLITE_OK)
        return app_fail(a, APP_ERROR, "%s: %s", sql, sqlite3_errmsg(db));
    for (i = 0; i < nints; i++)
        sqlite3_bind_int64(s, ++n, ints[i]);
    if (name != NULL) {
        sqlite3_bind_text(s, ++n, name, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int64(s, ++n, token);
    }
    if (first != NULL)
        *first = 0;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW)
        if (first != NULL && *first == 0)
            *first = sqlite3_column_int64(s, 0);
    if (rc != SQLITE_DONE) {
        rc = sqlite3_extended_errcode(db);
        st = (rc & 0xff) == SQLITE_BUSY ? APP_BUSY : APP_ERROR;
        app_fail(a, st, "%s: %s (%d)", sql, sqlite3_errmsg(db), rc);
    } else if (affected != NULL) {
        *affected = sqlite3_changes(db);
    }
    sqlite3_finalize(s);
    return st;
}
#endif

int app_run(app *a, const char *sql, const int64_t *ints, int nints,
            const char *name, int64_t token, int64_t *affected,
            int64_t *first)
{
    a->err[0] = '\0';
    if (affected != NULL)
        *affected = -1;
    switch (a->kind) {
#ifdef SQLLOCK_HAVE_POSTGRES
    case PG:
        return pg_run(a, sql, ints, nints, name, token, affected, first);
#endif
#ifdef SQLLOCK_HAVE_MYSQL
    case MY:
        return my_run(a, sql, ints, nints, name, token, affected, first);
#endif
#ifdef SQLLOCK_HAVE_SQLITE
    case SQ:
        return sq_run(a, sql, ints, nints, name, token, affected, first);
#endif
    default:
        return app_fail(a, APP_ERROR, "no client library for %s", a->driver);
    }
}

void app_guarded_sql(app *a, sqllock_db *db, const char *head,
                     const char *name, int64_t token, char *out,
                     size_t size)
{
    char guard[SQLLOCK_GUARD_SQL_MAX];
    size_t len = 0;
    int n = 0, rc;
    const char *p;

    for (p = head; *p != '\0' && len + 8 < size; p++) {
        if (*p != '?') {
            out[len++] = *p;
            continue;
        }
        n++;
        if (a->kind == PG)
            len += (size_t)snprintf(out + len, size - len, "$%d", n);
        else
            out[len++] = '?';
    }
    out[len] = '\0';
    rc = sqllock_guard_sql(db, name, token, app_style(a), n + 1, guard,
                           sizeof guard, NULL);
    EXPECT_RC(db, rc, SQLLOCK_OK, "sqllock_guard_sql");
    if (len + strlen(guard) + 6 >= size)
        fail_msg("app_guarded_sql: the statement does not fit");
    strcat(out, " AND ");
    strcat(out, guard);
}
