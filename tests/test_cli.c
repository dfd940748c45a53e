/*
 * test_cli.c -- the `sqllock` command-line tool, run as a separate process
 * with --db on every database URL in SQLLOCK_TEST_URLS (or a temporary
 * SQLite file when that is unset): exit codes, the printed owner and
 * token, `run` holding the lock around a command, `reap` (DESIGN L1, L3,
 * L4, L5, P4, E2), durations, and, without --db, the refusal of a
 * command that names no database, --local, -V and -h. Lock names carry
 * the pid, so runs on a shared server do not meet.
 *
 * SQLLOCK_CLI_PATH is the built tool, passed in by tests/CMakeLists.txt,
 * and SQLLOCK_CLI_SQLITE_ONLY_PATH a copy of it built with the SQLite
 * driver alone (when SQLite is built).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "test_util.h"
#include "test_run.h"
#include "test_spawn.h"

#ifndef SQLLOCK_CLI_PATH
#error "SQLLOCK_CLI_PATH must name the built sqllock tool"
#endif

typedef struct fixture {
    char *dir;
    char url[4200];
    char out[65536];           /* the last run's stdout */
    char err[8192];            /* the last run's stderr */
    char names[16][300];       /* see U() */
    unsigned next_name;
} fixture;

/* The URL the current group runs on. */
static const char *g_url;

/* The lock name `tail` made unique to this process ("cli-<pid>-tail"),
 * in one of a ring of buffers in the fixture. */
static const char *U(fixture *f, const char *tail)
{
    char *b = f->names[f->next_name++ % 16];

    snprintf(b, sizeof f->names[0], "cli-%ld-%s", (long)getpid(), tail);
    return b;
}

#define MAX_ARGS 32

/* Runs the tool with --db <url> and the NULL-terminated `args`; returns
 * its exit status (or 1000 + signal). stdout and stderr land in f->out
 * and f->err. */
static int cli(fixture *f, const char *const *args)
{
    const char *argv[MAX_ARGS + 4];
    char out_path[4300], err_path[4300];
    int n = 0, code;

    argv[n++] = SQLLOCK_CLI_PATH;
    argv[n++] = "--db";
    argv[n++] = f->url;
    for (; *args != NULL && n < MAX_ARGS; args++)
        argv[n++] = *args;
    argv[n] = NULL;
    snprintf(out_path, sizeof out_path, "%s/stdout.txt", f->dir);
    snprintf(err_path, sizeof err_path, "%s/stderr.txt", f->dir);
    code = tu_wait(tu_spawn(argv, out_path, err_path, 0));
    tu_read_file(out_path, f->out, sizeof f->out);
    tu_read_file(err_path, f->err, sizeof f->err);
    return code;
}

/* Runs the tool with the NULL-terminated `args` alone: no --db of the
 * fixture's. The same contract as cli(). */
static int cli_bare(fixture *f, const char *const *args)
{
    const char *argv[MAX_ARGS + 2];
    char out_path[4300], err_path[4300];
    int n = 0, code;

    argv[n++] = SQLLOCK_CLI_PATH;
    for (; *args != NULL && n < MAX_ARGS; args++)
        argv[n++] = *args;
    argv[n] = NULL;
    snprintf(out_path, sizeof out_path, "%s/stdout.txt", f->dir);
    snprintf(err_path, sizeof err_path, "%s/stderr.txt", f->dir);
    code = tu_wait(tu_spawn(argv, out_path, err_path, 0));
    tu_read_file(out_path, f->out, sizeof f->out);
    tu_read_file(err_path, f->err, sizeof f->err);
    return code;
}

#define EXPECT_BARE(f, want, ...)                                              \
    do {                                                                       \
        const char *const args_[] = { __VA_ARGS__, NULL };                     \
        int got_ = cli_bare((f), args_);                                       \
        if (got_ != (want))                                                    \
            fail_msg("sqllock %s ... (no --db): exit %d, want %d\nstdout: "    \
                     "%s\nstderr: %s", args_[0], got_, (want), (f)->out,       \
                     (f)->err);                                                \
    } while (0)

#define EXPECT_EXIT(f, want, ...)                                              \
    do {                                                                       \
        const char *const args_[] = { __VA_ARGS__, NULL };                     \
        int got_ = cli((f), args_);                                            \
        if (got_ != (want))                                                    \
            fail_msg("sqllock %s ...: exit %d, want %d\nstdout: %s\n"          \
                     "stderr: %s", args_[0], got_, (want), (f)->out,           \
                     (f)->err);                                                \
    } while (0)

/* The last run's stdout (or stderr) contains `text`. */
#define EXPECT_CONTAINS(f, text)                                               \
    do {                                                                       \
        if (strstr((f)->out, (text)) == NULL)                                  \
            fail_msg("no \"%s\" in stdout:\n%s\nstderr: %s", (text),          \
                     (f)->out, (f)->err);                                      \
    } while (0)
#define EXPECT_CONTAINS_ERR(f, text)                                           \
    do {                                                                       \
        if (strstr((f)->err, (text)) == NULL)                                  \
            fail_msg("no \"%s\" in stderr:\n%s", (text), (f)->err);           \
    } while (0)

/* `acquire NAME --ttl TTL`, which must succeed; returns the owner and
 * the token it printed. */
