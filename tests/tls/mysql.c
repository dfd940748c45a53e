/*
 * mysql.c -- test_tls on the MariaDB of scripts/tls.sh: the TLS modes
 * and what each refuses, client certificates, a REQUIRE SSL account
 * without TLS, option files and ~/.my.cnf, no password from a file in a
 * message; and a MySQL server of SQLLOCK_TEST_URLS without TLS.
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
    return tl_q1(db, sql);
}

/* VERIFY_IDENTITY with the CA: a TLS connection (Ssl_cipher), as a
 * REQUIRE SSL account; the library works over it. */
void test_tls_mysql_verify_identity_is_tls(void **state)
{
    sqllock_db *db;
    (void)state;

    db = tl_open_ok(tl_my_url(MY_LOGIN, "127.0.0.1", ""));
    assert_int_equal(sqllock_init(db), SQLLOCK_OK);
    assert_int_equal(tl_q1(db, MY_CIPHER_LEN), 0);  /* the check tells */
    sqllock_close(db);
    db = tl_open_ok(tl_my_url(MY_TLS_LOGIN, "127.0.0.1",
                              "ssl_mode=VERIFY_IDENTITY&ssl_ca=%s",
                              tl_cert("ca.crt")));
    assert_true(tl_q1(db, MY_CIPHER_LEN) > 0);
    assert_int_equal(my_is_user(db, MY_TLS_USER), 1);
    tl_lease_round_trip(db, "tls-my");
    sqllock_close(db);
    /* REQUIRED: TLS without verification. */
    db = tl_open_ok(tl_my_url(MY_TLS_LOGIN, "127.0.0.1", "ssl_mode=REQUIRED"));
    assert_true(tl_q1(db, MY_CIPHER_LEN) > 0);
    sqllock_close(db);
}

void test_tls_mysql_wrong_ca_refused(void **state)
{
    (void)state;
    tl_open_fails(tl_my_url(MY_TLS_LOGIN, "127.0.0.1",
                            "ssl_mode=VERIFY_IDENTITY&ssl_ca=%s",
                            tl_cert("other-ca.crt")),
                  SQLLOCK_ECONNECT, MY_TLS_PW, "2026", "not accepted",
                  "other-ca.crt", NULL);
    tl_open_fails(tl_my_url(MY_TLS_LOGIN, "127.0.0.1", "ssl_mode=VERIFY_CA&"
                            "ssl_ca=%s", tl_cert("other-ca.crt")),
                  SQLLOCK_ECONNECT, MY_TLS_PW, "not accepted", NULL);
    /* Without ssl_ca, VERIFY_IDENTITY trusts the system's CA store, which
     * does not hold the test CA. */
    tl_open_fails(tl_my_url(MY_TLS_LOGIN, "127.0.0.1",
                            "ssl_mode=VERIFY_IDENTITY"),
                  SQLLOCK_ECONNECT, MY_TLS_PW, "system's CA store", NULL);
}

/* 127.0.0.2 is not in the certificate: VERIFY_IDENTITY refuses it, and
 * says so; VERIFY_CA (the chain only) does not. */
void test_tls_mysql_wrong_host_refused_verify_ca_passes(void **state)
{
    sqllock_db *db;
    (void)state;

    tl_open_fails(tl_my_url(MY_TLS_LOGIN, "127.0.0.2",
                            "ssl_mode=VERIFY_IDENTITY&ssl_ca=%s",
                            tl_cert("ca.crt")),
                  SQLLOCK_ECONNECT, MY_TLS_PW, "does not name the host "
                  "'127.0.0.2'", NULL);
    db = tl_open_ok(tl_my_url(MY_TLS_LOGIN, "127.0.0.2",
                              "ssl_mode=VERIFY_CA&ssl_ca=%s",
                              tl_cert("ca.crt")));
    assert_true(tl_q1(db, MY_CIPHER_LEN) > 0);
    sqllock_close(db);
}

/* A CA without ssl_mode means VERIFY_CA: the chain is checked (and a
 * server without TLS would be refused), the host name is not. */
void test_tls_mysql_ssl_ca_alone_verifies_chain(void **state)
{
    sqllock_db *db;
    (void)state;

    tl_open_fails(tl_my_url(MY_TLS_LOGIN, "127.0.0.1", "ssl_ca=%s",
                            tl_cert("other-ca.crt")),
                  SQLLOCK_ECONNECT, MY_TLS_PW, "not accepted", NULL);
    db = tl_open_ok(tl_my_url(MY_TLS_LOGIN, "127.0.0.2", "ssl_ca=%s",
                              tl_cert("ca.crt")));
    assert_true(tl_q1(db, MY_CIPHER_LEN) > 0);
    sqllock_close(db);
}

