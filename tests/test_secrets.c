/*
 * test_secrets.c -- DESIGN C4 (issue 14): no secret (a password, a URL
 * that carries one) in a process's arguments, in the environment handed
 * to a command, or in any message.
 *
 *   - Without a database: the redaction of hostile URLs (an unescaped '@'
 *     or ':' in the password, %40, '/', unknown query parameters, libpq's
 *     "name=value" form) and the scrubbing of the messages a driver could
 *     make of them; a password inside the host name, a short password
 *     and a word of the messages are left alone rather than turned into
 *     asterisks. --db-file and $SQLLOCK_DB_FILE: their precedence and
 *     every error, with the file's content never printed.
 *   - On every URL of SQLLOCK_TEST_URLS: the built tool runs `sqllock run`
 *     for real, with the URL in --db (before and after the command), in
 *     $SQLLOCK_DB, in --db-file and in $SQLLOCK_DB_FILE, each with and
 *     without --export-db; while its command runs, the test reads
 *     /proc/<tool>/cmdline and the command's /proc/<pid>/environ. The
 *     password must be in neither -- nor any piece of it around its '@'
 *     -- and --db must show its redacted form there; with --export-db the
 *     command must get the database (SQLLOCK_DB with the password, or
 *     SQLLOCK_DB_FILE), so the check fails in both directions.
 *   - What init, list and list --json print with that URL.
 *   - Hostile URLs through the API (sqllock_errmsg()) and the tool (its
 *     stdout and stderr, with --db, --db-file and $SQLLOCK_DB): a closed
 *     port, the real server with a wrong password, a bad port, unknown
 *     parameters carrying a secret, the password as a parameter.
 *
 * On PostgreSQL and MariaDB the runs use a login role of their own whose
 * password has '@', ':' and '/' in it ("Kp7w@Vx:9q/Wz-C4s3cret", written
 * with %40 and %2F in the URL), made through the superuser access of the
 * servers scripts/servers.sh started ($SQLLOCK_TEST_SERVERS_DIR, which
 * scripts/test.sh exports). Without that access they use the test URL's
 * own password and say so; under CI that fails, as does a driver of
 * the three without a URL. The tool starts with a minimal environment
 * (start()), and the runs' files are in a directory whose name holds no
 * "sqllock-test", so that nothing the test itself passes is taken for a
 * leak of that password.
 *
 * SQLLOCK_CLI_PATH is the built tool, passed in by tests/CMakeLists.txt.
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

#ifndef SQLLOCK_CLI_PATH
#error "SQLLOCK_CLI_PATH must name the built sqllock tool"
#endif

/* The distinctive password of the test's own role, decoded and as the
 * URL carries it. */
#define ROLE_PW "Kp7w@Vx:9q/Wz-C4s3cret"
#define ROLE_PW_URL "Kp7w%40Vx:9q%2FWz-C4s3cret"
/* How long a command may take to start (the tool connects first). */
#define START_MS 20000

/* ------------------------------------------------------------------ */
/* Looking for secrets                                                 */
/* ------------------------------------------------------------------ */

/* The texts that must not appear: a password, as written and decoded,
 * the pieces of it around each '@' and the tails after each '@' (4
 * bytes or more), and, for a distinctive password, every 6 bytes of it. */
#define MAX_FORMS 160

typedef struct forms {
    int n;
    char s[MAX_FORMS][128];
} forms;

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