static void acquire(fixture *f, const char *name, const char *ttl,
                    char owner[SQLLOCK_OWNER_LEN + 1], int64_t *token)
{
    char tok[64];
    char *end;

    EXPECT_EXIT(f, 0, "acquire", name, "--ttl", ttl);
    if (!tu_get_var(f->out, "SQLLOCK_OWNER", owner, SQLLOCK_OWNER_LEN + 1) ||
        !tu_is_owner_id(owner))
        fail_msg("acquire printed no SQLLOCK_OWNER=<32 hex>:\n%s", f->out);
    if (!tu_get_var(f->out, "SQLLOCK_TOKEN", tok, sizeof tok))
        fail_msg("acquire printed no SQLLOCK_TOKEN=<n>:\n%s", f->out);
    *token = strtoll(tok, &end, 10);
    if (*end != '\0' || *token <= 0)
        fail_msg("SQLLOCK_TOKEN=%s is not a positive number", tok);
}

static int file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    const char *const init[] = { "init", NULL };
    int rc;

    if (f == NULL)
        return -1;
    f->dir = tu_mkdtemp();
    if (f->dir == NULL)
        return -1;
    snprintf(f->url, sizeof f->url, "%s", g_url);
    rc = cli(f, init);
    if (rc != 0) {
        fprintf(stderr, "sqllock init: exit %d: %s%s\n", rc, f->out, f->err);
        return -1;
    }
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;

    if (f != NULL) {
        tu_rmdir(f->dir);
        free(f->dir);
        free(f);
    }
    return 0;
}

/* S1: init succeeds, and again (idempotent). */
static void test_cli_init(void **state)
{
    fixture *f = *state;
    EXPECT_EXIT(f, 0, "init");
    EXPECT_EXIT(f, 0, "init");
}

/* L1/L3/L4: acquire prints owner and token; a second acquire is busy (75);
 * release with the printed owner and token is 0, again 76 (lost). */
static void test_cli_acquire_busy_release(void **state)
{
    fixture *f = *state;
    char owner[SQLLOCK_OWNER_LEN + 1], owner2[SQLLOCK_OWNER_LEN + 1];
    char tok[32];
    int64_t token, token2;

    acquire(f, U(f, "a"), "60s", owner, &token);
    EXPECT_EXIT(f, 75, "acquire", U(f, "a"), "--ttl", "60s");
    EXPECT_EXIT(f, 75, "acquire", U(f, "a"), "--ttl", "60s", "--wait",
                "300ms");
    snprintf(tok, sizeof tok, "%lld", (long long)token);
    /* A wrong owner cannot release it (L3). */
    EXPECT_EXIT(f, 76, "release", U(f, "a"), "--owner",
                "0123456789abcdef0123456789abcdef", "--token", tok);
    EXPECT_EXIT(f, 75, "acquire", U(f, "a"), "--ttl", "60s");
    EXPECT_EXIT(f, 0, "release", U(f, "a"), "--owner", owner, "--token", tok);
    EXPECT_EXIT(f, 76, "release", U(f, "a"), "--owner", owner, "--token", tok);
    /* Free again, with a larger token (L5). */
    acquire(f, U(f, "a"), "60s", owner2, &token2);
    assert_true(token2 > token);
    assert_string_not_equal(owner, owner2);
    snprintf(tok, sizeof tok, "%lld", (long long)token2);
    EXPECT_EXIT(f, 0, "release", U(f, "a"), "--owner", owner2, "--token", tok);
}

/* L1: `run` does not start the command while the lock is held elsewhere. */
static void test_cli_run_busy_does_not_run(void **state)
{
    fixture *f = *state;
    char owner[SQLLOCK_OWNER_LEN + 1], tok[32], file[4300];
    int64_t token;

    snprintf(file, sizeof file, "%s/touched", f->dir);
    acquire(f, U(f, "run-busy"), "60s", owner, &token);
    EXPECT_EXIT(f, 75, "run", U(f, "run-busy"), "--ttl", "5s", "--", "touch",
                file);
    assert_false(file_exists(file));
    snprintf(tok, sizeof tok, "%lld", (long long)token);
    EXPECT_EXIT(f, 0, "release", U(f, "run-busy"), "--owner", owner, "--token",
                tok);
    /* Free now: the command runs, and the lock is released after it. */
    EXPECT_EXIT(f, 0, "run", U(f, "run-busy"), "--ttl", "5s", "--", "touch",
                file);
    assert_true(file_exists(file));
    acquire(f, U(f, "run-busy"), "60s", owner, &token);
    snprintf(tok, sizeof tok, "%lld", (long long)token);
    EXPECT_EXIT(f, 0, "release", U(f, "run-busy"), "--owner", owner, "--token",
                tok);
}

/* run passes the command's exit status through; 127 when not found. */
static void test_cli_run_exit_codes(void **state)
{
    fixture *f = *state;

    EXPECT_EXIT(f, 7, "run", U(f, "run-exit"), "--ttl", "5s", "--", "sh", "-c",
                "exit 7");
    EXPECT_EXIT(f, 0, "run", U(f, "run-exit"), "--ttl", "5s", "--", "true");
    EXPECT_EXIT(f, 127, "run", U(f, "run-exit"), "--ttl", "5s", "--",
                "/nonexistent/sqllock-no-such-command");
    EXPECT_EXIT(f, 127, "run", U(f, "run-exit"), "--ttl", "5s", "--",
                "sqllock-no-such-command-on-path");
    /* The lock was released every time: it is free now. */
    EXPECT_EXIT(f, 0, "run", U(f, "run-exit"), "--ttl", "5s", "--", "true");
}