/* REQUIRE X509: the client certificate logs the account in; without it
 * the login is refused, with a hint. */
void test_tls_mysql_client_certificate_require_x509(void **state)
{
    sqllock_db *db;
    (void)state;

    db = tl_open_ok(tl_my_url(MY_CERT_LOGIN, "127.0.0.1",
                              "ssl_mode=VERIFY_IDENTITY&ssl_ca=%s&ssl_cert=%s&"
                              "ssl_key=%s", tl_cert("ca.crt"),
                              tl_cert("client.crt"), tl_cert("client.key")));
    assert_true(tl_q1(db, MY_CIPHER_LEN) > 0);
    assert_int_equal(my_is_user(db, "sqllock_cert"), 1);
    sqllock_close(db);
    tl_open_fails(tl_my_url(MY_CERT_LOGIN, "127.0.0.1",
                            "ssl_mode=VERIFY_IDENTITY&ssl_ca=%s",
                            tl_cert("ca.crt")),
                  SQLLOCK_EPERM, "sqllock-cert-Pw5", "1045", "ssl_cert=",
                  NULL);
}

/* A REQUIRE SSL account without TLS: SQLLOCK_EPERM, the server's 1045,
 * and the hint that the account may need TLS. */
void test_tls_mysql_require_ssl_without_tls_eperm_hint(void **state)
{
    sqllock_db *db = NULL;
    int rc;
    (void)state;

    tl_open_fails(tl_my_url(MY_TLS_LOGIN, "127.0.0.1", ""), SQLLOCK_EPERM,
                  MY_TLS_PW, "Access denied", "1045",
                  "the account may require TLS: add ssl_mode=REQUIRED", NULL);
    tl_open_fails(tl_my_url(MY_TLS_LOGIN, "127.0.0.1",
                            "ssl_mode=DISABLED&ssl_ca=%s",
                            tl_cert("ca.crt")), SQLLOCK_EPERM, MY_TLS_PW,
                  "may require TLS", NULL);
    rc = sqllock_open(tl_my_url(MY_TLS_LOGIN, "127.0.0.1", ""), NULL, &db);
    assert_int_equal(rc, SQLLOCK_EPERM);
    assert_int_equal(sqllock_errcode(db), SQLLOCK_EPERM);
    sqllock_close(db);
}

/* An option file gives the login and the CA; ssl-verify-server-cert in it
 * is VERIFY_IDENTITY. */
void test_tls_mysql_option_file_ca_and_login(void **state)
{
    char text[2000];
    const char *path;
    sqllock_db *db;
    (void)state;

    snprintf(text, sizeof text, "[client]\nuser = " MY_TLS_USER "\n"
             "password = \"" MY_TLS_PW "\"\nssl-ca = %s\n", tl_cert("ca.crt"));
    path = tl_write_file("login.cnf", 0600, text);
    db = tl_open_ok(tl_my_url("", "127.0.0.1", "option_file=%s&"
                              "ssl_mode=VERIFY_IDENTITY", path));
    assert_true(tl_q1(db, MY_CIPHER_LEN) > 0);
    assert_int_equal(my_is_user(db, MY_TLS_USER), 1);
    tl_lease_round_trip(db, "tls-my-optfile");
    sqllock_close(db);
    /* The file's CA alone: VERIFY_CA, the host is not checked. */
    db = tl_open_ok(tl_my_url("", "127.0.0.2", "option_file=%s", path));
    assert_true(tl_q1(db, MY_CIPHER_LEN) > 0);
    sqllock_close(db);

    snprintf(text, sizeof text, "[client]\nuser = " MY_TLS_USER "\n"
             "password = " MY_TLS_PW "\nssl_ca = %s\n"
             "ssl-verify-server-cert\n", tl_cert("ca.crt"));
    path = tl_write_file("verify.cnf", 0600, text);
    db = tl_open_ok(tl_my_url("", "127.0.0.1", "option_file=%s", path));
    assert_true(tl_q1(db, MY_CIPHER_LEN) > 0);
    sqllock_close(db);
    tl_open_fails(tl_my_url("", "127.0.0.2", "option_file=%s", path),
                  SQLLOCK_ECONNECT, MY_TLS_PW, "does not name the host", NULL);
}

/* The URL's values win over the file's: its ssl_ca, ssl_mode, user and
 * password. */
