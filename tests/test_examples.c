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

/* What the examples name, and what the test puts in their place. */
#define EX_SQLLOCK "/usr/local/bin/sqllock"
#define EX_REPORT "/usr/local/bin/nightly-report"
#define EX_URL_FILE "/etc/sqllock/db.url"

#define MAX_ENV 32
#define MAX_ARGS 32
#define MAX_LIVE 8

typedef struct fixture {
    char *dir;
    char url_file[4300];       /* holds the URL the group runs on */
    char report[4300];         /* the stand-in for the report */
    char ran[4300], started[4300], go[4300], env_seen[4300];
    char out[16384], err[16384];
    char user[256];
    char lock[128];            /* the lock's name, made this process's */
    pid_t live[MAX_LIVE];      /* started and not yet waited for */
} fixture;

/* The URL the current group runs on. */
static const char *g_url;

static void write_file(const char *path, const char *text, mode_t mode)
{
    FILE *f = fopen(path, "w");

    if (f == NULL || fputs(text, f) == EOF || fclose(f) != 0)
        fail_msg("cannot write %s", path);
    chmod(path, mode);
}

static char *slurp(const char *path)
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
static int count_lines(const char *path)
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
static int replace_all(char *s, size_t size, const char *from, const char *to)
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
static void sh_quote(const char *path, char *out, size_t size)
{
    if (strchr(path, '\'') != NULL)
        fail_msg("the path %s has a quote: the test cannot use it", path);
    snprintf(out, size, "'%s'", path);
}

static int setup(void **state)
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
    write_file(f->url_file, text, 0600);
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
    write_file(f->report, script, 0755);
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
static void stop_live(fixture *f)
{
    int i;

    if (f->go[0] != '\0')
        write_file(f->go, "", 0600);
    for (i = 0; i < MAX_LIVE; i++)
        if (f->live[i] != 0) {
            kill(-f->live[i], SIGTERM);
            if (tu_wait_for(f->live[i], 10000) < 0)
                tu_kill_wait(f->live[i]);
            f->live[i] = 0;
        }
}

static int teardown(void **state)
{
    fixture *f = *state;

    if (f != NULL) {
        stop_live(f);
        tu_rmdir(f->dir);
        free(f->dir);
        free(f);
    }
    return 0;
}

/* The environment: `base` (NULL-terminated "NAME=value"), and the
 * sanitizers' options of this process, which only change how a
 * sanitizer build of the tool reports. */