static void forms_of(forms *fm, const char *pw, int ngrams)
{
    size_t n = strlen(pw), k, start = 0;

    forms_add(fm, pw, n);
    for (k = 0; k <= n; k++) {
        if (k < n && pw[k] != '@')
            continue;
        if (k < n || start > 0)
            forms_add(fm, pw + start, k - start);
        if (k < n)
            forms_add(fm, pw + k + 1, n - k - 1);
        start = k + 1;
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
static int bin_contains(const char *hay, size_t len, const char *needle)
{
    size_t n = strlen(needle), i;

    for (i = 0; n > 0 && i + n <= len; i++)
        if (memcmp(hay + i, needle, n) == 0)
            return 1;
    return 0;
}

/* Fails when any form is in hay[0..len); `what` names the place. NULs
 * are shown as spaces. */
static void expect_clean(const char *what, const char *hay, size_t len,
                         const forms *fm)
{
    char shown[4200];
    size_t i;
    int k;

    for (k = 0; k < fm->n; k++) {
        if (!bin_contains(hay, len, fm->s[k]))
            continue;
        for (i = 0; i < len && i + 1 < sizeof shown; i++)
            shown[i] = hay[i] == '\0' ? ' ' : hay[i];
        shown[i] = '\0';
        fail_msg("%s holds \"%s\" of the password: %s", what, fm->s[k],
                 shown);
    }
}

/* ------------------------------------------------------------------ */
/* Without a database: redaction and scrubbing                         */
/* ------------------------------------------------------------------ */

/* C4: what a message may quote of a URL. Every secret is "***", every
 * public part stays. */
static void test_secrets_C4_redact_hostile_urls(void **state)
{
    static const struct {
        const char *url, *want;
    } cases[] = {
        /* An unescaped '@' or ':' in the password: the last '@' ends the
         * user info, as the parser reads it. */
        { "postgres://u:p@ss@host/db", "postgres://u:***@host/db" },
        { "mysql://u:p@ss@host:3306/db", "mysql://u:***@host:3306/db" },
        { "postgres://u:a:b@c@h/db", "postgres://u:***@h/db" },
        { "postgres://u:p%40ss@h/db", "postgres://u:***@h/db" },
        /* An unescaped '/' makes the URL malformed; still hidden. */
        { "postgres://u:ab/cd@h:5432/db", "postgres://u:***@h:5432/db" },
        /* Unknown parameters: the value hidden, the name shown. */
        { "postgres://u@h/db?pwd=Sec7et", "postgres://u@h/db?pwd=***" },
        { "mysql://u@h/db?passwd=Sec7et", "mysql://u@h/db?passwd=***" },
        { "postgres://u@h/db?secret=Sec7et&sslmode=require",
          "postgres://u@h/db?secret=***&sslmode=require" },
        { "postgres://u@h/db?password=Sec7et", "postgres://u@h/db?password=***" },
        { "postgres://u@h/db?pass%77ord=Sec7et",
          "postgres://u@h/db?pass%77ord=***" },
        { "postgres://u@h/db?Sec7et", "postgres://u@h/db?***" },
        /* Public parameters stay. */
        { "postgres://u@h1:5432,h2:5433/db?target_session_attrs=read-write"
          "&application_name=job%201&connect_timeout=2",
          "postgres://u@h1:5432,h2:5433/db?target_session_attrs=read-write"
          "&application_name=job%201&connect_timeout=2" },
        { "mysql://u@h/db?socket=/run/mysqld/mysqld.sock&ssl_mode=REQUIRED",
          "mysql://u@h/db?socket=/run/mysqld/mysqld.sock&ssl_mode=REQUIRED" },
        { "sqlite:///var/tmp/x.db?busy_timeout=2s",
          "sqlite:///var/tmp/x.db?busy_timeout=2s" },
        /* A URL missing its "//" or its scheme. */
        { "u:Sec7et@host/db", "u:***@host/db" },
        { "postgres:u:Sec7et@h/db", "postgres:***@h/db" },
        /* libpq's "name = value" form, which the parser refuses. */
        { "host=h password=Sec7et dbname=d", "host=h password=*** dbname=d" },
        { "host=h password = 'Sec 7et' pwd=x", "host=h password = *** pwd=***" },
        /* No password: unchanged. */
        { "postgres://alice@db/app", "postgres://alice@db/app" },
        { "sqlite:rel/a@b.db", "sqlite:rel/a@b.db" },
    };
    size_t i;

    (void)state;
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *r = sqllock__url_redact(cases[i].url);

        assert_non_null(r);
        if (strcmp(r, cases[i].want) != 0)
            fail_msg("redact(\"%s\") = \"%s\", want \"%s\"", cases[i].url, r,
                     cases[i].want);
        free(r);
    }
}

/* C4, defence in depth: what the handle's one message writer does with
 * a message that quotes a secret of its URL (as libpq does with the rest
 * of a password after an unescaped '@'). */
static void test_secrets_C4_scrub_messages(void **state)
{
    static const struct {
        const char *url, *msg, *want;
    } cases[] = {
        /* libpq reads the user info up to the first '@'. */
        { "postgres://u:p@ssW0rdXy@127.0.0.1:5432/db",
          "could not translate host name \"ssW0rdXy@127.0.0.1\" to address",
          "could not translate host name \"***@127.0.0.1\" to address" },
        /* A tail of 2 bytes, before its '@' only. */
        { "postgres://u:p@ss@127.0.0.1/db",
          "host name \"ss@127.0.0.1\"; ss stays", 
          "host name \"***@127.0.0.1\"; ss stays" },
        /* Decoded, as written, and the pieces around the '@'. */
        { "mysql://u:Kp7w%40Vx9q@h/db", "a Kp7w@Vx9q b Kp7w%40Vx9q c Vx9q d",
          "a *** b *** c *** d" },
        { "postgres://u:Kp7w:Vx/9q@h/db", "x Kp7w:Vx/9q y", "x *** y" },
        /* An unknown parameter's value, and the password as one. */
        { "postgres://u@h/db?pwd=Zz9Secret", "bad value Zz9Secret",
          "bad value ***" },
        { "postgres://u@h/db?password=Zz9Secret", "got Zz9Secret",
          "got ***" },
        /* A password inside the host name stays there, not elsewhere. */
        { "postgres://u:db01@db01.example.com/app",
          "connection to \"db01.example.com\" failed (db01)",
          "connection to \"db01.example.com\" failed (***)" },
        { "postgres://u:calh@localhost:1/app",
          "connection to server at \"localhost\" (127.0.0.1), port 1 failed",
          "connection to server at \"localhost\" (127.0.0.1), port 1 failed" },
        /* Shorter than 4 bytes: left alone, not a message of asterisks. */
        { "postgres://u:pw@h/db", "pw is short: pwpw", "pw is short: pwpw" },
        /* A word of the messages. */
        { "postgres://u:password@h/db",
          "FATAL: password authentication failed for user \"u\"",
          "FATAL: password authentication failed for user \"u\"" },
        /* No "//": the parser takes the user info for a path, which is
         * then no public part. */
        { "postgres:u:Sec7et@h/db",
          "missing \"=\" after \"postgres:u:Sec7et@h/db\"",
          "missing \"=\" after \"postgres:***@h/db\"" },
        /* A public parameter's value is no secret. */
        { "postgres://u@h/db?sslmode=require", "sslmode require", 
          "sslmode require" },
    };
    size_t i;

    (void)state;
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *sec = sqllock__url_secrets(cases[i].url);
        char msg[SQLLOCK__ERRMSG_MAX];

        assert_non_null(sec);
        snprintf(msg, sizeof msg, "%s", cases[i].msg);
        sqllock__scrub(msg, sizeof msg, sec);
        sqllock__secrets_free(sec);
        if (strcmp(msg, cases[i].want) != 0)
            fail_msg("URL \"%s\": scrub(\"%s\") = \"%s\", want \"%s\"",
                     cases[i].url, cases[i].msg, msg, cases[i].want);
    }
}

