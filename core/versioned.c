/*
 * versioned.c -- optimistic versioned updates (DESIGN O1-O3).
 *
 * No lock is held. A record carries a version; a write names the version
 * it read and changes one row (success) or none (SQLLOCK_CONFLICT). The
 * library's own table has one statement per operation in each dialect; on
 * the application's tables the core builds the statement from identifiers
 * it has validated and quoted, and binds every value.
 *
 * Inside a row-lock transaction on the same handle the statements run in
 * it (R4); every one goes through the wrappers below, which refuse to run
 * in a transaction that has failed and fail the transaction when a
 * statement's failure ended it (R7, txn.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define IDENT_MAX 63
#define TABLE_GET_MAX 16
#define CELLS_MAX 16
#define SQL_MAX 2048

static int check_db(sqllock_db *db)
{
    if (db == NULL)
        return SQLLOCK_EINVAL;
    if (db->drv == NULL)
        return sqllock__fail(db, SQLLOCK_EMISUSE, "the handle has no driver "
                             "(its open failed)");
    return SQLLOCK_OK;
}

static int check_value(sqllock_db *db, const void *value, size_t len)
{
    if (value == NULL && len > 0)
        return sqllock__fail(db, SQLLOCK_EINVAL, "the value is NULL but its "
                             "length is %zu", len);
    if (len > SQLLOCK_VALUE_MAX)
        return sqllock__fail(db, SQLLOCK_EINVAL, "the value is %zu bytes; "
                             "the limit is %d", len, SQLLOCK_VALUE_MAX);
    return SQLLOCK_OK;
}

static int check_version(sqllock_db *db, int64_t expected)
{
    if (expected < 1)
        return sqllock__fail(db, SQLLOCK_EINVAL, "the expected version must "
                             "be positive (got %lld)", (long long)expected);
    if (expected == INT64_MAX)
        return sqllock__fail(db, SQLLOCK_EINVAL, "version overflow: the "
                             "record is at the largest version");
    return SQLLOCK_OK;
}

/* sqllock__run(), sqllock__fetch(), sqllock__run_dyn() and
 * sqllock__fetch_dyn() inside the handle's row-lock transaction, if one
 * is open (R7). */
static int run(sqllock_db *db, sqllock_sql_id id, const sqllock_value *args,
               int nargs, const char *what)
{
    int rc = sqllock__txn_check(db, what);

    if (rc != SQLLOCK_OK)
        return rc;
    rc = sqllock__run(db, id, args, nargs, what);
    return rc == SQLLOCK_OK ? rc : sqllock__txn_failed(db, rc);
}

static int fetch(sqllock_db *db, sqllock_sql_id id, int *has_row,
                 const char *what)
{
    int rc = sqllock__fetch(db, id, has_row, what);

    return rc == SQLLOCK_OK ? rc : sqllock__txn_failed(db, rc);
}

static int run_dyn(sqllock_db *db, const char *sql, const sqllock_value *args,
                   int nargs, const char *what, sqllock_stmt **out)
{
    int rc = sqllock__txn_check(db, what);

    *out = NULL;
    if (rc != SQLLOCK_OK)
        return rc;
    rc = sqllock__run_dyn(db, sql, args, nargs, what, out);
    return rc == SQLLOCK_OK ? rc : sqllock__txn_failed(db, rc);
}

static int fetch_dyn(sqllock_db *db, sqllock_stmt *st, int *has_row,
                     const char *what)
{
    int rc = sqllock__fetch_dyn(db, st, has_row, what);

    return rc == SQLLOCK_OK ? rc : sqllock__txn_failed(db, rc);
}

static sqllock_value blob(const void *p, size_t len)
{
    sqllock_value v;

    memset(&v, 0, sizeof v);
    v.type = SQLLOCK_VALUE_BLOB;
    v.s = len > 0 ? p : "";
    v.len = len;
    return v;
}

/* Runs a dialect statement that changes rows; *affected is the count. */
static int write_rows(sqllock_db *db, sqllock_sql_id id,
                      const sqllock_value *args, int nargs, int64_t *affected,
                      const char *what)
{
    int rc = run(db, id, args, nargs, what);

    if (rc != SQLLOCK_OK)
        return rc;
    *affected = db->drv->affected_rows(db->stmts[id]);
    sqllock__end(db, id);
    return SQLLOCK_OK;
}

/*
 * Reads record `key`. With `locking` (the retry helper inside a
 * transaction) the dialect's RECORD_GET ends with its FOR UPDATE: a
 * locking read sees the latest committed row, not the transaction's
 * snapshot (MySQL REPEATABLE READ; on PostgreSQL at REPEATABLE READ a
 * row changed after the snapshot fails it with a serialization error
 * instead), and keeps the row for the write that follows, which would
 * lock it until the transaction ends anyway. SQLite's suffix is empty:
 * its transaction holds the database.
 */
