/*
 * common.c -- test_secrets' helpers: the forms of a secret and the
 * check that none is in a text, running the tool and reading /proc, and
 * the group fixture with its login role (secrets.h).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pwd.h>
#include <sys/socket.h>

#include "test_util.h"
#include "test_run.h"
#include "test_spawn.h"
#include "secrets.h"

/* ------------------------------------------------------------------ */
/* Looking for secrets                                                 */
/* ------------------------------------------------------------------ */

static void forms_add(forms *fm, const char *p, size_t n)
{
    int i;

    if (n < 4 || n >= sizeof fm->s[0] || fm->n == MAX_FORMS)
        return;
    for (i = 0; i < fm->n; i++)
        if (strlen(fm->s[i]) == n && memcmp(fm->s[i], p, n) == 0)
            return;
    memcpy(fm->s[fm->n], p, n);
    fm->s[fm->n][n] = '\0';
    fm->n++;
}

void se_forms_of(forms *fm, const char *pw, int ngrams)
{
    size_t n = strlen(pw), k, se_start = 0;

    forms_add(fm, pw, n);
    for (k = 0; k <= n; k++) {
        if (k < n && pw[k] != '@')
            continue;
        if (k < n || se_start > 0)
            forms_add(fm, pw + se_start, k - se_start);
        if (k < n)
            forms_add(fm, pw + k + 1, n - k - 1);
        se_start = k + 1;
    }
    for (k = 0; ngrams && n > 6 && k + 6 <= n; k++)
        forms_add(fm, pw + k, 6);
}

/* Drops the forms that are in `text`, a public text the test itself
 * puts in the arguments or the environment (its temporary directory is
 * "sqllock-test-XXXXXX", and the test servers' password is
 * "sqllock-test"): there they are no leak. */
static void forms_drop_in(forms *fm, const char *text)
{
    int i, k = 0;

    for (i = 0; i < fm->n; i++) {
        if (strstr(text, fm->s[i]) != NULL) {
            printf("secrets: \"%s\" of the password is also in \"%s\": "
                   "not looked for\n", fm->s[i], text);
            continue;
        }
        if (k != i)
            memcpy(fm->s[k], fm->s[i], sizeof fm->s[i]);
        k++;
    }
    fm->n = k;
}

/* 1 when needle (a string) is in hay[0..len), which may hold NULs. */
int se_bin_contains(const char *hay, size_t len, const char *needle)
{
    size_t n = strlen(needle), i;

    for (i = 0; n > 0 && i + n <= len; i++)
        if (memcmp(hay + i, needle, n) == 0)
            return 1;
    return 0;
}

/* Fails when any form is in hay[0..len); `what` names the place. NULs
 * are shown as spaces. */
void se_expect_clean(const char *what, const char *hay, size_t len,
                     const forms *fm)
{
    char shown[4200];
    size_t i;
    int k;

    for (k = 0; k < fm->n; k++) {
        if (!se_bin_contains(hay, len, fm->s[k]))
            continue;
        for (i = 0; i < len && i + 1 < sizeof shown; i++)
            shown[i] = hay[i] == '\0' ? ' ' : hay[i];
        shown[i] = '\0';
        fail_msg("%s holds \"%s\" of the password: %s", what, fm->s[k],
                 shown);
    }
}

/* ------------------------------------------------------------------ */
/* Running the tool                                                    */
/* ------------------------------------------------------------------ */

/* Clears the tool's database variables in this process's environment,
 * which the tools started here inherit; the test is one thread. */
void se_clear_db_env(void)
{
    unsetenv("SQLLOCK_DB");
    unsetenv("SQLLOCK_DB_FILE");
}

/* Starts the tool with `args` and a minimal environment: PATH, HOME,
 * TMPDIR, the sanitizers' options, and SQLLOCK_DB and SQLLOCK_DB_FILE
 * when this process has them. The test's own environment holds the test
 * URLs, passwords and all, which a command would otherwise inherit and
 * show as if sqllock had passed them on. */
