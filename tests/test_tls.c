/*
 * test_tls.c -- TLS to PostgreSQL and MariaDB, MySQL option files, and what
 * the MySQL driver says when a login or a handshake fails (issue 14;
 * DESIGN C4: no password in any message).
 *
 * The first group needs no server: the MySQL option-file reader
 * (drivers/mysql/my_optfile.c) on files made here, and URL checks that fail
 * before any connect. On each MySQL URL of SQLLOCK_TEST_URLS whose server
 * offers no TLS (the main test server), REQUIRED, VERIFY_CA and
 * VERIFY_IDENTITY must refuse to connect. The other groups run on the
 * servers of
 * scripts/tls.sh, started in $SQLLOCK_TEST_TLS_DIR (scripts/test.sh starts
 * them once; by hand: `scripts/tls.sh start DIR`, then
 * `SQLLOCK_TEST_TLS_DIR=DIR build/dev/tests/test_tls`). Their certificate
 * names localhost and 127.0.0.1 only, and both servers also listen on
 * 127.0.0.2: a connection there is a connection under a host name the
 * certificate does not name. Without the fixture those groups are
 * SKIPPED, and the test fails under CI.
 *
 *   PostgreSQL (the URL goes to libpq): sslmode=verify-full with
 *   sslrootcert is TLS (pg_stat_ssl), the wrong CA and the wrong host are
 *   refused, verify-ca does not check the host, sslcert/sslkey log in a
 *   `cert` role.
 *   MariaDB: VERIFY_IDENTITY with ssl_ca is TLS (Ssl_cipher), the wrong CA
 *   and the wrong host are refused with messages that say what was
 *   checked, VERIFY_CA checks the chain and not the host, ssl_ca alone
 *   means VERIFY_CA, a REQUIRE X509 account logs in with ssl_cert/ssl_key,
 *   a REQUIRE SSL account without TLS gets SQLLOCK_EPERM and the TLS hint;
 *   option files give the login and the CA, the URL's values win, the
 *   option_group is read, ~/.my.cnf is read when the URL has no login,
 *   and no password from a file shows in a message.
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
#if defined(SQLLOCK_TEST_MYSQL)
#include "my.h"
#endif

/* The fixture (scripts/tls.sh): its certificates and ports. */
static char g_certs[1024];
static int g_pg_port, g_my_port;
/* Files this test writes (option files, a HOME). */
static char *g_tmp;

/* The fixture's logins (scripts/tls.sh). */
#define PG_LOGIN "sqllock:sqllock-test@"
#define MY_LOGIN "sqllock:sqllock-test@"
#define MY_TLS_USER "sqllock_tls"
#define MY_TLS_PW "sqllock-tls-Pw3"
#define MY_TLS_LOGIN MY_TLS_USER ":" MY_TLS_PW "@"
#define MY_CERT_LOGIN "sqllock_cert:sqllock-cert-Pw5@"

/* Passwords found nowhere else, to look for in messages. */
#define LEAK_PW1 "Zx9-OptLeak-Kw2"
#define LEAK_PW2 "Zx9-OptLeak-Rb7"
#define LEAK_PW3 "Zx9-UrlLeak-Tq4"

static const char *cert(const char *file)
{
    static char buf[4][1200];
    static int i;

    i = (i + 1) % 4;
    snprintf(buf[i], sizeof buf[i], "%s/%s", g_certs, file);
    return buf[i];
}

