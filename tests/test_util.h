/*
 * test_util.h -- helpers shared by the sqllock tests: temporary
 * directories, the list of database URLs the driver-neutral tests run on,
 * the few statements of the tests' own that differ per driver, and a
 * lookup of one row through sqllock_list().
 *
 * Everything here is `static inline` so that each test file takes only
 * what it uses. Include <cmocka.h> (with its prerequisites) first.
 */
#ifndef SQLLOCK_TEST_UTIL_H
#define SQLLOCK_TEST_UTIL_H

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "sqllock.h"

/* ------------------------------------------------------------------ */
/* Temporary directories                                               */
/* ------------------------------------------------------------------ */

/* Makes a fresh directory under $TMPDIR (or /tmp); returns a malloc'd
 * path or NULL. */
static inline char *tu_mkdtemp(void)
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

/* Removes the files in `dir` (not recursive: the tests make only files
 * there) and the directory itself. */
static inline void tu_rmdir(const char *dir)
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

/* ------------------------------------------------------------------ */
/* URLs to test against                                                */
/* ------------------------------------------------------------------ */

#define TU_MAX_URLS 16

typedef struct tu_urls {
    int n;
    char *url[TU_MAX_URLS];
    char *tmpdir;              /* made when SQLLOCK_TEST_URLS is unset */
} tu_urls;

static inline char *tu_strdup(const char *s)
{
    char *r = malloc(strlen(s) + 1);
    if (r != NULL)
        strcpy(r, s);
    return r;
}

/* Fills `u` from SQLLOCK_TEST_URLS (space-separated), or, when that is
 * unset or blank, with one fresh temporary SQLite file. Returns 0, or -1
 * when a temporary directory cannot be made. */
static inline int tu_urls_load(tu_urls *u)
{
    const char *env = getenv("SQLLOCK_TEST_URLS");
    char buf[4200];

    memset(u, 0, sizeof *u);
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
    if (u->n == 0) {
        u->tmpdir = tu_mkdtemp();
        if (u->tmpdir == NULL)
            return -1;
        snprintf(buf, sizeof buf, "sqlite://%s/locks.db", u->tmpdir);
        u->url[0] = tu_strdup(buf);
        if (u->url[0] == NULL)
            return -1;
        u->n = 1;
    }
    return 0;
}

/* 1 when `url` goes through a connection pooler (pooler= other than
 * none, tests/pooled.sh): the server connection is the pooler's, so
 * backend ids, startup options and application names are not the
 * client's own. */
static inline int tu_url_pooled(const char *url)
{
    const char *p = strstr(url, "pooler=");

    return p != NULL && (p[-1] == '?' || p[-1] == '&') &&
           strncmp(p + 7, "none", 4) != 0;
}

static inline void tu_urls_free(tu_urls *u)
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

/* The driver a URL's scheme names ("sqlite", "postgres", "mysql"), or
 * NULL for a scheme sqllock does not ship. Used only to check
 * SQLLOCK_TEST_REQUIRE before anything is opened. */
static inline const char *tu_url_driver(const char *url)
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

/* Checks SQLLOCK_TEST_REQUIRE (comma-separated driver names) against the
 * URL list. Returns 0 when every required driver has a URL; otherwise
 * writes the first missing driver into missing[] and returns -1. A
 * driver that is required but not tested is a failed run, never a skip. */