/* L5: run gives the command SQLLOCK_TOKEN (and the owner and name). */
static void test_cli_run_passes_token(void **state)
{
    fixture *f = *state;
    char file[4300], script[4600], buf[256], owner[SQLLOCK_OWNER_LEN + 1];
    char tok[32];
    int64_t token, seen;
    char *end;

    acquire(f, U(f, "token-before"), "60s", owner, &token);
    snprintf(tok, sizeof tok, "%lld", (long long)token);
    EXPECT_EXIT(f, 0, "release", U(f, "token-before"), "--owner", owner,
                "--token", tok);
    snprintf(file, sizeof file, "%s/token.txt", f->dir);
    snprintf(script, sizeof script,
             "printf '%%s\\n%%s\\n%%s\\n' \"$SQLLOCK_TOKEN\" "
             "\"$SQLLOCK_OWNER\" \"$SQLLOCK_NAME\" > '%s'", file);
    EXPECT_EXIT(f, 0, "run", U(f, "token"), "--ttl", "5s", "--", "sh", "-c",
                script);
    assert_true(tu_read_file(file, buf, sizeof buf) > 0);
    seen = strtoll(buf, &end, 10);
    if (*end != '\n' || seen <= token)
        fail_msg("the command saw SQLLOCK_TOKEN \"%s\"; want a number above "
                 "%lld", buf, (long long)token);
    assert_true(tu_is_owner_id(strtok(end + 1, "\n")));
    assert_string_equal(strtok(NULL, "\n"), U(f, "token"));
}

/* E2: usage errors are 64; an unknown scheme is 69. */
static void test_cli_usage_errors(void **state)
{
    fixture *f = *state;
    const char *const nosuch[] = { "nosuch://x", NULL };

    EXPECT_EXIT(f, 64, "acquire", U(f, "bad"), "--ttl", "5parsecs");
    EXPECT_EXIT(f, 64, "acquire", U(f, "bad"), "--ttl", "9999999999999d");
    EXPECT_EXIT(f, 64, "acquire", U(f, "bad"), "--ttl", "0");
    EXPECT_EXIT(f, 64, "acquire", U(f, "bad"), "--ttl", "-5s");
    EXPECT_EXIT(f, 64, "acquire", U(f, "bad"));
    EXPECT_EXIT(f, 64, "acquire", "", "--ttl", "5s");
    EXPECT_EXIT(f, 64, "run", U(f, "bad"), "--ttl", "5parsecs", "--", "true");
    EXPECT_EXIT(f, 64, "nosuchcommand");
    EXPECT_EXIT(f, 64, "acquire", U(f, "bad"), "--ttl", "5s", "--no-such-opt");
    EXPECT_EXIT(f, 64, "release", U(f, "bad"), "--owner", "xyz", "--token",
                "1");
    EXPECT_EXIT(f, 64, "release", U(f, "bad"), "--owner",
                "0123456789abcdef0123456789abcdef", "--token", "abc");
    /* The message goes to stderr and names the problem. */
    EXPECT_EXIT(f, 64, "acquire", U(f, "bad"), "--ttl", "5parsecs");
    assert_true(tu_contains_ci(f->err, "5parsecs") ||
                tu_contains_ci(f->err, "duration") ||
                tu_contains_ci(f->err, "ttl"));
    {
        /* An unknown scheme in --db: a copy of the fixture with that
         * URL. */
        fixture *g = calloc(1, sizeof *g);
        const char *const args[] = { "list", NULL };
        int rc;
        assert_non_null(g);
        g->dir = f->dir;
        snprintf(g->url, sizeof g->url, "%s", nosuch[0]);
        rc = cli(g, args);
        if (rc != 69) {
            fprintf(stderr, "stdout: %s\nstderr: %s\n", g->out, g->err);
            free(g);
            fail_msg("sqllock --db nosuch://x list: exit %d, want 69", rc);
        }
        assert_true(tu_contains_ci(g->err, "nosuch"));
        free(g);
    }
    /* Nothing was left behind by the failed commands. */
    EXPECT_EXIT(f, 0, "run", U(f, "bad"), "--ttl", "5s", "--", "true");
}

/* Durations in every option that takes one: compound and fractional
 * forms are read as sqllock.h says (acquire prints the ttl it used), and
 * a refused one names the option, the text and what is wrong. */
