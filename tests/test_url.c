/*
 * test_url.c -- the URL parser the drivers rely on (DESIGN D2, E2) and the
 * redaction that keeps passwords out of messages.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "test_util.h"

static sqllock_url *parse_ok(const char *text)
{
    sqllock_url *u = NULL;
    char why[256] = "";
    int rc = sqllock__url_parse(text, &u, why, sizeof why);

    if (rc != SQLLOCK_OK || u == NULL)
        fail_msg("url_parse(\"%s\") = %s (%s); want SQLLOCK_OK", text,
                 sqllock_errname(rc), why);
    return u;
}

static const char *param(const sqllock_url *u, const char *key)
{
    int i;

    for (i = 0; i < u->nparams; i++)
        if (strcmp(u->keys[i], key) == 0)
            return u->values[i];
    return NULL;
}

static void test_url_full_postgres(void **state)
{
    sqllock_url *u = parse_ok(
        "postgres://alice:pa%40ss%3Aw0rd@db.example.com:5433/my%20db"
        "?sslmode=require&application_name=lock%20test");
    (void)state;

    assert_string_equal(u->scheme, "postgres");
    assert_int_equal(u->has_authority, 1);
    assert_string_equal(u->user, "alice");
    assert_string_equal(u->password, "pa@ss:w0rd");
    assert_string_equal(u->host, "db.example.com");
    assert_int_equal(u->port, 5433);
    assert_string_equal(u->path, "/my db");
    assert_int_equal(u->nparams, 2);
    assert_string_equal(param(u, "sslmode"), "require");
    assert_string_equal(param(u, "application_name"), "lock test");
    assert_non_null(u->raw);
    sqllock__url_free(u);
}

static void test_url_user_without_password(void **state)
{
    sqllock_url *u = parse_ok("mysql://bob@localhost");
    (void)state;

    assert_string_equal(u->scheme, "mysql");
    assert_string_equal(u->user, "bob");
    assert_null(u->password);
    assert_string_equal(u->host, "localhost");
    assert_int_equal(u->port, 0);
    assert_string_equal(u->path, "");
    assert_int_equal(u->nparams, 0);
    sqllock__url_free(u);
}

static void test_url_host_port_only(void **state)
{
    sqllock_url *u = parse_ok("MariaDB://127.0.0.1:3306/test");
    (void)state;

    assert_string_equal(u->scheme, "mariadb");      /* lower-cased */
    assert_null(u->user);
    assert_null(u->password);
    assert_string_equal(u->host, "127.0.0.1");
    assert_int_equal(u->port, 3306);
    assert_string_equal(u->path, "/test");
    sqllock__url_free(u);
}

static void test_url_sqlite_forms(void **state)
{
    sqllock_url *u;
    (void)state;

    u = parse_ok("sqlite:///var/lib/app/locks.db");
    assert_string_equal(u->scheme, "sqlite");
    assert_int_equal(u->has_authority, 1);
    assert_null(u->host);
    assert_null(u->user);
    assert_string_equal(u->path, "/var/lib/app/locks.db");
    sqllock__url_free(u);

    u = parse_ok("sqlite:relative/locks.db");
    assert_string_equal(u->scheme, "sqlite");
    assert_int_equal(u->has_authority, 0);
    assert_null(u->host);
    assert_null(u->user);
    assert_null(u->password);
    assert_int_equal(u->port, 0);
    assert_string_equal(u->path, "relative/locks.db");
    sqllock__url_free(u);

    u = parse_ok("sqlite:///tmp/with%20space.db?mode=rwc");
    assert_string_equal(u->path, "/tmp/with space.db");
    assert_int_equal(u->nparams, 1);
    assert_string_equal(param(u, "mode"), "rwc");
    sqllock__url_free(u);
}

static void test_url_ipv6_host(void **state)
{
    sqllock_url *u = parse_ok("postgres://u:p@[::1]:5432/db");
    (void)state;

    assert_string_equal(u->host, "::1");
    assert_int_equal(u->port, 5432);
    sqllock__url_free(u);
}

/* D2: a host list is kept whole, decoded, for the driver to split (the
 * MySQL driver tries its hosts in order; libpq reads `raw`); the port is
 * then 0, each host carrying its own. */
static void test_url_host_list_kept_whole(void **state)
{
    sqllock_url *u = parse_ok("mysql://u:p%40ss@h1:3306,[::1]:3307,h3/db"
                              "?ssl_mode=REQUIRED");
    (void)state;

    assert_string_equal(u->user, "u");
    assert_string_equal(u->password, "p@ss");
    assert_string_equal(u->host, "h1:3306,[::1]:3307,h3");
    assert_int_equal(u->port, 0);
    assert_string_equal(u->path, "/db");
    assert_int_equal(u->nparams, 1);
    sqllock__url_free(u);
}

typedef struct bad_url {
    const char *text;
    const char *why_has;       /* a word the reason must contain */
} bad_url;

