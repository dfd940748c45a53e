/*
 * test_hostile.c -- hostile input through the API and the CLI (issue 7):
 * every bad input gets a specific status (or exit code and message), and
 * nothing changes in the database; every input that is valid, however
 * strange (SQL metacharacters, LIKE wildcards, quotes, backslashes,
 * trailing spaces, case variants, 4-byte UTF-8), round-trips byte for
 * byte and is never interpreted (DESIGN E1, E2, D3, L10).
 *
 * Two tables drive it, run on every URL in SQLLOCK_TEST_URLS:
 *   - api_cases: a call (lease new/acquire/try/renew/release, a row-lock
 *     transaction, versioned records, application-table and fenced
 *     updates, open with a URL), its input, the status it must return;
 *   - cli_cases: the built `sqllock` tool's arguments, its exit code and
 *     a word its stderr must say (and, for secrets, one it must not).
 * Around every case the rows this process owns in the library's tables
 * (names and keys with the prefix "ho<pid>-": lease, record, row, and on
 * MySQL the per-name token rows), the schema's meta rows, the token
 * counter where it is this process's own (the SQLite file), and a table
 * of the test's own are read before and after and must be identical. A
 * victim lease, record and row, held or kept by another handle, stay in
 * that snapshot throughout, so an injection that deleted or changed
 * anything beyond the case's own row would show.
 *
 * test_badinput.c covers, on lease_new/attach, bad names (NULL, empty,
 * 256 and 10000 bytes, each kind of invalid UTF-8, control characters),
 * bad lease options, negative waits, bad owners and tokens, NULL handles,
 * and the generic bad URLs (empty, no scheme, unknown scheme, sqlite
 * paths). This file does not repeat those; it adds the other entry
 * points (row-lock transactions, records, application tables), 1 MB
 * names, huge and overflowing times, URL injection per driver, and the
 * CLI, and it checks the database after each case.
 *
 * On PostgreSQL, one more case shows the durability pin: with a URL that
 * turns synchronous_commit off for the session (options=-c ...), durable
 * grants and renewals still wait for the WAL flush (L10), counted in
 * pg_stat_wal as test_fast.c does.
 *
 * Policies the tables pin down:
 *   - Invalid UTF-8 in a lock name or record key is SQLLOCK_EINVAL on
 *     every driver (the core checks before any SQL). A text value for an
 *     application's table is the application's data: PostgreSQL refuses
 *     bytes invalid in its encoding (EINVAL), SQLite and MySQL compare
 *     the bytes (NOTFOUND here); a value the database refuses for its
 *     column type or range is EINVAL, not EDB.
 *   - A URL parameter a driver does not know is SQLLOCK_EURL with a
 *     message naming it (MySQL: init_command, local_infile, ...; libpq:
 *     "invalid connection option"). Percent-encoded text is one value,
 *     never split into parameters.
 *   - PostgreSQL options= is the user's own session configuration and is
 *     allowed (search_path, default_transaction_isolation, ...), except
 *     that it cannot make durable grants and renewals asynchronous; a
 *     read-only default makes them SQLLOCK_EPERM.
 *
 * Lock names carry the pid, so runs on a shared server do not meet.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "test_util.h"
#include "test_run.h"
#include "test_spawn.h"

#ifndef SQLLOCK_CLI_PATH
#error "SQLLOCK_CLI_PATH must name the built sqllock tool"
#endif

/* The URL the current group runs on. */
static const char *g_url;

/* ------------------------------------------------------------------ */
/* A growable string                                                   */
/* ------------------------------------------------------------------ */

typedef struct strbuf {
    char *s;
    size_t len, cap;
} strbuf;

static void sb_add(strbuf *b, const char *s, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n + 1)
            cap *= 2;
        b->s = realloc(b->s, cap);
        assert_non_null(b->s);
        b->cap = cap;
    }
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = '\0';
}

static void sb_str(strbuf *b, const char *s)
{
    sb_add(b, s, strlen(s));
}

/* Appends the bytes as hex, so that any byte shows, NUL included. */
static void sb_hex(strbuf *b, const void *p, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *u = p;
    size_t i;

    for (i = 0; i < n; i++) {
        char two[2] = { hex[u[i] >> 4], hex[u[i] & 15] };
        sb_add(b, two, 2);
    }
}

/* ------------------------------------------------------------------ */
/* The fixture                                                         */
/* ------------------------------------------------------------------ */

typedef struct fixture {
    char *dir;
    const char *drv;            /* "sqlite", "postgres", "mysql" */
    sqllock_db *db;             /* the handle bad input is fed to */
    sqllock_db *vdb;            /* the victim's handle, also for reading */
    sqllock_lease *victim;
    char prefix[32];            /* "ho<pid>-" */
    char upper[32];             /* the first string past the prefix */
    char victim_name[64];
    char app[64];               /* the test's own table */
    sqllock_url *parts;         /* the group URL, parsed */
    char out[65536];            /* the last CLI run's stdout */
    char err[16384];            /* and stderr */
} fixture;

static int is_drv(const fixture *f, const char *d)
{
    return strcmp(f->drv, d) == 0;
}

/* SQL text with '?' placeholders, in the driver's own spelling. */
static const char *ph(const fixture *f, const char *sql, char *buf,
                      size_t size)
{
    size_t o = 0;
    int n = 0;

    for (; *sql != '\0' && o + 4 < size; sql++) {
        if (*sql == '?' && is_drv(f, "postgres"))
            o += (size_t)snprintf(buf + o, size - o, "$%d", ++n);
        else
            buf[o++] = *sql;
    }
    buf[o] = '\0';
    return buf;
}

/* Runs `sql` (with '?' placeholders) on `db` and appends every row, each
 * column as "<len>:<hex>", to `b`; `blob_col` is read as bytes (-1:
 * none). Fails the test when the statement fails (a dropped table). */
static void dump(const fixture *f, sqllock_db *db, strbuf *b,
                 const char *label, const char *sql, int ncols, int blob_col,
                 int range)
{
    char text[1024];
    sqllock_value args[2];
    sqllock_stmt *st = NULL;
    int rc, has = 0, i;

    args[0] = sqllock__text(f->prefix);
    args[1] = sqllock__text(f->upper);
    rc = sqllock__run_dyn(db, ph(f, sql, text, sizeof text), args,
                          range ? 2 : 0, label, &st);
    if (rc != SQLLOCK_OK)
        fail_msg("snapshot of %s: %s: %s", label, sqllock_errname(rc),
                 sqllock_errmsg(db));
    sb_str(b, label);
    sb_str(b, ":\n");
    for (;;) {
        rc = sqllock__fetch_dyn(db, st, &has, label);
        if (rc != SQLLOCK_OK)
            fail_msg("snapshot of %s: %s", label, sqllock_errmsg(db));
        if (!has)
            break;
        for (i = 0; i < ncols; i++) {
            const void *p;
            size_t n;
            char num[32];
            if (i == blob_col) {
                p = db->drv->column_blob(st, i, &n);
            } else {
                p = db->drv->column_text(st, i);
                n = p != NULL ? strlen(p) : 0;
            }
            snprintf(num, sizeof num, " %zu:", n);
            sb_str(b, num);
            sb_hex(b, p, n);
        }
        sb_str(b, "\n");
    }
    db->drv->reset(st);
}

/* The snapshot: `state` must never change across a case; `counters`
 * (token counters) must not change across a refused case. */
typedef struct snapshot {
    strbuf state;
    strbuf counters;
} snapshot;

static void snap(fixture *f, snapshot *s)
{
    sqllock_db *db = f->vdb;
    char sql[512];
    int my = is_drv(f, "mysql");

    memset(s, 0, sizeof *s);
    dump(f, db, &s->state, "sqllock_lease",
         "SELECT name, owner, holder, token, acquired_at, expires_at "
         "FROM sqllock_lease WHERE name >= ? AND name < ? ORDER BY name",
         6, -1, 1);
    dump(f, db, &s->state, "sqllock_record",
         my ? "SELECT `key`, `value`, version FROM sqllock_record "
              "WHERE `key` >= ? AND `key` < ? ORDER BY `key`"
            : "SELECT key, value, version FROM sqllock_record "
              "WHERE key >= ? AND key < ? ORDER BY key",
         3, 1, 1);
    dump(f, db, &s->state, "sqllock_row",
         "SELECT name FROM sqllock_row WHERE name >= ? AND name < ? "
         "ORDER BY name", 1, -1, 1);
    dump(f, db, &s->state, "sqllock_meta",
         my ? "SELECT `key`, `value` FROM sqllock_meta ORDER BY `key`"
            : "SELECT key, value FROM sqllock_meta ORDER BY key",
         2, -1, 0);
    snprintf(sql, sizeof sql, "SELECT id, qty, version, fence FROM %s "
             "ORDER BY id", f->app);
    dump(f, db, &s->state, f->app, sql, 4, -1, 0);
    if (my)
        dump(f, db, &s->counters, "sqllock_token",
             "SELECT name, token FROM sqllock_token "
             "WHERE name >= ? AND name < ? ORDER BY name", 2, -1, 1);
    else if (is_drv(f, "sqlite"))
        dump(f, db, &s->counters, "sqllock_fence",
             "SELECT token FROM sqllock_fence", 1, -1, 0);
    /* PostgreSQL's sequence serves every client of the server: other
     * tests may draw from it meanwhile, so it is not compared. */
}

static void snap_free(snapshot *s)
{
    free(s->state.s);
    free(s->counters.s);
}

/* 1 if no token was drawn between the counters `a` and `b`. SQLite's
 * counter is in this test's own file: it must be equal. MySQL's per-name
 * token rows may go: any client's reaper trims the table (SQL_TOKEN_TRIM
 * deletes every row but the newest, by design), so there every line of
 * `b` must be in `a`, none new or changed. */