static void test_cli_durations(void **state)
{
    static const struct {
        const char *text;
        const char *ms;
    } good[] = {
        { "1m30s", "90000" }, { "1.5s", "1500" }, { "0.25s", "250" },
        { "1.5m", "90000" }, { "2d12h", "216000000" }, { "1h30m", "5400000" },
        { "500ms", "500" }, { "30", "30000" }, { "1s500ms", "1500" },
    };
    static const struct {
        const char *text;
        const char *why;
    } bad[] = {
        { "30m1h", "largest first" }, { "1m1m", "largest first" },
        { "1.5h30m", "last number" }, { "1.5ms", "milliseconds" },
        { "1m30", "stand alone" }, { "1.5", "unit" },
        { "106751991167d7h12m55.808s", "longer" }, { "1w", "unknown unit" },
    };
    fixture *f = *state;
    char owner[SQLLOCK_OWNER_LEN + 1], tok[32], ms[32];
    int64_t token;
    size_t i;

    for (i = 0; i < sizeof good / sizeof good[0]; i++) {
        acquire(f, U(f, "dur"), good[i].text, owner, &token);
        if (!tu_get_var(f->out, "SQLLOCK_TTL_MS", ms, sizeof ms) ||
            strcmp(ms, good[i].ms) != 0)
            fail_msg("acquire --ttl %s printed SQLLOCK_TTL_MS=%s, want %s",
                     good[i].text, ms, good[i].ms);
        snprintf(tok, sizeof tok, "%lld", (long long)token);
        EXPECT_EXIT(f, 0, "release", U(f, "dur"), "--owner", owner,
                    "--token", tok);
    }
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        EXPECT_EXIT(f, 64, "acquire", U(f, "dur"), "--ttl", bad[i].text);
        if (strstr(f->err, "--ttl") == NULL ||
            strstr(f->err, bad[i].text) == NULL ||
            strstr(f->err, bad[i].why) == NULL)
            fail_msg("acquire --ttl %s: stderr \"%s\" should name --ttl, "
                     "the text and \"%s\"", bad[i].text, f->err, bad[i].why);
        EXPECT_EXIT(f, 64, "run", U(f, "dur"), "--ttl", "10s",
                    "--kill-after", bad[i].text, "--", "true");
        assert_non_null(strstr(f->err, "--kill-after"));
    }
    /* The other options that take a duration. */
    EXPECT_EXIT(f, 0, "acquire", U(f, "dur-wait"), "--ttl", "1m30s",
                "--wait", "0.25s");
    assert_true(tu_get_var(f->out, "SQLLOCK_OWNER", owner, sizeof owner));
    assert_true(tu_get_var(f->out, "SQLLOCK_TOKEN", tok, sizeof tok));
    EXPECT_EXIT(f, 75, "acquire", U(f, "dur-wait"), "--ttl", "1m30s",
                "--wait", "0.3s");
    EXPECT_EXIT(f, 0, "release", U(f, "dur-wait"), "--owner", owner,
                "--token", tok);
    EXPECT_EXIT(f, 0, "run", U(f, "dur-run"), "--ttl", "1m30s",
                "--kill-after", "1.5s", "--renew-every", "0.5m", "--",
                "true");
    EXPECT_EXIT(f, 0, "reap", "--older-than", "1h30m");
    EXPECT_EXIT(f, 64, "reap", "--older-than", "1h30");
    assert_non_null(strstr(f->err, "--older-than"));
}

/* The refusal stderr shows when no database is named: it says how to
 * name one, and how to ask for a lock of this host only. */
static void expect_no_db_message(const fixture *f, const char *what)
{
    static const char *const words[] = {
        "--db", "--db-file", "SQLLOCK_DB", "SQLLOCK_DB_FILE", "--local",
    };
    size_t i;

    for (i = 0; i < sizeof words / sizeof words[0]; i++)
        if (strstr(f->err, words[i]) == NULL)
            fail_msg("%s without a database: stderr does not name %s:\n%s",
                     what, words[i], f->err);
}

/* Issue 15: a command that names no database (no --db, --db-file,
 * $SQLLOCK_DB or $SQLLOCK_DB_FILE, as under cron) is refused with a usage
 * error instead of locking in a file of this host, which would let every
 * host of a fleet run the job; --local asks for that file by name. The
 * demo still makes its temporary SQLite file. (Until this change, these
 * commands used /var/tmp/sqllock.db: the contract changed.) */
static void test_cli_no_database_refused(void **state)
{
    fixture *f = *state;
    char file[4300], owner[SQLLOCK_OWNER_LEN + 1], tok[32];

    snprintf(file, sizeof file, "%s/ran", f->dir);
    unsetenv("SQLLOCK_DB");
    unsetenv("SQLLOCK_DB_FILE");
    EXPECT_BARE(f, 64, "run", U(f, "nodb"), "--ttl", "5s", "--", "touch",
                file);
    expect_no_db_message(f, "run");
    assert_false(file_exists(file));
    assert_string_equal(f->out, "");
    EXPECT_BARE(f, 64, "acquire", U(f, "nodb"), "--ttl", "5s");
    expect_no_db_message(f, "acquire");
    assert_string_equal(f->out, "");
    EXPECT_BARE(f, 64, "release", U(f, "nodb"), "--owner",
                "0123456789abcdef0123456789abcdef", "--token", "1");
    expect_no_db_message(f, "release");
    EXPECT_BARE(f, 64, "list");
    expect_no_db_message(f, "list");
    EXPECT_BARE(f, 64, "reap");
    expect_no_db_message(f, "reap");
    EXPECT_BARE(f, 64, "init");
    expect_no_db_message(f, "init");
    /* A variable set but empty counts as unset. */
    setenv("SQLLOCK_DB", "", 1);
    setenv("SQLLOCK_DB_FILE", "", 1);
    EXPECT_BARE(f, 64, "run", U(f, "nodb"), "--ttl", "5s", "--", "touch",
                file);
    expect_no_db_message(f, "run with empty variables");
    assert_false(file_exists(file));
    unsetenv("SQLLOCK_DB_FILE");

    /* --local goes with neither --db nor --db-file, wherever each is. */
    EXPECT_BARE(f, 64, "--local", "--db", f->url, "list");
    assert_non_null(strstr(f->err, "--local"));
    EXPECT_BARE(f, 64, "--local", "list", "--db", f->url);
    EXPECT_BARE(f, 64, "list", "--db-file", file, "--local");
    EXPECT_BARE(f, 64, "list", "--local=yes");

    /* --local: this host's file, before or after the command, also when
     * $SQLLOCK_DB names another database (the command line goes first). */
    setenv("SQLLOCK_DB", f->url, 1);
    EXPECT_BARE(f, 0, "--local", "run", U(f, "local"), "--ttl", "5s", "--",
                "touch", file);
    assert_true(file_exists(file));
    EXPECT_BARE(f, 0, "acquire", U(f, "local"), "--ttl", "1m", "--local");
    assert_true(tu_get_var(f->out, "SQLLOCK_OWNER", owner, sizeof owner));
    assert_true(tu_get_var(f->out, "SQLLOCK_TOKEN", tok, sizeof tok));
    EXPECT_BARE(f, 0, "list", "--local");
    assert_non_null(strstr(f->out, U(f, "local")));
    /* Not in the database $SQLLOCK_DB names. */
    EXPECT_BARE(f, 0, "list");
    assert_null(strstr(f->out, U(f, "local")));
    EXPECT_BARE(f, 75, "--local", "acquire", U(f, "local"), "--ttl", "1m");
    EXPECT_BARE(f, 0, "--local", "release", U(f, "local"), "--owner", owner,
                "--token", tok);
    unsetenv("SQLLOCK_DB");

    /* The demo, on its temporary file (SQLite must be built). */
    if (tu_url_driver(f->url) != NULL &&
        strcmp(tu_url_driver(f->url), "sqlite") == 0) {
        EXPECT_BARE(f, 0, "demo", "--workers", "2", "--stock", "3");
        assert_non_null(strstr(f->out, "temporary"));
    }
    EXPECT_BARE(f, 64, "demo", "--local");
}

