/*
 * util.c -- the harness's temporary directories, URL list, per-unit
 * databases, the tests' own SQL and the lease-table lookup (test_util.h).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "test_util.h"
#include "test_run.h"

char tu_empty_mysql[72] = TU_EMPTY_NAME;

char *tu_mkdtemp(void)
{
    const char *base = getenv("TMPDIR");
    char buf[4096];
    char *res;

    if (base == NULL || *base == '\0')
        base = "/tmp";
    snprintf(buf, sizeof buf, "%s/sqllock-test-XXXXXX", base);
    if (mkdtemp(buf) == NULL)
        return NULL;
    res = malloc(strlen(buf) + 1);
    if (res != NULL)
        strcpy(res, buf);
    return res;
}

void tu_rmdir(const char *dir)
{
    DIR *d;
    struct dirent *e;
    char path[4096];

    if (dir == NULL)
        return;
    d = opendir(dir);
    if (d != NULL) {
        while ((e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                continue;
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            unlink(path);
        }
        closedir(d);
    }
    rmdir(dir);
}

char *tu_strdup(const char *s)
{
    char *r = malloc(strlen(s) + 1);
    if (r != NULL)
        strcpy(r, s);
    return r;
}

const char *tu_unit_name(void)
{
    extern char *program_invocation_short_name;   /* glibc */
    static char unit[32];
    const char *u = getenv("SQLLOCK_TEST_UNIT");
    size_t i, n = 0;

    if (u == NULL || *u == '\0') {
        u = program_invocation_short_name;
        if (u != NULL && strncmp(u, "test_", 5) == 0)
            u += 5;
    }
    for (i = 0; u != NULL && u[i] != '\0' && n < sizeof unit - 1; i++) {
        char c = (char)tolower((unsigned char)u[i]);
        unit[n++] = (isalnum((unsigned char)c) || c == '_') ? c : '_';
    }
    if (n == 0)
        unit[n++] = 'x';
    unit[n] = '\0';
    return unit;
}

const char *tu_db_tag(void)
{
    const char *t = getenv("SQLLOCK_TEST_DB_PER_UNIT");
    size_t i;

    if (t == NULL || *t == '\0' || strcmp(t, "0") == 0)
        return NULL;
    if (strcmp(t, "1") == 0)
        return "";
    for (i = 0; t[i] != '\0'; i++)
        if (!isalnum((unsigned char)t[i]) || i >= 16) {
            fprintf(stderr, "SQLLOCK_TEST_DB_PER_UNIT=%s: a tag is 1 to 16 "
                    "letters or digits; using the URLs as given\n", t);
            return NULL;
        }
    return t;
}

int tu_url_per_unit(const char *url, const char *tag,
                                  const char *unit, char *out, size_t size,
                                  char *why, size_t why_size)
{
    const char *drv = tu_url_driver(url);
    size_t end = strcspn(url, "?"), n;
    char suffix[64];

    if (drv != NULL && strcmp(drv, "sqlite") == 0) {
        /* F.db -> F-TAG-UNIT.db: before the last '.' of the file name. */
        const char *dot = NULL, *p;
        snprintf(suffix, sizeof suffix, "%s%s-%s", *tag ? "-" : "", tag,
                 unit);
        for (p = url; p < url + end; p++) {
            if (*p == '/' || *p == ':')
                dot = NULL;
            else if (*p == '.')
                dot = p;
        }
        if (dot == NULL)
            dot = url + end;
        n = (size_t)snprintf(out, size, "%.*s%s%s", (int)(dot - url), url,
                             suffix, dot);
    } else if (drv != NULL) {
        /* scheme://[user[:pw]@]hosts/DB[?query] -> TAG_UNIT_DB */
        const char *a = strstr(url, "://");
        const char *db = a != NULL ? strchr(a + 3, '/') : NULL;
        size_t dblen;
        if (db == NULL || db >= url + end || db + 1 == url + end) {
            snprintf(why, why_size, "the URL names no database to give each "
                     "unit its own (SQLLOCK_TEST_DB_PER_UNIT)");
            return -1;
        }
        db++;
        dblen = (size_t)(url + end - db);
        snprintf(suffix, sizeof suffix, "%s_%s_", *tag ? tag : "u", unit);
        if (dblen + strlen(suffix) > 63) {
            snprintf(why, why_size, "database name %s%.*s is longer than 63 "
                     "bytes", suffix, (int)dblen, db);
            return -1;
        }
        n = (size_t)snprintf(out, size, "%.*s%s%s", (int)(db - url), url,
                             suffix, db);
    } else {
        snprintf(why, why_size, "unknown scheme");
        return -1;
    }
    if (n >= size) {
        snprintf(why, why_size, "the URL is too long");
        return -1;
    }
    return 0;
}

