/*
 * history.c -- a lock name's history (issue 15 item 7; in the library
 * since issue 29): one of the versioned records (DESIGN O1), keyed
 * "sqllock:history:NAME", whose value is up to SQLLOCK_HISTORY_MAX lines
 * of runs and as many audit lines, newest first, each
 *
 *   KIND \t TOKEN \t START_MS \t END_MS \t EXIT \t STATUS \t WHO \n
 *
 * with KIND "run" (`sqllock run`), "force" (a forced release) or "clear"
 * (a clearing of the history). A forced release writes its audit line
 * and deletes the lease row in one transaction (DESIGN C5): the
 * statements HISTORY_PUT and LEASE_FORCE_DELETE of the dialect, the
 * first replacing SQLLOCK_HISTORY_ROLE in the line by the database's
 * current user.
 */
#include <inttypes.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

#define HISTORY_PREFIX "sqllock:history:"

/* A 64-bit FNV-1a hash, to tell apart long names cut to fit a key. */
static uint64_t fnv1a(const char *s)
{
    uint64_t h = 0xcbf29ce484222325u;

    for (; *s != '\0'; s++) {
        h ^= (unsigned char)*s;
        h *= 0x100000001b3u;
    }
    return h;
}

void sqllock__record_key(const char *prefix, const char *name, char *key,
                         size_t size)
{
    size_t plen = strlen(prefix), n = strlen(name), keep;

    if (plen + n <= SQLLOCK_NAME_MAX) {
        snprintf(key, size, "%s%s", prefix, name);
        return;
    }
    keep = SQLLOCK_NAME_MAX - plen - 17;
    while (keep > 0 && ((unsigned char)name[keep] & 0xC0) == 0x80)
        keep--;
    snprintf(key, size, "%s%.*s#%016" PRIx64, prefix, (int)keep, name,
             fnv1a(name));
}

void sqllock_history_key(const char *name, char *key, size_t size)
{
    sqllock__record_key(HISTORY_PREFIX, name, key, size);
}

/* Copies `s` into a field of a line: tabs and line breaks become spaces,
 * so that a holder text cannot break the format. */
static void field(char *out, size_t size, const char *s)
{
    size_t i;

    snprintf(out, size, "%s", s != NULL ? s : "");
    for (i = 0; out[i] != '\0'; i++)
        if (out[i] == '\t' || out[i] == '\n' || out[i] == '\r')
            out[i] = ' ';
}

typedef struct note_ctx {
    const char *kind;
    int64_t token, start_ms, end_ms;
    int exit_code;
    const char *status;
    const char *who;
    char *buf;                  /* the new value, kept for the CAS */
    int all;                    /* a clearing of everything */
} note_ctx;

/* An audit line: a forced release, or a clearing of the history. */
static int audit_kind(const char *line, size_t len)
{
    return (len > 6 && strncmp(line, "force\t", 6) == 0) ||
           (len > 6 && strncmp(line, "clear\t", 6) == 0);
}

/* The new line (`kind`, the fields of `n`), followed by the old lines
 * `keep` lets through. */
static int history_value(note_ctx *n, const char *old, size_t old_len,
                         int (*keep)(note_ctx *, const char *, size_t),
                         char **out, size_t *out_len)
{
    char who[SQLLOCK_HOLDER_MAX + 64], status[32];
    char line[SQLLOCK_HISTORY_LINE_MAX];
    const char *p = old, *end = p != NULL ? p + old_len : NULL;
    size_t cap = SQLLOCK_HISTORY_LINE_MAX * (2 * SQLLOCK_HISTORY_MAX + 1);
    size_t len;
    int runs = 0, audits = 0;
    char *buf = malloc(cap);

    if (buf == NULL)
        return SQLLOCK_ENOMEM;
    field(who, sizeof who, n->who);
    field(status, sizeof status, n->status);
    snprintf(line, sizeof line, "%s\t%" PRId64 "\t%" PRId64 "\t%" PRId64
             "\t%d\t%s\t%s\n", n->kind, n->token, n->start_ms, n->end_ms,
             n->exit_code, status, who);
    len = strlen(line);
    memcpy(buf, line, len);
    if (audit_kind(line, len))
        audits++;
    else
        runs++;
    while (p != NULL && p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t l = nl != NULL ? (size_t)(nl - p) + 1 : (size_t)(end - p);
        int audit = audit_kind(p, l);

        /* Each kind keeps its SQLLOCK_HISTORY_MAX newest: runs never push
         * the audit of forced releases out. */
        if ((audit ? audits : runs) < SQLLOCK_HISTORY_MAX &&
            l < SQLLOCK_HISTORY_LINE_MAX && len + l + 1 < cap &&
            keep(n, p, l)) {
            memcpy(buf + len, p, l);
            len += l;
            if (buf[len - 1] != '\n')
                buf[len++] = '\n';
            if (audit)
                audits++;
            else
                runs++;
        }
        p += l;
    }
    *out = buf;
    *out_len = len;
    return SQLLOCK_OK;
}

