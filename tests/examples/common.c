/*
 * common.c -- test_examples' group fixture and the helpers the groups
 * share: files, the processes started and their outputs (examples.h).
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
#include "examples.h"

/* The URL the current group runs on. */
const char *g_url;

void ex_write_file(const char *path, const char *text, mode_t mode)
{
    FILE *f = fopen(path, "w");

    if (f == NULL || fputs(text, f) == EOF || fclose(f) != 0)
        fail_msg("cannot write %s", path);
    chmod(path, mode);
}

char *ex_slurp(const char *path)
{
    static char buf[65536];

    if (tu_read_file(path, buf, sizeof buf) == 0 && access(path, R_OK) != 0)
        fail_msg("cannot read %s", path);
    return buf;
}

static int exists(const char *path)
{
    return access(path, F_OK) == 0;
}

/* The lines of `text` that hold something: the count of non-empty lines
 * of the report's log. */
int ex_count_lines(const char *path)
{
    char buf[4096];
    int n = 0;
    const char *p;

    tu_read_file(path, buf, sizeof buf);
    for (p = buf; *p != '\0'; p++)
        if (*p == '\n')
            n++;
    return n;
}

/* Replaces every `from` in s (of size `size`) with `to`; returns how many
 * it replaced. */
int ex_replace_all(char *s, size_t size, const char *from, const char *to)
{
    size_t fl = strlen(from), tl = strlen(to);
    char *p = s;
    int n = 0;

    while ((p = strstr(p, from)) != NULL) {
        if (strlen(s) - fl + tl >= size)
            fail_msg("no room to replace %s", from);
        memmove(p + tl, p + fl, strlen(p + fl) + 1);
        memcpy(p, to, tl);
        p += tl;
        n++;
    }
    return n;
}

/* `path` in single quotes for /bin/sh. */
void ex_sh_quote(const char *path, char *out, size_t size)
{
    if (strchr(path, '\'') != NULL)
        fail_msg("the path %s has a quote: the test cannot use it", path);
    snprintf(out, size, "'%s'", path);
}

int ex_group_setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    struct passwd *pw = getpwuid(getuid());
    char script[20000], text[4300];
    const char *argv[] = { SQLLOCK_CLI_PATH, "--db-file", NULL, "init",
                           NULL };
    char out[4300], err[4300];
    int code;

    if (f == NULL || (f->dir = tu_mkdtemp()) == NULL)
        return -1;
    *state = f;
    snprintf(f->user, sizeof f->user, "%s", pw != NULL ? pw->pw_name : "root");
    /* Runs on a shared server, or a run killed while it held the lock,
     * must not meet: the name carries the pid. */
    snprintf(f->lock, sizeof f->lock, "examples-%ld-nightly-report",
             (long)getpid());
    snprintf(f->url_file, sizeof f->url_file, "%s/db.url", f->dir);
    snprintf(text, sizeof text, "%s\n", g_url);
    ex_write_file(f->url_file, text, 0600);
    snprintf(f->ran, sizeof f->ran, "%s/ran", f->dir);
    snprintf(f->started, sizeof f->started, "%s/started", f->dir);
    snprintf(f->go, sizeof f->go, "%s/go", f->dir);
    snprintf(f->env_seen, sizeof f->env_seen, "%s/env", f->dir);
    snprintf(f->report, sizeof f->report, "%s/nightly-report", f->dir);
    /* The report: notes its token and environment, says it started, and
     * runs until the test lets it end. */
    snprintf(script, sizeof script,
             "#!/bin/sh\n"
             "echo \"$SQLLOCK_TOKEN\" >> '%s'\n"
             "env > '%s'\n"
             ": > '%s'\n"
             "while [ ! -e '%s' ]; do sleep 0.05; done\n",
             f->ran, f->env_seen, f->started, f->go);
    ex_write_file(f->report, script, 0755);
    argv[2] = f->url_file;
    snprintf(out, sizeof out, "%s/init.out", f->dir);
    snprintf(err, sizeof err, "%s/init.err", f->dir);
    code = tu_wait(tu_spawn(argv, out, err, 1));
    if (code != 0) {
        fprintf(stderr, "sqllock init: exit %d\n", code);
        return -1;
    }
    return 0;
}

