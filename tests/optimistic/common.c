/*
 * common.c -- test_optimistic: the SQL per driver, the group fixture and the
 * helpers its groups share (optimistic.h).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "test_util.h"
#include "test_run.h"
#include "optimistic.h"

const char *g_url;

/* ------------------------------------------------------------------ */
/* The test's own SQL, per driver                                      */
/* ------------------------------------------------------------------ */

const opt_sql *opt_sql_for(const char *driver)
{
    static const opt_sql table[] = {
        { "sqlite",
          "INSERT INTO %s (id, qty, version) VALUES (?, ?, ?)",
          "SELECT qty FROM %s WHERE id = ?",
          "SELECT version FROM %s WHERE id = ?",
          "DELETE FROM %s WHERE id = ?",
          "UPDATE %s SET version = ? WHERE id = ?",
          "INSERT INTO %s (name, qty, version) VALUES (?, ?, 1)",
          "UPDATE sqllock_record SET version = ? WHERE key = ?" },
        { "postgres",
          "INSERT INTO %s (id, qty, version) VALUES ($1, $2, $3)",
          "SELECT qty FROM %s WHERE id = $1",
          "SELECT version FROM %s WHERE id = $1",
          "DELETE FROM %s WHERE id = $1",
          "UPDATE %s SET version = $1 WHERE id = $2",
          "INSERT INTO %s (name, qty, version) VALUES ($1, $2, 1)",
          "UPDATE sqllock_record SET version = $1 WHERE key = $2" },
        { "mysql",
          "INSERT INTO %s (id, qty, version) VALUES (?, ?, ?)",
          "SELECT qty FROM %s WHERE id = ?",
          "SELECT version FROM %s WHERE id = ?",
          "DELETE FROM %s WHERE id = ?",
          "UPDATE %s SET version = ? WHERE id = ?",
          "INSERT INTO %s (name, qty, version) VALUES (?, ?, 1)",
          "UPDATE sqllock_record SET version = ? WHERE `key` = ?" },
    };
    size_t i;

    if (driver == NULL)
        return NULL;
    for (i = 0; i < sizeof table / sizeof table[0]; i++)
        if (strcmp(table[i].driver, driver) == 0)
            return &table[i];
    return NULL;
}

/* ------------------------------------------------------------------ */
/* The group fixture                                                   */
/* ------------------------------------------------------------------ */

/* The database name in a mysql:// URL (the path after the host). */
void url_dbname(const char *url, char *out, size_t size)
{
    const char *host = strstr(url, "://");
    const char *slash = host != NULL ? strchr(host + 3, '/') : NULL;

    out[0] = '\0';
    if (slash != NULL)
        snprintf(out, size, "%.*s", (int)strcspn(slash + 1, "?"), slash + 1);
}

