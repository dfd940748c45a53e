/*
 * cli.c -- test_hostile: the CLI table (cli_cases) through the built
 * `sqllock` tool, and names the tool passes through byte for byte.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "test_util.h"
#include "test_run.h"
#include "test_spawn.h"
#include "hostile.h"

/* ------------------------------------------------------------------ */
/* The CLI table                                                       */
/* ------------------------------------------------------------------ */

#define CLI_MAX_ARGS 16

/* The biggest single argument Linux passes (MAX_ARG_STRLEN is 128 KiB
 * with the NUL): the CLI's "1 MB name". */
#define CLI_BIG 131071

typedef struct cli_case {
    const char *label;
    const char *drv;                   /* only on this driver; NULL: all */
    const char *db;                    /* --db template; NULL: the URL */
    const char *args[CLI_MAX_ARGS];    /* "{P}" prefix, "{BIG}", "{OWNER}" */
    int want;
    const char *err_any;               /* stderr mentions one of these */
    const char *err_not;               /* template stderr must not show */
} cli_case;

static const cli_case cli_cases[] = {
    /* Durations. */
    { "ttl 9999999999999d", NULL, NULL,
      { "acquire", "{P}c", "--ttl", "9999999999999d" }, 64,
      "9999999999999d", NULL },
    { "ttl overflow in ms", NULL, NULL,
      { "acquire", "{P}c", "--ttl", "9223372036854775808ms" }, 64,
      "bad duration", NULL },
    /* The tool refuses what is longer than 100 years before the
     * library's own limit is reached (issue 27). */
    { "ttl INT64_MAX ms", NULL, NULL,
      { "acquire", "{P}c", "--ttl", "9223372036854775807ms" }, 64,
      "too large|longer than", NULL },
    { "ttl -1s", NULL, NULL, { "acquire", "{P}c", "--ttl", "-1s" }, 64,
      "-1s", NULL },
    { "ttl 0", NULL, NULL, { "acquire", "{P}c", "--ttl", "0ms" }, 64,
      "more than 0", NULL },
    { "ttl 1.5ms", NULL, NULL, { "acquire", "{P}c", "--ttl", "1.5ms" }, 64,
      "milliseconds", NULL },
    { "ttl 1.5h30m", NULL, NULL, { "acquire", "{P}c", "--ttl", "1.5h30m" },
      64, "bad duration", NULL },
    { "ttl 30m1h", NULL, NULL, { "acquire", "{P}c", "--ttl", "30m1h" }, 64,
      "largest first", NULL },
    { "ttl 0x10", NULL, NULL, { "acquire", "{P}c", "--ttl", "0x10" }, 64,
      "bad duration", NULL },
    { "ttl +5s", NULL, NULL, { "acquire", "{P}c", "--ttl", "+5s" }, 64,
      "bad duration", NULL },
    { "ttl ' 5s'", NULL, NULL, { "acquire", "{P}c", "--ttl", " 5s" }, 64,
      "bad duration", NULL },
    { "ttl '5s '", NULL, NULL, { "acquire", "{P}c", "--ttl", "5s " }, 64,
      "bad duration", NULL },
    { "ttl empty", NULL, NULL, { "acquire", "{P}c", "--ttl", "" }, 64,
      "bad duration", NULL },
    { "ttl=empty", NULL, NULL, { "acquire", "{P}c", "--ttl=" }, 64,
      "bad duration", NULL },
    { "ttl 5S", NULL, NULL, { "acquire", "{P}c", "--ttl", "5S" }, 64,
      "bad duration", NULL },
    { "ttl 5sec", NULL, NULL, { "acquire", "{P}c", "--ttl", "5sec" }, 64,
      "bad duration", NULL },
    { "ttl 1e3", NULL, NULL, { "acquire", "{P}c", "--ttl", "1e3" }, 64,
      "bad duration", NULL },
    { "ttl with NUL-like %00", NULL, NULL,
      { "acquire", "{P}c", "--ttl", "5s%00" }, 64, "bad duration", NULL },
    { "wait 1e400", NULL, NULL,
      { "acquire", "{P}c", "--ttl", "5s", "--wait", "1e400" }, 64,
      "--wait", NULL },
    { "wait -1s", NULL, NULL,
      { "acquire", "{P}c", "--ttl", "5s", "--wait", "-1s" }, 64, "--wait",
      NULL },
    { "wait overflow", NULL, NULL,
      { "acquire", "{P}c", "--ttl", "5s", "--wait", "9999999999999999999" },
      64, "--wait", NULL },
    { "wait inf", NULL, NULL,
      { "acquire", "{P}c", "--ttl", "5s", "--wait", "inf" }, 64, "--wait",
      NULL },
    { "run kill-after overflow", NULL, NULL,
      { "run", "{P}c", "--ttl", "5s", "--kill-after", "9999999999999d", "--",
        "true" }, 64, "kill-after", NULL },
    { "run renew-every -1s", NULL, NULL,
      { "run", "{P}c", "--ttl", "5s", "--renew-every", "-1s", "--", "true" },
      64, "renew-every", NULL },
    { "run renew-every longer than ttl", NULL, NULL,
      { "run", "{P}c", "--ttl", "5s", "--renew-every", "1h", "--", "true" },
      64, "renew-every", NULL },
    { "run ttl INT64_MAX ms", NULL, NULL,
      { "run", "{P}c", "--ttl", "9223372036854775807ms", "--", "true" }, 64,
      "too large|longer than", NULL },
    { "run busy-exit 256", NULL, NULL,
      { "run", "{P}c", "--ttl", "5s", "--busy-exit", "256", "--", "true" },
      64, "busy-exit", NULL },
    { "run busy-exit -1", NULL, NULL,
      { "run", "{P}c", "--ttl", "5s", "--busy-exit", "-1", "--", "true" },
      64, "busy-exit", NULL },
    { "run signal 0", NULL, NULL,
      { "run", "{P}c", "--ttl", "5s", "--signal", "0", "--", "true" }, 64,
      "signal", NULL },
    { "run signal 99999999999", NULL, NULL,
      { "run", "{P}c", "--ttl", "5s", "--signal", "99999999999", "--",
        "true" }, 64, "signal", NULL },
    { "run signal empty", NULL, NULL,
      { "run", "{P}c", "--ttl", "5s", "--signal", "", "--", "true" }, 64,
      "signal", NULL },
    { "reap older-than overflow", NULL, NULL,
      { "reap", "--older-than", "9999999999999d" }, 64, "older-than", NULL },
    { "reap older-than INT64_MAX ms", NULL, NULL,
      { "reap", "--older-than", "9223372036854775807ms" }, 64,
      "grace|longer than", NULL },
    { "reap batch overflow", NULL, NULL,
      { "reap", "--batch", "99999999999999999999" }, 64, "batch", NULL },
    { "reap batch -1", NULL, NULL, { "reap", "--batch", "-1" }, 64, "batch",
      NULL },
    /* Missing values and arguments. */
    { "ttl without a value", NULL, NULL, { "acquire", "{P}c", "--ttl" }, 64,
      "needs a value", NULL },
    { "wait without a value", NULL, NULL,
      { "acquire", "{P}c", "--ttl", "5s", "--wait" }, 64, "needs a value",
      NULL },
    { "no ttl", NULL, NULL, { "acquire", "{P}c" }, 64, "--ttl", NULL },
    { "no name", NULL, NULL, { "acquire", "--ttl", "5s" }, 64, "NAME",
      NULL },
    { "release without owner", NULL, NULL,
      { "release", "{P}victim", "--token", "1" }, 64, "--owner", NULL },
    { "release token overflow", NULL, NULL,
      { "release", "{P}victim", "--owner", "{OWNER}", "--token",
        "99999999999999999999" }, 64, "token", NULL },
    { "release token -1", NULL, NULL,
      { "release", "{P}victim", "--owner", "{OWNER}", "--token", "-1" }, 64,
      "token", NULL },
    { "release token 0", NULL, NULL,
      { "release", "{P}victim", "--owner", "{OWNER}", "--token", "0" }, 64,
      "token", NULL },
    { "release owner with SQL", NULL, NULL,
      { "release", "{P}victim", "--owner", "' OR '1'='1", "--token", "1" },
      64, "owner", NULL },
    /* The victim is live, and its token is below this one on every
     * driver (SQLite's and MySQL's count from 1 per database or name):
     * held by another owner, nothing released (issue 27 item 6). */
    { "release wrong owner", NULL, NULL,
      { "release", "{P}victim", "--owner", "{OWNER}", "--token",
        "999999999999" }, 75, "another owner", NULL },
    { "release owner in upper case", NULL, NULL,
      { "release", "{P}victim", "--owner", "0123456789ABCDEF0123456789ABCDEF",
        "--token", "1" }, 64, "owner", NULL },
    /* Names. */
    { "empty name", NULL, NULL, { "acquire", "", "--ttl", "5s" }, 64,
      "empty", NULL },
    { "128 KiB name", NULL, NULL, { "acquire", "{BIG}", "--ttl", "5s" }, 64,
      "255", NULL },
    { "invalid UTF-8 name", NULL, NULL,
      { "acquire", "{P}\xff\xfe", "--ttl", "5s" }, 64, "UTF-8", NULL },
    { "newline in a name", NULL, NULL,
      { "acquire", "{P}a\nb", "--ttl", "5s" }, 64, "control", NULL },
    { "escape sequence in a name", NULL, NULL,
      { "run", "{P}\x1b]0;pwned\x07", "--ttl", "5s", "--", "true" }, 64,
      "control", NULL },
    { "holder with control characters", NULL, NULL,
      { "acquire", "{P}c", "--ttl", "5s", "--holder", "h\r\nx" }, 64,
      "holder", NULL },
    { "holder 1000 bytes", NULL, NULL,
      { "acquire", "{P}c", "--ttl", "5s", "--holder", "{HOLDER}" }, 64,
      "holder", NULL },
    { "the victim is busy", NULL, NULL,
      { "acquire", "{P}victim", "--ttl", "5s" }, 75, "held", NULL },
    { "the victim with a wait", NULL, NULL,
      { "acquire", "{P}victim", "--ttl", "5s", "--wait", "50ms" }, 75,
      "held|waiting", NULL },
    /* URLs in --db. The tool exits 64 for a URL that is malformed or
     * names no driver (issue 27: the caller's to fix, like an option),
     * 69 for a database it cannot use. */
    { "db empty", NULL, "", { "list" }, 64, "empty", NULL },
    { "db unknown scheme", NULL, "redis://h/0", { "list" }, 64, "redis",
      NULL },
    { "db no scheme", NULL, "/tmp/locks.db", { "list" }, 64, "scheme",
      NULL },
    { "db port 99999999", NULL, "postgres://h:99999999/db", { "list" }, 64,
      "port", NULL },
    { "db %00", NULL, "sqlite:///tmp/a%00b.db", { "list" }, 64, "NUL",
      NULL },
    { "db password not shown", "postgres",
      "{scheme}://{user}:NotThePassw0rd@{hostport}/{db}", { "list" }, 69,
      "password|auth", "NotThePassw0rd" },
    { "db password not shown (mysql)", "mysql",
      "{scheme}://{user}:NotThePassw0rd@{hostport}/{db}", { "list" }, 69,
      "denied", "NotThePassw0rd" },
    { "db password in a parameter not shown", "postgres",
      "postgres://{user}@{hostport}/{db}?password=NotThePassw0rd", { "list" },
      69, "password|auth", "NotThePassw0rd" },
    { "db MySQL init_command", "mysql",
      "{url}{q}init_command=DELETE%20FROM%20sqllock_lease", { "list" }, 64,
      "init_command", NULL },
    { "db MySQL local_infile", "mysql", "{url}{q}local_infile=1",
      { "list" }, 64, "local_infile", NULL },
    { "db libpq unknown option", "postgres",
      "{url}{q}init_command=DELETE%20FROM%20sqllock_lease", { "list" }, 64,
      "init_command", NULL },
    { "db sqlite unknown parameter", "sqlite", "{url}{q}mode=memory",
      { "list" }, 64, "mode", NULL },
    { "db without a value", NULL, NULL, { "list", "--db" }, 64,
      "needs a value", NULL },
    /* Unknown commands and options. */
    { "unknown command with SQL", NULL, NULL,
      { "'; DROP TABLE sqllock_lease; --" }, 64, "unknown command", NULL },
    { "unknown option", NULL, NULL,
      { "acquire", "{P}c", "--ttl", "5s", "--ttl-ms", "5" }, 64,
      "unknown option", NULL },
    { "single-dash option", NULL, NULL,
      { "acquire", "{P}c", "-t", "5s" }, 64, "unknown option", NULL },
    { "flag given a value", NULL, NULL, { "list", "--json=yes" }, 64,
      "takes no value", NULL },
};

