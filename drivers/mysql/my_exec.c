/*
 * my_exec.c -- prepared statements: binding, executing, fetching rows and
 * reading their columns.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "my.h"

/* ------------------------------------------------------------------------ */
/* Statements                                                               */
/* ------------------------------------------------------------------------ */

static void stmt_free(sqllock_stmt *s)
{
    unsigned i;

    if (s == NULL)
        return;
    if (s->st != NULL)
        mysql_stmt_close(s->st);
    if (s->cols != NULL)
        for (i = 0; i < s->ncols; i++)
            free(s->cols[i].buf);
    free(s->cols);
    free(s->binds);
    free(s->params);
    free(s->ints);
    free(s->lens);
    free(s);
}

/* Gives column `i` a buffer of `cap` bytes and points its bind at it. */
static int col_alloc(sqllock_stmt *s, unsigned i, unsigned long cap)
{
    char *buf = realloc(s->cols[i].buf, cap);

    if (buf == NULL)
        return SQLLOCK_ENOMEM;
    s->cols[i].buf = buf;
    s->cols[i].cap = cap;
    s->binds[i].buffer_type = MYSQL_TYPE_STRING;
    s->binds[i].buffer = buf;
    s->binds[i].buffer_length = cap - 1;    /* room for the NUL */
    s->binds[i].length = &s->cols[i].len;
    s->binds[i].is_null = &s->cols[i].is_null;
    s->binds[i].error = &s->cols[i].error;
    return SQLLOCK_OK;
}

/* Sizes the result columns from the statement's metadata. */
static int setup_columns(sqllock_stmt *s, sqllock_dberr *err)
{
    MYSQL_RES *meta;
    MYSQL_FIELD *fields;
    unsigned i;

    s->ncols = mysql_stmt_field_count(s->st);
    if (s->ncols == 0)
        return SQLLOCK_OK;
    meta = mysql_stmt_result_metadata(s->st);
    if (meta == NULL)
        return sqllock__my_fail_stmt(s->st, err, "reading the result's "
                                     "columns");
    fields = mysql_fetch_fields(meta);
    s->binds = calloc(s->ncols, sizeof *s->binds);
    s->cols = calloc(s->ncols, sizeof *s->cols);
    if (s->binds == NULL || s->cols == NULL || fields == NULL) {
        mysql_free_result(meta);
        return sqllock_dberr_set(err, SQLLOCK_ENOMEM, "", "out of memory");
    }
    for (i = 0; i < s->ncols; i++) {
        /* The declared width is a good first guess; a longer value grows
         * the buffer when it is fetched. */
        unsigned long cap = fields[i].length;
        if (cap < MY_COL_MIN)
            cap = MY_COL_MIN;
        if (cap > MY_COL_FIRST_MAX)
            cap = MY_COL_FIRST_MAX;
        if (col_alloc(s, i, cap + 1) != SQLLOCK_OK) {
            mysql_free_result(meta);
            return sqllock_dberr_set(err, SQLLOCK_ENOMEM, "", "out of memory");
        }
    }
    mysql_free_result(meta);
    return SQLLOCK_OK;
}

/* Whether `sql` is an UPDATE: its first word, after white space and
 * block comments, ASCII case ignored. */
static int is_update_sql(const char *sql)
{
    const char *p = sql;

    for (;;) {
        while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
            p++;
        if (p[0] != '/' || p[1] != '*')
            break;
        p = strstr(p + 2, "*/");
        if (p == NULL)
            return 0;
        p += 2;
    }
    return strncasecmp(p, "UPDATE", 6) == 0 &&
           !((p[6] >= 'A' && p[6] <= 'Z') || (p[6] >= 'a' && p[6] <= 'z') ||
             (p[6] >= '0' && p[6] <= '9') || p[6] == '_');
}

/* Reads the next run of ASCII digits at or after *p into *n; 0 when
 * there is none. */
static int next_number(const char **p, unsigned long long *n)
{
    const char *s = *p;

    while (*s != '\0' && (*s < '0' || *s > '9'))
        s++;
    if (*s == '\0')
        return 0;
    errno = 0;
    *n = strtoull(s, (char **)p, 10);
    return errno == 0;
}