/* A run's note keeps every old line but the same run's earlier one
 * (kind "run" and the same token). */
static int keep_but_same_run(note_ctx *n, const char *p, size_t l)
{
    char head[64];

    snprintf(head, sizeof head, "run\t%" PRId64 "\t", n->token);
    return !(l > strlen(head) && strncmp(p, head, strlen(head)) == 0);
}

/* A forced release keeps every old line. */
static int keep_all(note_ctx *n, const char *p, size_t l)
{
    (void)n;
    (void)p;
    (void)l;
    return 1;
}

/* A clearing keeps the audit lines, or (all) nothing; either way its own
 * line, first, says who cleared. */
static int keep_audit(note_ctx *n, const char *p, size_t l)
{
    return !n->all && audit_kind(p, l);
}

/* The update function of a run's note (sqllock_record_update()). */
static int note_update(void *ctx, const void *old, size_t old_len,
                       const void **out, size_t *out_len)
{
    note_ctx *n = ctx;
    int rc;

    free(n->buf);
    n->buf = NULL;
    rc = history_value(n, old, old_len, keep_but_same_run, &n->buf,
                       out_len);
    *out = n->buf;
    return rc;
}

/* Runs the dialect's statement `id` (inside the handle's transaction),
 * with `args`; *affected gets the rows it changed. */
static int exec_id(sqllock_db *db, sqllock_sql_id id,
                   const sqllock_cell *args, int nargs, int64_t *affected)
{
    const sqllock_sql *s = sqllock__sql_of(db->drv, id);

    if (s == NULL)
        return sqllock__fail(db, SQLLOCK_EUNSUPPORTED, "the %s driver has "
                             "no statement for a name's history",
                             db->drv->name);
    return sqllock_db_exec(db, s->text, args, nargs, NULL, NULL, affected);
}

/*
 * An audit write (DESIGN C5): `value` replaces version `version` of the
 * record `key` and, when `row` is given, the lease row (row, owner,
 * token) is deleted -- in ONE transaction, committed together or not at
 * all. SQLLOCK_CONFLICT when the record changed since it was read (read
 * and try again); SQLLOCK_LOST when the lease row was gone (nothing
 * changed); else the database's status, the transaction rolled back.
 */
static int history_commit(sqllock_db *db, const char *key, int64_t version,
                          const char *value, const char *row,
                          const char *owner, int64_t token)
{
    sqllock_cell pargs[3] = { SQLLOCK_TEXT(value), SQLLOCK_TEXT(key),
                              SQLLOCK_NUMBER(version) };
    sqllock_cell dargs[3] = { SQLLOCK_TEXT(row), SQLLOCK_TEXT(owner),
                              SQLLOCK_NUMBER(token) };
    sqllock_txn *txn = NULL;
    int64_t affected = 0;
    int rc;

    rc = sqllock_txn_begin(db, NULL, &txn);
    if (rc != SQLLOCK_OK)
        return rc;
    if (row != NULL) {
        rc = exec_id(db, SQLLOCK_SQL_LEASE_FORCE_DELETE, dargs, 3, &affected);
        if (rc == SQLLOCK_OK && affected != 1)
            rc = SQLLOCK_LOST;
    }
    if (rc == SQLLOCK_OK) {
        rc = exec_id(db, SQLLOCK_SQL_HISTORY_PUT, pargs, 3, &affected);
        if (rc == SQLLOCK_OK && affected != 1)
            rc = SQLLOCK_CONFLICT;
    }
    if (rc == SQLLOCK_OK)
        rc = sqllock_txn_commit(txn);
    else
        (void)sqllock_txn_rollback(txn);
    sqllock_txn_free(txn);
    return rc;
}

/* Writes the audit line `n` in `name`'s history (and, with `owner`,
 * deletes the lease row `row` of that owner and token in the same
 * transaction), reading the record again while another writer moved
 * it. */