void test_tls_mysql_url_wins_over_option_file(void **state)
{
    char text[2000];
    const char *path;
    sqllock_db *db;
    (void)state;

    snprintf(text, sizeof text, "[client]\nuser = " MY_TLS_USER "\n"
             "password = " LEAK_PW1 "\nssl-ca = %s\nssl-mode = "
             "VERIFY_IDENTITY\n", tl_cert("ca.crt"));
    path = tl_write_file("wins.cnf", 0600, text);
    /* The file's password is wrong: the URL's is used. */
    db = tl_open_ok(tl_my_url(MY_TLS_LOGIN, "127.0.0.1", "option_file=%s",
                              path));
    assert_true(tl_q1(db, MY_CIPHER_LEN) > 0);
    sqllock_close(db);
    /* The URL's CA replaces the file's. */
    tl_open_fails(tl_my_url(MY_TLS_LOGIN, "127.0.0.1",
                            "option_file=%s&ssl_ca=%s",
                            path, tl_cert("other-ca.crt")),
                  SQLLOCK_ECONNECT, LEAK_PW1, "other-ca.crt", NULL);
    /* The URL's mode replaces the file's VERIFY_IDENTITY. */
    db = tl_open_ok(tl_my_url(MY_TLS_LOGIN, "127.0.0.2", "option_file=%s&"
                              "ssl_mode=VERIFY_CA", path));
    sqllock_close(db);
    /* The URL's user, with the URL's password, and no TLS. */
    db = tl_open_ok(tl_my_url(MY_LOGIN, "127.0.0.1", "option_file=%s&"
                              "ssl_mode=DISABLED", path));
    assert_int_equal(my_is_user(db, "sqllock"), 1);
    assert_int_equal(tl_q1(db, MY_CIPHER_LEN), 0);
    sqllock_close(db);
    /* The file's wrong password, the URL's user: refused, the password
     * not shown. */
    tl_open_fails(tl_my_url(MY_TLS_USER "@", "127.0.0.1", "option_file=%s",
                            path),
                  SQLLOCK_EPERM, LEAK_PW1, "1045", NULL);
}

/* option_group: its options, read after [client] in the file, win. */
void test_tls_mysql_option_group(void **state)
{
    char text[2000];
    const char *path;
    sqllock_db *db;
    (void)state;

    snprintf(text, sizeof text, "[client]\nuser = " MY_TLS_USER "\n"
             "password = " LEAK_PW2 "\nssl-ca = %s\n"
             "[sqllock]\npassword = " MY_TLS_PW "\n", tl_cert("ca.crt"));
    path = tl_write_file("group.cnf", 0600, text);
    db = tl_open_ok(tl_my_url("", "127.0.0.1", "option_file=%s&option_group="
                              "sqllock", path));
    assert_int_equal(my_is_user(db, MY_TLS_USER), 1);
    sqllock_close(db);
    tl_open_fails(tl_my_url("", "127.0.0.1", "option_file=%s", path),
                  SQLLOCK_EPERM, LEAK_PW2, "1045", NULL);
}

/* ~/.my.cnf is read when the URL has no user and no password (or names
 * option_group), not otherwise; option_file= (empty) reads no file. */
void test_tls_mysql_home_my_cnf_without_url_login(void **state)
{
    char text[2000], *old_home;
    const char *home = getenv("HOME");
    sqllock_db *db;
    (void)state;

    old_home = home != NULL ? tu_strdup(home) : NULL;
    snprintf(text, sizeof text, "[client]\nuser = " MY_TLS_USER "\n"
             "password = " MY_TLS_PW "\nssl-ca = %s\n"
             "ssl-mode = VERIFY_IDENTITY\n[other]\nssl-mode = VERIFY_CA\n",
             tl_cert("ca.crt"));
    tl_write_file(".my.cnf", 0600, text);
    assert_int_equal(setenv("HOME", g_tmp, 1), 0);

    db = tl_open_ok(tl_my_url("", "127.0.0.1", ""));
    assert_int_equal(my_is_user(db, MY_TLS_USER), 1);
    assert_true(tl_q1(db, MY_CIPHER_LEN) > 0);
    sqllock_close(db);
    /* The file's TLS settings apply: VERIFY_IDENTITY refuses 127.0.0.2. */
    tl_open_fails(tl_my_url("", "127.0.0.2", ""), SQLLOCK_ECONNECT, MY_TLS_PW,
                  "does not name the host", NULL);
    /* A URL with its own login reads no file: no TLS here. */
    db = tl_open_ok(tl_my_url(MY_LOGIN, "127.0.0.1", ""));
    assert_int_equal(tl_q1(db, MY_CIPHER_LEN), 0);
    sqllock_close(db);
    /* ... unless it names a group: the file's password, and [other]'s
     * VERIFY_CA, which lets 127.0.0.2 in. */
    db = tl_open_ok(tl_my_url(MY_TLS_USER "@", "127.0.0.2",
                              "option_group=other"));
    assert_int_equal(my_is_user(db, MY_TLS_USER), 1);
    assert_true(tl_q1(db, MY_CIPHER_LEN) > 0);
    sqllock_close(db);
    /* option_file= turns the file off: no login, refused. */
    tl_open_fails(tl_my_url("", "127.0.0.1", "option_file="), SQLLOCK_EPERM,
                  MY_TLS_PW, "1045", NULL);

    if (old_home != NULL)
        setenv("HOME", old_home, 1);
    else
        unsetenv("HOME");
    free(old_home);
}