/* C4: a message cut to fit still ends well when "***" is longer than the
 * tail it hides, and a handle's message goes through the scrubber (here
 * a URL the core refuses before any driver sees it). */
static void test_secrets_C4_scrub_long_message_and_handle(void **state)
{
    char *sec = sqllock__url_secrets("postgres://u:a@xy@h/db");
    char msg[SQLLOCK__ERRMSG_MAX];
    sqllock_db *db = NULL;
    size_t i;
    int rc;

    (void)state;
    assert_non_null(sec);
    for (i = 0; i + 3 < sizeof msg - 1; i += 3)
        memcpy(msg + i, "xy@", 3);
    msg[i] = '\0';
    sqllock__scrub(msg, sizeof msg, sec);
    sqllock__secrets_free(sec);
    assert_true(strlen(msg) < sizeof msg);
    assert_null(strstr(msg, "xy@"));
    assert_int_equal(strncmp(msg, "***@***@", 8), 0);

    rc = sqllock_open("host=h password=Kp7wVx9qC4 dbname=d", NULL, &db);
    assert_int_equal(rc, SQLLOCK_EURL);
    assert_null(strstr(sqllock_errmsg(db), "Kp7wVx9qC4"));
    assert_non_null(strstr(sqllock_errmsg(db), "password=***"));
    sqllock_close(db);
}

/* ------------------------------------------------------------------ */
/* Running the tool                                                    */
/* ------------------------------------------------------------------ */

#define MAX_ARGS 24

typedef struct tool_run {
    pid_t pid;
    char out_path[4200], err_path[4200];
    char out[8192], err[8192];
} tool_run;

/* Clears the tool's database variables in this process's environment,
 * which the tools started here inherit; the test is one thread. */
static void clear_db_env(void)
{
    unsetenv("SQLLOCK_DB");
    unsetenv("SQLLOCK_DB_FILE");
}

/* Starts the tool with `args` and a minimal environment: PATH, HOME,
 * TMPDIR, the sanitizers' options, and SQLLOCK_DB and SQLLOCK_DB_FILE
 * when this process has them. The test's own environment holds the test
 * URLs, passwords and all, which a command would otherwise inherit and
 * show as if sqllock had passed them on. */
static void start(tool_run *t, const char *dir, const char *const *args)
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
static int finish(tool_run *t, int64_t ms)
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

static int run_tool(tool_run *t, const char *dir, const char *const *args)
{
    start(t, dir, args);
    return finish(t, 60000);
}

/* Reads /proc/<pid>/<what> whole (it holds NULs); returns its length. */
static size_t read_proc(pid_t pid, const char *what, char *buf, size_t size)
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
static const char *env_value(const char *env, size_t len, const char *name)
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
static void write_file(const char *path, const char *text, size_t len)
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
/* --db-file and $SQLLOCK_DB_FILE                                      */
/* ------------------------------------------------------------------ */

/* Runs `sqllock [a1 [a2]] init` (NULL ends the options early); fails
 * unless it exits 0 and says it used the database `want`. */
static void init_uses(const char *dir, const char *want, const char *a1,
                      const char *a2)
{
    const char *args[4];
    tool_run t;
    int n = 0, code;

    if (a1 != NULL)
        args[n++] = a1;
    if (a1 != NULL && a2 != NULL)
        args[n++] = a2;
    args[n++] = "init";
    args[n] = NULL;
    code = run_tool(&t, dir, args);
    if (code != 0 || strstr(t.out, want) == NULL)
        fail_msg("sqllock %s %s init: exit %d, want 0 and %s; stdout: %s "
                 "stderr: %s", a1 ? a1 : "", a2 ? a2 : "", code, want, t.out,
                 t.err);
}

/* Runs `sqllock [a1 a2 [a3 a4]] list`; fails unless it exits `want` and
 * says `text` on stderr, without the file content's mark "Zq8". */