/* Issue 16: the demo on the group's database, as `sqllock demo --db URL`
 * in the README: its own statements go through sqllock_db_exec() in
 * each database's dialect, and every mode but "no lock" sells exactly the
 * stock (exit 0); the URL is shown without a password. */
static void test_cli_demo_on_database(void **state)
{
    fixture *f = *state;

    EXPECT_EXIT(f, 0, "demo", "--workers", "2", "--stock", "3");
    EXPECT_CONTAINS(f, "database: ");
    EXPECT_CONTAINS(f, "conditional UPDATE");
    if (strstr(f->out, "sqllock-test") != NULL)
        fail_msg("the demo showed the password:\n%s", f->out);
}

#ifdef SQLLOCK_CLI_SQLITE_ONLY_PATH
/* Issue 16 (item 10): a copy of the tool built with the SQLite driver
 * alone (tools/CMakeLists.txt), as on a machine that has only SQLite's
 * packages (the quick start's), refuses a PostgreSQL or MySQL URL with
 * exit 69, the library's "not built" message, the Debian package that
 * brings the driver's client library and the command that builds sqllock
 * again; never the password. SQLite still works in that copy. */
static void test_cli_driver_not_built_says_how(void **state)
{
    static const struct {
        const char *url;
        const char *package;
    } cases[] = {
        { "postgres://u:Zq9secret@127.0.0.1:1/db", "libpq-dev" },
        { "postgresql://u:Zq9secret@127.0.0.1:1/db", "libpq-dev" },
        { "mysql://u:Zq9secret@127.0.0.1:1/db",
          "default-libmysqlclient-dev" },
        { "mariadb://u:Zq9secret@127.0.0.1:1/db",
          "default-libmysqlclient-dev" },
    };
    static const char *const cmds[] = { "init", "demo" };
    static const char *const words[] = {
        "was not built into this copy of sqllock", "apt-get install",
        "cmake -S ", "cmake --build ",
    };
    fixture *f = *state;
    char out_path[4300], err_path[4300], url[4300];
    size_t i, j, k;

    snprintf(out_path, sizeof out_path, "%s/stdout.txt", f->dir);
    snprintf(err_path, sizeof err_path, "%s/stderr.txt", f->dir);
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        for (j = 0; j < sizeof cmds / sizeof cmds[0]; j++) {
            const char *argv[] = { SQLLOCK_CLI_SQLITE_ONLY_PATH, "--db",
                                   cases[i].url, cmds[j], NULL };
            int code = tu_wait(tu_spawn(argv, out_path, err_path, 0));

            tu_read_file(out_path, f->out, sizeof f->out);
            tu_read_file(err_path, f->err, sizeof f->err);
            if (code != 69)
                fail_msg("%s %s: exit %d, want 69\nstderr: %s",
                         cases[i].url, cmds[j], code, f->err);
            for (k = 0; k < sizeof words / sizeof words[0]; k++)
                EXPECT_CONTAINS_ERR(f, words[k]);
            EXPECT_CONTAINS_ERR(f, cases[i].package);
            if (strstr(f->err, "Zq9secret") != NULL
                || strstr(f->out, "Zq9secret") != NULL)
                fail_msg("%s %s showed the password:\n%s%s", cases[i].url,
                         cmds[j], f->out, f->err);
        }
    }
    snprintf(url, sizeof url, "sqlite://%s/only.db", f->dir);
    {
        const char *argv[] = { SQLLOCK_CLI_SQLITE_ONLY_PATH, "--db", url,
                               "init", NULL };
        int code = tu_wait(tu_spawn(argv, out_path, err_path, 0));

        tu_read_file(err_path, f->err, sizeof f->err);
        if (code != 0)
            fail_msg("init on SQLite in the SQLite-only copy: exit %d\n%s",
                     code, f->err);
    }
}
#endif

