/*
 * runfault.h -- what the groups of test_runfault share: the bounds, the
 * process tree a command starts, the helpers for the job's processes,
 * the guard and the C3 cases' own server (runfault/common.c); and the
 * cases of each group, for main() (tests/test_runfault.c). The fixture,
 * the jobs, running the tool, names, files, leases and rows are
 * tests/harness/tu_tool.h's.
 *
 * Include after cmocka.h, test_util.h, test_run.h, test_spawn.h and
 * tu_tool.h.
 */
#ifndef SQLLOCK_TEST_RUNFAULT_H
#define SQLLOCK_TEST_RUNFAULT_H

#include <stdint.h>
#include <sys/types.h>

#ifndef SQLLOCK_CLI_PATH
#error "SQLLOCK_CLI_PATH must name the built sqllock tool"
#endif

/* The bound on the time from the runner's death to the end of the last
 * process of its job (measured times are printed; they are a few ms). */
#define GONE_MS 3000

/* A command that starts a child and a grandchild in its own group, a
 * child in a session of its own with a child of its own, and an orphan
 * (its parent exits at once), then writes its pid to the file %s. */
#define TREE "sleep 300 & sh -c 'sleep 300 & wait' & " \
             "setsid sh -c 'sleep 300 & wait' & (sleep 300 &); " \
             "echo $$ > '%s'; wait"
#define TREE_PROCS 7

/* runfault/common.c */
extern const char *g_url;       /* the URL the current group runs on */
extern int64_t g_worst_ms;      /* the slowest end of a job, for the log */
void rf_touch(const char *path);
int rf_job_procs(const char *name, int prefix, int kill_them);
pid_t rf_find_guard(pid_t runner);
/* rf_find_guard() until the runner's guard shows (it names itself
 * "sqllock-guard" when it first runs, which on a loaded machine can come
 * after the runner has gone on), for up to 3 s scaled; 0 if it never
 * does. */
pid_t rf_wait_guard(pid_t runner);
int64_t rf_gone(const char *name, pid_t guard, int64_t t0,
                const char *when);
void rf_wait_stderr(tt_fixture *f, tt_job *j, const char *text);
void rf_wait_tree(const char *name);
int rf_setup(void **state);
int rf_teardown(void **state);

/* The C3 cases' own server (tests/own_servers.sh): the servers.sh
 * directory and script behind g_url, or the case cannot run. */
typedef struct rf_server {
    const char *dir;
    const char *script;
    int is_pg;                 /* PostgreSQL, else MariaDB */
} rf_server;
void rf_own_server(rf_server *s, const char *what);
/* Restarts it in the background: stopped as `pg_mode`/`my_mode` says
 * (servers.sh restart-pg / restart-my), started again `down_s` seconds
 * later; `down` is created once it is down, `back` once it is up. */
void rf_restart_in_background(const rf_server *s, const char *pg_mode,
                              const char *my_mode, int down_s,
                              const char *down, const char *back);
/* Waits up to ms for `path` to exist (fails the case when it does not). */
void rf_wait_file(const char *path, int64_t ms);
/* Another "host" after a restart: opens g_url (trying again while the
 * server is not back), takes `name` (waiting up to 15 s, polling at most
 * every backoff_max_ms), releases it; returns when it had it, in ms of
 * tu_now_ms(). */
int64_t rf_take_after_restart(const char *name, int64_t backoff_max_ms);
/* The group's own handle died with the server: its leases are freed and
 * it is opened again. */
void rf_reopen(tt_fixture *f);

/* runfault/killed.c: the runner or its guard killed (X1) */
void test_runfault_X1_runner_killed_while_command_runs(void **state);
void test_runfault_X1_runner_killed_before_grant(void **state);
void test_runfault_X1_runner_killed_after_command(void **state);
void test_runfault_X1_runner_killed_at_random(void **state);
void test_runfault_X1_guard_killed(void **state);
void test_runfault_X1_leftovers_stopped_before_release(void **state);

/* runfault/exits.c: a loss in the exit code (X2, X3), a restart (C3) */
void test_runfault_X2_X3_paused_runner_exits_76(void **state);
void test_runfault_X2_release_finds_takeover_exits_76(void **state);
void test_runfault_C3_database_restart_mid_job(void **state);
void test_runfault_C3_outage_of_2s(void **state);
void test_runfault_C3_outage_of_10s(void **state);
void test_runfault_C3_library_release_through_outage(void **state);

/* runfault/hold.c: --hold-at-least (X4) */
void test_runfault_X4_hold_at_least_runs_once(void **state);

/* runfault/messages.c: the busy message, --quiet, --verbose */
void test_runfault_busy_message_and_quiet(void **state);
void test_runfault_verbose_events_in_order(void **state);
#endif /* SQLLOCK_TEST_RUNFAULT_H */