static int counters_kept(const fixture *f, const char *a, const char *b)
{
    const char *p, *q;
    size_t n, m;
    int found;

    a = a != NULL ? a : "";
    b = b != NULL ? b : "";
    if (!is_drv(f, "mysql"))
        return strcmp(a, b) == 0;
    for (p = b; *p != '\0'; p += n) {
        n = strcspn(p, "\n");
        n += p[n] == '\n';
        found = 0;
        for (q = a; *q != '\0' && !found; q += m) {
            m = strcspn(q, "\n");
            m += q[m] == '\n';
            found = m == n && strncmp(p, q, n) == 0;
        }
        if (!found)
            return 0;
    }
    return 1;
}

/* Fails unless the database is as `before` says. */
static void expect_unchanged(fixture *f, const snapshot *before,
                             int counters_too, const char *what)
{
    snapshot now;

    snap(f, &now);
    if (strcmp(before->state.s ? before->state.s : "",
               now.state.s ? now.state.s : "") != 0)
        fail_msg("%s changed the database:\nbefore:\n%s\nafter:\n%s", what,
                 before->state.s, now.state.s);
    if (counters_too && !counters_kept(f, before->counters.s,
                                       now.counters.s))
        fail_msg("%s moved a token counter:\nbefore:\n%s\nafter:\n%s", what,
                 before->counters.s, now.counters.s);
    snap_free(&now);
}

/* Removes what a round trip leaves on purpose: MySQL's per-name token
 * row (tokens come from the table's counter, which keeps counting), a
 * row-lock row. */
static void forget_name(fixture *f, const char *name)
{
    char sql[200];
    sqllock_value arg = sqllock__text(name);

    if (is_drv(f, "mysql"))
        assert_int_equal(sqllock__exec_sql(f->vdb, "DELETE FROM "
                                           "sqllock_token WHERE name = ?",
                                           &arg, 1, NULL, NULL, NULL),
                         SQLLOCK_OK);
    assert_int_equal(sqllock__exec_sql(f->vdb,
                                       ph(f, "DELETE FROM sqllock_row "
                                          "WHERE name = ?", sql, sizeof sql),
                                       &arg, 1, NULL, NULL, NULL),
                     SQLLOCK_OK);
}

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    char sql[512], key[512], why[256];
    sqllock_value args[2];
    long pid = (long)getpid();
    int rc;

    if (f == NULL || (f->dir = tu_mkdtemp()) == NULL)
        return -1;
    f->drv = tu_url_driver(g_url);
    snprintf(f->prefix, sizeof f->prefix, "ho%ld-", pid);
    snprintf(f->upper, sizeof f->upper, "ho%ld.", pid);
    snprintf(f->victim_name, sizeof f->victim_name, "%svictim", f->prefix);
    snprintf(f->app, sizeof f->app, "sqllock_ho_%ld", pid);
    if (sqllock__url_parse(g_url, &f->parts, why, sizeof why) != SQLLOCK_OK)
        return -1;
    o.ttl_ms = 600000;
    if (sqllock_open(g_url, NULL, &f->vdb) != SQLLOCK_OK ||
        sqllock_init(f->vdb) != SQLLOCK_OK ||
        sqllock_lease_new(f->vdb, f->victim_name, &o, &f->victim) !=
            SQLLOCK_OK ||
        sqllock_lease_try_acquire(f->victim) != SQLLOCK_OK ||
        sqllock_open(g_url, NULL, &f->db) != SQLLOCK_OK) {
        fprintf(stderr, "hostile setup: %s / %s\n", sqllock_errmsg(f->vdb),
                sqllock_errmsg(f->db));
        return -1;
    }
    /* The victim record and row, and the test's own table with a row
     * whose key is SQL. */
    snprintf(key, sizeof key, "%svictim", f->prefix);
    rc = sqllock_record_create(f->vdb, key, "victim", 6);
    if (rc == SQLLOCK_OK) {
        sqllock_txn *t = NULL;
        const char *names[1] = { key };
        rc = sqllock_txn_begin(f->vdb, NULL, &t);
        if (rc == SQLLOCK_OK)
            rc = sqllock_txn_lock(t, names, 1, SQLLOCK_LOCK_WAIT, NULL);
        if (rc == SQLLOCK_OK)
            rc = sqllock_txn_commit(t);
        sqllock_txn_free(t);
    }
    snprintf(sql, sizeof sql, "DROP TABLE IF EXISTS %s", f->app);
    if (rc == SQLLOCK_OK)
        rc = sqllock__exec_sql(f->vdb, sql, NULL, 0, NULL, NULL, NULL);
    /* On MySQL in utf8mb4, as MySQL 8.0 makes it by default (the
     * test server's default may be latin1). */
    snprintf(sql, sizeof sql, "CREATE TABLE %s (id VARCHAR(200) PRIMARY KEY, "
             "qty BIGINT NOT NULL, version BIGINT NOT NULL, fence BIGINT)%s",
             f->app, is_drv(f, "mysql") ? " CHARACTER SET utf8mb4" : "");
    if (rc == SQLLOCK_OK)
        rc = sqllock__exec_sql(f->vdb, sql, NULL, 0, NULL, NULL, NULL);
    snprintf(sql, sizeof sql, "INSERT INTO %s (id, qty, version, fence) "
             "VALUES (?, 5, 1, 7), (?, 3, 1, NULL)", f->app);
    args[0] = sqllock__text("plain");
    args[1] = sqllock__text("k'; DROP TABLE sqllock_lease; --");
    if (rc == SQLLOCK_OK)
        rc = sqllock__exec_sql(f->vdb, ph(f, sql, key, sizeof key), args,
                               2, NULL, NULL, NULL);
    if (rc != SQLLOCK_OK) {
        fprintf(stderr, "hostile setup: %s\n", sqllock_errmsg(f->vdb));
        return -1;
    }
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    char sql[200], key[80];
    sqllock_value arg;

    if (f == NULL)
        return 0;
    sqllock_lease_release(f->victim);
    sqllock_lease_free(f->victim);
    if (f->vdb != NULL) {
        snprintf(sql, sizeof sql, "DROP TABLE IF EXISTS %s", f->app);
        sqllock__exec_sql(f->vdb, sql, NULL, 0, NULL, NULL, NULL);
        snprintf(key, sizeof key, "%svictim", f->prefix);
        sqllock_record_delete(f->vdb, key, 1);
        forget_name(f, key);
        arg = sqllock__text(f->victim_name);
        if (is_drv(f, "mysql"))
            sqllock__exec_sql(f->vdb, "DELETE FROM sqllock_token WHERE "
                              "name = ?", &arg, 1, NULL, NULL, NULL);
    }
    sqllock_close(f->db);
    sqllock_close(f->vdb);
    sqllock__url_free(f->parts);
    tu_rmdir(f->dir);
    free(f->dir);
    free(f);
    return 0;
}

/* The message on `db` mentions one of the "|"-separated words of `any`. */
static int msg_has(const char *msg, const char *any)
{
    const char *p = any;
    char buf[200];

    while (p != NULL && *p != '\0') {
        size_t n = strcspn(p, "|");
        snprintf(buf, sizeof buf, "%.*s", (int)n, p);
        if (tu_contains_ci(msg, buf))
            return 1;
        p += n;
        if (*p == '|')
            p++;
    }
    return any == NULL;
}

/* ------------------------------------------------------------------ */
/* URLs made from the group's URL                                       */
/* ------------------------------------------------------------------ */

/* Percent-encodes everything but unreserved characters. */
static void url_enc(strbuf *b, const char *s)
{
    for (; s != NULL && *s != '\0'; s++) {
        unsigned char c = (unsigned char)*s;
        if (isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~') {
            sb_add(b, (const char *)&c, 1);
        } else {
            char e[4];
            snprintf(e, sizeof e, "%%%02X", c);
            sb_str(b, e);
        }
    }
}

/*
 * Expands a URL template: {url} the group's URL, {q} '?' or '&' to add a
 * query parameter to it, {scheme}, {user}, {pw} (percent-encoded),
 * {hostport}, {db} (the path without its '/'), {dir} the fixture's
 * temporary directory, {big} 1 MB of 'a'. A template that needs a part
 * the URL lacks gives NULL (the case is skipped, saying so).
 */
static char *expand_url(const fixture *f, const char *t)
{
    const sqllock_url *u = f->parts;
    strbuf b = { NULL, 0, 0 };

    sb_str(&b, "");
    while (*t != '\0') {
        if (*t != '{') {
            sb_add(&b, t++, 1);
            continue;
        }
        if (strncmp(t, "{url}", 5) == 0) {
            sb_str(&b, g_url);
            t += 5;
        } else if (strncmp(t, "{q}", 3) == 0) {
            sb_str(&b, strchr(g_url, '?') != NULL ? "&" : "?");
            t += 3;
        } else if (strncmp(t, "{scheme}", 8) == 0) {
            sb_str(&b, u->scheme);
            t += 8;
        } else if (strncmp(t, "{user}", 6) == 0) {
            if (u->user == NULL)
                goto none;
            url_enc(&b, u->user);
            t += 6;
        } else if (strncmp(t, "{pw}", 4) == 0) {
            if (u->password == NULL || u->password[0] == '\0')
                goto none;
            url_enc(&b, u->password);
            t += 4;
        } else if (strncmp(t, "{hostport}", 10) == 0) {
            char port[16];
            if (u->host == NULL)
                goto none;
            sb_str(&b, u->host);
            if (u->port != 0) {
                snprintf(port, sizeof port, ":%d", u->port);
                sb_str(&b, port);
            }
            t += 10;
        } else if (strncmp(t, "{db}", 4) == 0) {
            sb_str(&b, u->path[0] == '/' ? u->path + 1 : u->path);
            t += 4;
        } else if (strncmp(t, "{dir}", 5) == 0) {
            sb_str(&b, f->dir);
            t += 5;
        } else if (strncmp(t, "{big}", 5) == 0) {
            char *a = malloc(1 << 20);
            assert_non_null(a);
            memset(a, 'a', 1 << 20);
            sb_add(&b, a, 1 << 20);
            free(a);
            t += 5;
        } else {
            sb_add(&b, t++, 1);
        }
    }
    return b.s;
none:
    free(b.s);
    return NULL;
}