/* Runs the tool with `argv` (NULL-terminated, argv[0] the tool);
 * returns its exit status; stdout and stderr land in f->out, f->err. */
static int cli_run(fixture *f, const char *const *argv)
{
    char out_path[4300], err_path[4300];
    int code;

    snprintf(out_path, sizeof out_path, "%s/stdout.txt", f->dir);
    snprintf(err_path, sizeof err_path, "%s/stderr.txt", f->dir);
    code = tu_wait(tu_spawn(argv, out_path, err_path, 0));
    tu_read_file(out_path, f->out, sizeof f->out);
    tu_read_file(err_path, f->err, sizeof f->err);
    return code;
}

void test_hostile_cli_table(void **state)
{
    fixture *f = *state;
    size_t i, ran = 0;
    char *big = malloc(CLI_BIG + 1), holder[1001];

    assert_non_null(big);
    memcpy(big, f->prefix, strlen(f->prefix));
    memset(big + strlen(f->prefix), 'n', CLI_BIG - strlen(f->prefix));
    big[CLI_BIG] = '\0';
    memset(holder, 'h', 1000);
    holder[1000] = '\0';
    for (i = 0; i < sizeof cli_cases / sizeof cli_cases[0]; i++) {
        const cli_case *c = &cli_cases[i];
        const char *argv[CLI_MAX_ARGS + 4];
        char *owned[CLI_MAX_ARGS + 1];
        char *db;
        snapshot before;
        int n = 0, k, no = 0, code;

        if (c->drv != NULL && !ho_is_drv(f, c->drv))
            continue;
        db = ho_expand_url(f, c->db != NULL ? c->db : "{url}");
        if (db == NULL) {
            printf("hostile [%s]: skip CLI \"%s\": the URL has no "
                   "password\n", f->drv, c->label);
            continue;
        }
        argv[n++] = SQLLOCK_CLI_PATH;
        argv[n++] = "--db";
        argv[n++] = db;
        for (k = 0; k < CLI_MAX_ARGS && c->args[k] != NULL; k++) {
            const char *a = c->args[k];
            if (strcmp(a, "{BIG}") == 0) {
                argv[n++] = big;
            } else if (strcmp(a, "{HOLDER}") == 0) {
                argv[n++] = holder;
            } else if (strcmp(a, "{OWNER}") == 0) {
                argv[n++] = "0123456789abcdef0123456789abcdef";
            } else if (strncmp(a, "{P}", 3) == 0) {
                size_t len = strlen(f->prefix) + strlen(a) + 1;
                owned[no] = malloc(len);
                assert_non_null(owned[no]);
                snprintf(owned[no], len, "%s%s", f->prefix, a + 3);
                argv[n++] = owned[no++];
            } else {
                argv[n++] = a;
            }
        }
        argv[n] = NULL;
        ho_snap(f, &before);
        code = cli_run(f, argv);
        if (code != c->want)
            fail_msg("CLI %s: exit %d, want %d\nstdout: %s\nstderr: %s",
                     c->label, code, c->want, f->out, f->err);
        if (!ho_msg_has(f->err, c->err_any))
            fail_msg("CLI %s: stderr \"%s\" mentions none of \"%s\"",
                     c->label, f->err, c->err_any);
        if (c->err_not != NULL && strstr(f->err, c->err_not) != NULL)
            fail_msg("CLI %s: stderr shows \"%s\": %s", c->label, c->err_not,
                     f->err);
        if (f->parts->password != NULL && strlen(f->parts->password) >= 4 &&
            (strstr(f->err, f->parts->password) != NULL ||
             strstr(f->out, f->parts->password) != NULL))
            fail_msg("CLI %s: the output shows the database password",
                     c->label);
        /* Nothing on stdout for a failure: a script that evals it gets
         * nothing. */
        if (c->want != 0 && f->out[0] != '\0')
            fail_msg("CLI %s: exit %d but stdout has \"%s\"", c->label, code,
                     f->out);
        ho_expect_unchanged(f, &before, 1, c->label);
        ho_snap_free(&before);
        for (k = 0; k < no; k++)
            free(owned[k]);
        free(db);
        ran++;
    }
    free(big);
    printf("hostile [%s]: %zu CLI cases ran (table of %zu)\n", f->drv, ran,
           sizeof cli_cases / sizeof cli_cases[0]);
}