/* -V is --version, and -h --help; -V is no option of a command. */
static void test_cli_version_and_help(void **state)
{
    fixture *f = *state;
    char want[64];

    snprintf(want, sizeof want, "sqllock %s\n", sqllock_version_string());
    EXPECT_BARE(f, 0, "-V");
    assert_string_equal(f->out, want);
    EXPECT_BARE(f, 0, "--version");
    assert_string_equal(f->out, want);
    EXPECT_BARE(f, 0, "-h");
    assert_non_null(strstr(f->out, "-V, --version"));
    assert_non_null(strstr(f->out, "--local"));
    EXPECT_BARE(f, 0, "--help");
    EXPECT_BARE(f, 64, "-V=1");
    EXPECT_BARE(f, 64, "-v");
    EXPECT_EXIT(f, 64, "list", "-V");
    assert_non_null(strstr(f->err, "'-V'"));
    EXPECT_EXIT(f, 64, "run", U(f, "v"), "--ttl", "5s", "-V", "--", "true");
}

/* list --json shows a held lease with its owner and token. */
static void test_cli_list_json(void **state)
{
    fixture *f = *state;
    char owner[SQLLOCK_OWNER_LEN + 1], tok[32], quoted[320];
    int64_t token;

    snprintf(quoted, sizeof quoted, "\"%s\"", U(f, "list-me"));
    acquire(f, U(f, "list-me"), "60s", owner, &token);
    EXPECT_EXIT(f, 0, "list", "--json");
    assert_true(f->out[0] == '[' || strchr(f->out, '[') != NULL);
    assert_non_null(strstr(f->out, quoted));
    assert_non_null(strstr(f->out, owner));
    snprintf(tok, sizeof tok, "%lld", (long long)token);
    assert_non_null(strstr(f->out, tok));
    EXPECT_EXIT(f, 0, "list");
    assert_non_null(strstr(f->out, U(f, "list-me")));
    EXPECT_EXIT(f, 0, "release", U(f, "list-me"), "--owner", owner, "--token",
                tok);
    EXPECT_EXIT(f, 0, "list", "--json");
    assert_null(strstr(f->out, quoted));
}

/* P1/P4/L4/L5: `reap` deletes expired leases and says how many, leaves
 * live ones and, with --older-than, those that expired more recently; a
 * reaped lease's release reports lost, and the name's next token is
 * larger. Bad options are usage errors (64). */
static void test_cli_reap(void **state)
{
    fixture *f = *state;
    char owner[SQLLOCK_OWNER_LEN + 1], live_owner[SQLLOCK_OWNER_LEN + 1];
    char tok[32], live_tok[32];
    int64_t token, live_token, token2;
    long n = -1;

    acquire(f, U(f, "reap-live"), "60s", live_owner, &live_token);
    acquire(f, U(f, "reap-dead"), "1ms", owner, &token);
    tu_sleep_ms(100);
    EXPECT_EXIT(f, 0, "reap", "--older-than", "1h");
    if (sscanf(f->out, "reaped %ld expired lease", &n) != 1 || n < 0)
        fail_msg("reap printed \"%s\", want \"reaped N expired leases\"",
                 f->out);
    EXPECT_EXIT(f, 0, "list");
    if (strstr(f->out, U(f, "reap-dead")) == NULL)
        fail_msg("reap --older-than 1h removed a lease that expired 100 ms "
                 "ago:\n%s", f->out);
    EXPECT_EXIT(f, 0, "reap", "--batch", "1");
    n = -1;
    if (sscanf(f->out, "reaped %ld expired lease", &n) != 1 || n < 1)
        fail_msg("reap printed \"%s\", want \"reaped N expired leases\" "
                 "with N >= 1", f->out);
    EXPECT_EXIT(f, 0, "list");
    if (strstr(f->out, U(f, "reap-dead")) != NULL)
        fail_msg("reap left the expired lease:\n%s", f->out);
    if (strstr(f->out, U(f, "reap-live")) == NULL)
        fail_msg("reap removed a live lease:\n%s", f->out);
    snprintf(tok, sizeof tok, "%lld", (long long)token);
    EXPECT_EXIT(f, 76, "release", U(f, "reap-dead"), "--owner", owner,
                "--token", tok);
    acquire(f, U(f, "reap-dead"), "60s", owner, &token2);
    assert_true(token2 > token);
    snprintf(tok, sizeof tok, "%lld", (long long)token2);
    EXPECT_EXIT(f, 0, "release", U(f, "reap-dead"), "--owner", owner,
                "--token", tok);
    snprintf(live_tok, sizeof live_tok, "%lld", (long long)live_token);
    EXPECT_EXIT(f, 0, "release", U(f, "reap-live"), "--owner", live_owner,
                "--token", live_tok);

    EXPECT_EXIT(f, 64, "reap", "--batch", "0");
    EXPECT_EXIT(f, 64, "reap", "--batch", "abc");
    EXPECT_EXIT(f, 64, "reap", "--batch", "1000001");
    EXPECT_EXIT(f, 64, "reap", "--older-than", "5parsecs");
    assert_true(tu_contains_ci(f->err, "older-than"));
    EXPECT_EXIT(f, 64, "reap", "--older-than", "-1s");
    EXPECT_EXIT(f, 64, "reap", "extra");
    EXPECT_EXIT(f, 64, "reap", "--no-such-opt");
}

/* Counts the lines of f->out that start with `prefix`. */
static int count_lines(const fixture *f, const char *prefix)
{
    const char *p = f->out;
    int n = 0;

    while (p != NULL && *p != '\0') {
        if (strncmp(p, prefix, strlen(prefix)) == 0)
            n++;
        p = strchr(p, '\n');
        if (p != NULL)
            p++;
    }
    return n;
}