/* E2: malformed URLs are SQLLOCK_EURL, with a reason that names the part. */
static void test_url_E2_bad_urls_rejected(void **state)
{
    static const bad_url cases[] = {
        { "", "empty" },
        { "noscheme", "scheme" },
        { "://host/db", "scheme" },
        { "1pg://host/db", "scheme" },
        { "postgres://host:99999/db", "port" },
        { "postgres://host:0/db", "port" },
        { "postgres://host:abc/db", "port" },
        { "postgres://host:-1/db", "port" },
        { "postgres://host:5432x/db", "port" },
        { "postgres://u:p%zz@host/db", "escape" },
        { "postgres://u:p%4@host/db", "escape" },
        { "postgres://u:p%@host/db", "escape" },
        { "postgres://host/db%G1", "escape" },
        { "postgres://host/db?x=%2", "escape" },
        { "postgres://u:p%00x@host/db", "NUL" },
        { "postgres://[::1/db", "[" },
        { "postgres://host/db\n", "control" },
    };
    size_t i;
    (void)state;

    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sqllock_url *u = (sqllock_url *)(uintptr_t)1;
        char why[256] = "";
        int rc = sqllock__url_parse(cases[i].text, &u, why, sizeof why);
        if (rc != SQLLOCK_EURL)
            fail_msg("url_parse(\"%s\") = %s; want SQLLOCK_EURL",
                     cases[i].text, sqllock_errname(rc));
        assert_null(u);
        if (!tu_contains_ci(why, cases[i].why_has))
            fail_msg("url_parse(\"%s\"): reason \"%s\" does not mention "
                     "\"%s\"", cases[i].text, why, cases[i].why_has);
    }
}

static void test_url_free_null(void **state)
{
    (void)state;
    sqllock__url_free(NULL);
}

static void test_url_redact_hides_password(void **state)
{
    char *r;
    (void)state;

    /* A public parameter's value stays; an unknown one's is hidden, as
     * it may be a misspelt password (issue 14), and its name stays. */
    r = sqllock__url_redact("postgres://alice:s3cret@db:5432/app"
                            "?sslmode=require&x=1");
    assert_non_null(r);
    assert_null(strstr(r, "s3cret"));
    assert_non_null(strstr(r, "alice"));
    assert_non_null(strstr(r, "***"));
    assert_string_equal(r, "postgres://alice:***@db:5432/app"
                           "?sslmode=require&x=***");
    free(r);

    /* An encoded password is hidden too, and an '@' inside it. */
    r = sqllock__url_redact("mysql://bob:p%40ss@w0rd@host/db");
    assert_non_null(r);
    assert_null(strstr(r, "p%40ss"));
    assert_null(strstr(r, "w0rd"));
    assert_non_null(strstr(r, "host/db"));
    free(r);

    /* Nothing to hide: unchanged. */
    r = sqllock__url_redact("postgres://alice@db/app");
    assert_non_null(r);
    assert_string_equal(r, "postgres://alice@db/app");
    free(r);
    r = sqllock__url_redact("sqlite:///tmp/x.db");
    assert_non_null(r);
    assert_string_equal(r, "sqlite:///tmp/x.db");
    free(r);
}

/* sqllock_url_redact() (added in 0.2.0): what the library's messages
 * show, as a string freed with sqllock_free(); NULL arguments. */
static void test_url_public_redact(void **state)
{
    static const char *const urls[] = {
        "postgres://alice:s3cret@db:5432/app?sslmode=require&x=1",
        "mysql://bob:p%40ss@w0rd@host/db",
        "postgres://alice@db/app?password=s3cret",
        "sqlite:///tmp/x.db",
        "not a URL at all",
        "",
    };
    char *r, *want;
    size_t i;
    (void)state;

    for (i = 0; i < sizeof urls / sizeof urls[0]; i++) {
        r = (char *)urls;
        assert_int_equal(sqllock_url_redact(urls[i], &r), SQLLOCK_OK);
        assert_non_null(r);
        want = sqllock__url_redact(urls[i]);
        assert_non_null(want);
        assert_string_equal(r, want);
        assert_null(strstr(r, "s3cret"));
        free(want);
        sqllock_free(r);
    }
    assert_int_equal(sqllock_url_redact("postgres://a:s3cret@h/d", &r),
                     SQLLOCK_OK);
    assert_string_equal(r, "postgres://a:***@h/d");
    sqllock_free(r);
    r = (char *)urls;
    assert_int_equal(sqllock_url_redact(NULL, &r), SQLLOCK_EINVAL);
    assert_null(r);
    assert_int_equal(sqllock_url_redact("sqlite:x.db", NULL), SQLLOCK_EINVAL);
}

/* E1/E2: the message of a failed open never shows the password, even when
 * the URL is malformed (here an unencoded '/' in the password, a common
 * mistake, makes the authority end early). */
static void test_url_open_message_hides_password(void **state)
{
    static const char *const urls[] = {
        "postgres://alice:topsecret@db:99999/app",
        "postgres://alice:top/secret@db/app",
        "mysql://alice:topsecret@db:bad/app",
        "nosuch://alice:topsecret@db/app",
        /* libpq also takes the password as a query parameter. */
        "postgres://alice@db:99999/app?password=topsecret",
    };
    size_t i;
    (void)state;

    for (i = 0; i < sizeof urls / sizeof urls[0]; i++) {
        sqllock_db *db = NULL;
        int rc = sqllock_open(urls[i], NULL, &db);
        char msg[700];

        assert_int_not_equal(rc, SQLLOCK_OK);
        assert_non_null(db);
        snprintf(msg, sizeof msg, "%s", sqllock_errmsg(db));
        sqllock_close(db);
        if (strstr(msg, "secret") != NULL)
            fail_msg("open(\"%s\") = %s: message shows the password: \"%s\"",
                     urls[i], sqllock_errname(rc), msg);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_url_full_postgres),
        cmocka_unit_test(test_url_user_without_password),
        cmocka_unit_test(test_url_host_port_only),
        cmocka_unit_test(test_url_sqlite_forms),
        cmocka_unit_test(test_url_ipv6_host),
        cmocka_unit_test(test_url_host_list_kept_whole),
        cmocka_unit_test(test_url_E2_bad_urls_rejected),
        cmocka_unit_test(test_url_free_null),
        cmocka_unit_test(test_url_redact_hides_password),
        cmocka_unit_test(test_url_public_redact),
        cmocka_unit_test(test_url_open_message_hides_password),
    };
    return cmocka_run_group_tests_name("url", tests, NULL, NULL);
}