static void list_fails(const char *dir, int want, const char *text,
                       const char *a1, const char *a2, const char *a3,
                       const char *a4)
{
    const char *args[6];
    tool_run t;
    int n = 0, code;

    if (a1 != NULL) {
        args[n++] = a1;
        args[n++] = a2;
    }
    if (a3 != NULL) {
        args[n++] = a3;
        args[n++] = a4;
    }
    args[n++] = "list";
    args[n] = NULL;
    code = run_tool(&t, dir, args);
    if (code != want || strstr(t.err, text) == NULL)
        fail_msg("sqllock %s %s list: exit %d, want %d and \"%s\"; "
                 "stderr: %s", a1 ? a1 : "", a2 ? a2 : "", code, want, text,
                 t.err);
    if (strstr(t.err, "Zq8") != NULL || strstr(t.out, "Zq8") != NULL)
        fail_msg("the file's content was printed: %s%s", t.out, t.err);
}

/* The tool reads the URL from a file: the first line that is not blank,
 * trimmed; --db, --db-file, $SQLLOCK_DB, $SQLLOCK_DB_FILE in that order
 * (init says which database it used); and each way a file can be wrong
 * exits 69 (64 for --db with --db-file), naming the file, never its
 * content. */
static void test_secrets_C4_db_file_precedence_and_errors(void **state)
{
    /* Larger than the tool's limit (CLI_DB_FILE_MAX, 16384 bytes). */
    static char big[16400];
    char *dir = tu_mkdtemp();
    char path[4300], b[4300], d[4300], text[9000];
    char url_a[4400], url_b[4400], url_c[4400], url_d[4400];
    tool_run t;
    int code;

    (void)state;
    assert_non_null(dir);
    clear_db_env();
    snprintf(url_a, sizeof url_a, "sqlite://%s/a.db", dir);
    snprintf(url_b, sizeof url_b, "sqlite://%s/b.db", dir);
    snprintf(url_c, sizeof url_c, "sqlite://%s/c.db", dir);
    snprintf(url_d, sizeof url_d, "sqlite://%s/d.db", dir);
    snprintf(b, sizeof b, "%s/b.url", dir);
    snprintf(d, sizeof d, "%s/d.url", dir);
    /* Blank lines, white space around the URL, CRLF, a second line. */
    snprintf(text, sizeof text, "\n  \t\r\n\t %s \r\nsqlite:///nowhere.db\n",
             url_b);
    write_file(b, text, strlen(text));
    snprintf(text, sizeof text, "%s", url_d);     /* no newline at all */
    write_file(d, text, strlen(text));

    /* Each source alone, then each above the ones after it; a variable
     * set but empty counts as unset. */
    init_uses(dir, url_b, "--db-file", b);
    snprintf(text, sizeof text, "--db-file=%s", b);
    init_uses(dir, url_b, text, NULL);
    setenv("SQLLOCK_DB_FILE", d, 1);
    init_uses(dir, url_d, NULL, NULL);
    setenv("SQLLOCK_DB", url_c, 1);
    init_uses(dir, url_c, NULL, NULL);
    init_uses(dir, url_b, "--db-file", b);
    init_uses(dir, url_a, "--db", url_a);
    setenv("SQLLOCK_DB", "", 1);
    init_uses(dir, url_d, NULL, NULL);
    clear_db_env();

    snprintf(path, sizeof path, "%s/missing.url", dir);
    list_fails(dir, 69, "No such file", "--db-file", path, NULL, NULL);
    list_fails(dir, 69, "missing.url", "--db-file", path, NULL, NULL);
    setenv("SQLLOCK_DB_FILE", path, 1);
    list_fails(dir, 69, "$SQLLOCK_DB_FILE", NULL, NULL, NULL, NULL);
    clear_db_env();
    /* A directory cannot be read. */
    list_fails(dir, 69, "directory", "--db-file", dir, NULL, NULL);
    /* Unreadable: only when the test does not run as root. */
    if (geteuid() != 0) {
        snprintf(path, sizeof path, "%s/locked.url", dir);
        write_file(path, "sqlite:///x.db?Zq8\n", 19);
        chmod(path, 0);
        list_fails(dir, 69, "Permission denied", "--db-file", path, NULL,
                   NULL);
    } else {
        printf("secrets: as root, no file is unreadable; a directory "
               "stands in for one\n");
    }
    snprintf(path, sizeof path, "%s/empty.url", dir);
    write_file(path, "", 0);
    list_fails(dir, 69, "empty", "--db-file", path, NULL, NULL);
    write_file(path, " \n\t\r\n\n", 6);
    list_fails(dir, 69, "empty", "--db-file", path, NULL, NULL);
    snprintf(path, sizeof path, "%s/big.url", dir);
    memset(big, 'Z', sizeof big);
    memcpy(big, "Zq8", 3);
    write_file(path, big, sizeof big);
    list_fails(dir, 69, "larger than", "--db-file", path, NULL, NULL);
    snprintf(path, sizeof path, "%s/nul.url", dir);
    write_file(path, "sqlite:///x.db\0Zq8\n", 19);
    list_fails(dir, 69, "NUL", "--db-file", path, NULL, NULL);
    /* --db with --db-file, wherever each is. */
    list_fails(dir, 64, "together", "--db", url_a, "--db-file", b);
    {
        const char *const args[] = { "--db", url_a, "list", "--db-file", b,
                                     NULL };
        code = run_tool(&t, dir, args);
        if (code != 64)
            fail_msg("--db before list, --db-file after: exit %d, want 64",
                     code);
    }
    tu_rmdir(dir);
    free(dir);
}

