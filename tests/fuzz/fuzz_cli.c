/*
 * fuzz_cli.c -- libFuzzer target for the argument parsing of the
 * `sqllock` tool (tools/args.c): cli_parse() with the option table of each
 * command, then the value checks each command makes before it opens a
 * database (durations, integers, signal names, the ttl/renewal rule).
 *
 * Input: the first byte picks the command (main's own options, init,
 * acquire, release, list, run, reap, demo, show, history); the rest, split at NUL bytes,
 * is the argument list (up to 64 arguments, each in its own allocation so
 * that AddressSanitizer sees a read past any of them). The option tables
 * below are copies of the tools' own: keep them in step (--local, which
 * CLI_OPTS_DB gives every command, is added to each in code).
 *
 * Besides "no crash, no leak, no undefined behaviour" it checks:
 *   - every result is 0 or 64, and 64 exactly when something was printed
 *     to stderr, which is then "sqllock: ...\n" followed by the hint;
 *   - on success, each positional argument and each option value points
 *     into the argument list (a whole argument, or the text after '=' of a
 *     "--name=value" argument), at most `maxpos` positionals, flags are
 *     counted (a flag given n times is n, at most 9: release --force
 *     --force), and `rest` is where the command begins;
 *   - values that passed their checks are in range: ttl > 0, wait >= 0,
 *     the renewal interval shorter than ttl - ttl/10, a signal from 1 to
 *     NSIG - 1 that reads back through its name, an exit code 0..255, a
 *     token >= 1, and each duration reads back as the same number and
 *     is at most CLI_DURATION_MAX_MS (regress/cli/run_hold_at_least_overflow:
 *     "--hold-at-least 99999999999h" once passed, and the runner's
 *     deadline, in microseconds, overflowed);
 *   - --db's value (a secret option, DESIGN C4) is a copy of the argument
 *     as given, and the argument itself has been overwritten with its
 *     redacted form (cut to its length, NUL-padded); no other argument
 *     changed, and an argument with nothing to hide is left alone.
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "internal.h"

#ifndef NSIG
#define NSIG 65
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_ARGS 64
#define MAX_OPTS 16
/* A usage error the command itself reports (missing NAME) after the
 * parse; the harness prints nothing for it. */
#define HARNESS_USAGE (-64)

static FILE *report;           /* the real stderr while stderr is captured */

#define CHECK(cond)                                                        \
    do {                                                                   \
        if (!(cond)) {                                                     \
            fprintf(report != NULL ? report : stderr,                      \
                    "fuzz_cli: property failed: %s (line %d)\n", #cond,    \
                    __LINE__);                                             \
            abort();                                                       \
        }                                                                  \
    } while (0)

/* One command's options, as the tools declare them: a name and whether it
 * takes a value. */
typedef struct cmd_spec {
    const char *cmd;
    int maxpos;
    int use_rest;
    const char *names[MAX_OPTS];
    int takes_value[MAX_OPTS];
} cmd_spec;

enum { C_MAIN, C_INIT, C_ACQUIRE, C_RELEASE, C_LIST, C_RUN, C_REAP, C_DEMO,
       C_SHOW, C_HISTORY, C_COUNT };

static const cmd_spec specs[C_COUNT] = {
    { "", 0, 1, { "db", "db-file", "help", "version" }, { 1, 1, 0, 0 } },
    { "init", 0, 0, { "db", "db-file", "help" }, { 1, 1, 0 } },
    { "acquire", 1, 0, { "db", "db-file", "ttl", "wait", "holder", "quiet",
                         "help" },
      { 1, 1, 1, 1, 1, 0, 0 } },
    { "release", 1, 0, { "db", "db-file", "owner", "token", "force",
                         "help" },
      { 1, 1, 1, 1, 0, 0 } },
    { "list", 0, 0, { "db", "db-file", "json", "help" }, { 1, 1, 0, 0 } },
    { "run", 1, 1, { "db", "db-file", "ttl", "wait", "skip", "holder",
                     "busy-exit", "signal", "kill-after", "renew-every",
                     "hold-at-least", "quiet", "verbose", "no-history",
                     "export-db", "help" },
      { 1, 1, 1, 1, 0, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0 } },
    { "reap", 0, 0, { "db", "db-file", "older-than", "batch", "help" },
      { 1, 1, 1, 1, 0 } },
    { "demo", 0, 0, { "db", "db-file", "workers", "stock", "help" },
      { 1, 1, 1, 1, 0 } },
    { "show", 1, 0, { "db", "db-file", "json", "help" }, { 1, 1, 0, 0 } },
    { "history", 1, 0, { "db", "db-file", "json", "clear", "clear-all",
                         "help" },
      { 1, 1, 0, 0, 0, 0 } },
};