static int record_fetch(sqllock_db *db, const char *key, int locking,
                        void **value, size_t *len, int64_t *version);

static int record_read(sqllock_db *db, const char *key, int locking,
                       void **value, size_t *len, int64_t *version)
{
    int rc;

    if (value != NULL)
        *value = NULL;
    if (len != NULL)
        *len = 0;
    if (version != NULL)
        *version = 0;
    if ((rc = check_db(db)) != SQLLOCK_OK ||
        (rc = sqllock__check_name(db, key, "record key")) != SQLLOCK_OK)
        return rc;
    return record_fetch(db, key, locking, value, len, version);
}

int sqllock__record_get(sqllock_db *db, const char *key, void **value,
                        size_t *len, int64_t *version)
{
    return record_fetch(db, key, 0, value, len, version);
}

/* record_read() without the key check (the library's own records under
 * derived names, sqllock__record_get()). */
static int record_fetch(sqllock_db *db, const char *key, int locking,
                        void **value, size_t *len, int64_t *version)
{
    const char *what = "reading the record";
    const sqllock_sql *get;
    const char *lock;
    sqllock_value arg, args[4];
    sqllock_stmt *st = NULL;
    const void *bytes;
    size_t n = 0;
    int has_row = 0, dyn = 0, nargs = 0, rc;

    if (value != NULL)
        *value = NULL;
    if (len != NULL)
        *len = 0;
    if (version != NULL)
        *version = 0;
    if ((rc = check_db(db)) != SQLLOCK_OK)
        return rc;
    if (db->drv->column_blob == NULL)
        return sqllock__fail(db, SQLLOCK_EUNSUPPORTED, "the %s driver cannot "
                             "read binary values", db->drv->name);
    get = sqllock__sql_of(db->drv, SQLLOCK_SQL_RECORD_GET);
    lock = db->drv->dialect->for_update[SQLLOCK_LOCK_WAIT];
    arg = sqllock__text(key);
    if (locking && lock != NULL && lock[0] != '\0' && get != NULL &&
        get->text != NULL) {
        char sql[SQL_MAX];
        const char *a;

        /* The key as many times as the dialect binds it. */
        for (a = get->args != NULL ? get->args : "1"; *a != '\0'; a++) {
            if (*a != '1' || nargs == (int)(sizeof args / sizeof *args))
                return sqllock__fail(db, SQLLOCK_EUNSUPPORTED, "%s: the %s "
                                     "dialect's RECORD_GET binds more than "
                                     "the key", what, db->drv->name);
            args[nargs++] = arg;
        }
        if ((size_t)snprintf(sql, sizeof sql, "%s%s", get->text, lock) >=
            sizeof sql)
            return sqllock__fail(db, SQLLOCK_EINVAL, "%s: the statement "
                                 "would be longer than %d bytes", what,
                                 SQL_MAX);
        dyn = 1;
        rc = run_dyn(db, sql, args, nargs, what, &st);
        if (rc == SQLLOCK_OK)
            rc = fetch_dyn(db, st, &has_row, what);
    } else {
        rc = run(db, SQLLOCK_SQL_RECORD_GET, &arg, 1, what);
        if (rc == SQLLOCK_OK)
            rc = fetch(db, SQLLOCK_SQL_RECORD_GET, &has_row, what);
        st = db->stmts[SQLLOCK_SQL_RECORD_GET];
    }
    if (rc != SQLLOCK_OK)
        return rc;
#define END_READ() (dyn ? db->drv->reset(st) \
                        : sqllock__end(db, SQLLOCK_SQL_RECORD_GET))
    if (!has_row) {
        END_READ();
        return sqllock__fail(db, SQLLOCK_NOTFOUND, "no record '%s'", key);
    }
    bytes = db->drv->column_blob(st, 0, &n);
    if (bytes == NULL) {
        END_READ();
        return sqllock__fail(db, SQLLOCK_ENOMEM, "%s: out of memory", what);
    }
    if (value != NULL) {
        char *copy = malloc(n + 1);
        if (copy == NULL) {
            END_READ();
            return sqllock__fail(db, SQLLOCK_ENOMEM, "%s: out of memory", what);
        }
        if (n > 0)
            memcpy(copy, bytes, n);
        copy[n] = '\0';
        *value = copy;
    }
    if (len != NULL)
        *len = n;
    if (version != NULL)
        *version = db->drv->column_int64(st, 1);
    END_READ();
#undef END_READ
    return sqllock__ok(db);
}

int sqllock_record_get(sqllock_db *db, const char *key, void **value,
                       size_t *len, int64_t *version)
{
    return record_read(db, key, 0, value, len, version);
}

int sqllock_record_create(sqllock_db *db, const char *key, const void *value,
                          size_t len)
{
    int rc;

    if ((rc = check_db(db)) != SQLLOCK_OK ||
        (rc = sqllock__check_name(db, key, "record key")) != SQLLOCK_OK)
        return rc;
    return sqllock__record_create(db, key, value, len);
}