void se_start(tool_run *t, const char *dir, const char *const *args)
{
    static const char *const keep[] = {
        "PATH", "HOME", "TMPDIR", "ASAN_OPTIONS", "UBSAN_OPTIONS",
        "LSAN_OPTIONS", "SQLLOCK_DB", "SQLLOCK_DB_FILE", NULL
    };
    /* Static: environ points at it while posix_spawn() reads it. */
    static char *env[16];
    const char *argv[MAX_ARGS + 2];
    static unsigned seq;
    char **saved = environ;
    int n = 0, e = 0, i, k;

    argv[n++] = SQLLOCK_CLI_PATH;
    for (; *args != NULL && n < MAX_ARGS; args++)
        argv[n++] = *args;
    argv[n] = NULL;
    for (k = 0; keep[k] != NULL; k++) {
        size_t len = strlen(keep[k]);

        for (i = 0; saved != NULL && saved[i] != NULL; i++)
            if (strncmp(saved[i], keep[k], len) == 0 && saved[i][len] == '=')
                env[e++] = saved[i];
    }
    env[e] = NULL;
    snprintf(t->out_path, sizeof t->out_path, "%s/out-%u", dir, seq);
    snprintf(t->err_path, sizeof t->err_path, "%s/err-%u", dir, seq++);
    environ = env;
    t->pid = tu_spawn(argv, t->out_path, t->err_path, 1);
    environ = saved;
}

/* Waits up to `ms` for the tool; returns its exit code (1000 + signal),
 * its output in t->out and t->err. */
int se_finish(tool_run *t, int64_t ms)
{
    int code = tu_wait_for(t->pid, ms);

    if (code < 0) {
        tu_kill_wait(t->pid);
        t->pid = 0;
        tu_read_file(t->err_path, t->err, sizeof t->err);
        fail_msg("sqllock still running after %lld ms; stderr: %s",
                 (long long)ms, t->err);
    }
    t->pid = 0;
    tu_read_file(t->out_path, t->out, sizeof t->out);
    tu_read_file(t->err_path, t->err, sizeof t->err);
    return code;
}

int se_run_tool(tool_run *t, const char *dir, const char *const *args)
{
    se_start(t, dir, args);
    return se_finish(t, 60000);
}

/* Reads /proc/<pid>/<what> whole (it holds NULs); returns its length. */
size_t se_read_proc(pid_t pid, const char *what, char *buf, size_t size)
{
    char path[64];
    FILE *fp;
    size_t n;

    snprintf(path, sizeof path, "/proc/%ld/%s", (long)pid, what);
    fp = fopen(path, "rb");
    if (fp == NULL)
        fail_msg("cannot open %s: %s", path, strerror(errno));
    n = fread(buf, 1, size - 1, fp);
    fclose(fp);
    buf[n] = '\0';
    return n;
}

/* The value of NAME in an environ block (NUL-separated), or NULL. */
const char *se_env_value(const char *env, size_t len, const char *name)
{
    size_t nl = strlen(name);
    const char *p = env;

    while (p < env + len) {
        if (strncmp(p, name, nl) == 0 && p[nl] == '=')
            return p + nl + 1;
        p += strlen(p) + 1;
    }
    return NULL;
}

/* Writes `text` into a new file of mode 0600 at `path`. */
void se_write_file(const char *path, const char *text, size_t len)
{
    FILE *fp;

    unlink(path);
    fp = fopen(path, "wb");
    if (fp == NULL)
        fail_msg("cannot create %s: %s", path, strerror(errno));
    if (fwrite(text, 1, len, fp) != len)
        fail_msg("cannot write %s", path);
    fclose(fp);
    chmod(path, 0600);
}

/* ------------------------------------------------------------------ */
/* Per database                                                        */
/* ------------------------------------------------------------------ */

/* The URL the current group runs on. */
const char *g_url;

/* Reads the whole small file at path into buf; 0 on failure. */
static int read_small(const char *path, char *buf, size_t size)
{
    size_t n = tu_read_file(path, buf, size);

    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
        buf[--n] = '\0';
    return n > 0;
}

/* A fresh directory for the runs' files, named so that the test
 * servers' password ("sqllock-test", as tu_mkdtemp()'s names start) is
 * not in the paths the runs show. */
