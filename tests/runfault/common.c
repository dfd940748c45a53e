/*
 * common.c -- test_runfault: the helpers of its own (the job's
 * processes, the guard, the C3 cases' own server) and the fixture's
 * setup and teardown (runfault.h); running the tool, names, files,
 * leases and rows are tests/harness/tu_tool.h's.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <sys/prctl.h>

#include "test_util.h"
#include "test_run.h"
#include "test_spawn.h"
#include "tu_tool.h"
#include "runfault.h"

const char *g_url;
int64_t g_worst_ms;     /* the slowest end of a job, for the log */

void rf_touch(const char *path)
{
    FILE *fp = fopen(path, "w");

    assert_non_null(fp);
    fclose(fp);
}

/* The live processes whose environment holds SQLLOCK_NAME=<name> (any
 * name starting with `name` when `prefix`): the job's. With `kill_them`,
 * each gets SIGKILL. Returns how many there were. */
int rf_job_procs(const char *name, int prefix, int kill_them)
{
    static char env[65536];
    char path[300], want[400];
    struct dirent *e;
    size_t wl;
    DIR *d;
    int n = 0;

    snprintf(want, sizeof want, "SQLLOCK_NAME=%s", name);
    wl = strlen(want);
    d = opendir("/proc");
    assert_non_null(d);
    while ((e = readdir(d)) != NULL) {
        size_t len = 0, off;
        ssize_t r;
        pid_t pid;
        int fd, match = 0;

        if (e->d_name[0] < '1' || e->d_name[0] > '9')
            continue;
        snprintf(path, sizeof path, "/proc/%s/environ", e->d_name);
        fd = open(path, O_RDONLY);
        if (fd < 0)
            continue;
        while (len < sizeof env - 1
               && (r = read(fd, env + len, sizeof env - 1 - len)) > 0)
            len += (size_t)r;
        close(fd);
        env[len] = '\0';
        for (off = 0; off < len && !match; off += strlen(env + off) + 1)
            match = strncmp(env + off, want, wl) == 0
                    && (prefix || env[off + wl] == '\0');
        pid = (pid_t)strtol(e->d_name, NULL, 10);
        if (match && tt_pid_alive(pid)) {
            n++;
            if (kill_them)
                kill(pid, SIGKILL);
        }
    }
    closedir(d);
    return n;
}

/* The guard of the runner `runner`: its child named sqllock-guard; 0
 * when there is none (yet). */
pid_t rf_find_guard(pid_t runner)
{
    char path[300], buf[512];
    struct dirent *e;
    pid_t found = 0;
    DIR *d = opendir("/proc");

    assert_non_null(d);
    while (found == 0 && (e = readdir(d)) != NULL) {
        const char *p;
        long ppid;
        char state;

        if (e->d_name[0] < '1' || e->d_name[0] > '9')
            continue;
        snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
        if (tu_read_file(path, buf, sizeof buf) == 0
            || strstr(buf, "(sqllock-guard)") == NULL)
            continue;
        p = strrchr(buf, ')');
        if (p != NULL && sscanf(p + 1, " %c %ld", &state, &ppid) == 2
            && ppid == (long)runner && state != 'Z')
            found = (pid_t)strtol(e->d_name, NULL, 10);
    }
    closedir(d);
    return found;
}

pid_t rf_wait_guard(pid_t runner)
{
    int64_t end = tu_now_ms() + tu_scaled_ms(3000);
    pid_t g;

    while ((g = rf_find_guard(runner)) == 0 && tu_now_ms() < end)
        tu_sleep_ms(2);
    return g;
}

/* Waits until no process of job `name` runs and `guard` (when not 0) has
 * ended, polling every 2 ms; returns the time that took, and fails the
 * test (naming what is left) when it takes longer than GONE_MS. Reaps
 * the guard, which is this process's child by then. */
int64_t rf_gone(const char *name, pid_t guard, int64_t t0,
                const char *when)
{
    int64_t ms;
    int left = 0;

    for (;;) {
        left = rf_job_procs(name, 0, 0);
        ms = tu_now_ms() - t0;
        if (left == 0 && (guard == 0 || !tt_pid_alive(guard)))
            break;
        if (ms > GONE_MS) {
            int g = guard != 0 && tt_pid_alive(guard);

            rf_job_procs(name, 0, 1);
            if (guard != 0)
                kill(guard, SIGKILL);
            fail_msg("%s: %d process(es) of the job%s still ran %lld ms "
                     "after the runner's death", when, left,
                     g ? " and its guard" : "", (long long)ms);
        }
        tu_sleep_ms(2);
    }
    if (guard != 0)
        waitpid(guard, NULL, WNOHANG);
    if (ms > g_worst_ms)
        g_worst_ms = ms;
    return ms;
}

