/*
 * test_secrets.c -- DESIGN C4 (issue 14): no secret (a password, a URL
 * that carries one) in a process's arguments, in the environment handed
 * to a command, or in any message.
 *
 *   - Without a database: the redaction of hostile URLs (an unescaped '@'
 *     or ':' in the password, %40, '/', unknown query parameters, libpq's
 *     "name=value" form) and the scrubbing of the messages a driver could
 *     make of them; a password inside the host name, a short password
 *     and a word of the messages are left alone rather than turned into
 *     asterisks. --db-file and $SQLLOCK_DB_FILE: their precedence and
 *     every error, with the file's content never printed; a file that
 *     holds no URL (a ~/.pgpass line, a password alone) and one that its
 *     group or others may read are refused (issue 27).
 *   - On every URL of SQLLOCK_TEST_URLS: the built tool runs `sqllock run`
 *     for real, with the URL in --db (before and after the command), in
 *     $SQLLOCK_DB, in --db-file and in $SQLLOCK_DB_FILE, each with and
 *     without --export-db; while its command runs, the test reads
 *     /proc/<tool>/cmdline and the command's /proc/<pid>/environ. The
 *     password must be in neither -- nor any piece of it around its '@'
 *     -- and --db must show its redacted form there; with --export-db the
 *     command must get the database (SQLLOCK_DB with the password, or
 *     SQLLOCK_DB_FILE), so the check fails in both directions.
 *   - What init, list and list --json print with that URL.
 *   - Hostile URLs through the API (sqllock_errmsg()) and the tool (its
 *     stdout and stderr, with --db, --db-file and $SQLLOCK_DB): a closed
 *     port, the real server with a wrong password, a bad port, unknown
 *     parameters carrying a secret, the password as a parameter; on
 *     MySQL, a password in ssl_mode=, option_file= or socket=, whose
 *     value a refusal does not echo (issue 27).
 *
 * On PostgreSQL and MariaDB the runs use a login role of their own whose
 * password has '@', ':' and '/' in it ("Kp7w@Vx:9q/Wz-C4s3cret", written
 * with %40 and %2F in the URL), made through the superuser access of the
 * servers scripts/servers.sh started ($SQLLOCK_TEST_SERVERS_DIR, which
 * scripts/test.sh exports). Without that access they use the test URL's
 * own password and say so; under CI that fails, as does a driver of
 * the three without a URL. The tool starts with a minimal environment
 * (se_start()), and the runs' files are in a directory whose name holds no
 * "sqllock-test", so that nothing the test itself passes is taken for a
 * leak of that password.
 *
 * SQLLOCK_CLI_PATH is the built tool, passed in by tests/CMakeLists.txt.
 *
 * The cases are in tests/secrets/, by group (nodb.c, run.c, urls.c),
 * with what they share in secrets/common.c.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pwd.h>
#include <sys/socket.h>

#include "test_util.h"
#include "test_run.h"
#include "test_spawn.h"

#ifndef SQLLOCK_CLI_PATH
#error "SQLLOCK_CLI_PATH must name the built sqllock tool"
#endif

#include "secrets/secrets.h"

int main(void)
{
    const struct CMUnitTest pure[] = {
        cmocka_unit_test(test_secrets_C4_redact_hostile_urls),
        cmocka_unit_test(test_secrets_C4_scrub_messages),
        cmocka_unit_test(test_secrets_C4_scrub_long_message_and_handle),
        cmocka_unit_test(test_secrets_C4_db_file_precedence_and_errors),
        cmocka_unit_test(test_secrets_C4_db_file_not_a_url),
        cmocka_unit_test(test_secrets_C4_db_file_mode),
    };
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_secrets_C4_run_argv_and_environ),
        cmocka_unit_test(test_secrets_C4_init_and_list_output),
        cmocka_unit_test(test_secrets_C4_hostile_urls_api),
        cmocka_unit_test(test_secrets_C4_password_in_host_name),
        cmocka_unit_test(test_secrets_C4_hostile_urls_cli),
        cmocka_unit_test(test_secrets_C4_parameter_values_not_echoed),
    };
    int failed;

    /* Under CI, every driver must be tested: a missing one fails the
     * required-drivers check of TU_RUN_PER_URL. (With SQLLOCK_TEST_DRIVER,
     * ctest's entry for one driver, that driver; the entries of the
     * others check theirs.) */
    if (tu_ci()) {
        static const char *const all[] = { "sqlite", "postgres", "mysql" };
        const char *only = getenv("SQLLOCK_TEST_DRIVER");
        tu_urls urls;
        int i, k, found;

        if (tu_urls_load(&urls) == 0) {
            for (k = 0; k < 3 && tu_missing_driver[0] == '\0'; k++) {
                if (only != NULL && *only != '\0' && strcmp(only, all[k]) != 0)
                    continue;
                for (i = 0, found = 0; i < urls.n; i++) {
                    const char *d = tu_url_driver(urls.url[i]);
                    found |= d != NULL && strcmp(d, all[k]) == 0;
                }
                if (!found)
                    snprintf(tu_missing_driver, sizeof tu_missing_driver,
                             "%s (under CI)", all[k]);
            }
            tu_urls_free(&urls);
        }
    }
    failed = cmocka_run_group_tests_name("secrets", pure, NULL, NULL);
    return tu_status_merge(failed != 0,
                           TU_RUN_PER_URL("secrets", &g_url, tests,
                                          se_group_setup, se_group_teardown));
}