static int history_audit(sqllock_db *db, const char *name, const char *row,
                         note_ctx *n,
                         int (*keep)(note_ctx *, const char *, size_t),
                         const char *owner, int64_t token)
{
    char key[SQLLOCK_NAME_MAX + 1];
    int rc = SQLLOCK_CONFLICT, attempt;

    sqllock_history_key(name, key, sizeof key);
    for (attempt = 0; attempt < 32 && rc == SQLLOCK_CONFLICT; attempt++) {
        void *old = NULL;
        size_t len = 0, blen = 0;
        int64_t version = 0;
        char *buf = NULL;

        rc = sqllock_record_get(db, key, &old, &len, &version);
        if (rc == SQLLOCK_NOTFOUND) {
            /* An empty record first (version 1), then the same path. */
            rc = sqllock_record_create(db, key, "", 0);
            if (rc == SQLLOCK_OK || rc == SQLLOCK_CONFLICT)
                rc = SQLLOCK_CONFLICT;
            continue;
        }
        if (rc == SQLLOCK_OK)
            rc = history_value(n, old, len, keep, &buf, &blen);
        sqllock_free(old);
        if (rc == SQLLOCK_OK) {
            buf[blen] = '\0';
            rc = history_commit(db, key, version, buf,
                                owner != NULL ? row : NULL, owner,
                                owner != NULL ? token : 0);
        }
        free(buf);
    }
    return rc;
}

/* The wall clock, ms since the epoch. */
static int64_t wall_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int sqllock_history_note(sqllock_db *db, const char *name, int64_t token,
                         const char *who, int64_t start_ms, int64_t end_ms,
                         int exit_code, const char *status)
{
    char key[SQLLOCK_NAME_MAX + 1];
    sqllock_retry_options ro = SQLLOCK_RETRY_OPTIONS_INIT;
    note_ctx n;
    int rc;

    if ((rc = sqllock__check_db(db)) != SQLLOCK_OK ||
        (rc = sqllock__check_name(db, name, "lock name")) != SQLLOCK_OK)
        return rc;
    memset(&n, 0, sizeof n);
    n.kind = "run";
    n.token = token;
    n.start_ms = start_ms;
    n.end_ms = end_ms;
    n.exit_code = exit_code;
    n.status = status;
    n.who = who;
    sqllock_history_key(name, key, sizeof key);
    ro.max_attempts = 32;
    rc = sqllock_record_update(db, key, note_update, &n, &ro, NULL);
    free(n.buf);
    return rc;
}

int sqllock_history_clear(sqllock_db *db, const char *name, int all,
                          const char *who)
{
    note_ctx n;
    int rc;

    if ((rc = sqllock__check_db(db)) != SQLLOCK_OK ||
        (rc = sqllock__check_name(db, name, "lock name")) != SQLLOCK_OK)
        return rc;
    memset(&n, 0, sizeof n);
    n.kind = "clear";
    n.start_ms = wall_ms();
    n.end_ms = n.start_ms;
    n.status = all ? "all" : "runs";
    n.who = who;
    n.all = all;
    return history_audit(db, name, NULL, &n, keep_audit, NULL, 0);
}

/* ---- the forced release ------------------------------------------------- */

typedef struct found_row {
    int found;
    char name[SQLLOCK__DERIVED_MAX + 1];
    char owner[SQLLOCK_OWNER_LEN + 1];
    char holder[SQLLOCK_HOLDER_MAX + 1];
    sqllock_lease_info info;
} found_row;

static int found_cb(void *ctx, const sqllock_lease_info *info)
{
    found_row *f = ctx;

    f->found = 1;
    snprintf(f->name, sizeof f->name, "%s", info->name);
    snprintf(f->owner, sizeof f->owner, "%s", info->owner);
    snprintf(f->holder, sizeof f->holder, "%s", info->holder);
    f->info = *info;
    f->info.name = f->name;
    f->info.owner = f->owner;
    f->info.holder = f->holder;
    return 0;
}

/* "user@host" of this process, and on a database with users " as " and
 * the role marker, which the database replaces by its current user. */
static void default_who(sqllock_db *db, char *who, size_t size)
{
    char host[256];
    struct passwd pw, *res = NULL;
    char pwbuf[1024];

    if (gethostname(host, sizeof host) != 0)
        snprintf(host, sizeof host, "?");
    host[sizeof host - 1] = '\0';
    if (getpwuid_r(getuid(), &pw, pwbuf, sizeof pwbuf, &res) != 0)
        res = NULL;
    snprintf(who, size, "%s@%s%s", res != NULL ? res->pw_name : "?", host,
             strcmp(db->drv->name, "sqlite") == 0
             ? "" : " as " SQLLOCK_HISTORY_ROLE);
}

