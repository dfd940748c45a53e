/*
 * tu_tool.h -- the `sqllock` tool run in the background by the tests of
 * `run` (test_runcmd, test_runfault), kept once here instead of a copy
 * in each: a fixture per group of cases (a directory, the test's own
 * connection, the jobs and leases a failed case leaves for teardown),
 * jobs (the tool and the command it started), unique names and files,
 * and the rows a case looks at.
 *
 * Include after cmocka.h and test_util.h.
 */
#ifndef SQLLOCK_TU_TOOL_H
#define SQLLOCK_TU_TOOL_H

#include <stdint.h>
#include <sys/types.h>

#include "sqllock.h"

#define TT_MAX_ARGS 40
#define TT_MAX_JOBS 8
/* How long a command may take to start: the tool connects first, and
 * under sanitizers everything is slow. */
#define TT_START_MS 20000

/* One run of the tool in the background. */
typedef struct tt_job {
    pid_t pid;                 /* the tool; 0 once reaped */
    pid_t cmd;                 /* the command's shell, once it started */
    char out[4300];
    char err[4300];
} tt_job;

typedef struct tt_fixture {
    char *dir;
    const char *tool;          /* the built `sqllock` */
    const char *url;           /* the group's URL (--db) */
    const char *prefix;        /* of its lock names: "<prefix>-<pid>-" */
    sqllock_db *db;            /* the test's own connection */
    const struct tu_sql *sql;
    char out[65536];           /* the last finished job's stdout */
    char err[16384];           /* and stderr */
    char names[16][300];       /* see tt_name() */
    unsigned next_name;
    unsigned next_file;
    tt_job jobs[TT_MAX_JOBS];  /* pid != 0: started and not reaped, so
                                  killed in teardown should a case fail */
    sqllock_lease *leases[4];  /* freed in teardown */
} tt_fixture;

/* A fixture for the group on `url` (opened, its schema made), or NULL
 * after saying why on stderr. tt_teardown() kills what a failed case
 * left running, releases and frees its leases, and removes the
 * directory. */
tt_fixture *tt_setup(const char *tool, const char *url, const char *prefix);
void tt_teardown(tt_fixture *f);
/* Kills every job still running, and its command's group, and reaps the
 * tool (the first thing tt_teardown() does). */
void tt_kill_jobs(tt_fixture *f);

/* The lock name `tail` made unique to this process (16 live at once). */
const char *tt_name(tt_fixture *f, const char *tail);
/* A fresh path in the fixture's directory. */
void tt_fpath(tt_fixture *f, char *buf, size_t size, const char *what);
int tt_file_exists(const char *path);
/* 1 while `pid` runs; a zombie waiting to be reaped (or a process being
 * reaped) counts as ended. */
int tt_pid_alive(pid_t pid);
/* Waits up to `ms` for `pid` to end; 1 when it did. */
int tt_pid_gone_within(pid_t pid, int64_t ms);

/* Starts `sqllock --db URL args...` in the background. */
tt_job *tt_start_tool(tt_fixture *f, const char *const *args);
/* The job was reaped: its output goes to f->out and f->err. */
void tt_collect(tt_fixture *f, tt_job *j);
/* Waits up to `ms` for the tool to end and returns its exit code (1000 +
 * N when a signal killed it); its output lands in f->out and f->err. A
 * tool still running then fails the test. */
int tt_finish(tt_fixture *f, tt_job *j, int64_t ms);
/* Runs the tool to its end (at most a minute, scaled by tu_slowdown());
 * returns its exit code. tt_run_bare() the same without the fixture's
 * --db. */
int tt_run_tool(tt_fixture *f, const char *const *args);
int tt_run_bare(tt_fixture *f, const char *const *args);
/* Waits until the command has written its shell's pid (and a newline) to
 * `path`, which it does first thing; returns that pid. Fails the test if
 * the tool ends first, or the command does not start in TT_START_MS. */
pid_t tt_wait_started(tt_fixture *f, tt_job *j, const char *path);

#define TT_EXPECT_EXIT(f, want, ...)                                           \
    do {                                                                       \
        const char *const args_[] = { __VA_ARGS__, NULL };                     \
        int got_ = tt_run_tool((f), args_);                                    \
        if (got_ != (want))                                                    \
            fail_msg("sqllock %s %s ...: exit %d, want %d\nstdout: %s\n"       \
                     "stderr: %s", args_[0], args_[1], got_, (want), (f)->out, \
                     (f)->err);                                                \
    } while (0)

#define TT_START(f, j, ...)                                                    \
    do {                                                                       \
        const char *const args_[] = { __VA_ARGS__, NULL };                     \
        (j) = tt_start_tool((f), args_);                                       \
    } while (0)

/* A lease handle on the test's own connection (with `holder`, or the
 * default), freed in teardown. */
sqllock_lease *tt_lease_with(tt_fixture *f, const char *name, int64_t ttl_ms,
                             const char *holder);
sqllock_lease *tt_lease_for(tt_fixture *f, const char *name, int64_t ttl_ms);
/* The row of `name`, which must exist. */
void tt_row_of(tt_fixture *f, const char *name, struct tu_row *r);
/* The lock is free: its row is gone (released, not merely expired). */
void tt_expect_no_row(tt_fixture *f, const char *name);
/* Deletes the row behind everybody's back, as an operator would. */
void tt_delete_row(tt_fixture *f, const char *name);

#endif