/* Issue 15 item 7: `show NAME` prints the lease of one name by the
 * database's clock, or that it is free; --json for programs. */
static void test_cli_show(void **state)
{
    fixture *f = *state;
    const char *name = U(f, "show");
    char owner[SQLLOCK_OWNER_LEN + 1], want[128];
    int64_t token;

    EXPECT_EXIT(f, 0, "show", name);
    EXPECT_CONTAINS(f, "free (no lease row)");
    EXPECT_EXIT(f, 0, "show", name, "--json");
    EXPECT_CONTAINS(f, "\"held\": false");
    acquire(f, name, "60s", owner, &token);
    EXPECT_EXIT(f, 0, "show", name);
    EXPECT_CONTAINS(f, "state:    held");
    EXPECT_CONTAINS(f, owner);
    snprintf(want, sizeof want, "token:    %lld", (long long)token);
    EXPECT_CONTAINS(f, want);
    EXPECT_CONTAINS(f, "by the database's clock");
    EXPECT_EXIT(f, 0, "show", name, "--json");
    snprintf(want, sizeof want, "\"token\": %lld", (long long)token);
    EXPECT_CONTAINS(f, want);
    EXPECT_CONTAINS(f, "\"held\": true");
    EXPECT_EXIT(f, 64, "show");
    EXPECT_EXIT(f, 0, "release", name, "--owner", owner, "--token",
                strchr(want, ' ') + 1);
}

/* Issue 15 item 7, L4/L5: `release NAME --force` frees a stuck lease
 * whoever holds it: a live one only with --force twice (75 with one,
 * naming holder and token, nothing freed); it is recorded in NAME's
 * history (who, which token); the holder then hears LOST; an expired one
 * needs --force once. */
static void test_cli_release_force(void **state)
{
    fixture *f = *state;
    const char *name = U(f, "force");
    char owner[SQLLOCK_OWNER_LEN + 1], owner2[SQLLOCK_OWNER_LEN + 1];
    char tok[32], want[128];
    int64_t token, token2;

    EXPECT_EXIT(f, 0, "history", name, "--clear");
    acquire(f, name, "60s", owner, &token);
    snprintf(tok, sizeof tok, "%lld", (long long)token);
    EXPECT_EXIT(f, 75, "release", name, "--force");
    EXPECT_CONTAINS_ERR(f, "--force twice");
    EXPECT_CONTAINS_ERR(f, tok);
    EXPECT_EXIT(f, 0, "show", name);
    EXPECT_CONTAINS(f, "state:    held");
    EXPECT_EXIT(f, 0, "release", name, "--force", "--force");
    EXPECT_CONTAINS(f, "by force");
    EXPECT_EXIT(f, 0, "show", name);
    EXPECT_CONTAINS(f, "free");
    /* The holder's own release now says the lease was lost (L4). */
    EXPECT_EXIT(f, 76, "release", name, "--owner", owner, "--token", tok);
    /* Recorded: kind, token, who. */
    EXPECT_EXIT(f, 0, "history", name, "--json");
    snprintf(want, sizeof want, "\"token\": %s", tok);
    EXPECT_CONTAINS(f, want);
    EXPECT_CONTAINS(f, "\"kind\": \"force\"");
    EXPECT_CONTAINS(f, "\"status\": \"live\"");
    EXPECT_CONTAINS(f, "@");
    /* An expired lease: once is enough. */
    acquire(f, name, "1s", owner2, &token2);
    tu_sleep_ms(1300);
    EXPECT_EXIT(f, 0, "release", name, "--force");
    EXPECT_CONTAINS(f, "by force");
    EXPECT_EXIT(f, 0, "history", name);
    assert_int_equal(count_lines(f, "force "), 2);
    /* Nothing there: nothing to do. */
    EXPECT_EXIT(f, 0, "release", name, "--force");
    EXPECT_CONTAINS(f, "nothing to release");
    /* --force takes neither --owner nor --token. */
    EXPECT_EXIT(f, 64, "release", name, "--force", "--token", tok);
    EXPECT_EXIT(f, 0, "history", name, "--clear");
    EXPECT_CONTAINS(f, "cleared");
    EXPECT_EXIT(f, 0, "history", name);
    assert_int_equal(count_lines(f, "force "), 0);
}

/* Issue 15 item 7: a name's history keeps the newest CLI_HISTORY_MAX
 * (20) entries, newest first; a name too long to fit the record key with
 * its prefix gets a key of its own (a hash of the whole name), never
 * another name's. */
