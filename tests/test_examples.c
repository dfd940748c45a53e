/*
 * test_examples.c -- the files of examples/ that people copy into their
 * crontabs and /etc/systemd/system, run the way cron and systemd run
 * them, on every database of SQLLOCK_TEST_URLS (issue 15).
 *
 * examples/crontab: every line is a comment, a variable or a job whose
 * five time fields are valid, and no job has a '%' (cron would cut the
 * command there). Each job's command runs through /bin/sh -c in cron's
 * environment -- env -i with HOME, LOGNAME, PATH=/usr/bin:/bin,
 * SHELL=/bin/sh and the crontab's variables -- with sqllock's path, the
 * report's and the URL file's replaced by the test's own (each must be in
 * the file, so that the test follows the example): two hosts at once run
 * the report once, the other exits 0; the report does not get the
 * database's variable; the next night runs it again, with a larger
 * token; the reaper's line prints nothing; without the crontab's
 * variable sqllock refuses to run (64) and says how to name a database.
 *
 * examples/sqllock-job.service and .timer: every section and key is one
 * this test knows systemd to have, the timer starts the service and
 * fires on every host at once, ExecStart= runs `sqllock run` with the
 * database from a file (never --db, whose URL would be on the command
 * line). ExecStart=, split and expanded as systemd does (quotes, %d, the
 * file of LoadCredential=, ${VAR} of Environment=), runs directly, with
 * the environment systemd gives a service: two hosts at once run the
 * report once and the other exits 75, which SuccessExitStatus= counts as
 * success. `systemd-analyze verify`, where it is installed, finds nothing
 * to say about the two files.
 *
 * SQLLOCK_CLI_PATH is the built tool, SQLLOCK_EXAMPLES_DIR the folder of
 * the examples (tests/CMakeLists.txt).
 *
 * The cases are in tests/examples/, by group (crontab.c, systemd.c),
 * with what they share in examples/common.c.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <pwd.h>

#include "test_util.h"
#include "test_run.h"
#include "test_spawn.h"

#if !defined(SQLLOCK_CLI_PATH) || !defined(SQLLOCK_EXAMPLES_DIR)
#error "tests/CMakeLists.txt defines the paths this test needs"
#endif

#include "examples/examples.h"

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_examples_crontab),
        cmocka_unit_test(test_examples_systemd),
        cmocka_unit_test(test_examples_systemd_verify),
    };
    return TU_RUN_PER_URL("examples", &g_url, tests, ex_group_setup,
                          ex_group_teardown);
}