/* Names the tool must pass through byte for byte: acquire prints them
 * shell-quoted, list --json JSON-escaped, release finds them. */
void test_hostile_cli_names_round_trip(void **state)
{
    static const char *const tails[] = {
        "'; DROP TABLE sqllock_lease; --", "it's \"quoted\"", "%_\\%",
        "$(touch /tmp/pwned) `id`", "victim ", "-dash", "\\n not a newline",
        "\xf0\x9f\x94\x92 lock",
    };
    fixture *f = *state;
    size_t i;

    for (i = 0; i < sizeof tails / sizeof tails[0]; i++) {
        char name[300], owner[SQLLOCK_OWNER_LEN + 1], tok[32], want[700];
        const char *argv[12];
        snapshot before;
        size_t o = 0;
        const char *p;

        snprintf(name, sizeof name, "%s%s", f->prefix, tails[i]);
        ho_snap(f, &before);
        argv[0] = SQLLOCK_CLI_PATH;
        argv[1] = "--db";
        argv[2] = g_url;
        argv[3] = "acquire";
        argv[4] = "--ttl";
        argv[5] = "30s";
        argv[6] = "--";
        argv[7] = name;
        argv[8] = NULL;
        if (cli_run(f, argv) != 0)
            fail_msg("acquire \"%s\": %s", name, f->err);
        /* SQLLOCK_NAME='...' with each ' written as '\''. */
        o = (size_t)snprintf(want, sizeof want, "SQLLOCK_NAME='");
        for (p = name; *p != '\0'; p++)
            o += (size_t)snprintf(want + o, sizeof want - o, "%s",
                                  *p == '\'' ? "'\\''" : (char[2]){ *p, 0 });
        snprintf(want + o, sizeof want - o, "'\n");
        if (strstr(f->out, want) == NULL)
            fail_msg("acquire printed\n%s\nwant the line %s", f->out, want);
        assert_true(tu_get_var(f->out, "SQLLOCK_OWNER", owner, sizeof owner));
        assert_true(tu_get_var(f->out, "SQLLOCK_TOKEN", tok, sizeof tok));
        {
            tu_row r;
            assert_int_equal(tu_find(f->vdb, name, &r), SQLLOCK_OK);
            assert_int_equal(r.found, 1);
            assert_string_equal(r.owner, owner);
        }
        argv[3] = "list";
        argv[4] = "--json";
        argv[5] = NULL;
        assert_int_equal(cli_run(f, argv), 0);
        /* The JSON string of the name: " and \ escaped. */
        o = 0;
        want[o++] = '"';
        for (p = name; *p != '\0'; p++) {
            if (*p == '"' || *p == '\\')
                want[o++] = '\\';
            want[o++] = *p;
        }
        want[o++] = '"';
        want[o] = '\0';
        if (strstr(f->out, want) == NULL)
            fail_msg("list --json does not show %s:\n%s", want, f->out);
        argv[3] = "release";
        argv[4] = "--owner";
        argv[5] = owner;
        argv[6] = "--token";
        argv[7] = tok;
        argv[8] = "--";
        argv[9] = name;
        argv[10] = NULL;
        if (cli_run(f, argv) != 0)
            fail_msg("release \"%s\": %s", name, f->err);
        ho_forget_name(f, name);
        ho_expect_unchanged(f, &before, 0, name);
        ho_snap_free(&before);
    }
}