int sqllock__record_create(sqllock_db *db, const char *key, const void *value,
                           size_t len)
{
    sqllock_value args[2];
    int64_t affected = 0;
    int rc;

    if ((rc = check_db(db)) != SQLLOCK_OK ||
        (rc = check_value(db, value, len)) != SQLLOCK_OK)
        return rc;
    args[0] = sqllock__text(key);
    args[1] = blob(value, len);
    rc = write_rows(db, SQLLOCK_SQL_RECORD_CREATE, args, 2, &affected,
                    "creating the record");
    /* A dialect may let an existing key fail the INSERT with a
     * duplicate-key error instead of counting 0 rows (MySQL, whose count
     * would depend on CLIENT_FOUND_ROWS): the statement changed nothing,
     * and the transaction it ran in goes on. */
    if (rc == SQLLOCK_EEXISTS)
        affected = 0;
    else if (rc != SQLLOCK_OK)
        return rc;
    if (affected == 0)
        return sqllock__fail(db, SQLLOCK_CONFLICT, "record '%s' already "
                             "exists", key);
    return sqllock__ok(db);
}

int sqllock_record_cas(sqllock_db *db, const char *key, int64_t expected,
                       const void *value, size_t len, int64_t *new_version)
{
    int rc;

    if (new_version != NULL)
        *new_version = 0;
    if ((rc = check_db(db)) != SQLLOCK_OK ||
        (rc = sqllock__check_name(db, key, "record key")) != SQLLOCK_OK)
        return rc;
    return sqllock__record_cas(db, key, expected, value, len, new_version);
}

int sqllock__record_cas(sqllock_db *db, const char *key, int64_t expected,
                        const void *value, size_t len, int64_t *new_version)
{
    sqllock_value args[3];
    int64_t affected = 0;
    int rc;

    if (new_version != NULL)
        *new_version = 0;
    if ((rc = check_db(db)) != SQLLOCK_OK ||
        (rc = check_value(db, value, len)) != SQLLOCK_OK ||
        (rc = check_version(db, expected)) != SQLLOCK_OK)
        return rc;
    args[0] = sqllock__text(key);
    args[1] = sqllock__int(expected);
    args[2] = blob(value, len);
    rc = write_rows(db, SQLLOCK_SQL_RECORD_CAS, args, 3, &affected,
                    "writing the record");
    if (rc != SQLLOCK_OK)
        return rc;
    if (affected == 0)
        return sqllock__fail(db, SQLLOCK_CONFLICT, "record '%s' is no longer "
                             "at version %lld (or is gone)", key,
                             (long long)expected);
    if (new_version != NULL)
        *new_version = expected + 1;
    return sqllock__ok(db);
}

int sqllock_record_delete(sqllock_db *db, const char *key, int64_t expected)
{
    sqllock_value args[2];
    int64_t affected = 0;
    int rc;

    if ((rc = check_db(db)) != SQLLOCK_OK ||
        (rc = sqllock__check_name(db, key, "record key")) != SQLLOCK_OK)
        return rc;
    /* A delete writes no new version, so any positive version will do. */
    if (expected < 1)
        return sqllock__fail(db, SQLLOCK_EINVAL, "the expected version must "
                             "be positive (got %lld)", (long long)expected);
    args[0] = sqllock__text(key);
    args[1] = sqllock__int(expected);
    rc = write_rows(db, SQLLOCK_SQL_RECORD_DELETE, args, 2, &affected,
                    "deleting the record");
    if (rc != SQLLOCK_OK)
        return rc;
    if (affected == 0)
        return sqllock__fail(db, SQLLOCK_CONFLICT, "record '%s' is no longer "
                             "at version %lld (or is gone)", key,
                             (long long)expected);
    return sqllock__ok(db);
}

/* Jittered exponential backoff between attempts (DESIGN O2). */
static void retry_sleep(const sqllock_retry_options *o, int attempt)
{
    int64_t min = o && o->backoff_min_ms > 0 ? o->backoff_min_ms : 1;
    int64_t max = o && o->backoff_max_ms > 0 ? o->backoff_max_ms : 100;
    int64_t cap = min;
    int i;

    for (i = 1; i < attempt && cap < max && cap <= INT64_MAX / 2; i++)
        cap *= 2;
    if (cap > max)
        cap = max;
    sqllock__sleep_ms(sqllock__rand_upto(cap));
}

/* Every field of sqllock_retry_options is in its struct_version 1, so
 * none is gated here. A field appended in version N must be read only
 * when o->struct_version >= N (an older caller's struct ends before it),
 * as read_options() in db.c reads statement_timeout_ms; this stops the
 * build when the version moves without that check being written. */
typedef char sqllock__retry_options_is_v1[
    SQLLOCK_RETRY_OPTIONS_VERSION == 1 ? 1 : -1];