/* ------------------------------------------------------------------ */
/* The API table                                                       */
/* ------------------------------------------------------------------ */

typedef enum api_kind {
    K_NEW,          /* sqllock_lease_new(name, ttl = num or 10 s) */
    K_TRY,          /* new + try_acquire; OK: round trip and release */
    K_ACQUIRE,      /* new + acquire(wait = num) */
    K_RENEW,        /* new + renew, never acquired */
    K_RELEASE,      /* new + release, never acquired */
    K_TXN,          /* row-lock transaction on [name] */
    K_TXN_TIMEOUT,  /* a transaction with lock_timeout_ms = num */
    K_REC,          /* record create/get/cas/delete with key name */
    K_REC_VALUE,    /* record create with a value of num bytes */
    K_REC_CAS,      /* record cas on the victim with expected = num */
    K_TBL_GET,      /* table_get with the text key name */
    K_TBL_NAME,     /* table_update with the table name name */
    K_TBL_COL,      /* table_update assigning column name */
    K_TBL_VALUE,    /* table_update setting qty of key "plain" to text */
    K_TBL_ADD,      /* table_update adding num to qty of key "plain" */
    K_FENCE_COL,    /* fenced update with fence column name */
    K_FENCE_TOKEN,  /* fenced update with token num */
    K_OPEN,         /* sqllock_open(url template name) */
    K_OPEN_TRY      /* open (must succeed) + try_acquire, round trip */
} api_kind;

/* Name flags. */
#define F_RAW 1u      /* the name as written (else after the prefix) */
#define F_NULL 2u     /* a NULL name */

typedef struct api_case {
    const char *label;
    api_kind kind;
    const char *drv;          /* only on this driver; NULL: all */
    const char *name;         /* the input (a URL template for K_OPEN*) */
    unsigned flags;
    size_t big;               /* > 0: a name of this many bytes instead */
    int64_t num;
    int want;
    const char *msg;          /* the message mentions one of these */
} api_case;

#define MB (1024 * 1024)

