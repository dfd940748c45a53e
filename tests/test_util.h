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
    int filtered;              /* URLs SQLLOCK_TEST_DRIVER left out */
} tu_urls;

static inline char *tu_strdup(const char *s)
{
    char *r = malloc(strlen(s) + 1);
    if (r != NULL)
        strcpy(r, s);
    return r;
}

static inline const char *tu_url_driver(const char *url);
static inline void tu_urls_free(tu_urls *u);

/*
 * Isolation for parallel runs (ctest -j; scripts/test.sh). Three
 * variables, all optional:
 *
 *   SQLLOCK_TEST_DRIVER=D      only the URLs of driver D (sqlite, postgres,
 *                              mysql) are tested: ctest has one entry per
 *                              unit and driver, test_<unit>_<driver>
 *                              (tests/CMakeLists.txt sets it)
 *   SQLLOCK_TEST_DB_PER_UNIT=TAG
 *                              every unit gets its own database on each
 *                              server: a URL's database DB becomes
 *                              TAG_UNIT_DB (u_UNIT_DB when TAG is 1),
 *                              created when missing -- the user needs
 *                              CREATEDB on PostgreSQL, and on MySQL all
 *                              rights on `%\_DB` (scripts/servers.sh grants
 *                              both; the name ends with DB so that no name
 *                              with more after it is granted, which
 *                              test_hostile relies on) -- and a SQLite
 *                              file F.db becomes F-TAG-UNIT.db.
 *                              Unset, empty or 0: the URLs as given.
 *                              Units (and builds, by their TAG) that share
 *                              no database can run at the same time;
 *                              what is server-wide stays serial in ctest.
 *   SQLLOCK_TEST_UNIT=U        the unit's name in those database names
 *                              (ctest sets it; default: the program's name
 *                              without "test_")
 */

/* The unit's name: lower-case letters, digits and '_', at most 31. */
static inline const char *tu_unit_name(void)
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

/* SQLLOCK_TEST_DB_PER_UNIT: NULL when off, "" for 1, else the tag
 * (letters and digits only; anything else turns it off with a
 * message). */
static inline const char *tu_db_tag(void)
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

/* Rewrites `url` into out[] for its unit's own database (see above).
 * Returns 0, or -1 with the reason in why[]. */
static inline int tu_url_per_unit(const char *url, const char *tag,
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

/* The database name of a server URL (PostgreSQL, MySQL) into out[]. */
static inline void tu_url_dbname(const char *url, char *out, size_t size)
{
    const char *a = strstr(url, "://");
    const char *db = a != NULL ? strchr(a + 3, '/') : NULL;
    size_t n = db != NULL ? strcspn(db + 1, "?") : 0;

    snprintf(out, size, "%.*s", (int)n, db != NULL ? db + 1 : "");
}

/* Creates the database of `unit_url` when missing, connecting with
 * `base_url` (the URL as given, whose database exists). 0, or -1 with
 * the reason in why[]. */
static inline int tu_unit_db_create(const char *base_url, const char *unit_url,
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

/* Fills `u` from SQLLOCK_TEST_URLS (space-separated), or, when that is
 * unset or blank, with one fresh temporary SQLite file; then applies
 * SQLLOCK_TEST_DRIVER and SQLLOCK_TEST_DB_PER_UNIT (above). Returns 0, or
 * -1 (saying why on stderr, with `u` emptied) when a temporary directory
 * or a unit's database cannot be made. */
static inline int tu_urls_load_(tu_urls *u);
static inline int tu_urls_load(tu_urls *u)
{
    if (tu_urls_load_(u) == 0)
        return 0;
    tu_urls_free(u);
    return -1;
}

static inline int tu_urls_load_(tu_urls *u)
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

/* 1 when the driver name `p` (len bytes; "postgresql" and "mariadb" are
 * aliases) is `driver`. */
static inline int tu_driver_is(const char *p, size_t len, const char *driver)
{
    if (strlen(driver) == len && strncmp(p, driver, len) == 0)
        return 1;
    if (len == 10 && strncmp(p, "postgresql", 10) == 0)
        return strcmp(driver, "postgres") == 0;
    if (len == 7 && strncmp(p, "mariadb", 7) == 0)
        return strcmp(driver, "mysql") == 0;
    return 0;
}

/* Checks SQLLOCK_TEST_REQUIRE (comma-separated driver names) against the
 * URL list. Returns 0 when every required driver has a URL; otherwise
 * writes the first missing driver into missing[] and returns -1. A
 * driver that is required but not tested is a failed run, never a skip.
 * With SQLLOCK_TEST_DRIVER only that driver is checked (the entries of
 * the other drivers check theirs). */
static inline int tu_check_required(const tu_urls *u, char *missing,
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
 * sqllock_empty (with SQLLOCK_TEST_DB_PER_UNIT, the unit's database name
 * followed by _empty); scripts/servers.sh makes both or lets the sqllock
 * user create them, and that user may drop and re-create them. On SQLite,
 * a fresh file in `dir`. */
#define TU_EMPTY_NAME "sqllock_empty"

/* The MySQL database that tu_empty_target() last chose: sqllock_empty, or
 * with SQLLOCK_TEST_DB_PER_UNIT the unit's own, TAG_UNIT_sqllock_empty
 * (a database is server-wide on MySQL, so units running at once each
 * need their own). */
static char tu_empty_mysql[72] = TU_EMPTY_NAME;

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
