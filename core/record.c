/*
 * record.c -- versioned records, the library's own table (DESIGN O1-O3).
 *
 * No lock is held. A record carries a version; a write names the version
 * it read and changes one row (success) or none (SQLLOCK_CONFLICT). Each
 * dialect has one statement per operation; sqllock_record_update() is the
 * read-modify-write loop around them.
 *
 * Inside a row-lock transaction on the same handle the statements run in
 * it (R4): every one goes through txn.c's sqllock__txn_run() and the
 * like, which refuse to run in a transaction that has failed and fail
 * the transaction when a statement's failure ended it (R7).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"


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
    int rc = sqllock__txn_run(db, id, args, nargs, what);

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
    if ((rc = sqllock__check_db(db)) != SQLLOCK_OK ||
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
    if ((rc = sqllock__check_db(db)) != SQLLOCK_OK)
        return rc;
    if (db->drv->column_blob == NULL)
        return sqllock__fail(db, SQLLOCK_EUNSUPPORTED, "the %s driver cannot "
                             "read binary values", db->drv->name);
    get = sqllock__sql_of(db->drv, SQLLOCK_SQL_RECORD_GET);
    lock = db->drv->dialect->for_update[SQLLOCK_LOCK_WAIT];
    arg = sqllock__text(key);
    if (locking && lock != NULL && lock[0] != '\0' && get != NULL) {
        char sql[SQLLOCK__SQL_MAX];
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
                                 SQLLOCK__SQL_MAX);
        dyn = 1;
        rc = sqllock__txn_run_dyn(db, sql, args, nargs, what, &st);
        if (rc == SQLLOCK_OK)
            rc = sqllock__txn_fetch_dyn(db, st, &has_row, what);
    } else {
        rc = sqllock__txn_run(db, SQLLOCK_SQL_RECORD_GET, &arg, 1, what);
        if (rc == SQLLOCK_OK)
            rc = sqllock__txn_fetch(db, SQLLOCK_SQL_RECORD_GET, &has_row,
                                    what);
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

    if ((rc = sqllock__check_db(db)) != SQLLOCK_OK ||
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

    if ((rc = sqllock__check_db(db)) != SQLLOCK_OK ||
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
    if ((rc = sqllock__check_db(db)) != SQLLOCK_OK ||
        (rc = sqllock__check_name(db, key, "record key")) != SQLLOCK_OK)
        return rc;
    return sqllock__record_cas(db, key, expected, value, len, new_version);
}

static int record_cas_body(sqllock_db *db, const char *key, int64_t expected,
                           const void *value, size_t len, int64_t *new_version)
{
    sqllock_value args[3];
    int64_t affected = 0;
    int rc;

    if (new_version != NULL)
        *new_version = 0;
    if ((rc = sqllock__check_db(db)) != SQLLOCK_OK ||
        (rc = check_value(db, value, len)) != SQLLOCK_OK ||
        (rc = sqllock__check_version(db, expected)) != SQLLOCK_OK)
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

int sqllock__record_cas(sqllock_db *db, const char *key, int64_t expected,
                        const void *value, size_t len, int64_t *new_version)
{
    int rc, op = sqllock__op_set(db, SQLLOCK__OP_RECORD);

    rc = record_cas_body(db, key, expected, value, len, new_version);
    sqllock__op_set(db, op);
    sqllock__m_cas(db, rc);
    return rc;
}

int sqllock_record_delete(sqllock_db *db, const char *key, int64_t expected)
{
    sqllock_value args[2];
    int64_t affected = 0;
    int rc;

    if ((rc = sqllock__check_db(db)) != SQLLOCK_OK ||
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
    if ((rc = sqllock__check_db(db)) != SQLLOCK_OK ||
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

/* The end of the key range of `prefix` (exclusive): the prefix with its
 * last code point one higher (UTF-8 orders as code points do, so every
 * key that begins with the prefix is below it, and no other key of that
 * start); a last U+10FFFF is dropped and the one before raised. With no
 * code point left (the empty prefix), 64 x U+10FFFF: above every key of
 * at most SQLLOCK_NAME_MAX bytes. `hi` holds SQLLOCK_NAME_MAX + 5. */