void tu_url_dbname(const char *url, char *out, size_t size)
{
    const char *a = strstr(url, "://");
    const char *db = a != NULL ? strchr(a + 3, '/') : NULL;
    size_t n = db != NULL ? strcspn(db + 1, "?") : 0;

    snprintf(out, size, "%.*s", (int)n, db != NULL ? db + 1 : "");
}

int tu_unit_db_create(const char *base_url, const char *unit_url,
                                    char *why, size_t why_size)
{
    const char *drv = tu_url_driver(base_url);
    sqllock_db *db = NULL;
    char name[80], sql[200];
    int rc, has = 0, attempt;
    int64_t n = 0;

    tu_url_dbname(unit_url, name, sizeof name);
    rc = sqllock_open(base_url, NULL, &db);
    for (attempt = 0; rc == SQLLOCK_OK && attempt < 2; attempt++) {
        if (strcmp(drv, "mysql") == 0) {
            snprintf(sql, sizeof sql, "CREATE DATABASE IF NOT EXISTS `%s`",
                     name);
            rc = sqllock__exec_sql(db, sql, NULL, 0, NULL, NULL, NULL);
            break;
        }
        /* PostgreSQL has no CREATE DATABASE IF NOT EXISTS: look, create,
         * and after a failure look again (another process of the same
         * unit may have made it meanwhile). */
        {
            sqllock_value arg = sqllock__text(name);
            rc = sqllock__exec_sql(db, "SELECT count(*) FROM "
                                   "pg_catalog.pg_database WHERE datname = $1",
                                   &arg, 1, &has, &n, NULL);
        }
        if (rc != SQLLOCK_OK || n > 0 || attempt > 0)
            break;
        snprintf(sql, sizeof sql, "CREATE DATABASE \"%s\"", name);
        rc = sqllock__exec_sql(db, sql, NULL, 0, NULL, NULL, NULL);
        if (rc == SQLLOCK_OK)
            break;
        n = 0;
        rc = SQLLOCK_OK;        /* look again */
    }
    if (rc == SQLLOCK_OK && strcmp(drv, "postgres") == 0 && n == 0 &&
        attempt > 0) {
        rc = SQLLOCK_EDB;
        snprintf(why, why_size, "cannot create database %s", name);
    } else if (rc != SQLLOCK_OK) {
        snprintf(why, why_size, "cannot create database %s: %s: %s", name,
                 sqllock_errname(rc), sqllock_errmsg(db));
    }
    sqllock_close(db);
    return rc == SQLLOCK_OK ? 0 : -1;
}

int tu_urls_load(tu_urls *u)
{
    if (tu_urls_load_(u) == 0)
        return 0;
    tu_urls_free(u);
    return -1;
}