static int retry_options(sqllock_db *db, const sqllock_retry_options *o,
                         int *max_attempts)
{
    *max_attempts = 16;
    if (o == NULL)
        return SQLLOCK_OK;
    if (o->max_attempts < 0 || o->backoff_min_ms < 0 || o->backoff_max_ms < 0)
        return sqllock__fail(db, SQLLOCK_EINVAL, "retry options must not be "
                             "negative");
    if (o->max_attempts > 0)
        *max_attempts = o->max_attempts;
    return SQLLOCK_OK;
}

/* A deadlock or serialization failure inside a transaction, which the
 * retry helper returns: what to do about it. */
static int not_retried(sqllock_db *db, int rc)
{
    char why[SQLLOCK__ERRMSG_MAX];

    memcpy(why, db->errmsg, sizeof why);
    return sqllock__fail(db, rc, "%s; not retried: the database ended the "
                         "whole transaction, so roll it back and run it "
                         "again (at REPEATABLE READ, a row changed after "
                         "the transaction's first read cannot be written "
                         "in it)", why);
}

int sqllock_record_update(sqllock_db *db, const char *key,
                          sqllock_update_fn fn, void *ctx,
                          const sqllock_retry_options *opts, int *attempts)
{
    int max_attempts, attempt, in_txn = 0, rc;

    if (attempts != NULL)
        *attempts = 0;
    if ((rc = check_db(db)) != SQLLOCK_OK ||
        (rc = sqllock__check_name(db, key, "record key")) != SQLLOCK_OK ||
        (rc = retry_options(db, opts, &max_attempts)) != SQLLOCK_OK)
        return rc;
    if (fn == NULL)
        return sqllock__fail(db, SQLLOCK_EINVAL, "the update function is "
                             "NULL");
    /* Inside a transaction -- a sqllock_txn on the handle, or the
     * application's own on a borrowed connection -- the record is read
     * with a lock (record_read()), so that a retry sees what the last
     * writer committed and not the snapshot of the transaction's first
     * read again (MySQL REPEATABLE READ). */
    if ((rc = sqllock__in_txn(db, &in_txn)) != SQLLOCK_OK)
        return rc;
    for (attempt = 1;; attempt++) {
        void *old = NULL;
        size_t old_len = 0, out_len = 0;
        const void *out = NULL;
        int64_t version = 0;
        int exists;

        if (attempts != NULL)
            *attempts = attempt;
        rc = record_read(db, key, in_txn, &old, &old_len, &version);
        if (in_txn && !sqllock__txn_is_failed(db) &&
            (rc == SQLLOCK_EDEADLOCK || rc == SQLLOCK_ESERIALIZATION))
            return not_retried(db, rc);
        if (rc != SQLLOCK_OK && rc != SQLLOCK_NOTFOUND)
            return rc;
        exists = rc == SQLLOCK_OK;
        rc = fn(ctx, exists ? old : NULL, exists ? old_len : 0, &out,
                &out_len);
        sqllock_free(old);
        if (rc != SQLLOCK_OK)
            return sqllock__fail(db, rc, "the update function of record '%s' "
                                 "returned %s", key, sqllock_errname(rc));
        if (exists)
            rc = sqllock_record_cas(db, key, version, out, out_len, NULL);
        else
            rc = sqllock_record_create(db, key, out, out_len);
        /* A deadlock or serialization failure rolled the one write back,
         * so nothing changed: it is another writer in the way, as a
         * conflict is. (Galera reports a write that lost certification
         * against another node's as a deadlock.) Not inside a
         * transaction, though: there the database rolled back (or, on
         * PostgreSQL, aborted) the whole transaction, which a retry
         * cannot redo -- on a borrowed MySQL connection the retry would
         * even commit on its own, outside the application's transaction
         * -- and a row-lock transaction has failed (R7). */
        if (rc != SQLLOCK_CONFLICT && rc != SQLLOCK_EDEADLOCK &&
            rc != SQLLOCK_ESERIALIZATION)
            return rc;
        if (rc != SQLLOCK_CONFLICT && sqllock__txn_is_failed(db))
            return rc;
        if (rc != SQLLOCK_CONFLICT && in_txn)
            return not_retried(db, rc);
        if (attempt >= max_attempts)
            return sqllock__fail(db, SQLLOCK_CONFLICT, "record '%s' was "
                                 "changed by other writers in each of %d "
                                 "attempts", key, attempt);
        retry_sleep(opts, attempt);
    }
}

/* ------------------------------------------------------------------------ */
/* The application's tables                                                  */
/* ------------------------------------------------------------------------ */

/* [A-Za-z_][A-Za-z0-9_]*, 1..IDENT_MAX bytes, over s[0..len). */
static int ident_ok(const char *s, size_t len)
{
    size_t i;

    if (len == 0 || len > IDENT_MAX)
        return 0;
    for (i = 0; i < len; i++) {
        char c = s[i];
        int alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                    c == '_';
        if (!alpha && !(i > 0 && c >= '0' && c <= '9'))
            return 0;
    }
    return 1;
}

