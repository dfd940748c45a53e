/*
 * history.c -- the history record of a lock name (issue 15 item 7): one
 * of the library's versioned records (DESIGN O1), keyed
 * "sqllock:history:NAME", whose value is up to CLI_HISTORY_MAX lines of
 * runs and as many of forced releases, newest first (ops.c's comment has
 * the format). `run` notes each run in it (cli_history_note()); a forced
 * release writes its audit line and deletes the lease row in one
 * transaction (C5); `history` reads it (ops.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

#define HISTORY_PREFIX "sqllock:history:"

/* ------------------------------------------------------------------ */
/* The history record                                                  */
/* ------------------------------------------------------------------ */

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

/* The record key of `name`'s history: the prefix and the name, or, when
 * that is longer than a key may be, the prefix, the name cut at a
 * character boundary, '#' and a hash of the whole name. */
void cli_history_key(const char *name, char *key, size_t size)
{
    size_t plen = strlen(HISTORY_PREFIX), n = strlen(name), keep;

    if (plen + n <= SQLLOCK_NAME_MAX) {
        snprintf(key, size, "%s%s", HISTORY_PREFIX, name);
        return;
    }
    keep = SQLLOCK_NAME_MAX - plen - 17;
    while (keep > 0 && ((unsigned char)name[keep] & 0xC0) == 0x80)
        keep--;
    snprintf(key, size, "%s%.*s#%016" PRIx64, HISTORY_PREFIX, (int)keep,
             name, fnv1a(name));
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
    int all;                    /* history --clear-all */
} note_ctx;

/* An audit line: a forced release, or a clearing of the history. */
static int audit_kind(const char *line, size_t len)
{
    return (len > 6 && strncmp(line, "force\t", 6) == 0) ||
           (len > 6 && strncmp(line, "clear\t", 6) == 0);
}

/* The new line (`kind`, the fields of `n`; `who` as given, the role
 * marker in it replaced by the database, history_commit()), followed by
 * the old lines `keep` lets through. */