static char *runs_dir(void)
{
    const char *base = getenv("TMPDIR");
    char buf[4096];

    if (base == NULL || *base == '\0')
        base = "/tmp";
    snprintf(buf, sizeof buf, "%s/c4-runs-XXXXXX", base);
    if (mkdtemp(buf) == NULL)
        return NULL;
    return tu_strdup(buf);
}

/* Opens the superuser connection to the test URL's server, when
 * scripts/servers.sh started it: 1, or 0 with the reason in why[]. */
static int open_admin(fixture *f, char *why, size_t why_size)
{
    const char *sdir = getenv("SQLLOCK_TEST_SERVERS_DIR");
    char path[4300], port[32], url[4600];
    struct passwd *pw;
    int rc;

    if (sdir == NULL || *sdir == '\0') {
        snprintf(why, why_size, "SQLLOCK_TEST_SERVERS_DIR is not set");
        return 0;
    }
    snprintf(path, sizeof path, "%s/%s/port", sdir,
             strcmp(f->drv, "postgres") == 0 ? "pg" : "my");
    if (!read_small(path, port, sizeof port) || atoi(port) != f->port) {
        snprintf(why, why_size, "the servers in %s are not the test URL's "
                 "(port %s, the URL's %d)", sdir, port, f->port);
        return 0;
    }
    if (strcmp(f->drv, "postgres") == 0) {
        snprintf(url, sizeof url, "postgres://postgres@/%s?host=%s/pg&port=%d",
                 f->db, sdir, f->port);
    } else {
        pw = getpwuid(geteuid());
        if (pw == NULL) {
            snprintf(why, why_size, "no name for uid %ld", (long)geteuid());
            return 0;
        }
        snprintf(url, sizeof url, "mysql://%s@localhost/%s?socket=%s/my/sock",
                 pw->pw_name, f->db, sdir);
    }
    rc = sqllock_open(url, NULL, &f->admin);
    if (rc != SQLLOCK_OK) {
        snprintf(why, why_size, "superuser connect: %s: %s",
                 sqllock_errname(rc), sqllock_errmsg(f->admin));
        sqllock_close(f->admin);
        f->admin = NULL;
        return 0;
    }
    return 1;
}

static void admin_sql(fixture *f, const char *sql)
{
    int rc = sqllock__exec_sql(f->admin, sql, NULL, 0, NULL, NULL, NULL);

    if (rc != SQLLOCK_OK)
        fail_msg("%s: %s: %s", sql, sqllock_errname(rc),
                 sqllock_errmsg(f->admin));
}

/* Makes the login role of the runs, with ROLE_PW and the test user's
 * rights (PostgreSQL: a member of its role; MariaDB: its database). */
static void make_role(fixture *f)
{
    char sql[1200];

    snprintf(f->role, sizeof f->role, "sqllock_c4_%ld", (long)getpid());
    if (strcmp(f->drv, "postgres") == 0) {
        snprintf(sql, sizeof sql, "DROP ROLE IF EXISTS %s", f->role);
        admin_sql(f, sql);
        snprintf(sql, sizeof sql, "CREATE ROLE %s LOGIN PASSWORD '%s'",
                 f->role, ROLE_PW);
        admin_sql(f, sql);
        snprintf(sql, sizeof sql, "GRANT \"%s\" TO %s", f->user, f->role);
        admin_sql(f, sql);
    } else {
        static const char *const hosts[] = { "127.0.0.1", "localhost" };
        int i;

        for (i = 0; i < 2; i++) {
            snprintf(sql, sizeof sql, "DROP USER IF EXISTS '%s'@'%s'",
                     f->role, hosts[i]);
            admin_sql(f, sql);
            snprintf(sql, sizeof sql, "CREATE USER '%s'@'%s' IDENTIFIED BY "
                     "'%s'", f->role, hosts[i], ROLE_PW);
            admin_sql(f, sql);
            snprintf(sql, sizeof sql, "GRANT ALL ON `%s`.* TO '%s'@'%s'",
                     f->db, f->role, hosts[i]);
            admin_sql(f, sql);
        }
    }
}