static void test_cli_history_bounded(void **state)
{
    fixture *f = *state;
    char longa[256], longb[256], owner[SQLLOCK_OWNER_LEN + 1];
    int64_t token, first = 0;
    const char *name = U(f, "bounded");
    int i;

    EXPECT_EXIT(f, 0, "history", name, "--clear");
    for (i = 0; i < 23; i++) {
        acquire(f, name, "60s", owner, &token);
        if (i == 0)
            first = token;
        EXPECT_EXIT(f, 0, "release", name, "--force", "--force");
    }
    EXPECT_EXIT(f, 0, "history", name);
    assert_int_equal(count_lines(f, "force "), 20);
    EXPECT_EXIT(f, 0, "history", name, "--json");
    {
        char old[64];
        snprintf(old, sizeof old, "\"token\": %lld,", (long long)first);
        if (strstr(f->out, old) != NULL)
            fail_msg("the oldest entry (token %lld) was kept: %s",
                     (long long)first, f->out);
    }
    EXPECT_EXIT(f, 0, "history", name, "--clear");
    /* Two 255-byte names that differ only in their last byte. */
    memset(longa, 'x', 254);
    memcpy(longa, "cli-long-", 9);
    longa[254] = 'a';
    longa[255] = '\0';
    memcpy(longb, longa, sizeof longb);
    longb[254] = 'b';
    EXPECT_EXIT(f, 0, "history", longa, "--clear");
    EXPECT_EXIT(f, 0, "history", longb, "--clear");
    acquire(f, longa, "60s", owner, &token);
    EXPECT_EXIT(f, 0, "release", longa, "--force", "--force");
    EXPECT_EXIT(f, 0, "history", longa);
    assert_int_equal(count_lines(f, "force "), 1);
    EXPECT_EXIT(f, 0, "history", longb);
    assert_int_equal(count_lines(f, "force "), 0);
    EXPECT_EXIT(f, 0, "history", longa, "--clear");
}

/* Issue 15 item 7: `run` notes each run in the name's history -- its
 * start, end, exit code and outcome -- newest first, the "running" entry
 * of a run replaced by its outcome; --no-history leaves it out. Six runs
 * at once, each waiting for the lock, all end up there: the history is
 * written by compare-and-set, and no writer's entry is lost. */
static void test_cli_history_of_runs(void **state)
{
    fixture *f = *state;
    const char *name = U(f, "runs");
    char out_path[4300], err_path[4300];
    const char *argv[16];
    pid_t pids[6];
    int i;

    EXPECT_EXIT(f, 0, "history", name, "--clear");
    EXPECT_EXIT(f, 0, "run", name, "--ttl", "10s", "--", "true");
    EXPECT_EXIT(f, 3, "run", name, "--ttl", "10s", "--", "sh", "-c",
                "exit 3");
    EXPECT_EXIT(f, 0, "run", name, "--ttl", "10s", "--no-history", "--",
                "true");
    EXPECT_EXIT(f, 0, "history", name);
    assert_int_equal(count_lines(f, "run "), 2);
    if (strstr(f->out, "failed") == NULL || strstr(f->out, " ok ") == NULL ||
        strstr(f->out, "failed") > strstr(f->out, " ok "))
        fail_msg("want the failed run first (newest), then the ok one:\n%s",
                 f->out);
    if (strstr(f->out, "running") != NULL)
        fail_msg("a finished run is still 'running':\n%s", f->out);
    EXPECT_EXIT(f, 0, "history", name, "--json");
    EXPECT_CONTAINS(f, "\"exit\": 3");
    EXPECT_EXIT(f, 0, "history", name, "--clear");

    for (i = 0; i < 6; i++) {
        int n = 0;

        argv[n++] = SQLLOCK_CLI_PATH;
        argv[n++] = "--db";
        argv[n++] = f->url;
        argv[n++] = "run";
        argv[n++] = name;
        argv[n++] = "--ttl";
        argv[n++] = "20s";
        argv[n++] = "--wait";
        argv[n++] = "60s";
        argv[n++] = "--";
        argv[n++] = "sleep";
        argv[n++] = "0.05";
        argv[n] = NULL;
        snprintf(out_path, sizeof out_path, "%s/h%d.out", f->dir, i);
        snprintf(err_path, sizeof err_path, "%s/h%d.err", f->dir, i);
        pids[i] = tu_spawn(argv, out_path, err_path, 1);
    }
    for (i = 0; i < 6; i++) {
        char err[2000];
        int code = tu_wait_for(pids[i], 90000);

        if (code != 0) {
            snprintf(err_path, sizeof err_path, "%s/h%d.err", f->dir, i);
            tu_read_file(err_path, err, sizeof err);
            if (code < 0)
                tu_kill_wait(pids[i]);
            fail_msg("run %d at once: exit %d: %s", i, code, err);
        }
    }
    EXPECT_EXIT(f, 0, "history", name);
    assert_int_equal(count_lines(f, "run "), 6);
    if (strstr(f->out, "running") != NULL || strstr(f->out, "failed"))
        fail_msg("six runs at once: every entry must be ok:\n%s", f->out);
    EXPECT_EXIT(f, 0, "history", name, "--clear");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cli_init),
        cmocka_unit_test(test_cli_acquire_busy_release),
        cmocka_unit_test(test_cli_run_busy_does_not_run),
        cmocka_unit_test(test_cli_run_exit_codes),
        cmocka_unit_test(test_cli_run_passes_token),
        cmocka_unit_test(test_cli_usage_errors),
        cmocka_unit_test(test_cli_durations),
        cmocka_unit_test(test_cli_no_database_refused),
        cmocka_unit_test(test_cli_version_and_help),
        cmocka_unit_test(test_cli_list_json),
        cmocka_unit_test(test_cli_reap),
        cmocka_unit_test(test_cli_show),
        cmocka_unit_test(test_cli_release_force),
        cmocka_unit_test(test_cli_history_bounded),
        cmocka_unit_test(test_cli_history_of_runs),
        cmocka_unit_test(test_cli_demo_on_database),
#ifdef SQLLOCK_CLI_SQLITE_ONLY_PATH
        cmocka_unit_test(test_cli_driver_not_built_says_how),
#endif
    };
    return TU_RUN_PER_URL("cli", &g_url, tests, setup, teardown);
}