static void prefix_end(const char *prefix, char *hi)
{
    size_t n = strlen(prefix), start;
    uint32_t cp;
    int i;

    memcpy(hi, prefix, n + 1);
    while (n > 0) {
        start = n - 1;
        while (start > 0 && ((unsigned char)hi[start] & 0xc0) == 0x80)
            start--;
        cp = (unsigned char)hi[start];
        cp = cp < 0x80 ? cp : cp < 0xe0 ? cp & 0x1f : cp < 0xf0 ? cp & 0x0f
                                                                 : cp & 0x07;
        for (i = (int)start + 1; i < (int)n; i++)
            cp = (cp << 6) | ((unsigned char)hi[i] & 0x3f);
        n = start;
        if (cp == 0x10ffff)
            continue;
        cp = cp == 0xd7ff ? 0xe000 : cp + 1;
        if (cp < 0x80) {
            hi[n++] = (char)cp;
        } else if (cp < 0x800) {
            hi[n++] = (char)(0xc0 | (cp >> 6));
            hi[n++] = (char)(0x80 | (cp & 0x3f));
        } else if (cp < 0x10000) {
            hi[n++] = (char)(0xe0 | (cp >> 12));
            hi[n++] = (char)(0x80 | ((cp >> 6) & 0x3f));
            hi[n++] = (char)(0x80 | (cp & 0x3f));
        } else {
            hi[n++] = (char)(0xf0 | (cp >> 18));
            hi[n++] = (char)(0x80 | ((cp >> 12) & 0x3f));
            hi[n++] = (char)(0x80 | ((cp >> 6) & 0x3f));
            hi[n++] = (char)(0x80 | (cp & 0x3f));
        }
        hi[n] = '\0';
        return;
    }
    for (i = 0; i < 64; i++)
        memcpy(hi + 4 * i, "\xf4\x8f\xbf\xbf", 4);
    hi[256] = '\0';
}

int sqllock_record_list(sqllock_db *db, const char *prefix,
                        int (*cb)(void *ctx, const char *key,
                                  const void *value, size_t len,
                                  int64_t version),
                        void *ctx)
{
    const char *what = "listing records";
    char hi[SQLLOCK_NAME_MAX + 8];
    sqllock_value args[2];
    sqllock_stmt *st;
    size_t plen;
    int rc, has_row = 0, stop = 0;

    if ((rc = sqllock__check_db(db)) != SQLLOCK_OK)
        return rc;
    if (cb == NULL)
        return sqllock__fail(db, SQLLOCK_EINVAL, "sqllock_record_list: the "
                             "callback is NULL");
    if (prefix == NULL)
        return sqllock__fail(db, SQLLOCK_EINVAL, "the record key prefix is "
                             "NULL (\"\" lists every record)");
    plen = strlen(prefix);
    if (plen > 0 &&
        (rc = sqllock__check_name(db, prefix, "record key prefix")) !=
            SQLLOCK_OK)
        return rc;
    if (sqllock__sql_of(db->drv, SQLLOCK_SQL_RECORD_RANGE) == NULL ||
        db->drv->column_blob == NULL)
        return sqllock__fail(db, SQLLOCK_EUNSUPPORTED, "the %s driver cannot "
                             "list records (RECORD_RANGE)", db->drv->name);
    prefix_end(prefix, hi);
    args[0] = sqllock__text(prefix);
    args[1] = sqllock__text(hi);
    rc = sqllock__txn_run(db, SQLLOCK_SQL_RECORD_RANGE, args, 2, what);
    if (rc != SQLLOCK_OK)
        return rc;
    st = db->stmts[SQLLOCK_SQL_RECORD_RANGE];
    for (;;) {
        const char *key;
        const void *bytes;
        size_t n = 0;

        rc = sqllock__txn_fetch(db, SQLLOCK_SQL_RECORD_RANGE, &has_row, what);
        if (rc != SQLLOCK_OK)
            return rc;
        if (!has_row)
            break;
        key = db->drv->column_text(st, 0);
        if (key == NULL || strchr(key, SQLLOCK__SEP) != NULL)
            continue;               /* the library's own (derived names) */
        bytes = db->drv->column_blob(st, 1, &n);
        if (bytes == NULL) {
            sqllock__end(db, SQLLOCK_SQL_RECORD_RANGE);
            return sqllock__fail(db, SQLLOCK_ENOMEM, "%s: out of memory",
                                 what);
        }
        stop = cb(ctx, key, bytes, n, db->drv->column_int64(st, 2));
        if (stop != 0)
            break;
    }
    sqllock__end(db, SQLLOCK_SQL_RECORD_RANGE);
    sqllock__ok(db);
    return stop;
}