/* ------------------------------------------------------------------ */
/* Per database                                                        */
/* ------------------------------------------------------------------ */

/* The URL the current group runs on. */
static const char *g_url;

typedef struct fixture {
    char *dir;
    const char *drv;
    /* The test URL's parts. */
    char user[256], pw[256], host[256], db[256], query[1024];
    int port;
    /* What the runs use: the role's URL, or the test URL. */
    char run_url[4400];
    char role[64];             /* the role made for the test, or "" */
    sqllock_db *admin;         /* the superuser connection, or NULL */
    forms run_forms;           /* the run password's forms */
    int run_has_pw;
    tool_run job;              /* the run in progress (pid != 0) */
    pid_t cmd;
    unsigned seq;
} fixture;

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

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    sqllock_url *u = NULL;
    sqllock_db *db = NULL;
    char why[512];
    const char *q;
    int rc;

    if (f == NULL)
        return -1;
    clear_db_env();
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
        forms_of(&f->run_forms, ROLE_PW, 1);
        forms_of(&f->run_forms, ROLE_PW_URL, 1);
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
            forms_of(&f->run_forms, f->pw, 0);
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

static int teardown(void **state)
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
    clear_db_env();
    tu_rmdir(f->dir);
    free(f->dir);
    free(f);
    return 0;
}

/* How the runs name the database. */
enum how {
    H_DB,              /* sqllock --db URL run ... */
    H_DB_EQ_AFTER,     /* sqllock run NAME --db=URL ... */
    H_DB_VAR,          /* SQLLOCK_DB=URL sqllock run ... */
    H_FILE,            /* sqllock --db-file PATH run ... */
    H_FILE_VAR,        /* SQLLOCK_DB_FILE=PATH sqllock run ... */
    H_COUNT
};

static const char *const how_names[] = {
    "--db URL", "run --db=URL", "$SQLLOCK_DB", "--db-file", "$SQLLOCK_DB_FILE"
};

/* One `sqllock run` while its command waits: checks the tool's
 * arguments and the command's environment, then lets it end. */