/* Only --db holds a secret. */
static int is_secret(const char *name)
{
    return strcmp(name, "db") == 0;
}

/* What cli_hide_arg() leaves of the argument text `orig` (len bytes) in
 * out[len + 1]: the redacted form cut to the length and NUL-padded, or
 * the text itself when there is nothing to hide. */
static void hidden_form(const char *orig, char *out)
{
    size_t len = strlen(orig), n;
    char *r = sqllock__url_redact(orig);

    CHECK(r != NULL);
    memset(out, 0, len + 1);
    if (strcmp(r, orig) == 0) {
        memcpy(out, orig, len);
    } else {
        n = strlen(r) < len ? strlen(r) : len;
        memcpy(out, r, n);
    }
    free(r);
}

/* The value of option `name` after a parse, or NULL. */
static const char *value_of(const cmd_spec *s, const char *const *vals,
                            const char *name)
{
    int i;

    for (i = 0; i < MAX_OPTS && s->names[i] != NULL; i++)
        if (strcmp(s->names[i], name) == 0)
            return vals[i];
    return NULL;
}

static int flag_of(const cmd_spec *s, const int *flags, const char *name)
{
    int i;

    for (i = 0; i < MAX_OPTS && s->names[i] != NULL; i++)
        if (strcmp(s->names[i], name) == 0)
            return flags[i];
    return 0;
}

/* A value is the text of a whole argument, or of the part after the '='
 * of a "--name=value" argument whose name is `name`. */
static int value_in_args_text(const char *v, const char *name, int argc,
                              char **argv)
{
    int j;

    for (j = 0; j < argc; j++) {
        size_t n = strlen(name);
        if (strcmp(v, argv[j]) == 0)
            return 1;
        if (strncmp(argv[j], "--", 2) == 0 &&
            strncmp(argv[j] + 2, name, n) == 0 && argv[j][2 + n] == '=' &&
            strcmp(v, argv[j] + 3 + n) == 0)
            return 1;
    }
    return 0;
}

/* A value points at a whole argument, or just after the '=' of a
 * "--name=value" argument whose name is `name`. */
static int value_in_args(const char *v, const char *name, int argc,
                         char **argv)
{
    int j;

    for (j = 0; j < argc; j++) {
        size_t n = strlen(name);
        if (v == argv[j])
            return 1;
        if (strncmp(argv[j], "--", 2) == 0 &&
            strncmp(argv[j] + 2, name, n) == 0 && argv[j][2 + n] == '=' &&
            v == argv[j] + 3 + n)
            return 1;
    }
    return 0;
}

/* How many times the flag `name` was given: the parse walked again over
 * the arguments as given (`orig`), up to `end` (where the command begins,
 * or all of them) or a "--", stepping over the value of an option that
 * takes one; at most 9, as cli_parse() counts. */
static int flag_count(const cmd_spec *s, const char *name, int argc,
                      char **orig, int end)
{
    int j, k, n = 0;

    for (j = 0; j < end && j < argc; j++) {
        const char *a = orig[j];

        if (strcmp(a, "--") == 0)
            break;
        if ((strcmp(a, "-h") == 0 && strcmp(name, "help") == 0) ||
            (strcmp(a, "-V") == 0 && strcmp(name, "version") == 0)) {
            n++;
            continue;
        }
        if (strncmp(a, "--", 2) != 0)
            continue;
        if (strcmp(a + 2, name) == 0) {
            n++;
            continue;
        }
        for (k = 0; k < MAX_OPTS && s->names[k] != NULL; k++)
            if (s->takes_value[k] && strcmp(a + 2, s->names[k]) == 0) {
                j++;           /* its value, whatever it looks like */
                break;
            }
    }
    return n < 9 ? n : 9;
}