int sqllock_force_release(sqllock_db *db, const char *name,
                          const sqllock_force_options *opts,
                          int (*cb)(void *ctx, const sqllock_lease_info *row),
                          void *ctx)
{
    static const sqllock_force_options defaults = SQLLOCK_FORCE_OPTIONS_INIT;
    char who[SQLLOCK_HOLDER_MAX + 64], status[64], base[SQLLOCK_NAME_MAX + 1];
    const char *sep, *kind;
    found_row f;
    note_ctx n;
    int rc;

    if ((rc = sqllock__check_db(db)) != SQLLOCK_OK)
        return rc;
    if (opts == NULL)
        opts = &defaults;
    if (opts->struct_version < 1)
        return sqllock__fail(db, SQLLOCK_EINVAL, "sqllock_force_release: "
                             "options without a struct_version (use "
                             "SQLLOCK_FORCE_OPTIONS_INIT)");
    if (opts->token < 0)
        return sqllock__fail(db, SQLLOCK_EINVAL, "sqllock_force_release: "
                             "the token must not be negative");
    if ((rc = sqllock__refuse_borrowed(db, "a forced release")) !=
        SQLLOCK_OK)
        return rc;
    memset(&f, 0, sizeof f);
    rc = sqllock_lease_lookup(db, name, found_cb, &f);
    if (rc == SQLLOCK_NOTFOUND)
        return sqllock__fail(db, SQLLOCK_NOTFOUND, "no lease on '%s': "
                             "nothing to release", name);
    if (rc != SQLLOCK_OK)
        return rc;
    if (cb != NULL)
        cb(ctx, &f.info);
    /* N1: a kind marker is no lease. Freeing it would let a plain lease
     * in while the name's readers, permits or leader hold it. */
    if ((kind = sqllock_kind_marker(f.owner)) != NULL)
        return sqllock__fail(db, SQLLOCK_EKIND, "'%s' is not a lease but "
                             "the row that marks the name as a %s (contract "
                             "N1: one name, one meaning); it is never "
                             "freed", name, kind);
    if (opts->token != 0 && opts->token != f.info.token)
        return sqllock__fail(db, SQLLOCK_CONFLICT, "'%s' is held with token "
                             "%" PRId64 ", not %" PRId64 ": not freed (the "
                             "hold you meant is gone)", name, f.info.token,
                             opts->token);
    if (f.info.remaining_ms > 0 && !opts->live)
        return sqllock__fail(db, SQLLOCK_BUSY, "lock '%s' is held by '%s' "
                             "(token %" PRId64 ", %lld ms left by the "
                             "database's clock), which may be alive and "
                             "working: not freed without the option to "
                             "free a live lease", name, f.holder,
                             f.info.token, (long long)f.info.remaining_ms);
    /* A primitive's row ("NAME [w]") goes into NAME's history, its tag
     * beside the status. */
    sep = strchr(f.name, SQLLOCK__SEP);
    snprintf(base, sizeof base, "%.*s",
             (int)(sep != NULL ? (size_t)(sep - f.name) : strlen(f.name)),
             f.name);
    snprintf(status, sizeof status, "%s%s%s%s",
             f.info.remaining_ms > 0 ? "live" : "expired",
             sep != NULL ? " [" : "", sep != NULL ? sep + 1 : "",
             sep != NULL ? "]" : "");
    if (opts->who != NULL)
        snprintf(who, sizeof who, "%s", opts->who);
    else
        default_who(db, who, sizeof who);
    memset(&n, 0, sizeof n);
    n.kind = "force";
    n.token = f.info.token;
    n.start_ms = wall_ms();
    n.end_ms = n.start_ms;
    n.status = status;
    n.who = who;
    rc = history_audit(db, base, f.name, &n, keep_all, f.owner, f.info.token);
    if (rc == SQLLOCK_LOST)
        return sqllock__fail(db, SQLLOCK_LOST, "the lease of token %" PRId64
                             " on '%s' was gone when it was to be freed "
                             "(released, taken over or reaped meanwhile); "
                             "nothing was changed", f.info.token, name);
    /* Any other failure is the database's, with its message (SQLLOCK_EPERM:
     * the audit record could not be written, so nothing was changed). */
    return rc == SQLLOCK_OK ? sqllock__ok(db) : rc;
}