static void one_run(fixture *f, enum how how, int export_db)
{
    char name[128], started[4300], stop[4300], script[9000], file[4300];
    char dbeq[4500], label[200], buf[65536], text[4500];
    const char *args[MAX_ARGS];
    const char *v;
    int64_t end;
    size_t len;
    int n = 0, code;

    snprintf(label, sizeof label, "[%s] %s%s", f->drv, how_names[how],
             export_db ? " --export-db" : "");
    snprintf(name, sizeof name, "secrets-%ld-%u", (long)getpid(), f->seq);
    snprintf(started, sizeof started, "%s/started-%u", f->dir, f->seq);
    snprintf(stop, sizeof stop, "%s/stop-%u", f->dir, f->seq);
    snprintf(file, sizeof file, "%s/db-%u.url", f->dir, f->seq++);
    snprintf(script, sizeof script, "echo $$ > '%s'; while [ ! -e '%s' ]; "
             "do sleep 0.05; done", started, stop);
    snprintf(text, sizeof text, "\n  %s\n", f->run_url);
    write_file(file, text, strlen(text));
    clear_db_env();
    if (how == H_DB) {
        args[n++] = "--db";
        args[n++] = f->run_url;
    } else if (how == H_FILE) {
        args[n++] = "--db-file";
        args[n++] = file;
    } else if (how == H_DB_VAR) {
        setenv("SQLLOCK_DB", f->run_url, 1);
    } else if (how == H_FILE_VAR) {
        setenv("SQLLOCK_DB_FILE", file, 1);
    }
    args[n++] = "run";
    args[n++] = name;
    if (how == H_DB_EQ_AFTER) {
        snprintf(dbeq, sizeof dbeq, "--db=%s", f->run_url);
        args[n++] = dbeq;
    }
    args[n++] = "--ttl";
    args[n++] = "30s";
    if (export_db)
        args[n++] = "--export-db";
    args[n++] = "--";
    args[n++] = "sh";
    args[n++] = "-c";
    args[n++] = script;
    args[n] = NULL;
    start(&f->job, f->dir, args);
    clear_db_env();

    /* The command runs once it has written its pid. */
    end = tu_now_ms() + START_MS;
    f->cmd = 0;
    while (f->cmd <= 0) {
        if (tu_read_file(started, buf, sizeof buf) > 0 &&
            strchr(buf, '\n') != NULL)
            f->cmd = (pid_t)strtol(buf, NULL, 10);
        else if (tu_wait_for(f->job.pid, 0) >= 0 || tu_now_ms() > end) {
            tu_kill_wait(f->job.pid);
            f->job.pid = 0;
            tu_read_file(f->job.err_path, f->job.err, sizeof f->job.err);
            fail_msg("%s: the command did not start; stderr: %s", label,
                     f->job.err);
        } else {
            tu_sleep_ms(10);
        }
    }

    /* The tool's arguments, as every local user sees them. */
    len = read_proc(f->job.pid, "cmdline", buf, sizeof buf);
    expect_clean(label, buf, len, &f->run_forms);
    if (how == H_DB || how == H_DB_EQ_AFTER) {
        /* --db is still there, in its redacted form. */
        char *shown = sqllock__url_redact(f->run_url);

        assert_non_null(shown);
        if (!bin_contains(buf, len, f->run_has_pw ? "***" : f->run_url) ||
            !bin_contains(buf, len, how == H_DB ? "--db" : "--db=") ||
            (strlen(shown) <= strlen(f->run_url) &&
             !bin_contains(buf, len, shown)))
            fail_msg("%s: /proc/%ld/cmdline does not show --db %s",
                     label, (long)f->job.pid, shown);
        free(shown);
    }

    /* The command's environment. */
    len = read_proc(f->cmd, "environ", buf, sizeof buf);
    v = env_value(buf, len, "SQLLOCK_DB");
    if (export_db && (how == H_DB || how == H_DB_EQ_AFTER ||
                      how == H_DB_VAR)) {
        /* The URL itself, password and all: what was asked for. */
        if (v == NULL || strcmp(v, f->run_url) != 0)
            fail_msg("%s: the command's SQLLOCK_DB is %s, want the URL",
                     label, v != NULL ? "another" : "missing");
    } else {
        if (v != NULL)
            fail_msg("%s: the command got SQLLOCK_DB", label);
        expect_clean(label, buf, len, &f->run_forms);
    }
    v = env_value(buf, len, "SQLLOCK_DB_FILE");
    if (export_db && (how == H_FILE || how == H_FILE_VAR)) {
        if (v == NULL || strcmp(v, file) != 0)
            fail_msg("%s: the command's SQLLOCK_DB_FILE is %s, want %s",
                     label, v != NULL ? v : "missing", file);
    } else if (v != NULL) {
        fail_msg("%s: the command got SQLLOCK_DB_FILE=%s", label, v);
    }
    v = env_value(buf, len, "SQLLOCK_NAME");
    if (v == NULL || strcmp(v, name) != 0)
        fail_msg("%s: SQLLOCK_NAME is %s, want %s", label, v ? v : "missing",
                 name);
    v = env_value(buf, len, "SQLLOCK_OWNER");
    if (v == NULL || !tu_is_owner_id(v))
        fail_msg("%s: no SQLLOCK_OWNER of 32 hex digits", label);
    v = env_value(buf, len, "SQLLOCK_TOKEN");
    if (v == NULL || v[0] < '1' || v[0] > '9')
        fail_msg("%s: no SQLLOCK_TOKEN", label);

    /* The command ends; so does the run, with its status. */
    write_file(stop, "", 0);
    code = finish(&f->job, 30000);
    f->cmd = 0;
    if (code != 0)
        fail_msg("%s: exit %d; stderr: %s", label, code, f->job.err);
    expect_clean(label, f->job.out, strlen(f->job.out), &f->run_forms);
    expect_clean(label, f->job.err, strlen(f->job.err), &f->run_forms);
}

/* C4: the password is in neither the tool's arguments (once it has
 * read them) nor its command's environment, whichever way the URL came,
 * unless --export-db asks for it. */
static void test_secrets_C4_run_argv_and_environ(void **state)
{
    fixture *f = *state;
    int how, exp;

    for (how = 0; how < H_COUNT; how++)
        for (exp = 0; exp < 2; exp++)
            one_run(f, (enum how)how, exp);
}

/* C4: what init, list and list --json print on success: init shows the
 * URL redacted, and nothing shows the password. */
static void test_secrets_C4_init_and_list_output(void **state)
{
    fixture *f = *state;
    const char *const init[] = { "--db", f->run_url, "init", NULL };
    const char *const list[] = { "--db", f->run_url, "list", NULL };
    const char *const json[] = { "--db", f->run_url, "list", "--json", NULL };
    const char *const *cmds[] = { init, list, json };
    tool_run t;
    int i, code;

    clear_db_env();
    for (i = 0; i < 3; i++) {
        code = run_tool(&t, f->dir, cmds[i]);
        if (code != 0)
            fail_msg("[%s] sqllock %s: exit %d; stderr: %s", f->drv,
                     cmds[i][2], code, t.err);
        expect_clean(cmds[i][2], t.out, strlen(t.out), &f->run_forms);
        expect_clean(cmds[i][2], t.err, strlen(t.err), &f->run_forms);
        if (i == 0 && f->run_has_pw && strstr(t.out, ":***@") == NULL)
            fail_msg("[%s] init does not show the URL redacted: %s", f->drv,
                     t.out);
    }
}

/* A port nothing listens on (bound, then closed). */
static int closed_port(void)
{
    struct sockaddr_in sa;
    socklen_t sl = sizeof sa;
    int fd = socket(AF_INET, SOCK_STREAM, 0), port;

    assert_true(fd >= 0);
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &sl), 0);
    port = ntohs(sa.sin_port);
    close(fd);
    return port;
}

/* The hostile URLs of the current database; n returned. Every secret in
 * them is built from "Kp7w", "Vx9q" and "C4zz" (hostile_forms()). */
