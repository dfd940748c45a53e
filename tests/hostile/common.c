/*
 * common.c -- test_hostile's fixture, its snapshot of the database, and
 * the URLs made from the group's URL (hostile.h).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "test_util.h"
#include "test_run.h"
#include "test_spawn.h"
#include "hostile.h"

/* The URL the current group runs on. */
const char *g_url;

/* ------------------------------------------------------------------ */
/* A growable string                                                   */
/* ------------------------------------------------------------------ */

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

int ho_is_drv(const fixture *f, const char *d)
{
    return strcmp(f->drv, d) == 0;
}

/* SQL text with '?' placeholders, in the driver's own spelling. */
const char *ho_ph(const fixture *f, const char *sql, char *buf,
                  size_t size)
{
    size_t o = 0;
    int n = 0;

    for (; *sql != '\0' && o + 4 < size; sql++) {
        if (*sql == '?' && ho_is_drv(f, "postgres"))
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
    rc = sqllock__run_dyn(db, ho_ph(f, sql, text, sizeof text), args,
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

void ho_snap(fixture *f, snapshot *s)
{
    sqllock_db *db = f->vdb;
    char sql[512];
    int my = ho_is_drv(f, "mysql");

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
    else if (ho_is_drv(f, "sqlite"))
        dump(f, db, &s->counters, "sqllock_fence",
             "SELECT token FROM sqllock_fence", 1, -1, 0);
    /* PostgreSQL's sequence serves every client of the server: other
     * tests may draw from it meanwhile, so it is not compared. */
}

void ho_snap_free(snapshot *s)
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
    if (!ho_is_drv(f, "mysql"))
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
void ho_expect_unchanged(fixture *f, const snapshot *before,
                         int counters_too, const char *what)
{
    snapshot now;

    ho_snap(f, &now);
    if (strcmp(before->state.s ? before->state.s : "",
               now.state.s ? now.state.s : "") != 0)
        fail_msg("%s changed the database:\nbefore:\n%s\nafter:\n%s", what,
                 before->state.s, now.state.s);
    if (counters_too && !counters_kept(f, before->counters.s,
                                       now.counters.s))
        fail_msg("%s moved a token counter:\nbefore:\n%s\nafter:\n%s", what,
                 before->counters.s, now.counters.s);
    ho_snap_free(&now);
}

/* Removes what a round trip leaves on purpose: MySQL's per-name token
 * row (tokens come from the table's counter, which keeps counting), a
 * row-lock row. */
void ho_forget_name(fixture *f, const char *name)
{
    char sql[200];
    sqllock_value arg = sqllock__text(name);

    if (ho_is_drv(f, "mysql"))
        assert_int_equal(sqllock__exec_sql(f->vdb, "DELETE FROM "
                                           "sqllock_token WHERE name = ?",
                                           &arg, 1, NULL, NULL, NULL),
                         SQLLOCK_OK);
    assert_int_equal(sqllock__exec_sql(f->vdb,
                                       ho_ph(f, "DELETE FROM sqllock_row "
                                             "WHERE name = ?", sql,
                                             sizeof sql),
                                       &arg, 1, NULL, NULL, NULL),
                     SQLLOCK_OK);
}

int ho_setup(void **state)
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
             f->app, ho_is_drv(f, "mysql") ? " CHARACTER SET utf8mb4" : "");
    if (rc == SQLLOCK_OK)
        rc = sqllock__exec_sql(f->vdb, sql, NULL, 0, NULL, NULL, NULL);
    snprintf(sql, sizeof sql, "INSERT INTO %s (id, qty, version, fence) "
             "VALUES (?, 5, 1, 7), (?, 3, 1, NULL)", f->app);
    args[0] = sqllock__text("plain");
    args[1] = sqllock__text("k'; DROP TABLE sqllock_lease; --");
    if (rc == SQLLOCK_OK)
        rc = sqllock__exec_sql(f->vdb, ho_ph(f, sql, key, sizeof key), args,
                               2, NULL, NULL, NULL);
    if (rc != SQLLOCK_OK) {
        fprintf(stderr, "hostile setup: %s\n", sqllock_errmsg(f->vdb));
        return -1;
    }
    *state = f;
    return 0;
}

int ho_teardown(void **state)
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
        ho_forget_name(f, key);
        arg = sqllock__text(f->victim_name);
        if (ho_is_drv(f, "mysql"))
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
int ho_msg_has(const char *msg, const char *any)
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
char *ho_expand_url(const fixture *f, const char *t)
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