int group_setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    char dbname[128];
    int rc;

    if (f == NULL)
        return -1;
    rc = sqllock_open(g_url, NULL, &f->db);
    if (rc != SQLLOCK_OK) {
        fprintf(stderr, "open: %s: %s\n", sqllock_errname(rc),
                sqllock_errmsg(f->db));
        sqllock_close(f->db);
        free(f);
        return -1;
    }
    rc = sqllock_init(f->db);
    if (rc != SQLLOCK_OK) {
        fprintf(stderr, "sqllock_init: %s: %s\n", sqllock_errname(rc),
                sqllock_errmsg(f->db));
        sqllock_close(f->db);
        free(f);
        return -1;
    }
    f->driver = sqllock_db_driver(f->db);
    f->sql = opt_sql_for(f->driver);
    if (f->sql == NULL) {
        fprintf(stderr, "no test SQL for driver %s\n", f->driver);
        sqllock_close(f->db);
        free(f);
        return -1;
    }
    snprintf(f->inv, sizeof f->inv, "inventory_%ld", (long)getpid());
    snprintf(f->names, sizeof f->names, "names_%ld", (long)getpid());
    if (strcmp(f->driver, "postgres") == 0) {
        snprintf(f->qualified, sizeof f->qualified, "public.%s", f->inv);
    } else if (strcmp(f->driver, "mysql") == 0) {
        url_dbname(g_url, dbname, sizeof dbname);
        snprintf(f->qualified, sizeof f->qualified, "%s.%s", dbname, f->inv);
    } else {
        snprintf(f->qualified, sizeof f->qualified, "main.%s", f->inv);
    }
    f->t.table = f->inv;
    f->t.key_column = "id";
    f->t.version_column = "version";
    {
        const char *stmts[] = {
            "DROP TABLE IF EXISTS %s",
            "CREATE TABLE %s (id BIGINT PRIMARY KEY, qty BIGINT NOT NULL, "
            "version BIGINT NOT NULL, fence BIGINT)",
        };
        const char *nstmts[] = {
            "DROP TABLE IF EXISTS %s",
            "CREATE TABLE %s (name VARCHAR(64) PRIMARY KEY, "
            "qty BIGINT NOT NULL, version BIGINT NOT NULL)",
        };
        size_t i;
        for (i = 0; i < 2; i++) {
            rc = tu_exec_on(f->db, stmts[i], f->inv, NULL, 0, NULL, NULL,
                            NULL);
            if (rc == SQLLOCK_OK)
                rc = tu_exec_on(f->db, nstmts[i], f->names, NULL, 0, NULL,
                                NULL, NULL);
            if (rc != SQLLOCK_OK) {
                fprintf(stderr, "table DDL: %s: %s\n", sqllock_errname(rc),
                        sqllock_errmsg(f->db));
                sqllock_close(f->db);
                free(f);
                return -1;
            }
        }
    }
    *state = f;
    return 0;
}

int group_teardown(void **state)
{
    fixture *f = *state;
    int rc = 0;

    if (f == NULL)
        return 0;
    if (tu_exec_on(f->db, "DROP TABLE IF EXISTS %s", f->inv, NULL, 0, NULL,
                   NULL, NULL) != SQLLOCK_OK ||
        tu_exec_on(f->db, "DROP TABLE IF EXISTS %s", f->names, NULL, 0, NULL,
                   NULL, NULL) != SQLLOCK_OK) {
        fprintf(stderr, "drop tables: %s\n", sqllock_errmsg(f->db));
        rc = -1;
    }
    sqllock_close(f->db);
    free(f);
    return rc;
}

/* ------------------------------------------------------------------ */
/* Helpers                                                             */
/* ------------------------------------------------------------------ */

/* A record key unique to this process: "opt<pid>-<tail>". */
const char *rkey(char *buf, size_t size, const char *tail)
{
    snprintf(buf, size, "opt%ld-%s", (long)getpid(), tail);
    return buf;
}

/* rc must be SQLLOCK_EINVAL, sqllock_errcode() must agree, and the
 * message must mention one of `words`. */
void expect_einval(sqllock_db *db, int rc, const char *what,
                          const char *words)
{
    if (rc != SQLLOCK_EINVAL)
        fail_msg("%s: got %s, want SQLLOCK_EINVAL (message: %s)", what,
                 sqllock_errname(rc), sqllock_errmsg(db));
    if (db != NULL) {
        if (sqllock_errcode(db) != SQLLOCK_EINVAL)
            fail_msg("%s: sqllock_errcode() is %s after SQLLOCK_EINVAL",
                     what, sqllock_errname(sqllock_errcode(db)));
        if (words != NULL)
            expect_msg_any(db, what, words);
    }
}

/* Reads the inventory row `id` behind the library's back. Returns 1 when
 * the row exists. */
int inv_read(fixture *f, sqllock_db *db, int64_t id, int64_t *qty,
                    int64_t *version)
{
    sqllock_value v = sqllock__int(id);
    int has_row = 0, rc;

    *qty = *version = -1;
    rc = tu_exec_on(db, f->sql->inv_qty, f->inv, &v, 1, &has_row, qty, NULL);
    if (rc == SQLLOCK_OK && has_row)
        rc = tu_exec_on(db, f->sql->inv_version, f->inv, &v, 1, &has_row,
                        version, NULL);
    if (rc != SQLLOCK_OK)
        fail_msg("reading inventory row %lld: %s: %s", (long long)id,
                 sqllock_errname(rc), sqllock_errmsg(db));
    return has_row;
}