static const api_case api_cases[] = {
    /* Names no call may take: NULL, empty, 1 MB, invalid UTF-8, control
     * characters -- on the entry points test_badinput.c does not try. */
    { "lease NULL name", K_TRY, NULL, NULL, F_NULL, 0, 0, SQLLOCK_EINVAL,
      "NULL" },
    { "lease 1 MB name", K_TRY, NULL, NULL, 0, MB, 0, SQLLOCK_EINVAL,
      "255" },
    { "lease 1 MB name, 4-byte UTF-8", K_TRY, NULL, "\xf0\x9d\x84\x9e", 0,
      MB, 0, SQLLOCK_EINVAL, "255" },
    { "txn NULL name", K_TXN, NULL, NULL, F_NULL, 0, 0, SQLLOCK_EINVAL,
      "NULL" },
    { "txn empty name", K_TXN, NULL, "", F_RAW, 0, 0, SQLLOCK_EINVAL,
      "empty" },
    { "txn 1 MB name", K_TXN, NULL, NULL, 0, MB, 0, SQLLOCK_EINVAL, "255" },
    { "txn \\xff\\xfe", K_TXN, NULL, "\xff\xfe", 0, 0, 0, SQLLOCK_EINVAL,
      "UTF-8" },
    { "txn overlong '/'", K_TXN, NULL, "\xc0\xaf", 0, 0, 0, SQLLOCK_EINVAL,
      "UTF-8" },
    { "txn surrogate", K_TXN, NULL, "\xed\xa0\x80", 0, 0, 0,
      SQLLOCK_EINVAL, "UTF-8" },
    { "txn Latin-1 e-acute", K_TXN, NULL, "caf\xe9", 0, 0, 0,
      SQLLOCK_EINVAL, "UTF-8" },
    { "txn newline", K_TXN, NULL, "a\nb", 0, 0, 0, SQLLOCK_EINVAL,
      "control" },
    { "txn C1 control", K_TXN, NULL, "a\xc2\x85z", 0, 0, 0, SQLLOCK_EINVAL,
      "control" },
    { "record NULL key", K_REC, NULL, NULL, F_NULL, 0, 0, SQLLOCK_EINVAL,
      "NULL" },
    { "record empty key", K_REC, NULL, "", F_RAW, 0, 0, SQLLOCK_EINVAL,
      "empty" },
    { "record 1 MB key", K_REC, NULL, NULL, 0, MB, 0, SQLLOCK_EINVAL,
      "255" },
    { "record \\xff key", K_REC, NULL, "\xff", 0, 0, 0, SQLLOCK_EINVAL,
      "UTF-8" },
    { "record truncated UTF-8 key", K_REC, NULL, "\xe2\x82", 0, 0, 0,
      SQLLOCK_EINVAL, "UTF-8" },
    { "record escape-sequence key", K_REC, NULL, "\x1b[2J", 0, 0, 0,
      SQLLOCK_EINVAL, "control" },

    /* Names that are valid: stored and found literally, never read as
     * SQL, LIKE patterns or escapes. */
    { "lease SQL injection", K_TRY, NULL, "'; DROP TABLE sqllock_lease; --",
      0, 0, 0, SQLLOCK_OK, NULL },
    { "lease always-true", K_TRY, NULL, "x' OR '1'='1", 0, 0, 0, SQLLOCK_OK,
      NULL },
    { "lease %", K_TRY, NULL, "%", 0, 0, 0, SQLLOCK_OK, NULL },
    { "lease victi% (LIKE)", K_TRY, NULL, "victi%", 0, 0, 0, SQLLOCK_OK,
      NULL },
    { "lease victi_ (LIKE)", K_TRY, NULL, "victi_", 0, 0, 0, SQLLOCK_OK,
      NULL },
    { "lease backslash", K_TRY, NULL, "\\", 0, 0, 0, SQLLOCK_OK, NULL },
    { "lease \\' escape", K_TRY, NULL, "\\'; DELETE FROM sqllock_lease; #",
      0, 0, 0, SQLLOCK_OK, NULL },
    { "lease backquote", K_TRY, NULL, "`x`; DROP TABLE sqllock_lease", 0, 0,
      0, SQLLOCK_OK, NULL },
    { "lease double quote", K_TRY, NULL, "\"x\"", 0, 0, 0, SQLLOCK_OK, NULL },
    { "lease $1 and ?", K_TRY, NULL, "$1 ? :name @v", 0, 0, 0, SQLLOCK_OK,
      NULL },
    { "lease %00 text", K_TRY, NULL, "%00\\0\\x00", 0, 0, 0, SQLLOCK_OK,
      NULL },
    { "lease victim + space (PAD SPACE)", K_TRY, NULL, "victim ", 0, 0, 0,
      SQLLOCK_OK, NULL },
    { "lease VICTIM (case)", K_TRY, NULL, "VICTIM", 0, 0, 0, SQLLOCK_OK,
      NULL },
    { "lease 4-byte UTF-8", K_TRY, NULL, "\xf0\x9d\x84\x9e\xf0\x9f\x94\x92", 0,
      0, 0, SQLLOCK_OK, NULL },
    { "lease the victim itself", K_TRY, NULL, "victim", 0, 0, 0,
      SQLLOCK_BUSY, "held" },
    { "txn SQL injection", K_TXN, NULL, "'; DROP TABLE sqllock_row; --", 0,
      0, 0, SQLLOCK_OK, NULL },
    { "txn %_ wildcards", K_TXN, NULL, "vic%_", 0, 0, 0, SQLLOCK_OK, NULL },
    { "txn backslash quote", K_TXN, NULL, "\\'\"`", 0, 0, 0, SQLLOCK_OK,
      NULL },
    { "record SQL injection", K_REC, NULL,
      "'); DELETE FROM sqllock_record; --", 0, 0, 0, SQLLOCK_OK, NULL },
    { "record wildcards", K_REC, NULL, "%_\\%", 0, 0, 0, SQLLOCK_OK, NULL },

    /* Times: huge, overflowing, negative. */
    { "ttl INT64_MAX", K_NEW, NULL, "t", 0, 0, INT64_MAX, SQLLOCK_EINVAL,
      "too large" },
    { "ttl just above the limit", K_NEW, NULL, "t", 0, 0,
      INT64_C(9000000000001), SQLLOCK_EINVAL, "too large" },
    { "ttl at the limit (285 years)", K_NEW, NULL, "ttl-max", 0, 0,
      INT64_C(9000000000000), SQLLOCK_OK, NULL },
    { "ttl INT64_MIN", K_NEW, NULL, "t", 0, 0, INT64_MIN, SQLLOCK_EINVAL,
      "ttl" },
    { "wait INT64_MAX, free lock", K_ACQUIRE, NULL, "wait-max", 0, 0,
      INT64_MAX, SQLLOCK_OK, NULL },
    { "wait INT64_MAX - 1, free lock", K_ACQUIRE, NULL, "wait-max1", 0, 0,
      INT64_MAX - 1, SQLLOCK_OK, NULL },
    { "wait 1 ms on the victim", K_ACQUIRE, NULL, "victim", 0, 0, 1,
      SQLLOCK_TIMEOUT, "victim" },
    { "wait INT64_MIN", K_ACQUIRE, NULL, "w", 0, 0, INT64_MIN,
      SQLLOCK_EINVAL, "wait" },
    { "renew never acquired", K_RENEW, NULL, "victim", 0, 0, 0,
      SQLLOCK_ENOTHELD, "not hold" },
    { "release never acquired", K_RELEASE, NULL, "victim", 0, 0, 0,
      SQLLOCK_ENOTHELD, "not hold" },
    { "txn lock timeout -1", K_TXN_TIMEOUT, NULL, "lt", 0, 0, -1,
      SQLLOCK_EINVAL, "timeout" },
    { "txn lock timeout INT64_MIN", K_TXN_TIMEOUT, NULL, "lt", 0, 0,
      INT64_MIN, SQLLOCK_EINVAL, "timeout" },
    { "txn lock timeout INT64_MAX", K_TXN_TIMEOUT, NULL, "lt-max", 0, 0,
      INT64_MAX, SQLLOCK_OK, NULL },
    { "txn lock timeout 2^31 ms", K_TXN_TIMEOUT, NULL, "lt-2g", 0, 0,
      INT64_C(2147483648), SQLLOCK_OK, NULL },
    { "record value 1 MB + 1", K_REC_VALUE, NULL, "big", 0, 0,
      SQLLOCK_VALUE_MAX + 1, SQLLOCK_EINVAL, "bytes" },
    { "record cas expected INT64_MAX", K_REC_CAS, NULL, NULL, 0, 0,
      INT64_MAX, SQLLOCK_EINVAL, "overflow" },
    { "record cas expected -1", K_REC_CAS, NULL, NULL, 0, 0, -1,
      SQLLOCK_EINVAL, "version" },
    { "record cas expected 2 (wrong)", K_REC_CAS, NULL, NULL, 0, 0, 2,
      SQLLOCK_CONFLICT, "version|conflict|changed" },

    /* Application tables: identifiers are checked, values are bound. */
    { "table name with SQL", K_TBL_NAME, NULL,
      "inv; DROP TABLE sqllock_lease", F_RAW, 0, 0, SQLLOCK_EINVAL,
      "table name" },
    { "table name quoted", K_TBL_NAME, NULL, "\"inv\"", F_RAW, 0, 0,
      SQLLOCK_EINVAL, "table name" },
    { "table name 1 MB", K_TBL_NAME, NULL, NULL, F_RAW, MB, 0,
      SQLLOCK_EINVAL, "table name" },
    { "column with backquote", K_TBL_COL, NULL, "qty` = 0, `fence", F_RAW, 0,
      0, SQLLOCK_EINVAL, "column" },
    { "column with comment", K_TBL_COL, NULL, "qty/**/", F_RAW, 0, 0,
      SQLLOCK_EINVAL, "column" },
    { "text key always-true", K_TBL_GET, NULL, "' OR '1'='1", F_RAW, 0, 0,
      SQLLOCK_NOTFOUND, "no row|not found|no such" },
    { "text key with SQL, row exists", K_TBL_GET, NULL,
      "k'; DROP TABLE sqllock_lease; --", F_RAW, 0, 0, SQLLOCK_OK, NULL },
    { "text key LIKE %", K_TBL_GET, NULL, "%", F_RAW, 0, 0,
      SQLLOCK_NOTFOUND, "no row|not found|no such" },
    /* A value the database refuses for its column is bad input. (SQLite
     * types values, not columns: it stores the text, or turns an
     * overflowing sum into a REAL, so these run on the others.) */
    { "text into a number column", K_TBL_VALUE, "postgres",
      "1; DROP TABLE x", F_RAW, 0, 0, SQLLOCK_EINVAL, "invalid" },
    { "text into a number column", K_TBL_VALUE, "mysql", "1; DROP TABLE x",
      F_RAW, 0, 0, SQLLOCK_EINVAL, "qty" },
    { "qty + INT64_MAX overflows", K_TBL_ADD, "postgres", NULL, 0, 0,
      INT64_MAX, SQLLOCK_EINVAL, "range" },
    { "qty + INT64_MAX overflows", K_TBL_ADD, "mysql", NULL, 0, 0,
      INT64_MAX, SQLLOCK_EINVAL, "range" },
    /* Application values are the application's bytes: PostgreSQL
     * refuses what is not valid in its encoding; SQLite, and MySQL for
     * this column, compare the bytes and find no row. */
    { "text key invalid UTF-8", K_TBL_GET, "postgres", "k\xff", F_RAW, 0,
      0, SQLLOCK_EINVAL, "invalid byte sequence" },
    { "text key invalid UTF-8", K_TBL_GET, "mysql", "k\xff", F_RAW, 0, 0,
      SQLLOCK_NOTFOUND, "no row|not found|no such" },
    { "text key invalid UTF-8", K_TBL_GET, "sqlite", "k\xff", F_RAW, 0, 0,
      SQLLOCK_NOTFOUND, "no row|not found|no such" },
    { "fence column with SQL", K_FENCE_COL, NULL, "fence = 0 --", F_RAW, 0,
      0, SQLLOCK_EINVAL, "fence column" },
    { "fencing token 0", K_FENCE_TOKEN, NULL, NULL, 0, 0, 0,
      SQLLOCK_EINVAL, "token" },
    { "fencing token INT64_MIN", K_FENCE_TOKEN, NULL, NULL, 0, 0, INT64_MIN,
      SQLLOCK_EINVAL, "token" },
    { "fencing token stale", K_FENCE_TOKEN, NULL, NULL, 0, 0, 6,
      SQLLOCK_LOST, "newer|larger|token|lost" },

    /* URLs. %00 is the one way to put a NUL byte into a name the API
     * takes; it is refused wherever it appears. */
    { "URL %00 in a sqlite path", K_OPEN, "sqlite",
      "sqlite://{dir}/a%00b.db", 0, 0, 0, SQLLOCK_EURL, "NUL" },
    { "URL 1 MB sqlite path", K_OPEN, "sqlite", "sqlite://{dir}/{big}", 0, 0,
      0, SQLLOCK_ECONNECT, "open|name|long" },
    { "URL sqlite unknown parameter", K_OPEN, "sqlite",
      "sqlite://{dir}/x.db?vfs=unix-none", 0, 0, 0, SQLLOCK_EURL, "vfs" },
    { "URL sqlite busy_timeout overflow", K_OPEN, "sqlite",
      "sqlite://{dir}/x.db?busy_timeout=99999999999999999999", 0, 0, 0,
      SQLLOCK_EURL, "busy_timeout" },
    { "URL sqlite busy_timeout negative", K_OPEN, "sqlite",
      "sqlite://{dir}/x.db?busy_timeout=-1", 0, 0, 0, SQLLOCK_EURL,
      "busy_timeout" },
    { "URL control character", K_OPEN, "sqlite", "sqlite://{dir}/a\tb.db", 0,
      0, 0, SQLLOCK_EURL, "control" },
    { "URL port 99999999", K_OPEN, "postgres",
      "postgres://h:99999999/db", 0, 0, 0, SQLLOCK_EURL, "port" },
    { "URL port 0", K_OPEN, "postgres", "postgres://h:0/db", 0, 0, 0,
      SQLLOCK_EURL, "port" },
    { "URL port -1", K_OPEN, "mysql", "mysql://u@h:-1/db", 0, 0, 0,
      SQLLOCK_EURL, "port" },
    { "URL port 65536", K_OPEN, "mysql", "mysql://u@h:65536/db", 0, 0, 0,
      SQLLOCK_EURL, "port" },
    { "URL unclosed [", K_OPEN, "postgres", "postgres://u@[::1/db", 0, 0, 0,
      SQLLOCK_EURL, "[" },
    { "URL bad %-escape", K_OPEN, "postgres", "postgres://u:p%zz@h/db", 0,
      0, 0, SQLLOCK_EURL, "escape" },
    { "URL truncated %-escape", K_OPEN, "mysql", "mysql://u:p@h/db%4", 0, 0,
      0, SQLLOCK_EURL, "escape" },
    { "URL %00 in a password", K_OPEN, "postgres",
      "{scheme}://{user}:a%00b@{hostport}/{db}", 0, 0, 0, SQLLOCK_EURL,
      "NUL" },
    { "URL %00 in a user", K_OPEN, "mysql",
      "{scheme}://a%00b:p@{hostport}/{db}", 0, 0, 0, SQLLOCK_EURL, "NUL" },
    { "URL unknown scheme with creds", K_OPEN, NULL,
      "pgsql://u:secret@h/db", 0, 0, 0, SQLLOCK_ESCHEME, "pgsql" },
    /* The real password followed by an encoded "&options=...": taken
     * literally, it is a wrong password. Read as a parameter, the
     * connect would succeed. */
    { "URL password smuggles options", K_OPEN, "postgres",
      "{scheme}://{user}:{pw}%26options%3D-c%20synchronous_commit%3Doff"
      "@{hostport}/{db}", 0, 0, 0, SQLLOCK_EPERM, "password|auth" },
    { "URL password smuggles init_command", K_OPEN, "mysql",
      "{scheme}://{user}:{pw}%3Finit_command%3DSET%20autocommit%3D0"
      "@{hostport}/{db}", 0, 0, 0, SQLLOCK_EPERM, "denied" },
    { "URL database name smuggles options", K_OPEN, "postgres",
      "{scheme}://{user}:{pw}@{hostport}/{db}%3Foptions%3D-csearch_path"
      "%3Devil", 0, 0, 0, SQLLOCK_ECONNECT, "does not exist" },
    { "URL database name with SQL", K_OPEN, "mysql",
      "{scheme}://{user}:{pw}@{hostport}/{db}%60%3B%20DROP%20TABLE%20x", 0,
      0, 0, SQLLOCK_EPERM, "denied" },
    { "URL unknown libpq parameter", K_OPEN, "postgres",
      "{url}{q}init_command=DROP%20TABLE%20sqllock_lease", 0, 0, 0,
      SQLLOCK_EURL, "init_command" },
    { "URL bad sslmode", K_OPEN, "postgres", "{url}{q}sslmode=bogus", 0, 0,
      0, SQLLOCK_EURL, "sslmode" },
    { "URL MySQL init_command", K_OPEN, "mysql",
      "{url}{q}init_command=DROP%20TABLE%20sqllock_lease", 0, 0, 0,
      SQLLOCK_EURL, "init_command" },
    { "URL MySQL local_infile", K_OPEN, "mysql", "{url}{q}local_infile=1", 0,
      0, 0, SQLLOCK_EURL, "local_infile" },
    { "URL MySQL LOCAL_INFILE", K_OPEN, "mysql", "{url}{q}LOCAL_INFILE=1", 0,
      0, 0, SQLLOCK_EURL, "LOCAL_INFILE" },
    { "URL MySQL relative socket", K_OPEN, "mysql",
      "{url}{q}socket=..%2Fsock", 0, 0, 0, SQLLOCK_EURL, "socket" },
    { "URL MySQL bad ssl_mode", K_OPEN, "mysql", "{url}{q}ssl_mode=off", 0,
      0, 0, SQLLOCK_EURL, "ssl_mode" },
    { "URL MySQL parameter without value", K_OPEN, "mysql",
      "{url}{q}local_infile", 0, 0, 0, SQLLOCK_EURL, "name=value" },
    /* PostgreSQL options= is the user's own session configuration: it is
     * allowed, and the library keeps its contract under it or says why
     * it cannot. */
    { "URL options synchronous_commit=off", K_OPEN_TRY, "postgres",
      "{url}{q}options=-csynchronous_commit%3Doff", 0, 0, 0, SQLLOCK_OK,
      NULL },
    { "URL options synchronous_commit=local", K_OPEN_TRY, "postgres",
      "{url}{q}options=-csynchronous_commit%3Dlocal", 0, 0, 0, SQLLOCK_OK,
      NULL },
    { "URL options synchronous_commit=remote_apply", K_OPEN_TRY, "postgres",
      "{url}{q}options=-csynchronous_commit%3Dremote_apply", 0, 0, 0,
      SQLLOCK_OK, NULL },
    { "URL options serializable", K_OPEN_TRY, "postgres",
      "{url}{q}options=-cdefault_transaction_isolation%3Dserializable", 0, 0,
      0, SQLLOCK_OK, NULL },
    { "URL options read only", K_OPEN_TRY, "postgres",
      "{url}{q}options=-cdefault_transaction_read_only%3Don", 0, 0, 0,
      SQLLOCK_EPERM, "read-only" },
    { "URL options search_path elsewhere", K_OPEN_TRY, "postgres",
      "{url}{q}options=-csearch_path%3Dpg_catalog", 0, 0, 0,
      SQLLOCK_ENOSCHEMA, "init" },
};

