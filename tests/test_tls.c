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
 *
 * The cases are in tests/tls/, by group (optfile.c, pg.c, mysql.c), with
 * what they share in tls/common.c.
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
#include "tls/tls.h"

/* ------------------------------------------------------------------ */

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
    fixture = tl_load_fixture(why, sizeof why);
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