#define H_MAX 16

static int hostile_urls(fixture *f, char urls[H_MAX][4600],
                        const char *labels[H_MAX])
{
    const char *s = strcmp(f->drv, "postgres") == 0 ? "postgres" : "mysql";
    char hp[300];
    int n = 0, closed = closed_port();

    if (strcmp(f->drv, "sqlite") == 0) {
        labels[n] = "user info on sqlite";
        snprintf(urls[n++], 4600, "sqlite://u:Kp7w@Vx9q@/%s/x.db", f->dir);
        labels[n] = "?pwd= on sqlite";
        snprintf(urls[n++], 4600, "sqlite://%s/x.db?pwd=Kp7wVx9qC4zz",
                 f->dir);
        labels[n] = "?password= on sqlite";
        snprintf(urls[n++], 4600, "sqlite://%s/x.db?password=Kp7wVx9qC4zz",
                 f->dir);
        return n;
    }
    snprintf(hp, sizeof hp, "%s:%d", f->host, f->port);
    labels[n] = "unescaped @, closed port";
    snprintf(urls[n++], 4600, "%s://%s:Kp7w@Vx9q@127.0.0.1:%d/%s", s,
             f->user, closed, f->db);
    labels[n] = "unescaped @, the server";
    snprintf(urls[n++], 4600, "%s://%s:Kp7w@Vx9q@%s/%s%s", s, f->user, hp,
             f->db, f->query);
    labels[n] = "unescaped @ twice, the server";
    snprintf(urls[n++], 4600, "%s://%s:Kp7w@Vx9q@C4zz@%s/%s%s", s, f->user,
             hp, f->db, f->query);
    labels[n] = "%40, the server";
    snprintf(urls[n++], 4600, "%s://%s:Kp7w%%40Vx9q@%s/%s%s", s, f->user, hp,
             f->db, f->query);
    labels[n] = "':' and %2F, the server";
    snprintf(urls[n++], 4600, "%s://%s:Kp7w:Vx9q%%2FC4zz@%s/%s%s", s,
             f->user, hp, f->db, f->query);
    labels[n] = "':' and unescaped '/'";
    snprintf(urls[n++], 4600, "%s://%s:Kp7w:Vx9q/C4zz@%s/%s%s", s, f->user,
             hp, f->db, f->query);
    labels[n] = "bad port";
    snprintf(urls[n++], 4600, "%s://%s:Kp7wVx9qC4zz@%s:99999/%s", s,
             f->user, f->host, f->db);
    labels[n] = "?pwd=";
    snprintf(urls[n++], 4600, "%s://%s@%s/%s?pwd=Kp7wVx9qC4zz", s, f->user,
             hp, f->db);
    labels[n] = "?passwd=";
    snprintf(urls[n++], 4600, "%s://%s@%s/%s?passwd=Kp7wVx9qC4zz", s,
             f->user, hp, f->db);
    labels[n] = "?secret=";
    snprintf(urls[n++], 4600, "%s://%s@%s/%s?secret=Kp7wVx9qC4zz", s,
             f->user, hp, f->db);
    labels[n] = "?password=, wrong";
    snprintf(urls[n++], 4600, "%s://%s@%s/%s?password=Kp7wVx9qC4zz", s,
             f->user, hp, f->db);
    labels[n] = "?password= with '@', closed port";
    snprintf(urls[n++], 4600, "%s://%s@127.0.0.1:%d/%s?password=Kp7w@Vx9q",
             s, f->user, closed, f->db);
    return n;
}

/* The secrets of the hostile URLs, whole and in pieces. */
static void hostile_forms(forms *fm)
{
    static const char *const s[] = {
        "Kp7w@Vx9q", "Kp7w%40Vx9q", "Kp7w@Vx9q@C4zz", "Kp7w:Vx9q/C4zz",
        "Kp7w:Vx9q%2FC4zz", "Kp7wVx9qC4zz", "Vx9q@C4zz", NULL
    };
    int i;

    memset(fm, 0, sizeof *fm);
    for (i = 0; s[i] != NULL; i++)
        forms_of(fm, s[i], 0);
}

/* C4: hostile URLs through the API: the open fails, and its message has
 * no piece of the secret. */
static void test_secrets_C4_hostile_urls_api(void **state)
{
    fixture *f = *state;
    char urls[H_MAX][4600];
    const char *labels[H_MAX];
    forms fm;
    int i, n = hostile_urls(f, urls, labels), rc;

    hostile_forms(&fm);
    for (i = 0; i < n; i++) {
        sqllock_db *db = NULL;
        char what[300];

        rc = sqllock_open(urls[i], NULL, &db);
        snprintf(what, sizeof what, "[%s] %s: sqllock_errmsg()", f->drv,
                 labels[i]);
        if (rc == SQLLOCK_OK)
            fail_msg("%s: the open succeeded", what);
        expect_clean(what, sqllock_errmsg(db), strlen(sqllock_errmsg(db)),
                     &fm);
        printf("  %s: %s: %s\n", what, sqllock_errname(rc),
               sqllock_errmsg(db));
        sqllock_close(db);
    }
}

