/*
 * tu_tool.c -- the `sqllock` tool run in the background by the tests of
 * `run` (tu_tool.h).
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "internal.h"
#include "test_util.h"
#include "test_run.h"
#include "test_spawn.h"
#include "tu_env.h"
#include "tu_tool.h"

tt_fixture *tt_setup(const char *tool, const char *url, const char *prefix)
{
    tt_fixture *f = calloc(1, sizeof *f);
    int rc;

    if (f == NULL)
        return NULL;
    f->tool = tool;
    f->url = url;
    f->prefix = prefix;
    f->dir = tu_mkdtemp();
    if (f->dir == NULL) {
        free(f);
        return NULL;
    }
    rc = sqllock_open(url, NULL, &f->db);
    if (rc == SQLLOCK_OK)
        rc = sqllock_init(f->db);
    if (rc != SQLLOCK_OK) {
        fprintf(stderr, "open/init: %s: %s\n", sqllock_errname(rc),
                sqllock_errmsg(f->db));
        tt_teardown(f);
        return NULL;
    }
    f->sql = tu_sql_for(sqllock_db_driver(f->db));
    if (f->sql == NULL) {
        tt_teardown(f);
        return NULL;
    }
    return f;
}

void tt_kill_jobs(tt_fixture *f)
{
    int i;

    for (i = 0; i < TT_MAX_JOBS; i++) {
        tt_job *j = &f->jobs[i];

        if (j->pid == 0)
            continue;
        if (j->cmd > 0)
            kill(-j->cmd, SIGKILL);
        tu_kill_wait(j->pid);
        j->pid = 0;
    }
}

void tt_teardown(tt_fixture *f)
{
    int i;

    if (f == NULL)
        return;
    /* After a failed check: nothing keeps running. */
    tt_kill_jobs(f);
    for (i = 0; i < 4; i++) {
        if (f->leases[i] != NULL && sqllock_lease_count(f->leases[i]) > 0)
            sqllock_lease_release(f->leases[i]);
        sqllock_lease_free(f->leases[i]);
    }
    sqllock_close(f->db);
    tu_rmdir(f->dir);
    free(f->dir);
    free(f);
}

const char *tt_name(tt_fixture *f, const char *tail)
{
    char *b = f->names[f->next_name++ % 16];

    snprintf(b, sizeof f->names[0], "%s-%ld-%s", f->prefix, (long)getpid(),
             tail);
    return b;
}

void tt_fpath(tt_fixture *f, char *buf, size_t size, const char *what)
{
    snprintf(buf, size, "%s/%s-%u", f->dir, what, f->next_file++);
}

int tt_file_exists(const char *path)
{
    struct stat st;

    return stat(path, &st) == 0;
}