int tu_urls_load_(tu_urls *u)
{
    const char *env = getenv("SQLLOCK_TEST_URLS");
    const char *only = getenv("SQLLOCK_TEST_DRIVER");
    const char *tag = tu_db_tag();
    char buf[4200], why[600];
    int i, kept;

    memset(u, 0, sizeof *u);
    if (only != NULL && *only == '\0')
        only = NULL;
    if (env != NULL) {
        const char *p = env;
        while (*p != '\0' && u->n < TU_MAX_URLS) {
            size_t len;
            while (*p == ' ' || *p == '\t' || *p == '\n')
                p++;
            len = strcspn(p, " \t\n");
            if (len == 0)
                break;
            u->url[u->n] = malloc(len + 1);
            if (u->url[u->n] == NULL)
                return -1;
            memcpy(u->url[u->n], p, len);
            u->url[u->n][len] = '\0';
            u->n++;
            p += len;
        }
    }
    if (u->n == 0 && (only == NULL || strcmp(only, "sqlite") == 0)) {
        u->tmpdir = tu_mkdtemp();
        if (u->tmpdir == NULL)
            return -1;
        snprintf(buf, sizeof buf, "sqlite://%s/locks.db", u->tmpdir);
        u->url[0] = tu_strdup(buf);
        if (u->url[0] == NULL)
            return -1;
        u->n = 1;
        tag = NULL;            /* a fresh file of its own already */
    }
    for (i = 0, kept = 0; i < u->n; i++) {
        char *url = u->url[i];
        const char *d = tu_url_driver(url);
        u->url[i] = NULL;
        if (only != NULL && (d == NULL || strcmp(d, only) != 0)) {
            free(url);
            u->filtered++;
        } else {
            u->url[kept++] = url;
        }
    }
    u->n = kept;
    for (i = 0; tag != NULL && i < u->n; i++) {
        const char *d = tu_url_driver(u->url[i]);
        char *unit_url;
        if (tu_url_per_unit(u->url[i], tag, tu_unit_name(), buf, sizeof buf,
                            why, sizeof why) != 0) {
            fprintf(stderr, "SQLLOCK_TEST_DB_PER_UNIT: %s\n", why);
            return -1;
        }
        if (d != NULL && strcmp(d, "sqlite") != 0 &&
            tu_unit_db_create(u->url[i], buf, why, sizeof why) != 0) {
            fprintf(stderr, "SQLLOCK_TEST_DB_PER_UNIT: %s\n", why);
            return -1;
        }
        unit_url = tu_strdup(buf);
        if (unit_url == NULL)
            return -1;
        free(u->url[i]);
        u->url[i] = unit_url;
    }
    return 0;
}

int tu_url_pooled(const char *url)
{
    const char *p = strstr(url, "pooler=");

    return p != NULL && (p[-1] == '?' || p[-1] == '&') &&
           strncmp(p + 7, "none", 4) != 0;
}

void tu_urls_free(tu_urls *u)
{
    int i;

    for (i = 0; i < u->n; i++)
        free(u->url[i]);
    if (u->tmpdir != NULL) {
        tu_rmdir(u->tmpdir);
        free(u->tmpdir);
    }
    memset(u, 0, sizeof *u);
}

const char *tu_url_driver(const char *url)
{
    static const struct { const char *scheme, *driver; } map[] = {
        { "sqlite", "sqlite" },     { "postgres", "postgres" },
        { "postgresql", "postgres" }, { "mysql", "mysql" },
        { "mariadb", "mysql" },
    };
    size_t n = strcspn(url, ":"), i;

    for (i = 0; i < sizeof map / sizeof map[0]; i++) {
        if (strlen(map[i].scheme) == n &&
            strncasecmp(url, map[i].scheme, n) == 0)
            return map[i].driver;
    }
    return NULL;
}

int tu_driver_is(const char *p, size_t len, const char *driver)
{
    if (strlen(driver) == len && strncmp(p, driver, len) == 0)
        return 1;
    if (len == 10 && strncmp(p, "postgresql", 10) == 0)
        return strcmp(driver, "postgres") == 0;
    if (len == 7 && strncmp(p, "mariadb", 7) == 0)
        return strcmp(driver, "mysql") == 0;
    return 0;
}

int tu_check_required(const tu_urls *u, char *missing,
                                    size_t missing_size)
{
    const char *req = getenv("SQLLOCK_TEST_REQUIRE");
    const char *only = getenv("SQLLOCK_TEST_DRIVER");
    const char *p = req;

    if (req == NULL)
        return 0;
    if (only != NULL && *only == '\0')
        only = NULL;
    while (*p != '\0') {
        size_t len;
        int i, found = 0;
        while (*p == ',' || *p == ' ')
            p++;
        len = strcspn(p, ", ");
        if (len == 0)
            break;
        if (only != NULL && !tu_driver_is(p, len, only)) {
            p += len;
            continue;
        }
        for (i = 0; i < u->n; i++) {
            const char *d = tu_url_driver(u->url[i]);
            if (d != NULL && strlen(d) == len && strncmp(d, p, len) == 0)
                found = 1;
            /* "postgresql" and "mariadb" are accepted as aliases. */
            if (d != NULL && len == 10 && strncmp(p, "postgresql", 10) == 0 &&
                strcmp(d, "postgres") == 0)
                found = 1;
            if (d != NULL && len == 7 && strncmp(p, "mariadb", 7) == 0 &&
                strcmp(d, "mysql") == 0)
                found = 1;
        }
        if (!found) {
            snprintf(missing, missing_size, "%.*s", (int)len, p);
            return -1;
        }
        p += len;
    }
    return 0;
}

