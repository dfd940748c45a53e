/*
 * args.c -- the tool's argument parsing: the option parser that every
 * command shares, the parsers of option values (durations, integers,
 * signal names) and the checks of the lease and `run` options, and the
 * hiding of --db's password in the process's own arguments. Nothing here
 * opens a database, starts a process or exits, so the fuzz target
 * tests/fuzz/fuzz_cli.c links this file on its own (with the core's URL
 * redaction and duration parser). Like the rest of the tool, it uses only
 * the library's public header.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli.h"

#ifndef NSIG
#define NSIG 65
#endif

int cli_usage(void)
{
    fputs("Try 'sqllock --help' for more information.\n", stderr);
    return CLI_EXIT_USAGE;
}

void cli_wipe(void *p, size_t n)
{
    volatile unsigned char *v = p;

    /* Through a volatile pointer, so that the stores are not dropped as
     * dead before a free(). */
    while (n-- > 0)
        *v++ = 0;
}

void cli_error(const char *fmt, ...)
{
    va_list ap;

    fputs("sqllock: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

/* The copies of secret option values, newest first. */
typedef struct cli_kept {
    struct cli_kept *next;
    size_t len;
    char text[];
} cli_kept;

static cli_kept *cli_kept_list;

/*
 * The arguments of a process are the bytes /proc/PID/cmdline shows to
 * every local user (and ps, top, a crash report), for as long as it
 * runs. Writing over them in place changes what those show; the kernel
 * reads them from the process's memory each time. So --db's value is
 * copied here, and the argument is overwritten with its redacted form:
 * ps then shows "--db postgres://u:***@host/db" (NUL bytes pad a shorter
 * form, and a longer one -- a password of fewer than 3 bytes -- is cut).
 * Until this runs, just after the tool starts, the password is there to
 * see: --db-file and $SQLLOCK_DB have no such window.
 */
const char *cli_hide_arg(char *arg)
{
    size_t len = strlen(arg);
    cli_kept *k = malloc(sizeof *k + len + 1);
    char *shown = NULL;

    if (k == NULL)
        return NULL;
    k->len = len;
    memcpy(k->text, arg, len + 1);
    if (sqllock_url_redact(arg, &shown) != SQLLOCK_OK) {
        free(k);
        return NULL;
    }
    if (strcmp(shown, arg) != 0) {
        size_t n = strlen(shown);

        if (n > len)
            n = len;
        memcpy(arg, shown, n);
        memset(arg + n, '\0', len - n);
    }
    sqllock_free(shown);
    k->next = cli_kept_list;
    cli_kept_list = k;
    return k->text;
}

void cli_free_secrets(void)
{
    while (cli_kept_list != NULL) {
        cli_kept *k = cli_kept_list;

        cli_kept_list = k->next;
        cli_wipe(k->text, k->len);
        free(k);
    }
}

/* Finds the option called name[0..len) in `opts`, or NULL. */
static const cli_opt *find_opt(const cli_opt *opts, const char *name,
                               size_t len)
{
    for (; opts->name != NULL; opts++) {
        if (strlen(opts->name) == len && strncmp(opts->name, name, len) == 0)
            return opts;
    }
    return NULL;
}

int cli_parse(const char *cmd, int argc, char **argv, const cli_opt *opts,
              const char **pos, int maxpos, int *npos, int *rest)
{
    /* main() passes "" for the options before the command. */
    const char *sep = *cmd != '\0' ? ": " : "";
    int i;

    *npos = 0;
    if (rest != NULL)
        *rest = argc;
    for (i = 0; i < argc; i++) {
        const char *arg = argv[i];
        const char *name, *eq;
        const cli_opt *opt;
        size_t len;

        if (strcmp(arg, "--") == 0) {
            if (rest != NULL) {
                *rest = i + 1;
                return CLI_EXIT_OK;
            }
            for (i++; i < argc; i++) {
                if (*npos == maxpos) {
                    cli_error("%s%sunexpected argument '%s'", cmd, sep,
                              argv[i]);
                    return cli_usage();
                }
                pos[(*npos)++] = argv[i];
            }
            break;
        }
        if (arg[0] != '-' || arg[1] == '\0') {
            /* A positional argument ("-" alone counts as one). */
            if (*npos < maxpos) {
                pos[(*npos)++] = arg;
                continue;
            }
            if (rest != NULL) {
                *rest = i;
                return CLI_EXIT_OK;
            }
            cli_error("%s%sunexpected argument '%s'", cmd, sep, arg);
            return cli_usage();
        }
        /* The two short forms: -h (every command) and -V (main). */
        if (strcmp(arg, "-h") == 0 || strcmp(arg, "-V") == 0) {
            name = arg[1] == 'h' ? "help" : "version";
            len = strlen(name);
            eq = NULL;
        } else if (arg[1] == '-') {
            name = arg + 2;
            eq = strchr(name, '=');
            len = eq != NULL ? (size_t)(eq - name) : strlen(name);
        } else {
            cli_error("%s%sunknown option '%s'", cmd, sep, arg);
            return cli_usage();
        }
        opt = find_opt(opts, name, len);
        if (opt == NULL) {
            if (arg[1] != '-')
                cli_error("%s%sunknown option '%s'", cmd, sep, arg);
            else
                cli_error("%s%sunknown option '--%.*s'", cmd, sep, (int)len,
                          name);
            return cli_usage();
        }
        if (opt->flag != NULL) {
            if (eq != NULL) {
                cli_error("%s%soption '--%s' takes no value", cmd, sep,
                          opt->name);
                return cli_usage();
            }
            /* A flag given twice counts twice (release --force
             * --force); everywhere else only non-zero matters. */
            if (*opt->flag < 9)
                (*opt->flag)++;
        } else if (eq == NULL && i + 1 >= argc) {
            cli_error("%s%soption '--%s' needs a value", cmd, sep,
                      opt->name);
            return cli_usage();
        } else if (eq == NULL && strncmp(argv[i + 1], "--", 2) == 0 &&
                   strchr(argv[i + 1], '=') == NULL &&
                   find_opt(opts, argv[i + 1] + 2,
                            strlen(argv[i + 1] + 2)) != NULL) {
            /* "--also --ttl 5s": the value was left out, and the next
             * option would be taken for it (a lock named "--ttl"). */
            cli_error("%s%soption '--%s' needs a value, not the option "
                      "'%s' that follows it", cmd, sep, opt->name,
                      argv[i + 1]);
            return cli_usage();
        } else if (opt->secret == CLI_OPT_LIST) {
            cli_list *l = (cli_list *)(void *)opt->value;
            char *v = eq != NULL ? argv[i] + (eq + 1 - arg) : argv[++i];

            if (l->n >= l->max) {
                cli_error("%s%s--%s given more than %d times", cmd, sep,
                          opt->name, l->max);
                return cli_usage();
            }
            l->v[l->n++] = v;
        } else {
            /* "--db=URL" is overwritten after its '='. */
            char *v = eq != NULL ? argv[i] + (eq + 1 - arg) : argv[++i];

            *opt->value = opt->secret ? cli_hide_arg(v) : v;
            if (*opt->value == NULL) {
                cli_error("%s%s%s", cmd, sep, strerror(ENOMEM));
                return CLI_EXIT_DB;
            }
        }
    }
    return CLI_EXIT_OK;
}

int cli_parse_duration(const char *cmd, const char *opt, const char *text,
                       int64_t *ms)
{
    const char *why;
    int64_t v;

    if (text == NULL)
        return CLI_EXIT_OK;
    if (sqllock_parse_duration_why(text, &v, &why) != SQLLOCK_OK) {
        cli_error("%s: bad duration for --%s: '%s': %s", cmd, opt, text,
                  why);
        return cli_usage();
    }
    /* The parser takes anything that fits in an int64 of milliseconds;
     * the deadlines made of it count microseconds. */
    if (v > CLI_DURATION_MAX_MS) {
        cli_error("%s: bad duration for --%s: '%s': it is longer than "
                  CLI_DURATION_MAX_TEXT ", the longest duration sqllock "
                  "takes", cmd, opt, text);
        return cli_usage();
    }
    *ms = v;
    return CLI_EXIT_OK;
}

int cli_parse_int(const char *cmd, const char *opt, const char *text,
                  int64_t min, int64_t max, int64_t *out)
{
    char *end;
    long long v;

    /* strtoll() alone would take a sign, leading space and "0x". */
    if (text == NULL || text[0] < '0' || text[0] > '9')
        goto bad;
    errno = 0;
    v = strtoll(text, &end, 10);
    if (errno != 0 || *end != '\0' || v < min || v > max)
        goto bad;
    *out = (int64_t)v;
    return CLI_EXIT_OK;
bad:
    cli_error("%s: bad value for --%s: '%s' (a whole number from %" PRId64
              " to %" PRId64 ")", cmd, opt, text != NULL ? text : "",
              min, max);
    return cli_usage();
}

int cli_lease_args_check(const char *cmd, cli_lease_args *la)
{
    int rc;

    la->wait_ms = 0;
    /* run renews its lease while the command runs, so any ttl will do
     * there; acquire's is how long the lock stays held. */
    if (la->ttl == NULL && strcmp(cmd, "run") == 0)
        la->ttl = CLI_RUN_TTL_DEFAULT;
    if (la->ttl == NULL) {
        cli_error("%s: --ttl is required", cmd);
        return cli_usage();
    }
    rc = cli_parse_duration(cmd, "ttl", la->ttl, &la->ttl_ms);
    if (rc == CLI_EXIT_OK && la->ttl_ms <= 0) {
        cli_error("%s: --ttl must be more than 0, not '%s'", cmd, la->ttl);
        rc = cli_usage();
    }
    if (rc == CLI_EXIT_OK)
        rc = cli_parse_duration(cmd, "wait", la->wait, &la->wait_ms);
    return rc;
}

/* Signal names for --signal and for messages. */
static const struct cli_signame_entry {
    const char *name;
    int sig;
} cli_signames[] = {
    { "HUP", SIGHUP },   { "INT", SIGINT },   { "QUIT", SIGQUIT },
    { "ABRT", SIGABRT }, { "KILL", SIGKILL }, { "USR1", SIGUSR1 },
    { "USR2", SIGUSR2 }, { "PIPE", SIGPIPE }, { "ALRM", SIGALRM },
    { "TERM", SIGTERM }, { NULL, 0 }
};

/* "SIGTERM" for SIGTERM, "signal 40" for one without a name here. */
const char *cli_signame(int sig, char *buf, size_t size)
{
    const struct cli_signame_entry *s;

    for (s = cli_signames; s->name != NULL; s++)
        if (s->sig == sig) {
            snprintf(buf, size, "SIG%s", s->name);
            return buf;
        }
    snprintf(buf, size, "signal %d", sig);
    return buf;
}

/* Parses --signal: a name with or without "SIG", in any case, or a
 * number from 1 to NSIG - 1. */
int cli_parse_signal(const char *text, int *sig)
{
    const struct cli_signame_entry *s;
    const char *p = text;

    if (strncasecmp(p, "SIG", 3) == 0)
        p += 3;
    for (s = cli_signames; s->name != NULL; s++)
        if (strcasecmp(p, s->name) == 0) {
            *sig = s->sig;
            return CLI_EXIT_OK;
        }
    if (p == text && *p >= '0' && *p <= '9') {
        char *end;
        long v;

        errno = 0;
        v = strtol(p, &end, 10);
        if (errno == 0 && *end == '\0' && v >= 1 && v < NSIG) {
            *sig = (int)v;
            return CLI_EXIT_OK;
        }
    }
    cli_error("run: bad value for --signal: '%s' (a name such as TERM, INT, "
              "HUP, USR1 or KILL, or a number from 1 to %d)", text, NSIG - 1);
    return cli_usage();
}

int cli_run_args_check(cli_run_args *ra, const cli_lease_args *la)
{
    int64_t valid = la->ttl_ms - la->ttl_ms / 10, every;
    int rc;

    ra->lost_signal = SIGTERM;
    ra->kill_after_ms = CLI_RUN_KILL_AFTER_MS;
    ra->renew_every_ms = 0;
    ra->busy_exit_code = CLI_EXIT_BUSY;
    ra->hold_ms = 0;
    if (ra->skip && la->wait != NULL) {
        cli_error("run: --skip and --wait cannot be used together");
        return cli_usage();
    }
    if (ra->quiet && ra->verbose) {
        cli_error("run: --quiet and --verbose cannot be used together");
        return cli_usage();
    }
    if (ra->signal != NULL) {
        rc = cli_parse_signal(ra->signal, &ra->lost_signal);
        if (rc != CLI_EXIT_OK)
            return rc;
    }
    rc = cli_parse_duration("run", "kill-after", ra->kill_after,
                            &ra->kill_after_ms);
    if (rc == CLI_EXIT_OK)
        rc = cli_parse_duration("run", "renew-every", ra->renew_every,
                                &ra->renew_every_ms);
    if (rc == CLI_EXIT_OK)
        rc = cli_parse_duration("run", "hold-at-least", ra->hold_at_least,
                                &ra->hold_ms);
    if (rc == CLI_EXIT_OK && ra->busy_exit != NULL)
        rc = cli_parse_int("run", "busy-exit", ra->busy_exit, 0, 255,
                           &ra->busy_exit_code);
    if (rc != CLI_EXIT_OK)
        return rc;
    if (ra->renew_every != NULL && ra->renew_every_ms <= 0) {
        cli_error("run: --renew-every must be more than 0, not '%s'",
                  ra->renew_every);
        return cli_usage();
    }
    /* The watchdog's rule (sqllock_lease_watch()), checked here so that a
     * bad interval is a usage error before anything is locked: the lease
     * would lapse between renewals. The safety margin is ttl/10. */
    every = ra->renew_every_ms;
    if (every == 0)
        every = la->ttl_ms / 3 > 0 ? la->ttl_ms / 3 : 1;
    if (every >= valid) {
        if (ra->renew_every != NULL)
            cli_error("run: --renew-every %s must be shorter than the ttl "
                      "minus its safety margin of ttl/10 (%" PRId64 " ms)",
                      ra->renew_every, valid);
        else
            cli_error("run: --ttl %s is too short to be renewed", la->ttl);
        return cli_usage();
    }
    return CLI_EXIT_OK;
}