/*
 * The rows an UPDATE matched (DESIGN D5). MySQL's affected-row count of
 * an UPDATE is the rows whose values it changed, unless the client
 * connected with CLIENT_FOUND_ROWS (Django's backend does, and an
 * application may lend such a connection, sqllock_borrow()), when it is
 * the rows it matched: a write of the values a row already has counts 0
 * one way and 1 the other. The server's info text for an UPDATE says
 * both whatever the flag, "Rows matched: M  Changed: C  Warnings: W",
 * also for a prepared statement (checked with MariaDB Connector/C 3.3,
 * which is Debian's libmysqlclient too, against MariaDB 10.11). The text
 * is in the session's lc_messages language, but in every translation
 * MariaDB 10.11 ships (errmsg-utf8.txt, ER_UPDATE_INFO) the three
 * numbers come in that order and no digit comes before them, so the
 * first number is M. It is taken only when it agrees with the count the
 * client gave (C or M, C <= M); otherwise, or without the text, the
 * client's count is returned, which never counts more rows than matched.
 * So the core reads "matched" on every connection, as PostgreSQL and
 * SQLite count it.
 */
static int64_t matched_rows(sqllock_stmt *s)
{
    unsigned long long a = (unsigned long long)mysql_stmt_affected_rows(s->st);
    unsigned long long m = 0, c = 0, w = 0;
    const char *info, *p;

    if (!s->is_update || a == (unsigned long long)-1)
        return (int64_t)a;
    info = mysql_info(s->conn->my);
    p = info;
    if (p == NULL || !next_number(&p, &m) || !next_number(&p, &c) ||
        !next_number(&p, &w) || c > m || (a != c && a != m) ||
        m > (unsigned long long)INT64_MAX)
        return (int64_t)a;
    return (int64_t)m;
}

int sqllock__my_prepare(sqllock_conn *c, const char *sql, sqllock_stmt **out,
                        sqllock_dberr *err)
{
    sqllock_stmt *s;
    int64_t t0;
    int rc;

    *out = NULL;
    s = calloc(1, sizeof *s);
    if (s == NULL)
        return sqllock_dberr_set(err, SQLLOCK_ENOMEM, "", "out of memory");
    s->conn = c;
    s->st = mysql_stmt_init(c->my);
    if (s->st == NULL) {
        free(s);
        return sqllock_dberr_set(err, SQLLOCK_ENOMEM, "", "out of memory "
                                 "(mysql_stmt_init)");
    }
    t0 = sqllock_driver_now_ms();
    if (mysql_stmt_prepare(s->st, sql, (unsigned long)strlen(sql)) != 0) {
        rc = sqllock__my_fail_timed(c, t0,
                                    sqllock__my_fail_stmt(s->st, err, NULL),
                                    err);
        stmt_free(s);
        return rc;
    }
    s->nparams = (unsigned)mysql_stmt_param_count(s->st);
    if (s->nparams > 0) {
        s->params = calloc(s->nparams, sizeof *s->params);
        s->ints = calloc(s->nparams, sizeof *s->ints);
        s->lens = calloc(s->nparams, sizeof *s->lens);
        if (s->params == NULL || s->ints == NULL || s->lens == NULL) {
            stmt_free(s);
            return sqllock_dberr_set(err, SQLLOCK_ENOMEM, "", "out of memory");
        }
    }
    s->is_call = strncmp(sql, "CALL ", 5) == 0;
    s->is_update = is_update_sql(sql);
    rc = s->is_call ? SQLLOCK_OK : setup_columns(s, err);
    if (rc != SQLLOCK_OK) {
        stmt_free(s);
        return rc;
    }
    *out = s;
    return SQLLOCK_OK;
}

void sqllock__my_finalize(sqllock_stmt *s)
{
    stmt_free(s);
}

/* Ends a stored result so that the statement can run again. A stored
 * result needs no round trip to end, so no mysql_stmt_reset() is sent. */