const tu_sql *tu_sql_for(const char *driver)
{
    static const tu_sql table[] = {
        { "sqlite",
          "DELETE FROM sqllock_lease WHERE name = ?",
          "CREATE TABLE IF NOT EXISTS sqllock_test_counter ("
          "id INTEGER PRIMARY KEY, value INTEGER NOT NULL)",
          "INSERT INTO sqllock_test_counter (id, value) VALUES (?, 0)",
          "SELECT value FROM sqllock_test_counter WHERE id = ?",
          "UPDATE sqllock_test_counter SET value = ? WHERE id = ?",
          "DELETE FROM sqllock_test_counter WHERE id = ?" },
        { "postgres",
          "DELETE FROM sqllock_lease WHERE name = $1",
          "CREATE TABLE IF NOT EXISTS sqllock_test_counter ("
          "id BIGINT PRIMARY KEY, value BIGINT NOT NULL)",
          "INSERT INTO sqllock_test_counter (id, value) VALUES ($1, 0)",
          "SELECT value FROM sqllock_test_counter WHERE id = $1",
          "UPDATE sqllock_test_counter SET value = $1 WHERE id = $2",
          "DELETE FROM sqllock_test_counter WHERE id = $1" },
        { "mysql",
          "DELETE FROM sqllock_lease WHERE name = ?",
          "CREATE TABLE IF NOT EXISTS sqllock_test_counter ("
          "id BIGINT PRIMARY KEY, value BIGINT NOT NULL)",
          "INSERT INTO sqllock_test_counter (id, value) VALUES (?, 0)",
          "SELECT value FROM sqllock_test_counter WHERE id = ?",
          "UPDATE sqllock_test_counter SET value = ? WHERE id = ?",
          "DELETE FROM sqllock_test_counter WHERE id = ?" },
    };
    size_t i;

    if (driver == NULL)
        return NULL;
    for (i = 0; i < sizeof table / sizeof table[0]; i++)
        if (strcmp(table[i].driver, driver) == 0)
            return &table[i];
    return NULL;
}

const char *tu_fenced_insert(const char *driver)
{
    return strcmp(driver, "postgres") == 0
        ? "INSERT INTO " TU_FENCED_TABLE " (id, val) VALUES ($1, 0)"
        : "INSERT INTO " TU_FENCED_TABLE " (id, val) VALUES (?, 0)";
}

void tu_fenced_new_row(sqllock_db *db, int64_t id)
{
    sqllock_value arg = sqllock__int(id);
    const char *sql = tu_fenced_insert(sqllock_db_driver(db));

    EXPECT_RC(db, sqllock__exec_sql(db, sql, &arg, 1, NULL, NULL, NULL),
              SQLLOCK_OK, "insert the fenced row");
}

static int tu_fenced_write(sqllock_db *db, int64_t id, int64_t token,
                           int op, int64_t val)
{
    static const sqllock_table fenced = { TU_FENCED_TABLE, "id", NULL };
    sqllock_cell key = SQLLOCK_NUMBER(id);
    sqllock_cell set = { "val", op, NULL, val };

    return sqllock_table_fenced_update(db, &fenced, &key, "fence", token,
                                       &set, 1, NULL, 0);
}

int tu_fenced_set(sqllock_db *db, int64_t id, int64_t token, int64_t val)
{
    return tu_fenced_write(db, id, token, SQLLOCK_OP_SET, val);
}

int tu_fenced_add(sqllock_db *db, int64_t id, int64_t token)
{
    return tu_fenced_write(db, id, token, SQLLOCK_OP_ADD, 1);
}

