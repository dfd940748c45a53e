/*
 * cli.h -- what the groups of test_cli share: the fixture, the macros
 * that run the tool and check what it printed, and the helpers for lock
 * names, running the tool, acquiring, files, and the group's setup and
 * teardown (cli/common.c); and the cases of each group, for main()
 * (tests/test_cli.c).
 *
 * Include after cmocka.h, test_util.h, test_run.h, test_spawn.h and
 * tu_tool.h.
 */
#ifndef SQLLOCK_TEST_CLI_H
#define SQLLOCK_TEST_CLI_H

#include <stdint.h>

#ifndef SQLLOCK_CLI_PATH
#error "SQLLOCK_CLI_PATH must name the built sqllock tool"
#endif

/* The group's fixture is the harness's (tests/harness/tu_tool.h): its
 * directory, URL, the last run's stdout and stderr, unique names. */
typedef tt_fixture fixture;

#define EXPECT_BARE(f, want, ...)                                              \
    do {                                                                       \
        const char *const args_[] = { __VA_ARGS__, NULL };                     \
        int got_ = tt_run_bare((f), args_);                                    \
        if (got_ != (want))                                                    \
            fail_msg("sqllock %s ... (no --db): exit %d, want %d\nstdout: "    \
                     "%s\nstderr: %s", args_[0], got_, (want), (f)->out,       \
                     (f)->err);                                                \
    } while (0)

#define EXPECT_EXIT(f, want, ...)                                              \
    do {                                                                       \
        const char *const args_[] = { __VA_ARGS__, NULL };                     \
        int got_ = tt_run_tool((f), args_);                                         \
        if (got_ != (want))                                                    \
            fail_msg("sqllock %s ...: exit %d, want %d\nstdout: %s\n"          \
                     "stderr: %s", args_[0], got_, (want), (f)->out,           \
                     (f)->err);                                                \
    } while (0)

/* The last run's stdout (or stderr) contains `text`. */
#define EXPECT_CONTAINS(f, text)                                               \
    do {                                                                       \
        if (strstr((f)->out, (text)) == NULL)                                  \
            fail_msg("no \"%s\" in stdout:\n%s\nstderr: %s", (text),          \
                     (f)->out, (f)->err);                                      \
    } while (0)
#define EXPECT_CONTAINS_ERR(f, text)                                           \
    do {                                                                       \
        if (strstr((f)->err, (text)) == NULL)                                  \
            fail_msg("no \"%s\" in stderr:\n%s", (text), (f)->err);           \
    } while (0)

/* The URL the current group runs on. */
extern const char *g_url;

/* cli/common.c: acquiring with the tool, the group's setup and
 * teardown */
/* The lock name `tail` made unique to this process. */
#define cl_U(f, tail) tt_name((f), (tail))
void cl_acquire(fixture *f, const char *name, const char *ttl,
                char owner[SQLLOCK_OWNER_LEN + 1], int64_t *token);
int cl_run_with_url(fixture *f, const char *url, const char *const *args);
int cl_setup(void **state);
int cl_teardown(void **state);

/* cli/commands.c: init, acquire, release, run, usage, durations */
void test_cli_init(void **state);
void test_cli_acquire_busy_release(void **state);
void test_cli_run_busy_does_not_run(void **state);
void test_cli_run_exit_codes(void **state);
void test_cli_run_passes_token(void **state);
void test_cli_usage_errors(void **state);
void test_cli_durations(void **state);
void test_cli_release_held_by_another(void **state);
void test_cli_duration_too_long(void **state);
void test_cli_run_default_ttl(void **state);

/* cli/tool.c: no database named, the demo, a driver not built, -V, -h,
 * a command's --help, malformed URLs, read-only SQLite opens, failed
 * connects */
void test_cli_no_database_refused(void **state);
void test_cli_demo_on_database(void **state);
void test_cli_demo_touches_only_its_tables(void **state);
#ifdef SQLLOCK_CLI_SQLITE_ONLY_PATH
void test_cli_driver_not_built_says_how(void **state);
#endif
void test_cli_version_and_help(void **state);
void test_cli_command_help(void **state);
void test_cli_malformed_url_is_usage(void **state);
void test_cli_read_commands_do_not_create(void **state);
void test_cli_connect_failure_messages(void **state);

/* cli/admin.c: list, reap, show, release --force, history */
void test_cli_list_json(void **state);
void test_cli_reap(void **state);
void test_cli_show(void **state);
void test_cli_release_force(void **state);
void test_cli_force_release_of_a_permit(void **state);
void test_cli_C5_force_audit_names_role_and_outlives_runs(void **state);
void test_cli_history_bounded(void **state);
void test_cli_history_of_runs(void **state);
void test_cli_names_checked_as_acquire(void **state);

#endif /* SQLLOCK_TEST_CLI_H */
