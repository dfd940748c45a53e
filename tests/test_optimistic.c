/*
 * test_optimistic.c -- optimistic versioned updates (DESIGN O1-O3, E1,
 * E2, E4): versioned records in the library's own table, the retry helper
 * under real contention from many processes, compare-and-set and
 * conditional updates on an application table, and bad input that must
 * get a specific status and a message and change nothing.
 *
 * Runs once per URL in SQLLOCK_TEST_URLS (space-separated), or on a fresh
 * temporary SQLite file; SQLLOCK_TEST_REQUIRE as in test_conformance.
 * Record keys and the application tables carry the pid, so runs on a
 * shared server do not meet. The application tables are created by the
 * group setup and dropped by its teardown.
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

#define PROCS 8
#define O2_UPDATES 100          /* per process */
#define O2_ONE_PROCS 2
#define O2_ONE_CALLS 200        /* per process, max_attempts = 1 */
#define O3_STOCK 1000
#define DEFAULT_MAX_ATTEMPTS 16 /* sqllock_retry_options default */

static const char *g_url;

/* ------------------------------------------------------------------ */
/* The test's own SQL, per driver                                      */
/* ------------------------------------------------------------------ */

/* Statements on the application table (its name is put in with %s) and
 * one on the library's record table, to set up and to check behind the
 * library's back. Only the placeholders and MySQL's quoting of `key`
 * differ. */
typedef struct opt_sql {
    const char *driver;
    const char *inv_insert;      /* %s table; 1 id, 2 qty, 3 version */
    const char *inv_qty;         /* %s table; 1 id -> qty */
    const char *inv_version;     /* %s table; 1 id -> version */
    const char *inv_delete;      /* %s table; 1 id */
    const char *inv_set_version; /* %s table; 1 version, 2 id */
    const char *name_insert;     /* %s table; 1 name, 2 qty */
    const char *rec_set_version; /* 1 version, 2 key */
} opt_sql;

static const opt_sql *opt_sql_for(const char *driver)
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

typedef struct fixture {
    sqllock_db *db;
    const char *driver;
    const opt_sql *sql;
    char inv[64];              /* inventory_<pid> */
    char names[64];            /* names_<pid>: a table with a text key */
    char qualified[200];       /* inv, schema-qualified */
    sqllock_table t;           /* inv(id, qty, version) */
} fixture;

/* Runs `fmt` (with the table name put in for %s) and returns its status;
 * the other arguments as for sqllock__exec_sql(). */
static int exec_on(sqllock_db *db, const char *fmt, const char *table,
                   const sqllock_value *args, int nargs, int *has_row,
                   int64_t *first, int64_t *affected)
{
    char sql[512];

    snprintf(sql, sizeof sql, fmt, table);
    return sqllock__exec_sql(db, sql, args, nargs, has_row, first, affected);
}

static void exec_ok(sqllock_db *db, const char *fmt, const char *table,
                    const sqllock_value *args, int nargs)
{
    int rc = exec_on(db, fmt, table, args, nargs, NULL, NULL, NULL);
    if (rc != SQLLOCK_OK)
        fail_msg("setup statement \"%s\" on %s: %s: %s", fmt, table,
                 sqllock_errname(rc), sqllock_errmsg(db));
}

/* The database name in a mysql:// URL (the path after the host). */
static void url_dbname(const char *url, char *out, size_t size)
{
    const char *host = strstr(url, "://");
    const char *slash = host != NULL ? strchr(host + 3, '/') : NULL;

    out[0] = '\0';
    if (slash != NULL)
        snprintf(out, size, "%.*s", (int)strcspn(slash + 1, "?"), slash + 1);
}