int sqllock__check_ident(sqllock_db *db, const char *s, int qualified,
                        const char *what)
{
    const char *dot;

    if (s == NULL)
        return sqllock__fail(db, SQLLOCK_EINVAL, "the %s is NULL", what);
    dot = qualified ? strchr(s, '.') : NULL;
    if (dot != NULL ? (ident_ok(s, (size_t)(dot - s)) &&
                       ident_ok(dot + 1, strlen(dot + 1)))
                    : ident_ok(s, strlen(s)))
        return SQLLOCK_OK;
    return sqllock__fail(db, SQLLOCK_EINVAL, "the %s '%.80s%s' is not a valid "
                         "identifier: use [A-Za-z_][A-Za-z0-9_]*, at most %d "
                         "characters%s", what, s, strlen(s) > 80 ? "..." : "",
                         IDENT_MAX, qualified ? ", optionally schema.table" : "");
}

/* A statement under construction. */
typedef struct sqlbuf {
    const sqllock_dialect *d;
    char text[SQL_MAX];
    size_t len;
    int nph;
    int overflow;
} sqlbuf;

static void sb_add(sqlbuf *b, const char *s)
{
    size_t n = strlen(s);

    if (b->len + n >= sizeof b->text) {
        b->overflow = 1;
        return;
    }
    memcpy(b->text + b->len, s, n + 1);
    b->len += n;
}

/* Appends a validated identifier, quoted; "schema.table" becomes
 * "schema"."table". */
static void sb_ident(sqlbuf *b, const char *ident)
{
    char q[2] = { b->d->ident_quote ? b->d->ident_quote : '"', '\0' };
    const char *dot = strchr(ident, '.');
    char part[IDENT_MAX + 1];

    if (dot != NULL) {
        memcpy(part, ident, (size_t)(dot - ident));
        part[dot - ident] = '\0';
        sb_add(b, q);
        sb_add(b, part);
        sb_add(b, q);
        sb_add(b, ".");
        ident = dot + 1;
    }
    sb_add(b, q);
    sb_add(b, ident);
    sb_add(b, q);
}

static void sb_placeholder(sqlbuf *b)
{
    char ph[16];

    b->nph++;
    if (b->d->placeholder == SQLLOCK_PLACEHOLDER_DOLLAR)
        snprintf(ph, sizeof ph, "$%d", b->nph);
    else
        snprintf(ph, sizeof ph, "?");
    sb_add(b, ph);
}

static sqllock_value cell_value(const sqllock_cell *c)
{
    return c->text != NULL ? sqllock__text(c->text) : sqllock__int(c->number);
}

/* `version_optional`: a fenced or guarded update may have no version
 * column. */
static int check_table(sqllock_db *db, const sqllock_table *t,
                       const sqllock_cell *key, int version_optional)
{
    int rc;

    if ((rc = check_db(db)) != SQLLOCK_OK)
        return rc;
    if (t == NULL)
        return sqllock__fail(db, SQLLOCK_EINVAL, "the table description is "
                             "NULL");
    if (key == NULL)
        return sqllock__fail(db, SQLLOCK_EINVAL, "the key is NULL");
    if ((rc = sqllock__check_ident(db, t->table, 1, "table name")) != SQLLOCK_OK ||
        (rc = sqllock__check_ident(db, t->key_column, 0, "key column")) != SQLLOCK_OK ||
        (!(version_optional && t->version_column == NULL) &&
         (rc = sqllock__check_ident(db, t->version_column, 0,
                                    "version column")) != SQLLOCK_OK))
        return rc;
    return SQLLOCK_OK;
}

static int check_cells(sqllock_db *db, const sqllock_cell *cells, int n,
                       int assignments)
{
    int i, rc;

    if (n < 0 || n > CELLS_MAX || (n > 0 && cells == NULL))
        return sqllock__fail(db, SQLLOCK_EINVAL, "%s: give 0 to %d of them "
                             "(got %d%s)", assignments ? "assignments" :
                             "conditions", CELLS_MAX, n,
                             n > 0 && cells == NULL ? ", NULL array" : "");
    for (i = 0; i < n; i++) {
        int is_assign = cells[i].op == SQLLOCK_OP_SET ||
                        cells[i].op == SQLLOCK_OP_ADD ||
                        cells[i].op == SQLLOCK_OP_SUB;
        int is_cond = cells[i].op >= SQLLOCK_OP_EQ &&
                      cells[i].op <= SQLLOCK_OP_GE;
        rc = sqllock__check_ident(db, cells[i].column, 0, "column name");
        if (rc != SQLLOCK_OK)
            return rc;
        if ((cells[i].op == SQLLOCK_OP_ADD || cells[i].op == SQLLOCK_OP_SUB) &&
            cells[i].text != NULL)
            return sqllock__fail(db, SQLLOCK_EINVAL, "assignment #%d on "
                                 "column '%s' adds or subtracts a text "
                                 "value: arithmetic takes a number", i + 1,
                                 cells[i].column);
        if (assignments ? !is_assign : !is_cond)
            return sqllock__fail(db, SQLLOCK_EINVAL, "%s #%d on column '%s' "
                                 "has operator %d, which is not a%s", assignments
                                 ? "assignment" : "condition", i + 1,
                                 cells[i].column, (int)cells[i].op, assignments
                                 ? "n assignment (SET, ADD, SUB)"
                                 : " condition (EQ, NE, LT, LE, GT, GE)");
    }
    return SQLLOCK_OK;
}