/* The input name of case `c`: NULL, the bytes as written, or `big` bytes
 * (the prefix, then the case's name repeated, then 'n'); malloc'd. */
static char *case_name(const fixture *f, const api_case *c)
{
    char *s;
    size_t n, o;

    if ((c->flags & F_NULL) || (c->name == NULL && c->big == 0))
        return NULL;
    if (c->big > 0) {
        const char *unit = c->name != NULL ? c->name : "n";
        size_t ul = strlen(unit);
        s = malloc(c->big + 1);
        assert_non_null(s);
        o = (c->flags & F_RAW) ? 0 : strlen(f->prefix);
        memcpy(s, f->prefix, o);
        while (o + ul <= c->big) {
            memcpy(s + o, unit, ul);
            o += ul;
        }
        memset(s + o, 'n', c->big - o);
        s[c->big] = '\0';
        return s;
    }
    n = strlen(f->prefix) + strlen(c->name) + 1;
    s = malloc(n);
    assert_non_null(s);
    snprintf(s, n, "%s%s", (c->flags & F_RAW) ? "" : f->prefix, c->name);
    return s;
}

/* A lease round trip: held, listed under exactly this name with this
 * owner, released. */
static void lease_round_trip(fixture *f, sqllock_db *db, sqllock_lease *l,
                             const char *name, const char *label)
{
    tu_row r;

    assert_string_equal(sqllock_lease_name(l), name);
    assert_int_equal(tu_find(f->vdb, name, &r), SQLLOCK_OK);
    if (r.found != 1)
        fail_msg("%s: the name did not round-trip (%d rows)", label,
                 r.found);
    assert_string_equal(r.owner, sqllock_lease_owner(l));
    assert_int_equal(r.token, sqllock_lease_token(l));
    EXPECT_RC(db, sqllock_lease_release(l), SQLLOCK_OK, label);
}

static int run_table_case(fixture *f, const api_case *c, const char *name)
{
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_table t = { NULL, "id", "version" };
    sqllock_cell key = SQLLOCK_TEXT("plain");
    sqllock_cell set = { "qty", SQLLOCK_OP_SET, NULL, 1 };
    int64_t vals[1], ver = 0;
    const char *cols[1] = { "qty" };

    (void)o;
    t.table = f->app;
    switch (c->kind) {
    case K_TBL_GET:
        key.text = name;
        return sqllock_table_get(f->db, &t, &key, cols, 1, vals, &ver);
    case K_TBL_NAME:
        t.table = name;
        return sqllock_table_update(f->db, &t, &key, &set, 1, NULL, 0);
    case K_TBL_COL:
        set.column = name;
        return sqllock_table_update(f->db, &t, &key, &set, 1, NULL, 0);
    case K_TBL_VALUE:
        set.text = name;
        return sqllock_table_update(f->db, &t, &key, &set, 1, NULL, 0);
    case K_TBL_ADD:
        set.op = SQLLOCK_OP_ADD;
        set.number = c->num;
        return sqllock_table_update(f->db, &t, &key, &set, 1, NULL, 0);
    case K_FENCE_COL:
        return sqllock_table_fenced_update(f->db, &t, &key, name, 100, &set,
                                           1, NULL, 0);
    case K_FENCE_TOKEN:
        return sqllock_table_fenced_update(f->db, &t, &key, "fence", c->num,
                                           &set, 1, NULL, 0);
    default:
        return -1;
    }
}

/* Runs one case; returns its status, having checked the round trip of a
 * case that must succeed (and undone it). */
static int run_api_case(fixture *f, const api_case *c, const char *name,
                        sqllock_db **msg_db)
{
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_lease *l = NULL;
    sqllock_db *db = f->db;
    int rc;

    *msg_db = f->db;
    o.ttl_ms = 30000;
    switch (c->kind) {
    case K_NEW:
        o.ttl_ms = c->num;
        /* fall through */
    case K_TRY:
    case K_ACQUIRE:
    case K_RENEW:
    case K_RELEASE:
        rc = sqllock_lease_new(db, name, &o, &l);
        if (rc != SQLLOCK_OK)
            return rc;
        if (c->kind == K_RENEW)
            rc = sqllock_lease_renew(l);
        else if (c->kind == K_RELEASE)
            rc = sqllock_lease_release(l);
        else if (c->kind == K_ACQUIRE)
            rc = sqllock_lease_acquire(l, c->num);
        else
            rc = sqllock_lease_try_acquire(l);
        if (rc == SQLLOCK_OK && c->kind != K_RENEW && c->kind != K_RELEASE) {
            if (c->kind == K_NEW) {
                /* The server's expiry is the ttl away, not wrapped. */
                tu_row r;
                assert_int_equal(tu_find(f->vdb, name, &r), SQLLOCK_OK);
                if (r.remaining_ms < c->num - INT64_C(86400000) ||
                    r.remaining_ms > c->num)
                    fail_msg("%s: the server's expiry is %lld ms away, "
                             "want %lld", c->label,
                             (long long)r.remaining_ms, (long long)c->num);
                /* A renewal does the same arithmetic. */
                EXPECT_RC(db, sqllock_lease_renew(l), SQLLOCK_OK, c->label);
            }
            lease_round_trip(f, db, l, name, c->label);
            forget_name(f, name);
        }
        sqllock_lease_free(l);
        return rc;
    case K_TXN:
    case K_TXN_TIMEOUT: {
        sqllock_txn_options to = SQLLOCK_TXN_OPTIONS_INIT;
        sqllock_txn *t = NULL;
        const char *names[1];
        int got = -1;

        names[0] = name;
        to.lock_timeout_ms = c->kind == K_TXN_TIMEOUT ? c->num : 0;
        rc = sqllock_txn_begin(db, &to, &t);
        if (rc != SQLLOCK_OK)
            return rc;
        rc = sqllock_txn_lock(t, names, 1, SQLLOCK_LOCK_WAIT, &got);
        if (rc == SQLLOCK_OK) {
            char sql[200];
            sqllock_value arg = sqllock__text(name);
            int64_t n = -1;
            int has = 0;
            assert_int_equal(got, 1);
            /* The row has exactly this name (read in the transaction). */
            EXPECT_RC(db, sqllock__exec_sql(db, ph(f, "SELECT count(*) FROM "
                                                   "sqllock_row WHERE name = "
                                                   "?", sql, sizeof sql),
                                            &arg, 1, &has, &n, NULL),
                      SQLLOCK_OK, c->label);
            if (n != 1)
                fail_msg("%s: the row-lock name did not round-trip (%lld "
                         "rows)", c->label, (long long)n);
            EXPECT_RC(db, sqllock_txn_commit(t), SQLLOCK_OK, c->label);
        }
        sqllock_txn_free(t);
        if (rc == SQLLOCK_OK)
            forget_name(f, name);
        return rc;
    }
    case K_REC: {
        void *v = NULL;
        size_t len = 0;
        int64_t ver = 0;

        rc = sqllock_record_create(db, name, "v\0'", 3);
        if (rc != SQLLOCK_OK)
            return rc;
        EXPECT_RC(db, sqllock_record_get(db, name, &v, &len, &ver),
                  SQLLOCK_OK, c->label);
        assert_int_equal(len, 3);
        assert_memory_equal(v, "v\0'", 3);
        assert_int_equal(ver, 1);
        sqllock_free(v);
        EXPECT_RC(db, sqllock_record_cas(db, name, 1, "w", 1, &ver),
                  SQLLOCK_OK, c->label);
        assert_int_equal(ver, 2);
        EXPECT_RC(db, sqllock_record_delete(db, name, 2), SQLLOCK_OK,
                  c->label);
        return rc;
    }
    case K_REC_VALUE: {
        char *v = calloc(1, (size_t)c->num);
        assert_non_null(v);
        rc = sqllock_record_create(db, name, v, (size_t)c->num);
        free(v);
        return rc;
    }
    case K_REC_CAS: {
        char key[80];
        snprintf(key, sizeof key, "%svictim", f->prefix);
        return sqllock_record_cas(db, key, c->num, "x", 1, NULL);
    }
    case K_OPEN:
    case K_OPEN_TRY: {
        sqllock_db *o_db = NULL;
        char *url = expand_url(f, c->name);
        if (url == NULL)
            return -2;
        rc = sqllock_open(url, NULL, &o_db);
        free(url);
        if (o_db == NULL)
            fail_msg("%s: sqllock_open() left no handle (%s)", c->label,
                     sqllock_errname(rc));
        if (c->kind == K_OPEN_TRY) {
            char lname[80];
            if (rc != SQLLOCK_OK)
                fail_msg("%s: open: %s: %s", c->label, sqllock_errname(rc),
                         sqllock_errmsg(o_db));
            snprintf(lname, sizeof lname, "%sopen-try", f->prefix);
            rc = sqllock_lease_new(o_db, lname, &o, &l);
            if (rc == SQLLOCK_OK)
                rc = sqllock_lease_try_acquire(l);
            if (rc == SQLLOCK_OK) {
                lease_round_trip(f, o_db, l, lname, c->label);
                forget_name(f, lname);
            }
            sqllock_lease_free(l);
        }
        /* The message is read before the handle goes. */
        *msg_db = o_db;
        return rc;
    }
    default:
        return run_table_case(f, c, name);
    }
}