static int history_value(note_ctx *n, const char *old, size_t old_len,
                         int (*keep)(note_ctx *, const char *, size_t),
                         char **out, size_t *out_len)
{
    char who[SQLLOCK_HOLDER_MAX + 64], status[32], line[CLI_HISTORY_LINE_MAX];
    const char *p = old, *end = p != NULL ? p + old_len : NULL;
    size_t cap = CLI_HISTORY_LINE_MAX * (2 * CLI_HISTORY_MAX + 1), len;
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

        /* Each kind keeps its CLI_HISTORY_MAX newest: runs never push
         * the audit of forced releases out. */
        if ((audit ? audits : runs) < CLI_HISTORY_MAX &&
            l < CLI_HISTORY_LINE_MAX && len + l + 1 < cap && keep(n, p, l)) {
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
    return !(strcmp(n->kind, "run") == 0 && l > strlen(head) &&
             strncmp(p, head, strlen(head)) == 0);
}

/* A forced release keeps every old line. */
static int keep_all(note_ctx *n, const char *p, size_t l)
{
    (void)n;
    (void)p;
    (void)l;
    return 1;
}

/* `history --clear` keeps the audit lines; --clear-all keeps nothing.
 * Either way its own line, first, says who cleared. */
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

static int history_write(sqllock_db *db, const char *name, note_ctx *n)
{
    char key[SQLLOCK_NAME_MAX + 1];
    sqllock_retry_options ro = SQLLOCK_RETRY_OPTIONS_INIT;
    int rc;

    cli_history_key(name, key, sizeof key);
    ro.max_attempts = 32;
    n->buf = NULL;
    rc = sqllock_record_update(db, key, note_update, n, &ro, NULL);
    free(n->buf);
    return rc;
}

/* The role marker in an audit line's `who`: the database puts its
 * current user there as it writes the line (history_commit()). */
#define ROLE_MARK "\001"

/*
 * An audit write (DESIGN C5): `value` replaces version `version` of the
 * record `key` and, when `lease_name` is given, the lease row (name,
 * owner, token) is deleted -- in ONE transaction, committed together or
 * not at all. The role marker in `value` becomes the database's current
 * user (PostgreSQL current_user, MySQL CURRENT_USER(); SQLite has no
 * users: no marker is written there). Returns SQLLOCK_OK; SQLLOCK_CONFLICT
 * when the record changed since it was read (read and try again);
 * SQLLOCK_LOST when the lease row was gone (nothing changed); else the
 * database's status, the transaction rolled back.
 */
static int history_commit(sqllock_db *db, const char *key, int64_t version,
                          const char *value, const char *lease_name,
                          const char *owner, int64_t token)
{
    const char *drv = sqllock_db_driver(db);
    int pg = strcmp(drv, "postgres") == 0, my = strcmp(drv, "mysql") == 0;
    const char *put = pg ?
        "UPDATE sqllock_record SET value = pg_catalog.convert_to("
        "pg_catalog.replace($1::text, pg_catalog.chr(1), "
        "current_user::text), 'UTF8'), version = version + 1 "
        "WHERE key = $2 AND version = $3"
        : my ?
        "UPDATE sqllock_record SET `value` = REPLACE(?, CHAR(1), "
        "CURRENT_USER()), version = version + 1 "
        "WHERE `key` = ? AND version = ?"
        : "UPDATE sqllock_record SET value = CAST(?1 AS BLOB), "
          "version = version + 1 WHERE key = ?2 AND version = ?3";
    const char *del = pg ?
        "DELETE FROM sqllock_lease WHERE name = $1 AND owner = $2 "
        "AND token = $3"
        : my ? "DELETE FROM sqllock_lease WHERE name = ? AND owner = ? "
               "AND token = ?"
        : "DELETE FROM sqllock_lease WHERE name = ?1 AND owner = ?2 "
          "AND token = ?3";
    sqllock_cell pargs[3] = { SQLLOCK_TEXT(value), SQLLOCK_TEXT(key),
                              SQLLOCK_NUMBER(version) };
    sqllock_cell dargs[3] = { SQLLOCK_TEXT(lease_name), SQLLOCK_TEXT(owner),
                              SQLLOCK_NUMBER(token) };
    sqllock_txn *txn = NULL;
    int64_t affected = 0;
    int rc;

    rc = sqllock_txn_begin(db, NULL, &txn);
    if (rc != SQLLOCK_OK)
        return rc;
    if (lease_name != NULL) {
        rc = sqllock_db_exec(db, del, dargs, 3, NULL, NULL, &affected);
        if (rc == SQLLOCK_OK && affected != 1)
            rc = SQLLOCK_LOST;
    }
    if (rc == SQLLOCK_OK) {
        rc = sqllock_db_exec(db, put, pargs, 3, NULL, NULL, &affected);
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
 * transaction, history_commit()), reading the record again while another
 * writer moved it. */
static int history_audit(sqllock_db *db, const char *name, const char *row,
                         note_ctx *n,
                         int (*keep)(note_ctx *, const char *, size_t),
                         const char *owner, int64_t token)
{
    char key[SQLLOCK_NAME_MAX + 1];
    int rc = SQLLOCK_CONFLICT, attempt;

    cli_history_key(name, key, sizeof key);
    for (attempt = 0; attempt < 32 && rc == SQLLOCK_CONFLICT; attempt++) {
        void *old = NULL;
        size_t len = 0, blen = 0;
        int64_t version = 0;
        char *buf = NULL;

        rc = sqllock_record_get(db, key, &old, &len, &version);
        if (rc == SQLLOCK_NOTFOUND) {
            /* An empty record first (version 1), then the same path. */
            rc = sqllock_record_create(db, key, "", 0);
            if (rc == SQLLOCK_OK)
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

/* "user@host" of whoever runs the tool in `me`; in `who` the same and,
 * on a database with users, " as " and the role marker that becomes the
 * database user it connected as (history_commit()). */
void cli_who_am_i(sqllock_db *db, char *me, size_t me_size, char *who,
                 size_t who_size)
{
    char host[256];
    struct passwd *pw = getpwuid(getuid());

    if (gethostname(host, sizeof host) != 0)
        snprintf(host, sizeof host, "?");
    host[sizeof host - 1] = '\0';
    snprintf(me, me_size, "%s@%s", pw != NULL ? pw->pw_name : "?", host);
    snprintf(who, who_size, "%s%s", me,
             strcmp(sqllock_db_driver(db), "sqlite") == 0
             ? "" : " as " ROLE_MARK);
}

/* The message for an audit write the database refused for want of a
 * right: which one, and to whom it is given (docs/credentials.md). */
int cli_audit_refused(sqllock_db *db, int rc, const char *what)
{
    if (rc == SQLLOCK_EPERM)
        return cli_db_error(db, rc, "%s: refused: the audit record could "
                            "not be written, so nothing was changed; the "
                            "operator's role needs SELECT, INSERT and "
                            "UPDATE on sqllock_record besides DELETE on "
                            "sqllock_lease (docs/credentials.md, 'An "
                            "operator role')", what);
    return cli_db_error(db, rc, "%s: nothing was changed", what);
}

int cli_history_note(sqllock_db *db, const char *name, int64_t token,
                     const char *holder, int64_t start_ms, int64_t end_ms,
                     int exit_code, const char *status)
{
    note_ctx n;

    memset(&n, 0, sizeof n);
    n.kind = "run";
    n.token = token;
    n.start_ms = start_ms;
    n.end_ms = end_ms;
    n.exit_code = exit_code;
    n.status = status;
    n.who = holder;
    return history_write(db, name, &n);
}

/* The wall clock, ms since the epoch. */
static int64_t wall_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int cli_history_force(sqllock_db *db, const char *name, const char *row,
                      const char *owner, int64_t token, const char *status,
                      const char *who)
{
    note_ctx n;

    memset(&n, 0, sizeof n);
    n.kind = "force";
    n.token = token;
    n.start_ms = wall_ms();
    n.end_ms = n.start_ms;
    n.status = status;
    n.who = who;
    return history_audit(db, name, row, &n, keep_all, owner, token);
}

int cli_history_clear(sqllock_db *db, const char *name, int all,
                      const char *who)
{
    note_ctx n;

    memset(&n, 0, sizeof n);
    n.kind = "clear";
    n.start_ms = wall_ms();
    n.end_ms = n.start_ms;
    n.status = all ? "all" : "runs";
    n.who = who;
    n.all = all;
    return history_audit(db, name, NULL, &n, keep_audit, NULL, 0);
}