void tu_fenced_read(sqllock_db *db, int64_t id, int64_t *val,
                    int64_t *fence)
{
    /* sqllock_table_get() wants a version column: the key does. */
    static const sqllock_table reader = { TU_FENCED_TABLE, "id", "id" };
    static const char *const cols[] = { "val", "fence" };
    sqllock_cell key = SQLLOCK_NUMBER(id);
    int64_t v[2];

    EXPECT_RC(db, sqllock_table_get(db, &reader, &key, cols, 2, v, NULL),
              SQLLOCK_OK, "read the fenced row");
    *val = v[0];
    *fence = v[1];
}

int tu_row_cb(void *ctx, const sqllock_lease_info *info)
{
    tu_row *r = ctx;

    r->rows++;
    if (info->name != NULL && strcmp(info->name, r->want) == 0) {
        r->found++;
        snprintf(r->owner, sizeof r->owner, "%s",
                 info->owner ? info->owner : "(null)");
        snprintf(r->holder, sizeof r->holder, "%s",
                 info->holder ? info->holder : "(null)");
        r->token = info->token;
        r->acquired_at_ms = info->acquired_at_ms;
        r->expires_at_ms = info->expires_at_ms;
        r->remaining_ms = info->remaining_ms;
    }
    return 0;
}

int tu_find(sqllock_db *db, const char *name, tu_row *r)
{
    memset(r, 0, sizeof *r);
    r->want = name;
    return sqllock_list(db, tu_row_cb, r);
}