int tt_pid_alive(pid_t pid)
{
    char path[64], buf[512];
    const char *p;

    if (kill(pid, 0) != 0 && errno == ESRCH)
        return 0;
    snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
    if (tu_read_file(path, buf, sizeof buf) > 0) {
        p = strrchr(buf, ')');
        if (p != NULL && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X'))
            return 0;
    }
    return 1;
}

int tt_pid_gone_within(pid_t pid, int64_t ms)
{
    int64_t end = tu_now_ms() + ms;

    while (tt_pid_alive(pid)) {
        if (tu_now_ms() >= end)
            return 0;
        tu_sleep_ms(10);
    }
    return 1;
}

/* The tool with `args`, after --db and the group's URL when `with_db`. */
static tt_job *start_tool(tt_fixture *f, const char *const *args, int with_db)
{
    const char *argv[TT_MAX_ARGS + 4];
    tt_job *j = NULL;
    int n = 0, i;

    for (i = 0; i < TT_MAX_JOBS && j == NULL; i++)
        if (f->jobs[i].pid == 0)
            j = &f->jobs[i];
    if (j == NULL)
        fail_msg("too many jobs at once");
    memset(j, 0, sizeof *j);
    argv[n++] = f->tool;
    if (with_db) {
        argv[n++] = "--db";
        argv[n++] = f->url;
    }
    for (; *args != NULL && n < TT_MAX_ARGS; args++)
        argv[n++] = *args;
    argv[n] = NULL;
    tt_fpath(f, j->out, sizeof j->out, "stdout");
    tt_fpath(f, j->err, sizeof j->err, "stderr");
    j->pid = tu_spawn(argv, j->out, j->err, 1);
    return j;
}

tt_job *tt_start_tool(tt_fixture *f, const char *const *args)
{
    return start_tool(f, args, 1);
}

void tt_collect(tt_fixture *f, tt_job *j)
{
    j->pid = 0;
    tu_read_file(j->out, f->out, sizeof f->out);
    tu_read_file(j->err, f->err, sizeof f->err);
}

int tt_finish(tt_fixture *f, tt_job *j, int64_t ms)
{
    int code = tu_wait_for(j->pid, ms);

    if (code < 0) {
        tu_kill_wait(j->pid);
        if (j->cmd > 0)
            kill(-j->cmd, SIGKILL);
        j->pid = 0;
        tu_read_file(j->err, f->err, sizeof f->err);
        fail_msg("sqllock still running after %lld ms; stderr: %s",
                 (long long)ms, f->err);
    }
    tt_collect(f, j);
    return code;
}

int tt_run_tool(tt_fixture *f, const char *const *args)
{
    return tt_finish(f, start_tool(f, args, 1), tu_scaled_ms(60000));
}

int tt_run_bare(tt_fixture *f, const char *const *args)
{
    return tt_finish(f, start_tool(f, args, 0), tu_scaled_ms(60000));
}

pid_t tt_wait_started(tt_fixture *f, tt_job *j, const char *path)
{
    int64_t end = tu_now_ms() + TT_START_MS;
    char buf[64];
    long pid;
    int code;

    for (;;) {
        if (tu_read_file(path, buf, sizeof buf) > 0 &&
            strchr(buf, '\n') != NULL && (pid = strtol(buf, NULL, 10)) > 0) {
            j->cmd = (pid_t)pid;
            return j->cmd;
        }
        code = tu_wait_for(j->pid, 0);
        if (code >= 0) {
            tt_collect(f, j);
            fail_msg("sqllock ended (exit %d) before the command started; "
                     "stderr: %s", code, f->err);
        }
        if (tu_now_ms() >= end) {
            tu_kill_wait(j->pid);
            tt_collect(f, j);
            fail_msg("the command did not start within %d ms; stderr: %s",
                     TT_START_MS, f->err);
        }
        tu_sleep_ms(5);
    }
}

sqllock_lease *tt_lease_with(tt_fixture *f, const char *name, int64_t ttl_ms,
                             const char *holder)
{
    sqllock_lease_options lo = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_lease *l = NULL;
    int i;

    lo.ttl_ms = ttl_ms;
    lo.holder = holder;
    EXPECT_RC(f->db, sqllock_lease_new(f->db, name, &lo, &l), SQLLOCK_OK,
              "lease_new");
    /* A slot that is empty, or whose lease an earlier case released. */
    for (i = 0; i < 4; i++)
        if (f->leases[i] == NULL || sqllock_lease_count(f->leases[i]) == 0) {
            sqllock_lease_free(f->leases[i]);
            f->leases[i] = l;
            return l;
        }
    sqllock_lease_free(l);
    fail_msg("too many leases in one test");
    return NULL;
}

sqllock_lease *tt_lease_for(tt_fixture *f, const char *name, int64_t ttl_ms)
{
    return tt_lease_with(f, name, ttl_ms, NULL);
}

void tt_row_of(tt_fixture *f, const char *name, tu_row *r)
{
    EXPECT_RC(f->db, tu_find(f->db, name, r), SQLLOCK_OK, "list");
    if (r->found != 1)
        fail_msg("lock '%s' has no row", name);
}

void tt_expect_no_row(tt_fixture *f, const char *name)
{
    tu_row r;

    EXPECT_RC(f->db, tu_find(f->db, name, &r), SQLLOCK_OK, "list");
    if (r.found != 0)
        fail_msg("lock '%s' still has a row (owner %s, %lld ms left)", name,
                 r.owner, (long long)r.remaining_ms);
}

void tt_delete_row(tt_fixture *f, const char *name)
{
    sqllock_value v = sqllock__text(name);
    int64_t affected = -1;

    EXPECT_RC(f->db, sqllock__exec_sql(f->db, f->sql->delete_lease, &v, 1,
                                       NULL, NULL, &affected),
              SQLLOCK_OK, "delete the lease row");
    assert_int_equal(affected, 1);
}