/* Waits until the tool's stderr holds `text`. */
void rf_wait_stderr(tt_fixture *f, tt_job *j, const char *text)
{
    int64_t end = tu_now_ms() + TT_START_MS;
    int code;

    for (;;) {
        tu_read_file(j->err, f->err, sizeof f->err);
        if (strstr(f->err, text) != NULL)
            return;
        code = tu_wait_for(j->pid, 0);
        if (code >= 0) {
            tt_collect(f, j);
            fail_msg("sqllock ended (exit %d) before saying \"%s\"; "
                     "stderr: %s", code, text, f->err);
        }
        if (tu_now_ms() >= end) {
            tu_kill_wait(j->pid);
            tt_collect(f, j);
            fail_msg("sqllock did not say \"%s\" within %d ms; stderr: %s",
                     text, TT_START_MS, f->err);
        }
        tu_sleep_ms(5);
    }
}

/* Waits until every process of the TREE command runs. */
void rf_wait_tree(const char *name)
{
    int64_t end = tu_now_ms() + TT_START_MS;
    int n;

    while ((n = rf_job_procs(name, 0, 0)) < TREE_PROCS) {
        if (tu_now_ms() >= end)
            fail_msg("only %d of the command's %d processes started", n,
                     TREE_PROCS);
        tu_sleep_ms(5);
    }
}

int rf_setup(void **state)
{
    tt_fixture *f = tt_setup(SQLLOCK_CLI_PATH, g_url, "runfault");

    if (f == NULL)
        return -1;
    *state = f;
    return 0;
}

int rf_teardown(void **state)
{
    tt_fixture *f = *state;
    char prefix[64];

    if (f == NULL)
        return 0;
    tt_kill_jobs(f);
    /* After a failed check: nothing of any job keeps running, and the
     * guards and orphans re-parented here are reaped. */
    snprintf(prefix, sizeof prefix, "runfault-%ld-", (long)getpid());
    rf_job_procs(prefix, 1, 1);
    tu_sleep_ms(20);
    while (waitpid(-1, NULL, WNOHANG) > 0)
        ;
    tt_teardown(f);
    return 0;
}

void rf_own_server(rf_server *s, const char *what)
{
    const char *pg = getenv("SQLLOCK_TEST_PG_URL");
    const char *my = getenv("SQLLOCK_TEST_MYSQL_URL");

    s->dir = getenv("SQLLOCK_TEST_SERVERS_DIR");
    s->script = getenv("SQLLOCK_TEST_SERVERS_SCRIPT");
    s->is_pg = pg != NULL && strcmp(g_url, pg) == 0;
    if (s->dir == NULL || *s->dir == '\0' || s->script == NULL
        || *s->script == '\0' || strchr(s->dir, '\'')
        || strchr(s->script, '\'')
        || !(s->is_pg || (my != NULL && strcmp(g_url, my) == 0)))
        tu_cannot_run("%s: no server of SQLLOCK_TEST_SERVERS_DIR behind "
                      "this URL (scripts/test.sh runs this entry through "
                      "tests/own_servers.sh)", what);
}

void rf_restart_in_background(const rf_server *s, const char *pg_mode,
                              const char *my_mode, int down_s,
                              const char *down, const char *back)
{
    char cmd[20000];

    snprintf(cmd, sizeof cmd, "(SQLLOCK_SERVERS_DOWN_FILE='%s' bash '%s' %s "
             "'%s' %s %d >&2; touch '%s') &", down, s->script,
             s->is_pg ? "restart-pg" : "restart-my", s->dir,
             s->is_pg ? pg_mode : my_mode, down_s, back);
    fflush(stdout);
    if (system(cmd) != 0)
        fail_msg("%s failed", cmd);
}

void rf_wait_file(const char *path, int64_t ms)
{
    int64_t end = tu_now_ms() + ms;

    while (!tt_file_exists(path) && tu_now_ms() < end)
        tu_sleep_ms(10);
    if (!tt_file_exists(path))
        fail_msg("%s did not appear within %lld ms", path, (long long)ms);
}

int64_t rf_take_after_restart(const char *name, int64_t backoff_max_ms)
{
    sqllock_lease_options lo = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_lease *l = NULL;
    sqllock_db *db = NULL;
    int64_t had;
    int rc, i;

    rc = sqllock_open(g_url, NULL, &db);
    for (i = 0; i < 100 && rc == SQLLOCK_ECONNECT; i++) {
        sqllock_close(db);
        tu_sleep_ms(20);
        rc = sqllock_open(g_url, NULL, &db);
    }
    EXPECT_RC(db, rc, SQLLOCK_OK, "open after the restart");
    lo.ttl_ms = 5000;
    lo.backoff_max_ms = backoff_max_ms;
    EXPECT_RC(db, sqllock_lease_new(db, name, &lo, &l), SQLLOCK_OK, "new");
    EXPECT_RC(db, sqllock_lease_acquire(l, 15000), SQLLOCK_OK,
              "acquire after the restart");
    had = tu_now_ms();
    EXPECT_RC(db, sqllock_lease_release(l), SQLLOCK_OK, "release");
    sqllock_lease_free(l);
    sqllock_close(db);
    return had;
}

void rf_reopen(tt_fixture *f)
{
    int i;

    for (i = 0; i < 4; i++) {
        sqllock_lease_free(f->leases[i]);
        f->leases[i] = NULL;
    }
    sqllock_close(f->db);
    f->db = NULL;
    EXPECT_RC(f->db, sqllock_open(g_url, NULL, &f->db), SQLLOCK_OK,
              "reopen");
}