static void drop_role(fixture *f)
{
    char sql[300];

    if (f->admin == NULL || f->role[0] == '\0')
        return;
    if (strcmp(f->drv, "postgres") == 0) {
        snprintf(sql, sizeof sql, "DROP ROLE IF EXISTS %s", f->role);
        sqllock__exec_sql(f->admin, sql, NULL, 0, NULL, NULL, NULL);
    } else {
        snprintf(sql, sizeof sql, "DROP USER IF EXISTS '%s'@'127.0.0.1', "
                 "'%s'@'localhost'", f->role, f->role);
        sqllock__exec_sql(f->admin, sql, NULL, 0, NULL, NULL, NULL);
    }
}

int se_group_setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    sqllock_url *u = NULL;
    sqllock_db *db = NULL;
    char why[512];
    const char *q;
    int rc;

    if (f == NULL)
        return -1;
    se_clear_db_env();
    f->dir = runs_dir();
    f->drv = tu_url_driver(g_url);
    if (f->dir == NULL || f->drv == NULL)
        return -1;
    rc = sqllock_open(g_url, NULL, &db);
    if (rc == SQLLOCK_OK)
        rc = sqllock_init(db);
    if (rc != SQLLOCK_OK) {
        fprintf(stderr, "open/init: %s: %s\n", sqllock_errname(rc),
                sqllock_errmsg(db));
        sqllock_close(db);
        return -1;
    }
    sqllock_close(db);
    if (sqllock__url_parse(g_url, &u, why, sizeof why) != SQLLOCK_OK)
        return -1;
    snprintf(f->user, sizeof f->user, "%s", u->user ? u->user : "");
    snprintf(f->pw, sizeof f->pw, "%s", u->password ? u->password : "");
    snprintf(f->host, sizeof f->host, "%s", u->host ? u->host : "");
    snprintf(f->db, sizeof f->db, "%s",
             u->path[0] == '/' ? u->path + 1 : u->path);
    f->port = u->port;
    sqllock__url_free(u);
    q = strchr(g_url, '?');
    snprintf(f->query, sizeof f->query, "%s", q != NULL ? q : "");

    snprintf(f->run_url, sizeof f->run_url, "%s", g_url);
    if (strcmp(f->drv, "sqlite") == 0) {
        /* No password to hide; the runs check the environment. */
    } else if (open_admin(f, why, sizeof why)) {
        make_role(f);
        snprintf(f->run_url, sizeof f->run_url, "%s://%s:%s@%s:%d/%s%s",
                 strcmp(f->drv, "postgres") == 0 ? "postgres" : "mysql",
                 f->role, ROLE_PW_URL, f->host, f->port, f->db, f->query);
        se_forms_of(&f->run_forms, ROLE_PW, 1);
        se_forms_of(&f->run_forms, ROLE_PW_URL, 1);
        f->run_has_pw = 1;
        printf("secrets [%s]: the runs log in as %s, whose password has "
               "'@', ':' and '/'\n", f->drv, f->role);
    } else {
        printf("secrets [%s]: no superuser access (%s): the runs use the "
               "test URL's own password, not one with '@', ':' and '/'\n",
               f->drv, why);
        if (tu_ci()) {
            fprintf(stderr, "secrets: under CI, so this fails\n");
            return -1;
        }
        if (strlen(f->pw) >= 4) {
            se_forms_of(&f->run_forms, f->pw, 0);
            f->run_has_pw = 1;
        }
    }
    {
        char *shown = sqllock__url_redact(f->run_url);

        if (shown == NULL)
            return -1;
        forms_drop_in(&f->run_forms, f->dir);
        forms_drop_in(&f->run_forms, shown);
        free(shown);
        if (f->run_has_pw && f->run_forms.n == 0) {
            printf("secrets [%s]: nothing of the password can be told from "
                   "the test's own texts\n", f->drv);
            if (tu_ci())
                return -1;
        }
    }
    *state = f;
    return 0;
}

int se_group_teardown(void **state)
{
    fixture *f = *state;

    if (f == NULL)
        return 0;
    if (f->job.pid > 0) {
        if (f->cmd > 0)
            kill(-f->cmd, SIGKILL);
        tu_kill_wait(f->job.pid);
    }
    drop_role(f);
    sqllock_close(f->admin);
    se_clear_db_env();
    tu_rmdir(f->dir);
    free(f->dir);
    free(f);
    return 0;
}