/* C4: a password that is part of the host name is left in the host name
 * (the message is not made into "lo***ost"), and a short one is not
 * scrubbed at all. */
static void test_secrets_C4_password_in_host_name(void **state)
{
    fixture *f = *state;
    static const char *const pws[] = { "calh", "local", "pw", "x" };
    int i, closed = closed_port(), rc;

    if (strcmp(f->drv, "sqlite") == 0) {
        printf("secrets [sqlite]: no host name\n");
        return;
    }
    for (i = 0; i < 4; i++) {
        char url[600];
        const char *msg;
        sqllock_db *db = NULL;

        snprintf(url, sizeof url, "%s://%s:%s@localhost:%d/%s",
                 strcmp(f->drv, "postgres") == 0 ? "postgres" : "mysql",
                 f->user, pws[i], closed, f->db);
        rc = sqllock_open(url, NULL, &db);
        assert_int_not_equal(rc, SQLLOCK_OK);
        msg = sqllock_errmsg(db);
        printf("  [%s] password '%s' on localhost: %s\n", f->drv, pws[i],
               msg);
        if (strstr(msg, "***") != NULL)
            fail_msg("[%s] password '%s', host localhost: the message has "
                     "asterisks: %s", f->drv, pws[i], msg);
        sqllock_close(db);
    }
}

/* C4: the same hostile URLs through the tool, given by --db, --db-file
 * and $SQLLOCK_DB, to list, init and run: exit 69 (64 for none), and no
 * piece of the secret on stdout or stderr. */
static void test_secrets_C4_hostile_urls_cli(void **state)
{
    fixture *f = *state;
    char urls[H_MAX][4600], file[4300], label[300];
    const char *labels[H_MAX];
    forms fm;
    tool_run t;
    int i, how, n = hostile_urls(f, urls, labels), code;

    hostile_forms(&fm);
    snprintf(file, sizeof file, "%s/hostile.url", f->dir);
    for (i = 0; i < n; i++) {
        write_file(file, urls[i], strlen(urls[i]));
        for (how = 0; how < 3; how++) {
            const char *const list_db[] = { "--db", urls[i], "list", NULL };
            const char *const init_file[] = { "--db-file", file, "init",
                                              NULL };
            const char *const run_var[] = { "run", "x", "--ttl", "5s", "--",
                                            "true", NULL };

            clear_db_env();
            if (how == 2)
                setenv("SQLLOCK_DB", urls[i], 1);
            code = run_tool(&t, f->dir, how == 0 ? list_db
                                      : how == 1 ? init_file : run_var);
            clear_db_env();
            snprintf(label, sizeof label, "[%s] %s, %s", f->drv, labels[i],
                     how == 0 ? "--db list" : how == 1 ? "--db-file init"
                                                       : "$SQLLOCK_DB run");
            if (code != 69)
                fail_msg("%s: exit %d, want 69; stderr: %s", label, code,
                         t.err);
            expect_clean(label, t.out, strlen(t.out), &fm);
            expect_clean(label, t.err, strlen(t.err), &fm);
        }
    }
}

int main(void)
{
    const struct CMUnitTest pure[] = {
        cmocka_unit_test(test_secrets_C4_redact_hostile_urls),
        cmocka_unit_test(test_secrets_C4_scrub_messages),
        cmocka_unit_test(test_secrets_C4_scrub_long_message_and_handle),
        cmocka_unit_test(test_secrets_C4_db_file_precedence_and_errors),
    };
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_secrets_C4_run_argv_and_environ),
        cmocka_unit_test(test_secrets_C4_init_and_list_output),
        cmocka_unit_test(test_secrets_C4_hostile_urls_api),
        cmocka_unit_test(test_secrets_C4_password_in_host_name),
        cmocka_unit_test(test_secrets_C4_hostile_urls_cli),
    };
    int failed;

    /* Under CI, every driver must be tested: a missing one fails the
     * required-drivers check of TU_RUN_PER_URL. (With SQLLOCK_TEST_DRIVER,
     * ctest's entry for one driver, that driver; the entries of the
     * others check theirs.) */
    if (tu_ci()) {
        static const char *const all[] = { "sqlite", "postgres", "mysql" };
        const char *only = getenv("SQLLOCK_TEST_DRIVER");
        tu_urls urls;
        int i, k, found;

        if (tu_urls_load(&urls) == 0) {
            for (k = 0; k < 3 && tu_missing_driver[0] == '\0'; k++) {
                if (only != NULL && *only != '\0' && strcmp(only, all[k]) != 0)
                    continue;
                for (i = 0, found = 0; i < urls.n; i++) {
                    const char *d = tu_url_driver(urls.url[i]);
                    found |= d != NULL && strcmp(d, all[k]) == 0;
                }
                if (!found)
                    snprintf(tu_missing_driver, sizeof tu_missing_driver,
                             "%s (under CI)", all[k]);
            }
            tu_urls_free(&urls);
        }
    }
    failed = cmocka_run_group_tests_name("secrets", pure, NULL, NULL);
    return tu_status_merge(failed != 0,
                           TU_RUN_PER_URL("secrets", &g_url, tests, setup,
                                          teardown));
}