static void test_hostile_api_table(void **state)
{
    fixture *f = *state;
    size_t i, ran = 0, skipped = 0;

    for (i = 0; i < sizeof api_cases / sizeof api_cases[0]; i++) {
        const api_case *c = &api_cases[i];
        sqllock_db *mdb = NULL;
        snapshot before;
        char *name;
        int rc;

        if (c->drv != NULL && !is_drv(f, c->drv))
            continue;
        name = (c->kind == K_OPEN || c->kind == K_OPEN_TRY)
                   ? NULL : case_name(f, c);
        snap(f, &before);
        rc = run_api_case(f, c, name, &mdb);
        if (rc == -2) {
            printf("hostile [%s]: skip \"%s\": the URL has no password\n",
                   f->drv, c->label);
            skipped++;
        } else {
            if (rc != c->want)
                fail_msg("%s: got %s, want %s (message: %s)", c->label,
                         sqllock_errname(rc), sqllock_errname(c->want),
                         sqllock_errmsg(mdb));
            if (c->want != SQLLOCK_OK) {
                if (sqllock_errcode(mdb) != c->want)
                    fail_msg("%s: sqllock_errcode() is %s, not %s", c->label,
                             sqllock_errname(sqllock_errcode(mdb)),
                             sqllock_errname(c->want));
                if (!msg_has(sqllock_errmsg(mdb), c->msg))
                    fail_msg("%s: message \"%s\" mentions none of \"%s\"",
                             c->label, sqllock_errmsg(mdb), c->msg);
            }
            /* No message carries a password from a URL. */
            if (f->parts->password != NULL &&
                strlen(f->parts->password) >= 4 &&
                strstr(sqllock_errmsg(mdb), f->parts->password) != NULL)
                fail_msg("%s: the message shows the password: %s", c->label,
                         sqllock_errmsg(mdb));
            expect_unchanged(f, &before, c->want != SQLLOCK_OK, c->label);
            ran++;
        }
        if (mdb != f->db)
            sqllock_close(mdb);
        snap_free(&before);
        free(name);
    }
    printf("hostile [%s]: %zu API cases ran, %zu skipped (table of %zu)\n",
           f->drv, ran, skipped, sizeof api_cases / sizeof api_cases[0]);
}

/* A name the C API cannot carry: bytes after a NUL are not part of it
 * (a C string ends there). "x\0y" is the lock "x", not another. */
static void test_hostile_embedded_nul_ends_the_name(void **state)
{
    fixture *f = *state;
    char a[80], b[80];
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_lease *la = NULL, *lb = NULL;
    size_t p = strlen(f->prefix);

    snprintf(a, sizeof a, "%snul", f->prefix);
    memcpy(b, a, p + 3);
    memcpy(b + p + 3, "\0tail", 6);
    o.ttl_ms = 30000;
    EXPECT_RC(f->db, sqllock_lease_new(f->db, a, &o, &la), SQLLOCK_OK, "a");
    EXPECT_RC(f->vdb, sqllock_lease_new(f->vdb, b, &o, &lb), SQLLOCK_OK, "b");
    assert_string_equal(sqllock_lease_name(lb), a);
    EXPECT_RC(f->db, sqllock_lease_try_acquire(la), SQLLOCK_OK, "acquire");
    EXPECT_RC(f->vdb, sqllock_lease_try_acquire(lb), SQLLOCK_BUSY,
              "the same lock");
    EXPECT_RC(f->db, sqllock_lease_release(la), SQLLOCK_OK, "release");
    forget_name(f, a);
    sqllock_lease_free(la);
    sqllock_lease_free(lb);
}

/* ------------------------------------------------------------------ */
/* L10 under options=-c synchronous_commit=off (PostgreSQL)            */
/* ------------------------------------------------------------------ */

/* The session's synchronous_commit, as a small number: 0 off, 1 on. */
static int64_t session_sync_off(sqllock_db *db)
{
    int64_t off = -1;
    int has = 0;

    EXPECT_RC(db, sqllock__exec_sql(db, "SELECT CASE WHEN current_setting("
                                    "'synchronous_commit') = 'off' THEN 1 "
                                    "ELSE 0 END", NULL, 0, &has, &off, NULL),
              SQLLOCK_OK, "current_setting");
    return off;
}

/* L10: a URL that turns synchronous_commit off for the whole session
 * (options=-c..., or ALTER ROLE ... SET) must not make durable grants and
 * renewals asynchronous: each still waits for its WAL flush. Releases
 * stay asynchronous as designed. */
static void test_hostile_L10_options_cannot_make_grants_async(void **state)
{
    enum { N = 30 };
    fixture *f = *state;
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_lease *l = NULL;
    sqllock_db *db = NULL;
    char *url, name[80];
    int64_t before, syncs = 0;
    snapshot snap0;
    int i, attempt;

    if (!is_drv(f, "postgres"))
        return;
    url = expand_url(f, "{url}{q}options=-csynchronous_commit%3Doff");
    assert_non_null(url);
    EXPECT_RC(db, sqllock_open(url, NULL, &db), SQLLOCK_OK, "open");
    free(url);
    /* The option took effect for the session. */
    assert_int_equal(session_sync_off(db), 1);
    snap(f, &snap0);
    snprintf(name, sizeof name, "%swal", f->prefix);
    o.ttl_ms = 60000;
    EXPECT_RC(db, sqllock_lease_new(db, name, &o, &l), SQLLOCK_OK, "new");
    /* pg_stat_wal counts for the whole server, and a backend publishes
     * its counts up to 10 s late: under another client's load, a flush
     * that covered one of these commits may not be counted yet. A few
     * tries; one with every flush counted is enough. Without the pin the
     * count is the WAL writer's few. */
    for (attempt = 0; attempt < 3; attempt++) {
        before = tu_pg_wal_syncs(db);
        for (i = 0; i < N; i++) {
            EXPECT_RC(db, sqllock_lease_try_acquire(l), SQLLOCK_OK,
                      "acquire");
            EXPECT_RC(db, sqllock_lease_renew(l), SQLLOCK_OK, "renew");
            EXPECT_RC(db, sqllock_lease_release(l), SQLLOCK_OK, "release");
        }
        (void)tu_pg_wal_syncs(db);
        syncs = tu_pg_wal_syncs(db) - before;
        printf("hostile [postgres]: WAL syncs for %d durable acquire+renew+"
               "release under synchronous_commit=off: %lld\n", N,
               (long long)syncs);
        if (syncs >= 2 * N)
            break;
    }
    if (syncs < 2 * N)
        fail_msg("L10: %d durable acquires and renewals under a URL's "
                 "synchronous_commit=off made only %lld WAL syncs: the "
                 "session's setting made lease grants non-durable", 2 * N,
                 (long long)syncs);
    /* The pin lasts for the statement's own transaction: the session's
     * setting is as the URL made it. */
    assert_int_equal(session_sync_off(db), 1);
    sqllock_lease_free(l);
    sqllock_close(db);
    expect_unchanged(f, &snap0, 0, "the WAL test");
    snap_free(&snap0);
}

/* ------------------------------------------------------------------ */
/* The CLI table                                                       */
/* ------------------------------------------------------------------ */

#define CLI_MAX_ARGS 16

/* The biggest single argument Linux passes (MAX_ARG_STRLEN is 128 KiB
 * with the NUL): the CLI's "1 MB name". */
#define CLI_BIG 131071