/* Maps an error on the application's table: a missing table is the
 * caller's argument, not the sqllock schema. */
static int table_error(sqllock_db *db, int rc, const sqllock_table *t)
{
    char why[SQLLOCK__ERRMSG_MAX];

    if (rc == SQLLOCK_ENOSCHEMA || rc == SQLLOCK_EDB) {
        memcpy(why, db->errmsg, sizeof why);
        return sqllock__fail(db, rc == SQLLOCK_ENOSCHEMA ? SQLLOCK_EINVAL : rc,
                             "table '%s' (key column '%s', version column "
                             "'%s'): %s", t->table, t->key_column,
                             t->version_column != NULL ? t->version_column :
                             "(none)", why);
    }
    return rc;
}

typedef sqllock__write_check write_check;

/* Appends " AND <column> <op> ?" for each condition. */
static void sb_conds(sqlbuf *b, const sqllock_cell *conds, int nconds,
                     sqllock_value *args, int *n)
{
    static const char *const cmp[] = { "=", "<>", "<", "<=", ">", ">=" };
    int i;

    for (i = 0; i < nconds; i++) {
        sb_add(b, " AND ");
        sb_ident(b, conds[i].column);
        sb_add(b, " ");
        sb_add(b, cmp[conds[i].op - SQLLOCK_OP_EQ]);
        sb_add(b, " ");
        sb_placeholder(b);
        args[(*n)++] = cell_value(&conds[i]);
    }
}

/* Appends the SET list: <sets>, [fence = ?,] [v = v + 1]. */
static void sb_sets(sqlbuf *b, const sqllock_table *t, const write_check *w,
                    const sqllock_cell *sets, int nsets,
                    sqllock_value *args, int *n)
{
    const char *sep = "";
    int i;

    for (i = 0; i < nsets; i++, sep = ", ") {
        sb_ident(b, sets[i].column);
        sb_add(b, " = ");
        if (sets[i].op != SQLLOCK_OP_SET) {
            sb_ident(b, sets[i].column);
            sb_add(b, sets[i].op == SQLLOCK_OP_ADD ? " + " : " - ");
        }
        sb_placeholder(b);
        args[(*n)++] = cell_value(&sets[i]);
    }
    if (w->fence != NULL) {
        sb_add(b, sep);
        sb_ident(b, w->fence);
        sb_add(b, " = ");
        sb_placeholder(b);
        args[(*n)++] = sqllock__int(w->token);
        sep = ", ";
    }
    if (t->version_column != NULL) {
        sb_add(b, sep);
        sb_ident(b, t->version_column);
        sb_add(b, " = ");
        sb_ident(b, t->version_column);
        sb_add(b, " + 1");
    }
}

/* Appends " AND <guard>" (contract G1): the dialect's LEASE_GUARD with
 * the dialect's own placeholders, numbered on from the statement's. */
static int sb_guard(sqllock_db *db, sqlbuf *b, const write_check *w,
                    sqllock_value *args, int *n)
{
    char guard[SQLLOCK_GUARD_SQL_MAX];
    int rc, style = b->d->placeholder == SQLLOCK_PLACEHOLDER_DOLLAR
                        ? SQLLOCK_PARAM_DOLLAR : SQLLOCK_PARAM_QMARK;

    rc = sqllock__guard_text(db, style, b->nph + 1, guard, sizeof guard,
                             NULL);
    if (rc != SQLLOCK_OK)
        return rc;
    sb_add(b, " AND ");
    sb_add(b, guard);
    b->nph += 2;
    args[(*n)++] = sqllock__text(w->guard_name);
    args[(*n)++] = sqllock__int(w->token);
    return SQLLOCK_OK;
}

/*
 * Builds and runs UPDATE t SET <sets>, [fence = ?,] [v = v + 1] WHERE
 * k = ? [AND v = ?] [AND v < max] [AND COALESCE(fence, 0) <= ?] AND
 * <conds> [AND <guard>]. Returns SQLLOCK_OK, SQLLOCK_CONFLICT when no row
 * matched, or an error.
 */