static inline int tu_check_required(const tu_urls *u, char *missing,
                                    size_t missing_size)
{
    const char *req = getenv("SQLLOCK_TEST_REQUIRE");
    const char *p = req;

    if (req == NULL)
        return 0;
    while (*p != '\0') {
        size_t len;
        int i, found = 0;
        while (*p == ',' || *p == ' ')
            p++;
        len = strcspn(p, ", ");
        if (len == 0)
            break;
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

/* ------------------------------------------------------------------ */
/* The tests' own SQL, per driver                                      */
/* ------------------------------------------------------------------ */

/* The placeholders and DDL differ per database; lock logic never lives
 * here, only the few statements the tests run to set up or to sabotage
 * (delete a lease row by hand). */
typedef struct tu_sql {
    const char *driver;
    const char *delete_lease;     /* 1 name */
    const char *counter_ddl;
    const char *counter_insert;   /* 1 id */
    const char *counter_read;     /* 1 id -> value */
    const char *counter_write;    /* 1 value, 2 id */
    const char *counter_delete;   /* 1 id */
} tu_sql;

static inline const tu_sql *tu_sql_for(const char *driver)
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

/* The application table of the fenced-write tests (test_faults,
 * test_soak): the row keeps the largest token that wrote it. The same
 * DDL runs on all three; its name is not test_reaper's sqllock_test_fenced,
 * which has other columns. */
#define TU_FENCED_TABLE "sqllock_test_fenced_write"
static const char TU_FENCED_DDL[] =
    "CREATE TABLE IF NOT EXISTS " TU_FENCED_TABLE " ("
    "id BIGINT PRIMARY KEY, val BIGINT NOT NULL, fence BIGINT, "
    "ver BIGINT NOT NULL DEFAULT 0)";

/* INSERT of a new row (1 id; val 0, no fence yet) in `driver`'s
 * placeholders. */
static inline const char *tu_fenced_insert(const char *driver)
{
    return strcmp(driver, "postgres") == 0
        ? "INSERT INTO " TU_FENCED_TABLE " (id, val) VALUES ($1, 0)"
        : "INSERT INTO " TU_FENCED_TABLE " (id, val) VALUES (?, 0)";
}

/* ------------------------------------------------------------------ */
/* Looking at the lease table                                          */
/* ------------------------------------------------------------------ */

typedef struct tu_row {
    const char *want;          /* the name looked for */
    int found;
    int rows;                  /* all rows seen */
    char owner[SQLLOCK_OWNER_LEN + 8];
    char holder[SQLLOCK_HOLDER_MAX + 8];
    int64_t token;
    int64_t acquired_at_ms;
    int64_t expires_at_ms;
    int64_t remaining_ms;
} tu_row;

static inline int tu_row_cb(void *ctx, const sqllock_lease_info *info)
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

/* Looks `name` up through sqllock_list(); returns sqllock_list's status.
 * r->found counts rows with exactly that name (so 0 or 1). */
static inline int tu_find(sqllock_db *db, const char *name, tu_row *r)
{
    memset(r, 0, sizeof *r);
    r->want = name;
    return sqllock_list(db, tu_row_cb, r);
}

/* ------------------------------------------------------------------ */
/* Small things                                                        */
/* ------------------------------------------------------------------ */

static inline int64_t tu_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static inline void tu_sleep_ms(int64_t ms)
{
    struct timespec ts;
    ts.tv_sec = (time_t)(ms / 1000);
    ts.tv_nsec = (long)(ms % 1000) * 1000000L;
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

static inline void tu_sleep_us(long us)
{
    struct timespec ts;
    ts.tv_sec = us / 1000000;
    ts.tv_nsec = (us % 1000000) * 1000L;
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* 1 if `hay` contains `needle`, ignoring ASCII case. */
static inline int tu_contains_ci(const char *hay, const char *needle)
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

/* 1 if `s` is exactly SQLLOCK_OWNER_LEN hexadecimal digits. */
static inline int tu_is_owner_id(const char *s)
{
    size_t i;

    if (s == NULL || strlen(s) != SQLLOCK_OWNER_LEN)
        return 0;
    for (i = 0; i < SQLLOCK_OWNER_LEN; i++)
        if (!isxdigit((unsigned char)s[i]))
            return 0;
    return 1;
}

/* ------------------------------------------------------------------ */
/* Which drivers ran                                                   */
/* ------------------------------------------------------------------ */

/* Appends "UNIT DRIVER" to the file named by SQLLOCK_TEST_REPORT, if set.
 * A test calls it once a driver's group has passed, so that
 * scripts/test.sh can say which drivers were really tested (and fail a
 * run that left a required one out). */
static inline void tu_report_driver(const char *unit, const char *driver)
{
    const char *path = getenv("SQLLOCK_TEST_REPORT");
    FILE *fp;

    if (path == NULL || *path == '\0' || driver == NULL)
        return;
    fp = fopen(path, "a");
    if (fp != NULL) {
        fprintf(fp, "%s %s\n", unit, driver);
        fclose(fp);
    }
}

/* ------------------------------------------------------------------ */
/* An empty target: a database without the sqllock tables              */
/* ------------------------------------------------------------------ */

/* The empty targets: on PostgreSQL the schema sqllock_empty in the test
 * database (reached with search_path), on MySQL/MariaDB the database
 * sqllock_empty; scripts/servers.sh makes both, and the sqllock user may
 * drop and re-create them. On SQLite, a fresh file in `dir`. */
#define TU_EMPTY_NAME "sqllock_empty"

/* Empties the empty target again (drops it and creates it afresh) through
 * `db`, a handle on the test database itself (not on the empty target).
 * Returns the status of the failing statement, or SQLLOCK_OK. */
static inline int tu_empty_target_reset(sqllock_db *db)
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
        rc = sqllock__exec_sql(db, "DROP DATABASE IF EXISTS " TU_EMPTY_NAME,
                               NULL, 0, NULL, NULL, NULL);
        if (rc == SQLLOCK_OK)
            rc = sqllock__exec_sql(db, "CREATE DATABASE " TU_EMPTY_NAME,
                                   NULL, 0, NULL, NULL, NULL);
        return rc;
    }
    return SQLLOCK_OK;
}

/* Makes the URL of an empty target next to `url` (whose open handle is
 * `db`) in out[], emptied and ready. Returns 1 when it is ready; 0 when
 * this database offers none (the user may not create the schema or
 * database), with the reason in why[] for a clear skip message. */
static inline int tu_empty_target(sqllock_db *db, const char *url,
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
        snprintf(out, size, "%.*s/" TU_EMPTY_NAME "%s", (int)(slash - url),
                 url, query != NULL ? query : "");
    } else {
        snprintf(why, why_size, "no empty target for driver %s", drv);
        return 0;
    }
    rc = tu_empty_target_reset(db);
    if (rc != SQLLOCK_OK) {
        snprintf(why, why_size, "the empty target %s is not available on "
                 "this server (%s: %s); scripts/servers.sh makes it",
                 TU_EMPTY_NAME, sqllock_errname(rc), sqllock_errmsg(db));
        return 0;
    }
    return 1;
}

/* In the output of `sqllock acquire`: finds "KEY=value" at the start of a
 * line of `text` and copies the value, without surrounding single or
 * double quotes, into val. */
static inline int tu_get_var(const char *text, const char *key, char *val,
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

#endif /* SQLLOCK_TEST_UTIL_H */