static void make_env(char **env, char store[][4300], const char *const *base)
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
static pid_t start(fixture *f, const char *const *argv, char **env,
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
static int finish(fixture *f, pid_t pid, const char *tag)
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
static void wait_started(fixture *f, pid_t pid, const char *tag)
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

static void reset_report(fixture *f)
{
    unlink(f->started);
    unlink(f->go);
}

/* ------------------------------------------------------------------ */
/* The crontab                                                          */
/* ------------------------------------------------------------------ */

#define MAX_JOBS 8

typedef struct crontab {
    char vars[MAX_ENV][4300];
    int nvars;
    char jobs[MAX_JOBS][4300];
    int njobs;
} crontab;

/* One time field: a list of "*", N or N-M, each with an optional "/S",
 * numbers in [lo, hi]. */
static int cron_field_ok(const char *s, int lo, int hi)
{
    char buf[128], *save = NULL, *item;

    if (strlen(s) >= sizeof buf)
        return 0;
    strcpy(buf, s);
    for (item = strtok_r(buf, ",", &save); item != NULL;
         item = strtok_r(NULL, ",", &save)) {
        char *step = strchr(item, '/'), *end;
        long a, b;

        if (step != NULL) {
            *step++ = '\0';
            if (*step == '\0' || strtol(step, &end, 10) < 1 || *end != '\0')
                return 0;
        }
        if (strcmp(item, "*") == 0)
            continue;
        a = strtol(item, &end, 10);
        if (end == item || a < lo || a > hi)
            return 0;
        if (*end == '-') {
            char *e2;

            b = strtol(end + 1, &e2, 10);
            if (e2 == end + 1 || *e2 != '\0' || b < a || b > hi)
                return 0;
        } else if (*end != '\0') {
            return 0;
        }
    }
    return 1;
}

/* Reads examples/crontab as cron does (crontab(5)): blank lines and
 * comments are skipped; "NAME=value" sets a variable; anything else is a
 * job, five time fields and a command. */
static void read_crontab(crontab *c)
{
    static const int lo[5] = { 0, 0, 1, 1, 0 }, hi[5] = { 59, 23, 31, 12, 7 };
    FILE *fp = fopen(SQLLOCK_EXAMPLES_DIR "/crontab", "r");
    char line[4300];

    memset(c, 0, sizeof *c);
    if (fp == NULL)
        fail_msg("cannot read " SQLLOCK_EXAMPLES_DIR "/crontab");
    while (fgets(line, sizeof line, fp) != NULL) {
        char *p = line, *cmd;
        size_t n = strlen(line);
        char field[5][128];
        int k;

        if (n > 0 && line[n - 1] == '\n')
            line[--n] = '\0';
        while (*p == ' ' || *p == '\t')
            p++;
        if (*p == '\0' || *p == '#')
            continue;
        if (strspn(p, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_"
                      "0123456789") > 0 &&
            p[strspn(p, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                        "_0123456789")] == '=' && !(*p >= '0' && *p <= '9')) {
            /* A variable: cron takes the value as it is (no quotes here,
             * so none to strip). */
            if (strchr(p, '"') != NULL || strchr(p, '\'') != NULL)
                fail_msg("crontab: the test reads no quotes: %s", p);
            if (c->nvars == MAX_ENV)
                fail_msg("crontab: too many variables");
            snprintf(c->vars[c->nvars++], 4300, "%s", p);
            continue;
        }
        if (*p == '@')
            fail_msg("crontab: the test reads no @-schedules: %s", p);
        for (k = 0; k < 5; k++) {
            size_t w = strcspn(p, " \t");

            if (w == 0 || w >= sizeof field[k])
                fail_msg("crontab: not five time fields: %s", line);
            memcpy(field[k], p, w);
            field[k][w] = '\0';
            if (!cron_field_ok(field[k], lo[k], hi[k]))
                fail_msg("crontab: time field %d \"%s\" is not valid: %s",
                         k + 1, field[k], line);
            p += w;
            p += strspn(p, " \t");
        }
        cmd = p;
        if (*cmd == '\0')
            fail_msg("crontab: a job without a command: %s", line);
        /* cron ends the command at a '%' that is not escaped and sends
         * the rest to its stdin. */
        for (p = cmd; (p = strchr(p, '%')) != NULL; p++)
            if (p == cmd || p[-1] != '\\')
                fail_msg("crontab: a '%%' in a command: %s", cmd);
        if (c->njobs == MAX_JOBS)
            fail_msg("crontab: too many jobs");
        snprintf(c->jobs[c->njobs++], 4300, "%s", cmd);
    }
    fclose(fp);
}

/* Runs a crontab command (already with the test's paths) as cron does:
 * /bin/sh -c CMD in cron's environment, with the crontab's variables
 * when `with_vars`. */
static pid_t cron_start(fixture *f, const crontab *c, const char *cmd,
                        int with_vars, const char *tag)
{
    static char store[MAX_ENV][4300];
    static char *env[MAX_ENV];
    static char home[4300], logname[300];
    const char *base[MAX_ENV + 8];
    const char *argv[] = { "/bin/sh", "-c", cmd, NULL };
    int n = 0, i;

    snprintf(home, sizeof home, "HOME=%s", f->dir);
    snprintf(logname, sizeof logname, "LOGNAME=%s", f->user);
    base[n++] = home;
    base[n++] = logname;
    base[n++] = "PATH=/usr/bin:/bin";
    base[n++] = "SHELL=/bin/sh";
    for (i = 0; with_vars && i < c->nvars; i++)
        base[n++] = c->vars[i];
    base[n] = NULL;
    make_env(env, store, base);
    return start(f, argv, env, tag);
}

/* The crontab, its paths replaced by the test's own. */
static void crontab_for_test(fixture *f, crontab *c)
{
    char tool[4400], report[4400], lock[200];
    int found_tool = 0, found_report = 0, found_file = 0, found_lock = 0;
    int i;

    read_crontab(c);
    sh_quote(SQLLOCK_CLI_PATH, tool, sizeof tool);
    sh_quote(f->report, report, sizeof report);
    snprintf(lock, sizeof lock, " run %s ", f->lock);
    for (i = 0; i < c->njobs; i++) {
        found_lock += replace_all(c->jobs[i], sizeof c->jobs[i],
                                  " run nightly-report ", lock);
        found_tool += replace_all(c->jobs[i], sizeof c->jobs[i], EX_SQLLOCK,
                                  tool);
        found_report += replace_all(c->jobs[i], sizeof c->jobs[i],
                                    EX_REPORT, report);
        /* The database stays out of the command line (DESIGN C4). */
        if (strstr(c->jobs[i], "--db ") != NULL ||
            strstr(c->jobs[i], "--db=") != NULL ||
            strstr(c->jobs[i], "://") != NULL)
            fail_msg("crontab: a URL on the command line: %s", c->jobs[i]);
    }
    for (i = 0; i < c->nvars; i++)
        found_file += replace_all(c->vars[i], sizeof c->vars[i],
                                  EX_URL_FILE, f->url_file);
    if (found_tool < 1 || found_report != 1 || found_file != 1 ||
        found_lock != 1)
        fail_msg("examples/crontab no longer names " EX_SQLLOCK ", "
                 EX_REPORT ", " EX_URL_FILE " and the lock nightly-report "
                 "as this test expects (%d, %d, %d, %d times): update the "
                 "test with it", found_tool, found_report, found_file,
                 found_lock);
}

/* The job that runs the report: the one that names it. */
static const char *report_job(const fixture *f, const crontab *c)
{
    int i;

    for (i = 0; i < c->njobs; i++)
        if (strstr(c->jobs[i], f->report) != NULL)
            return c->jobs[i];
    fail_msg("crontab: no job runs the report");
    return NULL;
}

static void test_examples_crontab(void **state)
{
    fixture *f = *state;
    crontab c;
    const char *job;
    char tok1[64], tok2[64], *env;
    pid_t a;
    int code, i;

    stop_live(f);
    crontab_for_test(f, &c);
    job = report_job(f, &c);
    reset_report(f);
    unlink(f->ran);

    /* Two hosts at 03:30: one runs the report, the other exits 0. */
    a = cron_start(f, &c, job, 1, "cron-a");
    wait_started(f, a, "cron-a");
    code = finish(f, cron_start(f, &c, job, 1, "cron-b"), "cron-b");
    if (code != 0 || count_lines(f->ran) != 1)
        fail_msg("the second host: exit %d, the report ran %d times; want "
                 "0 and once\nstderr: %s", code, count_lines(f->ran), f->err);
    if (!tu_contains_ci(f->err, "held"))
        fail_msg("the second host did not say the lock is busy: %s", f->err);
    write_file(f->go, "", 0600);
    code = finish(f, a, "cron-a");
    if (code != 0)
        fail_msg("the first host: exit %d\nstderr: %s", code, f->err);
    /* The report saw cron's PATH, its token, and not the database. */
    env = slurp(f->env_seen);
    if (strstr(env, "PATH=/usr/bin:/bin\n") == NULL ||
        strstr(env, "SQLLOCK_TOKEN=") == NULL ||
        strstr(env, "SQLLOCK_DB") != NULL)
        fail_msg("the report's environment:\n%s", env);

    /* The next night: the lock was released, the token grows. */
    reset_report(f);
    write_file(f->go, "", 0600);
    code = finish(f, cron_start(f, &c, job, 1, "cron-c"), "cron-c");
    if (code != 0 || count_lines(f->ran) != 2)
        fail_msg("the next run: exit %d, %d runs\nstderr: %s", code,
                 count_lines(f->ran), f->err);
    {
        char buf[256];

        tu_read_file(f->ran, buf, sizeof buf);
        if (sscanf(buf, "%63s %63s", tok1, tok2) != 2 ||
            strtoll(tok2, NULL, 10) <= strtoll(tok1, NULL, 10) ||
            strtoll(tok1, NULL, 10) <= 0)
            fail_msg("the report's tokens: %s", buf);
    }

    /* The other jobs (the reaper): exit 0, nothing printed. */
    for (i = 0; i < c.njobs; i++) {
        if (c.jobs[i] == job)
            continue;
        code = finish(f, cron_start(f, &c, c.jobs[i], 1, "cron-other"),
                      "cron-other");
        if (code != 0 || f->out[0] != '\0' || f->err[0] != '\0')
            fail_msg("crontab job \"%s\": exit %d\nstdout: %s\nstderr: %s",
                     c.jobs[i], code, f->out, f->err);
    }

    /* Without the crontab's variable: refused, saying how to name the
     * database; the report does not run. */
    reset_report(f);
    write_file(f->go, "", 0600);
    code = finish(f, cron_start(f, &c, job, 0, "cron-nodb"), "cron-nodb");
    if (code != 64 || count_lines(f->ran) != 2)
        fail_msg("without SQLLOCK_DB_FILE: exit %d, %d runs; want 64, "
                 "still 2\nstderr: %s", code, count_lines(f->ran), f->err);
    if (strstr(f->err, "--db-file") == NULL ||
        strstr(f->err, "SQLLOCK_DB_FILE") == NULL ||
        strstr(f->err, "--local") == NULL)
        fail_msg("the refusal does not say how to name a database: %s",
                 f->err);
}

/* ------------------------------------------------------------------ */
/* The systemd units                                                    */
/* ------------------------------------------------------------------ */

/* The keys this test knows systemd to have in each section it uses
 * (systemd.unit(5), systemd.service(5), systemd.exec(5),
 * systemd.kill(5), systemd.timer(5)); a key outside this list fails
 * the test, so that a misspelt one ("OnCalender") is caught. Add a key
 * here when an example uses a new one. */
static const char *const unit_keys[] = {
    "Description", "Documentation", "Wants", "Requires", "Requisite",
    "BindsTo", "PartOf", "Conflicts", "Before", "After", "OnFailure",
    "ConditionPathExists", "AssertPathExists", "StartLimitIntervalSec",
    "StartLimitBurst", NULL
};
static const char *const service_keys[] = {
    "Type", "ExecStart", "ExecStartPre", "ExecStartPost", "ExecStop",
    "ExecStopPost", "SuccessExitStatus", "RestartPreventExitStatus",
    "Restart", "RestartSec", "TimeoutStartSec", "TimeoutStopSec",
    "TimeoutSec", "RuntimeMaxSec", "User", "Group", "DynamicUser",
    "SupplementaryGroups", "WorkingDirectory", "Environment",
    "EnvironmentFile", "LoadCredential", "LoadCredentialEncrypted",
    "SetCredential", "UMask", "Nice", "IOSchedulingClass",
    "StandardOutput", "StandardError", "SyslogIdentifier", "KillMode",
    "KillSignal", "SendSIGKILL", "FinalKillSignal", "NoNewPrivileges",
    "PrivateTmp", "ProtectSystem", "ProtectHome", "ReadWritePaths",
    "ReadOnlyPaths", NULL
};
static const char *const timer_keys[] = {
    "OnCalendar", "OnActiveSec", "OnBootSec", "OnStartupSec",
    "OnUnitActiveSec", "OnUnitInactiveSec", "AccuracySec",
    "RandomizedDelaySec", "FixedRandomDelay", "Persistent", "WakeSystem",
    "RemainAfterElapse", "Unit", NULL
};
static const char *const install_keys[] = {
    "WantedBy", "RequiredBy", "Alias", "Also", "DefaultInstance", NULL
};

#define MAX_KEYS 64

typedef struct unit {
    char key[MAX_KEYS][64];
    char section[MAX_KEYS][32];
    char value[MAX_KEYS][2048];
    int n;
} unit;

static int in_list(const char *const *list, const char *s)
{
    for (; *list != NULL; list++)
        if (strcmp(*list, s) == 0)
            return 1;
    return 0;
}

/* Reads a unit file as systemd does (systemd.syntax(7)): comments start
 * with '#' or ';', "[Section]" lines, "Key=Value" with blanks around
 * the '=' dropped. Every section and key must be known. */
static void read_unit(const char *path, unit *u)
{
    FILE *fp = fopen(path, "r");
    char line[2300], section[32] = "";

    memset(u, 0, sizeof *u);
    if (fp == NULL)
        fail_msg("cannot read %s", path);
    while (fgets(line, sizeof line, fp) != NULL) {
        char *p = line, *eq, *k_end, *v;
        size_t n = strlen(line);
        const char *const *keys;

        if (n > 0 && line[n - 1] == '\n')
            line[--n] = '\0';
        while (*p == ' ' || *p == '\t')
            p++;
        if (*p == '\0' || *p == '#' || *p == ';')
            continue;
        if (n > 0 && line[n - 1] == '\\')
            fail_msg("%s: the test reads no continued lines: %s", path, line);
        if (*p == '[') {
            char *e = strchr(p, ']');

            if (e == NULL || e[1] != '\0' || (size_t)(e - p) >= sizeof section)
                fail_msg("%s: a bad section line: %s", path, line);
            memcpy(section, p + 1, (size_t)(e - p - 1));
            section[e - p - 1] = '\0';
            if (!in_list((const char *const[]){ "Unit", "Service", "Timer",
                                                 "Install", NULL }, section))
                fail_msg("%s: unknown section [%s]", path, section);
            continue;
        }
        eq = strchr(p, '=');
        if (eq == NULL || section[0] == '\0')
            fail_msg("%s: not Key=Value in a section: %s", path, line);
        for (k_end = eq; k_end > p && (k_end[-1] == ' ' || k_end[-1] == '\t');)
            k_end--;
        for (v = eq + 1; *v == ' ' || *v == '\t'; v++)
            ;
        if (u->n == MAX_KEYS || (size_t)(k_end - p) >= sizeof u->key[0])
            fail_msg("%s: too many or too long keys", path);
        memcpy(u->key[u->n], p, (size_t)(k_end - p));
        u->key[u->n][k_end - p] = '\0';
        snprintf(u->section[u->n], sizeof u->section[0], "%s", section);
        snprintf(u->value[u->n], sizeof u->value[0], "%s", v);
        keys = strcmp(section, "Unit") == 0 ? unit_keys
             : strcmp(section, "Service") == 0 ? service_keys
             : strcmp(section, "Timer") == 0 ? timer_keys : install_keys;
        if (!in_list(keys, u->key[u->n]))
            fail_msg("%s: [%s] has no key %s known to this test (misspelt? "
                     "or add it to the test's list)", path, section,
                     u->key[u->n]);
        u->n++;
    }
    fclose(fp);
}

/* The i-th value of `key` in `section` (0 first), or NULL. */
static const char *unit_get(const unit *u, const char *section,
                            const char *key, int i)
{
    int k;

    for (k = 0; k < u->n; k++)
        if (strcmp(u->section[k], section) == 0 &&
            strcmp(u->key[k], key) == 0 && i-- == 0)
            return u->value[k];
    return NULL;
}

/* Expands the specifiers and variables of one word of a command line:
 * %d (the credentials directory), %% and ${NAME} of `env` (with NAME=...
 * entries). Any other is an error: the test knows no more. */
static void expand_word(const char *w, char *out, size_t size,
                        const char *creds, char **env)
{
    size_t o = 0;

    for (; *w != '\0'; w++) {
        const char *add = NULL;
        char one[2] = { 0, 0 };

        if (w[0] == '%' && w[1] == 'd') {
            add = creds;
            w++;
        } else if (w[0] == '%' && w[1] == '%') {
            add = "%";
            w++;
        } else if (w[0] == '%') {
            fail_msg("ExecStart: a specifier %%%c the test does not know",
                     w[1]);
        } else if (w[0] == '$' && w[1] == '{') {
            const char *e = strchr(w, '}');
            size_t n;
            int i;

            if (e == NULL)
                fail_msg("ExecStart: an unended ${");
            n = (size_t)(e - w - 2);
            add = "";
            for (i = 0; env[i] != NULL; i++)
                if (strncmp(env[i], w + 2, n) == 0 && env[i][n] == '=')
                    add = env[i] + n + 1;
            w = e;
        } else if (w[0] == '$') {
            fail_msg("ExecStart: the test reads only ${NAME}, not $NAME");
        } else {
            one[0] = *w;
            add = one;
        }
        if (o + strlen(add) >= size)
            fail_msg("ExecStart: a word is too long");
        memcpy(out + o, add, strlen(add));
        o += strlen(add);
    }
    out[o] = '\0';
}

/* Splits a command line as systemd does: words at blanks, "..." and '...'
 * quotes, a backslash escaping the next character; each word expanded
 * (expand_word()). A leading prefix (-, @, :, +, !) is refused: the
 * example has none and the test would not run it as systemd does. */
static int split_command(const char *line, char words[][4300], int max,
                         const char *creds, char **env)
{
    int n = 0;
    const char *p = line;

    if (strchr("-@:+!", *p) != NULL)
        fail_msg("ExecStart: the test reads no prefix: %s", line);
    for (;;) {
        char raw[4300];
        size_t r = 0;

        while (*p == ' ' || *p == '\t')
            p++;
        if (*p == '\0')
            break;
        while (*p != '\0' && *p != ' ' && *p != '\t') {
            if (*p == '"' || *p == '\'') {
                char q = *p++;

                while (*p != '\0' && *p != q) {
                    if (*p == '\\' && p[1] != '\0')
                        p++;
                    if (r + 1 < sizeof raw)
                        raw[r++] = *p;
                    p++;
                }
                if (*p != q)
                    fail_msg("ExecStart: an unended quote: %s", line);
                p++;
                continue;
            }
            if (*p == '\\' && p[1] != '\0')
                p++;
            if (r + 1 < sizeof raw)
                raw[r++] = *p;
            p++;
        }
        raw[r] = '\0';
        if (n == max)
            fail_msg("ExecStart: too many words");
        expand_word(raw, words[n], sizeof words[0], creds, env);
        n++;
    }
    return n;
}

typedef struct service_run {
    unit svc, tmr;
    char creds[4300];
    char words[MAX_ARGS][4300];
    int nwords;
    const char *argv[MAX_ARGS + 1];
    char store[MAX_ENV][4300];
    char *env[MAX_ENV];
} service_run;

/* Reads and checks both unit files; builds what systemd would run. */
static void service_for_test(fixture *f, service_run *s)
{
    const char *v;
    char base_store[8][4400], *base[MAX_ENV + 8];
    const char *exec;
    int nb = 0, i, has_db_file = 0, has_run = 0, has_ttl = 0;
    int found_tool = 0, found_report = 0, found_file = 0, found_lock = 0;

    read_unit(SQLLOCK_EXAMPLES_DIR "/sqllock-job.service", &s->svc);
    read_unit(SQLLOCK_EXAMPLES_DIR "/sqllock-job.timer", &s->tmr);

    /* The service: one oneshot ExecStart=. */
    v = unit_get(&s->svc, "Service", "Type", 0);
    if (v == NULL || strcmp(v, "oneshot") != 0)
        fail_msg("sqllock-job.service: Type=%s, want oneshot", v ? v : "");
    exec = unit_get(&s->svc, "Service", "ExecStart", 0);
    if (exec == NULL || unit_get(&s->svc, "Service", "ExecStart", 1) != NULL)
        fail_msg("sqllock-job.service: want exactly one ExecStart=");
    /* The timer: starts this service, on every host at once. */
    if (unit_get(&s->tmr, "Timer", "OnCalendar", 0) == NULL)
        fail_msg("sqllock-job.timer: no OnCalendar=");
    v = unit_get(&s->tmr, "Timer", "Unit", 0);
    if (v != NULL && strcmp(v, "sqllock-job.service") != 0)
        fail_msg("sqllock-job.timer starts %s", v);
    v = unit_get(&s->tmr, "Install", "WantedBy", 0);
    if (v == NULL || strstr(v, "timers.target") == NULL)
        fail_msg("sqllock-job.timer: not WantedBy=timers.target");
    if (unit_get(&s->tmr, "Timer", "RandomizedDelaySec", 0) != NULL ||
        unit_get(&s->tmr, "Timer", "Persistent", 0) != NULL)
        fail_msg("sqllock-job.timer: RandomizedDelaySec= or Persistent= "
                 "would start hosts at other times; the lock keeps out only "
                 "overlapping runs");
    v = unit_get(&s->tmr, "Timer", "AccuracySec", 0);
    if (v == NULL || (strcmp(v, "1s") != 0 && strcmp(v, "1") != 0))
        fail_msg("sqllock-job.timer: AccuracySec=%s, want 1s (the default "
                 "lets hosts fire a minute apart)", v ? v : "(default)");

    /* LoadCredential=ID:PATH: systemd copies PATH into the credentials
     * directory as ID; the test copies its own URL file. */
    snprintf(s->creds, sizeof s->creds, "%s/credentials", f->dir);
    mkdir(s->creds, 0700);
    for (i = 0; (v = unit_get(&s->svc, "Service", "LoadCredential", i)) !=
                NULL; i++) {
        const char *colon = strchr(v, ':');
        char dst[4600];

        if (colon == NULL || strcmp(colon + 1, EX_URL_FILE) != 0)
            fail_msg("LoadCredential=%s: the test knows only ID:"
                     EX_URL_FILE, v);
        snprintf(dst, sizeof dst, "%s/%.*s", s->creds, (int)(colon - v), v);
        write_file(dst, slurp(f->url_file), 0400);
        found_file++;
    }

    /* The environment systemd gives a service with User=. */
    snprintf(base_store[nb], sizeof base_store[nb], "HOME=%s", f->dir);
    base[nb] = base_store[nb];
    nb++;
    snprintf(base_store[nb], sizeof base_store[nb], "LOGNAME=%s", f->user);
    base[nb] = base_store[nb];
    nb++;
    snprintf(base_store[nb], sizeof base_store[nb], "USER=%s", f->user);
    base[nb] = base_store[nb];
    nb++;
    snprintf(base_store[nb], sizeof base_store[nb], "CREDENTIALS_DIRECTORY=%s", s->creds);
    base[nb] = base_store[nb];
    nb++;
    base[nb++] = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin";
    base[nb++] = "SHELL=/bin/sh";
    base[nb++] = "INVOCATION_ID=0123456789abcdef0123456789abcdef";
    for (i = 0; (v = unit_get(&s->svc, "Service", "Environment", i)) !=
                NULL; i++) {
        if (strchr(v, '"') != NULL || strchr(v, ' ') != NULL ||
            nb == MAX_ENV + 7)
            fail_msg("Environment=%s: the test reads one NAME=value", v);
        base[nb++] = (char *)v;
    }
    if (unit_get(&s->svc, "Service", "EnvironmentFile", 0) != NULL)
        fail_msg("EnvironmentFile=: the test does not read it");
    base[nb] = NULL;
    make_env(s->env, s->store, (const char *const *)base);

    s->nwords = split_command(exec, s->words, MAX_ARGS, s->creds, s->env);
    for (i = 0; i < s->nwords; i++) {
        const char *w = s->words[i];

        if (strcmp(w, "--db") == 0 || strncmp(w, "--db=", 5) == 0 ||
            strstr(w, "://") != NULL)
            fail_msg("ExecStart: a URL on the command line: %s", exec);
        if (strcmp(w, "--db-file") == 0 || strncmp(w, "--db-file=", 10) == 0)
            has_db_file = 1;
        if (strcmp(w, "run") == 0)
            has_run = 1;
        if (strcmp(w, "--ttl") == 0 || strncmp(w, "--ttl=", 6) == 0)
            has_ttl = 1;
        if (i == 0 && strcmp(w, EX_SQLLOCK) == 0) {
            s->argv[i] = SQLLOCK_CLI_PATH;
            found_tool++;
        } else if (strcmp(w, EX_REPORT) == 0) {
            s->argv[i] = f->report;
            found_report++;
        } else if (i > 0 && strcmp(s->words[i - 1], "run") == 0 &&
                   strcmp(w, "nightly-report") == 0) {
            s->argv[i] = f->lock;
            found_lock++;
        } else {
            s->argv[i] = w;
        }
    }
    s->argv[s->nwords] = NULL;
    for (i = 0; s->env[i] != NULL; i++)
        if (strncmp(s->env[i], "SQLLOCK_DB_FILE=", 16) == 0)
            has_db_file = 1;
    if (!has_db_file || !has_run || !has_ttl)
        fail_msg("ExecStart=%s: want sqllock run with --ttl and the "
                 "database from a file (--db-file or SQLLOCK_DB_FILE)", exec);
    if (found_tool != 1 || found_report != 1 || found_file < 1 ||
        found_lock != 1)
        fail_msg("sqllock-job.service no longer names " EX_SQLLOCK ", "
                 EX_REPORT ", " EX_URL_FILE " and the lock nightly-report "
                 "as this test expects (%d, %d, %d, %d times): update the "
                 "test with it", found_tool, found_report, found_file,
                 found_lock);
}

/* Is `code` one that SuccessExitStatus= (or 0) counts as success? */
static int service_success(const service_run *s, int code)
{
    const char *v;
    int i;

    if (code == 0)
        return 1;
    for (i = 0; (v = unit_get(&s->svc, "Service", "SuccessExitStatus", i)) !=
                NULL; i++) {
        char buf[2048], *save = NULL, *t;

        snprintf(buf, sizeof buf, "%s", v);
        for (t = strtok_r(buf, " ", &save); t != NULL;
             t = strtok_r(NULL, " ", &save))
            if (strtol(t, NULL, 10) == code)
                return 1;
    }
    return 0;
}

static void test_examples_systemd(void **state)
{
    static service_run run_of_test;
    fixture *f = *state;
    service_run *s = &run_of_test;
    pid_t a;
    int code;

    memset(s, 0, sizeof *s);
    stop_live(f);
    service_for_test(f, s);
    reset_report(f);
    unlink(f->ran);

    /* Two hosts: one runs the report, the other exits 75 -- a success
     * for systemd, by SuccessExitStatus=. */
    a = start(f, s->argv, s->env, "unit-a");
    wait_started(f, a, "unit-a");
    code = finish(f, start(f, s->argv, s->env, "unit-b"), "unit-b");
    if (code != 75 || !service_success(s, code) || count_lines(f->ran) != 1)
        fail_msg("the second host: exit %d (%s for systemd), the report ran "
                 "%d times; want 75, a success, once\nstderr: %s", code,
                 service_success(s, code) ? "a success" : "a failure",
                 count_lines(f->ran), f->err);
    write_file(f->go, "", 0600);
    code = finish(f, a, "unit-a");
    if (code != 0)
        fail_msg("the first host: exit %d\nstderr: %s", code, f->err);
    if (strstr(slurp(f->env_seen), "SQLLOCK_DB") != NULL)
        fail_msg("the report got the database: %s", slurp(f->env_seen));
}

/* Where `prog` is on $PATH, into buf; 0 when it is not. */
static int find_on_path(const char *prog, char *buf, size_t size)
{
    const char *p = getenv("PATH") != NULL ? getenv("PATH") : "/usr/bin:/bin";

    while (*p != '\0') {
        size_t n = strcspn(p, ":");

        snprintf(buf, size, "%.*s/%s", (int)n, p, prog);
        if (n > 0 && access(buf, X_OK) == 0)
            return 1;
        p += n;
        if (*p == ':')
            p++;
    }
    return 0;
}

/* systemd-analyze verify on copies whose ExecStart= names the built tool
 * (verify checks that the program exists); --man=no, as the page is not
 * installed where man looks (test_man checks it). */
static void test_examples_systemd_verify(void **state)
{
    fixture *f = *state;
    static const char *const names[] = { "sqllock-job.service",
                                         "sqllock-job.timer" };
    char prog[4300], units[4300], paths[2][4400], src[4400];
    const char *argv[] = { prog, "verify", "--man=no", paths[0], paths[1],
                           NULL };
    char text[65536];
    const char *p;
    int code, i;

    if (!find_on_path("systemd-analyze", prog, sizeof prog)) {
        tu_cannot_run("systemd-analyze is not installed; the unit files "
                      "are not verified by it");
    }
    snprintf(units, sizeof units, "%s/units", f->dir);
    mkdir(units, 0700);
    for (i = 0; i < 2; i++) {
        snprintf(src, sizeof src, "%s/%s", SQLLOCK_EXAMPLES_DIR, names[i]);
        tu_read_file(src, text, sizeof text);
        replace_all(text, sizeof text, "ExecStart=" EX_SQLLOCK,
                    "ExecStart=" SQLLOCK_CLI_PATH);
        snprintf(paths[i], sizeof paths[i], "%s/%s", units, names[i]);
        write_file(paths[i], text, 0644);
    }
    code = finish(f, start(f, argv, environ, "verify"), "verify");
    /* Other units of the system may draw warnings; ours none. */
    for (p = f->err; p != NULL && *p != '\0';) {
        const char *nl = strchr(p, '\n');
        size_t len = nl != NULL ? (size_t)(nl - p) : strlen(p);

        if ((strstr(p, "sqllock-job") != NULL &&
             strstr(p, "sqllock-job") < p + len) ||
            (strstr(p, units) != NULL && strstr(p, units) < p + len))
            fail_msg("systemd-analyze verify: %.*s", (int)len, p);
        p = nl != NULL ? nl + 1 : NULL;
    }
    if (code != 0)
        fail_msg("systemd-analyze verify: exit %d\n%s%s", code, f->out,
                 f->err);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_examples_crontab),
        cmocka_unit_test(test_examples_systemd),
        cmocka_unit_test(test_examples_systemd_verify),
    };
    return TU_RUN_PER_URL("examples", &g_url, tests, setup, teardown);
}