static void check_duration_text(const char *text, int64_t ms)
{
    int64_t again = -1;

    if (text == NULL)
        return;
    CHECK(sqllock_parse_duration(text, &again) == SQLLOCK_OK);
    CHECK(again == ms);
    CHECK(ms >= 0 && ms <= CLI_DURATION_MAX_MS);
}

/* The value checks of `c` after a successful parse; returns the exit
 * code, as the command would. */
static int check_values(int c, const cmd_spec *s, const char *const *vals,
                        const int *flags, int npos)
{
    cli_lease_args la;
    cli_run_args ra;
    int64_t v = 0;
    int rc = CLI_EXIT_OK;
    char buf[32];
    int sig;

    memset(&la, 0, sizeof la);
    memset(&ra, 0, sizeof ra);
    switch (c) {
    case C_ACQUIRE:
    case C_RUN:
        if (npos != 1)
            return HARNESS_USAGE;
        la.ttl = value_of(s, vals, "ttl");
        la.wait = value_of(s, vals, "wait");
        la.holder = value_of(s, vals, "holder");
        rc = cli_lease_args_check(s->cmd, &la);
        if (rc != CLI_EXIT_OK)
            return rc;
        CHECK(la.ttl_ms > 0 && la.wait_ms >= 0);
        check_duration_text(la.ttl, la.ttl_ms);
        check_duration_text(la.wait, la.wait_ms);
        if (c == C_ACQUIRE)
            return rc;
        ra.signal = value_of(s, vals, "signal");
        ra.kill_after = value_of(s, vals, "kill-after");
        ra.renew_every = value_of(s, vals, "renew-every");
        ra.busy_exit = value_of(s, vals, "busy-exit");
        ra.hold_at_least = value_of(s, vals, "hold-at-least");
        ra.skip = flag_of(s, flags, "skip");
        ra.quiet = flag_of(s, flags, "quiet");
        ra.verbose = flag_of(s, flags, "verbose");
        rc = cli_run_args_check(&ra, &la);
        if (rc != CLI_EXIT_OK)
            return rc;
        CHECK(!(ra.skip && la.wait != NULL));
        CHECK(!(ra.quiet && ra.verbose));
        CHECK(ra.hold_ms >= 0);
        check_duration_text(ra.hold_at_least, ra.hold_ms);
        CHECK(ra.lost_signal >= 1 && ra.lost_signal < NSIG);
        CHECK(ra.kill_after_ms >= 0);
        CHECK(ra.busy_exit_code >= 0 && ra.busy_exit_code <= 255);
        CHECK(ra.renew_every_ms >= 0);
        {
            /* The watchdog's interval (core/watch.c). */
            int64_t every = ra.renew_every_ms != 0 ? ra.renew_every_ms
                                                   : la.ttl_ms / 3;
            if (every < 1)
                every = 1;
            CHECK(every > 0 && every < la.ttl_ms - la.ttl_ms / 10);
        }
        check_duration_text(ra.kill_after, ra.kill_after_ms);
        check_duration_text(ra.renew_every, ra.renew_every_ms);
        /* The signal reads back through the name the tool prints. */
        cli_signame(ra.lost_signal, buf, sizeof buf);
        if (strncmp(buf, "SIG", 3) == 0) {
            CHECK(cli_parse_signal(buf, &sig) == CLI_EXIT_OK);
            CHECK(sig == ra.lost_signal);
        }
        return rc;
    case C_RELEASE:
        if (npos != 1 || value_of(s, vals, "owner") == NULL ||
            value_of(s, vals, "token") == NULL)
            return HARNESS_USAGE;
        rc = cli_parse_int("release", "token", value_of(s, vals, "token"), 1,
                           INT64_MAX, &v);
        if (rc == CLI_EXIT_OK)
            CHECK(v >= 1);
        return rc;
    case C_REAP:
        v = -1;
        rc = cli_parse_duration("reap", "older-than",
                                value_of(s, vals, "older-than"), &v);
        if (rc == CLI_EXIT_OK && value_of(s, vals, "older-than") != NULL)
            CHECK(v >= 0 && v <= CLI_DURATION_MAX_MS);
        if (rc == CLI_EXIT_OK && value_of(s, vals, "batch") != NULL) {
            rc = cli_parse_int("reap", "batch", value_of(s, vals, "batch"),
                               1, 1000000, &v);
            if (rc == CLI_EXIT_OK)
                CHECK(v >= 1 && v <= 1000000);
        }
        return rc;
    case C_SHOW:
    case C_HISTORY:
        return npos == 1 ? rc : HARNESS_USAGE;
    case C_DEMO:
        if (value_of(s, vals, "workers") != NULL) {
            rc = cli_parse_int("demo", "workers",
                               value_of(s, vals, "workers"), 1, 64, &v);
            if (rc == CLI_EXIT_OK)
                CHECK(v >= 1 && v <= 64);
        }
        return rc;
    default:
        return rc;
    }
}