static void end_result(sqllock_stmt *s)
{
    if (s->has_result) {
        /* Frees client memory only; it cannot fail on a stored result. */
        (void)mysql_stmt_free_result(s->st);
        s->has_result = 0;
        /* A CALL's rows are followed by the routine's status (and any
         * further result): read to the end, or the next command on the
         * connection would find it out of sync. */
        if (s->is_call)
            while (mysql_stmt_next_result(s->st) == 0)
                (void)mysql_stmt_free_result(s->st);
    }
}

int sqllock__my_execute(sqllock_stmt *s, const sqllock_value *args,
                        int nargs, sqllock_dberr *err)
{
    int64_t t0;
    unsigned i;
    int rc;

    end_result(s);
    s->affected = 0;
    s->insert_id = 0;
    if (nargs < 0 || (unsigned)nargs != s->nparams)
        return sqllock_dberr_set(err, SQLLOCK_EINVAL, "", "the statement has "
                                 "%u placeholders but %d arguments were "
                                 "given", s->nparams, nargs);
    for (i = 0; i < s->nparams; i++) {
        MYSQL_BIND *b = &s->params[i];

        memset(b, 0, sizeof *b);
        switch (args[i].type) {
        case SQLLOCK_VALUE_INT64:
            s->ints[i] = (long long)args[i].i;
            b->buffer_type = MYSQL_TYPE_LONGLONG;
            b->buffer = &s->ints[i];
            break;
        case SQLLOCK_VALUE_TEXT:
        case SQLLOCK_VALUE_BLOB:
            if (args[i].len > ULONG_MAX)
                return sqllock_dberr_set(err, SQLLOCK_EINVAL, "", "a %s "
                                         "value is too long to bind",
                                         args[i].type == SQLLOCK_VALUE_BLOB
                                         ? "binary" : "text");
            s->lens[i] = (unsigned long)args[i].len;
            /* A blob is sent with its length, NUL bytes and all. */
            b->buffer_type = args[i].type == SQLLOCK_VALUE_BLOB
                             ? MYSQL_TYPE_BLOB : MYSQL_TYPE_STRING;
            b->buffer = (void *)(args[i].s != NULL ? args[i].s : "");
            b->buffer_length = s->lens[i];
            b->length = &s->lens[i];
            break;
        default:
            b->buffer_type = MYSQL_TYPE_NULL;
            break;
        }
    }
    if (s->nparams > 0 && mysql_stmt_bind_param(s->st, s->params) != 0)
        return sqllock__my_fail_stmt(s->st, err, "binding the parameters");
    rc = sqllock__my_check_no_foreign_txn(s->conn, err);
    if (rc == SQLLOCK_OK && s->is_call)
        rc = sqllock__my_check_autocommit(s->conn, err);
    if (rc != SQLLOCK_OK)
        return rc;
    t0 = sqllock_driver_now_ms();
    if (mysql_stmt_execute(s->st) != 0)
        return sqllock__my_fail_timed(s->conn, t0,
                                      sqllock__my_fail_stmt(s->st, err, NULL),
                                      err);
    /* A CALL's columns: known now, from its first result (the same each
     * time: they are sized once). */
    if (s->is_call && s->ncols == 0 && mysql_stmt_field_count(s->st) > 0) {
        rc = setup_columns(s, err);
        if (rc != SQLLOCK_OK) {
            s->has_result = 1;          /* read to the end by reset() */
            return rc;
        }
    }
    if (s->ncols == 0 || mysql_stmt_field_count(s->st) == 0) {
        s->affected = matched_rows(s);
        s->insert_id = (int64_t)mysql_stmt_insert_id(s->st);
        /* A statement without rows writes: it must have committed unless
         * it ran in the core's transaction (C2). */
        return sqllock__my_check_committed(s->conn, err);
    }
    /* The whole result comes to the client at once, so the connection is
     * free again at once and no later call finds it busy. */
    if (mysql_stmt_store_result(s->st) != 0)
        return sqllock__my_fail_timed(s->conn, t0,
                                      sqllock__my_fail_stmt(s->st, err,
                                                            "reading the "
                                                            "result"), err);
    /* A read has nothing to commit, but one that left the session inside
     * a transaction (autocommit off, a proxy's) would leave it there for
     * the next statement: rolled back and reported now, as on
     * PostgreSQL. */
    rc = sqllock__my_check_committed(s->conn, err);
    if (rc != SQLLOCK_OK) {
        mysql_stmt_free_result(s->st);
        return rc;
    }
    s->has_result = 1;
    if (mysql_stmt_bind_result(s->st, s->binds) != 0) {
        rc = sqllock__my_fail_stmt(s->st, err, "binding the result");
        end_result(s);
        return rc;
    }
    return SQLLOCK_OK;
}