/* Stops what a failed check left running: the report may end, sqllock
 * is asked to stop (it passes SIGTERM on to the report's group and
 * releases the lock), and what is left of the job's group is killed. */
void ex_stop_live(fixture *f)
{
    int i;

    if (f->go[0] != '\0')
        ex_write_file(f->go, "", 0600);
    for (i = 0; i < MAX_LIVE; i++)
        if (f->live[i] != 0) {
            kill(-f->live[i], SIGTERM);
            if (tu_wait_for(f->live[i], 10000) < 0)
                tu_kill_wait(f->live[i]);
            f->live[i] = 0;
        }
}

int ex_group_teardown(void **state)
{
    fixture *f = *state;

    if (f != NULL) {
        ex_stop_live(f);
        tu_rmdir(f->dir);
        free(f->dir);
        free(f);
    }
    return 0;
}

/* The environment: `base` (NULL-terminated "NAME=value"), and the
 * sanitizers' options of this process, which only change how a
 * sanitizer build of the tool reports. */
void ex_make_env(char **env, char store[][4300], const char *const *base)
{
    static const char *const keep[] = {
        "ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS", "TSAN_OPTIONS",
        NULL
    };
    int n = 0, i;

    for (i = 0; base[i] != NULL; i++) {
        if (n == MAX_ENV - 1)
            fail_msg("too many variables");
        snprintf(store[n], 4300, "%s", base[i]);
        env[n] = store[n];
        n++;
    }
    for (i = 0; keep[i] != NULL; i++)
        if (getenv(keep[i]) != NULL && n < MAX_ENV - 1) {
            snprintf(store[n], 4300, "%s=%s", keep[i], getenv(keep[i]));
            env[n] = store[n];
            n++;
        }
    env[n] = NULL;
}

/* Starts argv with env; stdout and stderr go to files named after
 * `tag`. */
pid_t ex_start(fixture *f, const char *const *argv, char **env,
               const char *tag)
{
    char out[4300], err[4300];

    pid_t pid;
    int i;

    snprintf(out, sizeof out, "%s/%s.out", f->dir, tag);
    snprintf(err, sizeof err, "%s/%s.err", f->dir, tag);
    pid = tu_spawn_env(argv, env, out, err, 1);
    for (i = 0; i < MAX_LIVE; i++)
        if (f->live[i] == 0) {
            f->live[i] = pid;
            break;
        }
    return pid;
}

/* Forgets a pid that has been waited for. */
static void reaped(fixture *f, pid_t pid)
{
    int i;

    for (i = 0; i < MAX_LIVE; i++)
        if (f->live[i] == pid)
            f->live[i] = 0;
}

/* Reads the outputs of what start() started as `tag`. */
static void read_outputs(fixture *f, const char *tag)
{
    char out[4300], err[4300];

    snprintf(out, sizeof out, "%s/%s.out", f->dir, tag);
    snprintf(err, sizeof err, "%s/%s.err", f->dir, tag);
    tu_read_file(out, f->out, sizeof f->out);
    tu_read_file(err, f->err, sizeof f->err);
}

/* Waits for what start() started, up to 60 s, and reads its outputs. */
int ex_finish(fixture *f, pid_t pid, const char *tag)
{
    int code = tu_wait_for(pid, 60000);

    if (code < 0) {
        tu_kill_wait(pid);
        reaped(f, pid);
        fail_msg("%s did not end within 60 s", tag);
    }
    reaped(f, pid);
    read_outputs(f, tag);
    return code;
}

/* Waits until the report has started (up to 60 s); fails, saying why,
 * when `pid` ends before. */
void ex_wait_started(fixture *f, pid_t pid, const char *tag)
{
    int64_t end = tu_now_ms() + 60000;

    while (!exists(f->started)) {
        int code = tu_wait_for(pid, 0);

        if (code >= 0) {
            reaped(f, pid);
            read_outputs(f, tag);
            fail_msg("%s ended (exit %d) before the report started\n"
                     "stdout: %s\nstderr: %s", tag, code, f->out, f->err);
        }
        if (tu_now_ms() > end) {
            tu_kill_wait(pid);
            reaped(f, pid);
            fail_msg("%s: the report did not start within 60 s", tag);
        }
        tu_sleep_ms(20);
    }
}

void ex_reset_report(fixture *f)
{
    unlink(f->started);
    unlink(f->go);
}

