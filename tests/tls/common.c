/*
 * common.c -- test_tls: the fixture of scripts/tls.sh (its certificates
 * and ports, read from $SQLLOCK_TEST_TLS_DIR/env), the URLs on its
 * servers, opening a URL that must work or must fail with a given
 * message, one-value queries, a lease round trip and the files the test
 * writes (tls.h).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "test_util.h"
#include "test_run.h"
#include "test_spawn.h"
#include "sqllock_driver.h"
#include "tls.h"

/* The fixture (scripts/tls.sh): its certificates and ports. */
char g_certs[1024];
int g_pg_port, g_my_port;
/* Files this test writes (option files, a HOME). */
char *g_tmp;

const char *tl_cert(const char *file)
{
    static char buf[4][1200];
    static int i;

    i = (i + 1) % 4;
    snprintf(buf[i], sizeof buf[i], "%s/%s", g_certs, file);
    return buf[i];
}

/* "mysql://LOGINHOST:PORT/sqllock_test?PARAMS", PARAMS printf-style. */
const char *tl_my_url(const char *login, const char *host,
                      const char *fmt, ...)
{
    static char url[3000];
    char params[2500];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(params, sizeof params, fmt, ap);
    va_end(ap);
    snprintf(url, sizeof url, "mysql://%s%s:%d/sqllock_test%s%s", login,
             host, g_my_port, params[0] ? "?" : "", params);
    return url;
}

const char *tl_pg_url(const char *login, const char *host,
                      const char *fmt, ...)
{
    static char url[3000];
    char params[2500];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(params, sizeof params, fmt, ap);
    va_end(ap);
    snprintf(url, sizeof url, "postgres://%s%s:%d/sqllock_test%s%s", login,
             host, g_pg_port, params[0] ? "?" : "", params);
    return url;
}

sqllock_db *tl_open_ok(const char *url)
{
    sqllock_db *db = NULL;
    int rc = sqllock_open(url, NULL, &db);

    if (rc != SQLLOCK_OK) {
        char msg[600];
        snprintf(msg, sizeof msg, "%s", sqllock_errmsg(db));
        sqllock_close(db);
        fail_msg("open %s: %s: %s", url, sqllock_errname(rc), msg);
    }
    return db;
}

/* Opens `url`, which must fail with `want` and a message that contains
 * each of the NULL-terminated words (ASCII case ignored) and never
 * `secret` (exactly). */
void tl_open_fails(const char *url, int want, const char *secret, ...)
{
    sqllock_db *db = NULL;
    char msg[600];
    const char *word;
    va_list ap;
    int rc = sqllock_open(url, NULL, &db);

    char *shown = sqllock__url_redact(url);

    snprintf(msg, sizeof msg, "%s", sqllock_errmsg(db));
    sqllock_close(db);
    printf("    %s -> %s: %s\n", shown != NULL ? shown : "",
           sqllock_errname(rc), msg);
    free(shown);
    if (rc != want)
        fail_msg("open %s: %s, want %s (%s)", url, sqllock_errname(rc),
                 sqllock_errname(want), msg);
    if (secret != NULL && strstr(msg, secret) != NULL)
        fail_msg("the message shows the password %s: %s", secret, msg);
    va_start(ap, secret);
    while ((word = va_arg(ap, const char *)) != NULL) {
        if (!tu_contains_ci(msg, word)) {
            va_end(ap);
            fail_msg("open %s: the message does not say \"%s\": %s", url,
                     word, msg);
        }
    }
    va_end(ap);
}

/* The first column of the first row of `sql` as an integer. */
int64_t tl_q1(sqllock_db *db, const char *sql)
{
    int64_t v = 0;
    int has_row = 0;
    int rc = sqllock__exec_sql(db, sql, NULL, 0, &has_row, &v, NULL);

    if (rc != SQLLOCK_OK || !has_row)
        fail_msg("%s: %s (%s)", sql, sqllock_errname(rc), sqllock_errmsg(db));
    return v;
}

/* A grant and a release on `db`: the library works over the connection. */
void tl_lease_round_trip(sqllock_db *db, const char *name)
{
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_lease *l = NULL;

    o.ttl_ms = 30000;
    assert_int_equal(sqllock_lease_new(db, name, &o, &l), SQLLOCK_OK);
    if (sqllock_lease_try_acquire(l) != SQLLOCK_OK)
        fail_msg("acquire %s: %s", name, sqllock_errmsg(db));
    assert_true(sqllock_lease_token(l) > 0);
    if (sqllock_lease_release(l) != SQLLOCK_OK)
        fail_msg("release %s: %s", name, sqllock_errmsg(db));
    sqllock_lease_free(l);
}

/* Writes `text` to g_tmp/name with mode `mode`; returns the path. */
const char *tl_write_file(const char *name, int mode, const char *text)
{
    static char path[2][1200];
    static int i;
    FILE *fp;

    i = (i + 1) % 2;
    snprintf(path[i], sizeof path[i], "%s/%s", g_tmp, name);
    fp = fopen(path[i], "w");
    assert_non_null(fp);
    fputs(text, fp);
    fclose(fp);
    assert_int_equal(chmod(path[i], (mode_t)mode), 0);
    return path[i];
}

/* ------------------------------------------------------------------ */

/* Reads DIR/env of scripts/tls.sh; 1 when the fixture is there. */
int tl_load_fixture(char *why, size_t why_size)
{
    const char *dir = getenv("SQLLOCK_TEST_TLS_DIR");
    char path[1100], env[4096], port[32];

    if (dir == NULL || *dir == '\0') {
        snprintf(why, why_size, "SQLLOCK_TEST_TLS_DIR is not set (start the "
                 "servers with scripts/tls.sh start DIR)");
        return 0;
    }
    snprintf(path, sizeof path, "%s/env", dir);
    if (tu_read_file(path, env, sizeof env) == 0 ||
        !tu_get_var(env, "SQLLOCK_TEST_TLS_CERTS", g_certs, sizeof g_certs) ||
        !tu_get_var(env, "SQLLOCK_TEST_TLS_PG_PORT", port, sizeof port) ||
        (g_pg_port = atoi(port)) <= 0 ||
        !tu_get_var(env, "SQLLOCK_TEST_TLS_MY_PORT", port, sizeof port) ||
        (g_my_port = atoi(port)) <= 0) {
        snprintf(why, why_size, "%s is missing or incomplete (did "
                 "scripts/tls.sh start %s succeed?)", path, dir);
        return 0;
    }
    return 1;
}