/* Makes inventory row `id` afresh with `qty` and `version`. */
void inv_reset(fixture *f, int64_t id, int64_t qty, int64_t version)
{
    sqllock_value v[3];

    v[0] = sqllock__int(id);
    tu_exec_ok(f->db, f->sql->inv_delete, f->inv, v, 1);
    v[1] = sqllock__int(qty);
    v[2] = sqllock__int(version);
    tu_exec_ok(f->db, f->sql->inv_insert, f->inv, v, 3);
}

void inv_expect(fixture *f, int64_t id, int64_t qty, int64_t version,
                       const char *what)
{
    int64_t q, ver;

    if (!inv_read(f, f->db, id, &q, &ver))
        fail_msg("%s: inventory row %lld is gone", what, (long long)id);
    if (q != qty || ver != version)
        fail_msg("%s: inventory row %lld has qty %lld version %lld, want "
                 "qty %lld version %lld", what, (long long)id, (long long)q,
                 (long long)ver, (long long)qty, (long long)version);
}

/* Reads record `key` and checks its bytes and version. */
void rec_expect(sqllock_db *db, const char *key, const void *want,
                       size_t want_len, int64_t want_version,
                       const char *what)
{
    void *v = NULL;
    size_t len = 12345;
    int64_t ver = -1;
    int rc = sqllock_record_get(db, key, &v, &len, &ver);

    if (rc != SQLLOCK_OK)
        fail_msg("%s: get %s: %s: %s", what, key, sqllock_errname(rc),
                 sqllock_errmsg(db));
    if (v == NULL)
        fail_msg("%s: get %s returned OK with a NULL value", what, key);
    if (len != want_len || ver != want_version ||
        (want_len > 0 && memcmp(v, want, want_len) != 0) ||
        ((const char *)v)[len] != '\0') {
        char got[64];
        snprintf(got, sizeof got, "%.*s", (int)(len < 40 ? len : 40),
                 (const char *)v);
        sqllock_free(v);
        fail_msg("%s: record %s has %zu bytes (\"%s\"...) version %lld, "
                 "want %zu bytes version %lld (and a NUL after the value)",
                 what, key, len, got, (long long)ver, want_len,
                 (long long)want_version);
    }
    sqllock_free(v);
}

void rec_expect_missing(sqllock_db *db, const char *key,
                               const char *what)
{
    void *v = (void *)&v;      /* a non-NULL sentinel */
    size_t len = 99;
    int64_t ver = 99;
    int rc = sqllock_record_get(db, key, &v, &len, &ver);

    if (rc != SQLLOCK_NOTFOUND) {
        if (rc == SQLLOCK_OK)
            sqllock_free(v);
        fail_msg("%s: get %s: got %s, want SQLLOCK_NOTFOUND (%s)", what, key,
                 sqllock_errname(rc), sqllock_errmsg(db));
    }
    if (v != NULL || len != 0 || ver != 0)
        fail_msg("%s: NOTFOUND must zero the outputs (value %p, len %zu, "
                 "version %lld)", what, v, len, (long long)ver);
}

/* Deletes record `key` whatever its version (test cleanup). */
void rec_remove(sqllock_db *db, const char *key)
{
    int64_t ver = 0;
    int i;

    for (i = 0; i < 10; i++) {
        if (sqllock_record_get(db, key, NULL, NULL, &ver) != SQLLOCK_OK)
            return;
        if (sqllock_record_delete(db, key, ver) == SQLLOCK_OK)
            return;
    }
}

/* Waits for every child; returns how many failed (and says why). */
int wait_children(const pid_t *pids, int n, const char *what)
{
    int i, failed = 0;

    for (i = 0; i < n; i++) {
        int st = 0;
        pid_t r;
        do {
            r = waitpid(pids[i], &st, 0);
        } while (r < 0 && errno == EINTR);
        if (r != pids[i] || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            fprintf(stderr, "%s child %d: %s %d\n", what, i,
                    WIFEXITED(st) ? "exit" : "signal",
                    WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
            failed++;
        }
    }
    return failed;
}

