/*
 * systemd.c -- test_examples: examples/sqllock-job.service and .timer
 * read as systemd reads them, ExecStart= run as systemd runs it, and
 * `systemd-analyze verify`.
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
        ex_write_file(dst, ex_slurp(f->url_file), 0400);
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
    ex_make_env(s->env, s->store, (const char *const *)base);

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

void test_examples_systemd(void **state)
{
    static service_run run_of_test;
    fixture *f = *state;
    service_run *s = &run_of_test;
    pid_t a;
    int code;

    memset(s, 0, sizeof *s);
    ex_stop_live(f);
    service_for_test(f, s);
    ex_reset_report(f);
    unlink(f->ran);

    /* Two hosts: one runs the report, the other exits 75 -- a success
     * for systemd, by SuccessExitStatus=. */
    a = ex_start(f, s->argv, s->env, "unit-a");
    ex_wait_started(f, a, "unit-a");
    code = ex_finish(f, ex_start(f, s->argv, s->env, "unit-b"), "unit-b");
    if (code != 75 || !service_success(s, code) || ex_count_lines(f->ran) != 1)
        fail_msg("the second host: exit %d (%s for systemd), the report ran "
                 "%d times; want 75, a success, once\nstderr: %s", code,
                 service_success(s, code) ? "a success" : "a failure",
                 ex_count_lines(f->ran), f->err);
    ex_write_file(f->go, "", 0600);
    code = ex_finish(f, a, "unit-a");
    if (code != 0)
        fail_msg("the first host: exit %d\nstderr: %s", code, f->err);
    if (strstr(ex_slurp(f->env_seen), "SQLLOCK_DB") != NULL)
        fail_msg("the report got the database: %s", ex_slurp(f->env_seen));
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
void test_examples_systemd_verify(void **state)
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
        ex_replace_all(text, sizeof text, "ExecStart=" EX_SQLLOCK,
                    "ExecStart=" SQLLOCK_CLI_PATH);
        snprintf(paths[i], sizeof paths[i], "%s/%s", units, names[i]);
        ex_write_file(paths[i], text, 0644);
    }
    code = ex_finish(f, ex_start(f, argv, environ, "verify"), "verify");
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