typedef struct cli_case {
    const char *label;
    const char *drv;                   /* only on this driver; NULL: all */
    const char *db;                    /* --db template; NULL: the URL */
    const char *args[CLI_MAX_ARGS];    /* "{P}" prefix, "{BIG}", "{OWNER}" */
    int want;
    const char *err_any;               /* stderr mentions one of these */
    const char *err_not;               /* template stderr must not show */
} cli_case;

static const cli_case cli_cases[] = {
    /* Durations. */
    { "ttl 9999999999999d", NULL, NULL,
      { "acquire", "{P}c", "--ttl", "9999999999999d" }, 64,
      "9999999999999d", NULL },
    { "ttl overflow in ms", NULL, NULL,
      { "acquire", "{P}c", "--ttl", "9223372036854775808ms" }, 64,
      "bad duration", NULL },
    { "ttl INT64_MAX ms", NULL, NULL,
      { "acquire", "{P}c", "--ttl", "9223372036854775807ms" }, 64,
      "too large", NULL },
    { "ttl -1s", NULL, NULL, { "acquire", "{P}c", "--ttl", "-1s" }, 64,
      "-1s", NULL },
    { "ttl 0", NULL, NULL, { "acquire", "{P}c", "--ttl", "0ms" }, 64,
      "more than 0", NULL },
    { "ttl 1.5ms", NULL, NULL, { "acquire", "{P}c", "--ttl", "1.5ms" }, 64,
      "milliseconds", NULL },
    { "ttl 1.5h30m", NULL, NULL, { "acquire", "{P}c", "--ttl", "1.5h30m" },
      64, "bad duration", NULL },
    { "ttl 30m1h", NULL, NULL, { "acquire", "{P}c", "--ttl", "30m1h" }, 64,
      "largest first", NULL },
    { "ttl 0x10", NULL, NULL, { "acquire", "{P}c", "--ttl", "0x10" }, 64,
      "bad duration", NULL },
    { "ttl +5s", NULL, NULL, { "acquire", "{P}c", "--ttl", "+5s" }, 64,
      "bad duration", NULL },
    { "ttl ' 5s'", NULL, NULL, { "acquire", "{P}c", "--ttl", " 5s" }, 64,
      "bad duration", NULL },
    { "ttl '5s '", NULL, NULL, { "acquire", "{P}c", "--ttl", "5s " }, 64,
      "bad duration", NULL },
    { "ttl empty", NULL, NULL, { "acquire", "{P}c", "--ttl", "" }, 64,
      "bad duration", NULL },
    { "ttl=empty", NULL, NULL, { "acquire", "{P}c", "--ttl=" }, 64,
      "bad duration", NULL },
    { "ttl 5S", NULL, NULL, { "acquire", "{P}c", "--ttl", "5S" }, 64,
      "bad duration", NULL },
    { "ttl 5sec", NULL, NULL, { "acquire", "{P}c", "--ttl", "5sec" }, 64,
      "bad duration", NULL },
    { "ttl 1e3", NULL, NULL, { "acquire", "{P}c", "--ttl", "1e3" }, 64,
      "bad duration", NULL },
    { "ttl with NUL-like %00", NULL, NULL,
      { "acquire", "{P}c", "--ttl", "5s%00" }, 64, "bad duration", NULL },
    { "wait 1e400", NULL, NULL,
      { "acquire", "{P}c", "--ttl", "5s", "--wait", "1e400" }, 64,
      "--wait", NULL },
    { "wait -1s", NULL, NULL,
      { "acquire", "{P}c", "--ttl", "5s", "--wait", "-1s" }, 64, "--wait",
      NULL },
    { "wait overflow", NULL, NULL,
      { "acquire", "{P}c", "--ttl", "5s", "--wait", "9999999999999999999" },
      64, "--wait", NULL },
    { "wait inf", NULL, NULL,
      { "acquire", "{P}c", "--ttl", "5s", "--wait", "inf" }, 64, "--wait",
      NULL },
    { "run kill-after overflow", NULL, NULL,
      { "run", "{P}c", "--ttl", "5s", "--kill-after", "9999999999999d", "--",
        "true" }, 64, "kill-after", NULL },
    { "run renew-every -1s", NULL, NULL,
      { "run", "{P}c", "--ttl", "5s", "--renew-every", "-1s", "--", "true" },
      64, "renew-every", NULL },
    { "run renew-every longer than ttl", NULL, NULL,
      { "run", "{P}c", "--ttl", "5s", "--renew-every", "1h", "--", "true" },
      64, "renew-every", NULL },
    { "run ttl INT64_MAX ms", NULL, NULL,
      { "run", "{P}c", "--ttl", "9223372036854775807ms", "--", "true" }, 64,
      "too large", NULL },
    { "run busy-exit 256", NULL, NULL,
      { "run", "{P}c", "--ttl", "5s", "--busy-exit", "256", "--", "true" },
      64, "busy-exit", NULL },
    { "run busy-exit -1", NULL, NULL,
      { "run", "{P}c", "--ttl", "5s", "--busy-exit", "-1", "--", "true" },
      64, "busy-exit", NULL },
    { "run signal 0", NULL, NULL,
      { "run", "{P}c", "--ttl", "5s", "--signal", "0", "--", "true" }, 64,
      "signal", NULL },
    { "run signal 99999999999", NULL, NULL,
      { "run", "{P}c", "--ttl", "5s", "--signal", "99999999999", "--",
        "true" }, 64, "signal", NULL },
    { "run signal empty", NULL, NULL,
      { "run", "{P}c", "--ttl", "5s", "--signal", "", "--", "true" }, 64,
      "signal", NULL },
    { "reap older-than overflow", NULL, NULL,
      { "reap", "--older-than", "9999999999999d" }, 64, "older-than", NULL },
    { "reap older-than INT64_MAX ms", NULL, NULL,
      { "reap", "--older-than", "9223372036854775807ms" }, 64, "grace",
      NULL },
    { "reap batch overflow", NULL, NULL,
      { "reap", "--batch", "99999999999999999999" }, 64, "batch", NULL },
    { "reap batch -1", NULL, NULL, { "reap", "--batch", "-1" }, 64, "batch",
      NULL },
    /* Missing values and arguments. */
    { "ttl without a value", NULL, NULL, { "acquire", "{P}c", "--ttl" }, 64,
      "needs a value", NULL },
    { "wait without a value", NULL, NULL,
      { "acquire", "{P}c", "--ttl", "5s", "--wait" }, 64, "needs a value",
      NULL },
    { "no ttl", NULL, NULL, { "acquire", "{P}c" }, 64, "--ttl", NULL },
    { "no name", NULL, NULL, { "acquire", "--ttl", "5s" }, 64, "NAME",
      NULL },
    { "release without owner", NULL, NULL,
      { "release", "{P}victim", "--token", "1" }, 64, "--owner", NULL },
    { "release token overflow", NULL, NULL,
      { "release", "{P}victim", "--owner", "{OWNER}", "--token",
        "99999999999999999999" }, 64, "token", NULL },
    { "release token -1", NULL, NULL,
      { "release", "{P}victim", "--owner", "{OWNER}", "--token", "-1" }, 64,
      "token", NULL },
    { "release token 0", NULL, NULL,
      { "release", "{P}victim", "--owner", "{OWNER}", "--token", "0" }, 64,
      "token", NULL },
    { "release owner with SQL", NULL, NULL,
      { "release", "{P}victim", "--owner", "' OR '1'='1", "--token", "1" },
      64, "owner", NULL },
    { "release wrong owner", NULL, NULL,
      { "release", "{P}victim", "--owner", "{OWNER}", "--token", "1" }, 76,
      "lost", NULL },
    { "release owner in upper case", NULL, NULL,
      { "release", "{P}victim", "--owner", "0123456789ABCDEF0123456789ABCDEF",
        "--token", "1" }, 64, "owner", NULL },
    /* Names. */
    { "empty name", NULL, NULL, { "acquire", "", "--ttl", "5s" }, 64,
      "empty", NULL },
    { "128 KiB name", NULL, NULL, { "acquire", "{BIG}", "--ttl", "5s" }, 64,
      "255", NULL },
    { "invalid UTF-8 name", NULL, NULL,
      { "acquire", "{P}\xff\xfe", "--ttl", "5s" }, 64, "UTF-8", NULL },
    { "newline in a name", NULL, NULL,
      { "acquire", "{P}a\nb", "--ttl", "5s" }, 64, "control", NULL },
    { "escape sequence in a name", NULL, NULL,
      { "run", "{P}\x1b]0;pwned\x07", "--ttl", "5s", "--", "true" }, 64,
      "control", NULL },
    { "holder with control characters", NULL, NULL,
      { "acquire", "{P}c", "--ttl", "5s", "--holder", "h\r\nx" }, 64,
      "holder", NULL },
    { "holder 1000 bytes", NULL, NULL,
      { "acquire", "{P}c", "--ttl", "5s", "--holder", "{HOLDER}" }, 64,
      "holder", NULL },
    { "the victim is busy", NULL, NULL,
      { "acquire", "{P}victim", "--ttl", "5s" }, 75, "held", NULL },
    { "the victim with a wait", NULL, NULL,
      { "acquire", "{P}victim", "--ttl", "5s", "--wait", "50ms" }, 75,
      "held|waiting", NULL },
    /* URLs in --db. The tool exits 69 for a URL it cannot use. */
    { "db empty", NULL, "", { "list" }, 69, "empty", NULL },
    { "db unknown scheme", NULL, "redis://h/0", { "list" }, 69, "redis",
      NULL },
    { "db no scheme", NULL, "/tmp/locks.db", { "list" }, 69, "scheme",
      NULL },
    { "db port 99999999", NULL, "postgres://h:99999999/db", { "list" }, 69,
      "port", NULL },
    { "db %00", NULL, "sqlite:///tmp/a%00b.db", { "list" }, 69, "NUL",
      NULL },
    { "db password not shown", "postgres",
      "{scheme}://{user}:NotThePassw0rd@{hostport}/{db}", { "list" }, 69,
      "password|auth", "NotThePassw0rd" },
    { "db password not shown (mysql)", "mysql",
      "{scheme}://{user}:NotThePassw0rd@{hostport}/{db}", { "list" }, 69,
      "denied", "NotThePassw0rd" },
    { "db password in a parameter not shown", "postgres",
      "postgres://{user}@{hostport}/{db}?password=NotThePassw0rd", { "list" },
      69, "password|auth", "NotThePassw0rd" },
    { "db MySQL init_command", "mysql",
      "{url}{q}init_command=DELETE%20FROM%20sqllock_lease", { "list" }, 69,
      "init_command", NULL },
    { "db MySQL local_infile", "mysql", "{url}{q}local_infile=1",
      { "list" }, 69, "local_infile", NULL },
    { "db libpq unknown option", "postgres",
      "{url}{q}init_command=DELETE%20FROM%20sqllock_lease", { "list" }, 69,
      "init_command", NULL },
    { "db sqlite unknown parameter", "sqlite", "{url}{q}mode=memory",
      { "list" }, 69, "mode", NULL },
    { "db without a value", NULL, NULL, { "list", "--db" }, 64,
      "needs a value", NULL },
    /* Unknown commands and options. */
    { "unknown command with SQL", NULL, NULL,
      { "'; DROP TABLE sqllock_lease; --" }, 64, "unknown command", NULL },
    { "unknown option", NULL, NULL,
      { "acquire", "{P}c", "--ttl", "5s", "--ttl-ms", "5" }, 64,
      "unknown option", NULL },
    { "single-dash option", NULL, NULL,
      { "acquire", "{P}c", "-t", "5s" }, 64, "unknown option", NULL },
    { "flag given a value", NULL, NULL, { "list", "--json=yes" }, 64,
      "takes no value", NULL },
};