/* "mysql://LOGINHOST:PORT/sqllock_test?PARAMS", PARAMS printf-style. */
static const char *my_url(const char *login, const char *host,
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

static const char *pg_url(const char *login, const char *host,
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

static sqllock_db *open_ok(const char *url)
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
static void open_fails(const char *url, int want, const char *secret, ...)
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
static int64_t q1(sqllock_db *db, const char *sql)
{
    int64_t v = 0;
    int has_row = 0;
    int rc = sqllock__exec_sql(db, sql, NULL, 0, &has_row, &v, NULL);

    if (rc != SQLLOCK_OK || !has_row)
        fail_msg("%s: %s (%s)", sql, sqllock_errname(rc), sqllock_errmsg(db));
    return v;
}

/* A grant and a release on `db`: the library works over the connection. */
static void lease_round_trip(sqllock_db *db, const char *name)
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
static const char *write_file(const char *name, int mode, const char *text)
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
/* No server: the option-file reader and URL checks                    */
/* ------------------------------------------------------------------ */

#if defined(SQLLOCK_TEST_MYSQL)

/* Reads `text` as an option file (group `group`); the status. */
static int read_opt(const char *text, const char *group, my_optfile *f,
                    sqllock_dberr *err)
{
    const char *path = write_file("t.cnf", 0600, text);

    memset(f, 0, sizeof *f);
    memset(err, 0, sizeof *err);
    return sqllock__my_optfile_read(path, group, 0, f, err);
}

/* MySQL's syntax: quotes, escapes, '#' comments outside quotes, ';' and
 * '#' lines, blanks around '=', '_' for '-', the loose- prefix. */
static void test_mysql_optfile_syntax_as_mysql_reads_it(void **state)
{
    my_optfile f;
    sqllock_dberr err;
    (void)state;

    assert_int_equal(read_opt(
        "# a comment\n"
        "; another\n"
        "\n"
        "[client]\n"
        "  user = alice   # trailing comment\n"
        "password=\"p#ss w\\\"rd\\s\"\n"
        "ssl_ca = '/etc/ca dir/ca.pem'\n"
        "loose-ssl-cert=/c.pem\n"
        "ssl-key=a\\tb\\q\n"
        "ssl-cipher=\n"
        "default-character-set = latin1\n"
        "return-found-rows\n"
        "reconnect = 1\n", NULL, &f, &err), SQLLOCK_OK);
    assert_string_equal(f.user, "alice");
    assert_string_equal(f.password, "p#ss w\"rd ");
    assert_string_equal(f.tls[MY_TLS_CA], "/etc/ca dir/ca.pem");
    assert_string_equal(f.tls[MY_TLS_CERT], "/c.pem");
    assert_string_equal(f.tls[MY_TLS_KEY], "a\tb\\q");
    assert_null(f.tls[MY_TLS_CIPHER]);        /* empty: not set */
    assert_int_equal(f.mode, MY_SSL_DEFAULT);
    assert_int_equal(f.files, 1);
    sqllock__my_optfile_free(&f);

    /* An unquoted '#' ends the value, as in MySQL: quote such a value. */
    assert_int_equal(read_opt("[client]\npassword=ab#cd\n", NULL, &f, &err),
                     SQLLOCK_OK);
    assert_string_equal(f.password, "ab");
    sqllock__my_optfile_free(&f);
    /* An empty password is a password; a bare one (MySQL's "prompt")
     * leaves the earlier one. */
    assert_int_equal(read_opt("[client]\npassword=x\npassword\n", NULL, &f,
                              &err), SQLLOCK_OK);
    assert_string_equal(f.password, "x");
    sqllock__my_optfile_free(&f);
    assert_int_equal(read_opt("[client]\npassword=x\npassword=\n", NULL, &f,
                              &err), SQLLOCK_OK);
    assert_string_equal(f.password, "");
    sqllock__my_optfile_free(&f);
}

/* [client], [client-server], [client-mariadb] and the option_group are
 * read, others not; a later value replaces an earlier one; group names
 * ignore case; ssl-mode and ssl-verify-server-cert set the mode. */
static void test_mysql_optfile_groups_and_order(void **state)
{
    static const char text[] =
        "[client]\n"
        "user=u1\npassword=p1\nssl-mode=REQUIRED\n"
        "[mysqldump]\n"
        "user=dumper\npassword=dump\n"
        "[SQLLOCK]\n"
        "password=p2\nssl-verify-server-cert\n"
        "[client-mariadb]\n"
        "user=u3\n";
    my_optfile f;
    sqllock_dberr err;
    (void)state;

    assert_int_equal(read_opt(text, NULL, &f, &err), SQLLOCK_OK);
    assert_string_equal(f.user, "u3");
    assert_string_equal(f.password, "p1");
    assert_int_equal(f.mode, MY_SSL_REQUIRED);
    sqllock__my_optfile_free(&f);

    assert_int_equal(read_opt(text, "sqllock", &f, &err), SQLLOCK_OK);
    assert_string_equal(f.user, "u3");
    assert_string_equal(f.password, "p2");
    assert_int_equal(f.mode, MY_SSL_VERIFY_IDENTITY);
    sqllock__my_optfile_free(&f);

    assert_int_equal(read_opt("[client]\nssl-mode=verify_ca\n", NULL, &f,
                              &err), SQLLOCK_OK);
    assert_int_equal(f.mode, MY_SSL_VERIFY_CA);
    sqllock__my_optfile_free(&f);
}

/* !include FILE and !includedir DIR (its *.cnf files, in name order);
 * a missing one and a loop are errors. */
static void test_mysql_optfile_include_and_includedir(void **state)
{
    char dir[1200], text[3000];
    my_optfile f;
    sqllock_dberr err;
    const char *inc;
    (void)state;

    snprintf(dir, sizeof dir, "%s/conf.d", g_tmp);
    assert_int_equal(mkdir(dir, 0700), 0);
    write_file("conf.d/20-b.cnf", 0600, "[client]\nuser=from-b\n");
    write_file("conf.d/10-a.cnf", 0600, "[client]\nuser=from-a\n"
               "password=pa\n");
    write_file("conf.d/30-c.txt", 0600, "[client]\nuser=not-read\n");
    inc = write_file("inc.cnf", 0600, "[client]\nssl-ca=/inc/ca.pem\n");
    snprintf(text, sizeof text, "[client]\nuser=main\n!include %s\n"
             "!includedir %s\n", inc, dir);
    assert_int_equal(read_opt(text, NULL, &f, &err), SQLLOCK_OK);
    assert_string_equal(f.user, "from-b");
    assert_string_equal(f.password, "pa");
    assert_string_equal(f.tls[MY_TLS_CA], "/inc/ca.pem");
    assert_int_equal(f.files, 4);
    sqllock__my_optfile_free(&f);
    tu_rmdir(dir);

    assert_int_equal(read_opt("[client]\n!include /nonexistent/x.cnf\n",
                              NULL, &f, &err), SQLLOCK_EURL);
    assert_non_null(strstr(err.msg, "/nonexistent/x.cnf"));
    sqllock__my_optfile_free(&f);
    /* A file that includes itself. */
    snprintf(text, sizeof text, "[client]\n!include %s/t.cnf\n", g_tmp);
    assert_int_equal(read_opt(text, NULL, &f, &err), SQLLOCK_EURL);
    assert_non_null(strstr(err.msg, "nested"));
    sqllock__my_optfile_free(&f);
}

/* Errors name the file and the line, never a value from it; a file anyone
 * may write is refused; a missing ~/.my.cnf reads as empty. */
static void test_mysql_optfile_errors_name_line_not_value(void **state)
{
    my_optfile f;
    sqllock_dberr err;
    const char *path;
    (void)state;

    assert_int_equal(read_opt("password=" LEAK_PW1 "\n[client]\n", NULL, &f,
                              &err), SQLLOCK_EURL);
    printf("    %s\n", err.msg);
    assert_non_null(strstr(err.msg, "line 1"));
    assert_null(strstr(err.msg, LEAK_PW1));
    sqllock__my_optfile_free(&f);

    assert_int_equal(read_opt("[client]\npassword=" LEAK_PW1 "\n"
                              "ssl-mode=" LEAK_PW2 "\n", NULL, &f, &err),
                     SQLLOCK_EURL);
    printf("    %s\n", err.msg);
    assert_non_null(strstr(err.msg, "line 3"));
    assert_null(strstr(err.msg, LEAK_PW1));
    assert_null(strstr(err.msg, LEAK_PW2));
    sqllock__my_optfile_free(&f);

    assert_int_equal(read_opt("[client\npassword=" LEAK_PW1 "\n", NULL, &f,
                              &err), SQLLOCK_EURL);
    assert_non_null(strstr(err.msg, "line 1"));
    sqllock__my_optfile_free(&f);

    path = write_file("open.cnf", 0666, "[client]\npassword=" LEAK_PW1 "\n");
    memset(&f, 0, sizeof f);
    assert_int_equal(sqllock__my_optfile_read(path, NULL, 0, &f, &err),
                     SQLLOCK_EURL);
    printf("    %s\n", err.msg);
    assert_true(tu_contains_ci(err.msg, "written by anyone"));
    assert_null(f.password);
    sqllock__my_optfile_free(&f);

    memset(&f, 0, sizeof f);
    assert_int_equal(sqllock__my_optfile_read("/nonexistent/.my.cnf", NULL, 1,
                                              &f, &err), SQLLOCK_OK);
    assert_int_equal(f.files, 0);
    assert_int_equal(sqllock__my_optfile_read("/nonexistent/.my.cnf", NULL, 0,
                                              &f, &err), SQLLOCK_EURL);
    sqllock__my_optfile_free(&f);
}

/* An unknown parameter is named, its value never shown (C4): the
 * driver's own message, as the driver hands it to the core. (The core
 * puts the URL in front of it, hiding only the parameters it knows to be
 * secret: that half is core/url.c's.) */
static void test_mysql_url_unknown_parameter_names_key_not_value(void **state)
{
    static const char *const urls[] = {
        "mysql://u@127.0.0.1:1/db?pwd=" LEAK_PW3,
        "mysql://u@127.0.0.1:1/db?ssl_mode=REQUIRED&PASSWORD=" LEAK_PW3,
        "mysql://u@127.0.0.1:1/db?sslca=" LEAK_PW3,
    };
    const sqllock_driver *drv = sqllock_driver_find("mysql");
    sqllock_connect_params p;
    size_t i;
    (void)state;

    assert_non_null(drv);
    memset(&p, 0, sizeof p);
    p.connect_timeout_ms = 1000;
    p.statement_timeout_ms = 1000;
    for (i = 0; i < sizeof urls / sizeof urls[0]; i++) {
        sqllock_url *u = NULL;
        sqllock_conn *c = NULL;
        sqllock_dberr err;
        char why[256];

        assert_int_equal(sqllock__url_parse(urls[i], &u, why, sizeof why),
                         SQLLOCK_OK);
        memset(&err, 0, sizeof err);
        assert_int_equal(drv->connect(u, &p, &c, &err), SQLLOCK_EURL);
        assert_null(c);
        printf("    %s\n", err.msg);
        assert_null(strstr(err.msg, LEAK_PW3));
        assert_true(tu_contains_ci(err.msg, "unknown mysql URL parameter"));
        sqllock__url_free(u);
    }
}

/* VERIFY_CA without a CA would verify nothing with MariaDB Connector/C:
 * refused before any connect; empty TLS parameters too. */
static void test_mysql_url_tls_checks_before_connect(void **state)
{
    (void)state;
    open_fails("mysql://u:pw@127.0.0.1:1/db?ssl_mode=VERIFY_CA&option_file=",
               SQLLOCK_EURL, NULL, "VERIFY_CA", "ssl_ca", NULL);
    open_fails("mysql://u:pw@127.0.0.1:1/db?ssl_ca=", SQLLOCK_EURL, NULL,
               "ssl_ca is empty", NULL);
    open_fails("mysql://u:pw@127.0.0.1:1/db?option_group=", SQLLOCK_EURL,
               NULL, "option_group", NULL);
    open_fails("mysql://u:pw@127.0.0.1:1/db?option_file=/nonexistent.cnf",
               SQLLOCK_EURL, NULL, "/nonexistent.cnf", NULL);
}

#endif /* SQLLOCK_TEST_MYSQL */

/* ------------------------------------------------------------------ */
/* PostgreSQL (the URL goes to libpq)                                  */
/* ------------------------------------------------------------------ */

static const char PG_IS_TLS[] =
    "SELECT CASE WHEN ssl THEN 1 ELSE 0 END FROM pg_stat_ssl "
    "WHERE pid = pg_backend_pid()";

static void need_pg(void)
{
    if (sqllock_driver_find("postgres") == NULL)
        tu_cannot_run("this build has no postgres driver");
}

/* verify-full with the CA: a TLS connection, for the DNS name and the IP
 * address the certificate names; the library works over it. */
static void test_tls_pg_verify_full_is_tls(void **state)
{
    sqllock_db *db;
    (void)state;

    need_pg();
    db = open_ok(pg_url(PG_LOGIN, "localhost",
                        "sslmode=verify-full&sslrootcert=%s", cert("ca.crt")));
    assert_int_equal(sqllock_init(db), SQLLOCK_OK);
    assert_int_equal(q1(db, PG_IS_TLS), 1);
    lease_round_trip(db, "tls-pg");
    sqllock_close(db);
    db = open_ok(pg_url(PG_LOGIN, "127.0.0.1",
                        "sslmode=verify-full&sslrootcert=%s", cert("ca.crt")));
    assert_int_equal(q1(db, PG_IS_TLS), 1);
    sqllock_close(db);
    /* The check tells TLS from plain text. */
    db = open_ok(pg_url(PG_LOGIN, "127.0.0.1", "sslmode=disable"));
    assert_int_equal(q1(db, PG_IS_TLS), 0);
    sqllock_close(db);
}

static void test_tls_pg_wrong_ca_refused(void **state)
{
    (void)state;
    need_pg();
    open_fails(pg_url(PG_LOGIN, "localhost",
                      "sslmode=verify-full&sslrootcert=%s",
                      cert("other-ca.crt")),
               SQLLOCK_ECONNECT, "sqllock-test", "certificate verify failed",
               NULL);
}

/* 127.0.0.2 is not in the certificate: verify-full refuses it, verify-ca
 * (the chain only) does not. */
static void test_tls_pg_wrong_host_refused_verify_ca_passes(void **state)
{
    sqllock_db *db;
    (void)state;

    need_pg();
    open_fails(pg_url(PG_LOGIN, "127.0.0.2",
                      "sslmode=verify-full&sslrootcert=%s", cert("ca.crt")),
               SQLLOCK_ECONNECT, "sqllock-test", "does not match host name",
               NULL);
    db = open_ok(pg_url(PG_LOGIN, "127.0.0.2",
                        "sslmode=verify-ca&sslrootcert=%s", cert("ca.crt")));
    assert_int_equal(q1(db, PG_IS_TLS), 1);
    sqllock_close(db);
}

/* sslcert and sslkey: the role sqllock_cert logs in with its certificate
 * alone (pg_hba `cert`), and without it is refused. */
static void test_tls_pg_client_certificate(void **state)
{
    sqllock_db *db;
    sqllock_db *bad = NULL;
    int rc;
    (void)state;

    need_pg();
    db = open_ok(pg_url("sqllock_cert@", "127.0.0.1",
                        "sslmode=verify-full&sslrootcert=%s&sslcert=%s&"
                        "sslkey=%s", cert("ca.crt"), cert("client.crt"),
                        cert("client.key")));
    assert_int_equal(q1(db, PG_IS_TLS), 1);
    assert_int_equal(q1(db, "SELECT CASE WHEN current_user = 'sqllock_cert' "
                            "THEN 1 ELSE 0 END"), 1);
    sqllock_close(db);
    rc = sqllock_open(pg_url("sqllock_cert@", "127.0.0.1",
                             "sslmode=verify-full&sslrootcert=%s",
                             cert("ca.crt")), NULL, &bad);
    printf("    without the certificate: %s: %s\n", sqllock_errname(rc),
           sqllock_errmsg(bad));
    assert_int_not_equal(rc, SQLLOCK_OK);
    assert_true(tu_contains_ci(sqllock_errmsg(bad), "certificate"));
    sqllock_close(bad);
}

/* ------------------------------------------------------------------ */
/* MariaDB                                                              */
/* ------------------------------------------------------------------ */

#if defined(SQLLOCK_TEST_MYSQL)

/* The length of the session's cipher name: 0 without TLS. */
static const char MY_CIPHER_LEN[] =
    "SELECT LENGTH(VARIABLE_VALUE) FROM information_schema.SESSION_STATUS "
    "WHERE VARIABLE_NAME = 'SSL_CIPHER'";

/* 1 if the session's account is `user`. */
static int64_t my_is_user(sqllock_db *db, const char *user)
{
    char sql[200];

    snprintf(sql, sizeof sql, "SELECT CASE WHEN CURRENT_USER() LIKE '%s@%%' "
             "THEN 1 ELSE 0 END", user);
    return q1(db, sql);
}

/* VERIFY_IDENTITY with the CA: a TLS connection (Ssl_cipher), as a
 * REQUIRE SSL account; the library works over it. */
static void test_tls_mysql_verify_identity_is_tls(void **state)
{
    sqllock_db *db;
    (void)state;

    db = open_ok(my_url(MY_LOGIN, "127.0.0.1", ""));
    assert_int_equal(sqllock_init(db), SQLLOCK_OK);
    assert_int_equal(q1(db, MY_CIPHER_LEN), 0);  /* the check tells */
    sqllock_close(db);
    db = open_ok(my_url(MY_TLS_LOGIN, "127.0.0.1",
                        "ssl_mode=VERIFY_IDENTITY&ssl_ca=%s",
                        cert("ca.crt")));
    assert_true(q1(db, MY_CIPHER_LEN) > 0);
    assert_int_equal(my_is_user(db, MY_TLS_USER), 1);
    lease_round_trip(db, "tls-my");
    sqllock_close(db);
    /* REQUIRED: TLS without verification. */
    db = open_ok(my_url(MY_TLS_LOGIN, "127.0.0.1", "ssl_mode=REQUIRED"));
    assert_true(q1(db, MY_CIPHER_LEN) > 0);
    sqllock_close(db);
}

static void test_tls_mysql_wrong_ca_refused(void **state)
{
    (void)state;
    open_fails(my_url(MY_TLS_LOGIN, "127.0.0.1",
                      "ssl_mode=VERIFY_IDENTITY&ssl_ca=%s",
                      cert("other-ca.crt")),
               SQLLOCK_ECONNECT, MY_TLS_PW, "2026", "not accepted",
               "other-ca.crt", NULL);
    open_fails(my_url(MY_TLS_LOGIN, "127.0.0.1", "ssl_mode=VERIFY_CA&"
                      "ssl_ca=%s", cert("other-ca.crt")),
               SQLLOCK_ECONNECT, MY_TLS_PW, "not accepted", NULL);
    /* Without ssl_ca, VERIFY_IDENTITY trusts the system's CA store, which
     * does not hold the test CA. */
    open_fails(my_url(MY_TLS_LOGIN, "127.0.0.1", "ssl_mode=VERIFY_IDENTITY"),
               SQLLOCK_ECONNECT, MY_TLS_PW, "system's CA store", NULL);
}

/* 127.0.0.2 is not in the certificate: VERIFY_IDENTITY refuses it, and
 * says so; VERIFY_CA (the chain only) does not. */
static void test_tls_mysql_wrong_host_refused_verify_ca_passes(void **state)
{
    sqllock_db *db;
    (void)state;

    open_fails(my_url(MY_TLS_LOGIN, "127.0.0.2",
                      "ssl_mode=VERIFY_IDENTITY&ssl_ca=%s", cert("ca.crt")),
               SQLLOCK_ECONNECT, MY_TLS_PW, "does not name the host "
               "'127.0.0.2'", NULL);
    db = open_ok(my_url(MY_TLS_LOGIN, "127.0.0.2",
                        "ssl_mode=VERIFY_CA&ssl_ca=%s", cert("ca.crt")));
    assert_true(q1(db, MY_CIPHER_LEN) > 0);
    sqllock_close(db);
}

/* A CA without ssl_mode means VERIFY_CA: the chain is checked (and a
 * server without TLS would be refused), the host name is not. */
static void test_tls_mysql_ssl_ca_alone_verifies_chain(void **state)
{
    sqllock_db *db;
    (void)state;

    open_fails(my_url(MY_TLS_LOGIN, "127.0.0.1", "ssl_ca=%s",
                      cert("other-ca.crt")),
               SQLLOCK_ECONNECT, MY_TLS_PW, "not accepted", NULL);
    db = open_ok(my_url(MY_TLS_LOGIN, "127.0.0.2", "ssl_ca=%s",
                        cert("ca.crt")));
    assert_true(q1(db, MY_CIPHER_LEN) > 0);
    sqllock_close(db);
}

/* REQUIRE X509: the client certificate logs the account in; without it
 * the login is refused, with a hint. */
static void test_tls_mysql_client_certificate_require_x509(void **state)
{
    sqllock_db *db;
    (void)state;

    db = open_ok(my_url(MY_CERT_LOGIN, "127.0.0.1",
                        "ssl_mode=VERIFY_IDENTITY&ssl_ca=%s&ssl_cert=%s&"
                        "ssl_key=%s", cert("ca.crt"), cert("client.crt"),
                        cert("client.key")));
    assert_true(q1(db, MY_CIPHER_LEN) > 0);
    assert_int_equal(my_is_user(db, "sqllock_cert"), 1);
    sqllock_close(db);
    open_fails(my_url(MY_CERT_LOGIN, "127.0.0.1",
                      "ssl_mode=VERIFY_IDENTITY&ssl_ca=%s", cert("ca.crt")),
               SQLLOCK_EPERM, "sqllock-cert-Pw5", "1045", "ssl_cert=", NULL);
}

/* A REQUIRE SSL account without TLS: SQLLOCK_EPERM, the server's 1045,
 * and the hint that the account may need TLS. */
static void test_tls_mysql_require_ssl_without_tls_eperm_hint(void **state)
{
    sqllock_db *db = NULL;
    int rc;
    (void)state;

    open_fails(my_url(MY_TLS_LOGIN, "127.0.0.1", ""), SQLLOCK_EPERM,
               MY_TLS_PW, "Access denied", "1045",
               "the account may require TLS: add ssl_mode=REQUIRED", NULL);
    open_fails(my_url(MY_TLS_LOGIN, "127.0.0.1", "ssl_mode=DISABLED&ssl_ca=%s",
                      cert("ca.crt")), SQLLOCK_EPERM, MY_TLS_PW,
               "may require TLS", NULL);
    rc = sqllock_open(my_url(MY_TLS_LOGIN, "127.0.0.1", ""), NULL, &db);
    assert_int_equal(rc, SQLLOCK_EPERM);
    assert_int_equal(sqllock_errcode(db), SQLLOCK_EPERM);
    sqllock_close(db);
}

/* An option file gives the login and the CA; ssl-verify-server-cert in it
 * is VERIFY_IDENTITY. */
static void test_tls_mysql_option_file_ca_and_login(void **state)
{
    char text[2000];
    const char *path;
    sqllock_db *db;
    (void)state;

    snprintf(text, sizeof text, "[client]\nuser = " MY_TLS_USER "\n"
             "password = \"" MY_TLS_PW "\"\nssl-ca = %s\n", cert("ca.crt"));
    path = write_file("login.cnf", 0600, text);
    db = open_ok(my_url("", "127.0.0.1", "option_file=%s&"
                        "ssl_mode=VERIFY_IDENTITY", path));
    assert_true(q1(db, MY_CIPHER_LEN) > 0);
    assert_int_equal(my_is_user(db, MY_TLS_USER), 1);
    lease_round_trip(db, "tls-my-optfile");
    sqllock_close(db);
    /* The file's CA alone: VERIFY_CA, the host is not checked. */
    db = open_ok(my_url("", "127.0.0.2", "option_file=%s", path));
    assert_true(q1(db, MY_CIPHER_LEN) > 0);
    sqllock_close(db);

    snprintf(text, sizeof text, "[client]\nuser = " MY_TLS_USER "\n"
             "password = " MY_TLS_PW "\nssl_ca = %s\n"
             "ssl-verify-server-cert\n", cert("ca.crt"));
    path = write_file("verify.cnf", 0600, text);
    db = open_ok(my_url("", "127.0.0.1", "option_file=%s", path));
    assert_true(q1(db, MY_CIPHER_LEN) > 0);
    sqllock_close(db);
    open_fails(my_url("", "127.0.0.2", "option_file=%s", path),
               SQLLOCK_ECONNECT, MY_TLS_PW, "does not name the host", NULL);
}

/* The URL's values win over the file's: its ssl_ca, ssl_mode, user and
 * password. */
static void test_tls_mysql_url_wins_over_option_file(void **state)
{
    char text[2000];
    const char *path;
    sqllock_db *db;
    (void)state;

    snprintf(text, sizeof text, "[client]\nuser = " MY_TLS_USER "\n"
             "password = " LEAK_PW1 "\nssl-ca = %s\nssl-mode = "
             "VERIFY_IDENTITY\n", cert("ca.crt"));
    path = write_file("wins.cnf", 0600, text);
    /* The file's password is wrong: the URL's is used. */
    db = open_ok(my_url(MY_TLS_LOGIN, "127.0.0.1", "option_file=%s", path));
    assert_true(q1(db, MY_CIPHER_LEN) > 0);
    sqllock_close(db);
    /* The URL's CA replaces the file's. */
    open_fails(my_url(MY_TLS_LOGIN, "127.0.0.1", "option_file=%s&ssl_ca=%s",
                      path, cert("other-ca.crt")),
               SQLLOCK_ECONNECT, LEAK_PW1, "other-ca.crt", NULL);
    /* The URL's mode replaces the file's VERIFY_IDENTITY. */
    db = open_ok(my_url(MY_TLS_LOGIN, "127.0.0.2", "option_file=%s&"
                        "ssl_mode=VERIFY_CA", path));
    sqllock_close(db);
    /* The URL's user, with the URL's password, and no TLS. */
    db = open_ok(my_url(MY_LOGIN, "127.0.0.1", "option_file=%s&"
                        "ssl_mode=DISABLED", path));
    assert_int_equal(my_is_user(db, "sqllock"), 1);
    assert_int_equal(q1(db, MY_CIPHER_LEN), 0);
    sqllock_close(db);
    /* The file's wrong password, the URL's user: refused, the password
     * not shown. */
    open_fails(my_url(MY_TLS_USER "@", "127.0.0.1", "option_file=%s", path),
               SQLLOCK_EPERM, LEAK_PW1, "1045", NULL);
}

/* option_group: its options, read after [client] in the file, win. */
static void test_tls_mysql_option_group(void **state)
{
    char text[2000];
    const char *path;
    sqllock_db *db;
    (void)state;

    snprintf(text, sizeof text, "[client]\nuser = " MY_TLS_USER "\n"
             "password = " LEAK_PW2 "\nssl-ca = %s\n"
             "[sqllock]\npassword = " MY_TLS_PW "\n", cert("ca.crt"));
    path = write_file("group.cnf", 0600, text);
    db = open_ok(my_url("", "127.0.0.1", "option_file=%s&option_group="
                        "sqllock", path));
    assert_int_equal(my_is_user(db, MY_TLS_USER), 1);
    sqllock_close(db);
    open_fails(my_url("", "127.0.0.1", "option_file=%s", path),
               SQLLOCK_EPERM, LEAK_PW2, "1045", NULL);
}

/* ~/.my.cnf is read when the URL has no user and no password (or names
 * option_group), not otherwise; option_file= (empty) reads no file. */
static void test_tls_mysql_home_my_cnf_without_url_login(void **state)
{
    char text[2000], *old_home;
    const char *home = getenv("HOME");
    sqllock_db *db;
    (void)state;

    old_home = home != NULL ? tu_strdup(home) : NULL;
    snprintf(text, sizeof text, "[client]\nuser = " MY_TLS_USER "\n"
             "password = " MY_TLS_PW "\nssl-ca = %s\n"
             "ssl-mode = VERIFY_IDENTITY\n[other]\nssl-mode = VERIFY_CA\n",
             cert("ca.crt"));
    write_file(".my.cnf", 0600, text);
    assert_int_equal(setenv("HOME", g_tmp, 1), 0);

    db = open_ok(my_url("", "127.0.0.1", ""));
    assert_int_equal(my_is_user(db, MY_TLS_USER), 1);
    assert_true(q1(db, MY_CIPHER_LEN) > 0);
    sqllock_close(db);
    /* The file's TLS settings apply: VERIFY_IDENTITY refuses 127.0.0.2. */
    open_fails(my_url("", "127.0.0.2", ""), SQLLOCK_ECONNECT, MY_TLS_PW,
               "does not name the host", NULL);
    /* A URL with its own login reads no file: no TLS here. */
    db = open_ok(my_url(MY_LOGIN, "127.0.0.1", ""));
    assert_int_equal(q1(db, MY_CIPHER_LEN), 0);
    sqllock_close(db);
    /* ... unless it names a group: the file's password, and [other]'s
     * VERIFY_CA, which lets 127.0.0.2 in. */
    db = open_ok(my_url(MY_TLS_USER "@", "127.0.0.2", "option_group=other"));
    assert_int_equal(my_is_user(db, MY_TLS_USER), 1);
    assert_true(q1(db, MY_CIPHER_LEN) > 0);
    sqllock_close(db);
    /* option_file= turns the file off: no login, refused. */
    open_fails(my_url("", "127.0.0.1", "option_file="), SQLLOCK_EPERM,
               MY_TLS_PW, "1045", NULL);

    if (old_home != NULL)
        setenv("HOME", old_home, 1);
    else
        unsetenv("HOME");
    free(old_home);
}

/* No part of a password from an option file shows in a message: a wrong
 * one, a malformed file, a file anyone may write. */
static void test_tls_mysql_option_file_password_not_in_messages(void **state)
{
    char text[2000];
    const char *path;
    (void)state;

    snprintf(text, sizeof text, "[client]\nuser = " MY_TLS_USER "\n"
             "password = " LEAK_PW1 "\nssl-ca = %s\n", cert("ca.crt"));
    path = write_file("leak.cnf", 0600, text);
    open_fails(my_url("", "127.0.0.1", "option_file=%s", path),
               SQLLOCK_EPERM, LEAK_PW1, "using password: YES", NULL);
    open_fails(my_url("", "127.0.0.1", "option_file=%s&ssl_mode=DISABLED",
                      path), SQLLOCK_EPERM, LEAK_PW1, "1045", NULL);
    path = write_file("leak2.cnf", 0600, "password = " LEAK_PW2 "\n"
                      "[client]\n");
    open_fails(my_url("", "127.0.0.1", "option_file=%s", path), SQLLOCK_EURL,
               LEAK_PW2, "line 1", NULL);
    path = write_file("leak3.cnf", 0622, "[client]\npassword = " LEAK_PW2
                      "\n");
    open_fails(my_url("", "127.0.0.1", "option_file=%s", path), SQLLOCK_EURL,
               LEAK_PW2, "written by anyone", NULL);
}

/* A MySQL URL of SQLLOCK_TEST_URLS, for the test below. */
static const char *g_plain_url;

/* A server without TLS (the main test server): REQUIRED and VERIFY_CA
 * refuse the connection once it is made without TLS, VERIFY_IDENTITY
 * before the login; PREFERRED goes on in plain text. Skipped when the
 * server does offer TLS. */
static void test_tls_mysql_server_without_tls_refused(void **state)
{
    char url[2000];
    sqllock_db *db;
    (void)state;

    snprintf(url, sizeof url, "%s%sssl_mode=PREFERRED", g_plain_url,
             strchr(g_plain_url, '?') != NULL ? "&" : "?");
    db = open_ok(url);
    if (q1(db, MY_CIPHER_LEN) > 0) {
        sqllock_close(db);
        tu_cannot_run("the MySQL server offers TLS, so a refusal of "
                      "REQUIRED cannot be shown on it");
    }
    sqllock_close(db);
    snprintf(url, sizeof url, "%s%sssl_mode=REQUIRED", g_plain_url,
             strchr(g_plain_url, '?') != NULL ? "&" : "?");
    open_fails(url, SQLLOCK_ECONNECT, NULL, "ssl_mode=REQUIRED asks for TLS",
               NULL);
    snprintf(url, sizeof url, "%s%sssl_mode=VERIFY_CA&%s",
             g_plain_url, strchr(g_plain_url, '?') != NULL ? "&" : "?",
             g_certs[0] != '\0' ? "ssl_ca=" : "ssl_capath=/etc/ssl/certs");
    if (g_certs[0] != '\0')
        snprintf(url + strlen(url), sizeof url - strlen(url), "%s",
                 cert("ca.crt"));
    open_fails(url, SQLLOCK_ECONNECT, NULL, "ssl_mode=VERIFY_CA asks for "
               "TLS", NULL);
    snprintf(url, sizeof url, "%s%sssl_mode=VERIFY_IDENTITY", g_plain_url,
             strchr(g_plain_url, '?') != NULL ? "&" : "?");
    open_fails(url, SQLLOCK_ECONNECT, NULL, "the server does not support",
               NULL);
}

#endif /* SQLLOCK_TEST_MYSQL */

/* ------------------------------------------------------------------ */

/* Reads DIR/env of scripts/tls.sh; 1 when the fixture is there. */
static int load_fixture(char *why, size_t why_size)
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

int main(void)
{
#if defined(SQLLOCK_TEST_MYSQL)
    const struct CMUnitTest unit[] = {
        cmocka_unit_test(test_mysql_optfile_syntax_as_mysql_reads_it),
        cmocka_unit_test(test_mysql_optfile_groups_and_order),
        cmocka_unit_test(test_mysql_optfile_include_and_includedir),
        cmocka_unit_test(test_mysql_optfile_errors_name_line_not_value),
        cmocka_unit_test(test_mysql_url_unknown_parameter_names_key_not_value),
        cmocka_unit_test(test_mysql_url_tls_checks_before_connect),
    };
    const struct CMUnitTest my[] = {
        cmocka_unit_test(test_tls_mysql_verify_identity_is_tls),
        cmocka_unit_test(test_tls_mysql_wrong_ca_refused),
        cmocka_unit_test(test_tls_mysql_wrong_host_refused_verify_ca_passes),
        cmocka_unit_test(test_tls_mysql_ssl_ca_alone_verifies_chain),
        cmocka_unit_test(test_tls_mysql_client_certificate_require_x509),
        cmocka_unit_test(test_tls_mysql_require_ssl_without_tls_eperm_hint),
        cmocka_unit_test(test_tls_mysql_option_file_ca_and_login),
        cmocka_unit_test(test_tls_mysql_url_wins_over_option_file),
        cmocka_unit_test(test_tls_mysql_option_group),
        cmocka_unit_test(test_tls_mysql_home_my_cnf_without_url_login),
        cmocka_unit_test(test_tls_mysql_option_file_password_not_in_messages),
    };
#endif
    const struct CMUnitTest pg[] = {
        cmocka_unit_test(test_tls_pg_verify_full_is_tls),
        cmocka_unit_test(test_tls_pg_wrong_ca_refused),
        cmocka_unit_test(test_tls_pg_wrong_host_refused_verify_ca_passes),
        cmocka_unit_test(test_tls_pg_client_certificate),
    };
    char why[1300];
    int failed = 0, fixture, pg_failed, early_skips, rc;
    int64_t t0;

    g_tmp = tu_mkdtemp();
    if (g_tmp == NULL) {
        fprintf(stderr, "tls: cannot make a temporary directory\n");
        return 1;
    }
    fixture = load_fixture(why, sizeof why);
#if defined(SQLLOCK_TEST_MYSQL)
    failed += cmocka_run_group_tests_name("tls: MySQL option files and URL "
                                          "checks (no server)", unit, NULL,
                                          NULL);
    {
        const struct CMUnitTest plain[] = {
            cmocka_unit_test(test_tls_mysql_server_without_tls_refused),
        };
        tu_urls urls;
        int i;

        if (tu_urls_load(&urls) == 0) {
            for (i = 0; i < urls.n; i++) {
                const char *drv = tu_url_driver(urls.url[i]);
                if (drv == NULL || strcmp(drv, "mysql") != 0)
                    continue;
                g_plain_url = urls.url[i];
                failed += cmocka_run_group_tests_name("tls [mysql, a server "
                                                      "of SQLLOCK_TEST_URLS]",
                                                      plain, NULL, NULL);
            }
            tu_urls_free(&urls);
        }
    }
#endif
    if (!fixture) {
        tu_rmdir(g_tmp);
        free(g_tmp);
        return tu_status_merge(failed != 0,
                               tu_unit_cannot_run("tls", "the TLS server "
                                                  "tests: %s", why));
    }
    /* A case that could not run (tu_cannot_run) so far: the groups above
     * have no driver of their own to leave unreported. */
    early_skips = tu_skips;
    tu_skips = 0;
    t0 = tu_now_ms();
    pg_failed = cmocka_run_group_tests_name("tls [postgres, scripts/tls.sh]",
                                            pg, NULL, NULL);
    rc = tu_unit_result("tls", "postgres", pg_failed);
#if defined(SQLLOCK_TEST_MYSQL)
    {
        int my_failed = cmocka_run_group_tests_name("tls [mysql, "
                                                    "scripts/tls.sh]", my,
                                                    NULL, NULL);
        rc = tu_status_merge(rc, tu_unit_result("tls", "mysql", my_failed));
    }
#endif
    printf("tls: the server tests took %lld ms\n",
           (long long)(tu_now_ms() - t0));
    tu_rmdir(g_tmp);
    free(g_tmp);
    if (early_skips != 0)
        rc = tu_status_merge(rc, TU_SKIPPED);
    return tu_status_merge(failed != 0, rc);
}
