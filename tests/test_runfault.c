/*
 * test_runfault.c -- `sqllock run` under faults (issue 15), with real
 * processes on every database URL in SQLLOCK_TEST_URLS:
 *
 *   - X1: the runner SIGKILLed before the grant, while its command runs
 *     with children, grandchildren, an orphan and a child in a session of
 *     its own, while what the command left behind is being stopped, and
 *     at random moments: nothing of the job is left, within a bound the
 *     test measures and prints; the guard SIGKILLed alone: the same, and
 *     the runner says so; a command that leaves processes running when
 *     it exits: they are stopped before the lock is given up;
 *   - X2, X3: a runner stopped past its ttl while its command runs on and
 *     exits 0 exits 76 (and the guard told the command at the deadline);
 *     a release that finds the lease taken over exits 76;
 *   - X4: --hold-at-least: two "hosts" 0.3 s apart run a 1 s job once,
 *     the name stays held for the window after the runner has exited, and
 *     a --wait gets it when the window ends;
 *   - the busy message names the holder and the time left, never the
 *     owner id; --quiet prints nothing when busy (run and acquire) but
 *     still prints errors; --verbose prints the events in order;
 *   - C3: the database restarted while the job runs: the run exits with
 *     the command's code and the lock is free at once after it, not after
 *     the ttl (needs the servers scripts/servers.sh started, named by
 *     SQLLOCK_TEST_SERVERS_DIR and SQLLOCK_TEST_SERVERS_SCRIPT; skipped
 *     without them).
 *
 * The job's processes are found by their environment: every process the
 * command starts inherits SQLLOCK_NAME, which names a lock unique to the
 * test, and neither the runner nor its guard has it. The test makes
 * itself a child subreaper, so that a guard whose runner was killed is
 * re-parented to it and reaped here.
 *
 * SQLLOCK_CLI_PATH is the built tool, passed in by tests/CMakeLists.txt.
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

#ifndef SQLLOCK_CLI_PATH
#error "SQLLOCK_CLI_PATH must name the built sqllock tool"
#endif

#define MAX_ARGS 40
#define MAX_JOBS 8
/* How long a command may take to start: the tool connects first, and
 * under sanitizers everything is slow. */
#define START_MS 20000
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

typedef struct job {
    pid_t pid;                 /* the tool; 0 once reaped */
    pid_t cmd;                 /* the command's shell, once it started */
    char out[4300];
    char err[4300];
} job;

typedef struct fixture {
    char *dir;
    sqllock_db *db;
    const tu_sql *sql;
    char out[16384];
    char err[16384];
    char names[16][300];
    unsigned next_name;
    unsigned next_file;
    job jobs[MAX_JOBS];
    sqllock_lease *leases[4];
} fixture;

static const char *g_url;
static int64_t g_worst_ms;     /* the slowest end of a job, for the log */

static const char *U(fixture *f, const char *tail)
{
    char *b = f->names[f->next_name++ % 16];

    snprintf(b, sizeof f->names[0], "runfault-%ld-%s", (long)getpid(), tail);
    return b;
}

static void fpath(fixture *f, char *buf, size_t size, const char *what)
{
    snprintf(buf, size, "%s/%s-%u", f->dir, what, f->next_file++);
}

static int file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

static void touch(const char *path)
{
    FILE *fp = fopen(path, "w");

    assert_non_null(fp);
    fclose(fp);
}

/* 1 while `pid` runs; a zombie counts as ended. */
static int pid_alive(pid_t pid)
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

/* The live processes whose environment holds SQLLOCK_NAME=<name> (any
 * name starting with `name` when `prefix`): the job's. With `kill_them`,
 * each gets SIGKILL. Returns how many there were. */