int sqllock__table_write(sqllock_db *db, const sqllock_table *t,
                         const sqllock_cell *key, const write_check *w,
                         const sqllock_cell *sets, int nsets,
                         const sqllock_cell *conds, int nconds)
{
    sqllock_value args[2 * CELLS_MAX + 6];
    sqllock_stmt *st = NULL;
    sqlbuf b;
    int64_t affected;
    int n = 0, rc;

    if ((rc = check_table(db, t, key, w->fence != NULL ||
                                      w->guard_name != NULL)) != SQLLOCK_OK ||
        (rc = check_cells(db, sets, nsets, 1)) != SQLLOCK_OK ||
        (rc = check_cells(db, conds, nconds, 0)) != SQLLOCK_OK)
        return rc;
    if (nsets == 0 && w->fence == NULL)
        return sqllock__fail(db, SQLLOCK_EINVAL, "at least one assignment is "
                             "needed");
    memset(&b, 0, sizeof b);
    b.d = db->drv->dialect;
    sb_add(&b, "UPDATE ");
    sb_ident(&b, t->table);
    sb_add(&b, " SET ");
    sb_sets(&b, t, w, sets, nsets, args, &n);
    sb_add(&b, " WHERE ");
    sb_ident(&b, t->key_column);
    sb_add(&b, " = ");
    sb_placeholder(&b);
    args[n++] = cell_value(key);
    if (w->expected >= 0) {
        sb_add(&b, " AND ");
        sb_ident(&b, t->version_column);
        sb_add(&b, " = ");
        sb_placeholder(&b);
        args[n++] = sqllock__int(w->expected);
    }
    /* A version at the largest integer cannot be bumped: no row matches
     * (SQLite would otherwise turn it into a float). */
    if (t->version_column != NULL) {
        sb_add(&b, " AND ");
        sb_ident(&b, t->version_column);
        sb_add(&b, " < 9223372036854775807");
    }
    /* The fence: no writer with a larger token has written the row. */
    if (w->fence != NULL) {
        sb_add(&b, " AND COALESCE(");
        sb_ident(&b, w->fence);
        sb_add(&b, ", 0) <= ");
        sb_placeholder(&b);
        args[n++] = sqllock__int(w->token);
    }
    sb_conds(&b, conds, nconds, args, &n);
    if (w->guard_name != NULL &&
        (rc = sb_guard(db, &b, w, args, &n)) != SQLLOCK_OK)
        return rc;
    if (b.overflow)
        return sqllock__fail(db, SQLLOCK_EINVAL, "the statement would be "
                             "longer than %d bytes", SQL_MAX);
    rc = run_dyn(db, b.text, args, n, "updating the row", &st);
    if (rc != SQLLOCK_OK)
        return table_error(db, rc, t);
    affected = db->drv->affected_rows(st);
    db->drv->reset(st);
    if (affected == 0)
        return sqllock__fail(db, SQLLOCK_CONFLICT, "no row of '%s' matched: %s",
                             t->table, w->expected >= 0 ? "the version moved, "
                             "a condition failed, or the row is gone" :
                             "a condition failed, or the row is gone");
    return sqllock__ok(db);
}

int sqllock_table_cas(sqllock_db *db, const sqllock_table *t,
                      const sqllock_cell *key, int64_t expected,
                      const sqllock_cell *sets, int nsets,
                      const sqllock_cell *conds, int nconds,
                      int64_t *new_version)
{
    write_check w = { 0, NULL, 0, NULL };
    int rc;

    if (new_version != NULL)
        *new_version = 0;
    if ((rc = check_db(db)) != SQLLOCK_OK)
        return rc;
    if ((rc = check_version(db, expected)) != SQLLOCK_OK)
        return rc;
    w.expected = expected;
    rc = sqllock__table_write(db, t, key, &w, sets, nsets, conds, nconds);
    if (rc == SQLLOCK_OK && new_version != NULL)
        *new_version = expected + 1;
    return rc;
}

int sqllock_table_update(sqllock_db *db, const sqllock_table *t,
                         const sqllock_cell *key, const sqllock_cell *sets,
                         int nsets, const sqllock_cell *conds, int nconds)
{
    write_check w = { -1, NULL, 0, NULL };

    return sqllock__table_write(db, t, key, &w, sets, nsets, conds, nconds);
}

/* After a fenced update matched nothing: why? The row's fence decides
 * between LOST (a larger token wrote it) and CONFLICT (a condition). */
int sqllock__fence_verdict(sqllock_db *db, const sqllock_table *t,
                         const sqllock_cell *key, const char *fence,
                         int64_t token)
{
    sqllock_table probe = { t->table, t->key_column, fence };
    int64_t seen = 0;
    int rc = sqllock_table_get(db, &probe, key, NULL, 0, NULL, &seen);

    if (rc != SQLLOCK_OK)
        return rc;
    if (seen > token)
        return sqllock__fail(db, SQLLOCK_LOST, "fenced update of '%s' "
                             "refused: token %lld is stale, a holder with "
                             "token %lld has written the row", t->table,
                             (long long)token, (long long)seen);
    return sqllock__fail(db, SQLLOCK_CONFLICT, "fenced update of '%s': the "
                         "token %lld is current but a condition failed%s",
                         t->table, (long long)token,
                         t->version_column != NULL ? " (or the version is "
                         "at its largest value)" : "");
}