/* Runs the tool with `argv` (NULL-terminated, argv[0] the tool);
 * returns its exit status; stdout and stderr land in f->out, f->err. */
static int cli_run(fixture *f, const char *const *argv)
{
    char out_path[4300], err_path[4300];
    int code;

    snprintf(out_path, sizeof out_path, "%s/stdout.txt", f->dir);
    snprintf(err_path, sizeof err_path, "%s/stderr.txt", f->dir);
    code = tu_wait(tu_spawn(argv, out_path, err_path, 0));
    tu_read_file(out_path, f->out, sizeof f->out);
    tu_read_file(err_path, f->err, sizeof f->err);
    return code;
}

static void test_hostile_cli_table(void **state)
{
    fixture *f = *state;
    size_t i, ran = 0;
    char *big = malloc(CLI_BIG + 1), holder[1001];

    assert_non_null(big);
    memcpy(big, f->prefix, strlen(f->prefix));
    memset(big + strlen(f->prefix), 'n', CLI_BIG - strlen(f->prefix));
    big[CLI_BIG] = '\0';
    memset(holder, 'h', 1000);
    holder[1000] = '\0';
    for (i = 0; i < sizeof cli_cases / sizeof cli_cases[0]; i++) {
        const cli_case *c = &cli_cases[i];
        const char *argv[CLI_MAX_ARGS + 4];
        char *owned[CLI_MAX_ARGS + 1];
        char *db;
        snapshot before;
        int n = 0, k, no = 0, code;

        if (c->drv != NULL && !is_drv(f, c->drv))
            continue;
        db = expand_url(f, c->db != NULL ? c->db : "{url}");
        if (db == NULL) {
            printf("hostile [%s]: skip CLI \"%s\": the URL has no "
                   "password\n", f->drv, c->label);
            continue;
        }
        argv[n++] = SQLLOCK_CLI_PATH;
        argv[n++] = "--db";
        argv[n++] = db;
        for (k = 0; k < CLI_MAX_ARGS && c->args[k] != NULL; k++) {
            const char *a = c->args[k];
            if (strcmp(a, "{BIG}") == 0) {
                argv[n++] = big;
            } else if (strcmp(a, "{HOLDER}") == 0) {
                argv[n++] = holder;
            } else if (strcmp(a, "{OWNER}") == 0) {
                argv[n++] = "0123456789abcdef0123456789abcdef";
            } else if (strncmp(a, "{P}", 3) == 0) {
                size_t len = strlen(f->prefix) + strlen(a) + 1;
                owned[no] = malloc(len);
                assert_non_null(owned[no]);
                snprintf(owned[no], len, "%s%s", f->prefix, a + 3);
                argv[n++] = owned[no++];
            } else {
                argv[n++] = a;
            }
        }
        argv[n] = NULL;
        snap(f, &before);
        code = cli_run(f, argv);
        if (code != c->want)
            fail_msg("CLI %s: exit %d, want %d\nstdout: %s\nstderr: %s",
                     c->label, code, c->want, f->out, f->err);
        if (!msg_has(f->err, c->err_any))
            fail_msg("CLI %s: stderr \"%s\" mentions none of \"%s\"",
                     c->label, f->err, c->err_any);
        if (c->err_not != NULL && strstr(f->err, c->err_not) != NULL)
            fail_msg("CLI %s: stderr shows \"%s\": %s", c->label, c->err_not,
                     f->err);
        if (f->parts->password != NULL && strlen(f->parts->password) >= 4 &&
            (strstr(f->err, f->parts->password) != NULL ||
             strstr(f->out, f->parts->password) != NULL))
            fail_msg("CLI %s: the output shows the database password",
                     c->label);
        /* Nothing on stdout for a failure: a script that evals it gets
         * nothing. */
        if (c->want != 0 && f->out[0] != '\0')
            fail_msg("CLI %s: exit %d but stdout has \"%s\"", c->label, code,
                     f->out);
        expect_unchanged(f, &before, 1, c->label);
        snap_free(&before);
        for (k = 0; k < no; k++)
            free(owned[k]);
        free(db);
        ran++;
    }
    free(big);
    printf("hostile [%s]: %zu CLI cases ran (table of %zu)\n", f->drv, ran,
           sizeof cli_cases / sizeof cli_cases[0]);
}

/* Names the tool must pass through byte for byte: acquire prints them
 * shell-quoted, list --json JSON-escaped, release finds them. */
static void test_hostile_cli_names_round_trip(void **state)
{
    static const char *const tails[] = {
        "'; DROP TABLE sqllock_lease; --", "it's \"quoted\"", "%_\\%",
        "$(touch /tmp/pwned) `id`", "victim ", "-dash", "\\n not a newline",
        "\xf0\x9f\x94\x92 lock",
    };
    fixture *f = *state;
    size_t i;

    for (i = 0; i < sizeof tails / sizeof tails[0]; i++) {
        char name[300], owner[SQLLOCK_OWNER_LEN + 1], tok[32], want[700];
        const char *argv[12];
        snapshot before;
        size_t o = 0;
        const char *p;

        snprintf(name, sizeof name, "%s%s", f->prefix, tails[i]);
        snap(f, &before);
        argv[0] = SQLLOCK_CLI_PATH;
        argv[1] = "--db";
        argv[2] = g_url;
        argv[3] = "acquire";
        argv[4] = "--ttl";
        argv[5] = "30s";
        argv[6] = "--";
        argv[7] = name;
        argv[8] = NULL;
        if (cli_run(f, argv) != 0)
            fail_msg("acquire \"%s\": %s", name, f->err);
        /* SQLLOCK_NAME='...' with each ' written as '\''. */
        o = (size_t)snprintf(want, sizeof want, "SQLLOCK_NAME='");
        for (p = name; *p != '\0'; p++)
            o += (size_t)snprintf(want + o, sizeof want - o, "%s",
                                  *p == '\'' ? "'\\''" : (char[2]){ *p, 0 });
        snprintf(want + o, sizeof want - o, "'\n");
        if (strstr(f->out, want) == NULL)
            fail_msg("acquire printed\n%s\nwant the line %s", f->out, want);
        assert_true(tu_get_var(f->out, "SQLLOCK_OWNER", owner, sizeof owner));
        assert_true(tu_get_var(f->out, "SQLLOCK_TOKEN", tok, sizeof tok));
        {
            tu_row r;
            assert_int_equal(tu_find(f->vdb, name, &r), SQLLOCK_OK);
            assert_int_equal(r.found, 1);
            assert_string_equal(r.owner, owner);
        }
        argv[3] = "list";
        argv[4] = "--json";
        argv[5] = NULL;
        assert_int_equal(cli_run(f, argv), 0);
        /* The JSON string of the name: " and \ escaped. */
        o = 0;
        want[o++] = '"';
        for (p = name; *p != '\0'; p++) {
            if (*p == '"' || *p == '\\')
                want[o++] = '\\';
            want[o++] = *p;
        }
        want[o++] = '"';
        want[o] = '\0';
        if (strstr(f->out, want) == NULL)
            fail_msg("list --json does not show %s:\n%s", want, f->out);
        argv[3] = "release";
        argv[4] = "--owner";
        argv[5] = owner;
        argv[6] = "--token";
        argv[7] = tok;
        argv[8] = "--";
        argv[9] = name;
        argv[10] = NULL;
        if (cli_run(f, argv) != 0)
            fail_msg("release \"%s\": %s", name, f->err);
        forget_name(f, name);
        expect_unchanged(f, &before, 0, name);
        snap_free(&before);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hostile_api_table),
        cmocka_unit_test(test_hostile_embedded_nul_ends_the_name),
        cmocka_unit_test(test_hostile_L10_options_cannot_make_grants_async),
        cmocka_unit_test(test_hostile_cli_table),
        cmocka_unit_test(test_hostile_cli_names_round_trip),
    };
    return TU_RUN_PER_URL("hostile", &g_url, tests, setup, teardown);
}
