/*
 * crontab.c -- test_examples: examples/crontab read as cron reads it and
 * its jobs run as cron runs them.
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
    ex_make_env(env, store, base);
    return ex_start(f, argv, env, tag);
}

/* The crontab, its paths replaced by the test's own. */
static void crontab_for_test(fixture *f, crontab *c)
{
    char tool[4400], report[4400], lock[200];
    int found_tool = 0, found_report = 0, found_file = 0, found_lock = 0;
    int i;

    read_crontab(c);
    ex_sh_quote(SQLLOCK_CLI_PATH, tool, sizeof tool);
    ex_sh_quote(f->report, report, sizeof report);
    snprintf(lock, sizeof lock, " run %s ", f->lock);
    for (i = 0; i < c->njobs; i++) {
        found_lock += ex_replace_all(c->jobs[i], sizeof c->jobs[i],
                                  " run nightly-report ", lock);
        found_tool += ex_replace_all(c->jobs[i], sizeof c->jobs[i], EX_SQLLOCK,
                                  tool);
        found_report += ex_replace_all(c->jobs[i], sizeof c->jobs[i],
                                    EX_REPORT, report);
        /* The database stays out of the command line (DESIGN C4). */
        if (strstr(c->jobs[i], "--db ") != NULL ||
            strstr(c->jobs[i], "--db=") != NULL ||
            strstr(c->jobs[i], "://") != NULL)
            fail_msg("crontab: a URL on the command line: %s", c->jobs[i]);
    }
    for (i = 0; i < c->nvars; i++)
        found_file += ex_replace_all(c->vars[i], sizeof c->vars[i],
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

void test_examples_crontab(void **state)
{
    fixture *f = *state;
    crontab c;
    const char *job;
    char tok1[64], tok2[64], *env;
    pid_t a;
    int code, i;

    ex_stop_live(f);
    crontab_for_test(f, &c);
    job = report_job(f, &c);
    ex_reset_report(f);
    unlink(f->ran);

    /* Two hosts at 03:30: one runs the report, the other exits 0. */
    a = cron_start(f, &c, job, 1, "cron-a");
    ex_wait_started(f, a, "cron-a");
    code = ex_finish(f, cron_start(f, &c, job, 1, "cron-b"), "cron-b");
    if (code != 0 || ex_count_lines(f->ran) != 1)
        fail_msg("the second host: exit %d, the report ran %d times; want "
                 "0 and once\nstderr: %s", code, ex_count_lines(f->ran), f->err);
    if (!tu_contains_ci(f->err, "held"))
        fail_msg("the second host did not say the lock is busy: %s", f->err);
    ex_write_file(f->go, "", 0600);
    code = ex_finish(f, a, "cron-a");
    if (code != 0)
        fail_msg("the first host: exit %d\nstderr: %s", code, f->err);
    /* The report saw cron's PATH, its token, and not the database. */
    env = ex_slurp(f->env_seen);
    if (strstr(env, "PATH=/usr/bin:/bin\n") == NULL ||
        strstr(env, "SQLLOCK_TOKEN=") == NULL ||
        strstr(env, "SQLLOCK_DB") != NULL)
        fail_msg("the report's environment:\n%s", env);

    /* The next night: the lock was released, the token grows. */
    ex_reset_report(f);
    ex_write_file(f->go, "", 0600);
    code = ex_finish(f, cron_start(f, &c, job, 1, "cron-c"), "cron-c");
    if (code != 0 || ex_count_lines(f->ran) != 2)
        fail_msg("the next run: exit %d, %d runs\nstderr: %s", code,
                 ex_count_lines(f->ran), f->err);
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
        code = ex_finish(f, cron_start(f, &c, c.jobs[i], 1, "cron-other"),
                      "cron-other");
        if (code != 0 || f->out[0] != '\0' || f->err[0] != '\0')
            fail_msg("crontab job \"%s\": exit %d\nstdout: %s\nstderr: %s",
                     c.jobs[i], code, f->out, f->err);
    }

    /* Without the crontab's variable: refused, saying how to name the
     * database; the report does not run. */
    ex_reset_report(f);
    ex_write_file(f->go, "", 0600);
    code = ex_finish(f, cron_start(f, &c, job, 0, "cron-nodb"), "cron-nodb");
    if (code != 64 || ex_count_lines(f->ran) != 2)
        fail_msg("without SQLLOCK_DB_FILE: exit %d, %d runs; want 64, "
                 "still 2\nstderr: %s", code, ex_count_lines(f->ran), f->err);
    if (strstr(f->err, "--db-file") == NULL ||
        strstr(f->err, "SQLLOCK_DB_FILE") == NULL ||
        strstr(f->err, "--local") == NULL)
        fail_msg("the refusal does not say how to name a database: %s",
                 f->err);
}