int64_t tu_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void tu_sleep_ms(int64_t ms)
{
    struct timespec ts;
    ts.tv_sec = (time_t)(ms / 1000);
    ts.tv_nsec = (long)(ms % 1000) * 1000000L;
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

void tu_sleep_us(long us)
{
    struct timespec ts;
    ts.tv_sec = us / 1000000;
    ts.tv_nsec = (us % 1000000) * 1000L;
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

int tu_contains_ci(const char *hay, const char *needle)
{
    size_t n = strlen(needle), i;

    if (hay == NULL)
        return 0;
    for (; *hay != '\0'; hay++) {
        for (i = 0; i < n; i++) {
            if (hay[i] == '\0' ||
                tolower((unsigned char)hay[i]) !=
                    tolower((unsigned char)needle[i]))
                break;
        }
        if (i == n)
            return 1;
    }
    return 0;
}

int tu_is_owner_id(const char *s)
{
    size_t i;

    if (s == NULL || strlen(s) != SQLLOCK_OWNER_LEN)
        return 0;
    for (i = 0; i < SQLLOCK_OWNER_LEN; i++)
        if (!isxdigit((unsigned char)s[i]))
            return 0;
    return 1;
}

void tu_report_driver(const char *unit, const char *driver)
{
    const char *path = getenv("SQLLOCK_TEST_REPORT");
    FILE *fp;

    (void)unit;
    if (path == NULL || *path == '\0' || driver == NULL)
        return;
    fp = fopen(path, "a");
    if (fp != NULL) {
        const char *entry = getenv("SQLLOCK_TEST_UNIT");
        /* As ctest gives it (reaper_P2), not as the database names take
         * it (tu_unit_name() folds it to lower case). */
        fprintf(fp, "%s %s\n", entry != NULL && *entry != '\0'
                                    ? entry : tu_unit_name(), driver);
        fclose(fp);
    }
}

int tu_empty_target_reset(sqllock_db *db)
{
    const char *drv = sqllock_db_driver(db);
    int rc;

    if (strcmp(drv, "postgres") == 0) {
        rc = sqllock__exec_sql(db, "DROP SCHEMA IF EXISTS " TU_EMPTY_NAME
                               " CASCADE", NULL, 0, NULL, NULL, NULL);
        if (rc == SQLLOCK_OK)
            rc = sqllock__exec_sql(db, "CREATE SCHEMA " TU_EMPTY_NAME, NULL,
                                   0, NULL, NULL, NULL);
        return rc;
    }
    if (strcmp(drv, "mysql") == 0) {
        char sql[120];
        snprintf(sql, sizeof sql, "DROP DATABASE IF EXISTS `%s`",
                 tu_empty_mysql);
        rc = sqllock__exec_sql(db, sql, NULL, 0, NULL, NULL, NULL);
        snprintf(sql, sizeof sql, "CREATE DATABASE `%s`", tu_empty_mysql);
        if (rc == SQLLOCK_OK)
            rc = sqllock__exec_sql(db, sql, NULL, 0, NULL, NULL, NULL);
        return rc;
    }
    return SQLLOCK_OK;
}

int tu_empty_target(sqllock_db *db, const char *url,
                                  const char *dir, char *out, size_t size,
                                  char *why, size_t why_size)
{
    const char *drv = sqllock_db_driver(db);
    int rc;

    why[0] = '\0';
    if (strcmp(drv, "sqlite") == 0) {
        static unsigned n;
        snprintf(out, size, "sqlite://%s/empty-%u.db", dir, n++);
        return 1;
    }
    if (strcmp(drv, "postgres") == 0 && tu_url_pooled(url)) {
        snprintf(why, why_size, "the empty target is reached with the "
                 "options startup parameter, which PgBouncer refuses");
        return 0;
    }
    if (strcmp(drv, "postgres") == 0) {
        snprintf(out, size, "%s%coptions=-csearch_path%%3D" TU_EMPTY_NAME,
                 url, strchr(url, '?') != NULL ? '&' : '?');
    } else if (strcmp(drv, "mysql") == 0) {
        const char *host = strstr(url, "://");
        const char *slash = host != NULL ? strchr(host + 3, '/') : NULL;
        const char *query;
        if (slash == NULL) {
            snprintf(why, why_size, "the URL names no database to replace");
            return 0;
        }
        query = strchr(slash, '?');
        snprintf(tu_empty_mysql, sizeof tu_empty_mysql, "%s", TU_EMPTY_NAME);
        if (tu_db_tag() != NULL) {
            const char *tag = tu_db_tag();
            if (snprintf(tu_empty_mysql, sizeof tu_empty_mysql, "%s_%s_%s",
                         *tag ? tag : "u", tu_unit_name(), TU_EMPTY_NAME)
                > 64) {
                snprintf(why, why_size, "%s is longer than 64 bytes",
                         tu_empty_mysql);
                return 0;
            }
        }
        snprintf(out, size, "%.*s/%s%s", (int)(slash - url), url,
                 tu_empty_mysql, query != NULL ? query : "");
    } else {
        snprintf(why, why_size, "no empty target for driver %s", drv);
        return 0;
    }
    rc = tu_empty_target_reset(db);
    if (rc != SQLLOCK_OK) {
        snprintf(why, why_size, "the empty target %s is not available on "
                 "this server (%s: %s); scripts/servers.sh makes it",
                 strcmp(drv, "mysql") == 0 ? tu_empty_mysql : TU_EMPTY_NAME,
                 sqllock_errname(rc), sqllock_errmsg(db));
        return 0;
    }
    return 1;
}

int tu_get_var(const char *text, const char *key, char *val,
                             size_t size)
{
    size_t klen = strlen(key);
    const char *p = text;

    while (p != NULL && *p != '\0') {
        if (strncmp(p, key, klen) == 0 && p[klen] == '=') {
            const char *v = p + klen + 1;
            size_t n = strcspn(v, "\n");
            if (n >= 2 && (v[0] == '\'' || v[0] == '"') && v[n - 1] == v[0]) {
                v++;
                n -= 2;
            }
            if (n >= size)
                return 0;
            memcpy(val, v, n);
            val[n] = '\0';
            return 1;
        }
        p = strchr(p, '\n');
        if (p != NULL)
            p++;
    }
    return 0;
}

int tu_counter_inc(void *ctx, const void *old, size_t old_len,
                   const void **out, size_t *out_len)
{
    tu_counter *c = ctx;
    char tmp[32];
    long long v = 0;

    if (old != NULL && old_len > 0 && old_len < sizeof tmp) {
        memcpy(tmp, old, old_len);
        tmp[old_len] = '\0';
        v = atoll(tmp);
    }
    snprintf(c->buf, sizeof c->buf, "%lld", v + 1);
    *out = c->buf;
    *out_len = strlen(c->buf);
    return SQLLOCK_OK;
}