int sqllock_table_fenced_update(sqllock_db *db, const sqllock_table *t,
                                const sqllock_cell *key,
                                const char *fence_column, int64_t token,
                                const sqllock_cell *sets, int nsets,
                                const sqllock_cell *conds, int nconds)
{
    write_check w = { -1, NULL, 0, NULL };
    int rc;

    if ((rc = check_db(db)) != SQLLOCK_OK)
        return rc;
    if ((rc = sqllock__check_ident(db, fence_column, 0, "fence column")) !=
        SQLLOCK_OK)
        return rc;
    if (token <= 0)
        return sqllock__fail(db, SQLLOCK_EINVAL, "fencing token %lld: a "
                             "token is positive (a fast-mode lease has "
                             "none, and cannot fence writes)",
                             (long long)token);
    w.fence = fence_column;
    w.token = token;
    rc = sqllock__table_write(db, t, key, &w, sets, nsets, conds, nconds);
    if (rc == SQLLOCK_CONFLICT)
        rc = sqllock__fence_verdict(db, t, key, fence_column, token);
    return rc;
}

int sqllock_table_get(sqllock_db *db, const sqllock_table *t,
                      const sqllock_cell *key, const char *const *columns,
                      int ncolumns, int64_t *values, int64_t *version)
{
    sqllock_value arg;
    sqllock_stmt *st = NULL;
    sqlbuf b;
    int i, rc, has_row = 0;

    if (version != NULL)
        *version = 0;
    if ((rc = check_table(db, t, key, 0)) != SQLLOCK_OK)
        return rc;
    if (ncolumns < 0 || ncolumns > TABLE_GET_MAX ||
        (ncolumns > 0 && (columns == NULL || values == NULL)))
        return sqllock__fail(db, SQLLOCK_EINVAL, "give 0 to %d columns and "
                             "an array for their values", TABLE_GET_MAX);
    for (i = 0; i < ncolumns; i++) {
        values[i] = 0;
        if ((rc = sqllock__check_ident(db, columns[i], 0, "column name")) != SQLLOCK_OK)
            return rc;
    }
    memset(&b, 0, sizeof b);
    b.d = db->drv->dialect;
    sb_add(&b, "SELECT ");
    sb_ident(&b, t->version_column);
    for (i = 0; i < ncolumns; i++) {
        sb_add(&b, ", ");
        sb_ident(&b, columns[i]);
    }
    sb_add(&b, " FROM ");
    sb_ident(&b, t->table);
    sb_add(&b, " WHERE ");
    sb_ident(&b, t->key_column);
    sb_add(&b, " = ");
    sb_placeholder(&b);
    if (b.overflow)
        return sqllock__fail(db, SQLLOCK_EINVAL, "the statement would be "
                             "longer than %d bytes", SQL_MAX);
    arg = cell_value(key);
    rc = run_dyn(db, b.text, &arg, 1, "reading the row", &st);
    if (rc != SQLLOCK_OK)
        return table_error(db, rc, t);
    rc = fetch_dyn(db, st, &has_row, "reading the row");
    if (rc != SQLLOCK_OK)
        return table_error(db, rc, t);
    if (!has_row) {
        db->drv->reset(st);
        return sqllock__fail(db, SQLLOCK_NOTFOUND, "no row of '%s' has that "
                             "key", t->table);
    }
    if (version != NULL)
        *version = db->drv->column_int64(st, 0);
    for (i = 0; i < ncolumns; i++)
        values[i] = db->drv->column_int64(st, i + 1);
    db->drv->reset(st);
    return sqllock__ok(db);
}

int sqllock__sql_select_key(sqllock_db *db, const sqllock_table *t,
                            const char *suffix, char *out, size_t size)
{
    sqlbuf b;

    memset(&b, 0, sizeof b);
    b.d = db->drv->dialect;
    sb_add(&b, "SELECT ");
    sb_ident(&b, t->key_column);
    sb_add(&b, " FROM ");
    sb_ident(&b, t->table);
    sb_add(&b, " WHERE ");
    sb_ident(&b, t->key_column);
    sb_add(&b, " = ");
    sb_placeholder(&b);
    sb_add(&b, suffix != NULL ? suffix : "");
    if (b.overflow || b.len >= size)
        return sqllock__fail(db, SQLLOCK_EINVAL, "the statement would be "
                             "longer than %zu bytes", size);
    memcpy(out, b.text, b.len + 1);
    return SQLLOCK_OK;
}