/* Fetches the rest of each column that did not fit its buffer, growing the
 * buffer so that later rows fit too. */
static int fetch_truncated(sqllock_stmt *s, sqllock_dberr *err)
{
    unsigned i;
    int rebind = 0;

    for (i = 0; i < s->ncols; i++) {
        my_col *col = &s->cols[i];

        if (col->is_null || col->len < col->cap)
            continue;
        if (col->len == ULONG_MAX ||
            col_alloc(s, i, col->len + 1) != SQLLOCK_OK)
            return sqllock_dberr_set(err, SQLLOCK_ENOMEM, "", "out of memory "
                                     "for a %lu-byte column", col->len);
        rebind = 1;
        if (mysql_stmt_fetch_column(s->st, &s->binds[i], i, 0) != 0)
            return sqllock__my_fail_stmt(s->st, err, "reading a long column");
    }
    if (rebind && mysql_stmt_bind_result(s->st, s->binds) != 0)
        return sqllock__my_fail_stmt(s->st, err, "binding the result");
    return SQLLOCK_OK;
}

int sqllock__my_fetch(sqllock_stmt *s, int *has_row, sqllock_dberr *err)
{
    unsigned i;
    int rc;

    *has_row = 0;
    if (!s->has_result)
        return SQLLOCK_OK;
    rc = mysql_stmt_fetch(s->st);
    if (rc == MYSQL_NO_DATA)
        return SQLLOCK_OK;
    if (rc == 1)
        return sqllock__my_fail_stmt(s->st, err, "fetching a row");
    if (rc == MYSQL_DATA_TRUNCATED) {
        rc = fetch_truncated(s, err);
        if (rc != SQLLOCK_OK)
            return rc;
    }
    /* Every value is text now; end each with a NUL for column_text(). */
    for (i = 0; i < s->ncols; i++) {
        my_col *col = &s->cols[i];
        unsigned long n = col->is_null ? 0 : col->len;
        col->buf[n < col->cap ? n : col->cap - 1] = '\0';
    }
    *has_row = 1;
    return SQLLOCK_OK;
}

/* An integer column, which the client delivered as text: digits from a
 * BIGINT, or a decimal such as "12.000" whose fraction is dropped. */
int64_t sqllock__my_column_int64(sqllock_stmt *s, int col)
{
    long long v;

    if (col < 0 || (unsigned)col >= s->ncols || s->cols[col].is_null)
        return 0;
    errno = 0;
    v = strtoll(s->cols[col].buf, NULL, 10);
    if (errno != 0)
        return 0;
    return (int64_t)v;
}

const char *sqllock__my_column_text(sqllock_stmt *s, int col)
{
    if (col < 0 || (unsigned)col >= s->ncols || s->cols[col].is_null)
        return "";
    return s->cols[col].buf;
}

/* A binary column. The column buffers hold the value's bytes with its
 * full length (fetch_truncated() fetched the rest of a long one), so NUL
 * bytes inside come through. */
const void *sqllock__my_column_blob(sqllock_stmt *s, int col, size_t *len)
{
    if (col < 0 || (unsigned)col >= s->ncols || s->cols[col].is_null) {
        *len = 0;
        return "";
    }
    *len = s->cols[col].len;
    return s->cols[col].buf;
}

int64_t sqllock__my_affected_rows(sqllock_stmt *s)
{
    return s->affected;
}

void sqllock__my_reset(sqllock_stmt *s)
{
    if (s != NULL)
        end_result(s);
}

int64_t sqllock__my_insert_id(sqllock_stmt *s)
{
    return s->insert_id;
}