static int job_procs(const char *name, int prefix, int kill_them)
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
        if (match && pid_alive(pid)) {
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
static pid_t find_guard(pid_t runner)
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

/* Waits until no process of job `name` runs and `guard` (when not 0) has
 * ended, polling every 2 ms; returns the time that took, and fails the
 * test (naming what is left) when it takes longer than GONE_MS. Reaps
 * the guard, which is this process's child by then. */
static int64_t gone(const char *name, pid_t guard, int64_t t0,
                    const char *when)
{
    int64_t ms;
    int left = 0;

    for (;;) {
        left = job_procs(name, 0, 0);
        ms = tu_now_ms() - t0;
        if (left == 0 && (guard == 0 || !pid_alive(guard)))
            break;
        if (ms > GONE_MS) {
            int g = guard != 0 && pid_alive(guard);

            job_procs(name, 0, 1);
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

static void forget_job(job *j)
{
    j->pid = 0;
}

static job *start_tool(fixture *f, const char *const *args)
{
    const char *argv[MAX_ARGS + 4];
    job *j = NULL;
    int n = 0, i;

    for (i = 0; i < MAX_JOBS && j == NULL; i++)
        if (f->jobs[i].pid == 0)
            j = &f->jobs[i];
    if (j == NULL)
        fail_msg("too many jobs at once");
    memset(j, 0, sizeof *j);
    argv[n++] = SQLLOCK_CLI_PATH;
    argv[n++] = "--db";
    argv[n++] = g_url;
    for (; *args != NULL && n < MAX_ARGS; args++)
        argv[n++] = *args;
    argv[n] = NULL;
    fpath(f, j->out, sizeof j->out, "stdout");
    fpath(f, j->err, sizeof j->err, "stderr");
    j->pid = tu_spawn(argv, j->out, j->err, 1);
    return j;
}

static void collect(fixture *f, job *j)
{
    forget_job(j);
    tu_read_file(j->out, f->out, sizeof f->out);
    tu_read_file(j->err, f->err, sizeof f->err);
}

static int finish(fixture *f, job *j, int64_t ms)
{
    int code = tu_wait_for(j->pid, ms);

    if (code < 0) {
        tu_kill_wait(j->pid);
        forget_job(j);
        tu_read_file(j->err, f->err, sizeof f->err);
        fail_msg("sqllock still running after %lld ms; stderr: %s",
                 (long long)ms, f->err);
    }
    collect(f, j);
    return code;
}

static int run_tool(fixture *f, const char *const *args)
{
    return finish(f, start_tool(f, args), 30000);
}

#define EXPECT_EXIT(f, want, ...)                                              \
    do {                                                                       \
        const char *const args_[] = { __VA_ARGS__, NULL };                     \
        int got_ = run_tool((f), args_);                                       \
        if (got_ != (want))                                                    \
            fail_msg("sqllock %s %s ...: exit %d, want %d\nstdout: %s\n"       \
                     "stderr: %s", args_[0], args_[1], got_, (want), (f)->out, \
                     (f)->err);                                                \
    } while (0)

#define START(f, j, ...)                                                       \
    do {                                                                       \
        const char *const args_[] = { __VA_ARGS__, NULL };                     \
        (j) = start_tool((f), args_);                                          \
    } while (0)

/* Waits until the command has written its pid and a newline to `path`;
 * returns that pid. Fails the test if the tool ends first. */
static pid_t wait_started(fixture *f, job *j, const char *path)
{
    int64_t end = tu_now_ms() + START_MS;
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
            collect(f, j);
            fail_msg("sqllock ended (exit %d) before the command started; "
                     "stderr: %s", code, f->err);
        }
        if (tu_now_ms() >= end) {
            tu_kill_wait(j->pid);
            collect(f, j);
            fail_msg("the command did not start within %d ms; stderr: %s",
                     START_MS, f->err);
        }
        tu_sleep_ms(5);
    }
}

/* Waits until the tool's stderr holds `text`. */
static void wait_stderr(fixture *f, job *j, const char *text)
{
    int64_t end = tu_now_ms() + START_MS;
    int code;

    for (;;) {
        tu_read_file(j->err, f->err, sizeof f->err);
        if (strstr(f->err, text) != NULL)
            return;
        code = tu_wait_for(j->pid, 0);
        if (code >= 0) {
            collect(f, j);
            fail_msg("sqllock ended (exit %d) before saying \"%s\"; "
                     "stderr: %s", code, text, f->err);
        }
        if (tu_now_ms() >= end) {
            tu_kill_wait(j->pid);
            collect(f, j);
            fail_msg("sqllock did not say \"%s\" within %d ms; stderr: %s",
                     text, START_MS, f->err);
        }
        tu_sleep_ms(5);
    }
}

/* Waits until every process of the TREE command runs. */
static void wait_tree(const char *name)
{
    int64_t end = tu_now_ms() + START_MS;
    int n;

    while ((n = job_procs(name, 0, 0)) < TREE_PROCS) {
        if (tu_now_ms() >= end)
            fail_msg("only %d of the command's %d processes started", n,
                     TREE_PROCS);
        tu_sleep_ms(5);
    }
}

static sqllock_lease *lease_with(fixture *f, const char *name,
                                 int64_t ttl_ms, const char *holder)
{
    sqllock_lease_options lo = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_lease *l = NULL;
    int i;

    lo.ttl_ms = ttl_ms;
    lo.holder = holder;
    EXPECT_RC(f->db, sqllock_lease_new(f->db, name, &lo, &l), SQLLOCK_OK,
              "lease_new");
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

static sqllock_lease *lease_for(fixture *f, const char *name, int64_t ttl_ms)
{
    return lease_with(f, name, ttl_ms, NULL);
}

static void row_of(fixture *f, const char *name, tu_row *r)
{
    EXPECT_RC(f->db, tu_find(f->db, name, r), SQLLOCK_OK, "list");
    if (r->found != 1)
        fail_msg("lock '%s' has no row", name);
}

static void expect_no_row(fixture *f, const char *name)
{
    tu_row r;

    EXPECT_RC(f->db, tu_find(f->db, name, &r), SQLLOCK_OK, "list");
    if (r.found != 0)
        fail_msg("lock '%s' still has a row (owner %s, %lld ms left)", name,
                 r.owner, (long long)r.remaining_ms);
}

static void delete_row(fixture *f, const char *name)
{
    sqllock_value v = sqllock__text(name);
    int64_t affected = -1;

    EXPECT_RC(f->db, sqllock__exec_sql(f->db, f->sql->delete_lease, &v, 1,
                                       NULL, NULL, &affected),
              SQLLOCK_OK, "delete the lease row");
    assert_int_equal(affected, 1);
}

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    int rc;

    if (f == NULL)
        return -1;
    f->dir = tu_mkdtemp();
    if (f->dir == NULL)
        return -1;
    rc = sqllock_open(g_url, NULL, &f->db);
    if (rc == SQLLOCK_OK)
        rc = sqllock_init(f->db);
    if (rc != SQLLOCK_OK) {
        fprintf(stderr, "open/init: %s: %s\n", sqllock_errname(rc),
                sqllock_errmsg(f->db));
        return -1;
    }
    f->sql = tu_sql_for(sqllock_db_driver(f->db));
    if (f->sql == NULL)
        return -1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    char prefix[64];
    int i;

    if (f == NULL)
        return 0;
    for (i = 0; i < MAX_JOBS; i++) {
        job *j = &f->jobs[i];
        if (j->pid == 0)
            continue;
        if (j->cmd > 0)
            kill(-j->cmd, SIGKILL);
        tu_kill_wait(j->pid);
    }
    /* After a failed check: nothing of any job keeps running, and the
     * guards and orphans re-parented here are reaped. */
    snprintf(prefix, sizeof prefix, "runfault-%ld-", (long)getpid());
    job_procs(prefix, 1, 1);
    tu_sleep_ms(20);
    while (waitpid(-1, NULL, WNOHANG) > 0)
        ;
    for (i = 0; i < 4; i++) {
        if (f->leases[i] != NULL && sqllock_lease_count(f->leases[i]) > 0)
            sqllock_lease_release(f->leases[i]);
        sqllock_lease_free(f->leases[i]);
    }
    sqllock_close(f->db);
    tu_rmdir(f->dir);
    free(f->dir);
    free(f);
    return 0;
}

/* ------------------------------------------------------------------ */
/* X1: the command never outlives its runner's hold                    */
/* ------------------------------------------------------------------ */

/* SIGKILL of the runner while its command runs with children,
 * grandchildren, an orphan and a child in a session of its own: all of
 * them and the guard are gone within GONE_MS. The lock is not released
 * (nobody could), so it stays held until it expires. */
static void test_runfault_X1_runner_killed_while_command_runs(void **state)
{
    fixture *f = *state;
    const char *name = U(f, "kill-run");
    char started[4300], script[9000];
    pid_t guard;
    int64_t ms;
    tu_row r;
    job *j;

    fpath(f, started, sizeof started, "started");
    snprintf(script, sizeof script, TREE, started);
    START(f, j, "run", name, "--ttl", "2s", "--", "sh", "-c", script);
    wait_started(f, j, started);
    wait_tree(name);
    guard = find_guard(j->pid);
    assert_true(guard > 0);
    assert_int_equal(kill(j->pid, SIGKILL), 0);
    ms = gone(name, guard, tu_now_ms(), "SIGKILL while the command ran");
    assert_int_equal(finish(f, j, 5000), 1000 + SIGKILL);
    printf("    X1: %d processes of the job and the guard gone %lld ms "
           "after the runner's SIGKILL\n", TREE_PROCS, (long long)ms);
    row_of(f, name, &r);
}

/* SIGKILL of the runner while it waits for a busy lock: the guard exits
 * with it, and the command never runs. */
static void test_runfault_X1_runner_killed_before_grant(void **state)
{
    fixture *f = *state;
    const char *name = U(f, "kill-wait");
    sqllock_lease *mine = lease_for(f, name, 30000);
    char ran[4300], script[9000];
    pid_t guard;
    job *j;

    fpath(f, ran, sizeof ran, "ran");
    snprintf(script, sizeof script, "touch '%s'", ran);
    EXPECT_RC(f->db, sqllock_lease_try_acquire(mine), SQLLOCK_OK, "hold");
    START(f, j, "run", name, "--ttl", "2s", "--wait", "20s", "--verbose",
          "--", "sh", "-c", script);
    wait_stderr(f, j, "waiting up to");
    guard = find_guard(j->pid);
    assert_true(guard > 0);
    assert_int_equal(kill(j->pid, SIGKILL), 0);
    gone(name, guard, tu_now_ms(), "SIGKILL while waiting for the lock");
    assert_int_equal(finish(f, j, 5000), 1000 + SIGKILL);
    EXPECT_RC(f->db, sqllock_lease_release(mine), SQLLOCK_OK, "release");
    tu_sleep_ms(100);
    assert_false(file_exists(ran));
}

/* SIGKILL of the runner after its command has ended, while what the
 * command left running (a child that ignores SIGTERM) waits out
 * --kill-after: the guard kills it at once. */
static void test_runfault_X1_runner_killed_after_command(void **state)
{
    fixture *f = *state;
    const char *name = U(f, "kill-left");
    char started[4300], script[9000];
    pid_t guard;
    int64_t ms;
    job *j;

    fpath(f, started, sizeof started, "started");
    snprintf(script, sizeof script,
             "trap '' TERM; sleep 300 & echo $$ > '%s'; exit 0", started);
    START(f, j, "run", name, "--ttl", "2s", "--kill-after", "30s", "--",
          "sh", "-c", script);
    wait_started(f, j, started);
    wait_stderr(f, j, "left 1 process running");
    assert_int_equal(job_procs(name, 0, 0), 1);
    guard = find_guard(j->pid);
    assert_true(guard > 0);
    assert_int_equal(kill(j->pid, SIGKILL), 0);
    ms = gone(name, guard, tu_now_ms(), "SIGKILL while leftovers stopped");
    assert_int_equal(finish(f, j, 5000), 1000 + SIGKILL);
    printf("    X1: the command's leftover gone %lld ms after the runner's "
           "SIGKILL\n", (long long)ms);
}

/* SIGKILL of the runner at random moments from its start: before the
 * grant, while the command starts its processes, while they run. Never
 * does anything of the job survive it. The delays are printed, so that
 * a failure can be replayed. */
static void test_runfault_X1_runner_killed_at_random(void **state)
{
    fixture *f = *state;
    unsigned seed = (unsigned)getpid() ^ (unsigned)tu_now_ms();
    char started[4300], script[9000], delays[256] = "";
    int64_t worst = 0, ms;
    int i, ran = 0;

    for (i = 0; i < 6; i++) {
        const char *name = U(f, "kill-random");
        int delay = (int)(rand_r(&seed) % 400);
        char name_i[300];
        pid_t guard;
        job *j;

        snprintf(name_i, sizeof name_i, "%s-%d", name, i);
        fpath(f, started, sizeof started, "started");
        snprintf(script, sizeof script, TREE, started);
        START(f, j, "run", name_i, "--ttl", "2s", "--", "sh", "-c", script);
        tu_sleep_ms(delay);
        guard = find_guard(j->pid);
        assert_int_equal(kill(j->pid, SIGKILL), 0);
        ms = gone(name_i, guard, tu_now_ms(), "SIGKILL at a random moment");
        if (ms > worst)
            worst = ms;
        ran += file_exists(started);
        finish(f, j, 5000);
        snprintf(delays + strlen(delays), sizeof delays - strlen(delays),
                 "%s%d", i ? "," : "", delay);
    }
    printf("    X1: runner killed %s ms after its start (the command had "
           "started %d times): all gone, the slowest after %lld ms\n",
           delays, ran, (long long)worst);
}

/* SIGKILL of the guard alone: the command dies with it
 * (PR_SET_PDEATHSIG), what it started comes to the runner (a child
 * subreaper too), which kills it, releases the lock and exits 69 saying
 * why. */
static void test_runfault_X1_guard_killed(void **state)
{
    fixture *f = *state;
    const char *name = U(f, "kill-guard");
    char started[4300], script[9000];
    int64_t t0;
    pid_t guard;
    int code;
    job *j;

    fpath(f, started, sizeof started, "started");
    snprintf(script, sizeof script, TREE, started);
    START(f, j, "run", name, "--ttl", "2s", "--", "sh", "-c", script);
    wait_started(f, j, started);
    wait_tree(name);
    guard = find_guard(j->pid);
    assert_true(guard > 0);
    assert_int_equal(kill(guard, SIGKILL), 0);
    t0 = tu_now_ms();
    code = finish(f, j, 10000);
    if (code != 69 || !tu_contains_ci(f->err, "guard"))
        fail_msg("the guard killed: exit %d, want 69 and a message about "
                 "the guard; stderr: %s", code, f->err);
    gone(name, 0, t0, "SIGKILL of the guard");
    expect_no_row(f, name);
}

/* What a command leaves running when it exits -- a child in its group,
 * and one in a session of its own -- is stopped (SIGTERM) before the
 * lock is given up; the exit code is the command's. */
static void test_runfault_X1_leftovers_stopped_before_release(void **state)
{
    fixture *f = *state;
    const char *name = U(f, "leftover");
    char started[4300], script[9000];
    int64_t t0;
    int code;
    job *j;

    fpath(f, started, sizeof started, "started");
    snprintf(script, sizeof script,
             "sleep 300 & setsid sleep 300 & echo $$ > '%s'; exit 4",
             started);
    t0 = tu_now_ms();
    START(f, j, "run", name, "--ttl", "2s", "--", "sh", "-c", script);
    code = finish(f, j, 15000);
    if (code != 4)
        fail_msg("exit %d, want the command's 4; stderr: %s", code, f->err);
    if (!tu_contains_ci(f->err, "left 2 processes running"))
        fail_msg("stderr does not name the 2 processes left: %s", f->err);
    if (tu_now_ms() - t0 > 8000)
        fail_msg("took %lld ms", (long long)(tu_now_ms() - t0));
    assert_int_equal(job_procs(name, 0, 0), 0);
    expect_no_row(f, name);
}

/* ------------------------------------------------------------------ */
/* X2, X3: a loss is always in the exit code                           */
/* ------------------------------------------------------------------ */

/* The runner is stopped (SIGSTOP) past its ttl while its command runs
 * on; another owner takes the expired lease; the command exits 0 on its
 * own; the runner resumes: exit 76, saying when it noticed, and the new
 * owner's row is left alone. Meanwhile the guard gave the command
 * --signal (USR1, which it only records) at the lease's deadline. */
static void test_runfault_X2_X3_paused_runner_exits_76(void **state)
{
    fixture *f = *state;
    const char *name = U(f, "pause");
    char started[4300], got[4300], done[4300], script[14000], buf[64];
    sqllock_lease *mine;
    int64_t end;
    tu_row r;
    int code;
    job *j;

    fpath(f, started, sizeof started, "started");
    fpath(f, got, sizeof got, "got");
    fpath(f, done, sizeof done, "done");
    snprintf(script, sizeof script,
             "trap 'echo USR1 >> \"%s\"' USR1; echo $$ > '%s'; i=0; "
             "while [ $i -lt 15 ]; do sleep 0.1; i=$((i+1)); done; "
             "echo done > '%s'; exit 0", got, started, done);
    START(f, j, "run", name, "--ttl", "600ms", "--signal", "USR1",
          "--kill-after", "30s", "--", "sh", "-c", script);
    wait_started(f, j, started);
    assert_int_equal(kill(j->pid, SIGSTOP), 0);
    mine = lease_for(f, name, 30000);
    EXPECT_RC(f->db, sqllock_lease_acquire(mine, 5000), SQLLOCK_OK,
              "take the stopped runner's expired lease");
    end = tu_now_ms() + 10000;
    while (!file_exists(done) && tu_now_ms() < end)
        tu_sleep_ms(10);
    assert_true(file_exists(done));
    assert_int_equal(kill(j->pid, SIGCONT), 0);
    code = finish(f, j, 15000);
    if (code != 76)
        fail_msg("exit %d, want 76; stderr: %s", code, f->err);
    if (!tu_contains_ci(f->err, "noticed at")
        || !tu_contains_ci(f->err, "stopped, paused or starved"))
        fail_msg("the message does not say when and why: %s", f->err);
    tu_read_file(got, buf, sizeof buf);
    assert_string_equal(buf, "USR1\n");
    row_of(f, name, &r);
    assert_string_equal(r.owner, sqllock_lease_owner(mine));
    EXPECT_RC(f->db, sqllock_lease_release(mine), SQLLOCK_OK, "release");
}

/* The lease is taken over while the command runs, and no renewal comes
 * in between to notice (ttl 30 s): the command exits 0, the release
 * finds the lease lost, and the exit code is 76, not 0. */
static void test_runfault_X2_release_finds_takeover_exits_76(void **state)
{
    fixture *f = *state;
    const char *name = U(f, "relost");
    char started[4300], go[4300], script[9000];
    sqllock_lease *mine = lease_for(f, name, 30000);
    tu_row r;
    int code;
    job *j;

    fpath(f, started, sizeof started, "started");
    fpath(f, go, sizeof go, "go");
    snprintf(script, sizeof script,
             "echo $$ > '%s'; while [ ! -e '%s' ]; do sleep 0.02; done; "
             "exit 0", started, go);
    START(f, j, "run", name, "--ttl", "30s", "--", "sh", "-c", script);
    wait_started(f, j, started);
    delete_row(f, name);
    EXPECT_RC(f->db, sqllock_lease_try_acquire(mine), SQLLOCK_OK,
              "take the deleted lease");
    touch(go);
    code = finish(f, j, 15000);
    if (code != 76 || !tu_contains_ci(f->err, "releasing lock"))
        fail_msg("exit %d, want 76 and the release's finding; stderr: %s",
                 code, f->err);
    row_of(f, name, &r);
    assert_string_equal(r.owner, sqllock_lease_owner(mine));
    EXPECT_RC(f->db, sqllock_lease_release(mine), SQLLOCK_OK, "release");
}

/* ------------------------------------------------------------------ */
/* X4: --hold-at-least                                                  */
/* ------------------------------------------------------------------ */

/* Waits up to `ms` until `path` holds `lines` lines; returns the lines. */
static int wait_lines(const char *path, int lines, int64_t ms)
{
    int64_t end = tu_now_ms() + ms;
    char buf[256];
    int n;

    for (;;) {
        const char *p;

        tu_read_file(path, buf, sizeof buf);
        for (n = 0, p = buf; (p = strchr(p, '\n')) != NULL; p++)
            n++;
        if (n >= lines || tu_now_ms() >= end)
            return n;
        tu_sleep_ms(5);
    }
}

/* Two "hosts" started 0.3 s apart with --hold-at-least 3s --skip and a
 * 1 s job: the job runs once. The winner's runner exits when its job
 * ends, leaving the name held until 3 s after the grant (longer than its
 * 2 s ttl): a third host skips it then, and a fourth with --wait gets it
 * when the window ends, not before. A window shorter than the ttl ends
 * on time too (MySQL's renewal cannot shorten an expiry: there the
 * runner waits for the window's end and releases). */
static void test_runfault_X4_hold_at_least_runs_once(void **state)
{
    fixture *f = *state;
    const char *name = U(f, "hold");
    char runs[4300], sa[9000], sb[9000], sw[9000], buf[256];
    sqllock_lease *mine;
    int64_t t_job, t_end, t_w;
    int ca, cb;
    tu_row r;
    job *a, *b;

    fpath(f, runs, sizeof runs, "runs");
    snprintf(sa, sizeof sa, "echo A >> '%s'; sleep 1", runs);
    snprintf(sb, sizeof sb, "echo B >> '%s'; sleep 1", runs);
    snprintf(sw, sizeof sw, "echo W >> '%s'", runs);
    START(f, a, "run", name, "--ttl", "2s", "--hold-at-least", "3s",
          "--skip", "--quiet", "--", "sh", "-c", sa);
    tu_sleep_ms(300);
    START(f, b, "run", name, "--ttl", "2s", "--hold-at-least", "3s",
          "--skip", "--quiet", "--", "sh", "-c", sb);
    assert_int_equal(wait_lines(runs, 1, START_MS), 1);
    t_job = tu_now_ms();
    ca = finish(f, a, 15000);
    cb = finish(f, b, 15000);
    t_end = tu_now_ms();
    if (!((ca == 0 && cb == 75) || (ca == 75 && cb == 0)))
        fail_msg("exits %d and %d; want 0 for one host and 75 for the "
                 "other", ca, cb);
    /* The winner did not wait out the window. */
    if (t_end - t_job > 2500)
        fail_msg("the runners ended %lld ms after the job started",
                 (long long)(t_end - t_job));
    row_of(f, name, &r);
    if (r.remaining_ms <= 0 || r.remaining_ms > 3000)
        fail_msg("the name is held for %lld ms more after the job; want "
                 "the rest of the 3 s window", (long long)r.remaining_ms);
    EXPECT_EXIT(f, 75, "run", name, "--ttl", "5s", "--skip", "--quiet",
                "--", "sh", "-c", sw);
    EXPECT_EXIT(f, 0, "run", name, "--ttl", "5s", "--wait", "10s", "--",
                "sh", "-c", sw);
    t_w = tu_now_ms();
    tu_read_file(runs, buf, sizeof buf);
    if (strcmp(buf, "A\nW\n") != 0 && strcmp(buf, "B\nW\n") != 0)
        fail_msg("the jobs that ran: \"%s\"; want one of A and B, then W",
                 buf);
    if (t_w - t_job < 2500)
        fail_msg("the waiting host ran its job %lld ms after the first; "
                 "want the 3 s window", (long long)(t_w - t_job));
    /* W had no --hold-at-least: it released. */
    expect_no_row(f, name);
    printf("    X4: one job of two hosts; the next ran %lld ms after it\n",
           (long long)(t_w - t_job));

    /* A 1 s window with a 10 s ttl: free after the window, not the ttl. */
    t_job = tu_now_ms();
    EXPECT_EXIT(f, 0, "run", name, "--ttl", "10s", "--hold-at-least", "1s",
                "--", "true");
    mine = lease_for(f, name, 5000);
    EXPECT_RC(f->db, sqllock_lease_acquire(mine, 8000), SQLLOCK_OK,
              "acquire after the window");
    t_w = tu_now_ms() - t_job;
    if (t_w < 1000 || t_w > 4000)
        fail_msg("a 1 s window (ttl 10 s) was free %lld ms after the run "
                 "started", (long long)t_w);
    EXPECT_RC(f->db, sqllock_lease_release(mine), SQLLOCK_OK, "release");
}

/* ------------------------------------------------------------------ */
/* Quiet and informative                                                */
/* ------------------------------------------------------------------ */

/* The busy message names the holder, the token and the time left, never
 * the owner id; --quiet prints nothing for a busy lock (run and acquire,
 * also after a --wait) but still prints errors; --quiet and --verbose
 * are a usage error together. */
static void test_runfault_busy_message_and_quiet(void **state)
{
    fixture *f = *state;
    const char *name = U(f, "busy");
    sqllock_lease *mine = lease_with(f, name, 30000, "cron@web3 nightly");
    char file[4300], tok[64];

    fpath(f, file, sizeof file, "touched");
    EXPECT_RC(f->db, sqllock_lease_try_acquire(mine), SQLLOCK_OK, "hold");
    snprintf(tok, sizeof tok, "token %lld",
             (long long)sqllock_lease_token(mine));
    EXPECT_EXIT(f, 75, "run", name, "--ttl", "5s", "--", "touch", file);
    if (strstr(f->err, "holder 'cron@web3 nightly'") == NULL
        || strstr(f->err, tok) == NULL || strstr(f->err, "s left") == NULL)
        fail_msg("the busy message names no holder, token and time left: "
                 "%s", f->err);
    if (strstr(f->err, sqllock_lease_owner(mine)) != NULL)
        fail_msg("the busy message shows the owner id: %s", f->err);
    EXPECT_EXIT(f, 75, "run", name, "--ttl", "5s", "--quiet", "--", "touch",
                file);
    assert_string_equal(f->err, "");
    assert_string_equal(f->out, "");
    EXPECT_EXIT(f, 0, "run", name, "--ttl", "5s", "--busy-exit", "0",
                "--quiet", "--", "touch", file);
    assert_string_equal(f->err, "");
    EXPECT_EXIT(f, 75, "run", name, "--ttl", "5s", "--wait", "300ms",
                "--quiet", "--", "touch", file);
    assert_string_equal(f->err, "");
    EXPECT_EXIT(f, 75, "acquire", name, "--ttl", "5s", "--quiet");
    assert_string_equal(f->err, "");
    assert_string_equal(f->out, "");
    EXPECT_EXIT(f, 75, "acquire", name, "--ttl", "5s");
    assert_true(tu_contains_ci(f->err, "held"));
    EXPECT_EXIT(f, 64, "run", name, "--ttl", "5s", "--quiet", "--verbose",
                "--", "touch", file);
    assert_false(file_exists(file));
    EXPECT_RC(f->db, sqllock_lease_release(mine), SQLLOCK_OK, "release");
    /* Errors are not quieted. */
    EXPECT_EXIT(f, 127, "run", name, "--ttl", "5s", "--quiet", "--",
                "/nonexistent/sqllock-no-such-command");
    assert_true(tu_contains_ci(f->err, "cannot execute"));
    EXPECT_EXIT(f, 64, "run", name, "--ttl", "5s", "--hold-at-least",
                "soon", "--", "true");
    expect_no_row(f, name);
}

/* Fails unless the lines of `err` that contain the `n` texts come in
 * that order, each with "sqllock: <date>T<time> run: " first. */
static void expect_events(const char *err, const char *const *texts, int n)
{
    const char *at = err;
    int i;

    for (i = 0; i < n; i++) {
        const char *hit = strstr(at, texts[i]), *line;
        int y, mo, d, h, mi, s, ms;

        if (hit == NULL)
            fail_msg("no event \"%s\" after event %d in: %s", texts[i], i,
                     err);
        for (line = hit; line > err && line[-1] != '\n'; line--)
            ;
        if (sscanf(line, "sqllock: %4d-%2d-%2dT%2d:%2d:%2d.%3d", &y, &mo,
                   &d, &h, &mi, &s, &ms) != 7)
            fail_msg("the line of \"%s\" has no time: %.80s", texts[i],
                     line);
        at = hit;
    }
}

/* --verbose: one line per event with the time, in order: acquired (with
 * the token the command got), started, exited, released; and for a lease
 * taken over, the loss between the start and the end. */
static void test_runfault_verbose_events_in_order(void **state)
{
    fixture *f = *state;
    const char *name = U(f, "verbose");
    char tokfile[4300], started[4300], script[9000], buf[64], acq[400];
    sqllock_lease *mine;
    int code;
    job *j;

    fpath(f, tokfile, sizeof tokfile, "token");
    snprintf(script, sizeof script,
             "echo \"$SQLLOCK_TOKEN\" > '%s'; exit 3", tokfile);
    EXPECT_EXIT(f, 3, "run", name, "--ttl", "5s", "--verbose", "--", "sh",
                "-c", script);
    tu_read_file(tokfile, buf, sizeof buf);
    buf[strcspn(buf, "\n")] = '\0';
    snprintf(acq, sizeof acq, "acquired lock '%s': token %s", name, buf);
    {
        const char *const ev[] = { acq, "started the command",
                                   "exited with status 3",
                                   "released lock" };
        expect_events(f->err, ev, 4);
    }

    fpath(f, started, sizeof started, "started");
    snprintf(script, sizeof script, "echo $$ > '%s'; exec sleep 30",
             started);
    START(f, j, "run", name, "--ttl", "600ms", "--kill-after", "0",
          "--verbose", "--", "sh", "-c", script);
    wait_started(f, j, started);
    delete_row(f, name);
    mine = lease_for(f, name, 30000);
    EXPECT_RC(f->db, sqllock_lease_try_acquire(mine), SQLLOCK_OK, "take");
    code = finish(f, j, 15000);
    if (code != 76)
        fail_msg("exit %d, want 76; stderr: %s", code, f->err);
    {
        const char *const ev[] = { "acquired lock", "started the command",
                                   "lost", "was killed by SIGTERM" };
        expect_events(f->err, ev, 4);
    }
    EXPECT_RC(f->db, sqllock_lease_release(mine), SQLLOCK_OK, "release");
}

/* ------------------------------------------------------------------ */
/* C3: a database restart while the job runs                            */
/* ------------------------------------------------------------------ */

/* The server behind g_url restarted (a crash: PostgreSQL -m immediate,
 * mariadbd SIGKILL) while the command runs: the renewer and the release
 * reconnect (DESIGN C3), the run exits with the command's 3, and the
 * lock is free at once after it, not only after its 15 s ttl. */
static void test_runfault_C3_database_restart_mid_job(void **state)
{
    fixture *f = *state;
    const char *dir = getenv("SQLLOCK_TEST_SERVERS_DIR");
    const char *script_path = getenv("SQLLOCK_TEST_SERVERS_SCRIPT");
    const char *pg = getenv("SQLLOCK_TEST_PG_URL");
    const char *my = getenv("SQLLOCK_TEST_MYSQL_URL");
    const char *name = U(f, "restart");
    char started[4300], go[4300], script[9000], cmd[9000];
    sqllock_lease_options lo = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_lease *l = NULL;
    sqllock_db *db = NULL;
    int64_t t_end, t_free;
    int code, rc, i;
    job *j;

    if (dir == NULL || *dir == '\0' || script_path == NULL
        || *script_path == '\0' || strchr(dir, '\'')
        || strchr(script_path, '\'')
        || !((pg != NULL && strcmp(g_url, pg) == 0)
             || (my != NULL && strcmp(g_url, my) == 0))) {
        tu_cannot_run("C3 restart: no server of SQLLOCK_TEST_SERVERS_DIR "
                      "behind this URL (scripts/test.sh runs this entry "
                      "through tests/own_servers.sh)");
    }
    fpath(f, started, sizeof started, "started");
    fpath(f, go, sizeof go, "go");
    snprintf(script, sizeof script,
             "echo $$ > '%s'; while [ ! -e '%s' ]; do sleep 0.02; done; "
             "exit 3", started, go);
    START(f, j, "run", name, "--ttl", "15s", "--verbose", "--", "sh", "-c",
          script);
    wait_started(f, j, started);
    snprintf(cmd, sizeof cmd, "bash '%s' %s '%s' %s >&2", script_path,
             pg != NULL && strcmp(g_url, pg) == 0 ? "restart-pg"
                                                  : "restart-my",
             dir, pg != NULL && strcmp(g_url, pg) == 0 ? "immediate"
                                                       : "kill");
    if (system(cmd) != 0)
        fail_msg("%s failed", cmd);
    touch(go);
    code = finish(f, j, 30000);
    t_end = tu_now_ms();
    if (code != 3)
        fail_msg("exit %d, want the command's 3; stderr: %s", code, f->err);
    /* Another "host", on a connection of its own. */
    rc = sqllock_open(g_url, NULL, &db);
    for (i = 0; i < 100 && rc == SQLLOCK_ECONNECT; i++) {
        sqllock_close(db);
        tu_sleep_ms(100);
        rc = sqllock_open(g_url, NULL, &db);
    }
    EXPECT_RC(db, rc, SQLLOCK_OK, "open after the restart");
    lo.ttl_ms = 5000;
    EXPECT_RC(db, sqllock_lease_new(db, name, &lo, &l), SQLLOCK_OK, "new");
    EXPECT_RC(db, sqllock_lease_acquire(l, 15000), SQLLOCK_OK,
              "acquire after the run");
    t_free = tu_now_ms() - t_end;
    EXPECT_RC(db, sqllock_lease_release(l), SQLLOCK_OK, "release");
    sqllock_lease_free(l);
    sqllock_close(db);
    if (t_free > 3000)
        fail_msg("the lock was free only %lld ms after the run ended "
                 "(ttl 15 s): the release did not reach the server",
                 (long long)t_free);
    printf("    C3: exit 3 across a restart; free %lld ms after the run\n",
           (long long)t_free);
    /* The test's own connection died with the server: a new one (the
     * leases of the group go first: they belong to the handle). */
    for (i = 0; i < 4; i++) {
        sqllock_lease_free(f->leases[i]);
        f->leases[i] = NULL;
    }
    sqllock_close(f->db);
    f->db = NULL;
    rc = sqllock_open(g_url, NULL, &f->db);
    EXPECT_RC(f->db, rc, SQLLOCK_OK, "reopen");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_runfault_X1_runner_killed_while_command_runs),
        cmocka_unit_test(test_runfault_X1_runner_killed_before_grant),
        cmocka_unit_test(test_runfault_X1_runner_killed_after_command),
        cmocka_unit_test(test_runfault_X1_runner_killed_at_random),
        cmocka_unit_test(test_runfault_X1_guard_killed),
        cmocka_unit_test(test_runfault_X1_leftovers_stopped_before_release),
        cmocka_unit_test(test_runfault_X2_X3_paused_runner_exits_76),
        cmocka_unit_test(test_runfault_X2_release_finds_takeover_exits_76),
        cmocka_unit_test(test_runfault_X4_hold_at_least_runs_once),
        cmocka_unit_test(test_runfault_busy_message_and_quiet),
        cmocka_unit_test(test_runfault_verbose_events_in_order),
        cmocka_unit_test(test_runfault_C3_database_restart_mid_job),
    };
    int rc;

    /* A guard whose runner was killed comes here, to be reaped. */
    prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    tu_not_on("sqlite", "test_runfault_C3_*",
              "an embedded database has no server to restart");
    rc = TU_RUN_PER_URL("runfault", &g_url, tests, setup, teardown);
    printf("runfault: the slowest end of a job after its runner's death: "
           "%lld ms (bound %d ms)\n", (long long)g_worst_ms, GONE_MS);
    return rc;
}