static int group_setup(void **state)
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
            "version BIGINT NOT NULL)",
        };
        const char *nstmts[] = {
            "DROP TABLE IF EXISTS %s",
            "CREATE TABLE %s (name VARCHAR(64) PRIMARY KEY, "
            "qty BIGINT NOT NULL, version BIGINT NOT NULL)",
        };
        size_t i;
        for (i = 0; i < 2; i++) {
            rc = exec_on(f->db, stmts[i], f->inv, NULL, 0, NULL, NULL, NULL);
            if (rc == SQLLOCK_OK)
                rc = exec_on(f->db, nstmts[i], f->names, NULL, 0, NULL, NULL,
                             NULL);
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

static int group_teardown(void **state)
{
    fixture *f = *state;
    int rc = 0;

    if (f == NULL)
        return 0;
    if (exec_on(f->db, "DROP TABLE IF EXISTS %s", f->inv, NULL, 0, NULL,
                NULL, NULL) != SQLLOCK_OK ||
        exec_on(f->db, "DROP TABLE IF EXISTS %s", f->names, NULL, 0, NULL,
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
static const char *rkey(char *buf, size_t size, const char *tail)
{
    snprintf(buf, size, "opt%ld-%s", (long)getpid(), tail);
    return buf;
}

/* rc must be SQLLOCK_EINVAL, sqllock_errcode() must agree, and the
 * message must mention one of `words`. */
static void expect_einval(sqllock_db *db, int rc, const char *what,
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
static int inv_read(fixture *f, sqllock_db *db, int64_t id, int64_t *qty,
                    int64_t *version)
{
    sqllock_value v = sqllock__int(id);
    int has_row = 0, rc;

    *qty = *version = -1;
    rc = exec_on(db, f->sql->inv_qty, f->inv, &v, 1, &has_row, qty, NULL);
    if (rc == SQLLOCK_OK && has_row)
        rc = exec_on(db, f->sql->inv_version, f->inv, &v, 1, &has_row,
                     version, NULL);
    if (rc != SQLLOCK_OK)
        fail_msg("reading inventory row %lld: %s: %s", (long long)id,
                 sqllock_errname(rc), sqllock_errmsg(db));
    return has_row;
}

/* Makes inventory row `id` afresh with `qty` and `version`. */
static void inv_reset(fixture *f, int64_t id, int64_t qty, int64_t version)
{
    sqllock_value v[3];

    v[0] = sqllock__int(id);
    exec_ok(f->db, f->sql->inv_delete, f->inv, v, 1);
    v[1] = sqllock__int(qty);
    v[2] = sqllock__int(version);
    exec_ok(f->db, f->sql->inv_insert, f->inv, v, 3);
}

static void inv_expect(fixture *f, int64_t id, int64_t qty, int64_t version,
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
static void rec_expect(sqllock_db *db, const char *key, const void *want,
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

static void rec_expect_missing(sqllock_db *db, const char *key,
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
static void rec_remove(sqllock_db *db, const char *key)
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
static int wait_children(const pid_t *pids, int n, const char *what)
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

/* A start line for forked children, so that they contend from the first
 * call: each arrives, then waits (briefly) for all the others. */
static void barrier(int *arrived, int n)
{
    int64_t deadline = tu_now_ms() + 30000;

    __atomic_add_fetch(arrived, 1, __ATOMIC_SEQ_CST);
    while (__atomic_load_n(arrived, __ATOMIC_SEQ_CST) < n &&
           tu_now_ms() < deadline)
        tu_sleep_us(100);
}

/* The group's handle is closed before a fork and opened again after it:
 * a child must not inherit an open connection (its memory, and on SQLite
 * its page cache, would be the child's too). */
static void fixture_close_for_fork(fixture *f)
{
    sqllock_close(f->db);
    f->db = NULL;
    fflush(stdout);
    fflush(stderr);
}

static void fixture_reopen(fixture *f)
{
    int rc = sqllock_open(g_url, NULL, &f->db);

    if (rc != SQLLOCK_OK)
        fail_msg("reopening the group's handle: %s: %s",
                 sqllock_errname(rc), sqllock_errmsg(f->db));
}

/* ------------------------------------------------------------------ */
/* O1: versioned records                                               */
/* ------------------------------------------------------------------ */

static void test_optimistic_O1_get_missing_notfound(void **state)
{
    fixture *f = *state;
    char key[128];

    rkey(key, sizeof key, "missing");
    rec_expect_missing(f->db, key, "get of a key never written");
    EXPECT_RC(f->db, sqllock_errcode(f->db), SQLLOCK_NOTFOUND,
              "errcode after NOTFOUND");
    /* Every output pointer may be NULL. */
    EXPECT_RC(f->db, sqllock_record_get(f->db, key, NULL, NULL, NULL),
              SQLLOCK_NOTFOUND, "get with NULL outputs");
}

static void test_optimistic_O1_create_conflict(void **state)
{
    fixture *f = *state;
    char key[128];
    int64_t ver = 0;

    rkey(key, sizeof key, "create");
    EXPECT_RC(f->db, sqllock_record_create(f->db, key, "first", 5),
              SQLLOCK_OK, "create");
    EXPECT_RC(f->db, sqllock_errcode(f->db), SQLLOCK_OK, "errcode after OK");
    EXPECT_RC(f->db, sqllock_record_create(f->db, key, "second!", 7),
              SQLLOCK_CONFLICT, "create of an existing key");
    EXPECT_RC(f->db, sqllock_errcode(f->db), SQLLOCK_CONFLICT,
              "errcode after CONFLICT");
    rec_expect(f->db, key, "first", 5, 1, "after the second create");
    /* Outputs may be NULL on success too. */
    EXPECT_RC(f->db, sqllock_record_get(f->db, key, NULL, NULL, &ver),
              SQLLOCK_OK, "get with only a version");
    assert_int_equal(ver, 1);
    rec_remove(f->db, key);
}

static void test_optimistic_O1_binary_and_empty_values(void **state)
{
    fixture *f = *state;
    static const char bin[] = { 'a', '\0', 'b', '\0', '\0', '\xff', '\x80',
                                'z', '\0' };
    char key[128], ekey[128];
    int64_t nv = 0;

    rkey(key, sizeof key, "binary");
    EXPECT_RC(f->db, sqllock_record_create(f->db, key, bin, sizeof bin),
              SQLLOCK_OK, "create with NUL bytes");
    rec_expect(f->db, key, bin, sizeof bin, 1, "value with NUL bytes");
    /* Replace with 0 bytes, then back. */
    EXPECT_RC(f->db, sqllock_record_cas(f->db, key, 1, "", 0, &nv),
              SQLLOCK_OK, "cas to a 0-byte value");
    assert_int_equal(nv, 2);
    rec_expect(f->db, key, "", 0, 2, "0-byte value after cas");
    EXPECT_RC(f->db, sqllock_record_cas(f->db, key, 2, bin, sizeof bin, &nv),
              SQLLOCK_OK, "cas back to bytes");
    rec_expect(f->db, key, bin, sizeof bin, 3, "bytes after cas");

    rkey(ekey, sizeof ekey, "empty");
    EXPECT_RC(f->db, sqllock_record_create(f->db, ekey, "", 0), SQLLOCK_OK,
              "create with a 0-byte value");
    rec_expect(f->db, ekey, "", 0, 1, "0-byte value");
    rec_remove(f->db, key);
    rec_remove(f->db, ekey);
}

static void test_optimistic_O1_cas_versions(void **state)
{
    fixture *f = *state;
    char key[128];
    int64_t nv = -1;

    rkey(key, sizeof key, "cas");
    EXPECT_RC(f->db, sqllock_record_cas(f->db, key, 1, "x", 1, &nv),
              SQLLOCK_CONFLICT, "cas on a missing record");
    rec_expect_missing(f->db, key, "cas on a missing record creates nothing");
    EXPECT_RC(f->db, sqllock_record_create(f->db, key, "v1", 2), SQLLOCK_OK,
              "create");
    EXPECT_RC(f->db, sqllock_record_cas(f->db, key, 1, "v2-longer", 9, &nv),
              SQLLOCK_OK, "cas with the right version");
    assert_int_equal(nv, 2);
    rec_expect(f->db, key, "v2-longer", 9, 2, "after cas");
    nv = -1;
    EXPECT_RC(f->db, sqllock_record_cas(f->db, key, 1, "stale", 5, &nv),
              SQLLOCK_CONFLICT, "cas with the stale version 1");
    rec_expect(f->db, key, "v2-longer", 9, 2, "after a stale cas");
    EXPECT_RC(f->db, sqllock_record_cas(f->db, key, 3, "ahead", 5, NULL),
              SQLLOCK_CONFLICT, "cas with a version from the future");
    {
        int rc = sqllock_record_cas(f->db, key, 0, "zero", 4, NULL);
        if (rc != SQLLOCK_CONFLICT && rc != SQLLOCK_EINVAL)
            fail_msg("cas with expected version 0: got %s, want CONFLICT "
                     "or EINVAL (%s)", sqllock_errname(rc),
                     sqllock_errmsg(f->db));
    }
    EXPECT_RC(f->db, sqllock_record_cas(f->db, key, 2, "v3", 2, NULL),
              SQLLOCK_OK, "cas with NULL new_version");
    rec_expect(f->db, key, "v3", 2, 3, "after the third write");
    rec_remove(f->db, key);
}

static void test_optimistic_O1_delete_versions(void **state)
{
    fixture *f = *state;
    char key[128];
    int64_t nv = 0;

    rkey(key, sizeof key, "delete");
    EXPECT_RC(f->db, sqllock_record_delete(f->db, key, 1), SQLLOCK_CONFLICT,
              "delete of a missing record");
    EXPECT_RC(f->db, sqllock_record_create(f->db, key, "d", 1), SQLLOCK_OK,
              "create");
    EXPECT_RC(f->db, sqllock_record_cas(f->db, key, 1, "dd", 2, &nv),
              SQLLOCK_OK, "cas to version 2");
    EXPECT_RC(f->db, sqllock_record_delete(f->db, key, 1), SQLLOCK_CONFLICT,
              "delete with the wrong version");
    rec_expect(f->db, key, "dd", 2, 2, "after a refused delete");
    EXPECT_RC(f->db, sqllock_record_delete(f->db, key, 2), SQLLOCK_OK,
              "delete with the right version");
    rec_expect_missing(f->db, key, "after delete");
    EXPECT_RC(f->db, sqllock_record_delete(f->db, key, 2), SQLLOCK_CONFLICT,
              "second delete");
    /* A new record under the key starts again at version 1. */
    EXPECT_RC(f->db, sqllock_record_create(f->db, key, "again", 5),
              SQLLOCK_OK, "create after delete");
    rec_expect(f->db, key, "again", 5, 1, "re-created");
    rec_remove(f->db, key);
}

static void test_optimistic_O1_value_max(void **state)
{
    fixture *f = *state;
    char key[128], key2[128];
    unsigned char *big = malloc(SQLLOCK_VALUE_MAX + 1);
    unsigned seed = 12345;
    size_t i;
    int64_t nv = 0;

    assert_non_null(big);
    for (i = 0; i < (size_t)SQLLOCK_VALUE_MAX + 1; i++)
        big[i] = (i % 97 == 0) ? 0 : (unsigned char)(rand_r(&seed) & 0xff);
    rkey(key, sizeof key, "max");
    EXPECT_RC(f->db, sqllock_record_create(f->db, key, big,
                                           SQLLOCK_VALUE_MAX),
              SQLLOCK_OK, "create with SQLLOCK_VALUE_MAX bytes");
    rec_expect(f->db, key, big, SQLLOCK_VALUE_MAX, 1, "1 MiB value");
    /* Over the limit: EINVAL, nothing written. */
    expect_einval(f->db, sqllock_record_cas(f->db, key, 1, big,
                                            SQLLOCK_VALUE_MAX + 1, &nv),
                  "cas with SQLLOCK_VALUE_MAX + 1 bytes",
                  "value|size|large|long|1048576");
    rec_expect(f->db, key, big, SQLLOCK_VALUE_MAX, 1,
               "after an oversized cas");
    rkey(key2, sizeof key2, "max2");
    expect_einval(f->db, sqllock_record_create(f->db, key2, big,
                                               SQLLOCK_VALUE_MAX + 1),
                  "create with SQLLOCK_VALUE_MAX + 1 bytes",
                  "value|size|large|long|1048576");
    rec_expect_missing(f->db, key2, "after an oversized create");
    expect_einval(f->db, sqllock_record_create(f->db, key2, NULL, 5),
                  "create with a NULL value of 5 bytes", "value|null");
    rec_expect_missing(f->db, key2, "after a NULL-value create");
    /* A 1 MiB cas round-trips too. */
    big[0] ^= 0x55;
    EXPECT_RC(f->db, sqllock_record_cas(f->db, key, 1, big,
                                        SQLLOCK_VALUE_MAX, &nv),
              SQLLOCK_OK, "cas with SQLLOCK_VALUE_MAX bytes");
    assert_int_equal(nv, 2);
    rec_expect(f->db, key, big, SQLLOCK_VALUE_MAX, 2, "1 MiB value by cas");
    free(big);
    rec_remove(f->db, key);
}

static void test_optimistic_O1_free_null(void **state)
{
    (void)state;
    sqllock_free(NULL);
}

static void test_optimistic_O1_bad_keys(void **state)
{
    fixture *f = *state;
    char long_key[300], max_key[300], good[128];
    const char *bad[5];
    const char *why[5] = { "NULL key", "empty key", "256-byte key",
                           "key with invalid UTF-8",
                           "key with a control character" };
    int64_t ver = 0;
    int i, attempts = -1;

    memset(long_key, 'k', 256);
    long_key[256] = '\0';
    bad[0] = NULL;
    bad[1] = "";
    bad[2] = long_key;
    bad[3] = "opt-\xff\xfe-bad";
    bad[4] = "opt-a\nb";
    rkey(good, sizeof good, "badkeys-guard");
    EXPECT_RC(f->db, sqllock_record_create(f->db, good, "g", 1), SQLLOCK_OK,
              "create the guard record");
    for (i = 0; i < 5; i++) {
        char what[128];
        void *v = NULL;
        snprintf(what, sizeof what, "get: %s", why[i]);
        expect_einval(f->db, sqllock_record_get(f->db, bad[i], &v, NULL,
                                                &ver), what, "key");
        assert_null(v);
        snprintf(what, sizeof what, "create: %s", why[i]);
        expect_einval(f->db, sqllock_record_create(f->db, bad[i], "x", 1),
                      what, "key");
        snprintf(what, sizeof what, "cas: %s", why[i]);
        expect_einval(f->db, sqllock_record_cas(f->db, bad[i], 1, "x", 1,
                                                NULL), what, "key");
        snprintf(what, sizeof what, "delete: %s", why[i]);
        expect_einval(f->db, sqllock_record_delete(f->db, bad[i], 1), what,
                      "key");
        snprintf(what, sizeof what, "update: %s", why[i]);
        expect_einval(f->db, sqllock_record_update(f->db, bad[i], NULL, NULL,
                                                   NULL, &attempts),
                      what, NULL);
    }
    /* NULL db. */
    expect_einval(NULL, sqllock_record_get(NULL, good, NULL, NULL, NULL),
                  "get on a NULL db", NULL);
    expect_einval(NULL, sqllock_record_create(NULL, good, "x", 1),
                  "create on a NULL db", NULL);
    expect_einval(NULL, sqllock_record_cas(NULL, good, 1, "x", 1, NULL),
                  "cas on a NULL db", NULL);
    expect_einval(NULL, sqllock_record_delete(NULL, good, 1),
                  "delete on a NULL db", NULL);
    /* A NULL update function. */
    expect_einval(f->db, sqllock_record_update(f->db, good, NULL, NULL, NULL,
                                               &attempts),
                  "update with a NULL function", "function|fn|callback");
    /* The longest key (255 bytes) is fine. */
    memset(max_key, 'm', 255);
    max_key[255] = '\0';
    memcpy(max_key, good, strlen(good));
    EXPECT_RC(f->db, sqllock_record_create(f->db, max_key, "m", 1),
              SQLLOCK_OK, "create with a 255-byte key");
    rec_expect(f->db, max_key, "m", 1, 1, "255-byte key");
    rec_remove(f->db, max_key);
    /* Nothing changed. */
    rec_expect(f->db, good, "g", 1, 1, "guard record after bad keys");
    rec_remove(f->db, good);
}

/* A record whose version is INT64_MAX cannot be written again: the new
 * version would overflow. The library must refuse (EINVAL) or report a
 * conflict, never succeed, and the record must be unchanged. */
static void test_optimistic_O1_version_overflow(void **state)
{
    fixture *f = *state;
    char key[128];
    sqllock_value v[2];
    int64_t nv = 0;
    int rc;

    rkey(key, sizeof key, "overflow");
    EXPECT_RC(f->db, sqllock_record_create(f->db, key, "o", 1), SQLLOCK_OK,
              "create");
    rc = sqllock_record_cas(f->db, key, INT64_MAX, "p", 1, &nv);
    if (rc != SQLLOCK_EINVAL && rc != SQLLOCK_CONFLICT)
        fail_msg("cas with expected INT64_MAX on version 1: %s (%s)",
                 sqllock_errname(rc), sqllock_errmsg(f->db));
    rec_expect(f->db, key, "o", 1, 1, "after cas with INT64_MAX");
    /* Now really at INT64_MAX, set behind the library's back. */
    v[0] = sqllock__int(INT64_MAX);
    v[1] = sqllock__text(key);
    exec_ok(f->db, f->sql->rec_set_version, "", v, 2);
    rec_expect(f->db, key, "o", 1, INT64_MAX, "record at INT64_MAX");
    rc = sqllock_record_cas(f->db, key, INT64_MAX, "p", 1, &nv);
    if (rc != SQLLOCK_EINVAL && rc != SQLLOCK_CONFLICT)
        fail_msg("cas on a record at version INT64_MAX: %s (%s)",
                 sqllock_errname(rc), sqllock_errmsg(f->db));
    if (rc == SQLLOCK_EINVAL)
        expect_msg_any(f->db, "cas at INT64_MAX", "version|overflow");
    rec_expect(f->db, key, "o", 1, INT64_MAX, "after cas at INT64_MAX");
    EXPECT_RC(f->db, sqllock_record_delete(f->db, key, INT64_MAX),
              SQLLOCK_OK, "delete at INT64_MAX");
}

/* ------------------------------------------------------------------ */
/* O2: the retry helper                                                */
/* ------------------------------------------------------------------ */

/* A decimal counter kept as text: the update function adds one. */
typedef struct counter_ctx {
    char buf[32];
    int calls;
    long sleep_us;             /* widens the read-write window */
    int bad;                   /* the old value was not a number */
} counter_ctx;

static int counter_fn(void *ctx, const void *old, size_t old_len,
                      const void **out, size_t *out_len)
{
    counter_ctx *c = ctx;
    long long n = 0;
    size_t i;
    int len;

    c->calls++;
    if (old == NULL && old_len != 0)
        c->bad = 1;
    for (i = 0; i < old_len; i++) {
        char ch = ((const char *)old)[i];
        if (ch < '0' || ch > '9') {
            c->bad = 1;
            return SQLLOCK_EINVAL;
        }
        n = n * 10 + (ch - '0');
    }
    if (c->sleep_us > 0)
        tu_sleep_us(c->sleep_us);
    len = snprintf(c->buf, sizeof c->buf, "%lld", n + 1);
    *out = c->buf;
    *out_len = (size_t)len;
    return SQLLOCK_OK;
}

typedef struct o2_shared {
    int arrived;
    int64_t attempts;          /* summed over all calls */
    int calls;                 /* calls that returned */
    int ok;
    int conflict;              /* calls that ran out of attempts */
    int max_attempts_seen;
    int more_than_one;         /* calls that needed more than one attempt */
    int bad_attempts;          /* *attempts outside 1..max_attempts */
    int errors;
} o2_shared;

static void o2_count(o2_shared *sh, int rc, int attempts, int max_attempts)
{
    int prev;

    __atomic_add_fetch(&sh->calls, 1, __ATOMIC_SEQ_CST);
    __atomic_add_fetch(&sh->attempts, attempts, __ATOMIC_SEQ_CST);
    if (rc == SQLLOCK_OK)
        __atomic_add_fetch(&sh->ok, 1, __ATOMIC_SEQ_CST);
    else if (rc == SQLLOCK_CONFLICT)
        __atomic_add_fetch(&sh->conflict, 1, __ATOMIC_SEQ_CST);
    else
        __atomic_add_fetch(&sh->errors, 1, __ATOMIC_SEQ_CST);
    if (attempts < 1 || attempts > max_attempts)
        __atomic_add_fetch(&sh->bad_attempts, 1, __ATOMIC_SEQ_CST);
    if (attempts > 1)
        __atomic_add_fetch(&sh->more_than_one, 1, __ATOMIC_SEQ_CST);
    prev = __atomic_load_n(&sh->max_attempts_seen, __ATOMIC_SEQ_CST);
    while (attempts > prev &&
           !__atomic_compare_exchange_n(&sh->max_attempts_seen, &prev,
                                        attempts, 0, __ATOMIC_SEQ_CST,
                                        __ATOMIC_SEQ_CST))
        ;
}

/* One child: `updates` successful increments with the default retry
 * policy; a call that runs out of attempts is counted and made again. */
static int o2_child(o2_shared *sh, const char *key, int updates)
{
    sqllock_db *db = tu_child_open(g_url, "O2 child");
    counter_ctx c;
    int done = 0, rc, res = 0, tries = 0;

    if (db == NULL)
        return 2;
    memset(&c, 0, sizeof c);
    barrier(&sh->arrived, PROCS);
    while (done < updates && res == 0) {
        int attempts = -1;
        rc = sqllock_record_update(db, key, counter_fn, &c, NULL, &attempts);
        o2_count(sh, rc, attempts, DEFAULT_MAX_ATTEMPTS);
        if (rc == SQLLOCK_OK) {
            done++;
        } else if (rc != SQLLOCK_CONFLICT || ++tries > 10 * updates) {
            fprintf(stderr, "O2 child: update: %s: %s\n",
                    sqllock_errname(rc), sqllock_errmsg(db));
            res = 3;
        }
        if (c.bad) {
            fprintf(stderr, "O2 child: the function got a value that is "
                    "not a number\n");
            res = 4;
        }
    }
    sqllock_close(db);
    return res;
}

static void test_optimistic_O2_counter_processes(void **state)
{
    fixture *f = *state;
    char key[128];
    o2_shared *sh, copy;
    pid_t pids[PROCS];
    int i, failed;
    char want[32];

    rkey(key, sizeof key, "counter");
    rec_remove(f->db, key);
    sh = tu_shared_map(sizeof *sh);
    fixture_close_for_fork(f);
    for (i = 0; i < PROCS; i++) {
        pids[i] = fork();
        assert_true(pids[i] >= 0);
        if (pids[i] == 0) {
            int res = o2_child(sh, key, O2_UPDATES);
            munmap(sh, sizeof *sh);
            _exit(res);
        }
    }
    failed = wait_children(pids, PROCS, "O2 counter");
    fixture_reopen(f);
    copy = *sh;
    munmap(sh, sizeof *sh);
    printf("    O2 [%s] %d processes x %d updates: %d calls, %d OK, %d ran "
           "out of attempts, attempts summed %lld (%.2f per successful "
           "update), %d calls retried, most attempts in one call %d\n",
           f->driver, PROCS, O2_UPDATES, copy.calls, copy.ok, copy.conflict,
           (long long)copy.attempts,
           copy.ok > 0 ? (double)copy.attempts / copy.ok : 0.0,
           copy.more_than_one, copy.max_attempts_seen);
    assert_int_equal(failed, 0);
    assert_int_equal(copy.errors, 0);
    assert_int_equal(copy.ok, PROCS * O2_UPDATES);
    if (copy.bad_attempts != 0)
        fail_msg("%d calls reported *attempts outside 1..%d",
                 copy.bad_attempts, DEFAULT_MAX_ATTEMPTS);
    if (copy.attempts < PROCS * O2_UPDATES)
        fail_msg("attempts summed to %lld, fewer than the %d updates",
                 (long long)copy.attempts, PROCS * O2_UPDATES);
    snprintf(want, sizeof want, "%d", PROCS * O2_UPDATES);
    /* Exactly 800: no lost update, no double write. The record was
     * created by the first update and written 799 times since. */
    rec_expect(f->db, key, want, strlen(want), PROCS * O2_UPDATES,
               "O2 counter after all processes");
    rec_remove(f->db, key);
}

/* A function that finds the stock sold out ("0") ends the update with
 * its own status. */
typedef struct stock_ctx {
    int calls;
    int status;                /* what to return when sold out */
    char buf[32];
} stock_ctx;

static int stock_fn(void *ctx, const void *old, size_t old_len,
                    const void **out, size_t *out_len)
{
    stock_ctx *c = ctx;

    c->calls++;
    if (old == NULL || (old_len == 1 && ((const char *)old)[0] == '0'))
        return c->status;
    snprintf(c->buf, sizeof c->buf, "%.*s-1", (int)old_len,
             (const char *)old);
    *out = c->buf;
    *out_len = strlen(c->buf);
    return SQLLOCK_OK;
}

static void test_optimistic_O2_fn_status_writes_nothing(void **state)
{
    fixture *f = *state;
    char key[128], missing[128];
    stock_ctx c;
    int attempts = -1, rc;
    sqllock_retry_options o = SQLLOCK_RETRY_OPTIONS_INIT;

    rkey(key, sizeof key, "soldout");
    rkey(missing, sizeof missing, "soldout-missing");
    EXPECT_RC(f->db, sqllock_record_create(f->db, key, "0", 1), SQLLOCK_OK,
              "create a sold-out stock");
    memset(&c, 0, sizeof c);
    c.status = SQLLOCK_CONFLICT;
    rc = sqllock_record_update(f->db, key, stock_fn, &c, NULL, &attempts);
    EXPECT_RC(f->db, rc, SQLLOCK_CONFLICT, "update whose function says "
              "sold out");
    assert_int_equal(c.calls, 1);      /* not retried: its own status */
    assert_int_equal(attempts, 1);
    rec_expect(f->db, key, "0", 1, 1, "sold-out stock after the update");

    /* Another status is passed through as well, also with retries
     * allowed. */
    memset(&c, 0, sizeof c);
    c.status = SQLLOCK_EPERM;
    o.max_attempts = 5;
    attempts = -1;
    rc = sqllock_record_update(f->db, key, stock_fn, &c, &o, &attempts);
    EXPECT_RC(f->db, rc, SQLLOCK_EPERM, "update whose function returns "
              "SQLLOCK_EPERM");
    assert_int_equal(c.calls, 1);
    assert_int_equal(attempts, 1);
    rec_expect(f->db, key, "0", 1, 1, "after the EPERM function");

    /* On a missing record the function gets NULL, 0 and creates
     * nothing when it declines. */
    memset(&c, 0, sizeof c);
    c.status = SQLLOCK_CONFLICT;
    rc = sqllock_record_update(f->db, missing, stock_fn, &c, NULL, NULL);
    EXPECT_RC(f->db, rc, SQLLOCK_CONFLICT, "declined update of a missing "
              "record");
    assert_int_equal(c.calls, 1);
    rec_expect_missing(f->db, missing, "after a declined create");

    /* And a function that accepts writes once, version + 1. */
    EXPECT_RC(f->db, sqllock_record_cas(f->db, key, 1, "5", 1, NULL),
              SQLLOCK_OK, "restock");
    memset(&c, 0, sizeof c);
    attempts = -1;
    rc = sqllock_record_update(f->db, key, stock_fn, &c, NULL, &attempts);
    EXPECT_RC(f->db, rc, SQLLOCK_OK, "update that sells one");
    assert_int_equal(attempts, 1);
    assert_int_equal(c.calls, 1);
    rec_expect(f->db, key, "5-1", 3, 3, "after one sale");
    rec_remove(f->db, key);
}

/* max_attempts = 1: every call is one attempt, OK or CONFLICT. */
static int o2_one_child(o2_shared *sh, const char *key, int calls)
{
    sqllock_db *db = tu_child_open(g_url, "O2 one-attempt child");
    sqllock_retry_options o = SQLLOCK_RETRY_OPTIONS_INIT;
    counter_ctx c;
    int i, rc, res = 0;

    if (db == NULL)
        return 2;
    memset(&c, 0, sizeof c);
    c.sleep_us = 300;
    o.max_attempts = 1;
    barrier(&sh->arrived, O2_ONE_PROCS);
    for (i = 0; i < calls && res == 0; i++) {
        int attempts = -1;
        rc = sqllock_record_update(db, key, counter_fn, &c, &o, &attempts);
        o2_count(sh, rc, attempts, 1);
        if (rc != SQLLOCK_OK && rc != SQLLOCK_CONFLICT) {
            fprintf(stderr, "O2 one-attempt child: update: %s: %s\n",
                    sqllock_errname(rc), sqllock_errmsg(db));
            res = 3;
        }
        if (c.bad)
            res = 4;
    }
    sqllock_close(db);
    return res;
}

static void test_optimistic_O2_one_attempt_conflicts(void **state)
{
    fixture *f = *state;
    char key[128], want[32];
    o2_shared *sh, copy;
    pid_t pids[O2_ONE_PROCS];
    int i, failed;

    rkey(key, sizeof key, "one-attempt");
    rec_remove(f->db, key);
    /* Created beforehand, so that every call is a read and a cas. */
    EXPECT_RC(f->db, sqllock_record_create(f->db, key, "0", 1), SQLLOCK_OK,
              "create the counter");
    sh = tu_shared_map(sizeof *sh);
    fixture_close_for_fork(f);
    for (i = 0; i < O2_ONE_PROCS; i++) {
        pids[i] = fork();
        assert_true(pids[i] >= 0);
        if (pids[i] == 0) {
            int res = o2_one_child(sh, key, O2_ONE_CALLS);
            munmap(sh, sizeof *sh);
            _exit(res);
        }
    }
    failed = wait_children(pids, O2_ONE_PROCS, "O2 one-attempt");
    fixture_reopen(f);
    copy = *sh;
    munmap(sh, sizeof *sh);
    printf("    O2 [%s] max_attempts = 1, %d processes x %d calls: %d OK, "
           "%d CONFLICT, attempts summed %lld\n", f->driver, O2_ONE_PROCS,
           O2_ONE_CALLS, copy.ok, copy.conflict, (long long)copy.attempts);
    assert_int_equal(failed, 0);
    assert_int_equal(copy.errors, 0);
    assert_int_equal(copy.calls, O2_ONE_PROCS * O2_ONE_CALLS);
    assert_int_equal(copy.ok + copy.conflict, copy.calls);
    if (copy.bad_attempts != 0)
        fail_msg("%d calls with max_attempts = 1 reported *attempts != 1",
                 copy.bad_attempts);
    assert_int_equal(copy.attempts, copy.calls);
    if (copy.conflict == 0)
        fail_msg("max_attempts = 1 under contention never returned "
                 "SQLLOCK_CONFLICT in %d calls", copy.calls);
    /* The counter counts exactly the calls that returned OK. */
    snprintf(want, sizeof want, "%d", copy.ok);
    rec_expect(f->db, key, want, strlen(want), 1 + copy.ok,
               "counter after the one-attempt run");
    rec_remove(f->db, key);
}

/* ------------------------------------------------------------------ */
/* O3: the application's own table                                    */
/* ------------------------------------------------------------------ */

static void test_optimistic_O3_table_cas_basic(void **state)
{
    fixture *f = *state;
    sqllock_cell key = SQLLOCK_NUMBER(7), nokey = SQLLOCK_NUMBER(999);
    sqllock_cell sub = { "qty", SQLLOCK_OP_SUB, NULL, 3 };
    sqllock_cell add = { "qty", SQLLOCK_OP_ADD, NULL, 10 };
    sqllock_cell set = { "qty", SQLLOCK_OP_SET, NULL, 2 };
    sqllock_cell ge5 = { "qty", SQLLOCK_OP_GE, NULL, 5 };
    sqllock_cell ne2 = { "qty", SQLLOCK_OP_NE, NULL, 2 };
    const char *cols[] = { "qty", "id" };
    int64_t vals[2] = { -1, -1 }, ver = -1, nv = -1;

    inv_reset(f, 7, 5, 1);
    EXPECT_RC(f->db, sqllock_table_get(f->db, &f->t, &key, cols, 2, vals,
                                       &ver), SQLLOCK_OK, "table_get");
    assert_int_equal(vals[0], 5);
    assert_int_equal(vals[1], 7);
    assert_int_equal(ver, 1);
    EXPECT_RC(f->db, sqllock_table_get(f->db, &f->t, &nokey, cols, 1, vals,
                                       &ver), SQLLOCK_NOTFOUND,
              "table_get of a missing row");
    EXPECT_RC(f->db, sqllock_table_cas(f->db, &f->t, &nokey, 1, &sub, 1,
                                       NULL, 0, &nv), SQLLOCK_CONFLICT,
              "table_cas of a missing row");
    /* Right version, condition holds: 5 - 3. */
    EXPECT_RC(f->db, sqllock_table_cas(f->db, &f->t, &key, 1, &sub, 1, &ge5,
                                       1, &nv), SQLLOCK_OK, "table_cas");
    assert_int_equal(nv, 2);
    inv_expect(f, 7, 2, 2, "after table_cas SUB 3");
    /* Stale version. */
    EXPECT_RC(f->db, sqllock_table_cas(f->db, &f->t, &key, 1, &add, 1, NULL,
                                       0, &nv), SQLLOCK_CONFLICT,
              "table_cas with a stale version");
    inv_expect(f, 7, 2, 2, "after a stale table_cas");
    /* Right version, condition fails (2 >= 5 is false). */
    EXPECT_RC(f->db, sqllock_table_cas(f->db, &f->t, &key, 2, &sub, 1, &ge5,
                                       1, &nv), SQLLOCK_CONFLICT,
              "table_cas with a failing condition");
    inv_expect(f, 7, 2, 2, "after a failed condition");
    /* Two conditions, one failing (qty <> 2 is false). */
    {
        sqllock_cell conds[2] = { { "qty", SQLLOCK_OP_GE, NULL, 0 },
                                  { "qty", SQLLOCK_OP_NE, NULL, 2 } };
        (void)ne2;
        EXPECT_RC(f->db, sqllock_table_cas(f->db, &f->t, &key, 2, &add, 1,
                                           conds, 2, &nv), SQLLOCK_CONFLICT,
                  "table_cas with one of two conditions failing");
    }
    /* ADD then SET, two assignments on one row in two calls. */
    EXPECT_RC(f->db, sqllock_table_cas(f->db, &f->t, &key, 2, &add, 1, NULL,
                                       0, &nv), SQLLOCK_OK,
              "table_cas ADD");
    inv_expect(f, 7, 12, 3, "after ADD 10");
    EXPECT_RC(f->db, sqllock_table_update(f->db, &f->t, &key, &set, 1, NULL,
                                          0), SQLLOCK_OK,
              "table_update SET");
    inv_expect(f, 7, 2, 4, "after SET 2");
    EXPECT_RC(f->db, sqllock_table_update(f->db, &f->t, &key, &sub, 1, &ge5,
                                          1), SQLLOCK_CONFLICT,
              "table_update with a failing condition");
    inv_expect(f, 7, 2, 4, "after a failed table_update");
    EXPECT_RC(f->db, sqllock_table_update(f->db, &f->t, &nokey, &sub, 1,
                                          NULL, 0), SQLLOCK_CONFLICT,
              "table_update of a missing row");

    /* The schema-qualified table name works too. */
    {
        sqllock_table q = f->t;
        q.table = f->qualified;
        EXPECT_RC(f->db, sqllock_table_get(f->db, &q, &key, cols, 1, vals,
                                           &ver), SQLLOCK_OK,
                  "table_get on the schema-qualified name");
        assert_int_equal(vals[0], 2);
        assert_int_equal(ver, 4);
        EXPECT_RC(f->db, sqllock_table_cas(f->db, &q, &key, 4, &add, 1,
                                           NULL, 0, &nv), SQLLOCK_OK,
                  "table_cas on the schema-qualified name");
        inv_expect(f, 7, 12, 5, "after cas on the qualified name");
    }
    /* A text key (with a quote in it: values are bound, never pasted). */
    {
        const char *tricky = "o'neil\"; DROP TABLE x; --";
        sqllock_value v[2];
        sqllock_table nt;
        sqllock_cell tkey = SQLLOCK_TEXT(tricky);
        v[0] = sqllock__text(tricky);
        v[1] = sqllock__int(4);
        exec_ok(f->db, f->sql->name_insert, f->names, v, 2);
        nt.table = f->names;
        nt.key_column = "name";
        nt.version_column = "version";
        EXPECT_RC(f->db, sqllock_table_get(f->db, &nt, &tkey, cols, 1, vals,
                                           &ver), SQLLOCK_OK,
                  "table_get with a text key");
        assert_int_equal(vals[0], 4);
        assert_int_equal(ver, 1);
        EXPECT_RC(f->db, sqllock_table_cas(f->db, &nt, &tkey, 1, &sub, 1,
                                           NULL, 0, &nv), SQLLOCK_OK,
                  "table_cas with a text key");
        EXPECT_RC(f->db, sqllock_table_get(f->db, &nt, &tkey, cols, 1, vals,
                                           &ver), SQLLOCK_OK,
                  "table_get with a text key after cas");
        assert_int_equal(vals[0], 1);
        assert_int_equal(ver, 2);
    }
}

/* Many different statement shapes: more than the handle's cache of
 * prepared statements holds, each one run twice, so that statements are
 * replaced and re-prepared; the arithmetic must stay exact. */
static void test_optimistic_O3_statement_shapes(void **state)
{
    fixture *f = *state;
    sqllock_cell key = SQLLOCK_NUMBER(8);
    sqllock_cell conds[8];
    int64_t qty = 1000, version = 1, nv;
    int round, nconds, op, i;
    static const sqllock_op ops[3] = { SQLLOCK_OP_SET, SQLLOCK_OP_ADD,
                                       SQLLOCK_OP_SUB };

    inv_reset(f, 8, qty, version);
    for (i = 0; i < 8; i++) {
        conds[i].column = (i % 2 == 0) ? "qty" : "id";
        conds[i].op = (i % 2 == 0) ? SQLLOCK_OP_GT : SQLLOCK_OP_EQ;
        conds[i].text = NULL;
        conds[i].number = (i % 2 == 0) ? -1 : 8;
    }
    for (round = 0; round < 2; round++) {
        for (nconds = 0; nconds <= 8; nconds++) {
            for (op = 0; op < 3; op++) {
                sqllock_cell s;
                char what[96];
                s.column = "qty";
                s.op = ops[op];
                s.text = NULL;
                s.number = ops[op] == SQLLOCK_OP_SET ? 500 + nconds : 7;
                snprintf(what, sizeof what, "round %d, %d conditions, op %d",
                         round, nconds, op);
                if ((nconds + op) % 2 == 0) {
                    EXPECT_RC(f->db, sqllock_table_cas(f->db, &f->t, &key,
                                                       version, &s, 1, conds,
                                                       nconds, &nv),
                              SQLLOCK_OK, what);
                    assert_int_equal(nv, version + 1);
                } else {
                    EXPECT_RC(f->db, sqllock_table_update(f->db, &f->t, &key,
                                                          &s, 1, conds,
                                                          nconds),
                              SQLLOCK_OK, what);
                }
                version++;
                if (ops[op] == SQLLOCK_OP_SET)
                    qty = s.number;
                else if (ops[op] == SQLLOCK_OP_ADD)
                    qty += s.number;
                else
                    qty -= s.number;
                inv_expect(f, 8, qty, version, what);
            }
        }
    }
}

typedef struct o3_shared {
    int arrived;
    int sales;
    int conflicts;
    int negative_seen;         /* a read saw qty < 0 */
    int bad_version;           /* an OK cas whose new version was wrong */
    int errors;
} o3_shared;

/* One seller with table_cas: read qty and version; stop at 0; otherwise
 * sell one at that version, retry on conflict. */
static int o3_cas_child(o3_shared *sh, const sqllock_table *t)
{
    sqllock_db *db = tu_child_open(g_url, "O3 cas child");
    sqllock_cell key = SQLLOCK_NUMBER(1);
    sqllock_cell sub = { "qty", SQLLOCK_OP_SUB, NULL, 1 };
    sqllock_cell enough = { "qty", SQLLOCK_OP_GE, NULL, 1 };
    const char *cols[] = { "qty" };
    int res = 0;

    if (db == NULL)
        return 2;
    barrier(&sh->arrived, PROCS);
    for (;;) {
        int64_t qty = -1, ver = -1, nv = -1;
        int rc = sqllock_table_get(db, t, &key, cols, 1, &qty, &ver);
        if (rc != SQLLOCK_OK) {
            fprintf(stderr, "O3 cas child: table_get: %s: %s\n",
                    sqllock_errname(rc), sqllock_errmsg(db));
            __atomic_add_fetch(&sh->errors, 1, __ATOMIC_SEQ_CST);
            res = 3;
            break;
        }
        if (qty < 0)
            __atomic_add_fetch(&sh->negative_seen, 1, __ATOMIC_SEQ_CST);
        if (qty <= 0)
            break;
        rc = sqllock_table_cas(db, t, &key, ver, &sub, 1, &enough, 1, &nv);
        if (rc == SQLLOCK_OK) {
            __atomic_add_fetch(&sh->sales, 1, __ATOMIC_SEQ_CST);
            if (nv != ver + 1)
                __atomic_add_fetch(&sh->bad_version, 1, __ATOMIC_SEQ_CST);
        } else if (rc == SQLLOCK_CONFLICT) {
            __atomic_add_fetch(&sh->conflicts, 1, __ATOMIC_SEQ_CST);
        } else {
            fprintf(stderr, "O3 cas child: table_cas: %s: %s\n",
                    sqllock_errname(rc), sqllock_errmsg(db));
            __atomic_add_fetch(&sh->errors, 1, __ATOMIC_SEQ_CST);
            res = 4;
            break;
        }
    }
    sqllock_close(db);
    return res;
}

/* One seller with table_update: `qty = qty - 1 WHERE qty >= 1` until no
 * row matches. */
static int o3_update_child(o3_shared *sh, const sqllock_table *t)
{
    sqllock_db *db = tu_child_open(g_url, "O3 update child");
    sqllock_cell key = SQLLOCK_NUMBER(1);
    sqllock_cell sub = { "qty", SQLLOCK_OP_SUB, NULL, 1 };
    sqllock_cell enough = { "qty", SQLLOCK_OP_GE, NULL, 1 };
    int res = 0;

    if (db == NULL)
        return 2;
    barrier(&sh->arrived, PROCS);
    for (;;) {
        int rc = sqllock_table_update(db, t, &key, &sub, 1, &enough, 1);
        if (rc == SQLLOCK_OK) {
            __atomic_add_fetch(&sh->sales, 1, __ATOMIC_SEQ_CST);
        } else if (rc == SQLLOCK_CONFLICT) {
            break;             /* sold out */
        } else {
            fprintf(stderr, "O3 update child: table_update: %s: %s\n",
                    sqllock_errname(rc), sqllock_errmsg(db));
            __atomic_add_fetch(&sh->errors, 1, __ATOMIC_SEQ_CST);
            res = 4;
            break;
        }
    }
    sqllock_close(db);
    return res;
}

static void o3_run(fixture *f, int use_cas)
{
    o3_shared *sh, copy;
    pid_t pids[PROCS];
    int i, failed;
    int64_t qty, ver;
    const char *name = use_cas ? "table_cas" : "table_update";

    inv_reset(f, 1, O3_STOCK, 1);
    sh = tu_shared_map(sizeof *sh);
    fixture_close_for_fork(f);
    for (i = 0; i < PROCS; i++) {
        pids[i] = fork();
        assert_true(pids[i] >= 0);
        if (pids[i] == 0) {
            int res = use_cas ? o3_cas_child(sh, &f->t)
                              : o3_update_child(sh, &f->t);
            munmap(sh, sizeof *sh);
            _exit(res);
        }
    }
    failed = wait_children(pids, PROCS, name);
    fixture_reopen(f);
    copy = *sh;
    munmap(sh, sizeof *sh);
    assert_true(inv_read(f, f->db, 1, &qty, &ver));
    printf("    O3 [%s] %s, %d processes, stock %d: %d sales, %d "
           "conflicts, final qty %lld, version %lld\n", f->driver, name,
           PROCS, O3_STOCK, copy.sales, copy.conflicts, (long long)qty,
           (long long)ver);
    assert_int_equal(failed, 0);
    assert_int_equal(copy.errors, 0);
    if (copy.negative_seen != 0)
        fail_msg("%s: a reader saw a negative stock %d times", name,
                 copy.negative_seen);
    if (copy.bad_version != 0)
        fail_msg("%s: %d successful cas calls reported a new version other "
                 "than expected + 1", name, copy.bad_version);
    if (copy.sales != O3_STOCK)
        fail_msg("%s: %d sales of a stock of %d", name, copy.sales,
                 O3_STOCK);
    if (qty != 0)
        fail_msg("%s: final stock %lld, want 0", name, (long long)qty);
    if (ver != 1 + O3_STOCK)
        fail_msg("%s: final version %lld, want %d (one per sale)", name,
                 (long long)ver, 1 + O3_STOCK);
}

static void test_optimistic_O3_cas_stock_processes(void **state)
{
    o3_run(*state, 1);
}

static void test_optimistic_O3_update_stock_processes(void **state)
{
    o3_run(*state, 0);
}

/* ------------------------------------------------------------------ */
/* O3 and E2: bad input on application tables                         */
/* ------------------------------------------------------------------ */

#define GUARD_ID 3
#define GUARD_QTY 50
#define GUARD_VERSION 4

/* Tries the three table calls with table description `t`; each must be
 * EINVAL with a message mentioning one of `words`. */
static void bad_table_calls(fixture *f, const sqllock_table *t,
                            const char *what, const char *words)
{
    sqllock_cell key = SQLLOCK_NUMBER(GUARD_ID);
    sqllock_cell sub = { "qty", SQLLOCK_OP_SUB, NULL, 1 };
    sqllock_cell ge = { "qty", SQLLOCK_OP_GE, NULL, 1 };
    const char *cols[] = { "qty" };
    int64_t vals[1] = { -1 }, ver = -1, nv = -1;
    char w[300];

    snprintf(w, sizeof w, "table_get: %s", what);
    expect_einval(f->db, sqllock_table_get(f->db, t, &key, cols, 1, vals,
                                           &ver), w, words);
    snprintf(w, sizeof w, "table_cas: %s", what);
    expect_einval(f->db, sqllock_table_cas(f->db, t, &key, GUARD_VERSION,
                                           &sub, 1, &ge, 1, &nv), w, words);
    snprintf(w, sizeof w, "table_update: %s", what);
    expect_einval(f->db, sqllock_table_update(f->db, t, &key, &sub, 1, &ge,
                                              1), w, words);
    inv_expect(f, GUARD_ID, GUARD_QTY, GUARD_VERSION, w);
}

/* Tries a bad column name in every place a column goes. */
static void bad_column_calls(fixture *f, const char *col, const char *what)
{
    sqllock_cell key = SQLLOCK_NUMBER(GUARD_ID);
    sqllock_cell sub = { "qty", SQLLOCK_OP_SUB, NULL, 1 };
    sqllock_cell ge = { "qty", SQLLOCK_OP_GE, NULL, 1 };
    sqllock_cell bad_set = { col, SQLLOCK_OP_SUB, NULL, 1 };
    sqllock_cell bad_cond = { col, SQLLOCK_OP_GE, NULL, 1 };
    const char *cols[] = { col };
    int64_t vals[1] = { -1 }, ver = -1, nv = -1;
    sqllock_table t = f->t;
    char w[300];

    snprintf(w, sizeof w, "table_get column: %s", what);
    expect_einval(f->db, sqllock_table_get(f->db, &f->t, &key, cols, 1, vals,
                                           &ver), w, "column");
    snprintf(w, sizeof w, "table_cas set column: %s", what);
    expect_einval(f->db, sqllock_table_cas(f->db, &f->t, &key, GUARD_VERSION,
                                           &bad_set, 1, &ge, 1, &nv), w,
                  "column");
    snprintf(w, sizeof w, "table_cas condition column: %s", what);
    expect_einval(f->db, sqllock_table_cas(f->db, &f->t, &key, GUARD_VERSION,
                                           &sub, 1, &bad_cond, 1, &nv), w,
                  "column");
    snprintf(w, sizeof w, "table_update set column: %s", what);
    expect_einval(f->db, sqllock_table_update(f->db, &f->t, &key, &bad_set, 1,
                                              &ge, 1), w, "column");
    snprintf(w, sizeof w, "table_update condition column: %s", what);
    expect_einval(f->db, sqllock_table_update(f->db, &f->t, &key, &sub, 1,
                                              &bad_cond, 1), w, "column");
    t.key_column = col;
    snprintf(w, sizeof w, "key column: %s", what);
    bad_table_calls(f, &t, w, "column");
    t = f->t;
    t.version_column = col;
    snprintf(w, sizeof w, "version column: %s", what);
    bad_table_calls(f, &t, w, "column");
    inv_expect(f, GUARD_ID, GUARD_QTY, GUARD_VERSION, w);
}

static void test_optimistic_O3_bad_identifiers(void **state)
{
    fixture *f = *state;
    char long_id[201], id64[65], inject[200];
    const char *bad[14];
    const char *why[14] = {
        "SQL in the name", "SQL naming this very table", "empty name",
        "200-character identifier", "64-character identifier",
        "double quote", "backquote", "space", "single quote",
        "three-part name a.b.c", "leading digit", "leading dot",
        "trailing dot", "non-ASCII letter" };
    sqllock_table t;
    int i, n = 14;

    inv_reset(f, GUARD_ID, GUARD_QTY, GUARD_VERSION);
    memset(long_id, 'a', 200);
    long_id[200] = '\0';
    memset(id64, 'b', 64);
    id64[64] = '\0';
    snprintf(inject, sizeof inject, "%s; DROP TABLE %s", f->inv, f->inv);
    bad[0] = "inventory; DROP TABLE x";
    bad[1] = inject;
    bad[2] = "";
    bad[3] = long_id;
    bad[4] = id64;
    bad[5] = "inv\"entory";
    bad[6] = "inv`entory";
    bad[7] = "inv entory";
    bad[8] = "inv'entory";
    bad[9] = "a.b.c";
    bad[10] = "1inventory";
    bad[11] = ".inventory";
    bad[12] = "inventory.";
    bad[13] = "inv\xc3\xa9ntory";
    for (i = 0; i < n; i++) {
        char what[300];
        t = f->t;
        t.table = bad[i];
        snprintf(what, sizeof what, "table name (%s)", why[i]);
        bad_table_calls(f, &t, what, "table|identifier|name");
    }
    /* A NULL table name. */
    t = f->t;
    t.table = NULL;
    bad_table_calls(f, &t, "NULL table name", "table|identifier|name|null");
    /* Column names likewise: the same list, and a qualified column. */
    for (i = 2; i < n; i++) {
        char what[300];
        snprintf(what, sizeof what, "column name (%s)", why[i]);
        bad_column_calls(f, bad[i], what);
    }
    bad_column_calls(f, "qty; DROP TABLE x", "column name (SQL)");
    bad_column_calls(f, "inventory.qty", "column name (qualified)");
    {
        sqllock_table tn = f->t;
        tn.key_column = NULL;
        bad_table_calls(f, &tn, "NULL key column", "column|null");
        tn = f->t;
        tn.version_column = NULL;
        bad_table_calls(f, &tn, "NULL version column", "column|null");
    }
    /* The table is still there, unchanged, and the handle still works. */
    inv_expect(f, GUARD_ID, GUARD_QTY, GUARD_VERSION,
               "after every bad identifier");
    {
        sqllock_cell key = SQLLOCK_NUMBER(GUARD_ID);
        const char *cols[] = { "qty" };
        int64_t q = -1, ver = -1;
        EXPECT_RC(f->db, sqllock_table_get(f->db, &f->t, &key, cols, 1, &q,
                                           &ver), SQLLOCK_OK,
                  "table_get after bad identifiers");
        assert_int_equal(q, GUARD_QTY);
        assert_int_equal(ver, GUARD_VERSION);
    }
}

static void test_optimistic_O3_bad_arguments(void **state)
{
    fixture *f = *state;
    sqllock_cell key = SQLLOCK_NUMBER(GUARD_ID);
    sqllock_cell sub = { "qty", SQLLOCK_OP_SUB, NULL, 1 };
    sqllock_cell ge = { "qty", SQLLOCK_OP_GE, NULL, 1 };
    sqllock_cell set_as_cond = { "qty", SQLLOCK_OP_SET, NULL, 1 };
    sqllock_cell add_as_cond = { "qty", SQLLOCK_OP_ADD, NULL, 1 };
    sqllock_cell ge_as_set = { "qty", SQLLOCK_OP_GE, NULL, 1 };
    sqllock_cell eq_as_set = { "qty", SQLLOCK_OP_EQ, NULL, 1 };
    sqllock_cell stray_op = { "qty", (sqllock_op)99, NULL, 1 };
    sqllock_cell null_col = { NULL, SQLLOCK_OP_SUB, NULL, 1 };
    sqllock_cell null_ccol = { NULL, SQLLOCK_OP_GE, NULL, 1 };
    const char *cols[17];
    const char *null_cols[1] = { NULL };
    int64_t vals[17], ver = -1, nv = -1;
    int i;

    inv_reset(f, GUARD_ID, GUARD_QTY, GUARD_VERSION);
    for (i = 0; i < 17; i++)
        cols[i] = "qty";

    /* NULL db, table, key, sets. */
    expect_einval(NULL, sqllock_table_get(NULL, &f->t, &key, cols, 1, vals,
                                          &ver), "table_get NULL db", NULL);
    expect_einval(NULL, sqllock_table_cas(NULL, &f->t, &key, GUARD_VERSION,
                                          &sub, 1, NULL, 0, &nv),
                  "table_cas NULL db", NULL);
    expect_einval(NULL, sqllock_table_update(NULL, &f->t, &key, &sub, 1,
                                             NULL, 0),
                  "table_update NULL db", NULL);
    expect_einval(f->db, sqllock_table_get(f->db, NULL, &key, cols, 1, vals,
                                           &ver), "table_get NULL table",
                  "table");
    expect_einval(f->db, sqllock_table_cas(f->db, NULL, &key, GUARD_VERSION,
                                           &sub, 1, NULL, 0, &nv),
                  "table_cas NULL table", "table");
    expect_einval(f->db, sqllock_table_update(f->db, NULL, &key, &sub, 1,
                                              NULL, 0),
                  "table_update NULL table", "table");
    expect_einval(f->db, sqllock_table_get(f->db, &f->t, NULL, cols, 1, vals,
                                           &ver), "table_get NULL key",
                  "key");
    expect_einval(f->db, sqllock_table_cas(f->db, &f->t, NULL, GUARD_VERSION,
                                           &sub, 1, NULL, 0, &nv),
                  "table_cas NULL key", "key");
    expect_einval(f->db, sqllock_table_update(f->db, &f->t, NULL, &sub, 1,
                                              NULL, 0),
                  "table_update NULL key", "key");
    expect_einval(f->db, sqllock_table_cas(f->db, &f->t, &key, GUARD_VERSION,
                                           NULL, 1, NULL, 0, &nv),
                  "table_cas NULL sets", "set|assign");
    expect_einval(f->db, sqllock_table_update(f->db, &f->t, &key, NULL, 1,
                                              NULL, 0),
                  "table_update NULL sets", "set|assign");
    /* nsets 0 or negative. */
    expect_einval(f->db, sqllock_table_cas(f->db, &f->t, &key, GUARD_VERSION,
                                           &sub, 0, NULL, 0, &nv),
                  "table_cas nsets 0", "set|assign");
    expect_einval(f->db, sqllock_table_update(f->db, &f->t, &key, &sub, 0,
                                              NULL, 0),
                  "table_update nsets 0", "set|assign");
    expect_einval(f->db, sqllock_table_cas(f->db, &f->t, &key, GUARD_VERSION,
                                           &sub, -1, NULL, 0, &nv),
                  "table_cas nsets -1", "set|assign");
    /* NULL conds with nconds > 0, negative nconds. */
    expect_einval(f->db, sqllock_table_cas(f->db, &f->t, &key, GUARD_VERSION,
                                           &sub, 1, NULL, 1, &nv),
                  "table_cas NULL conds", "cond");
    expect_einval(f->db, sqllock_table_update(f->db, &f->t, &key, &sub, 1,
                                              &ge, -1),
                  "table_update nconds -1", "cond");
    /* An assignment used as a condition, and the other way round. */
    expect_einval(f->db, sqllock_table_cas(f->db, &f->t, &key, GUARD_VERSION,
                                           &sub, 1, &set_as_cond, 1, &nv),
                  "table_cas SET as a condition", "condition|op");
    expect_einval(f->db, sqllock_table_update(f->db, &f->t, &key, &sub, 1,
                                              &add_as_cond, 1),
                  "table_update ADD as a condition", "condition|op");
    expect_einval(f->db, sqllock_table_cas(f->db, &f->t, &key, GUARD_VERSION,
                                           &ge_as_set, 1, NULL, 0, &nv),
                  "table_cas GE as an assignment", "assign|op");
    expect_einval(f->db, sqllock_table_update(f->db, &f->t, &key, &eq_as_set,
                                              1, NULL, 0),
                  "table_update EQ as an assignment", "assign|op");
    expect_einval(f->db, sqllock_table_update(f->db, &f->t, &key, &stray_op,
                                              1, NULL, 0),
                  "table_update op 99 as an assignment", "op");
    expect_einval(f->db, sqllock_table_update(f->db, &f->t, &key, &sub, 1,
                                              &stray_op, 1),
                  "table_update op 99 as a condition", "op|condition");
    /* NULL column names in cells and in the column list. */
    expect_einval(f->db, sqllock_table_update(f->db, &f->t, &key, &null_col,
                                              1, NULL, 0),
                  "table_update NULL set column", "column");
    expect_einval(f->db, sqllock_table_update(f->db, &f->t, &key, &sub, 1,
                                              &null_ccol, 1),
                  "table_update NULL condition column", "column");
    expect_einval(f->db, sqllock_table_get(f->db, &f->t, &key, null_cols, 1,
                                           vals, &ver),
                  "table_get NULL column name", "column");
    /* Column count. */
    expect_einval(f->db, sqllock_table_get(f->db, &f->t, &key, NULL, 1, vals,
                                           &ver),
                  "table_get NULL columns", "column");
    expect_einval(f->db, sqllock_table_get(f->db, &f->t, &key, cols, 17,
                                           vals, &ver),
                  "table_get 17 columns", "column|16");
    expect_einval(f->db, sqllock_table_get(f->db, &f->t, &key, cols, -1,
                                           vals, &ver),
                  "table_get -1 columns", "column");
    /* 16 columns are fine. */
    EXPECT_RC(f->db, sqllock_table_get(f->db, &f->t, &key, cols, 16, vals,
                                       &ver), SQLLOCK_OK,
              "table_get 16 columns");
    for (i = 0; i < 16; i++)
        assert_int_equal(vals[i], GUARD_QTY);
    assert_int_equal(ver, GUARD_VERSION);
    inv_expect(f, GUARD_ID, GUARD_QTY, GUARD_VERSION,
               "after every bad argument");
}

static void test_optimistic_O3_missing_table_column(void **state)
{
    fixture *f = *state;
    sqllock_cell key = SQLLOCK_NUMBER(GUARD_ID);
    sqllock_cell sub = { "qty", SQLLOCK_OP_SUB, NULL, 1 };
    sqllock_cell ge = { "qty", SQLLOCK_OP_GE, NULL, 1 };
    sqllock_cell nosuch_set = { "nosuchcol", SQLLOCK_OP_SUB, NULL, 1 };
    sqllock_cell nosuch_cond = { "nosuchcol", SQLLOCK_OP_GE, NULL, 1 };
    const char *cols[] = { "nosuchcol" };
    const char *qcols[] = { "qty" };
    char missing[64];
    sqllock_table t = f->t;
    int64_t vals[1], ver, nv;
    int rc, k;

    inv_reset(f, GUARD_ID, GUARD_QTY, GUARD_VERSION);
    snprintf(missing, sizeof missing, "nosuch_%ld", (long)getpid());
    t.table = missing;
    for (k = 0; k < 3; k++) {
        const char *what = k == 0 ? "table_get on a missing table"
                         : k == 1 ? "table_cas on a missing table"
                                  : "table_update on a missing table";
        rc = k == 0 ? sqllock_table_get(f->db, &t, &key, qcols, 1, vals, &ver)
           : k == 1 ? sqllock_table_cas(f->db, &t, &key, 1, &sub, 1, &ge, 1,
                                        &nv)
                    : sqllock_table_update(f->db, &t, &key, &sub, 1, &ge, 1);
        if (rc != SQLLOCK_EINVAL && rc != SQLLOCK_ENOSCHEMA)
            fail_msg("%s: got %s, want SQLLOCK_EINVAL or SQLLOCK_ENOSCHEMA "
                     "(%s)", what, sqllock_errname(rc), sqllock_errmsg(f->db));
        if (sqllock_errcode(f->db) != rc)
            fail_msg("%s: errcode %s differs from the status %s", what,
                     sqllock_errname(sqllock_errcode(f->db)),
                     sqllock_errname(rc));
        if (!tu_contains_ci(sqllock_errmsg(f->db), missing))
            fail_msg("%s: message \"%s\" does not name the table %s", what,
                     sqllock_errmsg(f->db), missing);
    }
    for (k = 0; k < 5; k++) {
        const char *what[] = { "table_get of a missing column",
                               "table_cas setting a missing column",
                               "table_cas on a missing condition column",
                               "table_update setting a missing column",
                               "table_update on a missing condition column" };
        rc = k == 0 ? sqllock_table_get(f->db, &f->t, &key, cols, 1, vals,
                                        &ver)
           : k == 1 ? sqllock_table_cas(f->db, &f->t, &key, GUARD_VERSION,
                                        &nosuch_set, 1, NULL, 0, &nv)
           : k == 2 ? sqllock_table_cas(f->db, &f->t, &key, GUARD_VERSION,
                                        &sub, 1, &nosuch_cond, 1, &nv)
           : k == 3 ? sqllock_table_update(f->db, &f->t, &key, &nosuch_set, 1,
                                           NULL, 0)
                    : sqllock_table_update(f->db, &f->t, &key, &sub, 1,
                                           &nosuch_cond, 1);
        if (rc == SQLLOCK_OK || rc == SQLLOCK_CONFLICT ||
            rc == SQLLOCK_NOTFOUND)
            fail_msg("%s: got %s, want an error (%s)", what[k],
                     sqllock_errname(rc), sqllock_errmsg(f->db));
        if (!tu_contains_ci(sqllock_errmsg(f->db), "nosuchcol"))
            fail_msg("%s: message \"%s\" does not name the column",
                     what[k], sqllock_errmsg(f->db));
        inv_expect(f, GUARD_ID, GUARD_QTY, GUARD_VERSION, what[k]);
    }
    /* A missing version column, on a real table. */
    t = f->t;
    t.version_column = "nosuchcol";
    rc = sqllock_table_cas(f->db, &t, &key, GUARD_VERSION, &sub, 1, NULL, 0,
                           &nv);
    if (rc == SQLLOCK_OK || rc == SQLLOCK_CONFLICT)
        fail_msg("table_cas with a missing version column: %s (%s)",
                 sqllock_errname(rc), sqllock_errmsg(f->db));
    if (!tu_contains_ci(sqllock_errmsg(f->db), "nosuchcol"))
        fail_msg("missing version column: message \"%s\" does not name it",
                 sqllock_errmsg(f->db));
    inv_expect(f, GUARD_ID, GUARD_QTY, GUARD_VERSION,
               "after the missing table and columns");
    /* The handle still works. */
    EXPECT_RC(f->db, sqllock_table_cas(f->db, &f->t, &key, GUARD_VERSION,
                                       &sub, 1, &ge, 1, &nv), SQLLOCK_OK,
              "table_cas after the errors");
    inv_expect(f, GUARD_ID, GUARD_QTY - 1, GUARD_VERSION + 1,
               "after a good cas");
}

/* Expected version INT64_MAX: refused (EINVAL) or a conflict, never OK,
 * both on a row at a small version and on a row really at INT64_MAX. */
static void test_optimistic_O3_version_overflow(void **state)
{
    fixture *f = *state;
    sqllock_cell key = SQLLOCK_NUMBER(GUARD_ID);
    sqllock_cell sub = { "qty", SQLLOCK_OP_SUB, NULL, 1 };
    sqllock_value v[2];
    int64_t nv = 0;
    int rc, pass;

    for (pass = 0; pass < 2; pass++) {
        int64_t at = pass == 0 ? GUARD_VERSION : INT64_MAX;
        inv_reset(f, GUARD_ID, GUARD_QTY, GUARD_VERSION);
        if (pass == 1) {
            v[0] = sqllock__int(INT64_MAX);
            v[1] = sqllock__int(GUARD_ID);
            exec_ok(f->db, f->sql->inv_set_version, f->inv, v, 2);
        }
        inv_expect(f, GUARD_ID, GUARD_QTY, at, "row before the overflow");
        rc = sqllock_table_cas(f->db, &f->t, &key, INT64_MAX, &sub, 1, NULL,
                               0, &nv);
        if (rc != SQLLOCK_EINVAL && rc != SQLLOCK_CONFLICT)
            fail_msg("table_cas with expected INT64_MAX on a row at %lld: "
                     "%s (%s)", (long long)at, sqllock_errname(rc),
                     sqllock_errmsg(f->db));
        if (rc == SQLLOCK_EINVAL)
            expect_msg_any(f->db, "table_cas at INT64_MAX",
                           "version|overflow");
        inv_expect(f, GUARD_ID, GUARD_QTY, at,
                   "row after cas with expected INT64_MAX");
    }
    /* table_update on a row at INT64_MAX: its version + 1 cannot be
     * written either. */
    rc = sqllock_table_update(f->db, &f->t, &key, &sub, 1, NULL, 0);
    if (rc == SQLLOCK_OK)
        fail_msg("table_update on a row at version INT64_MAX succeeded");
    inv_expect(f, GUARD_ID, GUARD_QTY, INT64_MAX,
               "row after table_update at INT64_MAX");
    inv_reset(f, GUARD_ID, GUARD_QTY, GUARD_VERSION);
}

/* O3, wrong types: arithmetic with a text value is refused before it
 * reaches the database (SQLite would read 'abc' as 0 and "succeed"), and a
 * text key for a numeric key column never changes the row. */
static void test_optimistic_O3_wrong_types(void **state)
{
    fixture *f = *state;
    sqllock_cell key = SQLLOCK_NUMBER(GUARD_ID);
    sqllock_cell text_key = SQLLOCK_TEXT("not-a-number");
    sqllock_cell sub_text = { "qty", SQLLOCK_OP_SUB, "abc", 0 };
    sqllock_cell add_text = { "qty", SQLLOCK_OP_ADD, "1", 0 };
    sqllock_cell sub = { "qty", SQLLOCK_OP_SUB, NULL, 1 };
    int rc;

    inv_reset(f, GUARD_ID, GUARD_QTY, GUARD_VERSION);
    rc = sqllock_table_update(f->db, &f->t, &key, &sub_text, 1, NULL, 0);
    assert_int_equal(rc, SQLLOCK_EINVAL);
    expect_msg_any(f->db, "SUB with a text value", "number|text");
    rc = sqllock_table_cas(f->db, &f->t, &key, GUARD_VERSION, &add_text, 1,
                           NULL, 0, NULL);
    assert_int_equal(rc, SQLLOCK_EINVAL);
    rc = sqllock_table_update(f->db, &f->t, &text_key, &sub, 1, NULL, 0);
    if (rc == SQLLOCK_OK)
        fail_msg("table_update with a text key on a numeric key column "
                 "reported success");
    inv_expect(f, GUARD_ID, GUARD_QTY, GUARD_VERSION,
               "row after updates with wrong types");
}

/* ------------------------------------------------------------------ */

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_optimistic_O1_get_missing_notfound),
        cmocka_unit_test(test_optimistic_O1_create_conflict),
        cmocka_unit_test(test_optimistic_O1_binary_and_empty_values),
        cmocka_unit_test(test_optimistic_O1_cas_versions),
        cmocka_unit_test(test_optimistic_O1_delete_versions),
        cmocka_unit_test(test_optimistic_O1_value_max),
        cmocka_unit_test(test_optimistic_O1_free_null),
        cmocka_unit_test(test_optimistic_O1_bad_keys),
        cmocka_unit_test(test_optimistic_O1_version_overflow),
        cmocka_unit_test(test_optimistic_O2_counter_processes),
        cmocka_unit_test(test_optimistic_O2_fn_status_writes_nothing),
        cmocka_unit_test(test_optimistic_O2_one_attempt_conflicts),
        cmocka_unit_test(test_optimistic_O3_table_cas_basic),
        cmocka_unit_test(test_optimistic_O3_statement_shapes),
        cmocka_unit_test(test_optimistic_O3_cas_stock_processes),
        cmocka_unit_test(test_optimistic_O3_update_stock_processes),
        cmocka_unit_test(test_optimistic_O3_bad_identifiers),
        cmocka_unit_test(test_optimistic_O3_bad_arguments),
        cmocka_unit_test(test_optimistic_O3_missing_table_column),
        cmocka_unit_test(test_optimistic_O3_version_overflow),
        cmocka_unit_test(test_optimistic_O3_wrong_types),
    };
    return TU_RUN_PER_URL("optimistic", &g_url, tests, group_setup, group_teardown);
}
