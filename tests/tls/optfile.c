/*
 * optfile.c -- test_tls without a server: the MySQL option-file reader
 * (drivers/mysql/my_optfile.c) on files made here, and URL checks that
 * fail before any connect.
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
#include "tls.h"

/* ------------------------------------------------------------------ */
/* No server: the option-file reader and URL checks                    */
/* ------------------------------------------------------------------ */

#if defined(SQLLOCK_TEST_MYSQL)

/* Reads `text` as an option file (group `group`); the status. */
static int read_opt(const char *text, const char *group, my_optfile *f,
                    sqllock_dberr *err)
{
    const char *path = tl_write_file("t.cnf", 0600, text);

    memset(f, 0, sizeof *f);
    memset(err, 0, sizeof *err);
    return sqllock__my_optfile_read(path, group, 0, f, err);
}

/* MySQL's syntax: quotes, escapes, '#' comments outside quotes, ';' and
 * '#' lines, blanks around '=', '_' for '-', the loose- prefix. */
void test_mysql_optfile_syntax_as_mysql_reads_it(void **state)
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
void test_mysql_optfile_groups_and_order(void **state)
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
void test_mysql_optfile_include_and_includedir(void **state)
{
    char dir[1200], text[3000];
    my_optfile f;
    sqllock_dberr err;
    const char *inc;
    (void)state;

    snprintf(dir, sizeof dir, "%s/conf.d", g_tmp);
    assert_int_equal(mkdir(dir, 0700), 0);
    tl_write_file("conf.d/20-b.cnf", 0600, "[client]\nuser=from-b\n");
    tl_write_file("conf.d/10-a.cnf", 0600, "[client]\nuser=from-a\n"
                  "password=pa\n");
    tl_write_file("conf.d/30-c.txt", 0600, "[client]\nuser=not-read\n");
    inc = tl_write_file("inc.cnf", 0600, "[client]\nssl-ca=/inc/ca.pem\n");
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
void test_mysql_optfile_errors_name_line_not_value(void **state)
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

    path = tl_write_file("open.cnf", 0666,
                         "[client]\npassword=" LEAK_PW1 "\n");
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
void test_mysql_url_unknown_parameter_names_key_not_value(void **state)
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
void test_mysql_url_tls_checks_before_connect(void **state)
{
    (void)state;
    tl_open_fails("mysql://u:pw@127.0.0.1:1/db?ssl_mode=VERIFY_CA&"
                  "option_file=", SQLLOCK_EURL, NULL, "VERIFY_CA", "ssl_ca",
                  NULL);
    tl_open_fails("mysql://u:pw@127.0.0.1:1/db?ssl_ca=", SQLLOCK_EURL, NULL,
                  "ssl_ca is empty", NULL);
    tl_open_fails("mysql://u:pw@127.0.0.1:1/db?option_group=", SQLLOCK_EURL,
                  NULL, "option_group", NULL);
    /* A file it cannot open is not named: the value may be a password
     * pasted into the wrong parameter (issue 27). */
    tl_open_fails("mysql://u:pw@127.0.0.1:1/db?option_file=/nonexistent.cnf",
                  SQLLOCK_EURL, "/nonexistent.cnf", "option_file", NULL);
}

#endif /* SQLLOCK_TEST_MYSQL */