/* Checks what was printed for a result: nothing for success; for a usage
 * error "sqllock: <what>\n" lines ending with the hint. */
static void check_output(int rc, const char *out, size_t len,
                         int silent_ok)
{
    static const char hint[] = "Try 'sqllock --help' for more information.\n";

    CHECK(rc == CLI_EXIT_OK || rc == CLI_EXIT_USAGE);
    if (rc == CLI_EXIT_OK) {
        CHECK(len == 0);
        return;
    }
    if (len == 0 && silent_ok)
        return;                /* a usage error this harness decided */
    CHECK(len > 0);
    CHECK(strncmp(out, "sqllock: ", 9) == 0);
    CHECK(len >= sizeof hint - 1 &&
          strcmp(out + len - (sizeof hint - 1), hint) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const cmd_spec *s;
    const char *vals[MAX_OPTS] = { NULL };
    const char *pos[2] = { NULL, NULL };
    int flags[MAX_OPTS] = { 0 };
    cli_opt opts[MAX_OPTS + 2];
    char *argv[MAX_ARGS + 1], *orig[MAX_ARGS + 1];
    int argc = 0, npos = -1, rest = -1, rc, c, i, j, nopts, silent;
    int local = 0;
    size_t start, k;
    char *out = NULL;
    size_t outlen = 0;
    FILE *mem, *saved;

    if (size < 1 || size > 4096)
        return 0;
    c = data[0] % C_COUNT;
    s = &specs[c];
    /* The arguments: the bytes after the first, split at NULs. */
    if (size > 1) {
        for (start = 1, k = 1; k <= size && argc < MAX_ARGS; k++) {
            if (k == size || data[k] == '\0') {
                argv[argc] = malloc(k - start + 1);
                if (argv[argc] == NULL)
                    abort();
                memcpy(argv[argc], data + start, k - start);
                argv[argc][k - start] = '\0';
                orig[argc] = malloc(k - start + 1);
                if (orig[argc] == NULL)
                    abort();
                memcpy(orig[argc], argv[argc], k - start + 1);
                argc++;
                start = k + 1;
            }
        }
    }
    argv[argc] = NULL;

    for (nopts = 0; nopts < MAX_OPTS && s->names[nopts] != NULL; nopts++) {
        opts[nopts].name = s->names[nopts];
        opts[nopts].value = s->takes_value[nopts] ? &vals[nopts] : NULL;
        opts[nopts].flag = s->takes_value[nopts] ? NULL : &flags[nopts];
        opts[nopts].secret = is_secret(s->names[nopts]);
    }
    /* CLI_OPTS_DB's third entry. */
    opts[nopts].name = "local";
    opts[nopts].value = NULL;
    opts[nopts].flag = &local;
    opts[nopts].secret = 0;
    opts[nopts + 1].name = NULL;
    opts[nopts + 1].value = NULL;
    opts[nopts + 1].flag = NULL;
    opts[nopts + 1].secret = 0;

    report = stderr;
    mem = open_memstream(&out, &outlen);
    if (mem == NULL)
        abort();
    saved = stderr;
    stderr = mem;
    rc = cli_parse(s->cmd, argc, argv, opts, pos, s->maxpos, &npos,
                   s->use_rest ? &rest : NULL);
    silent = 0;
    if (rc == CLI_EXIT_OK) {
        /* Where everything points, before the value checks print. */
        CHECK(npos >= 0 && npos <= s->maxpos);
        for (i = 0, j = 0; i < npos; i++) {
            while (j < argc && argv[j] != pos[i])
                j++;
            CHECK(j < argc);   /* in the list, in order */
            j++;
        }
        CHECK(local == flag_count(s, "local", argc, orig,
                                  s->use_rest ? rest : argc));
        for (i = 0; i < nopts; i++) {
            if (!s->takes_value[i])
                CHECK(flags[i] == flag_count(s, s->names[i], argc, orig,
                                             s->use_rest ? rest : argc));
            if (vals[i] != NULL && !is_secret(s->names[i]))
                CHECK(value_in_args(vals[i], s->names[i], argc, argv));
            if (vals[i] != NULL && is_secret(s->names[i]))
                CHECK(!value_in_args(vals[i], s->names[i], argc, argv) &&
                      value_in_args_text(vals[i], s->names[i], argc,
                                         orig));
        }
        if (s->use_rest) {
            CHECK(rest >= 0 && rest <= argc);
            if (rest < argc)
                CHECK((rest > 0 && strcmp(argv[rest - 1], "--") == 0) ||
                      (npos == s->maxpos &&
                       (argv[rest][0] != '-' || argv[rest][1] == '\0')));
        }
        rc = check_values(c, s, vals, flags, npos);
        if (rc == HARNESS_USAGE) {
            silent = 1;
            rc = CLI_EXIT_USAGE;
        }
    }
    fflush(mem);
    stderr = saved;
    check_output(rc, out, outlen, silent);
    fclose(mem);
    free(out);

    /* Each argument is as given, or (a --db value, whole or after
     * "--db=") in its hidden form. */
    for (j = 0; j < argc; j++) {
        size_t len = strlen(orig[j]);
        char *h = malloc(len + 1);

        if (h == NULL)
            abort();
        if (memcmp(argv[j], orig[j], len + 1) != 0) {
            /* "--db=x" may also be the value of a "--db" before it. */
            int same = 0;

            hidden_form(orig[j], h);
            same = memcmp(argv[j], h, len + 1) == 0;
            if (!same && strncmp(orig[j], "--db=", 5) == 0) {
                memcpy(h, orig[j], 5);
                hidden_form(orig[j] + 5, h + 5);
                same = memcmp(argv[j], h, len + 1) == 0;
            }
            CHECK(same);
        }
        free(h);
    }
    cli_free_secrets();

    /* The value parsers alone, on each argument. */
    for (i = 0; i < argc && i < 8; i++) {
        int sig = -1;
        int64_t v = -1;
        char buf[32];

        mem = open_memstream(&out, &outlen);
        if (mem == NULL)
            abort();
        stderr = mem;
        rc = cli_parse_signal(argv[i], &sig);
        if (rc == CLI_EXIT_OK) {
            CHECK(sig >= 1 && sig < NSIG);
            cli_signame(sig, buf, sizeof buf);
            if (strncmp(buf, "SIG", 3) == 0) {
                int again = -1;
                CHECK(cli_parse_signal(buf + 3, &again) == CLI_EXIT_OK &&
                      again == sig);
            }
        }
        rc = cli_parse_int("x", "y", argv[i], -5, 1000, &v);
        if (rc == CLI_EXIT_OK)
            CHECK(v >= -5 && v <= 1000 && argv[i][0] >= '0' &&
                  argv[i][0] <= '9');
        fflush(mem);
        stderr = saved;
        fclose(mem);
        free(out);
    }

    for (i = 0; i < argc; i++) {
        free(argv[i]);
        free(orig[i]);
    }
    return 0;
}