/* No part of a password from an option file shows in a message: a wrong
 * one, a malformed file, a file anyone may write. */
void test_tls_mysql_option_file_password_not_in_messages(void **state)
{
    char text[2000];
    const char *path;
    (void)state;

    snprintf(text, sizeof text, "[client]\nuser = " MY_TLS_USER "\n"
             "password = " LEAK_PW1 "\nssl-ca = %s\n", tl_cert("ca.crt"));
    path = tl_write_file("leak.cnf", 0600, text);
    tl_open_fails(tl_my_url("", "127.0.0.1", "option_file=%s", path),
                  SQLLOCK_EPERM, LEAK_PW1, "using password: YES", NULL);
    tl_open_fails(tl_my_url("", "127.0.0.1",
                            "option_file=%s&ssl_mode=DISABLED", path),
                  SQLLOCK_EPERM, LEAK_PW1, "1045", NULL);
    path = tl_write_file("leak2.cnf", 0600, "password = " LEAK_PW2 "\n"
                         "[client]\n");
    tl_open_fails(tl_my_url("", "127.0.0.1", "option_file=%s", path),
                  SQLLOCK_EURL, LEAK_PW2, "line 1", NULL);
    path = tl_write_file("leak3.cnf", 0622, "[client]\npassword = " LEAK_PW2
                         "\n");
    tl_open_fails(tl_my_url("", "127.0.0.1", "option_file=%s", path),
                  SQLLOCK_EURL, LEAK_PW2, "written by anyone", NULL);
}

/* A MySQL URL of SQLLOCK_TEST_URLS, for the test below. */
const char *g_plain_url;

/* A server without TLS (the main test server): REQUIRED and VERIFY_CA
 * refuse the connection once it is made without TLS, VERIFY_IDENTITY
 * before the login; PREFERRED goes on in plain text. Skipped when the
 * server does offer TLS. */
void test_tls_mysql_server_without_tls_refused(void **state)
{
    char url[2000];
    sqllock_db *db;
    (void)state;

    snprintf(url, sizeof url, "%s%sssl_mode=PREFERRED", g_plain_url,
             strchr(g_plain_url, '?') != NULL ? "&" : "?");
    db = tl_open_ok(url);
    if (tl_q1(db, MY_CIPHER_LEN) > 0) {
        sqllock_close(db);
        tu_cannot_run("the MySQL server offers TLS, so a refusal of "
                      "REQUIRED cannot be shown on it");
    }
    sqllock_close(db);
    snprintf(url, sizeof url, "%s%sssl_mode=REQUIRED", g_plain_url,
             strchr(g_plain_url, '?') != NULL ? "&" : "?");
    tl_open_fails(url, SQLLOCK_ECONNECT, NULL,
                  "ssl_mode=REQUIRED asks for TLS",
                  NULL);
    snprintf(url, sizeof url, "%s%sssl_mode=VERIFY_CA&%s",
             g_plain_url, strchr(g_plain_url, '?') != NULL ? "&" : "?",
             g_certs[0] != '\0' ? "ssl_ca=" : "ssl_capath=/etc/ssl/certs");
    if (g_certs[0] != '\0')
        snprintf(url + strlen(url), sizeof url - strlen(url), "%s",
                 tl_cert("ca.crt"));
    tl_open_fails(url, SQLLOCK_ECONNECT, NULL, "ssl_mode=VERIFY_CA asks for "
                  "TLS", NULL);
    snprintf(url, sizeof url, "%s%sssl_mode=VERIFY_IDENTITY", g_plain_url,
             strchr(g_plain_url, '?') != NULL ? "&" : "?");
    tl_open_fails(url, SQLLOCK_ECONNECT, NULL, "the server does not support",
                  NULL);
}

#endif /* SQLLOCK_TEST_MYSQL */
